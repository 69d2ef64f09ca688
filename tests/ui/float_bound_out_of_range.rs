use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[N] in 0.0..1e400)]
fn f(x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }

fn main() {}
