use candle_contracts::contract;
use candle_core::{Result, Tensor};

// `bias` has one dim fewer than `xs`: `add` needs the same shape (`broadcast_add` would do).
#[contract(xs: f32[N, D], bias: f32[D])]
fn shift(xs: &Tensor, bias: &Tensor) -> Result<Tensor> {
    xs.add(bias)
}

fn main() {}
