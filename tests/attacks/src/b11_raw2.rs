// raw identifiers the other way round, and as a parameter
use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[N, 8])]
pub fn forward(x: &Tensor) -> Result<Tensor> {
    x.sqr()
}

#[contract(x: f32[N, 4])]
pub fn caller_a(x: &Tensor) -> Result<Tensor> {
    let forward = |t: &Tensor| t.sqrt();
    r#forward(x)
}

#[contract(x: f32[N, 4])]
pub fn caller_b(x: &Tensor, r#forward: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    forward(x)
}
