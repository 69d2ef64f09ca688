use candle_contracts::contract;
use candle_core::{Result, Tensor};

const MAX_LEN: usize = 512;

#[contract(ids: u32[B, T], T <= MAX_LNE)]
fn f(ids: &Tensor) -> Result<Tensor> { Ok(ids.clone()) }

fn main() { let _ = MAX_LEN; }
