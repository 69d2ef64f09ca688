//! Guarded versions of candle-nn's functions that index with user data: change
//! `use candle_nn::loss::cross_entropy` to `use candle_contracts::nn::cross_entropy` and a bad
//! class id, token id or probability becomes a clear error on the host instead of a CUDA
//! device-side assert, a silently wrong loss or a NaN.
//!
//! Each function carries a contract (shown in its docs) and fixes what candle gets wrong at
//! the edges:
//!
//! | function | mirrors | fixed here |
//! |---|---|---|
//! | [`cross_entropy`], [`nll`] | `candle_nn::loss::{cross_entropy, nll}` | class ids checked; NaN and infinite logits, and log-probabilities above 0, are errors, not a NaN loss; u8 id 255 is a class, not candle's skip sentinel; an empty batch is an error, not NaN |
//! | [`cross_entropy_with`], [`nll_with`] | PyTorch's `ignore_index` and `reduction` | ignored rows are left out of the mean's denominator (candle has no ignore index) and out of the finite check |
//! | [`binary_cross_entropy`] | `torch.nn.functional.binary_cross_entropy` | candle has none; logs clamped at -100 like PyTorch |
//! | [`binary_cross_entropy_with_logit`] | `candle_nn::loss::binary_cross_entropy_with_logit` | stable for large logits (candle's gives NaN once \|logit\| ≳ 17 in f32); the target's dtype, as PyTorch |
//! | [`embedding`], [`Embedding`] | `torch.nn.functional.embedding`, `candle_nn::Embedding` | ids checked against the table's rows |
//! | [`index_select`], [`gather`], [`scatter_add`], [`index_add`] | candle's `Tensor` methods | indices checked against the indexed dim; empty indices launch nothing; `gather` and `scatter_add` take ids smaller than the other tensors, as PyTorch (candle's gather reads wrong elements there) |
//! | [`one_hot`] | `candle_nn::encoding::one_hot` | indices checked with candle's `-1` convention, before any copy |
//!
//! Each op is checked against PyTorch by a differential test (`scripts/differential/`, replayed
//! by the e2e test `nn_differential`).
//!
//! Every function is `#[track_caller]`: a violation names the op (`nn::embedding`) and the line
//! that called it, so with two embedding tables in one model the message says which call
//! failed.
//!
//! Each op states its contract with [`check!`](crate::check) at the top of its body (listed
//! under "Contract" in its docs), so the op can add its caller's line to the error.

use std::panic::Location;

use candle_core::{D, DType, Module, Result, Tensor, WithDType};

use crate::check;
use crate::error::{ContractError, Counts, OFFENDING_SHOWN, Rule, Value, Violation};

/// The checks of one call of a guarded op: a violation becomes an error that names the op and
/// the caller's line (the op is `#[track_caller]`, and so is this).
#[track_caller]
fn guard(op: &'static str, checked: std::result::Result<(), ContractError>) -> Result<()> {
    let at = Location::caller();
    checked.map_err(|error| error.called_from(op, at, None).into())
}

/// [`guard`] for a check of the value an op returns, named `output` in the `check!`.
#[track_caller]
fn guard_output(op: &'static str, checked: std::result::Result<(), ContractError>) -> Result<()> {
    let at = Location::caller();
    checked.map_err(|error| error.called_from(op, at, Some("output")).into())
}

/// How a per-element loss is reduced, as PyTorch's `reduction` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reduction {
    /// The mean over the elements that are not ignored (PyTorch's `'mean'`, the default).
    #[default]
    Mean,
    /// The sum over all elements; ignored ones count 0 (`'sum'`).
    Sum,
    /// One loss per element, 0 for ignored ones (`'none'`).
    None,
}

/// Options of [`cross_entropy_with`] and [`nll_with`]: PyTorch's `ignore_index` and
/// `reduction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LossOptions {
    /// A target value whose rows are skipped: they add nothing to the loss and are left out of
    /// the mean's denominator. PyTorch's default is -100; `None` ignores nothing. Any value
    /// may be used: `Some(u32::MAX as i64)` for u32 targets, for instance. A value the target's
    /// dtype cannot hold ignores nothing.
    pub ignore_index: Option<i64>,
    /// How the per-row losses are combined.
    pub reduction: Reduction,
}

impl Default for LossOptions {
    /// `ignore_index: Some(-100)`, `reduction: Mean`, as in PyTorch.
    fn default() -> Self {
        Self {
            ignore_index: Some(-100),
            reduction: Reduction::Mean,
        }
    }
}

/// Class ids as gather indices: u8 widened to u32, because candle reads u8 255 (the dtype's
/// maximum) as "skip this index" and would give 0 for a real class 255. Contiguous, because candle's gather, index-select, scatter and index-add kernels read their
/// ids in place and refuse a strided view (PyTorch accepts one).
fn gather_indices(target: &Tensor) -> Result<Tensor> {
    if target.dtype() == DType::U8 {
        target.to_dtype(DType::U32)?.contiguous()
    } else {
        target.contiguous()
    }
}

/// Losses of the half-precision dtypes are computed in f32, as PyTorch accumulates them: a
/// running sum in f16 stops growing at 2048 and one in bf16 at 256, so candle's own losses
/// drift far from the true value on realistic batches. Other dtypes are used as they are.
fn widened(tensor: &Tensor) -> Result<Tensor> {
    match tensor.dtype() {
        DType::F16 | DType::BF16 | DType::F8E4M3 => tensor.to_dtype(DType::F32),
        _ => Ok(tensor.clone()),
    }
}

/// The cross-entropy loss of `logits` against class ids, averaged over the batch.
///
/// - `logits`: `[N, C]`, a float dtype, raw (unnormalised) scores, finite (no NaN, no ±inf:
///   mask a class with a large negative number such as -1e9, not with -inf).
/// - `target`: `[N]`, u8, u32 or i64 class ids in `0..C`.
/// - returns a scalar of the logits' dtype: `-mean(log_softmax(logits)[i, target[i]])`.
///
/// Mirrors `candle_nn::loss::cross_entropy` (and PyTorch's `F.cross_entropy` with defaults).
/// Differences: a class id outside `0..C` (including candle's MAX "skip" sentinel and a
/// negative i64) is a [`ContractError`](crate::ContractError) naming the id and its index; a
/// u8 id 255 is class 255 (candle would silently score it 0); an empty batch is an error (its
/// mean is 0/0); a NaN or infinite logit is an error naming its index (candle returns a NaN
/// or infinite loss); f16, bf16 and f8e4m3 logits are reduced in f32 and the loss returned in their
/// dtype (candle sums in the half dtype, and a bf16 sum of ones stops at 256); a strided
/// `target` view is accepted (candle's gather refuses it). For an ignore index use
/// [`cross_entropy_with`].
///
/// # Errors
///
/// A contract violation (wrapped in `candle_core::Error`, recover it with
/// [`ContractError::find_in`](crate::ContractError::find_in)) for a wrong dtype, rank or batch
/// size, a NaN or infinite logit, an id outside `0..C`, or `N = 0`; candle's errors otherwise.
///
/// # Contract
///
/// ```text
/// logits: float[N, C] finite,
/// target: u8 | u32 | i64 [N] in 0..C,
/// N >= 1
/// ```
#[track_caller]
pub fn cross_entropy(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    guard(
        "nn::cross_entropy",
        check!(logits: float[N, C] finite, target: u8 | u32 | i64 [N] in 0..C, N >= 1),
    )?;
    let log_probs = candle_nn::ops::log_softmax(&widened(logits)?, D::Minus1)?;
    mean_nll(&log_probs, target)?.to_dtype(logits.dtype())
}

/// The negative log-likelihood of log-probabilities against class ids, averaged over the batch.
///
/// - `log_probs`: `[N, C]`, a float dtype, log-probabilities (e.g. from `log_softmax`): at most
///   0, never NaN (`-inf`, the log of a probability of 0, is allowed).
/// - `target`: `[N]`, u8, u32 or i64 class ids in `0..C`.
/// - returns a scalar: `-mean(log_probs[i, target[i]])`.
///
/// Mirrors `candle_nn::loss::nll` (PyTorch's `F.nll_loss` with defaults), with the differences
/// listed on [`cross_entropy`]; a log-probability above 0 (logits or probabilities given in
/// their place) or NaN is an error naming its index.
///
/// # Errors
///
/// As [`cross_entropy`], with log-probabilities above 0 or NaN in place of non-finite logits.
///
/// # Contract
///
/// ```text
/// log_probs: float[N, C] in ..=0.0,
/// target: u8 | u32 | i64 [N] in 0..C,
/// N >= 1
/// ```
#[track_caller]
pub fn nll(log_probs: &Tensor, target: &Tensor) -> Result<Tensor> {
    guard(
        "nn::nll",
        check!(log_probs: float[N, C] in ..=0.0, target: u8 | u32 | i64 [N] in 0..C, N >= 1),
    )?;
    mean_nll(&widened(log_probs)?, target)?.to_dtype(log_probs.dtype())
}

fn mean_nll(log_probs: &Tensor, target: &Tensor) -> Result<Tensor> {
    let n = target.dim(0)?;
    log_probs
        .contiguous()?
        .gather(&gather_indices(target)?.unsqueeze(1)?, 1)?
        .sum_all()?
        .affine(-1.0 / n as f64, 0.)
}

/// [`cross_entropy`] with PyTorch's `ignore_index` and `reduction`.
///
/// - `logits`: `[N, C]`, a float dtype, finite on every row whose target is not ignored.
/// - `target`: `[N]`, u8, u32 or i64 class ids in `0..C`, or `options.ignore_index`.
/// - returns a scalar for `Mean` and `Sum`, `[N]` for `None` (0 on ignored rows).
///
/// Mirrors `torch.nn.functional.cross_entropy(input, target, ignore_index=-100,
/// reduction='mean')`. Ignored rows are excluded from the mean's denominator (a hand-written
/// masked mean in candle usually counts them) and lose 0 whatever their logits hold: a NaN or
/// infinite logit there (padding positions of a fully masked attention give NaN) is not an
/// error, as PyTorch ignores those rows too. An empty batch gives 0 for `Sum` and an empty
/// `[0]` tensor for `None`. Half-precision dtypes are reduced in f32, as in [`cross_entropy`].
///
/// # Errors
///
/// As [`cross_entropy`], and for `Reduction::Mean` a batch whose every target is ignored (or
/// an empty batch): its mean is 0/0, where PyTorch returns NaN. `Sum` and `None` accept such
/// batches.
///
/// # Contract
///
/// ```text
/// logits: float[N, C] finite,          -- on the rows whose target is not ignored
/// target: u8 | u32 | i64 [N] in 0..C
///     ignore {options.ignore_index}
///     allow_all {options.reduction != Reduction::Mean}
/// ```
#[track_caller]
pub fn cross_entropy_with(
    logits: &Tensor,
    target: &Tensor,
    options: LossOptions,
) -> Result<Tensor> {
    let checked = check!(
        logits: float[N, C] finite,
        target: u8 | u32 | i64 [N] in 0..C
            ignore {options.ignore_index}
            allow_all {options.reduction != Reduction::Mean}
            "class ids, or `options.ignore_index` for rows to skip; `Reduction::Sum` and \
             `Reduction::None` accept a batch whose every row is skipped",
    );
    let checked = exempt_ignored_rows(
        checked,
        "logits",
        logits,
        target,
        options.ignore_index,
        |rows| {
            let logits = rows;
            check!(logits: float[_, _] finite)
        },
    )?;
    guard("nn::cross_entropy_with", checked)?;
    let logits_wide = widened(logits)?;
    // candle's softmax cannot reduce an empty batch; `reduced_nll` answers for one.
    let log_probs = if logits.dim(0)? == 0 {
        logits_wide
    } else {
        candle_nn::ops::log_softmax(&logits_wide, D::Minus1)?
    };
    reduced_nll(&log_probs, target, options)?.to_dtype(logits.dtype())
}

/// [`nll`] with PyTorch's `ignore_index` and `reduction`; see [`cross_entropy_with`].
///
/// - `log_probs`: `[N, C]`, a float dtype, at most 0 and never NaN on every row whose target
///   is not ignored.
/// - `target` and the result as in [`cross_entropy_with`].
///
/// Mirrors `torch.nn.functional.nll_loss(input, target, ignore_index=-100, reduction='mean')`.
///
/// # Errors
///
/// As [`cross_entropy_with`], with log-probabilities above 0 or NaN in place of non-finite
/// logits.
///
/// # Contract
///
/// ```text
/// log_probs: float[N, C] in ..=0.0,    -- on the rows whose target is not ignored
/// target: u8 | u32 | i64 [N] in 0..C
///     ignore {options.ignore_index}
///     allow_all {options.reduction != Reduction::Mean}
/// ```
#[track_caller]
pub fn nll_with(log_probs: &Tensor, target: &Tensor, options: LossOptions) -> Result<Tensor> {
    let checked = check!(
        log_probs: float[N, C] in ..=0.0,
        target: u8 | u32 | i64 [N] in 0..C
            ignore {options.ignore_index}
            allow_all {options.reduction != Reduction::Mean}
            "class ids, or `options.ignore_index` for rows to skip; `Reduction::Sum` and \
             `Reduction::None` accept a batch whose every row is skipped",
    );
    let checked = exempt_ignored_rows(
        checked,
        "log_probs",
        log_probs,
        target,
        options.ignore_index,
        |rows| {
            let log_probs = rows;
            check!(log_probs: float[_, _] in ..=0.0)
        },
    )?;
    guard("nn::nll_with", checked)?;
    reduced_nll(&widened(log_probs)?, target, options)?.to_dtype(log_probs.dtype())
}

/// Leaves the rows whose target is `ignore_index` out of the value rule on `values` (`[N, C]`,
/// named `subject`): a loss skips those rows, so a NaN there is no error, as in PyTorch.
///
/// The guard checks every row in one fast pass. Only when it found a violation in `values` are
/// the kept rows checked again with `recheck`, one contiguous run of rows at a time (views, no
/// copy), and the violation is replaced by what they hold: removed when they are clean, else
/// with the index in the whole tensor and the counts of the kept rows.
fn exempt_ignored_rows(
    checked: std::result::Result<(), ContractError>,
    subject: &str,
    values: &Tensor,
    target: &Tensor,
    ignore_index: Option<i64>,
    recheck: impl Fn(&Tensor) -> std::result::Result<(), ContractError>,
) -> Result<std::result::Result<(), ContractError>> {
    let Err(mut error) = checked else {
        return Ok(Ok(()));
    };
    let position = error
        .violations()
        .iter()
        .position(|v| v.argument() == subject && matches!(v.rule(), Rule::Range | Rule::Finite));
    let (Some(position), Some(ignore)) = (
        position,
        ignore_index.filter(|&ignore| holds(target.dtype(), ignore)),
    ) else {
        return Ok(Err(error));
    };
    // Rows only line up when the shapes are right (else those violations stand alone).
    let rows = values.dims().first().copied();
    if values.rank() != 2 || target.dims() != [rows.unwrap_or(0)] {
        return Ok(Err(error));
    }
    let ids = target.to_dtype(DType::I64)?.to_vec1::<i64>()?;
    let ignored = ids.iter().filter(|&&id| id == ignore).count();
    if ignored == 0 {
        return Ok(Err(error));
    }
    let mut runs = Vec::new();
    let mut start = None;
    for (row, &id) in ids.iter().enumerate().chain([(ids.len(), &ignore)]) {
        match (start, id == ignore) {
            (None, false) => start = Some(row),
            (Some(first), true) => {
                runs.push((first, row - first));
                start = None;
            }
            _ => {}
        }
    }
    let mut merged: Option<Violation> = None;
    let mut counts = Counts::default();
    for &(first_row, len) in &runs {
        let Err(found) = recheck(&values.narrow(0, first_row, len)?) else {
            continue;
        };
        let Some(mut found) = found.violations().first().cloned() else {
            continue;
        };
        let found_counts = found.counts.unwrap_or_default();
        counts.violating += found_counts.violating;
        counts.nan += found_counts.nan;
        match &mut merged {
            None => {
                if let Some(index) = found.index.as_mut().and_then(|index| index.first_mut()) {
                    *index += first_row;
                }
                merged = Some(found);
            }
            Some(merged) => {
                merged.offending_complete &= found.offending_complete;
                for value in found.offending {
                    let seen = merged.offending.iter().any(|&o| same_value(o, value));
                    if !seen && merged.offending.len() < OFFENDING_SHOWN {
                        merged.offending.push(value);
                    }
                }
            }
        }
    }
    let violations = error.violations_mut();
    match merged {
        None => {
            if position < violations.len() {
                violations.remove(position);
            }
        }
        Some(mut violation) => {
            let columns = values.dim(1)? as u64;
            counts.total = (ids.len() - ignored) as u64 * columns;
            violation.counts = Some(counts);
            // One run's observed range is the kept rows'; over several it would omit the
            // runs that passed.
            if runs.len() > 1 {
                violation.observed = None;
            }
            violation.details.push(format!(
                "{ignored} of {} rows are not checked: their target is the ignore index {ignore}",
                ids.len()
            ));
            if let Some(slot) = violations.get_mut(position) {
                *slot = violation;
            }
        }
    }
    Ok(if error.violations().is_empty() {
        Ok(())
    } else {
        Err(error)
    })
}

/// Whether two offending values are the same (NaN equals NaN here).
fn same_value(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::Float(a, _), Value::Float(b, _)) => a == b || (a.is_nan() && b.is_nan()),
        _ => a == b,
    }
}

/// Whether `value` is a value of `dtype` (an ignore index a target can hold).
fn holds(dtype: DType, value: i64) -> bool {
    match dtype {
        DType::U8 => u8::try_from(value).is_ok(),
        DType::U32 => u32::try_from(value).is_ok(),
        DType::I16 => i16::try_from(value).is_ok(),
        DType::I32 => i32::try_from(value).is_ok(),
        _ => true,
    }
}

fn reduced_nll(log_probs: &Tensor, target: &Tensor, options: LossOptions) -> Result<Tensor> {
    if target.elem_count() == 0 {
        let (dtype, device) = (log_probs.dtype(), log_probs.device());
        return match options.reduction {
            Reduction::None => Tensor::zeros(0, dtype, device),
            Reduction::Sum => Tensor::zeros((), dtype, device),
            Reduction::Mean => candle_core::bail!(
                "the mean loss over an empty batch is 0/0: skip the batch, or use \
                 `Reduction::Sum` or `Reduction::None`"
            ),
        };
    }
    let indices = gather_indices(target)?;
    // 1 for kept rows; ignored rows gather class 0 (a safe index) and their loss is set to 0.
    let kept = match options.ignore_index {
        Some(ignore) if holds(target.dtype(), ignore) => {
            let ignored = Tensor::new(ignore, target.device())?.to_dtype(target.dtype())?;
            Some(target.broadcast_ne(&ignored)?)
        }
        _ => None,
    };
    let indices = match &kept {
        Some(kept) => kept.where_cond(&indices, &indices.zeros_like()?)?,
        None => indices,
    };
    let picked = log_probs
        .contiguous()?
        .gather(&indices.unsqueeze(1)?, 1)?
        .squeeze(1)?
        .neg()?;
    // Selected, not multiplied by the mask: an ignored row's -inf or NaN times 0 is NaN.
    let losses = match &kept {
        Some(kept) => kept.where_cond(&picked, &picked.zeros_like()?)?,
        None => picked,
    };
    match options.reduction {
        Reduction::None => Ok(losses),
        Reduction::Sum => losses.sum_all(),
        Reduction::Mean => match &kept {
            // Divided on the device: no sync; the contract already refused a 0 denominator.
            Some(kept) => losses
                .sum_all()?
                .div(&kept.to_dtype(losses.dtype())?.sum_all()?),
            None => losses.mean_all(),
        },
    }
}

/// The binary cross-entropy of probabilities against targets, averaged over every element.
///
/// - `probabilities`: any shape, a float dtype, values in `0..=1` (after a sigmoid).
/// - `target`: the same shape and a float dtype, values in `0..=1`.
/// - returns a scalar: `-mean(t * log(p) + (1 - t) * log(1 - p))`, with each log clamped at
///   -100 as PyTorch does, so `p = 0` or `p = 1` gives a large finite loss instead of inf.
///
/// Mirrors `torch.nn.functional.binary_cross_entropy`; candle-nn has no such function. Raw
/// logits (a head without a sigmoid) are out of `0..=1` and rejected: use
/// [`binary_cross_entropy_with_logit`] for them.
///
/// # Errors
///
/// A contract violation for a value outside `0..=1` (NaN included) in either argument, an
/// integer target, or shapes that differ; an error for empty tensors (the mean is 0/0) and for
/// a target of another float dtype than the probabilities (PyTorch's error too).
///
/// # Contract
///
/// ```text
/// probabilities: float[*S] in 0.0..=1.0,
/// target: float[*S] in 0.0..=1.0
/// ```
#[track_caller]
pub fn binary_cross_entropy(probabilities: &Tensor, target: &Tensor) -> Result<Tensor> {
    guard(
        "nn::binary_cross_entropy",
        check!(probabilities: float[*S] in 0.0..=1.0, target: float[*S] in 0.0..=1.0),
    )?;
    if probabilities.dtype() != target.dtype() {
        candle_core::bail!(
            "binary_cross_entropy: `probabilities` is {} and `target` {}: they take one dtype, \
             as in PyTorch (convert the target with `to_dtype`)",
            probabilities.dtype().as_str(),
            target.dtype().as_str()
        );
    }
    if probabilities.elem_count() == 0 {
        candle_core::bail!("binary_cross_entropy: the mean over an empty tensor is 0/0");
    }
    let p = widened(probabilities)?;
    let target = target.to_dtype(p.dtype())?;
    let log_p = p.log()?.maximum(-100.0)?;
    let log_not_p = p.affine(-1., 1.)?.log()?.maximum(-100.0)?;
    let loss = (target.mul(&log_p)? + target.affine(-1., 1.)?.mul(&log_not_p)?)?;
    loss.neg()?.mean_all()?.to_dtype(probabilities.dtype())
}

/// `log(1 + y)` accurate for small `y` (Kahan's trick: the rounding of `1 + y` cancels).
fn log1p(y: &Tensor) -> Result<Tensor> {
    let u = y.affine(1., 1.)?;
    let d = u.affine(1., -1.)?;
    let exact = d.eq(0.0)?;
    let corrected = u.log()?.mul(y)?.div(&exact.where_cond(&u, &d)?)?;
    exact.where_cond(y, &corrected)
}

/// The binary cross-entropy of logits against targets, averaged over every element, computed
/// stably.
///
/// - `logits`: any shape, a float dtype, finite raw scores.
/// - `target`: the same shape and a float dtype, values in `0..=1`.
/// - returns a scalar of the target's dtype: `mean(max(x, 0) - x * t + log(1 + exp(-|x|)))`,
///   the form PyTorch uses, finite for any finite logit.
///
/// The result's dtype is the target's, as in PyTorch (f32 logits with an f64 target give an
/// f64 loss, f64 logits with an f32 target an f32 one); the loss is computed in the wider of
/// the two dtypes, f32 at least, so a mixed f32/f64 call is PyTorch's f64 result with the
/// logits widened first. (PyTorch's own mixed call takes the log-sigmoid in the logits' dtype
/// and can differ in the 8th digit; candle's version returns the logits' dtype.)
///
/// Mirrors `candle_nn::loss::binary_cross_entropy_with_logit` and PyTorch's
/// `F.binary_cross_entropy_with_logits`. candle's version applies a sigmoid and takes logs, so
/// once `|x|` is about 17 or more in f32 the sigmoid rounds to 0 or 1 and the loss is NaN or
/// inf for valid targets; this one is exact there (e.g. logits `[16.7, -89.0]` with targets
/// `[1, 0]` give about 2.79e-8).
///
/// # Errors
///
/// A contract violation for a NaN or infinite logit, an integer target (a common slip: class
/// ids in place of probabilities), a target outside `0..=1`, or shapes that differ; an error
/// for empty tensors.
///
/// # Contract
///
/// ```text
/// logits: float[*S] finite,
/// target: float[*S] in 0.0..=1.0
/// ```
#[track_caller]
pub fn binary_cross_entropy_with_logit(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    guard(
        "nn::binary_cross_entropy_with_logit",
        check!(logits: float[*S] finite, target: float[*S] in 0.0..=1.0),
    )?;
    if logits.elem_count() == 0 {
        candle_core::bail!("binary_cross_entropy_with_logit: the mean over an empty tensor is 0/0");
    }
    // Computed in the wider of the two dtypes (f32 at least), returned in the target's.
    let wide = if logits.dtype() == DType::F64 || target.dtype() == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let x = logits.to_dtype(wide)?;
    let t = target.to_dtype(wide)?;
    let softplus_of_minus_abs = log1p(&x.abs()?.neg()?.exp()?)?;
    let loss = (x.relu()? - x.mul(&t)?)?.add(&softplus_of_minus_abs)?;
    loss.mean_all()?.to_dtype(target.dtype())
}

/// The rows of `table` picked by token ids: `table[ids]`.
///
/// - `ids`: any shape, u8, u32 or i64 token ids in `0..V`.
/// - `table`: `[V, D]`, any float dtype: one row of `D` per token of the vocabulary.
/// - returns `ids`' shape followed by `D`.
///
/// Mirrors PyTorch's `torch.nn.functional.embedding(input, weight)` and the forward of
/// `candle_nn::Embedding`. `V` is always the table's own row count, never a config number, so
/// a token added to a tokenizer without resizing the table is reported with its index.
/// (candle-nn's `embedding(in_size, out_size, vb)` builds a layer; see [`Embedding`].)
/// Empty `ids` give an empty result without launching a kernel.
///
/// # Errors
///
/// A contract violation for an id outside `0..V` (a negative i64 id included) or a wrong
/// dtype or rank; candle's errors otherwise.
///
/// # Contract
///
/// ```text
/// ids: u8 | u32 | i64 [..] in 0..V,
/// table: float[V, D],
/// return: float[.., D]
/// ```
#[track_caller]
pub fn embedding(ids: &Tensor, table: &Tensor) -> Result<Tensor> {
    embed("nn::embedding", ids, table)
}

/// [`embedding`], its violations named after `op`.
#[track_caller]
fn embed(op: &'static str, ids: &Tensor, table: &Tensor) -> Result<Tensor> {
    guard(
        op,
        check!(ids: u8 | u32 | i64 [..] in 0..V, table: float[V, D]),
    )?;
    let mut dims = ids.dims().to_vec();
    dims.push(table.dim(1)?);
    let output = if ids.elem_count() == 0 {
        table.narrow(0, 0, 0)?.reshape(dims)?
    } else {
        table
            .contiguous()?
            .index_select(&gather_indices(&ids.flatten_all()?)?, 0)?
            .reshape(dims)?
    };
    guard_output(op, check!(table: float[_, D], output: float[.., D]))?;
    Ok(output)
}

/// A token embedding layer whose forward checks the ids against its table.
///
/// Holds a `candle_nn::Embedding`; build it with [`Embedding::new`], from candle-nn's with
/// `From`, or from a `VarBuilder` with [`Embedding::load`]. Its `Module::forward` is
/// [`embedding`] with the layer's table.
#[derive(Debug, Clone)]
pub struct Embedding {
    inner: candle_nn::Embedding,
}

impl Embedding {
    /// A layer over `embeddings` (`[V, hidden_size]`), as `candle_nn::Embedding::new`.
    pub fn new(embeddings: Tensor, hidden_size: usize) -> Self {
        Self {
            inner: candle_nn::Embedding::new(embeddings, hidden_size),
        }
    }

    /// A `[in_size, out_size]` table named `weight` from a `VarBuilder`, initialised from a
    /// standard normal when created, as `candle_nn::embedding(in_size, out_size, vb)`.
    ///
    /// # Errors
    ///
    /// The `VarBuilder`'s errors (a missing or mis-shaped `weight`).
    pub fn load(in_size: usize, out_size: usize, vb: candle_nn::VarBuilder<'_>) -> Result<Self> {
        Ok(Self {
            inner: candle_nn::embedding(in_size, out_size, vb)?,
        })
    }

    /// The table, `[V, D]`.
    pub fn embeddings(&self) -> &Tensor {
        self.inner.embeddings()
    }

    /// `D`, the width of a row.
    pub fn hidden_size(&self) -> usize {
        self.inner.hidden_size()
    }
}

impl From<candle_nn::Embedding> for Embedding {
    fn from(inner: candle_nn::Embedding) -> Self {
        Self { inner }
    }
}

impl Module for Embedding {
    /// The rows of the table for `ids` (any shape, u8, u32 or i64, in `0..V`); see
    /// [`embedding`]. A violation names `nn::Embedding::forward` and the line that called it
    /// (called through candle's `Tensor::apply`, that line is inside candle).
    #[track_caller]
    fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        embed("nn::Embedding::forward", ids, self.embeddings())
    }
}

/// The checks of an index op whose ids index dim `dim` of `indexed` (the argument `name`).
///
/// `check` sees `indexed` with `dim` moved first (a view, no copy), so its clause
/// `name: _[S, ..]` binds `S` to the size of that dim; the message then names the real dim
/// (`S = 5 (bound by `source` dim 2)`). A `dim` past the rank is candle's own error. In the
/// `off` mode nothing is done.
#[track_caller]
fn guard_along(
    op: &'static str,
    name: &'static str,
    indexed: &Tensor,
    dim: usize,
    check: impl FnOnce(&Tensor) -> std::result::Result<(), ContractError>,
) -> Result<()> {
    if crate::mode() == crate::Mode::Off {
        return Ok(());
    }
    let at = Location::caller();
    indexed.dim(dim)?;
    check(&indexed.transpose(0, dim)?).map_err(|mut error| {
        for violation in error.violations_mut() {
            for binding in &mut violation.bound_dims {
                if binding.bound_by == name && binding.axis == 0 {
                    binding.axis = dim;
                }
            }
        }
        error.called_from(op, at, None).into()
    })
}

/// The slices of `source` along `dim` at `ids`: candle's `Tensor::index_select`.
///
/// - `source`: any shape and dtype.
/// - `ids`: `[I]`, u8, u32 or i64, in `0..source.dim(dim)`.
/// - returns `source`'s shape with `dim` replaced by `I`.
///
/// Mirrors `Tensor::index_select(&source, &ids, dim)` (PyTorch's `torch.index_select`). An
/// out-of-range id is reported with its index instead of candle's CPU error or a CUDA assert;
/// empty `ids` give an empty view of `source` without launching a kernel.
///
/// # Errors
///
/// A contract violation for an id outside the dim or `ids` of the wrong rank or dtype;
/// candle's error for a `dim` past `source`'s rank.
///
/// # Contract
///
/// ```text
/// source: _[..],
/// ids: u8 | u32 | i64 [I] in 0..S     -- S = source.dim(dim)
/// ```
#[track_caller]
pub fn index_select(source: &Tensor, ids: &Tensor, dim: usize) -> Result<Tensor> {
    guard_along(
        "nn::index_select",
        "source",
        source,
        dim,
        |source| check!(source: _[S, ..], ids: u8 | u32 | i64 [I] in 0..S),
    )?;
    if ids.elem_count() == 0 {
        return source.narrow(dim, 0, 0);
    }
    source
        .contiguous()?
        .index_select(&gather_indices(ids)?, dim)
}

/// The elements of `source` along `dim` at `ids`: candle's `Tensor::gather`.
///
/// - `source`: any shape and dtype.
/// - `ids`: the same rank as `source`, no larger on any dim but `dim`, u8, u32 or i64, in
///   `0..source.dim(dim)`.
/// - returns `ids`' shape, `source`'s dtype: `out[i][j][k] = source[ids[i][j][k]][j][k]` for
///   `dim = 0`, and so on.
///
/// Mirrors PyTorch's `torch.gather(source, dim, ids)`, with out-of-range ids reported instead
/// of asserting; empty `ids` launch nothing. Where `ids` is smaller than `source` on another
/// dim, candle's `Tensor::gather` reads the wrong elements silently (source `[[[0., 1.], [2.,
/// 3.]]]`, ids `[[[0], [0]]]`, dim 0 gives `[[[0.], [1.]]]`); this one gives PyTorch's
/// `[[[0.], [2.]]]`.
///
/// # Errors
///
/// A contract violation for an id outside the dim; an error for `ids` of another rank than
/// `source` or larger than `source` on a dim but `dim` (PyTorch's errors too, but PyTorch
/// skips these rules when `ids` is empty, where this function keeps them: a shape slip shows
/// before the first non-empty batch); candle's errors for a `dim` past the rank.
///
/// # Contract
///
/// ```text
/// source: _[..],
/// ids: u8 | u32 | i64 [..] in 0..S    -- S = source.dim(dim)
/// ```
#[track_caller]
pub fn gather(source: &Tensor, ids: &Tensor, dim: usize) -> Result<Tensor> {
    guard_along(
        "nn::gather",
        "source",
        source,
        dim,
        |source| check!(source: _[S, ..], ids: u8 | u32 | i64 [..] in 0..S),
    )?;
    if ids.rank() != source.rank() {
        candle_core::bail!(
            "gather: `ids` has rank {} and `source` rank {}: candle's gather takes ids of the \
             source's rank (unsqueeze the ids)",
            ids.rank(),
            source.rank()
        );
    }
    no_larger_than("gather", ("ids", ids), ("source", source), Some(dim))?;
    if ids.elem_count() == 0 {
        return Tensor::zeros(ids.shape(), source.dtype(), source.device());
    }
    // candle's gather walks `source` with the ids' shape, so on another dim where the ids are
    // smaller it reads the wrong rows; cut `source` to the ids' extent there first.
    let source = corner(source, ids, Some(dim))?;
    source.contiguous()?.gather(&gather_indices(ids)?, dim)
}

/// PyTorch's rule of scatter_add and index_add: `source` has `base`'s dtype.
fn same_dtype(op: &str, base: &Tensor, source: &Tensor) -> Result<()> {
    if base.dtype() != source.dtype() {
        candle_core::bail!(
            "{op}: `base` is {} and `source` {}: they take one dtype (convert `source` with \
             `to_dtype`)",
            base.dtype().as_str(),
            source.dtype().as_str()
        );
    }
    Ok(())
}

/// `tensor` narrowed to `like`'s size on every dim but `except` (a view, no copy); the caller
/// has checked that `like` is no larger there.
fn corner(tensor: &Tensor, like: &Tensor, except: Option<usize>) -> Result<Tensor> {
    let mut cut = tensor.clone();
    for (axis, &size) in like.dims().iter().enumerate() {
        if Some(axis) != except && size < cut.dim(axis)? {
            cut = cut.narrow(axis, 0, size)?;
        }
    }
    Ok(cut)
}

/// PyTorch's size rule of gather and scatter: `small` is no larger than `large` on every dim
/// but `except`; both have the same rank.
fn no_larger_than(
    op: &str,
    (small_name, small): (&str, &Tensor),
    (large_name, large): (&str, &Tensor),
    except: Option<usize>,
) -> Result<()> {
    if small.rank() != large.rank() {
        candle_core::bail!(
            "{op}: `{small_name}` has rank {} and `{large_name}` rank {}: they take the same rank",
            small.rank(),
            large.rank()
        );
    }
    for (axis, (&s, &l)) in small.dims().iter().zip(large.dims()).enumerate() {
        if Some(axis) != except && s > l {
            let but = match except {
                Some(except) => format!(" on every dim but {except}"),
                None => String::new(),
            };
            candle_core::bail!(
                "{op}: `{small_name}` dim {axis} is {s} and `{large_name}` dim {axis} is {l}: \
                 `{small_name}` {:?} must be no larger than `{large_name}` {:?}{but}",
                small.dims(),
                large.dims()
            );
        }
    }
    Ok(())
}

/// `base` with `source[i]` added at `ids[i]` along `dim`: candle's `Tensor::scatter_add`.
///
/// - `base`: any shape and dtype.
/// - `ids`: `base`'s rank, u8, u32 or i64, in `0..base.dim(dim)`; no larger than `source` on
///   any dim, nor than `base` on any dim but `dim`.
/// - `source`: `base`'s rank and dtype.
/// - returns a new tensor of `base`'s shape; `base` is not modified.
///
/// Mirrors PyTorch's `Tensor.scatter_add(dim, index, src)`: `out[.., ids[i], ..] +=
/// source[i]` for every index `i` of `ids`, so ids and a source smaller than `base` on the
/// other dims add into the corner they cover, and of a source larger than the ids only the
/// ids-shaped corner is read. (candle's `Tensor::scatter_add` takes only ids and source of one
/// shape, equal to `base`'s but on `dim`.) Out-of-range ids are reported instead of
/// asserting; empty `ids` return a copy of `base`.
///
/// # Errors
///
/// A contract violation for an id outside the dim; an error for a `source` of another dtype
/// than `base`, ranks that differ or `ids` larger than `source` or `base` as above (PyTorch's
/// errors too, but PyTorch skips the shape rules when `ids` is empty, where this function
/// keeps them: a shape slip shows before the first non-empty batch).
///
/// # Contract
///
/// ```text
/// base: _[..],
/// ids: u8 | u32 | i64 [..] in 0..S,   -- S = base.dim(dim)
/// source: _[..]
/// ```
#[track_caller]
pub fn scatter_add(base: &Tensor, ids: &Tensor, source: &Tensor, dim: usize) -> Result<Tensor> {
    guard_along(
        "nn::scatter_add",
        "base",
        base,
        dim,
        |base| check!(base: _[S, ..], ids: u8 | u32 | i64 [..] in 0..S, source: _[..]),
    )?;
    same_dtype("scatter_add", base, source)?;
    no_larger_than("scatter_add", ("ids", ids), ("source", source), None)?;
    no_larger_than("scatter_add", ("ids", ids), ("base", base), Some(dim))?;
    if ids.elem_count() == 0 {
        return base.copy();
    }
    // candle's scatter_add takes ids and source of one shape, equal to `base`'s on the other
    // dims; PyTorch adds the ids-shaped corner of `source` into the corner of `base` the ids
    // cover. Do that on the corner and write it back.
    let source = corner(source, ids, None)?.contiguous()?;
    let base_corner = corner(base, ids, Some(dim))?;
    let added = base_corner.scatter_add(&gather_indices(ids)?, &source, dim)?;
    if base_corner.dims() == base.dims() {
        return Ok(added);
    }
    let ranges: Vec<std::ops::Range<usize>> = added.dims().iter().map(|&size| 0..size).collect();
    base.slice_assign(&ranges, &added)
}

/// `base` with the slices of `source` added at `ids` along `dim`: candle's
/// `Tensor::index_add`.
///
/// - `base`: any shape and dtype.
/// - `ids`: `[I]`, u8, u32 or i64, in `0..base.dim(dim)`.
/// - `source`: `base`'s shape with `dim` of size `I`.
/// - returns a new tensor of `base`'s shape; `base` is not modified.
///
/// Mirrors `Tensor::index_add(&base, &ids, &source, dim)` (PyTorch's `Tensor.index_add`),
/// with out-of-range ids reported instead of asserting; empty `ids` return a copy of `base`.
///
/// # Errors
///
/// A contract violation for an id outside the dim or `ids` of the wrong rank; an error for a
/// `source` of another dtype than `base`, or of a shape other than `base`'s with dim `dim` of
/// size `I` (empty `ids` included, as in PyTorch).
///
/// # Contract
///
/// ```text
/// base: _[..],
/// ids: u8 | u32 | i64 [I] in 0..S,    -- S = base.dim(dim)
/// source: _[..]
/// ```
#[track_caller]
pub fn index_add(base: &Tensor, ids: &Tensor, source: &Tensor, dim: usize) -> Result<Tensor> {
    guard_along(
        "nn::index_add",
        "base",
        base,
        dim,
        |base| check!(base: _[S, ..], ids: u8 | u32 | i64 [I] in 0..S, source: _[..]),
    )?;
    same_dtype("index_add", base, source)?;
    // Checked here, not left to candle: empty ids return before candle would see `source`.
    let mut expected = base.dims().to_vec();
    expected[dim] = ids.elem_count();
    if source.dims() != expected.as_slice() {
        candle_core::bail!(
            "index_add: `source` is {:?} where {expected:?} is expected: `base` {:?} with dim \
             {dim} the length of `ids` ({})",
            source.dims(),
            base.dims(),
            ids.elem_count()
        );
    }
    if ids.elem_count() == 0 {
        return base.copy();
    }
    base.index_add(&gather_indices(ids)?, &source.contiguous()?, dim)
}

/// One-hot rows for class ids: candle-nn's `encoding::one_hot`.
///
/// - `indices`: any shape, u8, u32 or i64, in `0..depth`, or `-1` for an all-`off_value` row
///   (candle's convention, from TensorFlow).
/// - returns `indices`' shape followed by `depth`, of `D`'s dtype, `on_value` at each index and
///   `off_value` elsewhere.
///
/// Mirrors `candle_nn::encoding::one_hot(indices, depth, on_value, off_value)`. The ids are
/// checked before candle copies them to the host; another "no label" value such as PyTorch's
/// -100 is reported by value and index, with the advice to map it to -1 first.
///
/// # Errors
///
/// A contract violation for an id outside `0..depth` other than -1; candle's errors otherwise.
///
/// # Contract
///
/// ```text
/// indices: u8 | u32 | i64 [..] in 0..depth ignore -1 allow_all
/// ```
#[track_caller]
pub fn one_hot<V: WithDType>(
    indices: Tensor,
    depth: usize,
    on_value: V,
    off_value: V,
) -> Result<Tensor> {
    guard(
        "nn::one_hot",
        check!(indices: u8 | u32 | i64 [..] in 0..depth ignore -1 allow_all
            "candle's one_hot skips -1; map other \"no label\" values such as -100 to -1 (or \
             mask those positions) first"),
    )?;
    candle_nn::encoding::one_hot(indices, depth, on_value, off_value)
}
