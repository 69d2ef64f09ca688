use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(target: u32[N] in 0..num_clases)]
fn f(target: &Tensor, num_classes: usize) -> Result<Tensor> { let _ = num_classes; Ok(target.clone()) }

fn main() {}
