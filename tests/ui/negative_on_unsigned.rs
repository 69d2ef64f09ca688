use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(target: u8 | u32 [N] in 0..10 ignore -100)]
fn f(target: &Tensor) -> Result<Tensor> { Ok(target.clone()) }

fn main() {}
