use candle_contracts::contract;
use candle_core::{Result, Tensor};

const IMAGE_DIM: usize = 784;
const HIDDEN: usize = 128;

#[contract(xs: f32[B, IMAGE_DIM], w1: f32[HIDDEN, IMAGE_DIM])]
fn hidden(xs: &Tensor, w1: &Tensor) -> Result<Tensor> {
    xs.matmul(w1) // should be `&w1.t()?`
}

fn main() {}
