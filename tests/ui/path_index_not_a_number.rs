use candle_contracts::contract;
use candle_core::{Result, Tensor};

struct Mlp {
    layers: Vec<candle_nn::Linear>,
}

impl Mlp {
    #[contract(self.layers[j].weight(): f32[H, D])]
    fn f(&self, x: &Tensor, i: usize) -> Result<Tensor> { let _ = i; Ok(x.clone()) }

    #[contract(self.layers[i + 1].weight(): f32[H, D])]
    fn g(&self, x: &Tensor, i: usize) -> Result<Tensor> { let _ = i; Ok(x.clone()) }

    #[contract(self.layers[at].weight(): f32[H, D])]
    fn h(&self, x: &Tensor, at: f32) -> Result<Tensor> { let _ = at; Ok(x.clone()) }
}

fn main() {}
