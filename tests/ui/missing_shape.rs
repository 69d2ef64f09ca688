use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32 in 0.0..=1.0)]
fn f(x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }

fn main() {}
