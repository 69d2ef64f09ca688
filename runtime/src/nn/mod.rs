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
//! | [`embedding`](fn@embedding), [`Embedding`] | `torch.nn.functional.embedding`, `candle_nn::Embedding` | ids checked against the table's rows |
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
//!
//! The ops are split by what they do: `loss` (cross-entropy, NLL, BCE), `embedding`, `index`
//! (index-select, gather, scatter-add, index-add) and `encoding` (one-hot).

use std::panic::Location;

use candle_core::{DType, Result, Tensor};

use crate::error::ContractError;

mod embedding;
mod encoding;
mod index;
mod loss;

pub use embedding::{Embedding, embedding};
pub use encoding::one_hot;
pub use index::{gather, index_add, index_select, scatter_add};
pub use loss::{
    LossOptions, Reduction, binary_cross_entropy, binary_cross_entropy_with_logit, cross_entropy,
    cross_entropy_with, nll, nll_with,
};

/// The checks of one call of a guarded op: a violation becomes an error that names the op and
/// the caller's line (the op is `#[track_caller]`, and so is this).
#[track_caller]
pub(crate) fn guard(
    op: &'static str,
    checked: std::result::Result<(), ContractError>,
) -> Result<()> {
    let at = Location::caller();
    checked.map_err(|error| error.called_from(op, at, None).into())
}

/// [`guard`] for a check of the value an op returns, named `output` in the `check!`.
#[track_caller]
pub(crate) fn guard_output(
    op: &'static str,
    checked: std::result::Result<(), ContractError>,
) -> Result<()> {
    let at = Location::caller();
    checked.map_err(|error| error.called_from(op, at, Some("output")).into())
}

/// Class ids as gather indices: u8 widened to u32, because candle reads u8 255 (the dtype's
/// maximum) as "skip this index" and would give 0 for a real class 255. Contiguous, because
/// candle's gather, index-select, scatter and index-add kernels read their ids in place and
/// refuse a strided view (PyTorch accepts one).
pub(crate) fn gather_indices(target: &Tensor) -> Result<Tensor> {
    if target.dtype() == DType::U8 {
        target.to_dtype(DType::U32)?.contiguous()
    } else {
        target.contiguous()
    }
}
