use candle_contracts::check;
use candle_core::{DType, Device, Tensor};

fn main() {
    let x = Tensor::zeros(3, DType::F32, &Device::Cpu).unwrap();
    let _ = check!(x: f32[N], return: f32[N], on_violation = panic);
}
