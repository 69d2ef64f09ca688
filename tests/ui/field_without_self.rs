use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(self.weight: f32[V, D])]
fn f(x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }

fn main() {}
