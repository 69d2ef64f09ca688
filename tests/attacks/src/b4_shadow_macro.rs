// a file-level macro_rules! named like a std macro (textual scope wins over the prelude)
use candle_contracts::contract;
use candle_core::{Result, Tensor};

macro_rules! assert {
    ($v:ident) => {
        $v += 4
    };
}

#[contract(x: f32[8, 4])]
pub fn caller(x: &Tensor) -> Result<Tensor> {
    let mut n = 4;
    assert!(n);
    x.reshape((n, 4))
}
