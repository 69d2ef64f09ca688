//! A plain timing loop for the range scan against candle's `sum_all`, without criterion: the
//! two alternate on the same f32 [16384, 1000] tensor in one process, and each round prints
//! the ratio of their median times of that round (`sum_all` time / scan time, so above 1 means
//! the scan is faster). `SCAN_LOOP_ROUNDS` sets the rounds (default 7).
//!
//! `cargo bench -p candle-contracts --bench scan_loop`

use std::hint::black_box;
use std::time::{Duration, Instant};

use candle_contracts::contract;
use candle_core::{Device, Result, Tensor};

#[contract(x: f32[N, D] in 0.0..=1.0)]
fn range_checked(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

/// The median of `repeats` timings of `f` (robust to a neighbour's burst on a shared
/// machine, unlike the mean, and not flattered by one lucky run, unlike the minimum).
fn median_of(repeats: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..repeats)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[repeats / 2]
}

fn main() -> Result<()> {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    let rounds: usize = std::env::var("SCAN_LOOP_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
        .max(1);
    let x = Tensor::rand(0f32, 1f32, (16384, 1000), &Device::Cpu)?;
    let bytes = (x.elem_count() * 4) as f64;
    // Warm up both (page faults, thread pools).
    for _ in 0..5 {
        black_box(black_box(&x).sum_all()?);
        range_checked(black_box(&x))?;
    }
    let mut ratios = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let sum = median_of(15, || {
            black_box(black_box(&x).sum_all().unwrap());
        });
        let scan = median_of(15, || range_checked(black_box(&x)).unwrap());
        let ratio = sum.as_secs_f64() / scan.as_secs_f64();
        ratios.push(ratio);
        println!(
            "round {round}: sum_all {:.2} ms ({:.1} GB/s), scan {:.2} ms ({:.1} GB/s), ratio {ratio:.2}",
            sum.as_secs_f64() * 1e3,
            bytes / sum.as_secs_f64() / 1e9,
            scan.as_secs_f64() * 1e3,
            bytes / scan.as_secs_f64() / 1e9,
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "scan / sum_all throughput: min {:.2}, median {:.2}, max {:.2} over {rounds} rounds",
        ratios[0],
        ratios[rounds / 2],
        ratios[rounds - 1]
    );
    Ok(())
}
