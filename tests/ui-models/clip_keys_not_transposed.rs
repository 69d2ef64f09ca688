use candle_contracts::contract;
use candle_core::{DType, Module, Result, Tensor, D};
use candle_nn::Linear;

// CLIP's text attention (candle-transformers clip/text_model.rs) at vit-base-patch32's sizes:
// 512 wide, 8 heads of 64, the tokenizer's 77 tokens. The keys go into the scores without
// `.transpose(1, 2)`: `[B * 8, 77, 64]` times `[B * 8, 77, 64]`.
#[contract(
    k_proj: Linear[512 -> 512],
    v_proj: Linear[512 -> 512],
    q_proj: Linear[512 -> 512],
    out_proj: Linear[512 -> 512],
    head_dim = HD,
    num_attention_heads = H,
    HD == 64,
    H == 8,
)]
struct ClipAttention {
    k_proj: Linear,
    v_proj: Linear,
    q_proj: Linear,
    out_proj: Linear,
    head_dim: usize,
    scale: f64,
    num_attention_heads: usize,
}

#[contract]
impl ClipAttention {
    #[contract(xs: f32[B, 77, 512], return: f32[B, 8, 77, 64])]
    fn shape(&self, xs: &Tensor, seq_len: usize, bsz: usize) -> Result<Tensor> {
        xs.reshape((bsz, seq_len, self.num_attention_heads, self.head_dim))?
            .transpose(1, 2)?
            .contiguous()
    }

    #[contract(
        xs: f32[B, 77, 512],
        causal_attention_mask: f32[B, 1, 77, 77],
        return: f32[B, 77, 512],
    )]
    fn forward(&self, xs: &Tensor, causal_attention_mask: Option<&Tensor>) -> Result<Tensor> {
        let in_dtype = xs.dtype();
        let (bsz, seq_len, embed_dim) = xs.dims3()?;

        let query_states = (self.q_proj.forward(xs)? * self.scale)?;
        let proj_shape = (bsz * self.num_attention_heads, seq_len, self.head_dim);
        let query_states = self
            .shape(&query_states, seq_len, bsz)?
            .reshape(proj_shape)?
            .to_dtype(DType::F32)?;
        let key_states = self
            .shape(&self.k_proj.forward(xs)?, seq_len, bsz)?
            .reshape(proj_shape)?
            .to_dtype(DType::F32)?;
        let value_states = self
            .shape(&self.v_proj.forward(xs)?, seq_len, bsz)?
            .reshape(proj_shape)?
            .to_dtype(DType::F32)?;
        let attn_weights = query_states.matmul(&key_states)?;

        let src_len = key_states.dim(1)?;

        let attn_weights = if let Some(causal_attention_mask) = causal_attention_mask {
            attn_weights
                .reshape((bsz, self.num_attention_heads, seq_len, src_len))?
                .broadcast_add(causal_attention_mask)?
                .reshape((bsz * self.num_attention_heads, seq_len, src_len))?
        } else {
            attn_weights
        };

        let attn_weights = candle_nn::ops::softmax(&attn_weights, D::Minus1)?;

        let attn_output = attn_weights.matmul(&value_states)?.to_dtype(in_dtype)?;
        let attn_output = attn_output
            .reshape((bsz, self.num_attention_heads, seq_len, self.head_dim))?
            .transpose(1, 2)?
            .reshape((bsz, seq_len, embed_dim))?;
        self.out_proj.forward(&attn_output)
    }
}

fn main() {}
