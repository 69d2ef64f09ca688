//! A plain timing loop for the masked range scan against candle's `sum_all`, without
//! criterion: on an f32 [16384, 1000] subject with a u8 mask of the same shape (99% non-zero),
//! the two alternate call by call, and each round prints the throughput ratio of their median
//! times, counting subject and mask bytes for the scan and the subject's for `sum_all` (above 1
//! means the scan moves bytes faster). Alternating keeps a neighbour's burst from landing on one
//! side only. `MASKED_LOOP_ROUNDS` sets the rounds (default 7).
//!
//! `cargo bench -p candle-contracts --bench masked_loop`

use std::hint::black_box;
use std::time::{Duration, Instant};

use candle_contracts::__private::range_passes;
use candle_core::{Device, Result, Tensor};

fn timed(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

/// The median (robust to a neighbour's burst on a shared machine).
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() -> Result<()> {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    let rounds: usize = std::env::var("MASKED_LOOP_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
        .max(1);
    let shape = (16384, 1000);
    let x = Tensor::rand(0f32, 1f32, shape, &Device::Cpu)?;
    let mask: Vec<u8> = (0..x.elem_count())
        .map(|i| u8::from(i % 100 != 99))
        .collect();
    let mask = Tensor::from_vec(mask, shape, &Device::Cpu)?;
    let subject_bytes = (x.elem_count() * 4) as f64;
    let scan_bytes = subject_bytes + mask.elem_count() as f64;
    let scan = || {
        let passes = range_passes(black_box(&x), Some(black_box(&mask)), 0.0, 1.0);
        assert_eq!(passes, Some(true));
    };
    for _ in 0..5 {
        black_box(black_box(&x).sum_all()?);
        scan();
    }
    let mut ratios = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let (mut sums, mut scans) = (Vec::new(), Vec::new());
        for _ in 0..15 {
            sums.push(timed(|| {
                black_box(black_box(&x).sum_all().unwrap());
            }));
            scans.push(timed(scan));
        }
        let (sum, scan) = (median(sums), median(scans));
        let ratio = (scan_bytes / scan.as_secs_f64()) / (subject_bytes / sum.as_secs_f64());
        ratios.push(ratio);
        println!(
            "round {round}: sum_all {:.2} ms ({:.1} GB/s), masked scan {:.2} ms ({:.1} GB/s), \
             ratio {ratio:.2}",
            sum.as_secs_f64() * 1e3,
            subject_bytes / sum.as_secs_f64() / 1e9,
            scan.as_secs_f64() * 1e3,
            scan_bytes / scan.as_secs_f64() / 1e9,
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "masked scan / sum_all throughput (both tensors' bytes): min {:.2}, median {:.2}, \
         max {:.2} over {rounds} rounds",
        ratios[0],
        ratios[rounds / 2],
        ratios[rounds - 1]
    );
    Ok(())
}
