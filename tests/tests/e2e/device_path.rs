//! The device path (candle ops on the tensor's device, one transfer per call), forced on CPU
//! tensors so it runs without a GPU: the same verdicts and messages as the in-place CPU scan,
//! and exactly one device-to-host transfer for a passing call however many value clauses it has.

use candle_contracts::__private::{device_transfers, force_device_path};
use candle_contracts::{check, contract, ContractError, Violation};
use candle_core::{DType, Device, Result, Tensor};

/// Runs `f` with the device path forced on this thread.
fn on_device_path<T>(f: impl FnOnce() -> T) -> T {
    force_device_path(true);
    let out = f();
    force_device_path(false);
    out
}

#[contract(
    logits: f32[N, C] finite,
    target: u32[N] in 0..C,
    weights: f16[N] in 0.0..=1.0,
)]
fn three_value_clauses(logits: &Tensor, target: &Tensor, weights: &Tensor) -> Result<()> {
    let _ = (logits, target, weights);
    Ok(())
}

fn inputs(target: &[u32], weights: &[f32]) -> (Tensor, Tensor, Tensor) {
    let n = target.len();
    (
        Tensor::ones((n, 4), DType::F32, &Device::Cpu).unwrap(),
        Tensor::new(target, &Device::Cpu).unwrap(),
        Tensor::new(weights, &Device::Cpu)
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap(),
    )
}

#[test]
fn one_transfer_per_call_with_three_value_clauses() {
    let (logits, target, weights) = inputs(&[0, 3, 1], &[0.5, 1.0, 0.0]);
    on_device_path(|| {
        let before = device_transfers();
        three_value_clauses(&logits, &target, &weights).unwrap();
        assert_eq!(device_transfers() - before, 1);
        let before = device_transfers();
        for _ in 0..5 {
            three_value_clauses(&logits, &target, &weights).unwrap();
        }
        assert_eq!(device_transfers() - before, 5);
    });
    // The CPU path reads in place and transfers nothing.
    let before = device_transfers();
    three_value_clauses(&logits, &target, &weights).unwrap();
    assert_eq!(device_transfers(), before);
}

fn comparable(v: &Violation) -> String {
    format!(
        "{} {:?} {:?} {:?} {:?} {:?} {:?}",
        v.argument(),
        v.rule(),
        v.index(),
        v.value(),
        v.counts(),
        v.observed_range(),
        v.bound_dims()
    )
}

fn both_paths(f: impl Fn() -> Result<()>) -> (Vec<String>, Vec<String>) {
    let describe = |result: Result<()>| match result {
        Ok(()) => Vec::new(),
        Err(error) => ContractError::find_in(&error)
            .expect("a contract error")
            .violations()
            .iter()
            .map(comparable)
            .collect(),
    };
    let cpu = describe(f());
    let device = on_device_path(|| describe(f()));
    (cpu, device)
}

#[test]
fn device_path_agrees_with_the_cpu_scan() {
    let cases: Vec<(Vec<u32>, Vec<f32>)> = vec![
        (vec![0, 3, 1], vec![0.5, 1.0, 0.0]),
        (vec![0, 4, 9], vec![0.5, 1.0, 0.0]),
        (vec![0, 1, 2], vec![0.5, f32::NAN, 1.5]),
        (vec![u32::MAX, 1, 2], vec![-0.0, 0.25, 2.0]),
    ];
    for (target, weights) in cases {
        let (logits, target, weights) = inputs(&target, &weights);
        let (cpu, device) = both_paths(|| three_value_clauses(&logits, &target, &weights));
        assert_eq!(cpu, device);
    }
    let (mut logits, target, weights) = inputs(&[0, 1], &[0.5, 0.5]);
    logits = logits.affine(f64::INFINITY, 0.).unwrap();
    let (cpu, device) = both_paths(|| three_value_clauses(&logits, &target, &weights));
    assert_eq!(cpu.len(), 1);
    assert_eq!(cpu, device);
}

#[contract(target: i64[B, T] in 0..C ignore -100, logits: f32[B, T, C])]
fn ignoring(target: &Tensor, logits: &Tensor) -> Result<()> {
    let _ = (target, logits);
    Ok(())
}

#[test]
fn device_path_handles_views_and_ignored_values() {
    let logits = Tensor::zeros((2, 3, 5), DType::F32, &Device::Cpu).unwrap();
    let base = Tensor::new(&[[1i64, -100, 7], [2, 3, -100], [4, 4, 4]], &Device::Cpu).unwrap();
    let view = base.narrow(0, 0, 2).unwrap().t().unwrap().t().unwrap();
    let (cpu, device) = both_paths(|| ignoring(&view, &logits));
    assert_eq!(cpu.len(), 1);
    assert_eq!(cpu, device);
    let all_ignored = Tensor::full(-100i64, (2, 3), &Device::Cpu).unwrap();
    let (cpu, device) = both_paths(|| ignoring(&all_ignored, &logits));
    assert_eq!(cpu.len(), 1);
    assert_eq!(cpu, device);
    let broadcast = Tensor::new(&[9i64, 0, 1], &Device::Cpu)
        .unwrap()
        .broadcast_as((2, 3))
        .unwrap();
    let (cpu, device) = both_paths(|| ignoring(&broadcast, &logits));
    assert_eq!(cpu, device);
}

#[test]
fn device_path_reads_max_and_negative_zero_as_the_cpu_does() {
    for dtype in [DType::I16, DType::I32] {
        let max = if dtype == DType::I16 {
            i16::MAX as i64
        } else {
            i32::MAX as i64
        };
        let x = Tensor::new(&[max, 3], &Device::Cpu)
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let (cpu, device) = both_paths(|| Ok(check!(x: int[N] in 0..10 ignore MAX)?));
        assert_eq!((cpu.len(), &cpu), (0, &device), "{dtype:?}");
        let y = Tensor::new(&[max - 1, 3], &Device::Cpu)
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let (cpu, device) = both_paths(|| Ok(check!(y: int[N] in 0..10 ignore MAX)?));
        assert_eq!((cpu.len(), &cpu), (1, &device), "{dtype:?}");
    }
    let z = Tensor::new(&[-0.0f32, 0.5], &Device::Cpu).unwrap();
    let message = || check!(z: f32[N] in 0.25..1.0).unwrap_err().to_string();
    let (cpu, device) = (message(), on_device_path(message));
    assert!(cpu.contains("z[0] = -0,"), "{cpu}");
    assert_eq!(cpu, device);
}

#[test]
fn device_path_reads_f8e8m0_as_the_cpu_does() {
    // f8e8m0 is a bare exponent: byte 127 is 1.0, 128 is 2.0, 126 is 0.5, 255 is NaN.
    let f8 = |bytes: &[u8]| {
        Tensor::from_raw_buffer(bytes, DType::F8E8M0, &[bytes.len()], &Device::Cpu).unwrap()
    };
    for bytes in [&[127u8, 126, 125][..], &[127, 128, 255, 129], &[255, 255]] {
        let x = f8(bytes);
        let (cpu, device) = both_paths(|| Ok(check!(x: f8e8m0[N] in 0..=1)?));
        assert_eq!(cpu, device, "{bytes:?}");
        let (cpu, device) = both_paths(|| Ok(check!(x: f8e8m0[N] finite)?));
        assert_eq!(cpu, device, "{bytes:?}");
    }
    let x = f8(&[127, 128, 255, 129]);
    let message = || check!(x: f8e8m0[N] in 0..=1).unwrap_err().to_string();
    // The device lists only the first offending value; the rest of the message is the same.
    let (cpu, device) = (message(), on_device_path(message));
    for text in [&cpu, &device] {
        assert!(text.contains("x[1] = 2, expected 0..=1\n    3 of 4 elements violate the rule (1 NaN); observed range 1..=4"), "{text}");
    }
    // A strided view of f8e8m0 is read in logical order.
    let grid = Tensor::from_raw_buffer(
        &[127u8, 128, 126, 127],
        DType::F8E8M0,
        &[2, 2],
        &Device::Cpu,
    )
    .unwrap()
    .t()
    .unwrap();
    let (cpu, device) = both_paths(|| Ok(check!(grid: f8e8m0[A, B] in 0..=1)?));
    assert_eq!(cpu.len(), 1);
    assert_eq!(cpu, device);
}

#[test]
fn device_path_reads_a_broadcast_view_over_its_stored_elements() {
    // One stored element shown 4 * 10^8 times: copied in full, 10^8 of them took 3.9 s and
    // ~1 GB.
    let x = Tensor::new(7u32, &Device::Cpu)
        .unwrap()
        .broadcast_as((20_000, 20_000))
        .unwrap();
    let start = std::time::Instant::now();
    let (cpu, device) = both_paths(|| Ok(check!(x: u32[N, M] in 0..3)?));
    assert!(start.elapsed().as_secs_f64() < 5.0, "{:?}", start.elapsed());
    assert_eq!(cpu.len(), 1);
    assert_eq!(cpu, device);
    let passing = Tensor::new(1u32, &Device::Cpu)
        .unwrap()
        .broadcast_as((10_000, 10_000))
        .unwrap();
    on_device_path(|| {
        let before = device_transfers();
        check!(passing: u32[N, M] in 0..3).unwrap();
        assert_eq!(device_transfers() - before, 1);
    });
    // A broadcast row and column: the first offending index is the view's first.
    let row = Tensor::new(&[0u32, 1, 5, 2], &Device::Cpu)
        .unwrap()
        .broadcast_as((6, 3, 4))
        .unwrap();
    let (cpu, device) = both_paths(|| Ok(check!(row: u32[A, B, C] in 0..3)?));
    assert!(cpu[0].contains("Some([0, 0, 2])"), "{cpu:?}");
    assert_eq!(cpu, device);
}

#[test]
fn device_path_counts_beyond_two_to_the_32_elements() {
    // 2^33 elements over one stored element: u32 counts and positions would wrap to 0.
    let x = Tensor::new(9i64, &Device::Cpu)
        .unwrap()
        .broadcast_as((1usize << 17, 1usize << 16))
        .unwrap();
    let error = on_device_path(|| check!(x: i64[N, M] in 0..3).unwrap_err());
    let counts = error.violations()[0].counts().unwrap();
    assert_eq!((counts.violating, counts.total), (1 << 33, 1 << 33));
    assert_eq!(error.violations()[0].index(), Some(&[0, 0][..]));
}

#[contract(
    input_ids: i64[B, T] in 0..V where attention_mask,
    attention_mask: u8[B, T],
    {soft.sum(1)?}: f32[B] in 0.999..=1.001,
    soft: f32[B, V] in 0.0..=1.0,
    labels: f32[B] in 0.0..{soft.dims()[1] as f64} integral where {labels.ge(0.0)?},
)]
fn derived_and_masked(
    input_ids: &Tensor,
    attention_mask: &Tensor,
    soft: &Tensor,
    labels: &Tensor,
) -> Result<()> {
    let _ = (input_ids, attention_mask, soft, labels);
    Ok(())
}

fn derived_inputs(ids: &[i64], mask: &[u8], rows: &[[f32; 3]; 1], labels: &[f32]) -> [Tensor; 4] {
    [
        Tensor::new(ids, &Device::Cpu)
            .unwrap()
            .unsqueeze(0)
            .unwrap(),
        Tensor::new(mask, &Device::Cpu)
            .unwrap()
            .unsqueeze(0)
            .unwrap(),
        Tensor::new(rows, &Device::Cpu).unwrap(),
        Tensor::new(labels, &Device::Cpu).unwrap(),
    ]
}

#[test]
fn derived_subjects_and_masks_join_the_one_transfer() {
    let [ids, mask, soft, labels] =
        derived_inputs(&[2, 1, -1], &[1, 1, 0], &[[0.5, 0.5, 0.0]], &[2.0]);
    on_device_path(|| {
        let before = device_transfers();
        derived_and_masked(&ids, &mask, &soft, &labels).unwrap();
        assert_eq!(device_transfers() - before, 1);
    });
    // The same verdicts, indices and counts (exempt positions too) on both paths.
    let cases = [
        derived_inputs(&[2, 1, -1], &[1, 1, 1], &[[0.5, 0.5, 0.0]], &[2.0]),
        derived_inputs(&[2, 1, -1], &[1, 0, 0], &[[0.1, 0.2, 0.0]], &[0.5]),
        derived_inputs(&[3, 1, -1], &[1, 1, 0], &[[0.5, 0.5, 0.0]], &[-1.5]),
    ];
    for [ids, mask, soft, labels] in &cases {
        let (cpu, device) = both_paths(|| derived_and_masked(ids, mask, soft, labels));
        assert!(!cpu.is_empty());
        assert_eq!(cpu, device);
    }
}

#[contract(labels: u8[N] in 0..C, logits: f32[N, C])]
fn class_labels(labels: &Tensor, logits: &Tensor) -> Result<()> {
    let _ = (labels, logits);
    Ok(())
}

#[test]
fn the_device_path_claims_no_single_offending_value_it_has_not_proven() {
    let logits = Tensor::zeros((4, 3), DType::F32, &Device::Cpu).unwrap();
    // 255 first and a 7 after it: "255 is the only value out of range" would be false.
    let mixed = Tensor::new(&[255u8, 7, 0, 1], &Device::Cpu).unwrap();
    let error = on_device_path(|| class_labels(&mixed, &logits)).unwrap_err();
    let violation = &ContractError::find_in(&error).unwrap().violations()[0];
    assert!(violation.offending_values().is_empty(), "{error}");
    let help = violation.help().unwrap_or_default().to_string();
    assert!(!help.contains("only value"), "{help}");
    // Every violation 255: the device path proves the list, and the help names the void label.
    let void = Tensor::new(&[255u8, 255, 0, 1], &Device::Cpu).unwrap();
    let error = on_device_path(|| class_labels(&void, &logits)).unwrap_err();
    let violation = &ContractError::find_in(&error).unwrap().violations()[0];
    assert_eq!(violation.offending_values().len(), 1, "{error}");
    assert!(
        violation
            .help()
            .unwrap_or_default()
            .contains("255 is the only value out of range"),
        "{error}"
    );
}

#[contract(x: float[N] in 0.1..0.3)]
fn between_tenths(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

#[contract(x: float[N] in ..=0.1)]
fn at_most_a_tenth(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

/// A bound compares as the real number written, in every float dtype and on both paths:
/// f64 0.1 is 0.1000000000000000055... (above 0.1), f64 0.3 is 0.2999999999999999888...
/// (below 0.3), f32 0.1 is 0.100000001490116... and f16 0.1 is 0.0999755859375.
#[test]
fn float_bounds_are_exact_in_every_float_dtype_on_both_paths() {
    let one = |v: f64, dtype: DType| {
        Tensor::new(&[v], &Device::Cpu)
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
    };
    for device_path in [false, true] {
        let run = |f: fn(&Tensor) -> Result<()>, x: &Tensor| {
            if device_path {
                on_device_path(|| f(x).is_ok())
            } else {
                f(x).is_ok()
            }
        };
        let case = format!("device path: {device_path}");
        assert!(!run(at_most_a_tenth, &one(0.1, DType::F64)), "{case}");
        assert!(
            run(at_most_a_tenth, &one(0.1f64.next_down(), DType::F64)),
            "{case}"
        );
        assert!(!run(at_most_a_tenth, &one(0.1, DType::F32)), "{case}");
        assert!(run(at_most_a_tenth, &one(0.1, DType::F16)), "{case}");
        // bf16 0.1 is 0.10009765625.
        assert!(!run(at_most_a_tenth, &one(0.1, DType::BF16)), "{case}");
        assert!(run(between_tenths, &one(0.3, DType::F64)), "{case}");
        assert!(
            !run(between_tenths, &one(0.3f64.next_up(), DType::F64)),
            "{case}"
        );
        assert!(
            !run(between_tenths, &one(0.1f64.next_down(), DType::F64)),
            "{case}"
        );
        assert!(run(between_tenths, &one(0.1, DType::F64)), "{case}");
        // f32 0.3 is 0.300000011920929, above 0.3.
        assert!(!run(between_tenths, &one(0.3, DType::F32)), "{case}");
        assert!(run(between_tenths, &one(0.2999999, DType::F32)), "{case}");
    }
}
