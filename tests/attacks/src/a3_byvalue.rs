// a trait method taking `self` by value wins over an inherent `&self` one for an owned receiver
use candle_contracts::contract;
use candle_core::{Result, Tensor};

pub struct Model;

impl Model {
    #[contract(x: f32[N, 4])]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}

pub trait Consume {
    fn forward(self, x: &Tensor) -> Result<Tensor>;
}

impl Consume for Model {
    fn forward(self, x: &Tensor) -> Result<Tensor> {
        x.sqr()
    }
}

#[contract(x: f32[N, 8])]
pub fn caller(m: Model, x: &Tensor) -> Result<Tensor> {
    m.forward(x)
}
