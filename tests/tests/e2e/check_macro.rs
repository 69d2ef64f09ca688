//! `check!`: the clauses inline, for intermediate tensors and data-loader batches.

use candle_contracts::{check, contract, ContractError, Rule};
use candle_core::{DType, Device, Tensor};

struct Batch {
    images: Tensor,
    labels: Tensor,
}

fn load(n: usize, last_label: u8) -> Batch {
    let mut labels = vec![0u8; n];
    labels[n - 1] = last_label;
    Batch {
        images: Tensor::zeros((n, 64), DType::F32, &Device::Cpu).unwrap(),
        labels: Tensor::from_vec(labels, n, &Device::Cpu).unwrap(),
    }
}

fn step(batch: &Batch, classes: usize) -> Result<usize, ContractError> {
    check!(batch.images: f32[N, 64] in 0.0..=16.0, batch.labels: u8[N] in 0..{classes})?;
    Ok(batch.images.dim(0).unwrap())
}

#[test]
fn check_on_a_batch_struct() {
    assert_eq!(step(&load(5, 9), 10).unwrap(), 5);
    let error = step(&load(5, 10), 10).unwrap_err();
    let violation = &error.violations()[0];
    assert_eq!(
        (violation.argument(), violation.index()),
        ("batch.labels", Some(&[4][..]))
    );
    assert_eq!(error.function(), "check!");
    assert!(
        error
            .to_string()
            .contains("batch.labels[4] = 10, expected 0..{classes}"),
        "{error}"
    );
}

#[test]
fn check_binds_dims_across_variables() {
    let x = Tensor::zeros((3, 784), DType::F32, &Device::Cpu).unwrap();
    let y = Tensor::zeros(4, DType::U8, &Device::Cpu).unwrap();
    let error = check!(x: f32[N, 784], y: u8[N] in 0..10).unwrap_err();
    assert_eq!(error.violations()[0].rule(), Rule::Shape);
    assert!(
        error
            .to_string()
            .contains("dim 0 is 4 but N = 3 (bound by `x` dim 0)"),
        "{error}"
    );
    let y = Tensor::zeros(3, DType::U8, &Device::Cpu).unwrap();
    assert!(check!(x: f32[N, 784], y: u8[N] in 0..10, N >= 1).is_ok());
}

struct Model {
    weight: Tensor,
}

impl Model {
    #[contract(self.weight: f32[D, D])]
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let hidden = x.matmul(&self.weight)?;
        check!(hidden: f32[B, D] finite, self.weight: f32[D, D])?;
        Ok(hidden)
    }
}

#[test]
fn check_inside_a_method_sees_self() {
    let model = Model {
        weight: Tensor::new(&[[1f32, 0.], [0., 1.]], &Device::Cpu).unwrap(),
    };
    let x = Tensor::new(&[[1f32, f32::INFINITY]], &Device::Cpu).unwrap();
    let error = model.forward(&x).unwrap_err();
    let contract = ContractError::find_in(&error).unwrap();
    assert_eq!(contract.violations()[0].argument(), "hidden");
}

#[test]
fn check_names_its_variables_as_variables() {
    let labels = Tensor::new(&[3u8, 1], &Device::Cpu).unwrap();
    let error = check!(labels: u8[N] in 0..2).unwrap_err();
    assert_eq!(
        error.violations()[0].subject(),
        candle_contracts::Subject::Variable("labels")
    );
    // A path stays a field.
    let error = step(&load(2, 10), 10).unwrap_err();
    assert_eq!(
        error.violations()[0].subject(),
        candle_contracts::Subject::Field("batch.labels")
    );
}
