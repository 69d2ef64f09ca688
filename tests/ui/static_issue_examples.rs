use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(logits: f32[N, 1], target: f32[N] in 0.0..=1.0)]
fn loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    candle_contracts::nn::binary_cross_entropy_with_logit(logits, target)
}

#[contract(xs: f32[B, 784], w1: f32[128, 784], w2: f32[10, 64])]
fn mlp(xs: &Tensor, w1: &Tensor, w2: &Tensor) -> Result<Tensor> {
    let h = xs.matmul(&w1.t()?)?.relu()?;
    h.matmul(&w2.t()?)
}

#[contract(x: f32[B, D], return: f32[B])]
fn total(x: &Tensor) -> Result<Tensor> {
    x.sum_keepdim(1)
}

fn main() {}
