use candle_contracts::contract;
use candle_core::{Result, Tensor};

struct Layer {
    weight: Tensor,
}

impl Layer {
    #[contract(self.weight?: f32[O, I])]
    fn f(&self, x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }
}

fn main() {}
