// a const under cfg that is compiled out, leaving the name to a glob import
use candle_contracts::contract;
use candle_core::{Result, Tensor};

pub const D: usize = 4;

pub mod inner {
    use super::*;

    #[cfg(any())]
    const D: usize = 8;

    #[contract(x: f32[4, 4])]
    pub fn caller(x: &Tensor) -> Result<Tensor> {
        x.reshape((4, D))
    }
}
