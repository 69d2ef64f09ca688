use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[N] in 0.0..=0.5 | 0.1)]
fn single(x: &Tensor) -> Result<()> { let _ = x; Ok(()) }

#[contract(x: f64[N] in 0.0..=1.0 ignore 0.3)]
fn ignored(x: &Tensor) -> Result<()> { let _ = x; Ok(()) }

#[contract(x: f32[N] in 16777217.0 | 0.1..=0.1 | 1e-30)]
fn not_an_f32(x: &Tensor) -> Result<()> { let _ = x; Ok(()) }

#[contract(x: f64 | i64 [N] ignore 9007199254740993.0)]
fn beyond_f64(x: &Tensor) -> Result<()> { let _ = x; Ok(()) }

#[contract(x: f64 | i64 [N] in 9007199254740993.0..)]
fn large_bound(x: &Tensor) -> Result<()> { let _ = x; Ok(()) }

fn main() {}
