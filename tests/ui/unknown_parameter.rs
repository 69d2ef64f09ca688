use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(logits: f32[N, C], tagret: u32[N] in 0..C)]
fn loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> { candle_nn::loss::cross_entropy(logits, target) }

fn main() {}
