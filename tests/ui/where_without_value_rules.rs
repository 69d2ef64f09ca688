use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(input_ids: i64[B, T] where attention_mask, attention_mask: u8[B, T])]
fn f(input_ids: &Tensor, attention_mask: &Tensor) -> Result<Tensor> {
    let _ = attention_mask;
    Ok(input_ids.clone())
}

fn main() {}
