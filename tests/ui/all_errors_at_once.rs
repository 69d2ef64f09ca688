use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(tagret: u32[N] in 0..C, logits: f23[N, C], x: f32[H / 2], on_violaton = panic)]
fn loss(logits: &Tensor, target: &Tensor, x: &Tensor) -> Result<Tensor> { let _ = x; candle_nn::loss::cross_entropy(logits, target) }

fn main() {}
