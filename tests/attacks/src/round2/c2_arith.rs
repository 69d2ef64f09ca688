// signed integer division and remainder truncate toward zero in Rust
use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[2, 7])]
pub fn negdiv(x: &Tensor) -> Result<Tensor> {
    let k = ((7i64 - 14) / 2 + 10) as usize; // -3 + 10 = 7
    x.reshape((2, k))
}

#[contract(x: f32[2, 7])]
pub fn negrem(x: &Tensor) -> Result<Tensor> {
    let k = ((7i64 - 14) % 4 + 10) as usize; // -3 + 10 = 7
    x.reshape((2, k))
}

#[contract(x: f32[2, 7])]
pub fn floor_then_mul(x: &Tensor) -> Result<Tensor> {
    let k = 7 / 2 * 2 + 1; // 7
    x.reshape((2, k))
}

#[contract(x: f32[2, 8])]
pub fn wrapping(x: &Tensor) -> Result<Tensor> {
    let k = (264u32 as u8) as usize; // 8
    x.reshape((2, k))
}

#[contract(x: f32[2, 8])]
pub fn shift(x: &Tensor) -> Result<Tensor> {
    let k = 1usize << 3;
    x.reshape((2, k))
}

#[contract(x: f32[2, 8])]
pub fn float_trunc(x: &Tensor) -> Result<Tensor> {
    let k = (8.9f64) as usize;
    x.reshape((2, k))
}

#[contract(x: f32[2, 8])]
pub fn signed_cast(x: &Tensor) -> Result<Tensor> {
    let k = (3i8 - 11) as u8 as usize; // -8 as u8 = 248
    let j = k - 240;
    x.reshape((2, j))
}

#[contract(x: f32[2, N])]
pub fn dims_arith(x: &Tensor) -> Result<Tensor> {
    let (_, n) = x.dims2()?;
    let m = (n as i64 - 2 * n as i64) / 2; // -n/2 toward zero
    let k = (n as i64 + 2 * m) as usize; // n odd: 1; n even: 0
    x.narrow(1, 0, k)
}
