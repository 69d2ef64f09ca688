// a function inside a function, named like a contracted sibling; a body const shadowing a file const
use candle_contracts::contract;
use candle_core::{Result, Tensor};

const D: usize = 8;

#[contract(x: f32[N, 8])]
pub fn forward(x: &Tensor) -> Result<Tensor> {
    x.sqr()
}

#[contract(x: f32[N, 4])]
pub fn caller(x: &Tensor) -> Result<Tensor> {
    fn forward(x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
    forward(x)
}

#[contract(x: f32[4, 4])]
pub fn consts(x: &Tensor) -> Result<Tensor> {
    let y = {
        const D: usize = 4;
        x.reshape((4, D))?
    };
    let _ = D;
    Ok(y)
}

#[contract(x: f32[4, 4])]
pub fn outer(x: &Tensor) -> Result<Tensor> {
    #[contract(x: f32[4, 4])]
    fn inner(x: &Tensor) -> Result<Tensor> {
        const D: usize = 4;
        x.reshape((4, D))
    }
    inner(x)
}
