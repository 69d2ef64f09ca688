// cfg twins of an inline module: the one compiled out comes last
use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[cfg(not(any()))]
mod layer {
    use super::*;
    #[contract(x: f32[N, 4])]
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}

#[cfg(any())]
mod layer {
    use super::*;
    #[contract(x: f32[N, 8])]
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x.sqr()
    }
}

#[contract(x: f32[N, 4])]
pub fn caller(x: &Tensor) -> Result<Tensor> {
    layer::forward(x)
}
