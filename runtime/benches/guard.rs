//! The cost of a guard per call, against the same function without a contract in the same run:
//! `shapes` mode (dtype, rank, dims, device; no data read) and `off` mode (one atomic load).

use std::hint::black_box;

use candle_contracts::{Mode, contract, set_mode};
use candle_core::{DType, Device, Result, Tensor};
use criterion::{Criterion, criterion_group, criterion_main};

fn plain(logits: &Tensor, target: &Tensor) -> Result<usize> {
    Ok(logits.dims()[0] + target.dims()[0])
}

#[contract(logits: f32[N, C], target: u32[N] in 0..C)]
fn contracted(logits: &Tensor, target: &Tensor) -> Result<usize> {
    Ok(logits.dims()[0] + target.dims()[0])
}

fn guard_overhead(c: &mut Criterion) {
    let logits = Tensor::zeros((64, 10), DType::F32, &Device::Cpu).unwrap();
    let target = Tensor::zeros(64, DType::U32, &Device::Cpu).unwrap();
    let mut group = c.benchmark_group("guard");
    group.bench_function("plain", |b| {
        b.iter(|| plain(black_box(&logits), black_box(&target)).unwrap())
    });
    set_mode(Mode::Shapes);
    group.bench_function("shapes", |b| {
        b.iter(|| contracted(black_box(&logits), black_box(&target)).unwrap())
    });
    set_mode(Mode::Off);
    group.bench_function("off", |b| {
        b.iter(|| contracted(black_box(&logits), black_box(&target)).unwrap())
    });
    set_mode(Mode::Full);
    group.bench_function("full_64_targets", |b| {
        b.iter(|| contracted(black_box(&logits), black_box(&target)).unwrap())
    });
    group.finish();
}

criterion_group!(benches, guard_overhead);
criterion_main!(benches);
