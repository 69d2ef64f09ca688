//! Value statistics of tensors on a GPU (or any non-CPU device), computed with candle ops on
//! the device. Every clause's verdicts of one call are concatenated and brought back in one
//! small transfer per device; a whole tensor is never copied to the host. Only comparisons,
//! `where_cond`, casts, strided copies and reductions run: none of candle's kernels that can
//! assert.
//!
//! A broadcast view is narrowed to its stored elements first (each broadcast dim to size 1),
//! so the masks are as large as the data, not as the view; the counts are multiplied back.
//! Counts and positions are `i64` on the device and `u64` here: correct beyond 2^32 elements.
//!
//! The verdict is built from masks, never from min/max (whose NaN handling differs by backend
//! and dtype): the count of elements outside every pattern is zero exactly when the sum of the
//! mask is zero, whatever the float rounding of a large sum.

use std::borrow::Cow;

use candle_core::{CpuStorage, CustomOp1, DType, Device, Layout, Shape, Tensor, WithDType};

use crate::error::{Counts, Value};
use crate::rule::{Compare, Details, Ignore, Num, Resolved, TypedRule};
use crate::scan::{Outcome, Request, count_transfer};

/// Reads every request, with one device-to-host transfer per device when all pass. The
/// outcomes are in the order of the requests.
pub(crate) fn scan(requests: &[Request<'_>]) -> Vec<Outcome> {
    let mut outcomes: Vec<Option<Outcome>> = Vec::with_capacity(requests.len());
    let mut prepared: Vec<(usize, Masks)> = Vec::new();
    for (index, request) in requests.iter().enumerate() {
        match Masks::build(request.tensor, request.mask, request.rule) {
            Ok(Some(masks)) => {
                outcomes.push(None);
                prepared.push((index, masks));
            }
            Ok(None) => outcomes.push(Some(Outcome::Unreadable)),
            Err(error) => outcomes.push(Some(Outcome::Failed(error))),
        }
    }
    // Group by device: tensors may be on several devices under `same_device = false`.
    let mut groups: Vec<(Device, Vec<usize>)> = Vec::new();
    for (position, (index, _)) in prepared.iter().enumerate() {
        let device = requests[*index].tensor.device();
        match groups.iter_mut().find(|(d, _)| d.same_device(device)) {
            Some((_, members)) => members.push(position),
            None => groups.push((device.clone(), vec![position])),
        }
    }
    for (_, members) in groups {
        let verdicts: candle_core::Result<Vec<f32>> = (|| {
            let mut parts = Vec::with_capacity(members.len() * 2);
            for &position in &members {
                let masks = &prepared[position].1;
                parts.push(masks.violating_sum.reshape(1)?);
                parts.push(masks.usable_sum.reshape(1)?);
            }
            let all = Tensor::cat(&parts, 0)?;
            count_transfer();
            all.to_vec1::<f32>()
        })();
        for (k, &position) in members.iter().enumerate() {
            let (index, masks) = &prepared[position];
            let request = &requests[*index];
            let outcome = match &verdicts {
                Ok(verdicts) => {
                    let violating = verdicts[2 * k] != 0.0;
                    let none_usable = verdicts[2 * k + 1] == 0.0;
                    if violating || (request.needs_usable && none_usable) {
                        match masks.statistics() {
                            Ok(details) => Outcome::Fail(details),
                            Err(error) => Outcome::Failed(error),
                        }
                    } else {
                        Outcome::Pass
                    }
                }
                Err(error) => Outcome::Failed(candle_core::Error::Msg(error.to_string())),
            };
            outcomes[*index] = Some(outcome);
        }
    }
    outcomes
        .into_iter()
        .map(|outcome| {
            outcome.unwrap_or_else(|| {
                Outcome::Failed(candle_core::Error::Msg(
                    "the device scan lost this tensor's verdict".to_string(),
                ))
            })
        })
        .collect()
}

/// How a dtype is read on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// Cast to this compare dtype (all exact).
    Cast(DType),
    /// `f8e8m0`: candle casts it nowhere; its exponent bits, read as `u8`, order its values.
    E8m0Bits,
}

/// The dtype elements are compared in on a device: floats widen to f32 (f64 stays), the small
/// signed integers widen to i64; `None` for the packed formats no backend can read.
fn read_as(dtype: DType) -> Option<Read> {
    match dtype {
        DType::U8 | DType::U32 | DType::I64 | DType::F32 | DType::F64 => Some(Read::Cast(dtype)),
        DType::I16 | DType::I32 => Some(Read::Cast(DType::I64)),
        DType::F16 | DType::BF16 | DType::F8E4M3 => Some(Read::Cast(DType::F32)),
        DType::F8E8M0 => Some(Read::E8m0Bits),
        _ => None,
    }
}

/// `ignore MAX` names the maximum of the tensor's own dtype, not of the dtype it widens to for
/// the comparison (i16 and i32 compare as i64).
fn with_own_max(dtype: DType, rule: &Resolved) -> Cow<'_, Resolved> {
    let max = match dtype {
        DType::I16 => i16::MAX as i128,
        DType::I32 => i32::MAX as i128,
        _ => return Cow::Borrowed(rule),
    };
    let mut own = rule.clone();
    for ignore in &mut own.ignore {
        if matches!(ignore, Ignore::Max) {
            *ignore = Ignore::Value(Num::Int(max));
        }
    }
    Cow::Owned(own)
}

/// The view with every broadcast dim narrowed to size 1 (with a mask: every dim broadcast in
/// both, the mask narrowed the same way), and how many times the view shows each of its
/// elements. Its index of an element is the view's first index of that element.
fn stored_elements(
    tensor: &Tensor,
    mask: Option<&Tensor>,
) -> candle_core::Result<(Tensor, Option<Tensor>, u64)> {
    let mut stored = tensor.clone();
    let mut stored_mask = mask.cloned();
    let mut repeat = 1u64;
    for (axis, (&size, &stride)) in tensor.dims().iter().zip(tensor.stride()).enumerate() {
        let mask_broadcast = mask.is_none_or(|m| m.stride().get(axis) == Some(&0));
        if stride == 0 && mask_broadcast && size > 1 {
            stored = stored.narrow(axis, 0, 1)?;
            stored_mask = stored_mask.map(|m| m.narrow(axis, 0, 1)).transpose()?;
            repeat = repeat.saturating_mul(size as u64);
        }
    }
    Ok((stored, stored_mask, repeat))
}

/// u8, flattened in logical order: 1 where the mask is non-zero (checked), 0 where it is zero
/// (exempt). A float mask is zero at `0.0` and `-0.0` and non-zero at NaN (`!=` in IEEE).
/// `Ok(None)` for a mask dtype no backend can read.
fn checked_positions(mask: &Tensor) -> candle_core::Result<Option<Tensor>> {
    let device = mask.device();
    let mask = match mask.dtype() {
        DType::U8 | DType::U32 | DType::I64 | DType::F32 | DType::F64 => mask.flatten_all()?,
        DType::I16 | DType::I32 => mask.flatten_all()?.to_dtype(DType::I64)?,
        // Exact widenings: -0.0 stays -0.0 and NaN stays NaN.
        DType::F16 | DType::BF16 | DType::F8E4M3 => mask.flatten_all()?.to_dtype(DType::F32)?,
        // An exponent alone has no zero: every position is checked.
        DType::F8E8M0 => {
            return Ok(Some(Tensor::ones(mask.elem_count(), DType::U8, device)?));
        }
        _ => return Ok(None),
    };
    let zero = Tensor::zeros((), mask.dtype(), device)?;
    Ok(Some(mask.broadcast_ne(&zero)?))
}

/// The masks of one clause, on the tensor's device.
struct Masks {
    /// The stored elements in their compare dtype, flattened in logical order.
    values: Tensor,
    /// The dims of the stored elements (the view's, with broadcast dims at 1).
    dims: Vec<usize>,
    /// How many times the view shows each stored element.
    repeat: u64,
    /// The tensor's own dtype, for the values in the message.
    dtype: DType,
    read: Read,
    /// u8, 1 where an element is outside every pattern and not ignored.
    violating: Tensor,
    /// u8, 1 where an element is checked and ignored (zeros without `ignore`).
    ignored: Tensor,
    /// u8, 1 where the `where` mask checks an element; `None` without a mask (all are).
    checked: Option<Tensor>,
    /// f32 scalars: sums of `violating` and of "not ignored" (verdicts only: zero or not).
    violating_sum: Tensor,
    usable_sum: Tensor,
}

impl Masks {
    /// `Ok(None)` when the dtype's values (or the mask's) cannot be read on a device.
    fn build(
        tensor: &Tensor,
        mask: Option<&Tensor>,
        rule: &Resolved,
    ) -> candle_core::Result<Option<Self>> {
        let Some(read) = read_as(tensor.dtype()) else {
            return Ok(None);
        };
        if let Some(mask) = mask
            && mask.dims() != tensor.dims()
        {
            candle_core::bail!(
                "the mask's dims {:?} are not the tensor's {:?}",
                mask.dims(),
                tensor.dims()
            )
        }
        let (stored, stored_mask, repeat) = stored_elements(tensor, mask)?;
        let checked = match stored_mask {
            Some(mask) => match checked_positions(&mask)? {
                Some(checked) => Some(checked),
                None => return Ok(None),
            },
            None => None,
        };
        let rule = &with_own_max(tensor.dtype(), rule);
        let (values, (ok, ignored, has_ignore)) = match read {
            Read::Cast(dtype) => {
                let values = stored.flatten_all()?.to_dtype(dtype)?;
                let masks = match dtype {
                    DType::U8 => masks::<u8>(&values, &TypedRule::new(rule))?,
                    DType::U32 => masks::<u32>(&values, &TypedRule::new(rule))?,
                    DType::I64 => masks::<i64>(&values, &TypedRule::new(rule))?,
                    DType::F32 => masks::<f32>(&values, &TypedRule::new(rule))?,
                    _ => masks::<f64>(&values, &TypedRule::new(rule))?,
                };
                (values, masks)
            }
            Read::E8m0Bits => {
                // The op reads the view in logical order: candle copies no f8e8m0 view.
                let values = stored.apply_op1_no_bwd(&E8m0Bits)?.flatten_all()?;
                let masks = masks::<u8>(&values, &e8m0_bits_rule(&TypedRule::new(rule)))?;
                (values, masks)
            }
        };
        let zero = Tensor::zeros((), DType::U8, values.device())?;
        let mut violating = ok.broadcast_eq(&zero)?;
        let mut usable = (has_ignore || checked.is_some())
            .then(|| ignored.broadcast_eq(&zero))
            .transpose()?;
        let mut ignored = ignored;
        if let Some(checked) = &checked {
            violating = violating.mul(checked)?;
            ignored = ignored.mul(checked)?;
            usable = usable.map(|usable| usable.mul(checked)).transpose()?;
        }
        let violating_sum = violating.to_dtype(DType::F32)?.sum_all()?;
        let usable_sum = match usable {
            Some(usable) => usable.to_dtype(DType::F32)?.sum_all()?,
            None => Tensor::ones((), DType::F32, values.device())?,
        };
        Ok(Some(Self {
            values,
            dims: stored.dims().to_vec(),
            repeat,
            dtype: tensor.dtype(),
            read,
            violating,
            ignored,
            checked,
            violating_sum,
            usable_sum,
        }))
    }

    /// The failure path: exact counts, the first offending element and the observed range, with
    /// a few more small transfers.
    fn statistics(&self) -> candle_core::Result<Details> {
        let dtype = self.dtype;
        match (self.read, self.values.dtype()) {
            (Read::E8m0Bits, _) => self.statistics_typed(|bits: u8| {
                crate::rule::decode_e8m0(bits).to_value(DType::F8E8M0)
            }),
            (_, DType::U8) => self.statistics_typed(|v: u8| v.to_value(dtype)),
            (_, DType::U32) => self.statistics_typed(|v: u32| v.to_value(dtype)),
            (_, DType::I64) => self.statistics_typed(|v: i64| v.to_value(dtype)),
            (_, DType::F32) => self.statistics_typed(|v: f32| v.to_value(dtype)),
            _ => self.statistics_typed(|v: f64| v.to_value(dtype)),
        }
    }

    /// `value_of` turns a compare-typed element into the user's value (e8m0 bits decoded).
    fn statistics_typed<C: Compare + WithDType>(
        &self,
        value_of: impl Fn(C) -> Value,
    ) -> candle_core::Result<Details> {
        let device = self.values.device();
        let values = &self.values;
        let stored = values.elem_count();
        let violating = count(&self.violating)?;
        let ignored = count(&self.ignored)?;
        let not_nan = match self.read {
            Read::E8m0Bits => values.ne(0xFFu8)?,
            Read::Cast(_) => values.eq(values)?,
        };
        let (checked, not_nan) = match &self.checked {
            Some(checked) => (count(checked)?, not_nan.mul(checked)?),
            None => (stored as u64, not_nan),
        };
        let nan = checked.saturating_sub(count(&not_nan)?);
        let exempt = (stored as u64).saturating_sub(checked);
        let repeat = self.repeat;
        let mut details = Details {
            counts: Counts {
                violating: violating.saturating_mul(repeat),
                total: (stored as u64).saturating_mul(repeat),
                nan: nan.saturating_mul(repeat),
                ignored: ignored.saturating_mul(repeat),
                exempt: exempt.saturating_mul(repeat),
            },
            ..Details::default()
        };
        if violating > 0 {
            let positions = Tensor::arange(0i64, stored as i64, device)?;
            let past_end = Tensor::new(stored as i64, device)?.broadcast_as(stored)?;
            let first = self.violating.where_cond(&positions, &past_end)?.min(0)?;
            count_transfer();
            let first_position = u64::try_from(first.to_vec0::<i64>()?).unwrap_or(0);
            // A one-element copy: reading a view would bring back its whole buffer, and a masked
            // sum would turn -0.0 into 0.
            count_transfer();
            let at = usize::try_from(first_position).unwrap_or(0);
            let first_value = values.narrow(0, at, 1)?.copy()?.to_vec1::<C>()?[0];
            details.first_index = Some(unravel(first_position, &self.dims));
            details.first_value = Some(value_of(first_value));
            details.offending = vec![value_of(first_value)];
            // Only the first is read back: the list is complete when every violation equals it
            // (one more count, on the failure path only).
            let first = values.narrow(0, at, 1)?.broadcast_as(stored)?;
            let same = values.eq(&first)?.mul(&self.violating)?;
            details.offending_complete = violating == 1 || count(&same)? == violating;
        }
        // Observed range over checked elements that are neither ignored nor NaN (`not_nan` is
        // already zero where exempt).
        let zero = Tensor::zeros((), DType::U8, device)?;
        let usable = self.ignored.broadcast_eq(&zero)?.mul(&not_nan)?;
        if count(&usable)? > 0 {
            let high = Tensor::new(C::HIGHEST, device)?.broadcast_as(stored)?;
            let low = Tensor::new(C::LOWEST, device)?.broadcast_as(stored)?;
            let min = usable.where_cond(values, &high)?.min(0)?;
            let max = usable.where_cond(values, &low)?.max(0)?;
            count_transfer();
            let range = Tensor::cat(&[min.reshape(1)?, max.reshape(1)?], 0)?.to_vec1::<C>()?;
            details.observed = Some((value_of(range[0]), value_of(range[1])));
        }
        Ok(details)
    }
}

/// The number of ones in a u8 mask, summed in `i64` so no count wraps.
fn count(mask: &Tensor) -> candle_core::Result<u64> {
    count_transfer();
    let sum = mask.to_dtype(DType::I64)?.sum_all()?.to_vec0::<i64>()?;
    Ok(u64::try_from(sum).unwrap_or(0))
}

/// `(accepted or ignored, ignored, has ignore values)` as u8 masks.
fn masks<C: Compare + WithDType>(
    values: &Tensor,
    typed: &TypedRule<C>,
) -> candle_core::Result<(Tensor, Tensor, bool)> {
    let device = values.device();
    let accepted = match &typed.intervals {
        None => Tensor::ones(values.shape(), DType::U8, device)?,
        Some(intervals) => {
            let mut accepted = Tensor::zeros(values.shape(), DType::U8, device)?;
            for &(lo, hi) in intervals {
                let inside = values
                    .broadcast_ge(&Tensor::new(lo, device)?)?
                    .mul(&values.broadcast_le(&Tensor::new(hi, device)?)?)?;
                accepted = accepted.maximum(&inside)?;
            }
            accepted
        }
    };
    // `integral` (float compare types only): v - floor(v) is 0 exactly for whole numbers; it is
    // NaN for NaN and ±inf.
    let accepted = if typed.integral {
        let zero = Tensor::zeros((), values.dtype(), device)?;
        let whole = values.sub(&values.floor()?)?.broadcast_eq(&zero)?;
        accepted.mul(&whole)?
    } else {
        accepted
    };
    let mut ignored = Tensor::zeros(values.shape(), DType::U8, device)?;
    for &value in &typed.ignore {
        ignored = ignored.maximum(&values.broadcast_eq(&Tensor::new(value, device)?)?)?;
    }
    let ok = accepted.maximum(&ignored)?;
    Ok((ok, ignored, !typed.ignore.is_empty()))
}

/// An `f8e8m0` rule on the exponent bits: the value of bits `e` is 2^(e - 127) for `e` below
/// 0xFF (NaN), increasing with `e`, so each interval of values is an interval of bits. The
/// whole numbers are bits 127 (1.0) to 0xFE, so `integral` is one more interval to meet.
fn e8m0_bits_rule(rule: &TypedRule<f32>) -> TypedRule<u8> {
    let decoded: Vec<(u8, f32)> = (0..=0xFEu8)
        .map(|e| (e, crate::rule::decode_e8m0(e)))
        .collect();
    let intervals = rule.intervals.as_ref().map(|intervals| {
        intervals
            .iter()
            .filter_map(|&(lo, hi)| {
                let first = decoded.iter().find(|&&(_, v)| v >= lo)?.0;
                let last = decoded.iter().rev().find(|&&(_, v)| v <= hi)?.0;
                (first <= last).then_some((first, last))
            })
            .collect::<Vec<_>>()
    });
    const WHOLE: (u8, u8) = (127, 0xFE);
    let intervals = match intervals {
        _ if !rule.integral => intervals,
        None => Some(vec![WHOLE]),
        Some(intervals) => Some(
            intervals
                .into_iter()
                .filter_map(|(a, b)| {
                    let (a, b) = (a.max(WHOLE.0), b.min(WHOLE.1));
                    (a <= b).then_some((a, b))
                })
                .collect(),
        ),
    };
    let ignore = rule
        .ignore
        .iter()
        .filter_map(|&v| decoded.iter().find(|&&(_, d)| d == v).map(|&(e, _)| e))
        .collect();
    TypedRule {
        intervals,
        ignore,
        integral: false,
    }
}

/// The bits of an `f8e8m0` view as a contiguous `u8` tensor, in logical order: candle casts
/// `f8e8m0` to no other dtype.
struct E8m0Bits;

impl CustomOp1 for E8m0Bits {
    fn name(&self) -> &'static str {
        "candle-contracts-e8m0-bits"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let CpuStorage::F8E8M0(data) = storage else {
            candle_core::bail!("e8m0 bits of a tensor of another dtype")
        };
        let bits = match layout.contiguous_offsets() {
            Some((start, end)) => data[start..end].to_vec(),
            None => strided(layout).map(|offset| data[offset]).collect(),
        };
        Ok((CpuStorage::U8(bits), layout.shape().clone()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        storage: &candle_core::CudaStorage,
        layout: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        use candle_core::backend::{BackendDevice, BackendStorage};
        use candle_core::cuda_backend::CudaStorageSlice;
        let CudaStorageSlice::F8E8M0(stored) = &storage.slice else {
            candle_core::bail!("e8m0 bits of a {:?} tensor", storage.dtype())
        };
        let device = storage.device.clone();
        let stored = stored
            .try_clone()
            .map_err(|error| candle_core::Error::Msg(error.to_string()))?;
        let as_bytes = candle_core::CudaStorage {
            slice: CudaStorageSlice::U8(stored),
            device: device.clone(),
        };
        // SAFETY: the strided copy just below writes every element.
        let mut bits = unsafe { device.alloc_uninit(layout.shape(), DType::U8)? };
        as_bytes.copy_strided_src(&mut bits, 0, layout)?;
        Ok((bits, layout.shape().clone()))
    }
}

/// The storage offsets of a layout's elements in logical order.
fn strided(layout: &Layout) -> impl Iterator<Item = usize> + '_ {
    let dims = layout.dims();
    let strides = layout.stride();
    let total: usize = dims.iter().product();
    let mut index = vec![0usize; dims.len()];
    let mut offset = layout.start_offset();
    (0..total).map(move |_| {
        let here = offset;
        for axis in (0..dims.len()).rev() {
            index[axis] += 1;
            offset += strides[axis];
            if index[axis] < dims[axis] {
                break;
            }
            offset -= strides[axis] * dims[axis];
            index[axis] = 0;
        }
        here
    })
}

/// The multi-dimensional index of a position in logical (row-major) order, in `u64` so that
/// positions beyond 2^32 are exact on every platform.
fn unravel(mut position: u64, dims: &[usize]) -> Vec<usize> {
    let mut index = vec![0; dims.len()];
    for (axis, &size) in dims.iter().enumerate().rev() {
        if size > 0 {
            let size = size as u64;
            index[axis] = (position % size) as usize;
            position /= size;
        }
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unravel_is_row_major() {
        assert_eq!(unravel(0, &[2, 4, 4]), vec![0, 0, 0]);
        assert_eq!(unravel(22, &[2, 4, 4]), vec![1, 1, 2]);
        assert_eq!(unravel(5, &[6]), vec![5]);
        assert_eq!(unravel(0, &[]), Vec::<usize>::new());
    }

    #[test]
    fn unravel_is_exact_beyond_two_to_the_32() {
        // [3, 2^32 + 5]: the last element sits at 3 * (2^32 + 5) - 1, past every u32.
        let wide = (1usize << 32) + 5;
        let last = 3 * wide as u64 - 1;
        assert_eq!(unravel(last, &[3, wide]), vec![2, wide - 1]);
        assert_eq!(unravel(wide as u64 + 7, &[3, wide]), vec![1, 7]);
    }

    #[test]
    fn e8m0_rules_become_bit_intervals() {
        let rule = TypedRule::<f32> {
            intervals: Some(vec![(0.5, 4.0)]),
            ignore: vec![1.0],
            integral: false,
        };
        let bits = e8m0_bits_rule(&rule);
        // 0.5 = 2^-1 is bits 126, 4 = 2^2 is bits 129, 1 = 2^0 is bits 127.
        assert_eq!(bits.intervals, Some(vec![(126, 129)]));
        assert_eq!(bits.ignore, vec![127]);
        let between = TypedRule::<f32> {
            intervals: Some(vec![(0.6, 0.9)]),
            ignore: vec![],
            integral: false,
        };
        assert_eq!(e8m0_bits_rule(&between).intervals, Some(vec![]));
    }
}
