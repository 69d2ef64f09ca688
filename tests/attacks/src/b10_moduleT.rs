// (CLI crate mode) a trait method not in scope at the call site; another trait's is called
use candle_contracts::contract;
use candle_core::{Module, Result, Tensor};
use candle_nn::ModuleT;

pub struct Model;

mod a {
    use super::*;
    pub trait Fwd {
        fn forward_t(&self, x: &Tensor, train: bool) -> Result<Tensor>;
    }
    impl Fwd for super::Model {
        #[contract(x: f32[N, 8])]
        fn forward_t(&self, x: &Tensor, _train: bool) -> Result<Tensor> {
            x.sqr()
        }
    }
}

impl Module for Model {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        Ok(xs.clone())
    }
}

#[contract(x: f32[N, 4])]
pub fn caller(m: &Model, x: &Tensor) -> Result<Tensor> {
    m.forward_t(x, false)
}
