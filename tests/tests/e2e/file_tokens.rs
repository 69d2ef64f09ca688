//! The macro reads its whole file; where the construction scan runs (a contract on a method of
//! a struct with private fields), a type alias or an `unsafe` block elsewhere in the file made
//! it panic ("compiler/fallback mismatch"): a correct program that did not compile.

use candle_contracts::contract;
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{Linear, VarBuilder};

#[allow(dead_code)]
type Id = u8;

#[allow(dead_code)]
fn first_byte(bytes: &[u8]) -> u8 {
    // SAFETY: the caller gives at least one byte.
    unsafe { *bytes.get_unchecked(0) }
}

pub struct Model {
    proj: Linear,
}

impl Model {
    pub fn new(vb: VarBuilder<'_>) -> Result<Self> {
        Ok(Self {
            proj: candle_nn::linear(10, 4, vb)?,
        })
    }

    #[contract(x: f32[B, 10])]
    pub fn run(&self, x: &Tensor) -> Result<Tensor> {
        self.proj.forward(x)
    }
}

#[test]
fn a_file_with_a_type_alias_and_unsafe_code_compiles_and_runs() {
    let vb = VarBuilder::zeros(DType::F32, &Device::Cpu);
    let model = Model::new(vb).unwrap();
    let x = Tensor::ones((2, 10), DType::F32, &Device::Cpu).unwrap();
    assert_eq!(model.run(&x).unwrap().dims(), [2, 4]);
}
