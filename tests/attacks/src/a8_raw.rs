// a local `r#forward` shadows the sibling `forward`: the same identifier
use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[N, 8])]
pub fn forward(x: &Tensor) -> Result<Tensor> {
    x.sqr()
}

#[contract(x: f32[N, 4])]
pub fn caller(x: &Tensor) -> Result<Tensor> {
    let r#forward = |t: &Tensor| t.sqrt();
    forward(x)
}
