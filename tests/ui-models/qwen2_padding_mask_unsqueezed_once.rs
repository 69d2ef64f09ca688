use candle_contracts::contract;
use candle_core::{DType, Device, IndexOp, Result, Tensor};

pub struct Model {
    device: Device,
    dtype: DType,
}

// Qwen2's padding mask (candle-transformers qwen2.rs, `Model::prepare_attention_mask`): each
// sequence's row is expanded to `(1, 1, T, T)` and the rows are stacked into `[B, 1, T, T]`,
// the layout the attention scores broadcast against. Expanded to `(1, T, T)`, one unit dim
// short, the stacked mask is `[B, T, T]`.
#[contract]
impl Model {
    #[contract(attn_mask: u8 | u32 | i64 [B, T], return: f32[B, 1, T, T])]
    fn prepare_attention_mask(&self, attn_mask: &Tensor) -> Result<Tensor> {
        let (b_sz, sql_len) = attn_mask.dims2()?;
        let mut mask: Vec<Tensor> = vec![];
        for b in 0..b_sz {
            mask.push(attn_mask.i((b, ..))?.expand((1, sql_len, sql_len))?);
        }
        let mask = Tensor::cat(&mask, 0)?;
        let on_true = mask.zeros_like()?.to_dtype(self.dtype)?;
        let on_false = Tensor::new(f32::NEG_INFINITY, &self.device)?
            .broadcast_as(mask.shape())?
            .to_dtype(self.dtype)?;
        mask.where_cond(&on_true, &on_false)
    }
}

fn main() {}
