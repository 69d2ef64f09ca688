use candle_contracts::contract;
use candle_core::{Module, Result, Tensor};

// The crate's own `RmsNorm`, not candle-nn's: it has no `weight()` for the layer clause to read.
struct RmsNorm {
    scale: Tensor,
    eps: f64,
}

impl Module for RmsNorm {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        candle_nn::ops::rms_norm(xs, &self.scale, self.eps as f32)
    }
}

#[contract(norm: RmsNorm[E])]
struct Block {
    norm: RmsNorm,
}

fn main() {}
