use candle_contracts::contract;
use candle_core::{Module, Result, Tensor};
use candle_nn::Conv2d;

// ConvNeXt's stem, a 4 x 4 patchify convolution from 3 channels, given a one-channel image
// (a grayscale batch not repeated to RGB).
#[contract(conv: Conv2d[3 -> C, 4] with stride = 4, padding = 0, dilation = 1, groups = 1)]
struct Stem {
    conv: Conv2d,
}

#[contract]
impl Module for Stem {
    #[contract(xs: f32[B, 1, H, W])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        xs.apply(&self.conv)
    }
}

fn main() {}
