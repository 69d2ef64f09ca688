//! The losses: cross-entropy and NLL (with an ignore index and a reduction), and the binary
//! cross-entropies on probabilities and on logits.

use candle_core::{D, DType, Result, Tensor};

use crate::check;
use crate::error::{ContractError, Counts, Rule, Violation};
use crate::nn::{gather_indices, guard};

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
/// negative i64) is a [`ContractError`] naming the id and its index; a
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
        let found_counts = found.counts().unwrap_or_default();
        counts.violating += found_counts.violating;
        counts.nan += found_counts.nan;
        match &mut merged {
            None => {
                found.offset_rows(first_row);
                merged = Some(found);
            }
            Some(merged) => merged.absorb_offending(found),
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
            // One run's observed range is the kept rows'; over several it would omit the
            // runs that passed.
            violation.restate_for_part(
                counts,
                runs.len() == 1,
                format!(
                    "{ignored} of {} rows are not checked: their target is the ignore index {ignore}",
                    ids.len()
                ),
            );
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
