//! Value statistics of tensors on a GPU (or any non-CPU device), computed with candle ops on
//! the device. Every clause's statistics of one call are concatenated and brought back in one
//! small transfer per device; a whole tensor is never copied to the host. Only comparisons,
//! `where_cond`, casts and reductions run: none of candle's kernels that can assert.
//!
//! The verdict is built from masks, never from min/max (whose NaN handling differs by backend
//! and dtype): the count of elements outside every pattern is zero exactly when the sum of the
//! mask is zero, whatever the float rounding of a large sum.

use std::borrow::Cow;

use candle_core::{DType, Device, Tensor, WithDType};

use crate::error::Violation;
use crate::scan::count_transfer;
use crate::value::{
    Compare, Details, Ignore, Num, Pending, Resolved, Summary, TypedRule, unreadable, violations_of,
};

/// Checks every pending clause, with one device-to-host transfer per device on success.
pub(crate) fn check(pending: &[Pending<'_>]) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut prepared: Vec<(usize, Masks)> = Vec::new();
    for (index, item) in pending.iter().enumerate() {
        match Masks::build(item.tensor, &item.rule) {
            Ok(Some(masks)) => prepared.push((index, masks)),
            Ok(None) => violations.push(unreadable(item, None)),
            Err(error) => violations.push(unreadable(item, Some(&error))),
        }
    }
    // Group by device: tensors may be on several devices under `same_device = false`.
    let mut groups: Vec<(Device, Vec<usize>)> = Vec::new();
    for (position, (index, _)) in prepared.iter().enumerate() {
        let device = pending[*index].tensor.device();
        match groups.iter_mut().find(|(d, _)| d.same_device(device)) {
            Some((_, members)) => members.push(position),
            None => groups.push((device.clone(), vec![position])),
        }
    }
    for (_, members) in groups {
        let stats: candle_core::Result<Vec<f32>> = (|| {
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
        match stats {
            Ok(stats) => {
                for (k, &position) in members.iter().enumerate() {
                    let (index, masks) = &prepared[position];
                    let item = &pending[*index];
                    let violating = stats[2 * k] != 0.0;
                    let none_usable = stats[2 * k + 1] == 0.0;
                    if violating || (item.needs_usable() && none_usable) {
                        match locate(item.tensor, &item.rule, masks) {
                            Ok((summary, details)) => {
                                violations.extend(violations_of(item, summary, details))
                            }
                            Err(error) => violations.push(unreadable(item, Some(&error))),
                        }
                    }
                }
            }
            Err(error) => {
                for &position in &members {
                    let item = &pending[prepared[position].0];
                    violations.push(unreadable(item, Some(&error)));
                }
            }
        }
    }
    violations
}

/// The masks of one clause, on the tensor's device.
struct Masks {
    /// The tensor in its compare dtype, flattened in logical order.
    values: Tensor,
    /// u8, 1 where an element is outside every pattern and not ignored.
    violating: Tensor,
    /// u8, 1 where an element is ignored (zeros without `ignore`).
    ignored: Tensor,
    /// f32 scalars: sums of `violating` and of "not ignored".
    violating_sum: Tensor,
    usable_sum: Tensor,
}

/// The dtype elements are compared in on a device: floats widen to f32 (f64 stays), the small
/// signed integers widen to i64; all exact.
fn compare_dtype(dtype: DType) -> Option<DType> {
    match dtype {
        DType::U8 | DType::U32 | DType::I64 | DType::F32 | DType::F64 => Some(dtype),
        DType::I16 | DType::I32 => Some(DType::I64),
        DType::F16 | DType::BF16 | DType::F8E4M3 => Some(DType::F32),
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

impl Masks {
    /// `Ok(None)` when the dtype's values cannot be read on a device.
    fn build(tensor: &Tensor, rule: &Resolved) -> candle_core::Result<Option<Self>> {
        let Some(dtype) = compare_dtype(tensor.dtype()) else {
            return Ok(None);
        };
        let values = tensor.flatten_all()?.to_dtype(dtype)?;
        let rule = &with_own_max(tensor.dtype(), rule);
        let (ok, ignored, has_ignore) = match dtype {
            DType::U8 => masks::<u8>(&values, rule)?,
            DType::U32 => masks::<u32>(&values, rule)?,
            DType::I64 => masks::<i64>(&values, rule)?,
            DType::F32 => masks::<f32>(&values, rule)?,
            _ => masks::<f64>(&values, rule)?,
        };
        let zero = Tensor::zeros((), DType::U8, values.device())?;
        let violating = ok.broadcast_eq(&zero)?;
        let violating_sum = violating.to_dtype(DType::F32)?.sum_all()?;
        let usable_sum = if has_ignore {
            ignored
                .broadcast_eq(&zero)?
                .to_dtype(DType::F32)?
                .sum_all()?
        } else {
            Tensor::ones((), DType::F32, values.device())?
        };
        Ok(Some(Self {
            values,
            violating,
            ignored,
            violating_sum,
            usable_sum,
        }))
    }
}

fn scalar<C: WithDType>(value: C, device: &Device) -> candle_core::Result<Tensor> {
    Tensor::new(value, device)
}

/// `(accepted or ignored, ignored, has ignore values)` as u8 masks.
fn masks<C: Compare + WithDType>(
    values: &Tensor,
    rule: &Resolved,
) -> candle_core::Result<(Tensor, Tensor, bool)> {
    let typed = TypedRule::<C>::new(rule);
    let device = values.device();
    let accepted = match &typed.intervals {
        None => Tensor::ones(values.shape(), DType::U8, device)?,
        Some(intervals) => {
            let mut accepted = Tensor::zeros(values.shape(), DType::U8, device)?;
            for &(lo, hi) in intervals {
                let inside = values
                    .broadcast_ge(&scalar(lo, device)?)?
                    .mul(&values.broadcast_le(&scalar(hi, device)?)?)?;
                accepted = accepted.maximum(&inside)?;
            }
            accepted
        }
    };
    let mut ignored = Tensor::zeros(values.shape(), DType::U8, device)?;
    for &value in &typed.ignore {
        ignored = ignored.maximum(&values.broadcast_eq(&scalar(value, device)?)?)?;
    }
    let ok = accepted.maximum(&ignored)?;
    Ok((ok, ignored, !typed.ignore.is_empty()))
}

/// The failure path: exact counts, the first offending element and the observed range, with a
/// few more small transfers.
fn locate(
    tensor: &Tensor,
    rule: &Resolved,
    masks: &Masks,
) -> candle_core::Result<(Summary, Details)> {
    match masks.values.dtype() {
        DType::U8 => locate_typed::<u8>(tensor, rule, masks),
        DType::U32 => locate_typed::<u32>(tensor, rule, masks),
        DType::I64 => locate_typed::<i64>(tensor, rule, masks),
        DType::F32 => locate_typed::<f32>(tensor, rule, masks),
        _ => locate_typed::<f64>(tensor, rule, masks),
    }
}

fn count(mask: &Tensor) -> candle_core::Result<u64> {
    count_transfer();
    Ok(u64::from(
        mask.to_dtype(DType::U32)?.sum_all()?.to_vec0::<u32>()?,
    ))
}

fn locate_typed<C: Compare + WithDType + Extremes>(
    tensor: &Tensor,
    _rule: &Resolved,
    masks: &Masks,
) -> candle_core::Result<(Summary, Details)> {
    let dtype = tensor.dtype();
    let device = masks.values.device();
    let values = &masks.values;
    let total = values.elem_count();
    let violating = count(&masks.violating)?;
    let ignored = count(&masks.ignored)?;
    let not_nan = values.eq(values)?;
    let nan = total as u64 - count(&not_nan)?;
    let mut details = Details {
        counts: crate::error::Counts {
            violating,
            total: total as u64,
            nan,
            ignored,
        },
        ..Details::default()
    };
    if violating > 0 {
        let positions = Tensor::arange(0u32, total as u32, device)?;
        let past_end = Tensor::new(total as u32, device)?.broadcast_as(total)?;
        let first = masks.violating.where_cond(&positions, &past_end)?.min(0)?;
        count_transfer();
        let first_position = first.to_vec0::<u32>()? as usize;
        // A one-element copy: reading a view would bring back its whole buffer, and a masked
        // sum would turn -0.0 into 0.
        count_transfer();
        let first_value = values
            .narrow(0, first_position, 1)?
            .copy()?
            .to_vec1::<C>()?[0];
        details.first_index = Some(unravel(first_position, tensor.dims()));
        details.first_value = Some(first_value.to_value(dtype));
        details.offending = vec![first_value.to_value(dtype)];
    }
    // Observed range over elements that are neither ignored nor NaN.
    let zero = Tensor::zeros((), DType::U8, device)?;
    let usable = masks.ignored.broadcast_eq(&zero)?.mul(&not_nan)?;
    if count(&usable)? > 0 {
        let high = Tensor::new(C::HIGHEST, device)?.broadcast_as(total)?;
        let low = Tensor::new(C::LOWEST, device)?.broadcast_as(total)?;
        let min = usable.where_cond(values, &high)?.min(0)?;
        let max = usable.where_cond(values, &low)?.max(0)?;
        count_transfer();
        let range = Tensor::cat(&[min.reshape(1)?, max.reshape(1)?], 0)?.to_vec1::<C>()?;
        details.observed = Some((range[0].to_value(dtype), range[1].to_value(dtype)));
    }
    let summary = Summary {
        violating,
        ignored,
        total: total as u64,
    };
    Ok((summary, details))
}

/// The multi-dimensional index of a position in logical (row-major) order.
fn unravel(mut position: usize, dims: &[usize]) -> Vec<usize> {
    let mut index = vec![0; dims.len()];
    for (axis, &size) in dims.iter().enumerate().rev() {
        if size > 0 {
            index[axis] = position % size;
            position /= size;
        }
    }
    index
}

/// The values that stand in for "no element" in a min or max.
trait Extremes: Sized {
    const HIGHEST: Self;
    const LOWEST: Self;
}

macro_rules! extremes {
    ($($t:ty: $high:expr, $low:expr;)*) => {$(
        impl Extremes for $t {
            const HIGHEST: Self = $high;
            const LOWEST: Self = $low;
        }
    )*};
}
extremes! {
    u8: u8::MAX, u8::MIN;
    u32: u32::MAX, u32::MIN;
    i64: i64::MAX, i64::MIN;
    f32: f32::INFINITY, f32::NEG_INFINITY;
    f64: f64::INFINITY, f64::NEG_INFINITY;
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
}
