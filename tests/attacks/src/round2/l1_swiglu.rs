// Activation::Swiglu halves the last dim; the rule says "same type"
use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::{Activation, Module};

pub struct Gate {
    pub act: Activation,
}
impl Gate {
    #[contract(x: f32[N, 128], w: f32[64, 10])]
    pub fn forward(&self, x: &Tensor, w: &Tensor) -> Result<Tensor> {
        let h = self.act.forward(x)?; // [N, 64] for Swiglu
        h.matmul(w)
    }
}
