use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::{Linear, Module, RmsNorm};

struct Block {
    norm: RmsNorm,
    proj: Linear,
}

impl Block {
    #[contract(xs: f32[B, T, 512], self.norm.weight(): f32[512], self.proj.weight(): f32[256, 512],
               return: f32[B, T, 512])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let h = xs.apply(&self.norm)?;
        let h = self.proj.forward(&h)?; // [B, T, 256]
        self.proj.forward(&h) // takes [.., 512]
    }
}

fn main() {}
