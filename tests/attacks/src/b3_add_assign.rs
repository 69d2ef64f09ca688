// `n.add_assign(4)`: a `&mut self` method of an integer
use candle_contracts::contract;
use candle_core::{Result, Tensor};
use std::ops::AddAssign;

#[contract(x: f32[8, 4])]
pub fn caller(x: &Tensor) -> Result<Tensor> {
    let mut n = 4;
    n.add_assign(4);
    x.reshape((n, 4))
}
