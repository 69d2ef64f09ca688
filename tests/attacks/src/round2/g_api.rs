use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[N, 8])]
pub fn f8(x: &Tensor) -> Result<Tensor> {
    x.sqr()
}
#[contract(x: f32[N, 4])]
pub fn f4(x: &Tensor) -> Result<Tensor> {
    x.sqr()
}
