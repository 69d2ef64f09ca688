use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(target: u32 | i64 [N] in 0..2.5)]
fn f(target: &Tensor) -> Result<Tensor> { Ok(target.clone()) }

fn main() {}
