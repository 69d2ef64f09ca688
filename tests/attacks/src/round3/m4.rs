use candle_contracts::contract;
use candle_core::{Result, Tensor};

pub fn softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    x.sum_keepdim(1)
}

pub fn shrink(x: &Tensor) -> Result<Tensor> {
    x.sum_keepdim(1)
}

pub mod my_ops {
    use candle_core::{Result, Tensor};
    pub fn softmax(x: &Tensor, _d: usize) -> Result<Tensor> {
        x.sum_keepdim(1)
    }
}

pub mod inner {
    use super::my_ops as ops;
    use candle_core::{Result, Tensor};
    pub fn helper(x: &Tensor) -> Result<Tensor> {
        ops::softmax(x, 1)
    }
}

pub struct S;
impl S {
    pub fn shrink(x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}

// H1: body glob import shadows the file's helper
#[contract(x: f32[N, 4])]
pub fn h1(x: &Tensor) -> Result<Tensor> {
    use candle_nn::ops::*;
    let y = softmax_last_dim(x)?;
    y.narrow(1, 0, 4)
}

// H2: body-local fn shadows the file's helper
#[contract(x: f32[N, 4])]
pub fn h2(x: &Tensor) -> Result<Tensor> {
    fn shrink(x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
    let y = shrink(x)?;
    y.narrow(1, 0, 4)
}

// H3: helper in another module with its own `ops`
#[contract(x: f32[N, 4])]
pub fn h3(x: &Tensor) -> Result<Tensor> {
    use candle_nn::ops;
    let _ = ops::softmax(x, 1)?;
    let y = inner::helper(x)?;
    y.narrow(1, 0, 1)
}

// H4: associated fn of S named like the free helper
#[contract(x: f32[N, 4])]
pub fn h4(x: &Tensor) -> Result<Tensor> {
    let y = S::shrink(x)?;
    y.narrow(1, 0, 4)
}

// H5: a body glob of a module of the file
#[contract(x: f32[N, 4])]
pub fn h5(x: &Tensor) -> Result<Tensor> {
    use self::other::*;
    let y = shrink(x)?;
    y.narrow(1, 0, 4)
}
pub mod other {
    use candle_core::{Result, Tensor};
    pub fn shrink(x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}
