use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[N], return: f32[N], return.1: f32[N])]
fn f(x: &Tensor) -> Result<(Tensor, Tensor)> { Ok((x.clone(), x.clone())) }

fn main() {}
