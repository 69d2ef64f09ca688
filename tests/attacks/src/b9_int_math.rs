// integer arithmetic: division truncates, signed subtraction
use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[3, 4])]
pub fn div(x: &Tensor) -> Result<Tensor> {
    let k = 7 / 2;
    x.reshape((k, 4))
}

#[contract(x: f32[8, 4])]
pub fn neg(x: &Tensor) -> Result<Tensor> {
    let a: i64 = 3;
    let b = a - 5;
    let c = (b + 10) as usize;
    x.reshape((c, 4))
}

#[contract(x: f32[1, 4])]
pub fn rem(x: &Tensor) -> Result<Tensor> {
    let r = 7 % 3;
    x.reshape((r, 4))
}
