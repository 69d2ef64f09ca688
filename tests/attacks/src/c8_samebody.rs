// two functions with identical bodies in two inline modules, with different sibling contracts
use candle_contracts::contract;
use candle_core::{Result, Tensor};

pub mod a {
    use super::*;
    #[contract(x: f32[N, 4])]
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
    #[contract(x: f32[N, 4])]
    pub fn caller(x: &Tensor) -> Result<Tensor> {
        forward(x)
    }
}

pub mod b {
    use super::*;
    #[contract(x: f32[N, 8])]
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x.sqr()
    }
    #[contract(x: f32[N, 8])]
    pub fn caller(x: &Tensor) -> Result<Tensor> {
        forward(x)
    }
}
