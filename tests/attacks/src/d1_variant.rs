// an enum variant and an associated fn of the same name: `Kind::Wrap(..)` is the variant
use candle_contracts::contract;
use candle_core::{Result, Tensor};

pub enum Kind {
    Wrap(Tensor),
}

impl Kind {
    #[allow(non_snake_case)]
    #[contract(x: f32[N, 8])]
    pub fn Wrap(x: &Tensor) -> Result<Tensor> {
        x.sqr()
    }
}

#[contract(x: f32[N, 4])]
pub fn caller(x: &Tensor) -> Result<Kind> {
    Ok(Kind::Wrap(x.clone()))
}
