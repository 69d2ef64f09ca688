use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: i64[N] in 5..3)]
fn f(x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }

fn main() {}
