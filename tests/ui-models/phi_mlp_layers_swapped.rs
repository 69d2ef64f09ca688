use candle_contracts::contract;
use candle_core::{Module, Result, Tensor};
use candle_nn::{Activation, Linear};

// Phi's MLP with its two projections applied in the wrong order: the `[I, E]`-to-`E` layer
// first, on an input of width `E`, smaller than `I`.
#[contract(fc1: Linear[E -> I], fc2: Linear[I -> E], E < I)]
struct Mlp {
    fc1: Linear,
    fc2: Linear,
    act: Activation,
}

#[contract]
impl Module for Mlp {
    #[contract(xs: f32[B, T, E], return: f32[B, T, E])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        xs.apply(&self.fc2)?.apply(&self.act)?.apply(&self.fc1)
    }
}

fn main() {}
