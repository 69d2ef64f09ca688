//! A plain timing loop for the range scan against candle's `sum_all`, without criterion, on
//! the same f32 [16384, 1000] tensor in one process, in two patterns:
//!
//! - back to back: each side called 15 times in a row, the median of each;
//! - interleaved, as a training step has it: other work first (a `sum_all` of another tensor
//!   and a plain read of another buffer, 64 MB each), then one timed call; the guarded call and
//!   `sum_all` take turns, each after its own other work, 15 steps each, the median of each.
//!
//! Each round prints the ratio of the medians (`sum_all` time / scan time, so above 1 means the
//! scan is faster), and the end of each pattern the min, median and max over the rounds.
//! `SCAN_LOOP_ROUNDS` sets the rounds (default 7); `SCAN_LOOP_PATTERN=back_to_back` or
//! `interleaved` runs one pattern only.
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

const SHAPE: (usize, usize) = (16384, 1000);
/// Calls per side in one round.
const CALLS: usize = 15;

fn timed(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

/// The median (robust to a neighbour's burst on a shared machine, unlike the mean, and not
/// flattered by one lucky run, unlike the minimum).
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// What a training step does between two guarded calls: a reduction over another tensor (on
/// candle's thread) and a plain read of another buffer, both bigger than the private caches.
struct OtherWork {
    tensor: Tensor,
    buffer: Vec<f32>,
}

impl OtherWork {
    fn new() -> Result<Self> {
        let tensor = Tensor::rand(0f32, 1f32, SHAPE, &Device::Cpu)?;
        let buffer: Vec<f32> = (0..SHAPE.0 * SHAPE.1).map(|i| (i % 7) as f32).collect();
        Ok(Self { tensor, buffer })
    }

    fn run(&self) {
        black_box(black_box(&self.tensor).sum_all().unwrap());
        let total: f32 = black_box(&self.buffer).iter().sum();
        black_box(total);
    }
}

/// One round's medians: `(sum_all, scan)`.
fn back_to_back(x: &Tensor) -> (Duration, Duration) {
    let sums = (0..CALLS)
        .map(|_| timed(|| drop(black_box(black_box(x).sum_all().unwrap()))))
        .collect();
    let scans = (0..CALLS)
        .map(|_| timed(|| range_checked(black_box(x)).unwrap()))
        .collect();
    (median(sums), median(scans))
}

/// One round's medians: `(sum_all, scan)`, each call after the other work.
fn interleaved(x: &Tensor, other: &OtherWork) -> (Duration, Duration) {
    let (mut sums, mut scans) = (Vec::new(), Vec::new());
    for _ in 0..CALLS {
        other.run();
        scans.push(timed(|| range_checked(black_box(x)).unwrap()));
        other.run();
        sums.push(timed(|| drop(black_box(black_box(x).sum_all().unwrap()))));
    }
    (median(sums), median(scans))
}

fn report(
    pattern: &str,
    rounds: usize,
    bytes: f64,
    mut round: impl FnMut() -> (Duration, Duration),
) {
    let mut ratios = Vec::with_capacity(rounds);
    for index in 0..rounds {
        let (sum, scan) = round();
        let ratio = sum.as_secs_f64() / scan.as_secs_f64();
        ratios.push(ratio);
        println!(
            "{pattern} round {index}: sum_all {:.2} ms ({:.1} GB/s), scan {:.2} ms ({:.1} GB/s), \
             ratio {ratio:.2}",
            sum.as_secs_f64() * 1e3,
            bytes / sum.as_secs_f64() / 1e9,
            scan.as_secs_f64() * 1e3,
            bytes / scan.as_secs_f64() / 1e9,
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "{pattern}: sum_all time / scan time: min {:.2}, median {:.2}, max {:.2} over {rounds} \
         rounds",
        ratios[0],
        ratios[rounds / 2],
        ratios[rounds - 1]
    );
}

fn main() -> Result<()> {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    let rounds: usize = std::env::var("SCAN_LOOP_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
        .max(1);
    let pattern = std::env::var("SCAN_LOOP_PATTERN").unwrap_or_default();
    let x = Tensor::rand(0f32, 1f32, SHAPE, &Device::Cpu)?;
    let other = OtherWork::new()?;
    let bytes = (x.elem_count() * 4) as f64;
    // Warm up both (page faults, thread pools).
    for _ in 0..5 {
        black_box(black_box(&x).sum_all()?);
        range_checked(black_box(&x))?;
        other.run();
    }
    if pattern.is_empty() || pattern == "back_to_back" {
        report("back to back", rounds, bytes, || back_to_back(&x));
    }
    if pattern.is_empty() || pattern == "interleaved" {
        report("interleaved", rounds, bytes, || interleaved(&x, &other));
    }
    Ok(())
}
