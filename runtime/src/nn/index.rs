//! The index ops: index-select, gather, scatter-add and index-add.

use std::panic::Location;

use candle_core::{Result, Tensor};

use crate::check;
use crate::error::ContractError;
use crate::nn::gather_indices;

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
            violation.move_bound_axis(name, 0, dim);
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
