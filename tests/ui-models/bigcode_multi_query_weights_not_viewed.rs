use candle_contracts::contract;
use candle_core::{Result, Tensor, D};

// GPT-BigCode's attention, written for both layouts; the contract states the multi-query one.
// In its branch the weights `[B, T, H, S]` go into the matmul without the `attn_view` reshape
// to `[B, T * H, S]`: a rank-4 by rank-3 matmul.
struct Attention {
    num_heads: usize,
    head_dim: usize,
    multi_query: bool,
}

impl Attention {
    #[contract(
        query: f32[B, T, E],
        key: f32[B, D, S],
        value: f32[B, S, D],
        self.multi_query = true,
        return: f32[B, T, E],
    )]
    fn attn(&self, query: &Tensor, key: &Tensor, value: &Tensor) -> Result<Tensor> {
        let scale_factor = 1f64 / (self.head_dim as f64).sqrt();
        let initial_query_shape = query.shape();
        let key_len = key.dim(D::Minus1)?;
        let (query, key, attn_shape) = if self.multi_query {
            let (b_sz, query_len, _) = query.dims3()?;
            let query = query.reshape((b_sz, query_len * self.num_heads, self.head_dim))?;
            let attn_shape = (b_sz, query_len, self.num_heads, key_len);
            (query, key.clone(), attn_shape)
        } else {
            let (b_sz, _num_heads, query_len, _head_dim) = query.dims4()?;
            let query = query.reshape((b_sz, query_len * self.num_heads, self.head_dim))?;
            let key = key.reshape((b_sz * self.num_heads, self.head_dim, key_len))?;
            let attn_shape = (b_sz, self.num_heads, query_len, key_len);
            (query, key, attn_shape)
        };
        let attn_weights =
            (query.matmul(&key.contiguous()?)? * scale_factor)?.reshape(attn_shape)?;
        let attn_weights = candle_nn::ops::softmax_last_dim(&attn_weights)?;
        let value = value.contiguous()?;
        let attn_output = if self.multi_query {
            attn_weights.matmul(&value)?.reshape(initial_query_shape)?
        } else {
            attn_weights.matmul(&value)?
        };
        Ok(attn_output)
    }
}

fn main() {}
