use candle_contracts::contract;

#[contract(x: f32[N])]
const fn f(x: &candle_core::Tensor) -> usize { let _ = x; 0 }

fn main() {}
