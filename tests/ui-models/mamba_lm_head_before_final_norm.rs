use candle_contracts::contract;
use candle_core::{Module, Result, Tensor};
use candle_nn::{Embedding, Linear, RmsNorm};

pub struct State {
    pub hs: Vec<Tensor>,
    pub pos: usize,
}

// A stand-in for the residual block (its mixer left out): pre-norm and the residual.
pub struct ResidualBlock {
    norm: RmsNorm,
}

impl ResidualBlock {
    fn forward(&self, xs: &Tensor, _state: &mut State) -> Result<Tensor> {
        xs.apply(&self.norm)? + xs
    }
}

// Mamba's model (candle-transformers mamba.rs) at mamba-130m's sizes: 768 wide, a vocabulary
// of 50277 padded to 50280, the head tied to the embedding. The head runs before the final
// norm: `norm_f`'s 768 weights meet the 50280 logits.
#[contract(
    embedding: Embedding[50280, 768],
    norm_f: RmsNorm[768],
    lm_head: Linear[768 -> 50280],
)]
pub struct Model {
    embedding: Embedding,
    layers: Vec<ResidualBlock>,
    norm_f: RmsNorm,
    lm_head: Linear,
}

#[contract]
impl Model {
    #[contract(input_ids: u32[B] in 0..50280, return: f32[B, 50280])]
    pub fn forward(&self, input_ids: &Tensor, state: &mut State) -> Result<Tensor> {
        let _b_size = input_ids.dims1()?;
        let mut xs = self.embedding.forward(input_ids)?;
        for layer in self.layers.iter() {
            xs = layer.forward(&xs, state)?
        }
        state.pos += 1;
        xs.apply(&self.lm_head)?.apply(&self.norm_f)
    }
}

fn main() {}
