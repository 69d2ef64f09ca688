use candle_contracts::check;
use candle_core::{Device, Tensor};

fn main() {
    let target = Tensor::ones((2, 3), candle_core::DType::F32, &Device::Cpu).unwrap();
    let ids = Tensor::ones(3, candle_core::DType::I64, &Device::Cpu).unwrap();
    let _ = check!({target.sum(1).unwrap()}: f32[N] in 0.999..=1.001);
    let _ = check!(ids: i64[N] in 0..3 where {ids.ge(0i64).unwrap()});
}
