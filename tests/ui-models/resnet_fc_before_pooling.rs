use candle_contracts::contract;
use candle_core::{Result, Tensor, D};
use candle_nn::Linear;

// resnet's head: one spatial mean forgotten, the classifier runs on [B, 512, H].
#[contract(features: f32[B, 512, H, W], fc.weight(): f32[N, 512], return: f32[B, N])]
fn head(features: &Tensor, fc: &Linear) -> Result<Tensor> {
    let xs = features.mean(D::Minus1)?;
    xs.apply(fc)
}

fn main() {}
