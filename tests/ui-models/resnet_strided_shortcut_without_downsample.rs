use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::{BatchNorm, Conv2d};

// A stride-2 block of 64 channels on resnet's 56 x 56 maps: the shortcut skips `downsample`
// (the 1 x 1 convolution of stride 2), so it adds the 56 x 56 input to a 28 x 28 output.
struct BasicBlock {
    conv1: Conv2d,
    bn1: BatchNorm,
    conv2: Conv2d,
    bn2: BatchNorm,
}

impl BasicBlock {
    #[contract(
        xs: f32[B, 64, 56, 56],
        self.conv1: Conv2d[64 -> 64, 3] with stride = 2, padding = 1, dilation = 1,
        self.conv2: Conv2d[64 -> 64, 3] with stride = 1, padding = 1, dilation = 1,
    )]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let ys = xs
            .apply(&self.conv1)?
            .apply_t(&self.bn1, false)?
            .relu()?
            .apply(&self.conv2)?
            .apply_t(&self.bn2, false)?;
        (xs + ys)?.relu()
    }
}

fn main() {}
