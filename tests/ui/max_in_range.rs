use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: u32[N] in 0..MAX)]
fn f(x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }

fn main() {}
