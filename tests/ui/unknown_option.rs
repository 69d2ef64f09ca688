use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[N], on_violaton = panic)]
fn f(x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }

fn main() {}
