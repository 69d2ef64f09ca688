//! Value scans on the CPU, each against a reference in the same run:
//! - an `in 0.0..=1.0` check of an f32 [16384, 1000] tensor (64 MB, bigger than cache) against
//!   candle's own `sum_all` on the same tensor (one plain memory pass), and against the naive
//!   candle-op check (`ge`, `lt`, combine, `min_all`, `to_scalar`);
//! - a contracted cross-entropy on f32 [4096, 1000] logits with a `u32[N] in 0..C` target
//!   against candle's `cross_entropy` alone (`candle_again` repeats candle's op for the noise
//!   floor, `guard_alone` times the contract's clauses by themselves).

use std::hint::black_box;
use std::time::Duration;

use candle_contracts::{check, contract};
use candle_core::{DType, Device, Result, Tensor};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

#[contract(x: f32[N, D] in 0.0..=1.0)]
fn range_checked(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

/// The check a user would write with candle ops.
fn naive_check(x: &Tensor) -> Result<bool> {
    let inside = x.ge(0.0)?.mul(&x.le(1.0)?)?;
    Ok(inside.min_all()?.to_scalar::<u8>()? == 1)
}

#[contract(logits: f32[N, C], target: u32[N] in 0..C)]
fn guarded_cross_entropy(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    candle_nn::loss::cross_entropy(logits, target)
}

fn range_check(c: &mut Criterion) {
    let x = Tensor::rand(0f32, 1f32, (16384, 1000), &Device::Cpu).unwrap();
    let mut group = c.benchmark_group("range_f32_16384x1000");
    group.throughput(Throughput::Bytes((x.elem_count() * 4) as u64));
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("candle_sum_all", |b| {
        b.iter(|| black_box(&x).sum_all().unwrap())
    });
    group.bench_function("contract_in_range", |b| {
        b.iter(|| range_checked(black_box(&x)).unwrap())
    });
    group.bench_function("naive_candle_ops", |b| {
        b.iter(|| naive_check(black_box(&x)).unwrap())
    });
    group.finish();
}

fn cross_entropy(c: &mut Criterion) {
    let logits = Tensor::randn(0f32, 1f32, (4096, 1000), &Device::Cpu).unwrap();
    let target = Tensor::rand(0f32, 1000f32, 4096, &Device::Cpu)
        .unwrap()
        .to_dtype(DType::U32)
        .unwrap();
    let mut group = c.benchmark_group("cross_entropy_4096x1000");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("candle", |b| {
        b.iter(|| candle_nn::loss::cross_entropy(black_box(&logits), black_box(&target)).unwrap())
    });
    group.bench_function("contracted", |b| {
        b.iter(|| guarded_cross_entropy(black_box(&logits), black_box(&target)).unwrap())
    });
    // Candle's op once more: the run-to-run noise, which is larger than the guard's cost.
    group.bench_function("candle_again", |b| {
        b.iter(|| candle_nn::loss::cross_entropy(black_box(&logits), black_box(&target)).unwrap())
    });
    // The guard's own cost: the same clauses, inline.
    group.bench_function("guard_alone", |b| {
        b.iter(|| {
            let (logits, target) = (black_box(&logits), black_box(&target));
            check!(logits: f32[N, C], target: u32[N] in 0..C).unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, range_check, cross_entropy);
criterion_main!(benches);
