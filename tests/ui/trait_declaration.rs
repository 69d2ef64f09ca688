use candle_contracts::contract;
use candle_core::{Result, Tensor};

trait Model {
    #[contract(xs: f32[N, D])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor>;
}

fn main() {}
