use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[2 * M], return: f32[M])]
fn f(x: &Tensor) -> Result<Tensor> { x.narrow(0, 0, 1) }

fn main() {}
