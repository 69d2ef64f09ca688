//! Modes: `full` checks values, `shapes` skips them (no data read, braced bounds not even
//! evaluated), `off` skips everything. Its own test binary because the mode is process-wide.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use candle_contracts::{check, contract, mode, set_mode, Mode, Rule};
use candle_core::{DType, Device, Result, Tensor};

static BOUND_EVALUATIONS: AtomicUsize = AtomicUsize::new(0);

fn counted_bound(n: usize) -> usize {
    BOUND_EVALUATIONS.fetch_add(1, Ordering::SeqCst);
    n
}

#[contract(x: f32[N, D] contiguous, labels: u32[N] in 0..{counted_bound(10)}, return: f32[N] in 0.0..=1.0)]
fn guarded(x: &Tensor, labels: &Tensor) -> Result<Tensor> {
    let _ = labels;
    x.sum(1)
}

fn rules_of(result: Result<Tensor>) -> Vec<Rule> {
    match result {
        Ok(_) => Vec::new(),
        Err(error) => candle_contracts::ContractError::find_in(&error)
            .expect("a contract violation")
            .violations()
            .iter()
            .map(|v| v.rule())
            .collect(),
    }
}

static DERIVED_EVALUATIONS: AtomicUsize = AtomicUsize::new(0);

fn counted_row_sums(target: &Tensor) -> Result<Tensor> {
    DERIVED_EVALUATIONS.fetch_add(1, Ordering::SeqCst);
    target.sum(1)
}

#[contract(
    target: f32[N, C],
    {counted_row_sums(target)?}: f32[N] in 0.999..=1.001,
    ids: i64[N] in 0..C where {ids.ge(0i64)?},
)]
fn derived(target: &Tensor, ids: &Tensor) -> Result<()> {
    let _ = (target, ids);
    Ok(())
}

#[test]
fn modes_switch_what_is_checked() {
    let x = Tensor::ones((2, 3), DType::F32, &Device::Cpu).unwrap();
    let bad_labels = Tensor::new(&[1u32, 10], &Device::Cpu).unwrap();
    let strided = Tensor::ones((3, 2), DType::F32, &Device::Cpu)
        .unwrap()
        .t()
        .unwrap();
    let wrong_rank = Tensor::new(&[[1u32], [2]], &Device::Cpu).unwrap();

    set_mode(Mode::Full);
    assert_eq!(mode(), Mode::Full);
    let before = BOUND_EVALUATIONS.load(Ordering::SeqCst);
    assert_eq!(rules_of(guarded(&x, &bad_labels)), [Rule::Range]);
    assert_eq!(BOUND_EVALUATIONS.load(Ordering::SeqCst), before + 1);
    let good_labels = Tensor::new(&[1u32, 2], &Device::Cpu).unwrap();
    // The body's sums are 3.0, outside the return clause's 0..=1.
    assert_eq!(rules_of(guarded(&x, &good_labels)), [Rule::Range]);

    set_mode(Mode::Shapes);
    let before = BOUND_EVALUATIONS.load(Ordering::SeqCst);
    assert_eq!(rules_of(guarded(&x, &bad_labels)), Vec::<Rule>::new());
    assert_eq!(
        BOUND_EVALUATIONS.load(Ordering::SeqCst),
        before,
        "no bound evaluated"
    );
    assert_eq!(
        rules_of(guarded(&strided, &good_labels)),
        [Rule::Contiguous]
    );
    assert_eq!(rules_of(guarded(&x, &wrong_rank)), [Rule::Rank]);
    let y = Tensor::new(&[f32::NAN], &Device::Cpu).unwrap();
    assert!(check!(y: f32[N] finite).is_ok());

    set_mode(Mode::Off);
    assert_eq!(rules_of(guarded(&strided, &wrong_rank)), Vec::<Rule>::new());
    assert!(check!(y: u8[N, M]).is_ok());

    set_mode(Mode::Full);
    assert!(check!(y: f32[N] finite).is_err());

    // Derived subjects and masks are computed only where values are checked.
    let rows = Tensor::new(&[[0.5f32, 0.5], [0.1, 0.2]], &Device::Cpu).unwrap();
    let ids = Tensor::new(&[0i64, 7], &Device::Cpu).unwrap();
    let run = || rules_of(derived(&rows, &ids).map(|()| rows.clone()));
    let before = DERIVED_EVALUATIONS.load(Ordering::SeqCst);
    assert_eq!(run(), [Rule::Range, Rule::Range]);
    assert_eq!(DERIVED_EVALUATIONS.load(Ordering::SeqCst), before + 1);
    for quiet in [Mode::Shapes, Mode::Off] {
        set_mode(quiet);
        assert_eq!(run(), Vec::<Rule>::new(), "{quiet:?}");
        assert_eq!(
            DERIVED_EVALUATIONS.load(Ordering::SeqCst),
            before + 1,
            "nothing derived in {quiet:?}"
        );
    }
    // A shape violation still counts in `shapes` mode, and nothing is derived for it.
    set_mode(Mode::Shapes);
    let flat = Tensor::new(&[0.5f32, 0.5], &Device::Cpu).unwrap();
    assert_eq!(
        rules_of(derived(&flat, &ids).map(|()| rows.clone())),
        [Rule::Rank]
    );
    set_mode(Mode::Full);
    assert_eq!(
        rules_of(derived(&flat, &ids).map(|()| rows.clone())),
        [Rule::Rank]
    );
    assert_eq!(DERIVED_EVALUATIONS.load(Ordering::SeqCst), before + 1);
}

/// Run by `the_environment_variable_is_read_once` in a child process.
#[test]
#[ignore = "runs in a child process with CANDLE_CONTRACTS set"]
fn child_reads_the_mode_from_the_environment() {
    let expected: Mode = std::env::var("EXPECTED_MODE").unwrap().parse().unwrap();
    assert_eq!(mode(), expected);
    std::env::set_var("CANDLE_CONTRACTS", "off");
    assert_eq!(mode(), expected, "read once, at the first guarded call");
    let nan = Tensor::new(&[f32::NAN], &Device::Cpu).unwrap();
    assert_eq!(check!(nan: f32[N] finite).is_err(), expected == Mode::Full);
}

#[test]
fn the_environment_variable_is_read_once() {
    for (value, expected, warning) in [
        ("shapes", "shapes", false),
        ("off", "off", false),
        ("FULL", "full", false),
        ("fast", "full", true),
        // Empty is unset: no warning (it warned about an unknown mode `` before).
        ("", "full", false),
    ] {
        let output = Command::new(std::env::current_exe().unwrap())
            .args([
                "child_reads_the_mode_from_the_environment",
                "--exact",
                "--ignored",
                "--test-threads=1",
                "--nocapture",
            ])
            .env("CANDLE_CONTRACTS", value)
            .env("EXPECTED_MODE", expected)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "CANDLE_CONTRACTS={value}: {stderr}"
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("1 passed"), "{stdout}");
        assert_eq!(
            stderr.contains("unknown candle-contracts mode"),
            warning,
            "{stderr}"
        );
        if warning {
            assert!(
                stderr.contains("unknown candle-contracts mode `fast`: expected `full`, `shapes` or `off` in CANDLE_CONTRACTS; using `full`"),
                "{stderr}"
            );
        }
    }
}
