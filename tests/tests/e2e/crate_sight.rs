//! The macro reads the crate it expands in: a struct's contract in another file of the crate
//! is taken by its `#[contract] impl` here (the guard checks the struct's clauses on each call),
//! and a method of that struct behind `&mut self`, in another file, is known at compile time.

mod layer;

use candle_contracts::contract;
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::Linear;

#[contract]
impl layer::Block {
    #[contract(xs: f32[B, E], return: f32[B, E])]
    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.proj.forward(xs)
    }
}

/// A model whose layer (another file's type) is reached behind `&mut self`.
pub struct Model {
    cache: layer::Cached,
}

impl Model {
    #[contract(xs: f32[B, E], return: f32[B, E])]
    pub fn step(&mut self, xs: &Tensor) -> Result<Tensor> {
        let ys = self.cache.step(xs)?;
        ys + xs
    }
}

fn linear(n: usize) -> Linear {
    Linear::new(
        Tensor::ones((n, n), DType::F32, &Device::Cpu).unwrap(),
        None,
    )
}

#[test]
fn a_struct_contract_in_another_file_is_taken_and_checked() {
    let block = layer::Block { proj: linear(4) };
    let xs = Tensor::ones((2, 4), DType::F32, &Device::Cpu).unwrap();
    assert_eq!(block.forward(&xs).unwrap().dims(), &[2, 4]);
    // `proj: Linear[E -> E]` with `E` bound by `xs` to 3: a violation before the body.
    let xs = Tensor::ones((2, 3), DType::F32, &Device::Cpu).unwrap();
    let message = block.forward(&xs).unwrap_err().to_string();
    assert!(message.contains("proj"), "{message}");
}

#[test]
fn a_method_behind_mut_self_in_another_file_runs() {
    let mut model = Model {
        cache: layer::Cached { steps: 0 },
    };
    let xs = Tensor::ones((2, 4), DType::F32, &Device::Cpu).unwrap();
    let ys = model.step(&xs).unwrap();
    assert_eq!(ys.to_vec2::<f32>().unwrap()[0], [3.0; 4]);
    assert_eq!(model.cache.steps, 1);
}
