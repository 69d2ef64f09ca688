// an inherent method of another instantiation stands in another file of the crate
use candle_contracts::contract;
use candle_core::{Result, Tensor};
use std::marker::PhantomData;

mod other;

pub struct Model<T>(pub PhantomData<T>);

impl Model<f32> {
    #[contract(x: f32[N, 4])]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}

#[contract(x: f32[N, 8])]
pub fn caller(m: &Model<f64>, x: &Tensor) -> Result<Tensor> {
    m.forward(x)
}
