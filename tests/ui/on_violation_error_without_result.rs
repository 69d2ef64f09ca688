use candle_contracts::contract;
use candle_core::Tensor;

#[contract(x: f32[N], on_violation = error)]
fn f(x: &Tensor) -> Tensor { x.clone() }

fn main() {}
