//! Value rules on every dtype and layout: exact integer bounds, NaN and infinities, ignored
//! values, `contiguous`, and strided views.

use candle_contracts::{check, contract, Rule, Value};
use candle_core::{DType, Device, Result, Tensor};
use half::{bf16, f16};

use crate::{contract_error, only_violation};

fn cpu() -> Device {
    Device::Cpu
}

#[contract(x: int[N] in 0..C, bound: _[C])]
fn int_range(x: &Tensor, bound: &Tensor) -> Result<()> {
    let _ = (x, bound);
    Ok(())
}

#[test]
fn integers_compare_exactly_in_every_integer_dtype() {
    let bound = Tensor::zeros(10, DType::U8, &cpu()).unwrap();
    for dtype in [DType::U8, DType::U32, DType::I16, DType::I32, DType::I64] {
        let x = Tensor::new(&[0i64, 9, 3], &cpu())
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        assert!(int_range(&x, &bound).is_ok(), "{dtype:?}");
        let x = Tensor::new(&[0i64, 10, 3], &cpu())
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let error = int_range(&x, &bound).unwrap_err();
        let violation = only_violation(&error);
        assert_eq!(
            (violation.index(), violation.value()),
            (Some(&[1][..]), Some(Value::Int(10))),
            "{dtype:?}"
        );
    }
}

#[test]
fn extremes_print_as_written() {
    let x = Tensor::new(&[1u32, u32::MAX], &cpu()).unwrap();
    let error = check!(x: u32[N] in 0..10).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("x[1] = 4294967295, expected 0..10"),
        "{error}"
    );
    let x = Tensor::new(&[i64::MIN, 0, i64::MAX], &cpu()).unwrap();
    let error = check!(x: i64[N] in 0..1000).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("x[0] = -9223372036854775808, expected 0..1000"),
        "{text}"
    );
    assert!(
        text.contains("observed range -9223372036854775808..=9223372036854775807"),
        "{text}"
    );
    // 2^53 + 1 is not an f64: a check through floats would let it pass `0..2^53 + 1`.
    let big = (1i64 << 53) + 1;
    let x = Tensor::new(&[big], &cpu()).unwrap();
    let error = check!(x: i64[N] in 0..{big}).unwrap_err();
    assert_eq!(error.violations()[0].value(), Some(Value::Int(big as i128)));
    assert!(check!(x: i64[N] in 0..={big}).is_ok());
}

fn float_tensor(values: &[f64], dtype: DType) -> Tensor {
    Tensor::new(values, &cpu())
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

#[test]
fn nan_violates_every_range_in_every_float_dtype() {
    for dtype in [
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::F8E4M3,
    ] {
        let x = float_tensor(&[0.25, f64::NAN, 0.5], dtype);
        let error = check!(x: float[N] in ..=1.0).unwrap_err();
        let violation = &error.violations()[0];
        assert_eq!(violation.index(), Some(&[1][..]), "{dtype:?}");
        assert!(
            matches!(violation.value(), Some(Value::Float(v, _)) if v.is_nan()),
            "{dtype:?}"
        );
        assert_eq!(violation.counts().unwrap().nan, 1, "{dtype:?}");
        assert!(
            error.to_string().contains("x[1] = NaN"),
            "{dtype:?}: {error}"
        );
        // `finite` too, even without a range.
        assert!(check!(x: float[N] finite).is_err(), "{dtype:?}");
    }
}

#[test]
fn finite_rejects_infinities_and_accepts_extremes() {
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        let x = float_tensor(&[0.0, f64::NEG_INFINITY], dtype);
        let error = check!(x: float[N] finite).unwrap_err();
        let violation = &error.violations()[0];
        assert_eq!(violation.rule(), Rule::Finite);
        assert!(
            error
                .to_string()
                .contains("value not finite: x[1] = -inf, expected finite values"),
            "{error}"
        );
        let x = float_tensor(&[-0.0, 1e-310, 1e300], DType::F64);
        assert!(check!(x: f64[N] finite).is_ok());
    }
    let x = Tensor::new(&[f16::MAX, f16::MIN, f16::from_bits(1)], &cpu()).unwrap();
    assert!(check!(x: f16[N] finite).is_ok());
    // An open range allows +inf unless `finite` is said.
    let x = Tensor::new(&[0f32, f32::INFINITY], &cpu()).unwrap();
    assert!(check!(x: f32[N] in 0..).is_ok());
    let error = check!(x: f32[N] in 0.. finite).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("x[1] = inf, expected 0.. and finite"),
        "{error}"
    );
}

#[test]
fn float_bounds_are_exact_for_narrow_dtypes() {
    // The f16 nearest to 0.1 is just below it: `..=0.1` holds for it and not for the next one.
    let below = f16::from_f64(0.1);
    assert!(below.to_f64() < 0.1);
    let above = f16::from_bits(below.to_bits() + 1);
    let x = Tensor::new(&[below], &cpu()).unwrap();
    assert!(check!(x: f16[N] in 0.0..=0.1).is_ok());
    let x = Tensor::new(&[below, above], &cpu()).unwrap();
    assert_eq!(
        check!(x: f16[N] in 0.0..=0.1).unwrap_err().violations()[0].index(),
        Some(&[1][..])
    );
    // -0.0 is in 0..=1; 1.0 is not in 0.0..1.0, the bf16 below it is.
    let x = Tensor::new(&[bf16::from_f32(-0.0), bf16::from_f32(0.99609375)], &cpu()).unwrap();
    assert!(check!(x: bf16[N] in 0.0..1.0).is_ok());
    let x = Tensor::new(&[bf16::ONE], &cpu()).unwrap();
    assert!(check!(x: bf16[N] in 0.0..1.0).is_err());
}

#[test]
fn eight_bit_floats_decode_exactly() {
    let x = float_tensor(&[448.0, -448.0, 0.001953125], DType::F8E4M3);
    assert!(check!(x: f8e4m3[N] in -448..=448).is_ok());
    let error = check!(x: f8e4m3[N] in -1..=1).unwrap_err();
    assert!(
        error.to_string().contains("x[0] = 448, expected -1..=1"),
        "{error}"
    );
    // f8e8m0 is a bare exponent: byte 127 is 1.0, 128 is 2.0, 255 is NaN.
    let x = Tensor::from_raw_buffer(&[127, 128, 255], DType::F8E8M0, &[3], &cpu()).unwrap();
    let error = check!(x: f8e8m0[N] in 0..=1).unwrap_err();
    let violation = &error.violations()[0];
    assert_eq!(violation.counts().unwrap().violating, 2);
    assert_eq!(violation.value(), Some(Value::Float(2.0, DType::F8E8M0)));
}

#[test]
fn packed_formats_cannot_be_read_and_say_so() {
    let x = Tensor::from_raw_buffer(&[0u8, 0], DType::F4, &[4], &cpu()).unwrap();
    assert!(check!(x: f4[N]).is_ok());
    let error = check!(x: f4[N] finite).unwrap_err();
    assert_eq!(error.violations()[0].rule(), Rule::Unreadable);
    assert!(
        error
            .to_string()
            .contains("values of dtype f4 cannot be read"),
        "{error}"
    );
}

#[test]
fn alternatives_and_single_values() {
    let x = Tensor::new(&[0i64, 2, 7, 10, 12, -1], &cpu()).unwrap();
    assert!(check!(x: i64[N] in 0..3 | 7 | 10..=12 | -1).is_ok());
    let error = check!(x: i64[N] in 0..3 | 7 | 10..12).unwrap_err();
    let violation = &error.violations()[0];
    assert_eq!(violation.counts().unwrap().violating, 2);
    assert_eq!(
        violation.offending_values(),
        [Value::Int(12), Value::Int(-1)]
    );
}

#[contract(logits: f32[N, C], target: i64[N] in 0..C ignore -100)]
fn with_ignore(logits: &Tensor, target: &Tensor) -> Result<()> {
    let _ = (logits, target);
    Ok(())
}

#[contract(logits: f32[N, C], target: i64[N] in 0..C ignore -100 allow_all)]
fn with_ignore_allow_all(logits: &Tensor, target: &Tensor) -> Result<()> {
    let _ = (logits, target);
    Ok(())
}

#[test]
fn ignored_values_are_allowed_and_counted() {
    let logits = Tensor::zeros((4, 3), DType::F32, &cpu()).unwrap();
    let target = Tensor::new(&[0i64, -100, 2, -100], &cpu()).unwrap();
    assert!(with_ignore(&logits, &target).is_ok());
    let target = Tensor::new(&[0i64, -100, 3, -1], &cpu()).unwrap();
    let error = with_ignore(&logits, &target).unwrap_err();
    let violation = only_violation(&error);
    let counts = violation.counts().unwrap();
    assert_eq!((counts.violating, counts.ignored, counts.total), (2, 1, 4));
    assert!(
        error
            .to_string()
            .contains("expected 0..C (ignoring -100) with C = 3 (bound by `logits` dim 1)"),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("2 of 4 elements violate the rule; 1 ignored; observed range -1..=3"),
        "{error}"
    );
    let all = Tensor::new(&[-100i64; 4], &cpu()).unwrap();
    let error = with_ignore(&logits, &all).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.rule(), Rule::AllIgnored);
    assert!(
        error
            .to_string()
            .contains("all 4 elements are ignored values (-100); a mean over them is 0/0"),
        "{error}"
    );
    assert!(with_ignore_allow_all(&logits, &all).is_ok());
}

#[test]
fn max_is_candles_sentinel_per_dtype() {
    let x = Tensor::new(&[0u8, 255, 3], &cpu()).unwrap();
    assert!(check!(x: u8[N] in 0..4 ignore MAX).is_ok());
    let error = check!(x: u8[N] in 0..4).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("in u8 it is also u8::MAX, which candle's kernels silently skip"),
        "{error}"
    );
    let x = Tensor::new(&[0i64, i64::MAX], &cpu()).unwrap();
    assert!(check!(x: u8 | i64 [N] in 0..4 ignore MAX).is_ok());
}

#[test]
fn contiguous_rejects_strided_views() {
    let x = Tensor::zeros((4, 3), DType::F32, &cpu()).unwrap();
    assert!(check!(x: f32[N, D] contiguous).is_ok());
    let t = x.t().unwrap();
    let error = check!(t: f32[N, D] contiguous).unwrap_err();
    assert_eq!(error.violations()[0].rule(), Rule::Contiguous);
    assert!(
        error.to_string().contains(
            "`t`: not contiguous (stride [1, 3] for shape [3, 4]), expected a contiguous layout"
        ),
        "{error}"
    );
}

#[test]
fn views_report_logical_indices() {
    let base = Tensor::arange(0i64, 24, &cpu())
        .unwrap()
        .reshape((4, 6))
        .unwrap();
    // Column 5 of each row of the narrowed view holds 5, 11, 17, 23.
    let narrowed = base.narrow(1, 2, 4).unwrap();
    let error = check!(narrowed: i64[N, M] in 0..20).unwrap_err();
    let violation = &error.violations()[0];
    assert_eq!(
        (violation.index(), violation.counts().unwrap().violating),
        (Some(&[3, 0][..]), 4)
    );
    let transposed = base.t().unwrap();
    let error = check!(transposed: i64[M, N] in 0..20).unwrap_err();
    assert_eq!(error.violations()[0].index(), Some(&[2, 3][..]));
    let broadcast = Tensor::new(&[1i64, 30], &cpu())
        .unwrap()
        .broadcast_as((5, 2))
        .unwrap();
    let error = check!(broadcast: i64[N, M] in 0..20).unwrap_err();
    let violation = &error.violations()[0];
    assert_eq!(violation.index(), Some(&[0, 1][..]));
    assert_eq!(violation.counts().unwrap().violating, 5);
    let empty = Tensor::zeros((0, 3), DType::I64, &cpu()).unwrap();
    assert!(check!(empty: i64[N, M] in 0..1).is_ok());
}

#[test]
fn errors_name_the_contract_location() {
    let x = Tensor::new(&[5u8], &cpu()).unwrap();
    let expected_line = line!() + 1;
    let error = check!(x: u8[N] in 0..4).unwrap_err();
    let (file, line, _) = error.location();
    assert_eq!((file, line), ("tests/tests/e2e/values.rs", expected_line));
    let start =
        format!("contract violated in `check!` (tests/tests/e2e/values.rs:{expected_line}:");
    assert!(error.to_string().starts_with(&start), "{error}");
    assert!(
        contract_error(&candle_core::Error::from(error.clone())).violations() == error.violations()
    );
}

/// The help line of a violation: index advice only for ranges that start at 0, batch advice
/// only when the batch dim came from another argument.
#[test]
fn help_lines_fit_the_rule() {
    let years = Tensor::new(&[13i64, 25], &cpu()).unwrap();
    let error = check!(years: i64[N] in 13..22).unwrap_err();
    assert!(error.violations()[0].help().is_none(), "{error}");
    let offsets = Tensor::new(&[-1i64, 2], &cpu()).unwrap();
    let error = check!(offsets: i64[N] in -5..0).unwrap_err();
    assert!(error.violations()[0].help().is_none(), "{error}");
    let ids = Tensor::new(&[-1i64, 2], &cpu()).unwrap();
    let error = check!(ids: i64[N] in 0..8).unwrap_err();
    assert!(error
        .to_string()
        .contains("usually mark padding or positions without a label"));

    let square = Tensor::zeros((4, 3), DType::F32, &cpu()).unwrap();
    let error = check!(square: f32[N, N]).unwrap_err();
    assert!(!error.to_string().contains("batch sizes differ"), "{error}");
    let (x, y) = (
        square.clone(),
        Tensor::zeros(3, DType::F32, &cpu()).unwrap(),
    );
    let error = check!(x: f32[N, D], y: f32[N]).unwrap_err();
    assert!(error.to_string().contains("batch sizes differ"), "{error}");
}

#[test]
fn tiny_and_huge_floats_print_with_an_exponent() {
    let x = Tensor::new(&[-1e-45f32, 3.4e38, 0.25], &cpu()).unwrap();
    let error = check!(x: f32[N] in 0.0..=1.0).unwrap_err();
    let violation = &error.violations()[0];
    assert_eq!(violation.value().unwrap().to_string(), "-1e-45");
    assert!(error.to_string().contains("x[0] = -1e-45"), "{error}");
    assert!(
        error.to_string().contains("observed range -1e-45..=3.4e38"),
        "{error}"
    );
}

/// An f32 0.1 is just above the real 0.1: the verdict is right, and the help says why, since
/// the value prints as the bound itself.
#[test]
fn a_value_printed_as_its_bound_is_explained() {
    let p = Tensor::new(&[0.05f32, 0.1], &cpu()).unwrap();
    let error = check!(p: f32[N] in 0.0..=0.1).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("p[1] = 0.1, expected 0.0..=0.1"), "{text}");
    assert!(
        text.contains(
            "0.1 is the f32 nearest to 0.1, but exactly it is 0.100000001490116119384765625,"
        ),
        "{text}"
    );
    // Inside the bound, no such help.
    let q = Tensor::new(&[2.0f32], &cpu()).unwrap();
    let error = check!(q: f32[N] in 0.0..=1.0).unwrap_err();
    assert!(!error.to_string().contains("nearest"), "{error}");
}

struct Scale {
    weight: Tensor,
}

impl Scale {
    #[contract(x: f32[N], self.weight: f32[N])]
    fn apply(&self, x: &Tensor) -> Result<Tensor> {
        x.mul(&self.weight)
    }
}

#[test]
fn a_weight_of_the_wrong_size_gets_no_batch_advice() {
    let scale = Scale {
        weight: Tensor::ones(3, DType::F32, &cpu()).unwrap(),
    };
    let error = scale
        .apply(&Tensor::ones(2, DType::F32, &cpu()).unwrap())
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("dim 0 is 3 but N = 2 (bound by `x` dim 0)"),
        "{text}"
    );
    assert!(!text.contains("batch sizes differ"), "{text}");
}
