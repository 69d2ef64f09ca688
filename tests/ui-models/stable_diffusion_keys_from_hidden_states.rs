use candle_contracts::contract;
use candle_core::{Module, Result, Tensor};
use candle_nn as nn;

// Stable Diffusion 1.5's cross-attention (attn2, candle-transformers
// stable_diffusion/attention.rs) at 320 channels against CLIP's 768-wide text states: the keys
// are projected from the image's hidden states, as the self-attention does, instead of the
// context. `to_k` takes 768 features, the hidden states have 320.
#[contract(
    to_q: Linear[320 -> 320],
    to_k: Linear[768 -> 320],
    to_v: Linear[768 -> 320],
    to_out: Linear[320 -> 320],
)]
struct CrossAttention {
    to_q: nn::Linear,
    to_k: nn::Linear,
    to_v: nn::Linear,
    to_out: nn::Linear,
}

#[contract]
impl CrossAttention {
    #[contract(
        query: f32[B, T, 320],
        key: f32[B, S, 320],
        value: f32[B, S, 320],
        return: f32[B, T, 320],
    )]
    fn attention(&self, query: &Tensor, key: &Tensor, value: &Tensor) -> Result<Tensor> {
        let xs = query.matmul(&key.t()?)?;
        nn::ops::softmax_last_dim(&xs)?.matmul(value)
    }

    #[contract(xs: f32[B, T, 320], context: f32[B, 77, 768], return: f32[B, T, 320])]
    fn forward(&self, xs: &Tensor, context: Option<&Tensor>) -> Result<Tensor> {
        let query = self.to_q.forward(xs)?;
        let context = context.unwrap_or(xs).contiguous()?;
        let key = self.to_k.forward(xs)?;
        let value = self.to_v.forward(&context)?;
        let xs = self.attention(&query, &key, &value)?;
        self.to_out.forward(&xs)
    }
}

fn main() {}
