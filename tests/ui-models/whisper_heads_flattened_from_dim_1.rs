use candle_contracts::contract;
use candle_core::{Result, Tensor};

// whisper's attention, `n_head` heads: the heads merged back from dim 1, not 2, which folds
// the sequence into the features.
struct MultiHeadAttention {
    n_head: usize,
}

impl MultiHeadAttention {
    #[contract(x: f32[B, T, E], return: f32[B, H, T, D])]
    fn reshape_head(&self, x: &Tensor) -> Result<Tensor> {
        let (n_batch, n_ctx, n_state) = x.dims3()?;
        let target_dims = &[n_batch, n_ctx, self.n_head, n_state / self.n_head];
        x.reshape(target_dims)?.transpose(1, 2)
    }

    #[contract(q: f32[B, T, E], k: f32[B, S, E], v: f32[B, S, E], return: f32[B, T, E])]
    fn qkv_attention(&self, q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Tensor> {
        let (_, _, n_state) = q.dims3()?;
        let scale = ((n_state / self.n_head) as f64).powf(-0.25);
        let q = (self.reshape_head(q)? * scale)?;
        let k = (self.reshape_head(k)?.transpose(2, 3)? * scale)?;
        let v = self.reshape_head(v)?.contiguous()?;
        let qk = q.matmul(&k)?;
        let w = candle_nn::ops::softmax_last_dim(&qk)?;
        let wv = w.matmul(&v)?.transpose(1, 2)?.flatten_from(1)?;
        Ok(wv)
    }
}

fn main() {}
