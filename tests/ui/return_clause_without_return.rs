use candle_contracts::contract;
use candle_core::Tensor;

#[contract(x: f32[N], return: f32[N])]
fn f(x: &Tensor) { let _ = x; }

fn main() {}
