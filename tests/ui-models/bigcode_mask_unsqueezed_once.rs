use candle_contracts::contract;
use candle_core::{IndexOp, Result, Tensor};

// GPT-BigCode's multi-query mask: unsqueezed for the batch, not for the heads.
struct Block;

impl Block {
    #[contract(hidden_states: f32[B, T, E], attention_mask: u8[1, T, 1, S], return: f32[B, T, E])]
    fn forward(&mut self, hidden_states: &Tensor, attention_mask: &Tensor) -> Result<Tensor> {
        let _ = attention_mask;
        Ok(hidden_states.clone())
    }
}

#[contract(hidden_states: f32[B, T, E], bias: u8[P, P])]
fn run(
    block: &mut Block,
    hidden_states: &Tensor,
    bias: &Tensor,
    past_len: usize,
) -> Result<Tensor> {
    let (_b_sz, seq_len, _) = hidden_states.dims3()?;
    let key_len = past_len + seq_len;
    let attention_mask = bias.i((past_len..key_len, ..key_len))?.unsqueeze(0)?;
    block.forward(hidden_states, &attention_mask)
}

fn main() {}
