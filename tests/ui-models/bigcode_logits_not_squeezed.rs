use candle_contracts::contract;
use candle_core::{Module, Result, Tensor};
use candle_nn::{LayerNorm, Linear};

// GPT-BigCode's last step: the logits of the last position keep their sequence dim.
struct GPTBigCode {
    ln_f: LayerNorm,
    lm_head: Linear,
}

impl GPTBigCode {
    #[contract(
        hidden_states: f32[B, T, E],
        self.ln_f.weight(): f32[E],
        self.lm_head.weight(): f32[V, E],
        return: f32[B, V],
    )]
    fn logits(&mut self, hidden_states: &Tensor) -> Result<Tensor> {
        let (_b_sz, seq_len, _) = hidden_states.dims3()?;
        let hidden_states = self.ln_f.forward(hidden_states)?;
        let hidden_states = hidden_states.narrow(1, seq_len - 1, 1)?;
        let logits = self.lm_head.forward(&hidden_states)?;
        Ok(logits)
    }
}

fn main() {}
