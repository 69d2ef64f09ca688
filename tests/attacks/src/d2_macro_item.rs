// a file-level macro named like a std macro defines a local fn in the body
use candle_contracts::contract;
use candle_core::{Result, Tensor};

macro_rules! debug_assert {
    () => {
        fn forward(x: &Tensor) -> Result<Tensor> {
            Ok(x.clone())
        }
    };
}

#[contract(x: f32[N, 8])]
pub fn forward(x: &Tensor) -> Result<Tensor> {
    x.sqr()
}

#[contract(x: f32[N, 4])]
pub fn caller(x: &Tensor) -> Result<Tensor> {
    debug_assert!();
    forward(x)
}
