use candle_contracts::{contract, nn};
use candle_core::{Result, Tensor};

// Class ids must be integers: `nn::cross_entropy` takes `u8 | u32 | i64`.
#[contract(logits: f32[N, C], target: f32[N])]
fn loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    nn::cross_entropy(logits, target)
}

fn main() {}
