use candle_contracts::contract;
use candle_core::{Result, Tensor};

struct Mlp {
    layers: Vec<candle_nn::Linear>,
}

impl Mlp {
    #[contract(self.layers[i].weight(): f32[H, D])]
    fn f(&self, x: &Tensor, i: usize) -> Result<Tensor> { let _ = i; Ok(x.clone()) }
}

fn main() {}
