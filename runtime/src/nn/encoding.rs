//! One-hot encoding.

use candle_core::{Result, Tensor, WithDType};

use crate::check;
use crate::nn::guard;

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
