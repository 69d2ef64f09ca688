// the layer is replaced through &mut self before it runs
use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::{Linear, Module};

pub struct M {
    pub proj: Linear,
}
impl M {
    #[contract(x: f32[N, 16], w: f32[4, 16], self.proj.weight(): f32[4, 8])]
    pub fn assign(&mut self, x: &Tensor, w: &Tensor) -> Result<Tensor> {
        self.proj = Linear::new(w.clone(), None);
        self.proj.forward(x)
    }
    #[contract(x: f32[N, 16], self.proj.weight(): f32[4, 8])]
    pub fn swap(&mut self, x: &Tensor, other: &mut Linear) -> Result<Tensor> {
        std::mem::swap(&mut self.proj, other);
        self.proj.forward(x)
    }
    #[contract(x: f32[N, 16], self.proj.weight(): f32[4, 8])]
    pub fn via_ref(&mut self, x: &Tensor, other: &Linear) -> Result<Tensor> {
        let p = &mut self.proj;
        *p = other.clone();
        self.proj.forward(x)
    }
}
