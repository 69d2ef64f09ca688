// cfg twins of a field: the one compiled out comes last
use candle_contracts::contract;
use candle_core::{Result, Tensor};

pub struct Head4;
impl Head4 {
    #[contract(x: f32[N, 4])]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}
pub struct Head8;
impl Head8 {
    #[contract(x: f32[N, 8])]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.sqr()
    }
}

pub struct Net {
    #[cfg(not(any()))]
    pub head: Head4,
    #[cfg(any())]
    pub head: Head8,
}

impl Net {
    #[contract(x: f32[N, 4])]
    pub fn run(&self, x: &Tensor) -> Result<Tensor> {
        self.head.forward(x)
    }
}
