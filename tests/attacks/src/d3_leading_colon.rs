// a leading `::` names the extern crate, not the module of the same name
use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[allow(dead_code)]
mod candle_nn {
    pub mod ops {
        use candle_contracts::contract;
        use candle_core::{Result, Tensor};
        #[contract(x: f32[N, 4])]
        pub fn softmax(x: &Tensor, _dim: usize) -> Result<Tensor> {
            Ok(x.clone())
        }
    }
}

#[contract(x: f32[N, 8])]
pub fn caller_a(x: &Tensor) -> Result<Tensor> {
    ::candle_nn::ops::softmax(x, 1)
}

pub mod sub {
    use ::candle_nn::ops;
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};
    #[contract(x: f32[N, 8])]
    pub fn caller_b(x: &Tensor) -> Result<Tensor> {
        ops::softmax(x, 1)
    }
}
