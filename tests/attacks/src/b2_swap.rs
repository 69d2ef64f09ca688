// a `&mut self` method of an array or tuple of sizes is not followed
use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[4, 8])]
pub fn fill(x: &Tensor) -> Result<Tensor> {
    let mut shape = [8usize, 8];
    shape.copy_from_slice(&[4, 8]);
    x.reshape(&shape)
}

#[contract(x: f32[4, 8])]
pub fn clone_from(x: &Tensor) -> Result<Tensor> {
    let mut shape = (8usize, 8usize);
    shape.clone_from(&(4, 8));
    x.reshape(shape)
}
