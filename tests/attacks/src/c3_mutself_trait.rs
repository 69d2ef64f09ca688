// an inherent `&mut self` method loses to a trait's `&self` one for an owned receiver
use candle_contracts::contract;
use candle_core::{Result, Tensor};

pub struct Head {
    pub calls: usize,
}
impl Head {
    #[contract(x: f32[N, 8])]
    pub fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        self.calls += 1;
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

pub struct Net {
    pub head: Head,
}
impl Net {
    #[contract(x: f32[N, 4])]
    pub fn run(&mut self, x: &Tensor) -> Result<Tensor> {
        self.head.forward(x)
    }
}
