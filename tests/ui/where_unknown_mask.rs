use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(input_ids: i64[B, T] in 0..V where atention_mask, embeddings: f32[V, D])]
fn f(input_ids: &Tensor, attention_mask: &Tensor, embeddings: &Tensor) -> Result<Tensor> {
    let _ = (attention_mask, embeddings);
    Ok(input_ids.clone())
}

fn main() {}
