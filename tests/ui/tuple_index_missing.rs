use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[N], return.first: f32[N])]
fn f(x: &Tensor) -> Result<(Tensor, Tensor)> { Ok((x.clone(), x.clone())) }

fn main() {}
