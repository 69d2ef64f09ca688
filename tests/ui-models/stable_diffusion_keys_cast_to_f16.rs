use candle_contracts::contract;
use candle_core::{DType, Result, Tensor, D};
use candle_nn as nn;

// Stable Diffusion's VAE attention block (candle-transformers stable_diffusion/attention.rs,
// `AttentionBlock`) at 512 channels, one head: the keys are cast to f16 to save memory, the
// queries stay f32, and the scores' matmul takes two dtypes.
#[contract(num_heads = NH, channels = C, NH == 1, C == 512)]
struct AttentionBlock {
    num_heads: usize,
    channels: usize,
}

#[contract]
impl AttentionBlock {
    #[contract(
        query_states: f32[B, NH, T, 512],
        key_states: f32[B, NH, T, 512],
        value_states: f32[B, NH, T, 512],
        return: f32[B, NH, T, 512],
    )]
    fn attend(
        &self,
        query_states: &Tensor,
        key_states: &Tensor,
        value_states: &Tensor,
    ) -> Result<Tensor> {
        let query_states = query_states.to_dtype(DType::F32)?;
        let key_states = key_states.to_dtype(DType::F16)?;
        let value_states = value_states.to_dtype(DType::F32)?;
        // scale is applied twice, hence the -0.25 here rather than -0.5.
        let scale = f64::powf(self.channels as f64 / self.num_heads as f64, -0.25);
        let attention_scores = (query_states * scale)?.matmul(&(key_states.t()? * scale)?)?;
        let attention_probs = nn::ops::softmax(&attention_scores, D::Minus1)?;
        attention_probs.matmul(&value_states)
    }
}

fn main() {}
