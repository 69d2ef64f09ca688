use candle_contracts::contract;
use candle_core::{DType, Result, Tensor};

// BERT (candle-transformers bert.rs): `BertModel::forward` extends the padding mask to
// `[B, 1, 1, T]`, the layout the attention scores `[B, H, T, T]` broadcast against, before
// the encoder adds it. Handed on as it comes, `[B, T]`, it is two dims short.
#[contract(attention_mask: u8 | u32 | i64 | f32 [B, T], return: float[B, 1, 1, T])]
fn get_extended_attention_mask(attention_mask: &Tensor, dtype: DType) -> Result<Tensor> {
    let attention_mask = match attention_mask.rank() {
        3 => attention_mask.unsqueeze(1)?,
        2 => attention_mask.unsqueeze(1)?.unsqueeze(1)?,
        _ => candle_core::bail!("Wrong shape for input_ids or attention_mask"),
    };
    let attention_mask = attention_mask.to_dtype(dtype)?;
    (attention_mask.ones_like()? - &attention_mask)?.broadcast_mul(
        &Tensor::try_from(f32::MIN)?
            .to_device(attention_mask.device())?
            .to_dtype(dtype)?,
    )
}

#[contract(
    hidden_states: f32[B, T, E],
    attention_mask: f32[B, 1, _, T],
    return: f32[B, T, E],
)]
fn encoder(hidden_states: &Tensor, attention_mask: &Tensor) -> Result<Tensor> {
    hidden_states.broadcast_add(&attention_mask.sum_keepdim(3)?.squeeze(1)?)
}

#[contract(embedding_output: f32[B, T, E], attention_mask: u32[B, T], return: f32[B, T, E])]
fn forward(embedding_output: &Tensor, attention_mask: &Tensor) -> Result<Tensor> {
    let extended = get_extended_attention_mask(attention_mask, DType::F32)?;
    let raw = attention_mask.to_dtype(DType::F32)?;
    let _ = extended;
    encoder(embedding_output, &raw)
}

fn main() {}
