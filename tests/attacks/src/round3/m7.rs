use candle_contracts::contract;
use candle_core::{DType, Result, Tensor};
#[contract(x: f32[N, 4])]
pub fn k1(x: &Tensor) -> Result<Tensor> {
    #[cfg(any())]
    x.narrow(1, 0, 9)?;
    Ok(x.clone())
}
#[contract(x: f32[N, 4], w: f32[4, 3])]
pub fn k2(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    #[cfg(feature = "cuda")]
    let x = x.to_dtype(DType::BF16)?;
    x.matmul(w)
}
#[contract(x: f32[N, 4], w: f32[4, 3])]
pub fn k3(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    #[cfg(feature = "cuda")]
    let x = x.reshape((x.dim(0)?, 2, 2))?;
    x.matmul(w)
}
pub fn helper(x: &Tensor) -> Result<Tensor> {
    #[cfg(feature = "cuda")]
    let x = x.sum_keepdim(1)?;
    Ok(x.clone())
}
#[contract(x: f32[N, 4], w: f32[4, 3])]
pub fn k4(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    helper(x)?.matmul(w)
}
#[contract(x: f32[N, 4], w: f32[4, 3])]
pub fn k5(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let mut h = x.clone();
    #[cfg(feature = "cuda")]
    {
        h = h.sum_keepdim(1)?;
    }
    h.matmul(w)
}
