//! The embedding lookup and the `Embedding` layer.

use candle_core::{Module, Result, Tensor};

use crate::check;
use crate::nn::{gather_indices, guard, guard_output};

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
