use candle_contracts::contract;
use candle_core::{Module, Result, Tensor, D};

// Stable Diffusion's sinusoidal time embedding (candle-transformers stable_diffusion/
// embeddings.rs, `Timesteps`), its body as candle writes it, for an odd channel count: the
// zeros meant for the missing last channel go to dim -2 of the `[B, 2 * (NC / 2)]` embedding,
// the batch dim, so the result has `B + 1` rows, never the `[B, NC]` the caller needs.
#[contract(num_channels = NC, NC % 2 == 1)]
pub struct Timesteps {
    num_channels: usize,
    flip_sin_to_cos: bool,
    downscale_freq_shift: f64,
}

#[contract]
impl Module for Timesteps {
    #[contract(xs: f32[B], return: f32[B, NC])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let half_dim = (self.num_channels / 2) as u32;
        let exponent = (Tensor::arange(0, half_dim, xs.device())?
            .to_dtype(candle_core::DType::F32)?
            * -f64::ln(10000.))?;
        let exponent = (exponent / (half_dim as f64 - self.downscale_freq_shift))?;
        let emb = exponent.exp()?.to_dtype(xs.dtype())?;
        // emb = timesteps[:, None].float() * emb[None, :]
        let emb = xs.unsqueeze(D::Minus1)?.broadcast_mul(&emb.unsqueeze(0)?)?;
        let (cos, sin) = (emb.cos()?, emb.sin()?);
        let emb = if self.flip_sin_to_cos {
            Tensor::cat(&[&cos, &sin], D::Minus1)?
        } else {
            Tensor::cat(&[&sin, &cos], D::Minus1)?
        };
        if self.num_channels % 2 == 1 {
            emb.pad_with_zeros(D::Minus2, 0, 1)
        } else {
            Ok(emb)
        }
    }
}

fn main() {}
