use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[N] in 0.0..=1.0 ignore MAX)]
fn f(x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }

fn main() {}
