use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f64[N] in 0.0..f64::MAX)]
fn path(x: &Tensor) -> Result<()> { let _ = x; Ok(()) }

struct Config { num_labels: usize }

#[contract(y: u32[N] in 0..cfg.num_labels)]
fn field(y: &Tensor, cfg: &Config) -> Result<()> { let _ = (y, cfg); Ok(()) }

fn main() {}
