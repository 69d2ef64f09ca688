use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[N], static = off)]
fn f(x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }

fn main() {}
