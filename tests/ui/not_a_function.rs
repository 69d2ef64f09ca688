use candle_contracts::contract;

#[contract(x: f32[N])]
struct Batch {
    x: candle_core::Tensor,
}

fn main() {}
