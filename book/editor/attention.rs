use candle_contracts::contract;
use candle_core::{D, Result, Tensor};
use candle_nn::{Linear, Module};

/// ViT-B/16 at 224 x 224: 196 patches and the class token, heads of 64.
const TOKENS: usize = 197;
const HEAD_DIM: usize = 64;

#[contract(q_proj: Linear[E -> E], k_proj: Linear[E -> E], v_proj: Linear[E -> E],
           out_proj: Linear[E -> E], n_head = H, E == H * HEAD_DIM)]
pub struct Attention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    out_proj: Linear,
    n_head: usize,
}

#[contract]
impl Attention {
    #[contract(x: f32[B, TOKENS, E], return: f32[B, TOKENS, E])]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, t, e) = x.dims3()?;
        let q = self.q_proj.forward(x)?;
        let k = self.k_proj.forward(x)?;
        let v = self.v_proj.forward(x)?;
        let q = q.reshape((b, t, self.n_head, HEAD_DIM))?.transpose(1, 2)?;
        let k = k.reshape((b, t, self.n_head, HEAD_DIM))?.transpose(1, 2)?;
        let v = v.reshape((b, t, self.n_head, HEAD_DIM))?.transpose(1, 2)?;
        let scores = (q.matmul(&k.t()?)? / (HEAD_DIM as f64).sqrt())?;
        let probs = candle_nn::ops::softmax(&scores, D::Minus1)?;
        let heads = probs.matmul(&v)?;
        let merged = heads.transpose(1, 2)?.reshape((b, t, e))?;
        self.out_proj.forward(&merged)
    }
}
