//! The guards on a real accelerator, without the forced switch: the device path's verdicts
//! against the in-place CPU scan, one transfer per call, and a bad target through a contracted
//! loss followed by a good training step in the same process (the context stays usable).
//!
//! `CANDLE_CONTRACTS_TEST_DEVICE` chooses the device: `cuda` for `Device::new_cuda(0)` (a build
//! with `--features candle-contracts/cuda`; `scripts/gpu-check.sh` runs these), `cpu-forced` for
//! CPU tensors with the device path forced (to run the same assertions without a GPU). Unset,
//! every test here returns at once.

use candle_contracts::__private::{device_transfers, force_device_path};
use candle_contracts::{contract, nn, ContractError, Rule, Violation};
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{Module, Optimizer, VarBuilder, VarMap};

const DEVICE_VAR: &str = "CANDLE_CONTRACTS_TEST_DEVICE";

/// The device the variable names, with the device path forced on this thread for
/// `cpu-forced`; `None` (the test is skipped) when it is unset.
fn test_device() -> Option<Device> {
    let value = std::env::var(DEVICE_VAR).unwrap_or_default();
    match value.as_str() {
        "" => {
            eprintln!("{DEVICE_VAR} unset: skipped");
            None
        }
        "cuda" => Some(Device::new_cuda(0).unwrap_or_else(|error| {
            panic!("{DEVICE_VAR}=cuda needs a CUDA device and --features candle-contracts/cuda: {error}")
        })),
        "cpu-forced" => {
            force_device_path(true);
            Some(Device::Cpu)
        }
        other => panic!("{DEVICE_VAR}={other}: expected `cuda` or `cpu-forced`"),
    }
}

/// Runs `f` on the in-place CPU scan, whatever `test_device` forced.
fn on_cpu_scan<T>(f: impl FnOnce() -> T) -> T {
    let forced = std::env::var(DEVICE_VAR).as_deref() == Ok("cpu-forced");
    force_device_path(false);
    let out = f();
    force_device_path(forced);
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

#[contract(target: i64[B, T] in 0..C ignore -100, logits: f32[B, T, C])]
fn ignoring(target: &Tensor, logits: &Tensor) -> Result<()> {
    let _ = (target, logits);
    Ok(())
}

fn inputs(target: &[u32], weights: &[f32], device: &Device) -> (Tensor, Tensor, Tensor) {
    let n = target.len();
    (
        Tensor::ones((n, 4), DType::F32, device).unwrap(),
        Tensor::new(target, device).unwrap(),
        Tensor::new(weights, device)
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap(),
    )
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

fn describe(result: Result<()>) -> Vec<String> {
    match result {
        Ok(()) => Vec::new(),
        Err(error) => ContractError::find_in(&error)
            .expect("a contract error")
            .violations()
            .iter()
            .map(comparable)
            .collect(),
    }
}

#[test]
fn one_transfer_per_call_on_the_device() {
    let Some(device) = test_device() else { return };
    let (logits, target, weights) = inputs(&[0, 3, 1], &[0.5, 1.0, 0.0], &device);
    let before = device_transfers();
    three_value_clauses(&logits, &target, &weights).unwrap();
    assert_eq!(device_transfers() - before, 1);
    let before = device_transfers();
    for _ in 0..5 {
        three_value_clauses(&logits, &target, &weights).unwrap();
    }
    assert_eq!(device_transfers() - before, 5);
    // A failing call reads its verdicts in the same one transfer before the violation is built.
    let (logits, target, weights) = inputs(&[0, 4, 1], &[0.5, 1.0, 0.0], &device);
    let before = device_transfers();
    assert!(three_value_clauses(&logits, &target, &weights).is_err());
    assert!(device_transfers() > before);
}

#[test]
fn the_device_agrees_with_the_cpu_scan() {
    let Some(device) = test_device() else { return };
    let cases: Vec<(Vec<u32>, Vec<f32>)> = vec![
        (vec![0, 3, 1], vec![0.5, 1.0, 0.0]),
        (vec![0, 4, 9], vec![0.5, 1.0, 0.0]),
        (vec![0, 1, 2], vec![0.5, f32::NAN, 1.5]),
        (vec![u32::MAX, 1, 2], vec![-0.0, 0.25, 2.0]),
    ];
    for (target, weights) in cases {
        let (l, t, w) = inputs(&target, &weights, &Device::Cpu);
        let cpu = on_cpu_scan(|| describe(three_value_clauses(&l, &t, &w)));
        let (l, t, w) = inputs(&target, &weights, &device);
        let on_device = describe(three_value_clauses(&l, &t, &w));
        assert_eq!(cpu, on_device, "target {target:?}, weights {weights:?}");
    }
    // Views (narrowed, transposed twice), ignored values, a broadcast.
    let rows = [[1i64, -100, 7], [2, 3, -100], [4, 4, 4]];
    let views = |device: &Device| {
        let logits = Tensor::zeros((2, 3, 5), DType::F32, device).unwrap();
        let base = Tensor::new(&rows, device).unwrap();
        let view = base.narrow(0, 0, 2).unwrap().t().unwrap().t().unwrap();
        let all_ignored = Tensor::full(-100i64, (2, 3), device).unwrap();
        let broadcast = Tensor::new(&[9i64, 0, 1], device)
            .unwrap()
            .broadcast_as((2, 3))
            .unwrap();
        [view, all_ignored, broadcast].map(|target| describe(ignoring(&target, &logits)))
    };
    let cpu = on_cpu_scan(|| views(&Device::Cpu));
    assert_eq!(cpu.iter().map(Vec::len).collect::<Vec<_>>(), [1, 1, 1]);
    assert_eq!(cpu, views(&device));
}

#[test]
fn a_bad_target_then_a_good_step_in_the_same_process() {
    let Some(device) = test_device() else { return };
    let (n, features, classes) = (8, 3, 4);
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &device);
    let model = candle_nn::linear(features, classes, vb.pp("head")).unwrap();
    let mut sgd = candle_nn::SGD::new(varmap.all_vars(), 0.5).unwrap();
    let x = Tensor::randn(0f32, 1f32, (n, features), &device).unwrap();
    let good: Vec<u32> = (0..n as u32).map(|i| i % classes as u32).collect();
    let mut bad = good.clone();
    bad[5] = classes as u32; // class id == C: a device-side assert or a silent wrong loss unguarded
    let (good, bad) = (
        Tensor::new(good.as_slice(), &device).unwrap(),
        Tensor::new(bad.as_slice(), &device).unwrap(),
    );

    let logits = model.forward(&x).unwrap();
    let error = nn::cross_entropy(&logits, &bad).unwrap_err();
    let violation = &ContractError::find_in(&error)
        .unwrap_or_else(|| panic!("not a contract violation: {error}"))
        .violations()[0];
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("target", Rule::Range)
    );
    assert!(error.to_string().contains("target[5] = 4"), "{error}");

    // The same context, right after: a forward, a backward and an optimizer step.
    let first = nn::cross_entropy(&model.forward(&x).unwrap(), &good).unwrap();
    sgd.backward_step(&first).unwrap();
    let first = first.to_scalar::<f32>().unwrap();
    assert!(first.is_finite());
    let mut last = first;
    for _ in 0..20 {
        let loss = nn::cross_entropy(&model.forward(&x).unwrap(), &good).unwrap();
        sgd.backward_step(&loss).unwrap();
        last = loss.to_scalar::<f32>().unwrap();
    }
    device.synchronize().unwrap();
    assert!(last.is_finite() && last < first, "loss {first} then {last}");
    // And a fresh allocation reads back.
    let sum: f32 = Tensor::ones(16, DType::F32, &device)
        .unwrap()
        .sum_all()
        .unwrap()
        .to_scalar()
        .unwrap();
    assert_eq!(sum, 16.0);
}

#[contract(
    input_ids: i64[B, T] in 0..V where attention_mask,
    attention_mask: u8 | f32 [B, T],
    {soft.sum(1)?}: f32[B] in 0.999..=1.001,
    soft: f32[B, V] in 0.0..=1.0,
    labels: f32[B] in 0.0..{soft.dims()[1] as f64} integral where {labels.ge(0.0)?},
)]
fn masked_and_derived(
    input_ids: &Tensor,
    attention_mask: &Tensor,
    soft: &Tensor,
    labels: &Tensor,
) -> Result<()> {
    let _ = (input_ids, attention_mask, soft, labels);
    Ok(())
}

/// Masks, a derived subject and `integral` on the device: one transfer for a passing call, and
/// the verdicts, indices and counts (exempt positions too) of the in-place CPU scan.
#[test]
fn masks_and_derived_subjects_on_the_device() {
    let Some(device) = test_device() else { return };
    type Case = ([i64; 3], [f32; 3], [f32; 3], f32);
    let tensors = |(ids, mask, row, label): Case, device: &Device| {
        [
            Tensor::new(&ids, device).unwrap().unsqueeze(0).unwrap(),
            Tensor::new(&mask, device).unwrap().unsqueeze(0).unwrap(),
            Tensor::new(&[row], device).unwrap(),
            Tensor::new(&[label], device).unwrap(),
        ]
    };
    let passing: Case = ([2, 1, -1], [1.0, 1.0, 0.0], [0.5, 0.5, 0.0], 2.0);
    let [ids, mask, soft, labels] = tensors(passing, &device);
    let before = device_transfers();
    masked_and_derived(&ids, &mask, &soft, &labels).unwrap();
    assert_eq!(device_transfers() - before, 1);
    let cases: [Case; 4] = [
        ([2, 1, -1], [1.0, 1.0, 1.0], [0.5, 0.5, 0.0], 2.0),
        ([2, 1, -1], [1.0, 0.0, f32::NAN], [0.1, 0.2, 0.0], 0.5),
        ([3, 1, -1], [1.0, 1.0, -0.0], [0.5, 0.5, 0.0], -1.5),
        ([2, 1, -1], [1.0, 1.0, 0.0], [0.5, 0.5, 0.0], 1.5),
    ];
    for case in cases {
        for mask_dtype in [DType::F32, DType::U8] {
            let describe_on = |device: &Device| {
                let [ids, mask, soft, labels] = tensors(case, device);
                let mask = mask.to_dtype(mask_dtype).unwrap();
                describe(masked_and_derived(&ids, &mask, &soft, &labels))
            };
            let cpu = on_cpu_scan(|| describe_on(&Device::Cpu));
            assert!(!cpu.is_empty(), "{case:?}");
            assert_eq!(cpu, describe_on(&device), "{case:?} {mask_dtype:?}");
        }
    }
}
