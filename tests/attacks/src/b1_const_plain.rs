// A plain const in an inline module whose `use super::*` brings `Tensor` (the parent's private
// `use`): the walk reads `D` as 4, so `(2 * D, 2)` matches `x`'s 8 columns. (It was a stray
// file with a real mismatch, `(D, 2)`, unseen while a glob brought only `pub` names.)
use candle_contracts::contract;
use candle_core::{DType, Device, Result, Tensor};

pub mod inner {
    use super::*;
    const D: usize = 4;

    #[contract(x: f32[N, 8])]
    pub fn caller(x: &Tensor) -> Result<Tensor> {
        let w = Tensor::zeros((2 * D, 2), DType::F32, &Device::Cpu)?;
        x.matmul(&w)
    }
}
