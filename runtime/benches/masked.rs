//! A masked range scan on the CPU against candle's `sum_all` in the same run: `0.0..=1.0`
//! where a u8 mask of the same shape is non-zero (99% of positions), on an f32 [16384, 1000]
//! subject (64 MB, bigger than cache). Throughput counts the bytes each reads: subject and mask
//! (80 MB) for the scan, the subject (64 MB) for `sum_all`. The goal is a scan at least
//! 0.7x as fast as `sum_all` in bytes per second.
//!
//! `cargo bench -p candle-contracts --bench masked`; the ratio is
//! `(80 MB / scan time) / (64 MB / sum_all time)` from criterion's two estimates.

use std::hint::black_box;
use std::time::Duration;

use candle_contracts::__private::range_passes;
use candle_core::{Device, Tensor};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const SHAPE: (usize, usize) = (16384, 1000);

fn masked_range(c: &mut Criterion) {
    let x = Tensor::rand(0f32, 1f32, SHAPE, &Device::Cpu).unwrap();
    // Mostly non-zero: one position in a hundred is exempt (like the padding of a batch).
    let mask: Vec<u8> = (0..SHAPE.0 * SHAPE.1)
        .map(|i| u8::from(i % 100 != 99))
        .collect();
    let mask = Tensor::from_vec(mask, SHAPE, &Device::Cpu).unwrap();
    assert_eq!(range_passes(&x, Some(&mask), 0.0, 1.0), Some(true));
    let subject_bytes = (x.elem_count() * 4) as u64;
    let mask_bytes = mask.elem_count() as u64;
    let mut group = c.benchmark_group("masked_range_f32_16384x1000");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    group.throughput(Throughput::Bytes(subject_bytes));
    group.bench_function("candle_sum_all", |b| {
        b.iter(|| black_box(&x).sum_all().unwrap())
    });
    group.throughput(Throughput::Bytes(subject_bytes + mask_bytes));
    group.bench_function("masked_scan", |b| {
        b.iter(|| range_passes(black_box(&x), Some(black_box(&mask)), 0.0, 1.0))
    });
    // The unmasked scan of the subject alone, for comparison.
    group.throughput(Throughput::Bytes(subject_bytes));
    group.bench_function("unmasked_scan", |b| {
        b.iter(|| range_passes(black_box(&x), None, 0.0, 1.0))
    });
    group.finish();
}

criterion_group!(benches, masked_range);
criterion_main!(benches);
