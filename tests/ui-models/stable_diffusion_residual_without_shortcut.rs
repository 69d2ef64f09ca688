use candle_contracts::contract;
use candle_core::{Module, Result, Tensor, D};
use candle_nn as nn;
use candle_nn::Conv2d;

// Stable Diffusion 1.5's UNet, down_blocks.1.resnets.0 (candle-transformers
// stable_diffusion/resnet.rs): 320 channels in, 640 out, a 1280-wide time embedding. The
// residual adds the block's input, skipping `conv_shortcut`: `[B, 320, H, W] + [B, 640, H, W]`.
#[contract(
    conv1: Conv2d[320 -> 640, 3] with stride = 1, padding = 1, dilation = 1, groups = 1,
    conv2: Conv2d[640 -> 640, 3] with stride = 1, padding = 1, dilation = 1, groups = 1,
    time_emb_proj?: Linear[1280 -> 640],
    conv_shortcut?: Conv2d[320 -> 640, 1],
)]
struct ResnetBlock2D {
    norm1: nn::GroupNorm,
    conv1: Conv2d,
    norm2: nn::GroupNorm,
    conv2: Conv2d,
    time_emb_proj: Option<nn::Linear>,
    conv_shortcut: Option<Conv2d>,
    output_scale_factor: f64,
}

#[contract]
impl ResnetBlock2D {
    #[contract(xs: f32[B, 320, H, W], temb: f32[B, 1280], return: f32[B, 640, H, W])]
    fn forward(&self, xs: &Tensor, temb: Option<&Tensor>) -> Result<Tensor> {
        let shortcut_xs = xs;
        let xs = self.norm1.forward(xs)?;
        let xs = self.conv1.forward(&nn::ops::silu(&xs)?)?;
        let xs = match (temb, &self.time_emb_proj) {
            (Some(temb), Some(time_emb_proj)) => time_emb_proj
                .forward(&nn::ops::silu(temb)?)?
                .unsqueeze(D::Minus1)?
                .unsqueeze(D::Minus1)?
                .broadcast_add(&xs)?,
            _ => xs,
        };
        let xs = self
            .conv2
            .forward(&nn::ops::silu(&self.norm2.forward(&xs)?)?)?;
        (shortcut_xs + xs)? / self.output_scale_factor
    }
}

fn main() {}
