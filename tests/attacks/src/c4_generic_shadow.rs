// an impl's generic parameter named like a struct of the module
use candle_contracts::contract;
use candle_core::{Result, Tensor};

pub struct Head;
impl Head {
    #[contract(x: f32[N, 8])]
    pub fn step(&self, x: &Tensor) -> Result<Tensor> {
        x.sqr()
    }
}

pub trait Step {
    fn step(&self, x: &Tensor) -> Result<Tensor>;
}
pub trait Run {
    fn run(&self, x: &Tensor) -> Result<Tensor>;
}
#[allow(non_camel_case_types)]
impl<Head: Step> Run for Head {
    #[contract(x: f32[N, 4])]
    fn run(&self, x: &Tensor) -> Result<Tensor> {
        self.step(x)
    }
}
