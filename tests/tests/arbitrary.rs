//! `arbitrary!`: contracts as property tests.

use candle_contracts::{arbitrary, contract};
use candle_core::{Result, Tensor};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;

#[contract(logits: f32[N, C], target: u32 | i64 [N] in 0..C ignore -100)]
fn loss(logits: &Tensor, target: &Tensor) -> Result<()> {
    let _ = (logits, target);
    Ok(())
}

#[test]
fn smoke() {
    let strategy = arbitrary!(loss);
    let mut runner = TestRunner::deterministic();
    for _ in 0..20 {
        let (logits, target) = strategy.new_tree(&mut runner).unwrap().current();
        println!("{:?} {:?} {:?}", logits.dims(), target.dtype(), target.to_vec1::<i64>().or_else(|_| target.to_dtype(candle_core::DType::I64).unwrap().to_vec1::<i64>()));
        loss(&logits, &target).unwrap();
    }
}
