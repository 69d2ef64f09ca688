use candle_contracts::contract;
use candle_core::{Module, Result, Tensor};
use candle_nn::{Activation, Linear};

// mistral-7B's MLP, its sizes written out: `up_proj` and `down_proj` swapped.
#[allow(clippy::upper_case_acronyms)]
struct MLP {
    gate_proj: Linear,
    up_proj: Linear,
    down_proj: Linear,
    act_fn: Activation,
}

impl Module for MLP {
    #[contract(
        xs: f32[B, T, 4096],
        self.gate_proj.weight(): f32[14336, 4096],
        self.up_proj.weight(): f32[14336, 4096],
        self.down_proj.weight(): f32[4096, 14336],
        return: f32[B, T, 4096],
    )]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let lhs = xs.apply(&self.gate_proj)?.apply(&self.act_fn)?;
        let rhs = xs.apply(&self.down_proj)?;
        (lhs * rhs)?.apply(&self.up_proj)
    }
}

fn main() {}
