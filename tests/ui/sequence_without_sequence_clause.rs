use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(items: f32[N, E])]
fn collate(items: &[Tensor]) -> Result<Tensor> { Tensor::stack(items, 0) }

fn main() {}
