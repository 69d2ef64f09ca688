use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(items: [f32[E]; N] in 0.0..=1.0)]
fn collate(items: &[Tensor]) -> Result<Tensor> { Tensor::stack(items, 0) }

fn main() {}
