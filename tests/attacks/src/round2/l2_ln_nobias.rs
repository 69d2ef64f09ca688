// LayerNorm without bias (and the rms_norm form) runs candle's broadcasting slow path
use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::{LayerNorm, Module};

pub struct Norm {
    pub norm: LayerNorm,
}
impl Norm {
    #[contract(x: f32[N, 1], self.norm.weight(): f32[8])]
    pub fn fwd_a(&self, x: &Tensor) -> Result<Tensor> {
        self.norm.forward(x) // [N, 8] when the norm has no bias
    }
}
pub struct Norm1 {
    pub norm: LayerNorm,
}
impl Norm1 {
    #[contract(x: f32[N, 8], self.norm.weight(): f32[1])]
    pub fn fwd_b(&self, x: &Tensor) -> Result<Tensor> {
        self.norm.forward(x)
    }
}
