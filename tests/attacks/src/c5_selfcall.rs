// `Self::forward` in an impl of one instantiation; the inherent one stands for another
use candle_contracts::contract;
use candle_core::{Result, Tensor};
use std::marker::PhantomData;

pub struct Model<T>(pub PhantomData<T>);

impl Model<f64> {
    #[contract(x: f32[N, 8])]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.sqr()
    }
}

pub trait Fwd {
    fn forward(&self, x: &Tensor) -> Result<Tensor>;
}
impl Fwd for Model<f32> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}

impl Model<f32> {
    #[contract(x: f32[N, 4])]
    pub fn run(&self, x: &Tensor) -> Result<Tensor> {
        Self::forward(self, x)
    }
}
