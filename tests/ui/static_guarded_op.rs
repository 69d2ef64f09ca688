use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(logits: f32[N, C], target: u32[N, 1])]
fn loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    candle_contracts::nn::cross_entropy(logits, target)
}

fn main() {}
