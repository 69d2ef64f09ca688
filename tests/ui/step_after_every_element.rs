use candle_contracts::contract;
use candle_core::{Result, Tensor};

struct Mlp {
    layers: Vec<candle_nn::Linear>,
}

impl Mlp {
    #[contract(self.layers[..].bias()?: f32[H])]
    fn f(&self, x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }
}

fn main() {}
