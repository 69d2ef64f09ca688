use candle_contracts::contract;
use candle_core::{D, Module, Result, Tensor};
use candle_nn::Linear;

// A GPT-2-style attention block with a struct contract: the heads are not merged back
// (`reshape((b, t, n_head * head_dim))` forgotten) before the output projection.
#[contract(c_attn: Linear[E -> 3 * E], c_proj: Linear[E -> E], n_head = H, head_dim = D,
           E == H * D)]
struct CausalSelfAttention {
    c_attn: Linear,
    c_proj: Linear,
    n_head: usize,
    head_dim: usize,
}

#[contract]
impl CausalSelfAttention {
    #[contract(x: f32[B, T, E], return: f32[B, T, E])]
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, t, _) = x.dims3()?;
        let qkv = self.c_attn.forward(x)?;
        let q = qkv.narrow(D::Minus1, 0, self.n_head * self.head_dim)?;
        let q = q.reshape((b, t, self.n_head, self.head_dim))?.transpose(1, 2)?;
        let att = (q.matmul(&q.t()?)? / (self.head_dim as f64).sqrt())?;
        let att = candle_nn::ops::softmax_last_dim(&att)?;
        let y = att.matmul(&q)?.transpose(1, 2)?.contiguous()?;
        self.c_proj.forward(&y)
    }
}

fn main() {}
