//! The expansion in hostile surroundings: inner attributes in the body, a module that forbids
//! `unreachable_code`, two contracts on one function, a body that shadows the prelude's names,
//! `impl Trait` returns. Each of these failed to compile once; the tests then check the guard.

// `forbid` refuses any `#[allow(unreachable_code)]` inside this module, generated ones too.
#![forbid(unreachable_code)]
// Pedantic, so the workspace's `cargo clippy -- -D warnings` fails if the guard's statements
// come before a body's leading items.
#![warn(clippy::items_after_statements)]

use candle_contracts::{contract, Rule};
use candle_core::{DType, Result, Tensor};

use crate::{only_violation, zeros};

#[contract(x: f32[N, D], return: f32[N, D])]
fn inner_attributes_first(x: &Tensor) -> Result<Tensor> {
    #![allow(unused_variables)]
    let unused = 1;
    x.exp()
}

#[test]
fn a_return_clause_keeps_the_bodys_inner_attributes() {
    let out = inner_attributes_first(&zeros(&[2, 3], DType::F32)).unwrap();
    assert_eq!(out.to_vec2::<f32>().unwrap(), [[1., 1., 1.], [1., 1., 1.]]);
    let error = inner_attributes_first(&zeros(&[2, 3], DType::F64)).unwrap_err();
    assert_eq!(only_violation(&error).rule(), Rule::DType);
}

#[contract(x: f32[N], return: f32[N])]
async fn async_inner_attributes(x: &Tensor) -> Result<Tensor> {
    #![allow(unused_variables)]
    let unused = 1;
    let doubled = (x * 2.)?;
    Ok(doubled)
}

#[test]
fn an_async_return_clause_keeps_the_inner_attributes_and_the_question_mark() {
    let out = futures_executor::block_on(async_inner_attributes(&zeros(&[2], DType::F32)));
    assert_eq!(out.unwrap().to_vec1::<f32>().unwrap(), [0., 0.]);
    let bad = futures_executor::block_on(async_inner_attributes(&zeros(&[2], DType::U32)));
    assert_eq!(only_violation(&bad.unwrap_err()).rule(), Rule::DType);
}

#[contract(x: f32[N, D])]
#[candle_contracts::contract(y: f32[N], return: f32[N])]
fn two_contracts(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x.sum(1)?.add(y)
}

#[test]
fn two_contracts_on_one_function_are_one_guard() {
    let out = two_contracts(&zeros(&[2, 3], DType::F32), &zeros(&[2], DType::F32)).unwrap();
    assert_eq!(out.to_vec1::<f32>().unwrap(), [0., 0.]);
    // `N` is bound by `x` in the first contract and checked against `y` from the second.
    let error = two_contracts(&zeros(&[2, 3], DType::F32), &zeros(&[5], DType::F32)).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!((violation.argument(), violation.rule()), ("y", Rule::Shape));
}

mod renamed_attribute {
    use candle_contracts::contract;
    use candle_contracts::contract as requires;
    use candle_core::{Result, Tensor};

    /// A second contract under another name is not merged: it is a guard of its own, around
    /// the first (it used to define the spec table twice, E0428).
    #[contract(x: f32[N])]
    #[requires(y: u32[M])]
    pub fn two_guards(x: &Tensor, y: &Tensor) -> Result<usize> {
        Ok(x.dim(0)? + y.dim(0)?)
    }
}

#[test]
fn a_second_contract_under_another_name_is_its_own_guard() {
    let sum = renamed_attribute::two_guards(&zeros(&[2], DType::F32), &zeros(&[3], DType::U32));
    assert_eq!(sum.unwrap(), 5);
    let error = renamed_attribute::two_guards(&zeros(&[2], DType::F32), &zeros(&[3], DType::F32))
        .unwrap_err();
    let violation = only_violation(&error);
    assert_eq!((violation.argument(), violation.rule()), ("y", Rule::DType));
}

/// Variants named like the prelude's items, imported over them in the bodies below.
#[allow(dead_code)]
#[derive(Debug, PartialEq)]
enum Shadow {
    Ok,
    Err,
    Some,
    None,
    Result,
    Option,
    Box,
    Vec,
    From,
    Into,
    Default,
    N,
}

#[contract(x: u32[B, C] in 0..C, return: f32[B, C])]
fn shadowed(x: &Tensor) -> Result<Tensor> {
    use Shadow::*;
    let tag = N;
    assert_eq!(tag, Shadow::N);
    x.to_dtype(DType::F32)
}

#[test]
fn a_body_that_shadows_the_preludes_names_still_compiles_and_checks() {
    let out = shadowed(&zeros(&[1, 2], DType::U32)).unwrap();
    assert_eq!(out.to_vec2::<f32>().unwrap(), [[0., 0.]]);
    let bad = Tensor::new(&[[0u32, 2]], &candle_core::Device::Cpu).unwrap();
    let error = shadowed(&bad).unwrap_err();
    assert_eq!(only_violation(&error).rule(), Rule::Range);
}

#[contract(x: f32[N], return.1: f32[N])]
fn opaque_in_a_tuple(x: &Tensor) -> (impl Fn() -> usize, Tensor) {
    (|| 7, x.clone())
}

#[test]
fn an_impl_trait_inside_the_return_type_is_left_to_inference() {
    let (seven, out) = opaque_in_a_tuple(&zeros(&[3], DType::F32));
    assert_eq!((seven(), out.dims()), (7, &[3][..]));
}

#[contract(x: f32[N, K], return: f32[N, K])]
fn items_first(x: &Tensor) -> Result<Tensor> {
    use candle_core::Module as _;
    const K: usize = 3;
    let _ = K;
    candle_nn::Activation::Relu.forward(x)
}

#[test]
fn a_body_that_starts_with_items_keeps_them_to_itself() {
    // The body's `use` still serves the body; its `K` is not the contract's, which is a dim.
    let out = items_first(&zeros(&[1, 4], DType::F32)).unwrap();
    assert_eq!(out.dims(), [1, 4]);
    let error = items_first(&zeros(&[1, 4], DType::F64)).unwrap_err();
    assert_eq!(only_violation(&error).rule(), Rule::DType);
}
