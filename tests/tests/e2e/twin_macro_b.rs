//! The other half of `twin_macro_a.rs`: `Narrow::forward` has `A::forward`'s tokens, in a
//! `#[contract] impl` that macro writes.

use candle_contracts::contract;
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::Linear;

pub struct Narrow {
    pub proj: Linear,
}

crate::twin_macro_a::contracted_impl! {
    Narrow,
    #[contract(xs: f32[B, T, 4], return: f32[B, T, 4])]
    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.proj.forward(xs)
    }
}

#[test]
fn each_twin_runs_with_its_own_layer() -> Result<()> {
    let dev = Device::Cpu;
    let linear = |out: usize| -> Result<Linear> {
        Ok(Linear::new(
            Tensor::zeros((out, 4), DType::F32, &dev)?,
            None,
        ))
    };
    let xs = Tensor::zeros((2, 3, 4), DType::F32, &dev)?;
    let a = crate::twin_macro_a::A { proj: linear(8)? };
    assert_eq!(a.forward(&xs)?.dims(), &[2, 3, 8]);
    let narrow = Narrow { proj: linear(4)? };
    assert_eq!(narrow.forward(&xs)?.dims(), &[2, 3, 4]);
    Ok(())
}
