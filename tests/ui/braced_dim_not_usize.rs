use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[N, {"a"}])]
fn text(x: &Tensor) -> Result<()> { let _ = x; Ok(()) }

#[contract(x: f32[N, {k}])]
fn signed(x: &Tensor, k: i64) -> Result<()> { let _ = (x, k); Ok(()) }

fn main() {}
