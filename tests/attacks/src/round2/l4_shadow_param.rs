// a local shadows the parameter the clause names
use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::{Linear, Module};

#[contract(x: f32[N, 16], proj.weight(): f32[4, 8])]
pub fn shadow(proj: &Linear, other: &Linear, x: &Tensor) -> Result<Tensor> {
    let proj = other;
    proj.forward(x)
}

#[contract(x: f32[N, 16], proj.weight(): f32[4, 8])]
pub fn shadow_closure(proj: &Linear, other: &Linear, x: &Tensor) -> Result<Tensor> {
    let f = |proj: &Linear| proj.forward(x);
    f(other)
}

#[contract(x: f32[N, 16], proj.weight(): f32[4, 8])]
pub fn shadow_match(proj: &Linear, other: Option<&Linear>, x: &Tensor) -> Result<Tensor> {
    match other {
        Some(proj) => proj.forward(x),
        None => x.clone().sqr(),
    }
}

#[contract(x: f32[N, 16], proj.weight(): f32[4, 8])]
pub fn shadow_iflet(proj: &Linear, other: Option<&Linear>, x: &Tensor) -> Result<Tensor> {
    if let Some(proj) = other {
        return proj.forward(x);
    }
    x.sqr()
}

#[contract(x: f32[N, 16], proj.weight(): f32[4, 8])]
pub fn shadow_for(proj: &Linear, others: &[Linear], x: &Tensor) -> Result<Tensor> {
    let mut y = x.clone();
    for proj in others {
        y = proj.forward(x)?;
    }
    Ok(y)
}
