// inherent impl through a type alias of one instantiation, another instantiation's impl
use candle_contracts::contract;
use candle_core::{Result, Tensor};
use std::marker::PhantomData;

pub struct Wrapper<T>(pub PhantomData<T>);
pub type W32 = Wrapper<f32>;

impl W32 {
    #[contract(x: f32[N, 4])]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}

impl Wrapper<f64> {
    #[contract(x: f32[N, 8])]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.sqr()
    }
}

#[contract(x: f32[N, 4])]
pub fn caller(w: &Wrapper<f32>, x: &Tensor) -> Result<Tensor> {
    w.forward(x)
}
