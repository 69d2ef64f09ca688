use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[N] in 0.0..=0.5 | 0.1)]
fn single(x: &Tensor) -> Result<()> { let _ = x; Ok(()) }

#[contract(x: f64[N] in 0.0..=1.0 ignore 0.3)]
fn ignored(x: &Tensor) -> Result<()> { let _ = x; Ok(()) }

fn main() {}
