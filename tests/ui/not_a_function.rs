use candle_contracts::contract;

#[contract(x: f32[N])]
enum Batch {
    Images(candle_core::Tensor),
}

fn main() {}
