use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::Linear;

pub trait Fwd {
    fn forward(self, x: &Tensor) -> Result<Tensor>;
}
impl Fwd for &Linear {
    fn forward(self, x: &Tensor) -> Result<Tensor> {
        candle_nn::Module::forward(self, &x.t()?)
    }
}
pub struct M {
    pub proj: Linear,
}
impl M {
    #[contract(x: f32[8, 3], self.proj.weight(): f32[4, 8])]
    pub fn by_ref_impl(&self, x: &Tensor) -> Result<Tensor> {
        self.proj.forward(x)
    }
}
