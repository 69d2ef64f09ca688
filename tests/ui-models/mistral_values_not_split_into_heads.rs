use std::sync::Arc;

use candle_contracts::contract;
use candle_core::{Module, Result, Tensor};
use candle_nn::Linear;

struct RotaryEmbedding {
    sin: Tensor,
    cos: Tensor,
}

impl RotaryEmbedding {
    #[contract(
        q: f32[B, H, T, D],
        k: f32[B, KVH, T, D],
        self.cos: f32[P, D / 2],
        self.sin: f32[P, D / 2],
        return.0: f32[B, H, T, D],
        return.1: f32[B, KVH, T, D],
    )]
    fn apply_rotary_emb_qkv(
        &self,
        q: &Tensor,
        k: &Tensor,
        seqlen_offset: usize,
    ) -> Result<(Tensor, Tensor)> {
        let (_b_sz, _h, seq_len, _n_embd) = q.dims4()?;
        let cos = self.cos.narrow(0, seqlen_offset, seq_len)?;
        let sin = self.sin.narrow(0, seqlen_offset, seq_len)?;
        let q_embed = candle_nn::rotary_emb::rope(q, &cos, &sin)?;
        let k_embed = candle_nn::rotary_emb::rope(k, &cos, &sin)?;
        Ok((q_embed, k_embed))
    }
}

// Mistral's attention (candle-transformers mistral.rs, its kv cache and grouped heads left
// out). The values are not split into heads: `[B, T, E]` meets the `[B, H, T, T]` weights in
// the last matmul. Seen only with the crate in sight: the rotary embedding is reached
// through an `Arc`, which another file could give a method of that name.
struct Attention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
    num_heads: usize,
    head_dim: usize,
    rotary_emb: Arc<RotaryEmbedding>,
}

impl Attention {
    #[contract(
        xs: f32[B, T, E],
        self.q_proj.weight(): f32[E, E],
        self.k_proj.weight(): f32[E, E],
        self.v_proj.weight(): f32[E, E],
        self.o_proj.weight(): f32[E, E],
        return: f32[B, T, E],
    )]
    fn forward(&self, xs: &Tensor, seqlen_offset: usize) -> Result<Tensor> {
        let (b_sz, q_len, _) = xs.dims3()?;

        let query_states = self.q_proj.forward(xs)?;
        let key_states = self.k_proj.forward(xs)?;
        let value_states = self.v_proj.forward(xs)?;

        let query_states = query_states
            .reshape((b_sz, q_len, self.num_heads, self.head_dim))?
            .transpose(1, 2)?
            .contiguous()?;
        let key_states = key_states
            .reshape((b_sz, q_len, self.num_heads, self.head_dim))?
            .transpose(1, 2)?
            .contiguous()?;

        let (query_states, key_states) =
            self.rotary_emb
                .apply_rotary_emb_qkv(&query_states, &key_states, seqlen_offset)?;

        let scale = 1f64 / f64::sqrt(self.head_dim as f64);
        let attn_weights = (query_states.matmul(&key_states.transpose(2, 3)?)? * scale)?;
        let attn_weights = candle_nn::ops::softmax_last_dim(&attn_weights)?;
        let attn_output = attn_weights.matmul(&value_states)?;
        attn_output
            .transpose(1, 2)?
            .reshape((b_sz, q_len, self.num_heads * self.head_dim))?
            .apply(&self.o_proj)
    }
}

fn main() {}
