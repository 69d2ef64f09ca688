use candle_contracts::contract;
use candle_core::{Module, Result, Tensor};
use candle_nn::{self as nn, Linear};

#[derive(Debug, Clone, Copy)]
pub enum Activation {
    QuickGelu,
}

impl Module for Activation {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        match self {
            Activation::QuickGelu => xs * nn::ops::sigmoid(&(xs * 1.702f64)?)?,
        }
    }
}

// CLIP's text MLP (candle-transformers clip/text_model.rs) at vit-base-patch32's sizes, 512
// wide with 2048 inside: `fc2` runs first, on the 512 features `fc1` takes.
#[contract(fc1: Linear[512 -> 2048], fc2: Linear[2048 -> 512])]
struct ClipMlp {
    fc1: Linear,
    fc2: Linear,
    activation: Activation,
}

#[contract]
impl ClipMlp {
    #[contract(xs: f32[B, T, 512], return: f32[B, T, 512])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let xs = self.fc2.forward(xs)?;
        self.fc1.forward(&self.activation.forward(&xs)?)
    }
}

fn main() {}
