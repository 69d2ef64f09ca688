// async callers and callees
use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[N, 8])]
pub async fn forward(x: &Tensor) -> Result<Tensor> {
    x.sqr()
}

#[contract(x: f32[N, 8])]
pub async fn caller(x: &Tensor) -> Result<Tensor> {
    let fut = forward(x);
    let y = fut.await?;
    forward(&y).await
}
