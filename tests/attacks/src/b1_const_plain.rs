// sanity for a4: a plain const in an inline module, found by the macro?
use candle_contracts::contract;
use candle_core::{DType, Device, Result, Tensor};

pub mod inner {
    use super::*;
    const D: usize = 4;

    #[contract(x: f32[N, 8])]
    pub fn caller(x: &Tensor) -> Result<Tensor> {
        let w = Tensor::zeros((D, 2), DType::F32, &Device::Cpu)?;
        x.matmul(&w)
    }
}
