use candle_contracts::contract;
use candle_core::{Result, Tensor};

// Stable Diffusion 1.5's UNet, up_blocks.1 (candle-transformers
// stable_diffusion/unet_2d_blocks.rs, `CrossAttnUpBlock2D`): the 1280-channel hidden states
// take the 640-channel skip connection concatenated on dim 0 (the batch) instead of dim 1
// (the channels).
#[contract(xs: f32[B, 1280, H, W], res_xs: f32[B, 640, H, W], return: f32[B, 1920, H, W])]
fn concat_skip(xs: &Tensor, res_xs: &Tensor) -> Result<Tensor> {
    Tensor::cat(&[xs, res_xs], 0)
}

fn main() {}
