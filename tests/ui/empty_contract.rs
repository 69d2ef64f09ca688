use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract()]
fn f(x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }

fn main() {}
