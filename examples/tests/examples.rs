//! The examples' code paths on the real data: the accuracy floors, the exit statuses, and the
//! content of each guard message.

use candle_contracts::{ContractError, Rule, Value};
use candle_contracts_examples::{breast_cancer, digits, failures};
use indicatif::ProgressBar;

/// The contract violation inside an example's error, and the whole message.
fn violation_of(error: &anyhow::Error) -> (ContractError, String) {
    let message = format!("{error}\n{}", error.root_cause());
    for cause in error.chain() {
        if let Some(contract) = cause.downcast_ref::<ContractError>() {
            return (contract.clone(), message);
        }
        if let Some(candle) = cause.downcast_ref::<candle_core::Error>()
            && let Some(contract) = ContractError::find_in(candle)
        {
            return (contract.clone(), message);
        }
        if let Some(stopped) = cause.downcast_ref::<digits::StoppedAt>()
            && let Some(contract) = ContractError::find_in(&stopped.error)
        {
            return (contract.clone(), format!("{error}\n{stopped}"));
        }
    }
    panic!("not a contract violation: {error:?}")
}

#[test]
fn digits_reaches_the_accuracy_floor() {
    let report = digits::train(&digits::Options::default(), &ProgressBar::hidden()).unwrap();
    assert_eq!((report.train_size, report.test_size), (1438, 359));
    assert!(report.accuracy >= 0.9, "accuracy {}", report.accuracy);
    assert!(report.epoch_losses.last() < report.epoch_losses.first());
    assert_eq!(digits::main(["digits", "--epochs", "8"]), 0);
}

#[test]
fn digits_with_one_based_labels_stops_at_the_first_batch() {
    let options = digits::Options {
        labels: digits::Labels::OneBased,
        ..digits::Options::default()
    };
    let error = digits::train(&options, &ProgressBar::hidden()).unwrap_err();
    let (contract, message) = violation_of(&error);
    assert_eq!(contract.function(), "train_step");
    let violation = &contract.violations()[0];
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("target", Rule::Range)
    );
    assert_eq!(violation.value(), Some(Value::Int(10)));
    let c = &violation.bound_dims()[0];
    assert_eq!(
        (c.name, c.value, c.bound_by, c.axis),
        ("C", 10, "model.head.weight()", 0)
    );
    let index = violation.index().unwrap()[0];
    assert!(
        message.starts_with("training stopped at epoch 1, batch 1 of 23"),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "target[{index}] = 10, expected 0..C with C = 10 (bound by `model.head.weight()` dim 0)"
        )),
        "{message}"
    );
    assert!(message.contains("numbered from 1"), "{message}");
    assert!(
        message.contains(&format!("target[{index}] is row ")),
        "{message}"
    );
    assert_eq!(digits::main(["digits", "--labels", "one-based"]), 1);
}

#[test]
fn digits_rejects_bad_arguments() {
    assert_eq!(digits::main(["digits", "--labels", "two-based"]), 2);
    assert_eq!(digits::main(["digits", "--device", "tpu"]), 2);
}

#[test]
fn breast_cancer_reaches_the_accuracy_floor() {
    let report =
        breast_cancer::train(&breast_cancer::Options::default(), &ProgressBar::hidden()).unwrap();
    assert_eq!((report.train_size, report.test_size), (455, 114));
    assert!(report.accuracy >= 0.9, "accuracy {}", report.accuracy);
    assert_eq!(breast_cancer::main(["breast_cancer", "--epochs", "10"]), 0);
}

#[test]
fn breast_cancer_without_a_sigmoid_stops_at_the_loss() {
    let options = breast_cancer::Options {
        head: breast_cancer::Head::Logits,
        ..breast_cancer::Options::default()
    };
    let error = breast_cancer::train(&options, &ProgressBar::hidden()).unwrap_err();
    let (contract, message) = violation_of(&error);
    assert_eq!(contract.function(), "loss");
    let violation = &contract.violations()[0];
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("probabilities", Rule::Range)
    );
    let Some(Value::Float(value, _)) = violation.value() else {
        panic!("a float value: {message}")
    };
    assert!(!(0.0..=1.0).contains(&value));
    let index = violation.index().unwrap();
    assert_eq!(index.len(), 2);
    assert!(
        message.contains(&format!("probabilities[{}, 0] = ", index[0]))
            && message.contains("expected 0.0..=1.0"),
        "{message}"
    );
    assert!(violation.help().unwrap().contains("sigmoid"), "{message}");
    assert_eq!(
        breast_cancer::main(["breast_cancer", "--head", "logits"]),
        1
    );
}

#[test]
fn every_failure_scenario_is_caught_by_its_contract() {
    let rows = failures::run().unwrap();
    assert_eq!(rows.len(), 11);
    let expect = |scenario: &str, candle: &str, contract: &str| {
        let row = rows
            .iter()
            .find(|r| r.scenario.starts_with(scenario))
            .unwrap();
        assert!(
            row.candle.contains(candle),
            "{scenario}: candle said {}",
            row.candle
        );
        let says = row.contract_says();
        assert!(row.contract.is_some(), "{scenario}: {says}");
        assert!(
            says.contains(contract),
            "{scenario}: the contract said {says}"
        );
    };
    expect(
        "a target equal to the class count",
        "error: gather invalid index 3",
        "target[2] = 3, expected 0..C with C = 3",
    );
    expect(
        "one-hot targets",
        "single dimension",
        "`target`: dtype f32, expected u8 | u32 | i64",
    );
    expect(
        "targets of shape [N, 1]",
        "single dimension",
        "`target`: shape [4, 1] does not match [N] = [4] (rank 2, expected rank 1)",
    );
    expect(
        "a last batch of a different size",
        "batch size mismatch",
        "`target`: shape [6] does not match [N] = [2]",
    );
    expect(
        "an empty batch",
        "error",
        "`N >= 1`: does not hold with N = 0",
    );
    expect(
        "all targets ignored",
        "the loss is NaN",
        "all 4 elements are ignored values",
    );
    expect(
        "SSD multibox loss",
        "invalid index 6",
        "target[3] = 6, expected 0..C with C = 6",
    );
    expect(
        "VOC annotations",
        "no error",
        "target[8] = 255, expected 0..C with C = 20",
    );
    expect(
        "VOC annotations",
        "no error",
        "object 1 of 2008_000105.xml: `traffic light` is not a VOC class",
    );
    expect(
        "token ids past the vocabulary",
        "invalid index 100",
        "ids[0, 2] = 100, expected 0..V with V = 100 (bound by `table` dim 0)",
    );
    expect(
        "a missing sigmoid before BCE",
        "the loss is NaN",
        "probabilities[0, 0] = 2.3, expected 0.0..=1.0",
    );
    expect(
        "NaN reaching BCE",
        "the loss is NaN",
        "probabilities[1] = NaN, expected 0.0..=1.0",
    );
    let table = failures::table(&rows).to_string();
    assert!(table.contains("candle, unguarded (CPU)"));
    assert_eq!(failures::main(["failures"]), 0);
}

#[test]
fn the_voc_files_parse_with_their_classes() {
    let annotations =
        failures::read_annotations(&candle_contracts_examples::data::data_dir().join("voc"))
            .unwrap();
    assert_eq!(annotations.len(), 10);
    let foreign: Vec<&str> = annotations
        .iter()
        .filter(|a| !failures::VOC_CLASSES.contains(&a.name.as_str()))
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(foreign, ["traffic light"]);
}
