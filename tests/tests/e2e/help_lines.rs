//! Help lines are chosen from the rule and the data, never from the argument's name: one test
//! per help line with its text, the names that used to misfire, and data with no likely cause.

use candle_contracts::{check, nn, ContractError};
use candle_core::{DType, Device, Tensor};

use crate::contract_error;

fn cpu() -> Device {
    Device::Cpu
}

/// The help line of the only violation of a `check!`.
fn help(result: Result<(), ContractError>) -> Option<String> {
    let error = result.expect_err("expected a violation");
    assert_eq!(error.violations().len(), 1, "{error}");
    error.violations()[0].help().map(str::to_string)
}

/// The help line of the first violation of a guarded op.
fn op_help(error: candle_core::Error) -> Option<String> {
    contract_error(&error).violations()[0]
        .help()
        .map(str::to_string)
}

#[test]
fn one_negative_value_is_a_no_label_marker() {
    let target = Tensor::new(&[3i64, -100, 2, -100], &cpu()).unwrap();
    assert_eq!(
        help(check!(target: i64[N] in 0..5)).as_deref(),
        Some(
            "negative values such as -100 usually mark padding or positions without a label: \
             drop or mask them first, or declare `ignore -100` where the function skips them \
             (`candle_contracts::nn::cross_entropy_with` takes an ignore index); candle would \
             read -100 as a huge unsigned index"
        )
    );
    // Several different negative values are no marker.
    let offsets = Tensor::new(&[3i64, -7, -2], &cpu()).unwrap();
    assert_eq!(help(check!(offsets: i64[N] in 0..5)), None);
}

#[test]
fn a_binary_mask_saved_as_0_and_255() {
    let mask = Tensor::new(&[[0i64, 255], [255, 1]], &cpu()).unwrap();
    assert_eq!(
        help(check!(mask: i64[H, W] in 0..2)).as_deref(),
        Some(
            "the smallest value is 0 and 255 is the only one out of range: a binary mask saved \
             as 0/255; map 255 to 1 where the masks are loaded (divide by 255)"
        )
    );
}

#[test]
fn a_void_label_255_in_a_segmentation_mask() {
    let labels = Tensor::new(&[0u8, 5, 255, 20], &cpu()).unwrap();
    assert_eq!(
        help(check!(labels: u8[N] in 0..21)).as_deref(),
        Some(
            "255 is the only value out of range: the usual \"void\" label of segmentation masks \
             (object borders in Pascal VOC); declare `ignore 255` to skip those pixels \
             (`candle_contracts::nn::cross_entropy_with` with `ignore_index: Some(255)`), or map \
             it to a class; in u8 it is also u8::MAX, which candle's kernels silently skip"
        )
    );
    let labels = labels.to_dtype(DType::I64).unwrap();
    assert!(!help(check!(labels: i64[N] in 0..21))
        .unwrap()
        .contains("u8::MAX"));
}

#[test]
fn the_dtype_maximum_is_candles_skip_sentinel() {
    let target = Tensor::new(&[0u32, u32::MAX, 1], &cpu()).unwrap();
    assert_eq!(
        help(check!(target: u32[N] in 0..4)).as_deref(),
        Some(
            "4294967295 is u32::MAX, candle's \"skip this index\" sentinel: write `ignore MAX` \
             to skip these positions on purpose, or fix the code that produced it"
        )
    );
}

#[test]
fn labels_numbered_from_1() {
    let logits = Tensor::zeros((4, 3), DType::F32, &cpu()).unwrap();
    let target = Tensor::new(&[1u32, 3, 2, 3], &cpu()).unwrap();
    assert_eq!(
        op_help(nn::cross_entropy(&logits, &target).unwrap_err()).as_deref(),
        Some(
            "indices are 0-based and must be < C = 3; these look numbered from 1 (none is 0, and \
             every offending value is 3): subtract 1 where they are loaded"
        )
    );
    // Fewer labels than classes say little about a missing 0: numbering from 1 is one cause
    // among others.
    let labels = Tensor::new(&[5u8, 3, 10, 8], &cpu()).unwrap();
    let classes = 10;
    assert_eq!(
        help(check!(labels: u8[N] in 0..{classes})).as_deref(),
        Some(
            "indices are 0-based and must be < {classes} = 10, so 10 is one past the end: \
             labels numbered from 1, an off-by-one, or one class or id more than the model has \
             (a head with too few classes) cause this"
        )
    );
}

#[test]
fn an_id_equal_to_the_bound_is_one_past_the_end() {
    let logits = Tensor::zeros((3, 4), DType::F32, &cpu()).unwrap();
    let target = Tensor::new(&[0u32, 2, 4], &cpu()).unwrap();
    assert_eq!(
        op_help(nn::cross_entropy(&logits, &target).unwrap_err()).as_deref(),
        Some(
            "indices are 0-based and must be < C = 4, so 4 is one past the end: an off-by-one, \
             or one class or id more than the model has (a head with too few classes) cause \
             this"
        )
    );
    // A vocabulary-sized table: tokens added to the tokenizer are a likely cause too.
    let table = Tensor::zeros((2000, 2), DType::F32, &cpu()).unwrap();
    let ids = Tensor::new(&[[0u32, 2000, 17]], &cpu()).unwrap();
    assert_eq!(
        op_help(nn::embedding(&ids, &table).unwrap_err()).as_deref(),
        Some(
            "indices are 0-based and must be < V = 2000, so 2000 is one past the end: an \
             off-by-one, or one class or id more than the model has (a head with too few \
             classes, a token added to a tokenizer without resizing the embedding table) cause \
             this"
        )
    );
}

#[test]
fn ids_that_run_past_the_end() {
    let positions = Tensor::zeros((6, 2), DType::F32, &cpu()).unwrap();
    let position_ids = Tensor::arange(0u32, 9, &cpu())
        .unwrap()
        .unsqueeze(0)
        .unwrap();
    assert_eq!(
        op_help(nn::embedding(&position_ids, &positions).unwrap_err()).as_deref(),
        Some(
            "indices are 0-based and must be < V = 6, but these run from 6 up to 8: the data \
             has more ids or positions than the dim they index (a sequence longer than a \
             position table, a vocabulary or class set larger than the table or head built \
             from a config)"
        )
    );
}

/// Names that contain `id`, `token`, `input` or `position` used to be told about tokenizers.
#[test]
fn names_that_look_like_token_ids_are_not_told_about_tokenizers() {
    let types = Tensor::zeros((1, 4), DType::F32, &cpu()).unwrap();
    let token_type_ids = Tensor::new(&[[0u32, 1, 1, 0]], &cpu()).unwrap();
    let position_ids = Tensor::new(&[[0u32, 1, 2, 3, 4]], &cpu()).unwrap();
    let idx1 = Tensor::new(&[0u32, 5], &cpu()).unwrap();
    for text in [
        help(check!(token_type_ids: u32[B, T] in 0..{ types.dim(0).unwrap() })),
        help(check!(position_ids: u32[B, T] in 0..4)),
        help(check!(idx1: u32[K] in 0..5)),
        op_help(nn::embedding(&token_type_ids, &types).unwrap_err()),
    ] {
        let text = text.unwrap();
        assert!(text.contains("one past the end"), "{text}");
        assert!(!text.contains("tokenizer"), "{text}");
    }
}

#[test]
fn nan_and_infinities() {
    let p = Tensor::new(&[0.5f32, f32::NAN], &cpu()).unwrap();
    assert_eq!(
        help(check!(p: f32[N] in 0.0..=1.0)).as_deref(),
        Some(
            "NaN is in no range: it came from an earlier op (a log of 0, 0/0, a diverging loss \
             or a too-high learning rate); find where it first appears"
        )
    );
    assert!(help(check!(p: f32[N] finite))
        .unwrap()
        .starts_with("NaN is not finite: it came from an earlier op"));
    let target = Tensor::new(&[0u32, 1], &cpu()).unwrap();
    let overflow = Tensor::new(&[[0f32, f32::INFINITY], [1., 2.]], &cpu()).unwrap();
    assert_eq!(
        op_help(nn::cross_entropy(&overflow, &target).unwrap_err()).as_deref(),
        Some(
            "an overflow gave an infinity (an exp of a large logit, a division by a tiny \
             number, weights that blew up); clamp or normalise before this call"
        )
    );
    let masked = Tensor::new(&[[0f32, f32::NEG_INFINITY], [1., 2.]], &cpu()).unwrap();
    assert_eq!(
        op_help(nn::cross_entropy(&masked, &target).unwrap_err()).as_deref(),
        Some(
            "-inf is what masking with -inf (`masked_fill`, `where_cond`) or a log of 0 gives: \
             mask with a large finite negative number instead (such as -1e9), or clamp the log \
             (`.maximum(-100.0)?`)"
        )
    );
}

#[test]
fn probabilities_or_logits_given_as_log_probabilities() {
    let target = Tensor::new(&[0u32, 1], &cpu()).unwrap();
    let probabilities = Tensor::new(&[[0.25f32, 0.75], [0.5, 0.5]], &cpu()).unwrap();
    assert_eq!(
        op_help(nn::nll(&probabilities, &target).unwrap_err()).as_deref(),
        Some(
            "log-probabilities are <= 0, and these lie in 0..=1: probabilities given in their \
             place; take `candle_nn::ops::log_softmax` of the logits instead, or give the logits \
             to `candle_contracts::nn::cross_entropy`"
        )
    );
    let logits = Tensor::new(&[[-1.5f32, 2.5], [0.5, -0.25]], &cpu()).unwrap();
    assert_eq!(
        op_help(nn::nll(&logits, &target).unwrap_err()).as_deref(),
        Some(
            "log-probabilities are <= 0, and these reach 2.5: raw logits given in their place; \
             apply `candle_nn::ops::log_softmax(&logits, D::Minus1)?` first, or give the logits \
             to `candle_contracts::nn::cross_entropy`"
        )
    );
}

#[test]
fn values_above_1_where_probabilities_are_due() {
    let probabilities = Tensor::full(0.5f32, 4, &cpu()).unwrap();
    // A mask of 0 and 255.
    let mask = Tensor::new(&[0f32, 255., 0., 255.], &cpu()).unwrap();
    assert_eq!(
        op_help(nn::binary_cross_entropy(&probabilities, &mask).unwrap_err()).as_deref(),
        Some(
            "the smallest value is 0 and 255 is the only one out of range: a mask stored as \
             0/255; divide by 255 to scale it to 0..=1"
        )
    );
    // Pixels of 8-bit images: not scaled, and no mask and no loss to speak of.
    let images = Tensor::new(&[[0f32, 17., 128., 255.]], &cpu()).unwrap();
    assert_eq!(
        help(check!(images: f32[N, 4] in 0.0..=1.0)).as_deref(),
        Some(
            "whole numbers up to 255 where 0..=1 is expected: the data is not scaled (8-bit \
             images hold 0..=255: divide by 255), or counts or class ids stand where \
             probabilities belong"
        )
    );
    // Rounding just past 1.
    let sums = Tensor::new(&[0.5f32, 1.0000001], &cpu()).unwrap();
    assert_eq!(
        help(check!(sums: f32[N] in 0.0..=1.0)).as_deref(),
        Some(
            "the values lie just outside 0..=1 (observed 0.5..=1.0000001): rounding in the op \
             that made them; clamp with `.clamp(0.0, 1.0)?`"
        )
    );
    // Logits: a head without a sigmoid.
    let logits = Tensor::new(&[2.3f32, -1.7, 0.4, 0.1], &cpu()).unwrap();
    assert_eq!(
        op_help(nn::binary_cross_entropy(&logits, &probabilities).unwrap_err()).as_deref(),
        Some(
            "probabilities must lie in 0..=1: a model head without a sigmoid gives logits; apply \
             `candle_nn::ops::sigmoid`, or give the logits to `binary_cross_entropy_with_logit`"
        )
    );
}

#[test]
fn no_help_line_where_no_cause_is_likely() {
    // Far past the bound, with no marker, mask value or sentinel among them.
    let ids = Tensor::new(&[3u32, 57, 12], &cpu()).unwrap();
    let error = check!(ids: u32[N] in 0..10).unwrap_err();
    assert_eq!(error.violations()[0].help(), None);
    assert!(!error.to_string().contains("help:"), "{error}");
    // A range that is no index range.
    let years = Tensor::new(&[13i64, 25], &cpu()).unwrap();
    assert_eq!(help(check!(years: i64[N] in 13..22)), None);
    // A float dtype for a clause with no 0..=1 rule: no word of binary cross-entropy.
    let x = Tensor::new(&[1i64, 2], &cpu()).unwrap();
    let error = check!(x: f32[N]).unwrap_err();
    assert_eq!(
        error.violations()[0].help(),
        Some("this takes a float dtype: convert with `.to_dtype(DType::F32)?`")
    );
}

/// A missing dim's help names the insertion that makes the shape fit, and only one that does.
#[test]
fn a_missing_dim_is_inserted_where_the_shape_fits() {
    let scores = Tensor::zeros((3, 5), DType::F32, &cpu()).unwrap();
    let one = Tensor::zeros(5, DType::F32, &cpu()).unwrap();
    assert_eq!(
        help(check!(scores: f32[B, T], one: f32[B, T])).as_deref(),
        None,
        "a [5] against [B, T] with B = 3 fits no insertion"
    );
    assert_eq!(
        help(check!(one: f32[B, T])).as_deref(),
        Some("one dim missing: add a batch dim with `.unsqueeze(0)?`")
    );
    // A [T] mask against a [T, T] one: no single insertion fits.
    let mask = Tensor::zeros(5, DType::F32, &cpu()).unwrap();
    assert_eq!(help(check!(mask: f32[T, T])).as_deref(), None);
    // [2, 1, 5] against [B, 1, 1, T]: the dim goes at 1, not 0.
    let attention = Tensor::zeros((2, 1, 5), DType::F32, &cpu()).unwrap();
    assert_eq!(
        help(check!(attention: f32[B, 1, 1, T])).as_deref(),
        Some("one dim missing: insert a dim of size 1 with `.unsqueeze(1)?`")
    );
}

/// A dtype of the same kind as the clause's gets the conversion, as the compile-time check says.
#[test]
fn a_dtype_of_the_same_kind_gets_its_conversion() {
    let weights = Tensor::zeros(3, DType::F64, &cpu()).unwrap();
    assert_eq!(
        help(check!(weights: f32[N])).as_deref(),
        Some("convert it with `.to_dtype(DType::F32)?`")
    );
    let ids = Tensor::zeros(3, DType::I32, &cpu()).unwrap();
    assert_eq!(
        help(check!(ids: u32 | i64 [N])).as_deref(),
        Some("convert it with `.to_dtype(DType::U32)?` (or to another dtype the clause allows)")
    );
}

const THREE: usize = 3;

/// A constant or an expression in the shape: no insertion is offered that would not fit.
#[test]
fn no_insertion_is_offered_that_a_constant_or_an_expression_refuses() {
    let one = Tensor::zeros(5, DType::F32, &cpu()).unwrap();
    assert_eq!(help(check!(one: f32[N, THREE])).as_deref(), None);
    assert_eq!(help(check!(one: f32[N, 2 * N])).as_deref(), None);
    // Where the constant agrees, the batch dim is the fix.
    let three = Tensor::zeros(3, DType::F32, &cpu()).unwrap();
    assert_eq!(
        help(check!(three: f32[N, THREE])).as_deref(),
        Some("one dim missing: add a batch dim with `.unsqueeze(0)?`")
    );
}

/// An f64 equal to the f64 nearest a bound's literal is still not the literal: the help says so.
#[test]
fn an_f64_at_an_inexact_bound_gets_its_exact_value() {
    let x = Tensor::new(&[0.1f64], &cpu()).unwrap();
    assert_eq!(
        help(check!(x: f64[N] in ..=0.1)).as_deref(),
        Some(
            "0.1 is the f64 nearest to 0.1, but exactly it is 0.1000000000000000055511151..., \
             on the wrong side of 0.1: bounds are exact real numbers; widen the bound a little \
             or round the data"
        )
    );
}

/// One dim too many on a `[B, T]` mask: the size-1 dim to drop, never a class-index help.
#[test]
fn an_extra_size_one_dim_is_dropped_where_the_shape_fits() {
    let mask = Tensor::zeros((1, 1, 3), DType::U8, &cpu()).unwrap();
    assert_eq!(
        help(check!(mask: u8[B, T] in 0..=1)).as_deref(),
        Some("a leading dim of size 1: drop it with `.squeeze(0)?`")
    );
    // An int [B, T] clause with a dim too many and no size-1 dim: no class-index help either.
    let ids = Tensor::zeros((2, 3, 4), DType::U32, &cpu()).unwrap();
    assert_eq!(help(check!(ids: u32[B, T])).as_deref(), None);
}
