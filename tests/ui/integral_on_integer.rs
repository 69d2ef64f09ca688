use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(target: i64[N] in 0..10 integral)]
fn f(target: &Tensor) -> Result<Tensor> { Ok(target.clone()) }

fn main() {}
