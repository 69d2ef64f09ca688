use candle_contracts::contract;
use candle_core::{Result, Tensor};

// Class ids must be integers: `nn::cross_entropy` takes `u8 | u32 | i64`. (A bare `nn::`
// may be a module of the file's own: the macro reads the full path, or a `use` in the body.)
#[contract(logits: f32[N, C], target: f32[N])]
fn loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    candle_contracts::nn::cross_entropy(logits, target)
}

fn main() {}
