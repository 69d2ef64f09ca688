//! Prints what a value rule costs on a pass and on a violation: a broadcast view and a dense
//! tensor of [20000, 20000] u32 elements under `in 0..3` (pass: all 1; violation: the last one
//! is 5), the device path (forced on the CPU) on the broadcast view, and a dense f32
//! [16384, 1000] tensor under `in 0.0..=1.0` (pass; one bad element, the last; every element
//! bad with one value; every element bad with distinct values). Each line is the best of a few
//! runs, with its ratio to the pass of the same tensor. Run in release and debug: `cargo run -p
//! candle-contracts --example failure_cost [--release]`; `FAILURE_COST_SIDE=4096` for a smaller
//! u32 side, `FAILURE_COST_ROWS=1024` for fewer f32 rows.

use std::time::Instant;

use candle_contracts::check;
use candle_core::{DType, Device, Tensor};

fn size(variable: &str, default: usize) -> usize {
    std::env::var(variable)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The best of a few runs of `check`, in seconds, after asserting its verdict.
fn best(label: &str, expect_ok: bool, check: impl Fn() -> bool) -> f64 {
    let runs = 5;
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let start = Instant::now();
        let ok = check();
        best = best.min(start.elapsed().as_secs_f64());
        assert_eq!(ok, expect_ok, "{label}");
    }
    best
}

fn report(label: &str, seconds: f64, pass: f64) {
    println!(
        "{label:<36} {:>14.1} µs  {:>6.2}x the pass",
        seconds * 1e6,
        seconds / pass
    );
}

fn main() -> candle_core::Result<()> {
    let side = size("FAILURE_COST_SIDE", 20000);
    let shape = (side, side);
    let u32_rule = |x: &Tensor| check!(x: u32[N, M] in 0..3).is_ok();
    let pass = Tensor::new(1u32, &Device::Cpu)?.broadcast_as(shape)?;
    let fail = Tensor::new(5u32, &Device::Cpu)?.broadcast_as(shape)?;
    let pass_time = best("broadcast pass", true, || u32_rule(&pass));
    report("u32 broadcast pass", pass_time, pass_time);
    let t = best("broadcast violation", false, || u32_rule(&fail));
    report("u32 broadcast violation", t, pass_time);
    // The device path (candle ops and one transfer), forced on these CPU tensors.
    candle_contracts::__private::force_device_path(true);
    let device_pass = best("device path pass", true, || u32_rule(&pass));
    report("device path broadcast pass", device_pass, device_pass);
    let t = best("device path violation", false, || u32_rule(&fail));
    report("device path broadcast violation", t, device_pass);
    candle_contracts::__private::force_device_path(false);
    let mut data = vec![1u32; side * side];
    let dense_pass = Tensor::from_slice(&data, shape, &Device::Cpu)?;
    let pass_time = best("dense pass", true, || u32_rule(&dense_pass));
    report("u32 dense pass", pass_time, pass_time);
    drop(dense_pass);
    *data.last_mut().unwrap() = 5;
    let dense_fail = Tensor::from_vec(data, shape, &Device::Cpu)?;
    let t = best("dense violation", false, || u32_rule(&dense_fail));
    report("u32 dense violation (last)", t, pass_time);
    drop(dense_fail);

    let shape = (size("FAILURE_COST_ROWS", 16384), 1000);
    let f32_rule = |x: &Tensor| check!(x: f32[N, D] in 0.0..=1.0).is_ok();
    let x = Tensor::rand(0f32, 1f32, shape, &Device::Cpu)?;
    let pass_time = best("f32 pass", true, || f32_rule(&x));
    report("f32 dense pass", pass_time, pass_time);
    let mut data = x.flatten_all()?.to_vec1::<f32>()?;
    *data.last_mut().unwrap() = 2.0;
    let one_bad = Tensor::from_vec(data, shape, &Device::Cpu)?;
    let t = best("f32 one bad", false, || f32_rule(&one_bad));
    report("f32 dense, one bad (last)", t, pass_time);
    let all_bad = Tensor::full(2f32, shape, &Device::Cpu)?;
    let t = best("f32 all bad", false, || f32_rule(&all_bad));
    report("f32 dense, all bad (one value)", t, pass_time);
    let all_distinct = Tensor::rand(1.5f32, 2f32, shape, &Device::Cpu)?;
    let t = best("f32 all bad distinct", false, || f32_rule(&all_distinct));
    report("f32 dense, all bad (distinct)", t, pass_time);

    // The same rule under a u8 mask of the tensor's shape (every position checked): the masked
    // pass yields the same block statistics, so a violation reads from its block only.
    let mask = Tensor::ones(shape, DType::U8, &Device::Cpu)?;
    let masked_rule = |x: &Tensor| check!(x: f32[N, D] in 0.0..=1.0 where mask).is_ok();
    let masked_pass = best("masked pass", true, || masked_rule(&x));
    report("f32 dense masked pass", masked_pass, masked_pass);
    let t = best("masked one bad", false, || masked_rule(&one_bad));
    report("f32 dense masked, one bad (last)", t, masked_pass);
    let t = best("masked all bad", false, || masked_rule(&all_bad));
    report("f32 dense masked, all bad (one value)", t, masked_pass);
    Ok(())
}
