//! Sizes at the edge: dims near 2^40 on zero-size tensors and ranks past 65535 are reported,
//! never a panic or a wrapped number.

use candle_contracts::contract;
use candle_core::{DType, Device, Tensor};

use crate::only_violation;

const HUGE: usize = 1 << 40;

#[contract(x: f32[N, Z, N], y: f32[N, N, Z])]
fn transposed(x: &Tensor, y: &Tensor) -> candle_core::Result<()> {
    let _ = (x, y);
    Ok(())
}

#[contract(x: f32[..] in 0.0..1.0)]
fn in_unit(x: &Tensor) -> candle_core::Result<()> {
    let _ = x;
    Ok(())
}

#[test]
fn zero_size_tensors_with_huge_dims_do_not_overflow() {
    // Candle's own stride and count arithmetic allows a zero in the middle.
    let x = Tensor::zeros((HUGE, 0, HUGE), DType::F32, &Device::Cpu).unwrap();
    let error = transposed(&x, &x).unwrap_err();
    assert_eq!(only_violation(&error).rule(), candle_contracts::Rule::Shape);
    assert!(error.to_string().contains("1099511627776"), "{error}");
    in_unit(&x).unwrap();
    in_unit(&x.transpose(0, 2).unwrap()).unwrap();
}

#[contract(x: f32[.., N], y: f32[N])]
fn last_dim(x: &Tensor, y: &Tensor) -> candle_core::Result<()> {
    let _ = (x, y);
    Ok(())
}

#[test]
fn axes_past_65535_keep_their_index() {
    let x = Tensor::zeros(vec![1usize; 70_000], DType::F32, &Device::Cpu).unwrap();
    let y = Tensor::zeros(2, DType::F32, &Device::Cpu).unwrap();
    let error = last_dim(&x, &y).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.bound_dims()[0].axis, 69_999, "{error}");
    assert!(error.to_string().contains("dim 69999"), "{error}");
}

#[contract(x: f32[N], y: f32[1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + (1 + N))))))))))))))])]
fn deepest_expression(x: &Tensor, y: &Tensor) -> candle_core::Result<()> {
    let _ = (x, y);
    Ok(())
}

#[test]
fn the_deepest_accepted_expression_evaluates() {
    let x = Tensor::zeros(2, DType::F32, &Device::Cpu).unwrap();
    let y = Tensor::zeros(17, DType::F32, &Device::Cpu).unwrap();
    deepest_expression(&x, &y).unwrap();
    let error = deepest_expression(&x, &x).unwrap_err();
    assert!(error.to_string().contains("= 17"), "{error}");
}

#[contract(ids: u32[N, M] in 0..3)]
fn class_ids(ids: &Tensor) -> candle_core::Result<()> {
    let _ = ids;
    Ok(())
}

#[test]
fn a_violation_in_a_broadcast_view_costs_what_its_stored_elements_cost() {
    // One stored 5 shown 4 * 10^8 times: the failure path reads it once (46 s in a debug build
    // when it walked the view); the bound is generous for a busy machine.
    let ids = Tensor::new(5u32, &Device::Cpu)
        .unwrap()
        .broadcast_as((20_000, 20_000))
        .unwrap();
    let start = std::time::Instant::now();
    let error = class_ids(&ids).unwrap_err();
    let elapsed = start.elapsed();
    assert!(elapsed.as_secs_f64() < 5.0, "{elapsed:?}");
    let violation = only_violation(&error);
    assert_eq!(violation.index(), Some(&[0, 0][..]));
    let counts = violation.counts().unwrap();
    assert_eq!((counts.violating, counts.total), (400_000_000, 400_000_000));
    assert!(
        error
            .to_string()
            .contains("`ids`: value out of range: ids[0, 0] = 5, expected 0..3"),
        "{error}"
    );
}

#[contract(x: u8[N] in 0..hi)]
fn below(x: &Tensor, hi: i128) -> candle_core::Result<()> {
    let _ = x;
    Ok(())
}

#[test]
fn extreme_integer_bounds_are_violations_not_panics() {
    // `0..i128::MIN` allows nothing; its help line once computed `hi - 1` and overflowed.
    let x = Tensor::new(&[5u8], &Device::Cpu).unwrap();
    for hi in [i128::MIN, i128::MIN + 1, -1, 0] {
        let error = below(&x, hi).unwrap_err();
        assert_eq!(
            only_violation(&error).rule(),
            candle_contracts::Rule::Range,
            "{error}"
        );
        assert!(error.to_string().contains("x[0] = 5"), "{error}");
    }
    below(&x, i128::MAX).unwrap();
}
