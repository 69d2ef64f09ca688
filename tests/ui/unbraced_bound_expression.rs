use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f64[N] in 0.0..f64::MAX)]
fn path(x: &Tensor) -> Result<()> { let _ = x; Ok(()) }

struct Config { num_labels: usize, max_len: usize }

#[contract(y: u32[N] in 0..cfg.num_labels)]
fn field(y: &Tensor, cfg: &Config) -> Result<()> { let _ = (y, cfg); Ok(()) }

#[contract(y: f64[N] in -f64::MAX..0.0)]
fn negated(y: &Tensor) -> Result<()> { let _ = y; Ok(()) }

#[contract(x: f32[B, T], T <= cfg.max_len)]
fn relation(x: &Tensor, cfg: &Config) -> Result<()> { let _ = (x, cfg); Ok(()) }

impl Config {
    #[contract(y: u32[N] in 0..self.num_labels)]
    fn labels(&self, y: &Tensor) -> Result<()> { let _ = y; Ok(()) }
}

fn main() {}
