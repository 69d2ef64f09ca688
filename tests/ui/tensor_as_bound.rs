use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(logits: f32[N, C], target: u32[N] in 0..logits)]
fn f(logits: &Tensor, target: &Tensor) -> Result<Tensor> { let _ = logits; Ok(target.clone()) }

fn main() {}
