use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: u8[N] in 300..)]
fn f(x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }

fn main() {}
