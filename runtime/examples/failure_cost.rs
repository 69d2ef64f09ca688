//! Prints what a value rule costs on a pass and on a violation, for a broadcast view and a dense
//! tensor of [20000, 20000] u32 elements under `in 0..3` (pass: all 1; violation: the last one
//! is 5), and the device path (forced on the CPU) on the broadcast view. Run in release and debug: `cargo run -p candle-contracts --example failure_cost
//! [--release]`; `FAILURE_COST_SIDE=4096` for a smaller side.

use std::time::Instant;

use candle_contracts::check;
use candle_core::{Device, Tensor};

fn time(label: &str, x: &Tensor, expect_ok: bool) {
    let runs = 3;
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let start = Instant::now();
        let result = check!(x: u32[N, M] in 0..3);
        best = best.min(start.elapsed().as_secs_f64());
        assert_eq!(result.is_ok(), expect_ok, "{label}");
    }
    println!("{label:<28} {:>12.6} s (best of {runs})", best);
}

fn main() -> candle_core::Result<()> {
    let side: usize = std::env::var("FAILURE_COST_SIDE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20000);
    let shape = (side, side);
    let pass = Tensor::new(1u32, &Device::Cpu)?.broadcast_as(shape)?;
    let fail = Tensor::new(5u32, &Device::Cpu)?.broadcast_as(shape)?;
    time("broadcast pass", &pass, true);
    time("broadcast violation", &fail, false);
    // The device path (candle ops and one transfer), forced on these CPU tensors.
    candle_contracts::__private::force_device_path(true);
    time("device path broadcast pass", &pass, true);
    time("device path broadcast violation", &fail, false);
    candle_contracts::__private::force_device_path(false);
    let mut data = vec![1u32; side * side];
    let dense_pass = Tensor::from_slice(&data, shape, &Device::Cpu)?;
    time("dense pass", &dense_pass, true);
    drop(dense_pass);
    *data.last_mut().unwrap() = 5;
    let dense_fail = Tensor::from_vec(data, shape, &Device::Cpu)?;
    time("dense violation (last)", &dense_fail, false);
    Ok(())
}
