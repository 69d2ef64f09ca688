use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::{BatchNorm, Conv2d};

// resnet18's first block of layer2 (64 -> 128 channels): the shortcut skips `downsample`.
struct BasicBlock {
    conv1: Conv2d,
    bn1: BatchNorm,
    conv2: Conv2d,
    bn2: BatchNorm,
}

impl BasicBlock {
    #[contract(
        xs: f32[B, 64, H, W],
        self.conv1.weight(): f32[128, 64, 3, 3],
        self.conv2.weight(): f32[128, 128, 3, 3],
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
