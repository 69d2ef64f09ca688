use candle_contracts::contract;
use candle_core::{Result, Tensor};

struct Config {
    classes: usize,
}

#[contract(config: f32[N])]
fn f(x: &Tensor, config: &Config) -> Result<Tensor> {
    let _ = config.classes;
    Ok(x.clone())
}

fn main() {}
