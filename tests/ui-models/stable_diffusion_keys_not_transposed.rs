use candle_contracts::contract;
use candle_core::{DType, Result, Tensor};
use candle_nn as nn;

// Stable Diffusion 1.5's cross-attention on CLIP's 77 tokens (candle-transformers
// stable_diffusion/attention.rs), 8 heads of 40: the keys go into the scores without `.t()`,
// `[B * 8, T, 40]` times `[B * 8, 77, 40]`. Built without flash attention, as the contract states.
#[contract(heads = H, H == 8, use_flash_attn = false)]
struct CrossAttention {
    heads: usize,
    scale: f64,
    use_flash_attn: bool,
}

fn flash_attn(_: &Tensor, _: &Tensor, _: &Tensor, _: f32, _: bool) -> Result<Tensor> {
    unimplemented!("compile with '--features flash-attn'")
}

#[contract]
impl CrossAttention {
    #[contract(xs: f32[BH, T, HD], return: f32[BH / H, T, HD * H])]
    fn reshape_batch_dim_to_heads(&self, xs: &Tensor) -> Result<Tensor> {
        let (batch_size, seq_len, dim) = xs.dims3()?;
        xs.reshape((batch_size / self.heads, self.heads, seq_len, dim))?
            .transpose(1, 2)?
            .reshape((batch_size / self.heads, seq_len, dim * self.heads))
    }

    #[contract(
        query: f32[BH, T, 40],
        key: f32[BH, 77, 40],
        value: f32[BH, 77, 40],
        return: f32[BH / H, T, 320],
    )]
    fn attention(&self, query: &Tensor, key: &Tensor, value: &Tensor) -> Result<Tensor> {
        let xs = if self.use_flash_attn {
            let init_dtype = query.dtype();
            let q = query.to_dtype(DType::F16)?.unsqueeze(0)?.transpose(1, 2)?;
            let k = key.to_dtype(DType::F16)?.unsqueeze(0)?.transpose(1, 2)?;
            let v = value.to_dtype(DType::F16)?.unsqueeze(0)?.transpose(1, 2)?;
            flash_attn(&q, &k, &v, self.scale as f32, false)?
                .transpose(1, 2)?
                .squeeze(0)?
                .to_dtype(init_dtype)?
        } else {
            let in_dtype = query.dtype();
            let query = query.to_dtype(DType::F32)?;
            let key = key.to_dtype(DType::F32)?;
            let value = value.to_dtype(DType::F32)?;
            let xs = query.matmul(&(key * self.scale)?)?;
            let xs = nn::ops::softmax_last_dim(&xs)?;
            xs.matmul(&value)?.to_dtype(in_dtype)?
        };
        self.reshape_batch_dim_to_heads(&xs)
    }
}

fn main() {}
