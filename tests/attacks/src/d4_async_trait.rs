// async_trait, and an async fn calling an inherent method
use async_trait::async_trait;
use candle_contracts::contract;
use candle_core::{Result, Tensor};

pub struct M;
impl M {
    #[contract(x: f32[N, 8])]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.sqr()
    }
}

#[async_trait(?Send)]
pub trait Run {
    async fn run(&self, x: &Tensor) -> Result<Tensor>;
}

#[async_trait(?Send)]
impl Run for M {
    #[contract(x: f32[N, 8])]
    async fn run(&self, x: &Tensor) -> Result<Tensor> {
        self.forward(x)
    }
}

impl M {
    #[contract(x: f32[N, 8])]
    pub async fn go(self: Box<Self>, x: &Tensor) -> Result<Tensor> {
        self.forward(x)
    }
}
