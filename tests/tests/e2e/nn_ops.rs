//! `candle_contracts::nn`: each op equals candle's (or PyTorch's value where candle is wrong)
//! on valid input, and the mistakes each op catches or fixes (ignored rows, candle's MAX
//! sentinel, u8 class 255, large logits, integer BCE targets, ids past the vocabulary, empty
//! index tensors, an ignore value passed into `one_hot`).

use candle_contracts::nn::{self, LossOptions, Reduction};
use candle_contracts::{Rule, Value};
use candle_core::{DType, Device, Module, Tensor, D};

use crate::{contract_error, only_violation};

fn cpu() -> Device {
    Device::Cpu
}

fn scalar(t: &Tensor) -> f32 {
    t.to_scalar::<f32>().unwrap()
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= 1e-5 * (1.0 + b.abs())
}

fn logits(n: usize, c: usize) -> Tensor {
    let values: Vec<f32> = (0..n * c)
        .map(|i| ((i * 37 % 23) as f32 - 11.0) / 4.0)
        .collect();
    Tensor::from_vec(values, (n, c), &cpu()).unwrap()
}

/// `-log_softmax(row)[class]` in f64, the per-row cross-entropy.
fn row_loss(logits: &Tensor, row: usize, class: usize) -> f64 {
    let row: Vec<f32> = logits.get(row).unwrap().to_vec1().unwrap();
    let max = row.iter().cloned().fold(f32::MIN, f32::max) as f64;
    let log_sum: f64 = row
        .iter()
        .map(|&v| (v as f64 - max).exp())
        .sum::<f64>()
        .ln()
        + max;
    log_sum - row[class] as f64
}

#[test]
fn cross_entropy_and_nll_equal_candle_on_valid_input() {
    let logits = logits(5, 4);
    for target in [
        Tensor::new(&[0u32, 3, 1, 2, 3], &cpu()).unwrap(),
        Tensor::new(&[0i64, 3, 1, 2, 3], &cpu()).unwrap(),
        Tensor::new(&[0u8, 3, 1, 2, 3], &cpu()).unwrap(),
    ] {
        let ours = scalar(&nn::cross_entropy(&logits, &target).unwrap());
        let candle = scalar(&candle_nn::loss::cross_entropy(&logits, &target).unwrap());
        assert!(close(ours, candle), "{ours} vs {candle}");
        let log_probs = candle_nn::ops::log_softmax(&logits, D::Minus1).unwrap();
        let ours = scalar(&nn::nll(&log_probs, &target).unwrap());
        let candle = scalar(&candle_nn::loss::nll(&log_probs, &target).unwrap());
        assert!(close(ours, candle), "{ours} vs {candle}");
    }
}

#[test]
fn cross_entropy_rejects_bad_class_ids_and_empty_batches() {
    let logits = logits(3, 4);
    let target = Tensor::new(&[0i64, 4, -2], &cpu()).unwrap();
    let error = nn::cross_entropy(&logits, &target).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.index(), violation.value()),
        (Some(&[1][..]), Some(Value::Int(4)))
    );
    assert!(
        error.to_string().contains(
            "contract violated in `nn::cross_entropy` (called at tests/tests/e2e/nn_ops.rs:"
        ),
        "{error}"
    );
    let empty = nn::cross_entropy(
        &logits.narrow(0, 0, 0).unwrap(),
        &target.narrow(0, 0, 0).unwrap(),
    );
    let error = empty.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`N >= 1`: does not hold with N = 0"),
        "{error}"
    );
}

#[test]
fn ignored_rows_leave_the_mean() {
    let logits = logits(6, 3);
    let target = Tensor::new(&[0i64, 1, -100, 0, 1, 2], &cpu()).unwrap();
    let kept = [(0, 0), (1, 1), (3, 0), (4, 1), (5, 2)];
    let sum: f64 = kept
        .iter()
        .map(|&(row, class)| row_loss(&logits, row, class))
        .sum();
    let mean = scalar(&nn::cross_entropy_with(&logits, &target, LossOptions::default()).unwrap());
    assert!(close(mean, (sum / 5.0) as f32), "{mean} vs {}", sum / 5.0);
    let options = LossOptions {
        reduction: Reduction::Sum,
        ..LossOptions::default()
    };
    assert!(close(
        scalar(&nn::cross_entropy_with(&logits, &target, options).unwrap()),
        sum as f32
    ));
    let options = LossOptions {
        reduction: Reduction::None,
        ..LossOptions::default()
    };
    let rows: Vec<f32> = nn::cross_entropy_with(&logits, &target, options)
        .unwrap()
        .to_vec1()
        .unwrap();
    assert_eq!(rows[2], 0.0);
    assert!(close(rows[5], row_loss(&logits, 5, 2) as f32));
    // nll_with agrees on log-probabilities.
    let log_probs = candle_nn::ops::log_softmax(&logits, D::Minus1).unwrap();
    let nll = scalar(&nn::nll_with(&log_probs, &target, LossOptions::default()).unwrap());
    assert!(close(nll, mean));
}

#[test]
fn all_ignored_is_an_error_for_the_mean_only() {
    let logits = logits(4, 3);
    let target = Tensor::new(&[-100i64; 4], &cpu()).unwrap();
    let error = nn::cross_entropy_with(&logits, &target, LossOptions::default()).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.rule(), Rule::AllIgnored);
    assert!(
        error
            .to_string()
            .contains("all 4 elements are ignored values ({options.ignore_index} = -100)"),
        "{error}"
    );
    let sum = LossOptions {
        reduction: Reduction::Sum,
        ..LossOptions::default()
    };
    assert_eq!(
        scalar(&nn::cross_entropy_with(&logits, &target, sum).unwrap()),
        0.0
    );
    // Without an ignore index, -100 is just out of range.
    let none = LossOptions {
        ignore_index: None,
        ..LossOptions::default()
    };
    let error = nn::cross_entropy_with(&logits, &target, none).unwrap_err();
    assert_eq!(only_violation(&error).rule(), Rule::Range);
}

#[test]
fn max_sentinel_in_targets() {
    let logits = Tensor::new(
        &[[1f32, 2., 3., 4.], [0., 0., 0., 0.], [5., 1., 1., 1.]],
        &cpu(),
    )
    .unwrap();
    let target = Tensor::new(&[0u32, 2, u32::MAX], &cpu()).unwrap();
    let error = nn::cross_entropy(&logits, &target).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.index(), violation.value()),
        (Some(&[2][..]), Some(Value::Int(4294967295)))
    );
    let options = LossOptions {
        ignore_index: Some(u32::MAX as i64),
        ..LossOptions::default()
    };
    let mean = scalar(&nn::cross_entropy_with(&logits, &target, options).unwrap());
    let expected = (row_loss(&logits, 0, 0) + row_loss(&logits, 1, 2)) / 2.0;
    assert!(close(mean, expected as f32), "{mean} vs {expected}");
    // candle counts the skipped row in its mean.
    let candle = scalar(&candle_nn::loss::cross_entropy(&logits, &target).unwrap());
    assert!(close(candle, (2.0 * expected / 3.0) as f32), "{candle}");
}

#[test]
fn u8_class_255_is_a_real_class() {
    let values: Vec<f32> = (0..300).map(|i| (i as f32 / 50.0).sin()).collect();
    let logits = Tensor::from_vec(values, (1, 300), &cpu()).unwrap();
    let target = Tensor::new(&[255u8], &cpu()).unwrap();
    let expected = row_loss(&logits, 0, 255) as f32;
    let ours = scalar(&nn::cross_entropy(&logits, &target).unwrap());
    assert!(close(ours, expected), "{ours} vs {expected}");
    assert!(ours > 1.0);
    // candle reads u8 255 as its skip sentinel and silently gives 0.
    assert_eq!(
        scalar(&candle_nn::loss::cross_entropy(&logits, &target).unwrap()),
        0.0
    );
}

/// PyTorch's binary cross-entropy on probabilities, in f64, logs clamped at -100.
fn bce_reference(p: &[f64], t: &[f64]) -> f64 {
    let terms: f64 = p
        .iter()
        .zip(t)
        .map(|(&p, &t)| -(t * p.ln().max(-100.0) + (1.0 - t) * (1.0 - p).ln().max(-100.0)))
        .sum();
    terms / p.len() as f64
}

#[test]
fn binary_cross_entropy_matches_pytorch() {
    let p = [0.2, 0.9, 0.5, 1.0, 0.0];
    let t = [0.0, 1.0, 1.0, 0.0, 0.0];
    let probabilities = Tensor::new(&p.map(|v| v as f32), &cpu()).unwrap();
    let target = Tensor::new(&t.map(|v| v as f32), &cpu()).unwrap();
    let ours = scalar(&nn::binary_cross_entropy(&probabilities, &target).unwrap());
    assert!(close(ours, bce_reference(&p, &t) as f32), "{ours}");
    assert!(ours.is_finite());
    let logits = Tensor::new(&[2.3f32, -1.7], &cpu()).unwrap();
    let error =
        nn::binary_cross_entropy(&logits, &Tensor::new(&[1f32, 0.], &cpu()).unwrap()).unwrap_err();
    assert_eq!(only_violation(&error).argument(), "probabilities");
    let error =
        nn::binary_cross_entropy(&probabilities, &Tensor::new(&[1f32, 0.], &cpu()).unwrap())
            .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`target`: shape [2] does not match [*S] = [5]"),
        "{error}"
    );
}

/// The stable BCE-with-logits in f64.
fn bce_logits_reference(x: &[f64], t: &[f64]) -> f64 {
    let terms: f64 = x
        .iter()
        .zip(t)
        .map(|(&x, &t)| x.max(0.0) - x * t + (-x.abs()).exp().ln_1p())
        .sum();
    terms / x.len() as f64
}

#[test]
fn binary_cross_entropy_with_logit_equals_candle_where_candle_is_right() {
    let x = [0.3, -2.0, 4.5, -0.7];
    let t = [1.0, 0.0, 1.0, 1.0];
    let logits = Tensor::new(&x.map(|v| v as f32), &cpu()).unwrap();
    let target = Tensor::new(&t.map(|v| v as f32), &cpu()).unwrap();
    let ours = scalar(&nn::binary_cross_entropy_with_logit(&logits, &target).unwrap());
    let candle =
        scalar(&candle_nn::loss::binary_cross_entropy_with_logit(&logits, &target).unwrap());
    assert!(close(ours, candle), "{ours} vs {candle}");
    assert!(close(ours, bce_logits_reference(&x, &t) as f32));
}

#[test]
fn large_logits_stay_finite_and_correct() {
    let logits = Tensor::new(&[16.7f32, -89.0], &cpu()).unwrap();
    let target = Tensor::new(&[1f32, 0.], &cpu()).unwrap();
    let candle =
        scalar(&candle_nn::loss::binary_cross_entropy_with_logit(&logits, &target).unwrap());
    assert!(!candle.is_finite(), "candle gives {candle}");
    let ours = scalar(&nn::binary_cross_entropy_with_logit(&logits, &target).unwrap());
    let expected = bce_logits_reference(&[16.7f32 as f64, -89.0], &[1.0, 0.0]);
    assert!((expected - 2.79e-8).abs() < 0.01e-8, "{expected}");
    assert!(
        (ours as f64 - expected).abs() <= 1e-3 * expected,
        "{ours} vs {expected}"
    );
}

#[test]
fn integer_targets_given_to_bce_with_logits() {
    let logits = Tensor::zeros(8, DType::F32, &cpu()).unwrap();
    let target = Tensor::new(&[0i64, 1, 1, 0, 1, 0, 0, 1], &cpu()).unwrap();
    let error = nn::binary_cross_entropy_with_logit(&logits, &target).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("target", Rule::DType)
    );
    assert!(
        error
            .to_string()
            .contains("`target`: dtype i64, expected float"),
        "{error}"
    );
    assert!(violation.help().unwrap().contains("float dtype"), "{error}");
}

#[test]
fn embedding_equals_index_select_and_checks_ids() {
    let table = Tensor::arange(0f32, 20., &cpu())
        .unwrap()
        .reshape((5, 4))
        .unwrap();
    let ids = Tensor::new(&[[0u32, 4], [2, 2]], &cpu()).unwrap();
    let out = nn::embedding(&ids, &table).unwrap();
    assert_eq!(out.dims(), [2, 2, 4]);
    let reference = table
        .index_select(&ids.flatten_all().unwrap(), 0)
        .unwrap()
        .reshape((2, 2, 4))
        .unwrap();
    assert_eq!(
        out.to_vec3::<f32>().unwrap(),
        reference.to_vec3::<f32>().unwrap()
    );
    let layer = nn::Embedding::new(table.clone(), 4);
    assert_eq!(
        layer.forward(&ids).unwrap().to_vec3::<f32>().unwrap(),
        reference.to_vec3::<f32>().unwrap()
    );
    let from_candle = nn::Embedding::from(candle_nn::Embedding::new(table.clone(), 4));
    assert_eq!(from_candle.hidden_size(), 4);
    let bad = Tensor::new(&[[0i64, -3]], &cpu()).unwrap();
    let error = layer.forward(&bad).unwrap_err();
    assert_eq!(only_violation(&error).value(), Some(Value::Int(-3)));
}

#[test]
fn token_id_past_the_vocabulary() {
    let table = Tensor::zeros((50257, 16), DType::F32, &cpu()).unwrap();
    let ids = Tensor::new(
        &[[
            10u32, 20, 30, 40, 50, 50256, 50257, 50257, 50257, 50257, 50257, 50257,
        ]],
        &cpu(),
    )
    .unwrap();
    let error = nn::embedding(&ids, &table).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.index()),
        ("ids", Some(&[0, 6][..]))
    );
    assert_eq!(violation.counts().unwrap().violating, 6);
    let v = &violation.bound_dims()[0];
    assert_eq!(
        (v.name, v.value, v.bound_by, v.axis),
        ("V", 50257, "table", 0)
    );
    let text = error.to_string();
    assert!(
        text.contains("ids[0, 6] = 50257, expected 0..V with V = 50257 (bound by `table` dim 0)"),
        "{text}"
    );
    assert!(
        violation
            .help()
            .unwrap()
            .contains("without resizing the embedding table"),
        "{text}"
    );
}

#[test]
fn index_ops_equal_candle_on_valid_input() {
    let source = Tensor::arange(0f32, 24., &cpu())
        .unwrap()
        .reshape((2, 3, 4))
        .unwrap();
    let ids = Tensor::new(&[2u32, 0], &cpu()).unwrap();
    assert_eq!(
        nn::index_select(&source, &ids, 1)
            .unwrap()
            .to_vec3::<f32>()
            .unwrap(),
        source
            .index_select(&ids, 1)
            .unwrap()
            .to_vec3::<f32>()
            .unwrap()
    );
    let gather_ids = Tensor::new(&[[[3u32], [0], [1]], [[2], [2], [0]]], &cpu()).unwrap();
    assert_eq!(
        nn::gather(&source, &gather_ids, 2)
            .unwrap()
            .to_vec3::<f32>()
            .unwrap(),
        source
            .gather(&gather_ids, 2)
            .unwrap()
            .to_vec3::<f32>()
            .unwrap()
    );
    let base = Tensor::zeros((2, 3, 4), DType::F32, &cpu()).unwrap();
    let scatter_ids = Tensor::new(&[[[1u32, 0, 2, 2]], [[0, 0, 1, 1]]], &cpu()).unwrap();
    let updates = Tensor::ones((2, 1, 4), DType::F32, &cpu()).unwrap();
    assert_eq!(
        nn::scatter_add(&base, &scatter_ids, &updates, 1)
            .unwrap()
            .to_vec3::<f32>()
            .unwrap(),
        base.scatter_add(&scatter_ids, &updates, 1)
            .unwrap()
            .to_vec3::<f32>()
            .unwrap()
    );
    let add_ids = Tensor::new(&[3i64, 3], &cpu()).unwrap();
    let slices = Tensor::ones((2, 3, 2), DType::F32, &cpu()).unwrap();
    assert_eq!(
        nn::index_add(&base, &add_ids, &slices, 2)
            .unwrap()
            .to_vec3::<f32>()
            .unwrap(),
        base.index_add(&add_ids, &slices, 2)
            .unwrap()
            .to_vec3::<f32>()
            .unwrap()
    );
    // The inputs are not modified.
    assert_eq!(base.sum_all().unwrap().to_scalar::<f32>().unwrap(), 0.0);
}

#[test]
fn index_ops_report_the_bad_index() {
    let source = Tensor::zeros((2, 3, 4), DType::F32, &cpu()).unwrap();
    let error =
        nn::index_select(&source, &Tensor::new(&[1u32, 3], &cpu()).unwrap(), 1).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.index(), Some(&[1][..]));
    assert!(
        error
            .to_string()
            .contains("ids[1] = 3, expected 0..S with S = 3 (bound by `source` dim 1)"),
        "{error}"
    );
    let ids = Tensor::new(&[[[4u32], [0], [1]], [[2], [2], [0]]], &cpu()).unwrap();
    assert_eq!(
        only_violation(&nn::gather(&source, &ids, 2).unwrap_err()).index(),
        Some(&[0, 0, 0][..])
    );
    let ids = Tensor::new(&[[[1u32, 0, 5, 3]]], &cpu()).unwrap();
    let updates = Tensor::ones((1, 1, 4), DType::F32, &cpu()).unwrap();
    let error = nn::scatter_add(&source, &ids, &updates, 1).unwrap_err();
    assert_eq!(only_violation(&error).index(), Some(&[0, 0, 2][..]));
    let error = nn::index_add(
        &source,
        &Tensor::new(&[-1i64], &cpu()).unwrap(),
        &updates,
        0,
    )
    .unwrap_err();
    assert_eq!(only_violation(&error).value(), Some(Value::Int(-1)));
    // A dim past the rank is candle's own error, not a contract violation.
    let error = nn::index_select(&source, &Tensor::new(&[0u32], &cpu()).unwrap(), 3).unwrap_err();
    assert!(
        candle_contracts::ContractError::find_in(&error).is_none(),
        "{error}"
    );
}

#[test]
fn empty_index_tensor() {
    let source = Tensor::arange(0f32, 27., &cpu())
        .unwrap()
        .reshape((3, 3, 3))
        .unwrap();
    let ids = Tensor::zeros(0, DType::U32, &cpu()).unwrap();
    let out = nn::index_select(&source, &ids, 0).unwrap();
    assert_eq!(out.dims(), [0, 3, 3]);
    let out = nn::embedding(
        &Tensor::zeros((2, 0), DType::U32, &cpu()).unwrap(),
        &source.get(0).unwrap(),
    )
    .unwrap();
    assert_eq!(out.dims(), [2, 0, 3]);
    let out = nn::gather(
        &source,
        &Tensor::zeros((3, 3, 0), DType::U32, &cpu()).unwrap(),
        2,
    )
    .unwrap();
    assert_eq!(out.dims(), [3, 3, 0]);
}

#[test]
fn one_hot_equals_candle_and_honours_minus_one() {
    let indices = Tensor::new(&[[0i64, 2], [1, -1]], &cpu()).unwrap();
    let ours = nn::one_hot(indices.clone(), 4, 1f32, 0f32).unwrap();
    let candle = candle_nn::encoding::one_hot(indices, 4, 1f32, 0f32).unwrap();
    assert_eq!(
        ours.to_vec3::<f32>().unwrap(),
        candle.to_vec3::<f32>().unwrap()
    );
    assert_eq!(ours.to_vec3::<f32>().unwrap()[1][1], [0., 0., 0., 0.]);
    let error = nn::one_hot(Tensor::new(&[4u8], &cpu()).unwrap(), 4, 1f32, 0f32).unwrap_err();
    assert_eq!(only_violation(&error).value(), Some(Value::Int(4)));
}

#[test]
fn ignore_value_passed_straight_into_one_hot() {
    let indices = Tensor::new(&[[0i64, 3, -100, -100], [1, 2, -100, -100]], &cpu()).unwrap();
    let error = nn::one_hot(indices, 5, 1f32, 0f32).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.index(), violation.value()),
        (Some(&[0, 2][..]), Some(Value::Int(-100)))
    );
    assert!(
        violation
            .note()
            .unwrap()
            .contains("map other \"no label\" values such as -100 to -1"),
        "{error}"
    );
    assert_eq!(contract_error(&error).function(), "nn::one_hot");
}

#[test]
fn ignored_rows_lose_zero_whatever_their_logits_hold() {
    // A masked -inf at class 0 of an ignored row: multiplying its pick by 0 would give NaN.
    let logits = Tensor::new(
        &[
            [0f32, 1., 2.],
            [f32::NEG_INFINITY, 0., 0.],
            [f32::NAN, 1., 1.],
        ],
        &cpu(),
    )
    .unwrap();
    let target = Tensor::new(&[0i64, -100, -100], &cpu()).unwrap();
    let expected = row_loss(&logits, 0, 0) as f32;
    let mean = nn::cross_entropy_with(&logits, &target, LossOptions::default()).unwrap();
    assert!(close(scalar(&mean), expected), "{mean}");
    let options = LossOptions {
        reduction: Reduction::None,
        ..LossOptions::default()
    };
    let rows = nn::cross_entropy_with(&logits, &target, options)
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    assert!(
        close(rows[0], expected) && rows[1] == 0.0 && rows[2] == 0.0,
        "{rows:?}"
    );
}

#[test]
fn empty_batches_sum_to_zero_and_give_no_rows() {
    let logits = Tensor::zeros((0, 4), DType::F32, &cpu()).unwrap();
    let target = Tensor::zeros(0, DType::I64, &cpu()).unwrap();
    let sum = LossOptions {
        reduction: Reduction::Sum,
        ..LossOptions::default()
    };
    let none = LossOptions {
        reduction: Reduction::None,
        ..LossOptions::default()
    };
    assert_eq!(
        scalar(&nn::cross_entropy_with(&logits, &target, sum).unwrap()),
        0.0
    );
    assert_eq!(
        nn::cross_entropy_with(&logits, &target, none)
            .unwrap()
            .dims(),
        [0]
    );
    assert_eq!(scalar(&nn::nll_with(&logits, &target, sum).unwrap()), 0.0);
    assert_eq!(nn::nll_with(&logits, &target, none).unwrap().dims(), [0]);
    // The mean of nothing stays an error, with or without an ignore index.
    let mean_no_ignore = LossOptions {
        ignore_index: None,
        reduction: Reduction::Mean,
    };
    let error = nn::cross_entropy_with(&logits, &target, mean_no_ignore).unwrap_err();
    assert!(error.to_string().contains("0/0"), "{error}");
}

#[test]
fn half_precision_losses_are_reduced_in_f32() {
    let ln3 = 3f32.ln();
    for dtype in [DType::F16, DType::BF16] {
        let logits = Tensor::zeros((10_000, 3), dtype, &cpu()).unwrap();
        for target_dtype in [DType::U32, DType::I64] {
            let target = Tensor::zeros(10_000, target_dtype, &cpu()).unwrap();
            let plain = nn::cross_entropy(&logits, &target).unwrap();
            let with = nn::cross_entropy_with(&logits, &target, LossOptions::default()).unwrap();
            for loss in [plain, with] {
                assert_eq!(loss.dtype(), dtype);
                let value = loss
                    .to_dtype(DType::F32)
                    .unwrap()
                    .to_scalar::<f32>()
                    .unwrap();
                assert!(
                    (value - ln3).abs() < 0.01,
                    "{dtype:?} {target_dtype:?}: {value}"
                );
            }
        }
        let half = Tensor::full(0.5f32, 10_000, &cpu())
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let ones = Tensor::ones(10_000, dtype, &cpu()).unwrap();
        let bce = nn::binary_cross_entropy(&half, &ones).unwrap();
        let bce_logits =
            nn::binary_cross_entropy_with_logit(&half.zeros_like().unwrap(), &ones).unwrap();
        for loss in [bce, bce_logits] {
            let value = loss
                .to_dtype(DType::F32)
                .unwrap()
                .to_scalar::<f32>()
                .unwrap();
            assert!((value - 2f32.ln()).abs() < 0.01, "{dtype:?}: {value}");
        }
    }
}

#[test]
fn strided_targets_and_tables_are_accepted() {
    let logits = logits(4, 3);
    // Class ids in column 0 of [N, 2] pairs: a strided view.
    let pairs = Tensor::new(&[[2u32, 9], [0, 9], [1, 9], [2, 9]], &cpu()).unwrap();
    let target = pairs.narrow(1, 0, 1).unwrap().squeeze(1).unwrap();
    assert!(!target.is_contiguous());
    let expected = candle_nn::loss::cross_entropy(&logits, &target.contiguous().unwrap()).unwrap();
    for loss in [
        nn::cross_entropy(&logits, &target).unwrap(),
        nn::nll(
            &candle_nn::ops::log_softmax(&logits, D::Minus1).unwrap(),
            &target,
        )
        .unwrap(),
    ] {
        assert!(close(scalar(&loss), scalar(&expected)));
    }
    let table = Tensor::arange(0f32, 12., &cpu())
        .unwrap()
        .reshape((3, 4))
        .unwrap()
        .t()
        .unwrap();
    let ids = Tensor::new(&[3u32, 0], &cpu()).unwrap();
    let rows = nn::embedding(&ids, &table)
        .unwrap()
        .to_vec2::<f32>()
        .unwrap();
    assert_eq!(rows, [[3., 7., 11.], [0., 4., 8.]]);
}

#[test]
fn gather_refuses_ids_of_another_rank_even_when_empty() {
    let source = Tensor::zeros((2, 3), DType::F32, &cpu()).unwrap();
    for ids in [
        Tensor::zeros(0, DType::U32, &cpu()).unwrap(),
        Tensor::zeros(2, DType::U32, &cpu()).unwrap(),
    ] {
        let error = nn::gather(&source, &ids, 1).unwrap_err();
        assert!(
            error.to_string().contains("rank 1 and `source` rank 2"),
            "{error}"
        );
    }
}

/// `logits(n, c)` with `value` at `[row, column]`.
fn logits_with(n: usize, c: usize, row: usize, column: usize, value: f32) -> Tensor {
    let mut values: Vec<f32> = logits(n, c).flatten_all().unwrap().to_vec1().unwrap();
    values[row * c + column] = value;
    Tensor::from_vec(values, (n, c), &cpu()).unwrap()
}

/// The violation of `argument` in a failed call: its rule and index.
fn rule_and_index(error: &candle_core::Error, argument: &str) -> (Rule, Vec<usize>) {
    let violation = contract_error(error)
        .violation_of(argument)
        .unwrap_or_else(|| panic!("no violation of `{argument}`: {error}"));
    (violation.rule(), violation.index().unwrap().to_vec())
}

#[test]
fn losses_refuse_nan_and_infinite_logits() {
    let target = Tensor::new(&[0u32, 3, 1], &cpu()).unwrap();
    for (value, text) in [
        (f32::NAN, "logits[1, 2] = NaN"),
        (f32::INFINITY, "logits[1, 2] = inf"),
        (f32::NEG_INFINITY, "logits[1, 2] = -inf"),
    ] {
        let logits = logits_with(3, 4, 1, 2, value);
        // candle gives a NaN or infinite loss, no error.
        let candle = scalar(&candle_nn::loss::cross_entropy(&logits, &target).unwrap());
        assert!(
            !candle.is_finite() || value == f32::NEG_INFINITY,
            "{candle}"
        );
        for error in [
            nn::cross_entropy(&logits, &target).unwrap_err(),
            nn::cross_entropy_with(&logits, &target, LossOptions::default()).unwrap_err(),
        ] {
            assert_eq!(
                rule_and_index(&error, "logits"),
                (Rule::Finite, vec![1, 2]),
                "{error}"
            );
            let message = error.to_string();
            assert!(
                message.contains(&format!(
                    "`logits`: value not finite: {text}, expected finite values"
                )),
                "{message}"
            );
            assert!(
                message.contains("1 of 12 elements violate the rule"),
                "{message}"
            );
        }
    }
}

#[test]
fn nll_refuses_nan_and_positive_log_probabilities() {
    let target = Tensor::new(&[0u32, 3, 1], &cpu()).unwrap();
    let log_probs = candle_nn::ops::log_softmax(&logits(3, 4), D::Minus1).unwrap();
    let mut values: Vec<f32> = log_probs.flatten_all().unwrap().to_vec1().unwrap();
    for (value, rule, text) in [
        (
            f32::NAN,
            Rule::Range,
            "log_probs[2, 2] = NaN, expected ..=0.0",
        ),
        (0.5, Rule::Range, "log_probs[2, 2] = 0.5, expected ..=0.0"),
        (
            f32::INFINITY,
            Rule::Range,
            "log_probs[2, 2] = inf, expected ..=0.0",
        ),
    ] {
        values[10] = value;
        let bad = Tensor::from_vec(values.clone(), (3, 4), &cpu()).unwrap();
        for error in [
            nn::nll(&bad, &target).unwrap_err(),
            nn::nll_with(&bad, &target, LossOptions::default()).unwrap_err(),
        ] {
            assert_eq!(
                rule_and_index(&error, "log_probs"),
                (rule, vec![2, 2]),
                "{error}"
            );
            assert!(error.to_string().contains(text), "{error}");
        }
    }
    // -inf is the log of a probability of 0: allowed (where it is not the target's class).
    values[10] = f32::NEG_INFINITY;
    let with_zero = Tensor::from_vec(values, (3, 4), &cpu()).unwrap();
    let loss = scalar(&nn::nll(&with_zero, &target).unwrap());
    let candle = scalar(&candle_nn::loss::nll(&with_zero, &target).unwrap());
    assert!(close(loss, candle), "{loss} vs {candle}");
}

#[test]
fn finite_logits_keep_their_reference_losses() {
    let logits = logits(5, 4);
    let target = Tensor::new(&[0i64, 3, 1, 2, 3], &cpu()).unwrap();
    let rows: Vec<f64> = [0, 3, 1, 2, 3]
        .iter()
        .enumerate()
        .map(|(row, &class)| row_loss(&logits, row, class))
        .collect();
    let mean = (rows.iter().sum::<f64>() / 5.0) as f32;
    assert!(close(
        scalar(&nn::cross_entropy(&logits, &target).unwrap()),
        mean
    ));
    let log_probs = candle_nn::ops::log_softmax(&logits, D::Minus1).unwrap();
    assert!(close(scalar(&nn::nll(&log_probs, &target).unwrap()), mean));
    let none = LossOptions {
        reduction: Reduction::None,
        ..LossOptions::default()
    };
    let per_row: Vec<f32> = nn::cross_entropy_with(&logits, &target, none)
        .unwrap()
        .to_vec1()
        .unwrap();
    for (ours, reference) in per_row.iter().zip(&rows) {
        assert!(close(*ours, *reference as f32), "{ours} vs {reference}");
    }
}

#[test]
fn ignored_rows_are_exempt_from_the_finite_rule_but_kept_rows_are_not() {
    // Row 1 is ignored and holds NaN (padding behind a fully masked attention); row 3 is kept
    // and holds +inf.
    let mut values: Vec<f32> = logits(5, 3).flatten_all().unwrap().to_vec1().unwrap();
    values[3] = f32::NAN;
    values[3 * 3 + 2] = f32::INFINITY;
    let logits = Tensor::from_vec(values, (5, 3), &cpu()).unwrap();
    let target = Tensor::new(&[0i64, -100, 2, 1, 0], &cpu()).unwrap();
    let error = nn::cross_entropy_with(&logits, &target, LossOptions::default()).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.rule(), violation.index()),
        (Rule::Finite, Some(&[3, 2][..]))
    );
    assert_eq!(violation.counts().unwrap().violating, 1);
    assert_eq!(violation.counts().unwrap().total, 12);
    assert!(
        error
            .to_string()
            .contains("1 of 5 rows are not checked: their target is the ignore index -100"),
        "{error}"
    );
    // Without the ignore index, the NaN row is checked too and comes first.
    let no_ignore = LossOptions {
        ignore_index: None,
        ..LossOptions::default()
    };
    let target = Tensor::new(&[0i64, 1, 2, 1, 0], &cpu()).unwrap();
    let error = nn::cross_entropy_with(&logits, &target, no_ignore).unwrap_err();
    assert_eq!(rule_and_index(&error, "logits"), (Rule::Finite, vec![1, 0]));
    assert_eq!(only_violation(&error).counts().unwrap().violating, 2);
    // nll_with: a positive log-probability in an ignored row passes.
    let log_probs = candle_nn::ops::log_softmax(&logits_with(3, 3, 1, 1, 0.0), D::Minus1).unwrap();
    let mut values: Vec<f32> = log_probs.flatten_all().unwrap().to_vec1().unwrap();
    values[4] = 3.0;
    let log_probs = Tensor::from_vec(values, (3, 3), &cpu()).unwrap();
    let target = Tensor::new(&[0i64, -100, 2], &cpu()).unwrap();
    assert!(nn::nll_with(&log_probs, &target, LossOptions::default()).is_ok());
    assert!(nn::nll(&log_probs, &Tensor::new(&[0i64, 1, 2], &cpu()).unwrap()).is_err());
}

#[test]
fn violations_name_the_op_and_the_callers_line() {
    // Two tables in one model: the message says which lookup failed.
    let words = Tensor::zeros((10, 4), DType::F32, &cpu()).unwrap();
    let positions = Tensor::zeros((3, 4), DType::F32, &cpu()).unwrap();
    let ids = Tensor::new(&[[1u32, 2, 3]], &cpu()).unwrap();
    assert!(nn::embedding(&ids, &words).is_ok());
    let line = line!() + 1;
    let error = nn::embedding(&ids, &positions).unwrap_err();
    let found = contract_error(&error);
    assert_eq!(found.function(), "nn::embedding");
    let at = found.called_at().unwrap();
    assert_eq!((at.file(), at.line()), ("tests/tests/e2e/nn_ops.rs", line));
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(
            "contract violated in `nn::embedding` (called at tests/tests/e2e/nn_ops.rs:{line}:"
        )),
        "{message}"
    );
    assert!(!message.contains("runtime/src/nn/"), "{message}");
    assert!(
        message.contains("`ids`: value out of range: ids[0, 2] = 3, expected 0..V with V = 3 (bound by `table` dim 0)"),
        "{message}"
    );
    assert_eq!(
        only_violation(&error).subject(),
        candle_contracts::Subject::Argument("ids")
    );
    // The layer's forward names itself.
    let layer = nn::Embedding::new(positions.clone(), 4);
    let line = line!() + 1;
    let error = layer.forward(&ids).unwrap_err();
    let found = contract_error(&error);
    assert_eq!(found.function(), "nn::Embedding::forward");
    assert_eq!(found.called_at().unwrap().line(), line);
    // Every op: its name and this file.
    let logits = logits(2, 3);
    let bad = Tensor::new(&[0u32, 3], &cpu()).unwrap();
    let source = Tensor::zeros((2, 3), DType::F32, &cpu()).unwrap();
    let probabilities = Tensor::new(&[0.5f32, 2.0], &cpu()).unwrap();
    let errors = [
        (
            "nn::cross_entropy",
            nn::cross_entropy(&logits, &bad).unwrap_err(),
        ),
        (
            "nn::cross_entropy_with",
            nn::cross_entropy_with(&logits, &bad, LossOptions::default()).unwrap_err(),
        ),
        ("nn::nll", nn::nll(&logits, &bad).unwrap_err()),
        (
            "nn::nll_with",
            nn::nll_with(&logits, &bad, LossOptions::default()).unwrap_err(),
        ),
        (
            "nn::binary_cross_entropy",
            nn::binary_cross_entropy(&probabilities, &probabilities).unwrap_err(),
        ),
        (
            "nn::binary_cross_entropy_with_logit",
            nn::binary_cross_entropy_with_logit(&probabilities, &probabilities).unwrap_err(),
        ),
        (
            "nn::index_select",
            nn::index_select(&source, &bad, 1).unwrap_err(),
        ),
        (
            "nn::gather",
            nn::gather(&source, &bad.unsqueeze(0).unwrap(), 1).unwrap_err(),
        ),
        (
            "nn::scatter_add",
            nn::scatter_add(
                &source,
                &bad.unsqueeze(0).unwrap(),
                &Tensor::ones((1, 2), DType::F32, &cpu()).unwrap(),
                1,
            )
            .unwrap_err(),
        ),
        (
            "nn::index_add",
            nn::index_add(
                &source,
                &bad,
                &Tensor::ones((2, 2), DType::F32, &cpu()).unwrap(),
                1,
            )
            .unwrap_err(),
        ),
        (
            "nn::one_hot",
            nn::one_hot(bad.clone(), 3, 1f32, 0f32).unwrap_err(),
        ),
    ];
    for (op, error) in errors {
        let found = contract_error(&error);
        assert_eq!(found.function(), op, "{error}");
        assert_eq!(
            found.called_at().unwrap().file(),
            "tests/tests/e2e/nn_ops.rs",
            "{error}"
        );
        assert!(
            error.to_string().starts_with(&format!(
                "contract violated in `{op}` (called at tests/tests/e2e/nn_ops.rs:"
            )),
            "{error}"
        );
    }
}

#[test]
fn index_bounds_show_the_size_of_the_indexed_dim() {
    let source = Tensor::zeros((2, 3, 5), DType::F32, &cpu()).unwrap();
    let error =
        nn::index_select(&source, &Tensor::new(&[1u32, 5], &cpu()).unwrap(), 2).unwrap_err();
    let violation = only_violation(&error);
    let s = &violation.bound_dims()[0];
    assert_eq!((s.name, s.value, s.bound_by, s.axis), ("S", 5, "source", 2));
    let message = error.to_string();
    assert!(
        message.contains("ids[1] = 5, expected 0..S with S = 5 (bound by `source` dim 2)"),
        "{message}"
    );
    assert!(!message.contains('{'), "{message}");
    let base = Tensor::zeros((4, 3), DType::F32, &cpu()).unwrap();
    let error = nn::index_add(
        &base,
        &Tensor::new(&[4i64], &cpu()).unwrap(),
        &Tensor::ones((1, 3), DType::F32, &cpu()).unwrap(),
        0,
    )
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("ids[0] = 4, expected 0..S with S = 4 (bound by `base` dim 0)"),
        "{error}"
    );
}

#[test]
fn the_finite_rule_on_the_device_path() {
    use candle_contracts::__private::{device_transfers, force_device_path};
    force_device_path(true);
    let target = Tensor::new(&[0i64, -100, 2, 1, 0], &cpu()).unwrap();
    // A passing call: logits and target checked in one transfer.
    let clean = logits(5, 3);
    let before = device_transfers();
    let loss = nn::cross_entropy_with(&clean, &target, LossOptions::default()).unwrap();
    assert_eq!(device_transfers() - before, 1);
    let mut values: Vec<f32> = clean.flatten_all().unwrap().to_vec1().unwrap();
    values[3] = f32::NAN;
    values[3 * 3 + 2] = f32::INFINITY;
    let bad = Tensor::from_vec(values, (5, 3), &cpu()).unwrap();
    let every_row = Tensor::new(&[0i64, 1, 2, 1, 0], &cpu()).unwrap();
    let plain = nn::cross_entropy(&bad, &every_row).unwrap_err();
    let with = nn::cross_entropy_with(&bad, &target, LossOptions::default()).unwrap_err();
    force_device_path(false);
    assert!(scalar(&loss).is_finite());
    assert_eq!(rule_and_index(&plain, "logits"), (Rule::Finite, vec![1, 0]));
    assert_eq!(only_violation(&plain).counts().unwrap().violating, 2);
    assert_eq!(rule_and_index(&with, "logits"), (Rule::Finite, vec![3, 2]));
    assert_eq!(only_violation(&with).counts().unwrap().violating, 1);
}

#[test]
fn a_sequence_models_target_is_told_to_flatten_not_to_argmax() {
    // Logits [B, T, C] and a [B, T] target of class ids: flattening is the fix; `argmax`
    // would throw the labels away.
    let logits = Tensor::zeros((2, 3, 4), DType::F32, &Device::Cpu).unwrap();
    let target = Tensor::zeros((2, 3), DType::U32, &Device::Cpu).unwrap();
    let error = nn::cross_entropy(&logits, &target).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("flatten it to [B * T]"), "{text}");
}
