use candle_contracts::{contract, nn};
use candle_core::{Result, Tensor};

// `nn` is `candle_contracts::nn` by the file's own `use`, which the macro reads.
#[contract(logits: f32[N, C], target: u32[N, 1])]
fn loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    nn::cross_entropy(logits, target)
}

#[contract(ids: u32[B, T], table: f32[V, E], return: f32[B, E])]
fn embed(ids: &Tensor, table: &Tensor) -> Result<Tensor> {
    nn::embedding(ids, table)
}

fn main() {}
