// inherent method on Model<f32> only; Model<f64> gets `forward` from a trait impl
use candle_contracts::contract;
use candle_core::{Result, Tensor};
use std::marker::PhantomData;

pub struct Model<T>(pub PhantomData<T>);

impl Model<f32> {
    #[contract(x: f32[N, 4])]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}

pub trait Fwd {
    fn forward(&self, x: &Tensor) -> Result<Tensor>;
}

impl<T> Fwd for Model<T> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.sqr()
    }
}

#[contract(x: f32[N, 8])]
pub fn caller(m: &Model<f64>, x: &Tensor) -> Result<Tensor> {
    m.forward(x)
}
