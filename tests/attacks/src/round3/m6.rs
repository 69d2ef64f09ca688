use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::{Conv1d, LayerNorm, Linear, Module};

pub struct Head {
    pub head: Linear,
    pub conv: Conv1d,
    pub ln: LayerNorm,
}

impl Head {
    // L1: Linear[4 -> 1] with a bias of 3 broadcasts to [N, 3]
    #[contract(xs: f32[N, 4], self.head: Linear[4 -> 1], return: f32[N, 3])]
    pub fn l1(&self, xs: &Tensor) -> Result<Tensor> {
        self.head.forward(xs)
    }

    // L2: Conv1d[2 -> 1, 1] with a bias of 3
    #[contract(xs: f32[B, 2, L], self.conv: Conv1d[2 -> 1, 1], return: f32[B, 3, L])]
    pub fn l2(&self, xs: &Tensor) -> Result<Tensor> {
        self.conv.forward(xs)
    }

    // L3: LayerNorm[1] with a bias of 3 on a strided [N, 1] input
    #[contract(xs: f32[N, 1], self.ln: LayerNorm[1])]
    pub fn l3(&self, xs: &Tensor) -> Result<Tensor> {
        let y = self.ln.forward(xs)?;
        y.narrow(1, 0, 3)
    }
}
