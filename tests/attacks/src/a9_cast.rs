// an `as u8` cast truncates
use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[44, 4])]
pub fn caller(x: &Tensor) -> Result<Tensor> {
    let a: usize = 300;
    let n = a as u8 as usize;
    x.reshape((n, 4))
}
