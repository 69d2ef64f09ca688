use candle_contracts::contract;
use candle_core::{Module, Result, Tensor};
use candle_nn::{Activation, Linear};

// t5-small's feed-forward block, its sizes written out: `wo` applied before `wi`.
struct T5DenseActDense {
    wi: Linear,
    wo: Linear,
    act: Activation,
}

impl Module for T5DenseActDense {
    #[contract(
        xs: f32[B, T, 512],
        self.wi.weight(): f32[2048, 512],
        self.wo.weight(): f32[512, 2048],
        return: f32[B, T, 512],
    )]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let xs = self.wo.forward(xs)?;
        let xs = self.act.forward(&xs)?;
        let xs = self.wi.forward(&xs)?;
        Ok(xs)
    }
}

fn main() {}
