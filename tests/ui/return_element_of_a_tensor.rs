use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[N], return.0: f32[N])]
fn f(x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }

#[contract(x: f32[N], return.1: f32[N])]
fn g(x: &Tensor) -> Tensor { x.clone() }

fn main() {}
