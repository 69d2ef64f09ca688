//! Guarded ops of `candle_contracts::nn` against candle's own on realistic sizes, in one run:
//! cross-entropy on f32 [4096, 1000] logits and on f32 [R, 32000] logits (a Llama-sized
//! vocabulary; `R` from `NN_BENCH_ROWS`, 49152 by default: the [65536, 32000] case is 8.4 GB
//! of logits, and candle's op holds two temporaries of that size, which do not fit in 24 GiB)
//! with u32 targets, and an embedding lookup of u32 ids [32, 512] in a [50257, 768] table.
//! `warm_up` is candle's op measured first and discarded (the first benchmark of a group runs
//! up to 25% slower than the same op after it on the 2-core machine measured),
//! `candle_again` repeats candle's op after the guarded one (the run-to-run noise),
//! `guarded_off` runs the guarded op with checks off, and `guard_alone` times the guard's
//! clauses by themselves (for the losses, `finite` on the logits reads every logit once).
//!
//! `NN_BENCH_DEVICE=cuda` runs them on the first CUDA device (build with `--features cuda`;
//! every timed call ends with a device sync, so a GPU op is timed to completion), and
//! `NN_BENCH_SECONDS` shortens each benchmark's measurement time (6 s by default).

use std::hint::black_box;
use std::time::Duration;

use candle_contracts::{check, nn};
use candle_core::{DType, Device, Module, Tensor};
use criterion::{Criterion, criterion_group, criterion_main};

/// The device of the benchmarks: `NN_BENCH_DEVICE=cuda` for the first CUDA device, else the CPU.
fn bench_device() -> Device {
    match std::env::var("NN_BENCH_DEVICE").as_deref() {
        Ok("cuda") => Device::new_cuda(0)
            .expect("NN_BENCH_DEVICE=cuda needs a CUDA device and a build with --features cuda"),
        Ok("cpu") | Ok("") | Err(_) => Device::Cpu,
        Ok(other) => panic!("NN_BENCH_DEVICE={other}: expected `cpu` or `cuda`"),
    }
}

/// Each benchmark's measurement time: `NN_BENCH_SECONDS`, else 6 s.
fn measurement_time() -> Duration {
    let seconds = std::env::var("NN_BENCH_SECONDS")
        .ok()
        .and_then(|seconds| seconds.parse().ok())
        .unwrap_or(6.0);
    Duration::from_secs_f64(seconds)
}

/// `out`, once the device has finished computing it (a no-op on the CPU).
fn done<T>(device: &Device, out: T) -> T {
    device.synchronize().unwrap();
    out
}

/// The cross-entropy group on f32 `[rows, classes]` logits with u32 targets; `noise` adds
/// `candle_again` and `guarded_off` (left out where one call takes tens of seconds).
fn cross_entropy_group(
    c: &mut Criterion,
    rows: usize,
    classes: usize,
    samples: usize,
    noise: bool,
) {
    let device = bench_device();
    let device = &device;
    let logits = Tensor::randn(0f32, 1f32, (rows, classes), device).unwrap();
    let target = Tensor::rand(0f32, classes as f32, rows, device)
        .unwrap()
        .to_dtype(DType::U32)
        .unwrap();
    let mut group = c.benchmark_group(format!("nn_cross_entropy_{rows}x{classes}"));
    group
        .sample_size(samples)
        .measurement_time(measurement_time());
    // Discarded: on the machine measured, the first benchmark of a group runs up to 25% slower
    // than the same op measured after it, whichever op it is.
    group.bench_function("warm_up", |b| {
        b.iter(|| {
            done(
                device,
                candle_nn::loss::cross_entropy(black_box(&logits), black_box(&target)).unwrap(),
            )
        })
    });
    group.bench_function("candle", |b| {
        b.iter(|| {
            done(
                device,
                candle_nn::loss::cross_entropy(black_box(&logits), black_box(&target)).unwrap(),
            )
        })
    });
    group.bench_function("guarded", |b| {
        b.iter(|| {
            done(
                device,
                nn::cross_entropy(black_box(&logits), black_box(&target)).unwrap(),
            )
        })
    });
    if noise {
        group.bench_function("candle_again", |b| {
            b.iter(|| {
                done(
                    device,
                    candle_nn::loss::cross_entropy(black_box(&logits), black_box(&target)).unwrap(),
                )
            })
        });
        candle_contracts::set_mode(candle_contracts::Mode::Off);
        group.bench_function("guarded_off", |b| {
            b.iter(|| {
                done(
                    device,
                    nn::cross_entropy(black_box(&logits), black_box(&target)).unwrap(),
                )
            })
        });
        candle_contracts::set_mode(candle_contracts::Mode::Full);
    }
    // The guard's own cost, precise where the ops' run-to-run noise (candle against
    // candle_again) is larger than it: the same clauses as `nn::cross_entropy`.
    group.bench_function("guard_alone", |b| {
        b.iter(|| {
            let (logits, target) = (black_box(&logits), black_box(&target));
            check!(logits: float[N, C] finite, target: u8 | u32 | i64 [N] in 0..C, N >= 1).unwrap();
            device.synchronize().unwrap();
        })
    });
    group.finish();
}

fn cross_entropy(c: &mut Criterion) {
    cross_entropy_group(c, 4096, 1000, 40, true);
}

fn cross_entropy_large_vocabulary(c: &mut Criterion) {
    let rows = std::env::var("NN_BENCH_ROWS")
        .ok()
        .and_then(|rows| rows.parse().ok())
        .unwrap_or(49152);
    cross_entropy_group(c, rows, 32000, 10, false);
}

fn embedding(c: &mut Criterion) {
    let device = bench_device();
    let device = &device;
    let table = Tensor::randn(0f32, 1f32, (50257, 768), device).unwrap();
    let ids = Tensor::rand(0f32, 50257f32, (32, 512), device)
        .unwrap()
        .to_dtype(DType::U32)
        .unwrap();
    let candle_layer = candle_nn::Embedding::new(table.clone(), 768);
    let guarded_layer = nn::Embedding::new(table, 768);
    let mut group = c.benchmark_group("nn_embedding_50257x768_ids_32x512");
    group.sample_size(40).measurement_time(measurement_time());
    group.bench_function("candle", |b| {
        b.iter(|| done(device, candle_layer.forward(black_box(&ids)).unwrap()))
    });
    group.bench_function("guarded", |b| {
        b.iter(|| done(device, guarded_layer.forward(black_box(&ids)).unwrap()))
    });
    group.bench_function("candle_again", |b| {
        b.iter(|| done(device, candle_layer.forward(black_box(&ids)).unwrap()))
    });
    candle_contracts::set_mode(candle_contracts::Mode::Off);
    group.bench_function("guarded_off", |b| {
        b.iter(|| done(device, guarded_layer.forward(black_box(&ids)).unwrap()))
    });
    candle_contracts::set_mode(candle_contracts::Mode::Full);
    // The input clauses of `nn::embedding`.
    group.bench_function("guard_alone", |b| {
        b.iter(|| {
            let (ids, table) = (black_box(&ids), guarded_layer.embeddings());
            check!(ids: u8 | u32 | i64 [..] in 0..V, table: float[V, D]).unwrap();
            device.synchronize().unwrap();
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    cross_entropy,
    cross_entropy_large_vocabulary,
    embedding
);
criterion_main!(benches);
