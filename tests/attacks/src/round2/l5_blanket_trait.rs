// the crate's own trait gives every Module a `forward` of its own; candle_nn::Module is not in scope
use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::Linear;

pub trait Fwd {
    fn forward(&self, x: &Tensor) -> Result<Tensor>;
}
impl<T: candle_nn::Module> Fwd for T {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        candle_nn::Module::forward(self, &x.t()?)
    }
}

pub struct M {
    pub proj: Linear,
}
impl M {
    #[contract(x: f32[8, 3], self.proj.weight(): f32[4, 8])]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.proj.forward(x)
    }
}
