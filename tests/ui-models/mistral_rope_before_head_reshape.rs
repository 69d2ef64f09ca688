use candle_contracts::contract;
use candle_core::{Result, Tensor};

// mistral's rotary embedding applied to the projections before they are split into heads.
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

    #[contract(query_states: f32[B, T, QD], key_states: f32[B, T, KVD])]
    fn rotate(&self, query_states: &Tensor, key_states: &Tensor) -> Result<Tensor> {
        let (query_states, _key_states) = self.apply_rotary_emb_qkv(query_states, key_states, 0)?;
        Ok(query_states)
    }
}

fn main() {}
