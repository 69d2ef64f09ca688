use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(xs: f32[B, 784], w: f32[512, 128])]
fn layer(xs: &Tensor, w: &Tensor) -> Result<Tensor> {
    let h = xs.matmul(w)?;
    h.relu()
}

fn main() {}
