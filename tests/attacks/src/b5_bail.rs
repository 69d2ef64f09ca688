// a file-level `bail!` that does not diverge
use candle_contracts::contract;
use candle_core::{Result, Tensor};

macro_rules! bail {
    ($($t:tt)*) => {
        eprintln!($($t)*)
    };
}

#[contract(x: f32[N, 8])]
pub fn forward8(x: &Tensor) -> Result<Tensor> {
    x.sqr()
}

#[contract(x: f32[N, 4], y: f32[N, 8])]
pub fn caller(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let mut t = x.clone();
    if y.dim(1)? == 8 {
        bail!("switching to y");
        t = y.clone();
    }
    forward8(&t)
}
