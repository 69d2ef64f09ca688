//! Common mistakes with class ids, masks, probabilities and batches that a user's own contract
//! catches, each with the message and help line it gets. (The mistakes that
//! `candle_contracts::nn` handles are in `nn_ops.rs`.)

use candle_contracts::{contract, Rule, Value};
use candle_core::{DType, Device, Result, Tensor, D};

use crate::{contract_error, only_violation};

fn cpu() -> Device {
    Device::Cpu
}

#[contract(logits: f32[N, C], target: i64[N] in 0..C)]
fn class_loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    candle_nn::loss::cross_entropy(logits, target)
}

#[test]
fn more_classes_in_the_data_than_in_the_head() {
    let logits = Tensor::zeros((8, 3), DType::F32, &cpu()).unwrap();
    let target = Tensor::new(&[5i64, 5, 0, 10, 0, 0, 10, 5], &cpu()).unwrap();
    let error = class_loss(&logits, &target).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.argument(), "target");
    assert_eq!(violation.index(), Some(&[0][..]));
    assert_eq!(violation.value(), Some(Value::Int(5)));
    assert_eq!(violation.counts().unwrap().violating, 5);
    assert_eq!(
        violation.observed_range(),
        Some((Value::Int(0), Value::Int(10)))
    );
    let c = &violation.bound_dims()[0];
    assert_eq!((c.name, c.value, c.bound_by, c.axis), ("C", 3, "logits", 1));
    let text = error.to_string();
    assert!(text.contains("`target`: value out of range: target[0] = 5, expected 0..C with C = 3 (bound by `logits` dim 1)"), "{text}");
    assert!(
        text.contains("5 of 8 elements violate the rule; observed range 0..=10"),
        "{text}"
    );
}

#[contract(logits: f32[N, C], target: i64[N] in 0..C)]
fn no_label_loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    candle_nn::loss::cross_entropy(logits, target)
}

#[test]
fn minus_one_as_no_label_without_ignore() {
    let logits = Tensor::zeros((4, 11), DType::F32, &cpu()).unwrap();
    let target = Tensor::new(&[3i64, -1, 7, -1], &cpu()).unwrap();
    let error = no_label_loss(&logits, &target).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.index(), violation.value()),
        (Some(&[1][..]), Some(Value::Int(-1)))
    );
    let text = error.to_string();
    assert!(text.contains("target[1] = -1"), "{text}");
    assert!(!text.contains("18446744073709551615"), "{text}");
    assert!(
        violation
            .help()
            .unwrap()
            .contains("declare `ignore -1` where the function skips them"),
        "{text}"
    );
}

#[contract(logits: f32[B, C, H, W], target: i64[B, H, W] in 0..C)]
fn segmentation_loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    let c = logits.dim(1)?;
    let flat = logits.permute((0, 2, 3, 1))?.reshape(((), c))?;
    candle_nn::loss::cross_entropy(&flat, &target.flatten_all()?)
}

#[test]
fn masks_saved_as_0_and_255() {
    let logits = Tensor::zeros((2, 2, 4, 4), DType::F32, &cpu()).unwrap();
    let mut mask = vec![0i64; 32];
    mask[16 + 4 + 2] = 255;
    mask[31] = 255;
    let target = Tensor::from_vec(mask, (2, 4, 4), &cpu()).unwrap();
    let error = segmentation_loss(&logits, &target).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.index(), Some(&[1, 1, 2][..]));
    assert_eq!(violation.offending_values(), [Value::Int(255)]);
    let text = error.to_string();
    assert!(text.contains("target[1, 1, 2] = 255"), "{text}");
    assert!(violation.help().unwrap().contains("255"), "{text}");
}

#[contract(logits: f32[N, C], target: i64[N] in 0..C ignore -100)]
fn ignoring_loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    let _ = (logits, target);
    Tensor::new(0f32, &Device::Cpu)
}

#[test]
fn every_target_is_the_ignore_value() {
    let logits = Tensor::zeros((5, 10), DType::F32, &cpu()).unwrap();
    let target = Tensor::new(&[-100i64; 5], &cpu()).unwrap();
    let error = ignoring_loss(&logits, &target).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.rule(), Rule::AllIgnored);
    assert!(
        error
            .to_string()
            .contains("all 5 elements are ignored values (-100)"),
        "{error}"
    );
}

#[contract(logits: f32[N, C], target: u8 | u32 | i64 [N] in 0..C)]
fn indices_loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    candle_nn::loss::cross_entropy(logits, target)
}

#[test]
fn one_hot_target_instead_of_class_indices() {
    let logits = Tensor::zeros((4, 5), DType::F32, &cpu()).unwrap();
    let one_hot = Tensor::eye(5, DType::F32, &cpu())
        .unwrap()
        .narrow(0, 0, 4)
        .unwrap();
    let error = indices_loss(&logits, &one_hot).unwrap_err();
    let violations = contract_error(&error).violations();
    let rules: Vec<(&str, Rule)> = violations
        .iter()
        .map(|v| (v.argument(), v.rule()))
        .collect();
    assert_eq!(rules, [("target", Rule::DType), ("target", Rule::Rank)]);
    assert!(
        violations[0]
            .help()
            .unwrap()
            .contains("class indices, not one-hot rows"),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("`target`: dtype f32, expected u8 | u32 | i64"),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("`target`: shape [4, 5] does not match [N] = [4] (rank 2, expected rank 1)"),
        "{error}"
    );
}

#[test]
fn target_as_a_column_vector() {
    let logits = Tensor::zeros((6, 4), DType::F32, &cpu()).unwrap();
    let target = Tensor::zeros((6, 1), DType::U32, &cpu()).unwrap();
    let error = indices_loss(&logits, &target).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.rule(), Rule::Rank);
    assert!(
        error
            .to_string()
            .contains("`target`: shape [6, 1] does not match [N] = [6] (rank 2, expected rank 1)"),
        "{error}"
    );
    assert!(violation.help().unwrap().contains("squeeze"), "{error}");
}

#[contract(probabilities: f32[B, 1, H, W] in 0.0..=1.0, target: f32[B, 1, H, W] in 0.0..=1.0)]
fn bce(probabilities: &Tensor, target: &Tensor) -> Result<Tensor> {
    let eps = 1e-7;
    let p = probabilities.clamp(eps, 1. - eps)?;
    let loss =
        (target.mul(&p.log()?)? + (target.affine(-1., 1.)?).mul(&p.affine(-1., 1.)?.log()?)?)?;
    loss.neg()?.mean_all()
}

#[test]
fn masks_not_scaled_before_bce() {
    let probabilities = Tensor::full(0.5f32, (2, 1, 4, 4), &cpu()).unwrap();
    let mut mask = vec![0f32; 32];
    mask[5] = 255.;
    let target = Tensor::from_vec(mask, (2, 1, 4, 4), &cpu()).unwrap();
    let error = bce(&probabilities, &target).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.argument(), "target");
    assert_eq!(violation.index(), Some(&[0, 0, 1, 1][..]));
    assert!(
        error
            .to_string()
            .contains("target[0, 0, 1, 1] = 255, expected 0.0..=1.0"),
        "{error}"
    );
    assert!(
        violation.help().unwrap().contains("divide by 255"),
        "{error}"
    );
}

#[contract(input: f32[N, K] in 0.0..=1.0, target: f32[N, K] in 0.0..=1.0)]
fn bce_on_probabilities(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    let loss = (target.mul(&input.log()?)?
        + target
            .affine(-1., 1.)?
            .mul(&input.affine(-1., 1.)?.log()?)?)?;
    loss.neg()?.mean_all()
}

#[test]
fn head_without_a_sigmoid() {
    let logits = Tensor::new(
        &[
            [2.3f32, -1.7, 0.4],
            [0.1, 0.9, -0.2],
            [1.2, 0.3, 0.5],
            [0.0, 0.2, 0.8],
        ],
        &cpu(),
    )
    .unwrap();
    let target = Tensor::new(
        &[[1f32, 0., 1.], [0., 1., 0.], [1., 0., 1.], [0., 0., 1.]],
        &cpu(),
    )
    .unwrap();
    // Without the contract the hand-written BCE gives NaN.
    let unguarded = {
        let loss = (target.mul(&logits.log().unwrap()).unwrap()
            + target
                .affine(-1., 1.)
                .unwrap()
                .mul(&logits.affine(-1., 1.).unwrap().log().unwrap())
                .unwrap())
        .unwrap();
        loss.neg()
            .unwrap()
            .mean_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap()
    };
    assert!(unguarded.is_nan());
    let error = bce_on_probabilities(&logits, &target).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.argument(), "input");
    assert_eq!(violation.index(), Some(&[0, 0][..]));
    assert!(
        error
            .to_string()
            .contains("input[0, 0] = 2.3, expected 0.0..=1.0"),
        "{error}"
    );
    assert!(violation.help().unwrap().contains("sigmoid"), "{error}");
    // With the sigmoid the same call passes.
    let probabilities = candle_nn::ops::sigmoid(&logits).unwrap();
    assert!(bce_on_probabilities(&probabilities, &target)
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
        .is_finite());
}

#[contract(input: f32[N] in 0.0..=1.0)]
fn probabilities_only(input: &Tensor) -> Result<()> {
    let _ = input;
    Ok(())
}

#[test]
fn nan_reached_the_bce_input() {
    let input = Tensor::new(&[0.2f32, f32::NAN, 0.9, 0.4, f32::NAN, 0.1], &cpu()).unwrap();
    // candle's min/max skip the NaN, so a min/max check would pass this tensor.
    assert_eq!(
        input.max(D::Minus1).unwrap().to_scalar::<f32>().unwrap(),
        0.9
    );
    let error = probabilities_only(&input).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.index(), Some(&[1][..]));
    assert_eq!(violation.counts().unwrap().nan, 2);
    assert!(
        error
            .to_string()
            .contains("input[1] = NaN, expected 0.0..=1.0"),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("2 of 6 elements violate the rule (2 NaN)"),
        "{error}"
    );
}

#[contract(table: f32[V, D], ids: i64[B, T] in 0..V ignore -1)]
fn embed_padded(table: &Tensor, ids: &Tensor) -> Result<Tensor> {
    let mask = ids.ge(0i64)?;
    let safe = mask.where_cond(ids, &ids.zeros_like()?)?;
    let (b, t) = ids.dims2()?;
    table
        .index_select(&safe.flatten_all()?, 0)?
        .reshape((b, t, table.dim(1)?))
}

#[contract(table: f32[V, D], ids: i64[B, T] in 0..V)]
fn embed_unpadded(table: &Tensor, ids: &Tensor) -> Result<Tensor> {
    let (b, t) = ids.dims2()?;
    table
        .index_select(&ids.flatten_all()?, 0)?
        .reshape((b, t, table.dim(1)?))
}

#[test]
fn pad_id_minus_one_declared_as_ignored() {
    let table = Tensor::arange(0f32, 20., &cpu())
        .unwrap()
        .reshape((10, 2))
        .unwrap();
    let ids = Tensor::new(&[[1i64, 2, 3, -1, -1], [4, 5, -1, -1, -1]], &cpu()).unwrap();
    let out = embed_padded(&table, &ids).unwrap();
    assert_eq!(out.dims(), [2, 5, 2]);
    assert_eq!(
        out.get(0)
            .unwrap()
            .get(0)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap(),
        [2., 3.]
    );
    let error = embed_unpadded(&table, &ids).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.index(), violation.value()),
        (Some(&[0, 3][..]), Some(Value::Int(-1)))
    );
}

#[contract(probs: f32[N] finite)]
fn sample_weights(probs: &Tensor) -> Result<()> {
    let _ = probs;
    Ok(())
}

#[test]
fn sampling_weights_overflowed() {
    let probs = Tensor::new(&[0f32, f32::INFINITY], &cpu()).unwrap();
    let error = sample_weights(&probs).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.rule(), violation.index()),
        (Rule::Finite, Some(&[1][..]))
    );
}

#[contract(mask: u8[B, P], scores: f32[B, P])]
fn masked_scores(mask: &Tensor, scores: &Tensor) -> Result<Tensor> {
    mask.where_cond(scores, &scores.zeros_like()?)
}

#[test]
fn equal_element_counts_different_shapes() {
    let mask = Tensor::zeros((4, 6), DType::U8, &cpu()).unwrap();
    let scores = Tensor::zeros((24, 1), DType::F32, &cpu()).unwrap();
    let error = masked_scores(&mask, &scores).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.argument(), "scores");
    let text = error.to_string();
    assert!(
        text.contains("`scores`: shape [24, 1] does not match [B, P] = [4, 6]"),
        "{text}"
    );
    assert!(
        violation
            .help()
            .unwrap()
            .contains("element counts match (24)"),
        "{text}"
    );
}

struct Classifier {
    weight: Tensor,
}

impl Classifier {
    #[contract(x: f32[N, 10], target: u32[N] in 0..C, self.weight: f32[C, 10])]
    fn loss(&self, x: &Tensor, target: &Tensor) -> Result<Tensor> {
        candle_nn::loss::cross_entropy(&x.matmul(&self.weight.t()?)?, target)
    }
}

#[test]
fn last_batch_smaller_than_the_batch_size() {
    let model = Classifier {
        weight: Tensor::zeros((3, 10), DType::F32, &cpu()).unwrap(),
    };
    let x = Tensor::zeros((2, 10), DType::F32, &cpu()).unwrap();
    let target = Tensor::zeros(6, DType::U32, &cpu()).unwrap();
    let error = model.loss(&x, &target).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.argument(), "target");
    assert!(
        error
            .to_string()
            .contains("dim 0 is 6 but N = 2 (bound by `x` dim 0)"),
        "{error}"
    );
    assert!(
        violation.help().unwrap().contains("last batch smaller"),
        "{error}"
    );
}

#[contract(logits: f32[N, C], target: u32[N] in 0..C)]
fn strict_loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    candle_nn::loss::cross_entropy(logits, target)
}

#[contract(logits: f32[N, C], target: u32[N] in 0..C ignore MAX)]
fn skipping_loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    // Candle's CPU gather writes 0 for the MAX sentinel; average over the kept rows only.
    let kept = target.ne(u32::MAX)?;
    let log_probs = candle_nn::ops::log_softmax(logits, D::Minus1)?;
    let safe = kept.where_cond(target, &target.zeros_like()?)?;
    let picked = log_probs.gather(&safe.unsqueeze(1)?, 1)?.squeeze(1)?;
    let kept_f = kept.to_dtype(DType::F32)?;
    picked.mul(&kept_f)?.sum_all()?.neg()? / kept_f.sum_all()?.to_scalar::<f32>()? as f64
}

#[test]
fn candles_max_sentinel_in_targets() {
    let logits = Tensor::new(
        &[[1f32, 2., 3., 4.], [0., 0., 0., 0.], [5., 1., 1., 1.]],
        &cpu(),
    )
    .unwrap();
    let target = Tensor::new(&[0u32, 2, u32::MAX], &cpu()).unwrap();
    let error = strict_loss(&logits, &target).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.index(), violation.value()),
        (Some(&[2][..]), Some(Value::Int(4294967295)))
    );
    assert!(
        error.to_string().contains("target[2] = 4294967295"),
        "{error}"
    );
    let loss = skipping_loss(&logits, &target)
        .unwrap()
        .to_scalar::<f32>()
        .unwrap();
    // Mean over the two kept rows: -log_softmax(row0)[0] and -log_softmax(row1)[2].
    let row0 = (1f32.exp() + 2f32.exp() + 3f32.exp() + 4f32.exp()).ln() - 1.;
    let row1 = 4f32.ln();
    assert!((loss - (row0 + row1) / 2.).abs() < 1e-5, "{loss}");
}
