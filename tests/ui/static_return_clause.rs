use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[B, D], return: f32[B])]
fn total(x: &Tensor) -> Result<Tensor> {
    let sums = x.sum_keepdim(1)?;
    Ok(sums)
}

fn main() {}
