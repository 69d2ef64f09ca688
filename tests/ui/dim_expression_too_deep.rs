use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[N], y: f32[1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + N)))))))))))))))])]
fn f(x: &Tensor, y: &Tensor) -> Result<Tensor> { let _ = y; Ok(x.clone()) }

fn main() {}
