//! Rules beyond ranges (contract language §11): derived subjects, `where` masks and
//! `integral`, one test per kind of real failure they catch, each with the call that passes.

use candle_contracts::{check, contract, Rule, Value};
use candle_core::{DType, Device, Result, Tensor, D};

use crate::{contract_error, only_violation};

fn cpu() -> Device {
    Device::Cpu
}

/// Ids below `OFFSET` are special tokens with their own table; the others index the main
/// table after the offset is taken off (as OPT's and RoBERTa's learned positions do).
const OFFSET: i64 = 2;

struct OffsetEmbedding {
    special: Tensor,
    table: Tensor,
}

impl OffsetEmbedding {
    #[contract(
        input_ids: i64[B, T] in 0..,
        {(input_ids - OFFSET as f64)?}: i64[B, T] in 0..{self.table.dims()[0]}
            where {input_ids.ge(OFFSET)?},
    )]
    fn forward(&self, input_ids: &Tensor) -> Result<Tensor> {
        let special = input_ids.lt(OFFSET)?;
        let main_ids = (input_ids - OFFSET as f64)?.maximum(0i64)?;
        let special_ids = input_ids.minimum(OFFSET - 1)?;
        let (b, t) = input_ids.dims2()?;
        let main = self.table.embedding(&main_ids.flatten_all()?)?;
        let side = self.special.embedding(&special_ids.flatten_all()?)?;
        let routed = special
            .flatten_all()?
            .unsqueeze(1)?
            .broadcast_as(main.shape())?
            .where_cond(&side, &main)?;
        routed.reshape((b, t, ()))
    }
}

#[test]
fn an_offset_embedding_checks_only_the_ids_its_mask_routes_to_the_main_table() {
    let embedding = OffsetEmbedding {
        special: Tensor::new(&[[-1f32, -1.0], [-2.0, -2.0]], &cpu()).unwrap(),
        table: Tensor::arange(0f32, 8.0, &cpu())
            .unwrap()
            .reshape((4, 2))
            .unwrap(),
    };
    // 0 and 1 are special (0 - 2 would be out of the table: the mask exempts them); 5 is row 3.
    let ids = Tensor::new(&[[0i64, 1, 5, 3]], &cpu()).unwrap();
    let out = embedding.forward(&ids).unwrap();
    assert_eq!(
        out.to_vec3::<f32>().unwrap(),
        [[[-1.0, -1.0], [-2.0, -2.0], [6.0, 7.0], [2.0, 3.0]]]
    );
    // 6 - 2 = 4 is past the 4 rows of the main table.
    let ids = Tensor::new(&[[0i64, 6, 1, 3]], &cpu()).unwrap();
    let error = embedding.forward(&ids).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.argument(), "{(input_ids - OFFSET as f64)?}");
    assert_eq!(violation.rule(), Rule::Range);
    assert_eq!(violation.index(), Some(&[0, 1][..]));
    assert_eq!(violation.value(), Some(Value::Int(4)));
    assert_eq!(violation.mask(), Some("{input_ids.ge(OFFSET)?}"));
    let counts = violation.counts().unwrap();
    assert_eq!(
        (counts.violating, counts.total, counts.exempt),
        (1, 4, 2),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains(
            "1 of 2 checked elements violate the rule; 2 of 4 exempt where \
             `{input_ids.ge(OFFSET)?}` is 0; observed range 1..=4"
        ),
        "{message}"
    );
}

#[contract(
    input_ids: i64[B, T] in 0..V where attention_mask,
    attention_mask: u8 | u32 | i64 | f32 [B, T],
    embeddings: f32[V, D],
)]
fn embed_padded(
    input_ids: &Tensor,
    attention_mask: &Tensor,
    embeddings: &Tensor,
) -> Result<Tensor> {
    // Padding is -1; it is clamped to a real row and its output is masked off downstream.
    let ids = input_ids.maximum(0i64)?;
    let (b, t) = ids.dims2()?;
    embeddings
        .embedding(&ids.flatten_all()?)?
        .reshape((b, t, ()))
}

#[test]
fn pad_ids_are_exempt_under_the_attention_mask_and_caught_outside_it() {
    let embeddings = Tensor::arange(0f32, 6.0, &cpu())
        .unwrap()
        .reshape((3, 2))
        .unwrap();
    let ids = Tensor::new(&[[2i64, 1, -1, -1], [0, 2, 1, -1]], &cpu()).unwrap();
    for dtype in [DType::U8, DType::U32, DType::I64, DType::F32] {
        let mask = Tensor::new(&[[1u8, 1, 0, 0], [1, 1, 1, 0]], &cpu())
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let out = embed_padded(&ids, &mask, &embeddings).unwrap();
        assert_eq!(out.dims(), [2, 4, 2], "{dtype:?}");
        // The same -1 where the mask says "attend" is a bug.
        let mask = Tensor::new(&[[1u8, 1, 1, 0], [1, 1, 1, 0]], &cpu())
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let error = embed_padded(&ids, &mask, &embeddings).unwrap_err();
        let violation = only_violation(&error);
        assert_eq!(violation.argument(), "input_ids", "{dtype:?}");
        assert_eq!(violation.index(), Some(&[0, 2][..]), "{dtype:?}");
        assert_eq!(violation.value(), Some(Value::Int(-1)), "{dtype:?}");
        let counts = violation.counts().unwrap();
        assert_eq!(
            (counts.violating, counts.exempt, counts.total),
            (1, 2, 8),
            "{error}"
        );
        // Never "declare `ignore -1`": that would hide what the mask is there to catch.
        let help = violation.help().unwrap();
        assert!(help.contains("the data and its mask disagree"), "{help}");
        assert!(!help.contains("ignore -1"), "{help}");
        assert_eq!(
            help.contains("in a float mask, NaN counts as non-zero too"),
            dtype == DType::F32,
            "{help}"
        );
    }
    // Without the mask's exemption, all three pads are out of range.
    let everywhere = Tensor::ones((2, 4), DType::U8, &cpu()).unwrap();
    let error = embed_padded(&ids, &everywhere, &embeddings).unwrap_err();
    assert_eq!(only_violation(&error).counts().unwrap().violating, 3);
}

#[test]
fn a_mask_that_does_not_broadcast_is_a_violation_and_its_rule_is_not_checked() {
    let embeddings = Tensor::zeros((3, 2), DType::F32, &cpu()).unwrap();
    let ids = Tensor::new(&[[2i64, -1]], &cpu()).unwrap();
    // Bound by `input_ids` as [1, 2], so `attention_mask: [B, T]` of [1, 3] breaks its own
    // clause first: the mask is not computed on, and no value rule runs.
    let mask = Tensor::ones((1, 3), DType::U8, &cpu()).unwrap();
    let error = embed_padded(&ids, &mask, &embeddings).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("attention_mask", Rule::Shape)
    );
}

#[contract(
    input: float[N, C],
    target: float[N, C] in 0.0..=1.0,
    {target.sum(1)?}: float[N] in 0.999..=1.001,
)]
fn kl_div(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    // PyTorch's `kl_div(input, target)` with `input` as log-probabilities.
    let n = input.dim(0)? as f64;
    let safe = target.maximum(1e-12)?;
    let pointwise = (target * (safe.log()? - input)?)?;
    pointwise.sum_all()? / n
}

#[test]
fn kl_target_rows_must_be_distributions() {
    let input = Tensor::new(&[[0.5f32, 0.5], [0.25, 0.75]], &cpu())
        .unwrap()
        .log()
        .unwrap();
    let target = Tensor::new(&[[0.5f32, 0.5], [0.5, 0.5]], &cpu()).unwrap();
    let loss = kl_div(&input, &target).unwrap().to_scalar::<f32>().unwrap();
    // The first row matches; the second is KL((0.5, 0.5) || (0.25, 0.75)) / 2.
    let expected = (0.5 * (0.5f32 / 0.25).ln() + 0.5 * (0.5f32 / 0.75).ln()) / 2.0;
    assert!((loss - expected).abs() < 1e-6, "{loss} vs {expected}");
    // Probabilities that do not sum to 1 (a row of 0.1 + 0.2): each element is in 0..=1.
    let target = Tensor::new(&[[0.5f32, 0.5], [0.1, 0.2]], &cpu()).unwrap();
    let error = kl_div(&input, &target).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.argument(), "{target.sum(1)?}");
    assert_eq!(
        violation.subject(),
        candle_contracts::Subject::Derived("{target.sum(1)?}")
    );
    assert_eq!(violation.index(), Some(&[1][..]));
    let Some(Value::Float(sum, DType::F32)) = violation.value() else {
        panic!("{error}")
    };
    assert!((sum - 0.3).abs() < 1e-6, "{sum}");
    let message = error.to_string();
    assert!(
        message.contains("`{target.sum(1)?}`: value out of range: {target.sum(1)?}[1] = 0.3"),
        "{message}"
    );
}

#[test]
fn a_derived_subject_is_not_computed_when_its_argument_has_the_wrong_shape() {
    let input = Tensor::zeros((2, 3), DType::F32, &cpu()).unwrap();
    // Rank 1: `target.sum(1)` would fail in candle; the contract reports the shape instead.
    let target = Tensor::zeros(3, DType::F32, &cpu()).unwrap();
    let error = kl_div(&input, &target).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("target", Rule::Rank)
    );
}

#[contract(
    probs: float[N, C] in 0.0.. finite,
    {probs.ne(0.0)?.to_dtype(DType::U32)?.sum(1)?}: u32[N] in num_samples..,
)]
fn sample_without_replacement(probs: &Tensor, num_samples: usize) -> Result<Vec<Vec<u32>>> {
    // Deterministic stand-in for `torch.multinomial(probs, num_samples)`: the most likely
    // categories of each row, which needs `num_samples` non-zero ones.
    let mut rows = Vec::new();
    for row in probs.to_vec2::<f32>()? {
        let mut order: Vec<u32> = (0..row.len() as u32).collect();
        order.sort_by(|&a, &b| row[b as usize].total_cmp(&row[a as usize]));
        rows.push(order[..num_samples].to_vec());
    }
    Ok(rows)
}

#[test]
fn each_sampling_row_needs_as_many_non_zero_categories_as_samples() {
    let probs = Tensor::new(
        &[
            [0.1f32, 0.2, 0.3, 0.1, 0.2, 0.1],
            [0.3, 0.1, 0.1, 0.2, 0.2, 0.1],
        ],
        &cpu(),
    )
    .unwrap();
    let rows = sample_without_replacement(&probs, 5).unwrap();
    assert_eq!(rows[0][0], 2);
    assert_eq!(rows[1][0], 0);
    // Row 1 has one non-zero category, and 5 samples are asked for.
    let probs = Tensor::new(
        &[
            [0.1f32, 0.2, 0.3, 0.1, 0.2, 0.1],
            [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        ],
        &cpu(),
    )
    .unwrap();
    let error = sample_without_replacement(&probs, 5).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        violation.argument(),
        "{probs.ne(0.0)?.to_dtype(DType::U32)?.sum(1)?}"
    );
    assert_eq!(violation.index(), Some(&[1][..]));
    assert_eq!(violation.value(), Some(Value::Int(1)));
    assert!(error.to_string().contains("num_samples = 5"), "{error}");
}

/// The fewest input frames CTC needs for each target: its length, plus one blank between
/// each pair of equal neighbours (`1 1 1` needs 5 frames).
fn ctc_min_frames(targets: &Tensor, target_lengths: &Tensor) -> Result<Tensor> {
    let (_, s) = targets.dims2()?;
    let lengths = target_lengths.to_dtype(DType::I64)?;
    if s < 2 {
        return Ok(lengths);
    }
    let same = targets
        .narrow(1, 1, s - 1)?
        .eq(&targets.narrow(1, 0, s - 1)?)?;
    // Only pairs inside the target's length count.
    let positions = Tensor::arange(1i64, s as i64, targets.device())?.unsqueeze(0)?;
    let inside = positions.broadcast_lt(&lengths.unsqueeze(1)?)?;
    let repeats = (same.to_dtype(DType::I64)? * inside.to_dtype(DType::I64)?)?.sum(1)?;
    lengths + repeats
}

#[contract(
    log_probs: float[T, N, C] in ..=0.0,
    targets: i64[N, S] in 1..C,
    input_lengths: i64[N] in 1..=T,
    target_lengths: i64[N] in 0..=S,
    {(input_lengths - ctc_min_frames(targets, target_lengths)?)?}: i64[N] in 0..
        "frames to spare: CTC needs the target's length plus a blank between repeated labels",
)]
fn ctc_loss(
    log_probs: &Tensor,
    targets: &Tensor,
    input_lengths: &Tensor,
    target_lengths: &Tensor,
) -> Result<Tensor> {
    // The body is not the point here: the guard runs before it.
    let _ = (targets, input_lengths, target_lengths);
    log_probs.sum_all()
}

#[test]
fn ctc_targets_must_fit_their_input_frames_with_blanks_between_repeats() {
    let log_probs = Tensor::full(-1.0f32, (5, 1, 3), &cpu()).unwrap();
    let targets = Tensor::new(&[[1i64, 1, 1]], &cpu()).unwrap();
    let target_lengths = Tensor::new(&[3i64], &cpu()).unwrap();
    assert!(ctc_loss(
        &log_probs,
        &targets,
        &Tensor::new(&[5i64], &cpu()).unwrap(),
        &target_lengths
    )
    .is_ok());
    // `1 1 1` in 4 frames: PyTorch returns an infinite loss (or zero with zero_infinity).
    let log_probs = log_probs.narrow(0, 0, 4).unwrap();
    let error = ctc_loss(
        &log_probs,
        &targets,
        &Tensor::new(&[4i64], &cpu()).unwrap(),
        &target_lengths,
    )
    .unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        violation.argument(),
        "{(input_lengths - ctc_min_frames(targets, target_lengths)?)?}"
    );
    assert_eq!(violation.value(), Some(Value::Int(-1)));
    assert!(
        violation
            .note()
            .is_some_and(|note| note.starts_with("frames to spare")),
        "{error}"
    );
}

#[contract(mask: float[H, W] in 0.0..{num_classes as f64} integral)]
fn segmentation_target(mask: &Tensor, num_classes: usize) -> Result<Tensor> {
    mask.to_dtype(DType::U32)
}

#[test]
fn a_label_map_divided_by_255_is_not_whole_numbers() {
    let labels = Tensor::new(&[[0f32, 1.0], [2.0, 1.0]], &cpu()).unwrap();
    assert_eq!(
        segmentation_target(&labels, 3)
            .unwrap()
            .to_vec2::<u32>()
            .unwrap(),
        [[0, 1], [2, 1]]
    );
    // Divided by 255 as if it were an image: every label becomes class 0 when cast.
    let divided = (labels / 255.0).unwrap();
    let error = segmentation_target(&divided, 3).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.rule(), Rule::Integral);
    assert_eq!(violation.index(), Some(&[0, 1][..]));
    assert_eq!(violation.counts().unwrap().violating, 3);
    let message = error.to_string();
    assert!(
        message.contains("value not a whole number: mask[0, 1] = 0.003921569"),
        "{message}"
    );
    assert!(
        message.contains("expected whole numbers in 0.0..{num_classes as f64}"),
        "{message}"
    );
    assert!(message.contains("divided by 255"), "{message}");
    // NaN and infinities are not whole numbers either.
    let odd = Tensor::new(&[[f32::NAN, 1.0], [f32::INFINITY, 1.0]], &cpu()).unwrap();
    let error = segmentation_target(&odd, 3).unwrap_err();
    assert_eq!(only_violation(&error).counts().unwrap().violating, 2);
}

#[contract(
    weights: float[N, C] in 0.0.. finite,
    {weights.ne(0.0)?.to_dtype(DType::U32)?.sum(D::Minus1)?}: u32[N] in 1..
        "each row needs a non-zero weight to sample from",
)]
fn draw_one(weights: &Tensor) -> Result<Tensor> {
    weights.argmax(D::Minus1)
}

#[test]
fn a_weight_row_of_zeros_has_nothing_to_sample() {
    let weights = Tensor::new(&[[0.0f32, 2.0, 1.0], [3.0, 0.0, 0.0]], &cpu()).unwrap();
    assert_eq!(
        draw_one(&weights).unwrap().to_vec1::<u32>().unwrap(),
        [1, 0]
    );
    let weights = Tensor::new(&[[0.0f32, 2.0, 1.0], [0.0, 0.0, 0.0]], &cpu()).unwrap();
    let error = draw_one(&weights).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.index(), Some(&[1][..]));
    assert_eq!(violation.value(), Some(Value::Int(0)));
}

/// A derived subject's own error is the function's error, not a contract violation.
#[contract(x: f32[N, C], {x.narrow(1, 0, 5)?}: f32[N, 5] in 0.0..)]
fn first_five(x: &Tensor) -> Result<Tensor> {
    x.narrow(1, 0, 5)
}

#[test]
fn an_error_from_the_derived_expression_is_returned_as_the_functions_error() {
    let x = Tensor::zeros((2, 3), DType::F32, &cpu()).unwrap();
    let error = first_five(&x).unwrap_err();
    assert!(
        candle_contracts::ContractError::find_in(&error).is_none(),
        "{error}"
    );
    assert!(error.to_string().contains("narrow"), "{error}");
}

#[test]
fn check_takes_a_mask_variable() {
    let ids = Tensor::new(&[[3i64, -1]], &cpu()).unwrap();
    let keep = Tensor::new(&[[1u8, 0]], &cpu()).unwrap();
    let run = |keep: &Tensor| -> candle_core::Result<()> {
        check!(ids: i64[B, T] in 0..10 where keep)?;
        Ok(())
    };
    assert!(run(&keep).is_ok());
    let everywhere = Tensor::ones((1, 2), DType::U8, &cpu()).unwrap();
    let error = run(&everywhere).unwrap_err();
    assert_eq!(
        contract_error(&error).violations()[0].index(),
        Some(&[0, 1][..])
    );
}

#[contract(x: f32[N, C], {x.chunk(2, 1)?}: [f32[N, _] in 0.0..; 2])]
fn halves(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

#[test]
fn a_derived_sequence_checks_each_tensor() {
    let x = Tensor::new(&[[0f32, 1.0, 2.0, 3.0]], &cpu()).unwrap();
    assert!(halves(&x).is_ok());
    let x = Tensor::new(&[[0f32, 1.0, -2.0, 3.0]], &cpu()).unwrap();
    let error = halves(&x).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.element(), Some(1));
    assert_eq!(violation.index(), Some(&[0, 0][..]));
    assert!(
        error
            .to_string()
            .contains("`{x.chunk(2, 1)?}[1]`: value out of range"),
        "{error}"
    );
}

#[contract(
    input_ids: i64[B, T] in 0..V where attention_mask,
    embeddings: f32[V, D],
)]
fn embed_maybe_masked(
    input_ids: &Tensor,
    attention_mask: Option<&Tensor>,
    embeddings: &Tensor,
) -> Result<()> {
    let _ = (input_ids, attention_mask, embeddings);
    Ok(())
}

#[test]
fn an_absent_mask_exempts_nothing_and_says_nothing_of_itself() {
    let embeddings = Tensor::zeros((3, 2), DType::F32, &cpu()).unwrap();
    let ids = Tensor::new(&[[2i64, -1]], &cpu()).unwrap();
    let error = embed_maybe_masked(&ids, None, &embeddings).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.mask(), None);
    assert_eq!(violation.counts().unwrap().exempt, 0);
    let message = error.to_string();
    assert!(
        message.contains("1 of 2 elements violate the rule"),
        "{message}"
    );
    assert!(!message.contains("exempt"), "{message}");
    let mask = Tensor::new(&[[1u8, 0]], &cpu()).unwrap();
    assert!(embed_maybe_masked(&ids, Some(&mask), &embeddings).is_ok());
}

#[test]
fn a_mask_of_a_packed_dtype_is_a_mask_violation() {
    let embeddings = Tensor::zeros((3, 2), DType::F32, &cpu()).unwrap();
    let ids = Tensor::new(&[[2i64, -1]], &cpu()).unwrap();
    let packed = Tensor::from_raw_buffer(&[0u8, 0x7F], DType::F4, &[1, 2], &cpu()).unwrap();
    let error = embed_maybe_masked(&ids, Some(&packed), &embeddings).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("input_ids", Rule::Mask)
    );
    assert!(
        error
            .to_string()
            .contains("mask `attention_mask` is f4, whose values candle cannot read"),
        "{error}"
    );
}

#[contract(x: f32[N, C], k <= C, {x.narrow(1, x.dim(1)? - k, k)?}: f32[N, _] in 0.0..)]
fn last_k(x: &Tensor, k: usize) -> Result<()> {
    let _ = (x, k);
    Ok(())
}

#[test]
fn relations_are_checked_before_a_derived_subject_is_computed() {
    let x = Tensor::zeros((2, 3), DType::F32, &cpu()).unwrap();
    assert!(last_k(&x, 2).is_ok());
    // `x.dim(1)? - k` would underflow: the relation is reported first.
    let error = last_k(&x, 5).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("k <= C", Rule::Relation)
    );
}

#[contract(x: f32[N, C], {x.sum(0)?}: f32[M], y: f32[M + 1])]
fn column_sums_and_one_more(x: &Tensor, y: &Tensor) -> Result<()> {
    let _ = (x, y);
    Ok(())
}

#[test]
fn an_argument_dim_only_a_derived_subject_binds_is_checked() {
    let x = Tensor::zeros((2, 3), DType::F32, &cpu()).unwrap();
    assert!(column_sums_and_one_more(&x, &Tensor::zeros(4, DType::F32, &cpu()).unwrap()).is_ok());
    let error =
        column_sums_and_one_more(&x, &Tensor::zeros(9, DType::F32, &cpu()).unwrap()).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!((violation.argument(), violation.rule()), ("y", Rule::Shape));
    assert!(error.to_string().contains("M = 3"), "{error}");
}

#[contract(
    ids: u32[N] in 0..V,
    table: f32[V, D],
    {table.embedding(ids)?}: f32[N, D] finite,
)]
fn looked_up(ids: &Tensor, table: &Tensor) -> Result<()> {
    let _ = (ids, table);
    Ok(())
}

#[test]
fn an_argument_the_contract_rejects_by_value_is_never_derived_from_on_the_cpu() {
    let table = Tensor::zeros((3, 2), DType::F32, &cpu()).unwrap();
    assert!(looked_up(&Tensor::new(&[0u32, 2], &cpu()).unwrap(), &table).is_ok());
    // Without the early read, `embedding` would fail with candle's own index error.
    let error = looked_up(&Tensor::new(&[0u32, 7], &cpu()).unwrap(), &table).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule(), violation.value()),
        ("ids", Rule::Range, Some(Value::Int(7)))
    );
}

#[contract(labels: u32[N] in 0..C where keep, keep: u8[N], logits: f32[N, C])]
fn kept_labels(labels: &Tensor, keep: &Tensor, logits: &Tensor) -> Result<()> {
    let _ = (labels, keep, logits);
    Ok(())
}

#[test]
fn help_lines_count_only_checked_positions() {
    // Two checked labels, both equal to C; four exempt positions hold valid labels. Numbered
    // from 1 would need every usable label to be in 1..=C; the exempt ones are not usable.
    let logits = Tensor::zeros((6, 3), DType::F32, &cpu()).unwrap();
    let labels = Tensor::new(&[3u32, 3, 0, 0, 0, 0], &cpu()).unwrap();
    let keep = Tensor::new(&[1u8, 1, 0, 0, 0, 0], &cpu()).unwrap();
    let masked = kept_labels(&labels, &keep, &logits).unwrap_err();
    let checked = Tensor::new(&[3u32, 3], &cpu()).unwrap();
    let plain = kept_labels(
        &checked,
        &Tensor::ones(2, DType::U8, &cpu()).unwrap(),
        &logits.narrow(0, 0, 2).unwrap(),
    )
    .unwrap_err();
    assert_eq!(
        only_violation(&masked).help(),
        only_violation(&plain).help(),
        "{masked}"
    );
}

struct Masked {
    table: Tensor,
    keep: Tensor,
}

impl Masked {
    /// A field named as a derived subject or a mask is borrowed, not moved.
    #[contract(ids: i64[N] in 0..V where {self.keep}, {self.table}: f32[V, D] finite)]
    fn rows(&self, ids: &Tensor) -> Result<()> {
        let _ = ids;
        Ok(())
    }
}

#[test]
fn fields_and_owned_values_in_braces_are_borrowed() {
    let model = Masked {
        table: Tensor::zeros((3, 2), DType::F32, &cpu()).unwrap(),
        keep: Tensor::new(&[1u8, 0], &cpu()).unwrap(),
    };
    assert!(model
        .rows(&Tensor::new(&[2i64, -1], &cpu()).unwrap())
        .is_ok());
    let error = model
        .rows(&Tensor::new(&[-1i64, 2], &cpu()).unwrap())
        .unwrap_err();
    assert_eq!(only_violation(&error).index(), Some(&[0][..]));
}

#[contract(
    target: i64[B, T] in 0..C ignore -100 where attention_mask,
    attention_mask: u8[B, T],
    logits: f32[B, T, C],
)]
fn token_loss(target: &Tensor, attention_mask: &Tensor, logits: &Tensor) -> Result<()> {
    let _ = (target, attention_mask, logits);
    Ok(())
}

#[test]
fn the_all_ignored_rule_counts_only_checked_positions() {
    let logits = Tensor::zeros((1, 4, 3), DType::F32, &cpu()).unwrap();
    // The only usable target is exempt: every checked one is -100, a mean over nothing.
    let target = Tensor::new(&[[2i64, -100, -100, 1]], &cpu()).unwrap();
    let mask = Tensor::new(&[[0u8, 1, 1, 0]], &cpu()).unwrap();
    let error = token_loss(&target, &mask, &logits).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.rule(), Rule::AllIgnored);
    assert!(
        error.to_string().contains(
            "all 2 checked elements are ignored values (-100; 2 exempt where `attention_mask` is \
             0); a mean over them is 0/0"
        ),
        "{error}"
    );
    // One usable checked target is enough.
    let mask = Tensor::new(&[[1u8, 1, 1, 0]], &cpu()).unwrap();
    assert!(token_loss(&target, &mask, &logits).is_ok());
    // Everything exempt: no checked element at all.
    let none = Tensor::zeros((1, 4), DType::U8, &cpu()).unwrap();
    let error = token_loss(&target, &none, &logits).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("no checked elements: all 4 are exempt where `attention_mask` is 0"),
        "{error}"
    );
}

#[contract(ids: u32[N] in 0..M, x: f32[R, C], {x.sum(0)?}: f32[M])]
fn bounded_by_a_derived_dim(ids: &Tensor, x: &Tensor) -> Result<()> {
    let _ = (ids, x);
    Ok(())
}

#[test]
fn a_bound_on_a_dim_only_a_derived_subject_binds_is_read_after_it() {
    let x = Tensor::zeros((2, 3), DType::F32, &cpu()).unwrap();
    assert!(bounded_by_a_derived_dim(&Tensor::new(&[0u32, 2], &cpu()).unwrap(), &x).is_ok());
    let error =
        bounded_by_a_derived_dim(&Tensor::new(&[0u32, 7], &cpu()).unwrap(), &x).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule(), violation.value()),
        ("ids", Rule::Range, Some(Value::Int(7)))
    );
    assert!(error.to_string().contains("M = 3"), "{error}");
}

#[contract(d: i64[N] in -3..=3 where keep, keep: u8[N])]
fn offsets(d: &Tensor, keep: &Tensor) -> Result<()> {
    let _ = (d, keep);
    Ok(())
}

#[test]
fn a_negative_value_is_no_marker_when_negatives_are_allowed() {
    let keep = Tensor::ones(3, DType::U8, &cpu()).unwrap();
    let error = offsets(&Tensor::new(&[-10i64, 30, 0], &cpu()).unwrap(), &keep).unwrap_err();
    let help = only_violation(&error)
        .help()
        .unwrap_or_default()
        .to_string();
    assert!(!help.contains("marker"), "{help}");
}

#[contract(x: f32[N] integral, y: f32[N] finite integral)]
fn whole(x: &Tensor, y: &Tensor) -> Result<()> {
    let _ = (x, y);
    Ok(())
}

#[test]
fn nan_and_infinities_break_integral_with_their_own_rule_and_help() {
    let ok = Tensor::new(&[1f32, 2.0], &cpu()).unwrap();
    let nan = Tensor::new(&[1f32, f32::NAN], &cpu()).unwrap();
    let error = whole(&nan, &ok).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.rule(), Rule::Integral);
    let help = violation.help().unwrap();
    assert!(help.contains("NaN is not a whole number"), "{help}");
    assert!(!help.contains("divided by 255"), "{help}");
    let inf = Tensor::new(&[f32::INFINITY, 2.0], &cpu()).unwrap();
    let error = whole(&ok, &inf).unwrap_err();
    assert_eq!(only_violation(&error).rule(), Rule::Finite);
    // Without `finite`, an infinity is no whole number either.
    let error = whole(&inf, &ok).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.rule(), Rule::Integral);
    assert!(
        !violation
            .help()
            .unwrap_or_default()
            .contains("divided by 255"),
        "{error}"
    );
}

#[contract(x: float[N] in 0.0..3.0 integral)]
fn small_whole(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

#[test]
fn a_fraction_out_of_range_breaks_the_range_not_integral() {
    let error = small_whole(&Tensor::new(&[7.5f32, 1.0], &cpu()).unwrap()).unwrap_err();
    assert_eq!(only_violation(&error).rule(), Rule::Range, "{error}");
    let error = small_whole(&Tensor::new(&[1.5f32, 1.0], &cpu()).unwrap()).unwrap_err();
    assert_eq!(only_violation(&error).rule(), Rule::Integral, "{error}");
}

#[test]
fn a_full_list_of_offending_values_says_it_may_not_be_all() {
    let labels = Tensor::new(&[11u32, 12, 13, 14, 15, 16], &cpu()).unwrap();
    let error = check!(labels: u32[N] in 0..10).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("the first 5 distinct offending values 11, 12, 13, 14, 15"),
        "{message}"
    );
    let labels = Tensor::new(&[11u32, 12, 13], &cpu()).unwrap();
    let error = check!(labels: u32[N] in 0..10).unwrap_err();
    assert!(
        error.to_string().contains("; offending values 11, 12, 13"),
        "{error}"
    );
}

#[test]
fn an_empty_masked_tensor_has_no_elements_at_all() {
    let logits = Tensor::zeros((1, 0, 3), DType::F32, &cpu()).unwrap();
    let target = Tensor::zeros((1, 0), DType::I64, &cpu()).unwrap();
    let mask = Tensor::zeros((1, 0), DType::U8, &cpu()).unwrap();
    let error = token_loss(&target, &mask, &logits).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("no elements at all; a mean over them is 0/0"),
        "{error}"
    );
}
