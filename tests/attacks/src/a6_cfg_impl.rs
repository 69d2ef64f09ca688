// an impl block under cfg (the cfg on the impl, not on the fn); the trait's method is the one called
use candle_contracts::contract;
use candle_core::{Result, Tensor};

pub struct Head;

#[cfg(any())]
impl Head {
    #[contract(x: f32[N, 8])]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.sqr()
    }
}

pub trait Fwd {
    fn forward(&self, x: &Tensor) -> Result<Tensor>;
}
impl Fwd for Head {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}

#[contract(x: f32[N, 4])]
pub fn caller(h: &Head, x: &Tensor) -> Result<Tensor> {
    h.forward(x)
}
