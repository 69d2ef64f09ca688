use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(ids: int[B, T] finite)]
fn f(ids: &Tensor) -> Result<Tensor> { Ok(ids.clone()) }

fn main() {}
