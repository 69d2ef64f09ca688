use candle_contracts::contract;
use candle_core::{Module, Result, Tensor};
use candle_nn::Linear;

// Stable Diffusion's `GeGlu` (candle-transformers stable_diffusion/attention.rs) split on the
// tokens instead of the channels, written twice: two structs whose `forward` bodies are the
// same tokens. Each is found where it stands in the file, and each is checked.
#[contract(proj: Linear[4 -> 8])]
struct GeGlu {
    proj: Linear,
}

#[contract]
impl GeGlu {
    #[contract(xs: f32[B, T, 4], return: f32[B, T, 4])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let parts = self.proj.forward(xs)?.chunk(2, 1)?;
        &parts[0] * parts[1].gelu()?
    }
}

#[contract(proj: Linear[4 -> 8])]
struct GeGluTwin {
    proj: Linear,
}

#[contract]
impl GeGluTwin {
    #[contract(xs: f32[B, T, 4], return: f32[B, T, 4])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let parts = self.proj.forward(xs)?.chunk(2, 1)?;
        &parts[0] * parts[1].gelu()?
    }
}

fn main() {}
