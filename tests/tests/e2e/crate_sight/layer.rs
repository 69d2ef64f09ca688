use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::Linear;

#[contract(proj: Linear[E -> E])]
pub struct Block {
    pub proj: Linear,
}

pub struct Cached {
    pub steps: usize,
}

impl Cached {
    #[contract(xs: f32[B, E], return: f32[B, E])]
    pub fn step(&mut self, xs: &Tensor) -> Result<Tensor> {
        self.steps += 1;
        xs * 2.0
    }
}
