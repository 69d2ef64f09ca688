use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[n])]
fn f(x: &Tensor, n: usize) -> Result<Tensor> { let _ = n; Ok(x.clone()) }

fn main() {}
