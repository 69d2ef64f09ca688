//! Property tests: for random dtypes, shapes, views and values (NaN, ±inf, -0.0, subnormals,
//! each dtype's extremes), the guard's verdict, first index and count equal a plain reference
//! that copies the data to a `Vec` and checks each element, on the CPU scan and on the device
//! path alike.

use candle_contracts::__private::force_device_path;
use candle_contracts::{check, ContractError, Rule};
use candle_core::{DType, Device, Tensor};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum View {
    Whole,
    Narrow { dim: usize, start: usize },
    Transpose,
    Broadcast(usize),
}

fn make_view(base: &Tensor, view: &View) -> Tensor {
    match *view {
        View::Whole => base.clone(),
        View::Narrow { dim, start } => {
            let dim = dim % base.rank();
            let size = base.dim(dim).unwrap();
            let start = start % size;
            base.narrow(dim, start, size - start).unwrap()
        }
        View::Transpose if base.rank() >= 2 => base.t().unwrap(),
        View::Transpose => base.clone(),
        View::Broadcast(n) => {
            let mut dims = vec![n];
            dims.extend_from_slice(base.dims());
            base.unsqueeze(0).unwrap().broadcast_as(dims).unwrap()
        }
    }
}

fn view_strategy() -> impl Strategy<Value = View> {
    prop_oneof![
        Just(View::Whole),
        (0usize..3, 0usize..4).prop_map(|(dim, start)| View::Narrow { dim, start }),
        Just(View::Transpose),
        (1usize..4).prop_map(View::Broadcast),
    ]
}

fn unravel(mut position: usize, dims: &[usize]) -> Vec<usize> {
    let mut index = vec![0; dims.len()];
    for (axis, &size) in dims.iter().enumerate().rev() {
        index[axis] = position % size;
        position /= size;
    }
    index
}

/// What the reference and the guard must agree on: `None` when the call passes, else the
/// first offending index and the count.
type Verdict = Option<(Vec<usize>, u64)>;

fn verdict_of(result: Result<(), ContractError>) -> Verdict {
    let error = result.err()?;
    let violation = error
        .violations()
        .iter()
        .find(|v| v.rule() == Rule::Range)
        .unwrap_or_else(|| panic!("unexpected violation: {error}"));
    Some((
        violation.index().expect("an index").to_vec(),
        violation.counts().expect("counts").violating,
    ))
}

fn reference<T: Copy>(values: &[T], dims: &[usize], bad: impl Fn(T) -> bool) -> Verdict {
    let first = values.iter().position(|&v| bad(v))?;
    let count = values.iter().filter(|&&v| bad(v)).count() as u64;
    Some((unravel(first, dims), count))
}

const INT_DTYPES: [DType; 5] = [DType::U8, DType::U32, DType::I16, DType::I32, DType::I64];
const FLOAT_DTYPES: [DType; 5] = [
    DType::F16,
    DType::BF16,
    DType::F32,
    DType::F64,
    DType::F8E4M3,
];

fn int_range(dtype: DType) -> (i64, i64) {
    match dtype {
        DType::U8 => (0, u8::MAX as i64),
        DType::U32 => (0, u32::MAX as i64),
        DType::I16 => (i16::MIN as i64, i16::MAX as i64),
        DType::I32 => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    }
}

fn int_value() -> impl Strategy<Value = i64> {
    prop_oneof![
        -3i64..12,
        Just(-100),
        Just(255),
        Just(u32::MAX as i64),
        Just(i64::MIN),
        Just(i64::MAX),
        Just(i16::MIN as i64),
        Just(i32::MAX as i64),
        any::<i64>(),
    ]
}

fn float_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        -2.0f64..2.0,
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0),
        Just(0.0),
        Just(1.0),
        Just(1e-40),
        Just(6e-8),
        Just(448.0),
        Just(65504.0),
        Just(f32::MAX as f64),
        Just(f64::MAX),
        Just(-f64::MAX),
        any::<f64>(),
    ]
}

fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..5, 1..4)
}

fn int_case() -> impl Strategy<Value = (DType, Vec<usize>, Vec<i64>, View, i64, i64, bool)> {
    (
        0usize..5,
        shape(),
        view_strategy(),
        int_value(),
        int_value(),
        any::<bool>(),
    )
        .prop_flat_map(|(d, shape, view, lo, hi, inclusive)| {
            let n: usize = shape.iter().product();
            (
                Just(INT_DTYPES[d]),
                Just(shape),
                prop::collection::vec(int_value(), n),
                Just(view),
                Just(lo),
                Just(hi),
                Just(inclusive),
            )
        })
}

fn float_case() -> impl Strategy<Value = (DType, Vec<usize>, Vec<f64>, View, f64, f64, bool)> {
    (
        0usize..5,
        shape(),
        view_strategy(),
        float_value(),
        float_value(),
        any::<bool>(),
    )
        .prop_flat_map(|(d, shape, view, lo, hi, inclusive)| {
            let n: usize = shape.iter().product();
            (
                Just(FLOAT_DTYPES[d]),
                Just(shape),
                prop::collection::vec(float_value(), n),
                Just(view),
                Just(lo),
                Just(hi),
                Just(inclusive),
            )
        })
}

/// The view's elements in logical order, widened exactly. (candle 0.11 recurses forever
/// converting f8e4m3 straight to f64 on the CPU, so every narrow float goes through f32.)
fn float_values(x: &Tensor) -> Vec<f64> {
    let flat = x.flatten_all().unwrap();
    let wide = if x.dtype() == DType::F64 {
        flat
    } else {
        flat.to_dtype(DType::F32).unwrap()
    };
    wide.to_dtype(DType::F64).unwrap().to_vec1::<f64>().unwrap()
}

fn int_tensor(dtype: DType, shape: &[usize], values: &[i64]) -> Tensor {
    let (min, max) = int_range(dtype);
    let clamped: Vec<i64> = values.iter().map(|&v| v.clamp(min, max)).collect();
    Tensor::from_vec(clamped, shape, &Device::Cpu)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn integer_ranges_match_the_reference(
        (dtype, shape, values, view, lo, hi, inclusive) in int_case(),
        device_path in any::<bool>(),
    ) {
        let x = make_view(&int_tensor(dtype, &shape, &values), &view);
        let logical = x.flatten_all().unwrap().to_dtype(DType::I64).unwrap().to_vec1::<i64>().unwrap();
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        let expected = reference(&logical, x.dims(), |v| {
            !(v >= lo && if inclusive { v <= hi } else { v < hi })
        });
        force_device_path(device_path);
        let found = if inclusive {
            verdict_of(check!(x: int[..] in {lo}..={hi}))
        } else {
            verdict_of(check!(x: int[..] in {lo}..{hi}))
        };
        force_device_path(false);
        prop_assert_eq!(found, expected);
    }

    #[test]
    fn ignored_values_match_the_reference(
        (dtype, shape, values, view, lo, hi, _inclusive) in int_case(),
        device_path in any::<bool>(),
    ) {
        let x = make_view(&int_tensor(dtype, &shape, &values), &view);
        let logical = x.flatten_all().unwrap().to_dtype(DType::I64).unwrap().to_vec1::<i64>().unwrap();
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        let expected = reference(&logical, x.dims(), |v| v != -100 && !(v >= lo && v <= hi));
        force_device_path(device_path);
        let result = check!(x: int[..] in {lo}..={hi} ignore -100 allow_all);
        force_device_path(false);
        prop_assert_eq!(verdict_of(result), expected);
    }

    #[test]
    fn float_ranges_match_the_reference(
        (dtype, shape, values, view, lo, hi, inclusive) in float_case(),
        device_path in any::<bool>(),
    ) {
        prop_assume!(!lo.is_nan() && !hi.is_nan());
        let base = Tensor::from_vec(values, shape.as_slice(), &Device::Cpu).unwrap().to_dtype(dtype).unwrap();
        let x = make_view(&base, &view);
        let logical = float_values(&x);
        let expected = reference(&logical, x.dims(), |v| {
            !(v >= lo && if inclusive { v <= hi } else { v < hi })
        });
        force_device_path(device_path);
        let found = if inclusive {
            verdict_of(check!(x: float[..] in {lo}..={hi}))
        } else {
            verdict_of(check!(x: float[..] in {lo}..{hi}))
        };
        force_device_path(false);
        prop_assert_eq!(found, expected);
    }

    #[test]
    fn finite_matches_the_reference(
        (dtype, shape, values, view, _lo, _hi, _inclusive) in float_case(),
        device_path in any::<bool>(),
    ) {
        let base = Tensor::from_vec(values, shape.as_slice(), &Device::Cpu).unwrap().to_dtype(dtype).unwrap();
        let x = make_view(&base, &view);
        let logical = float_values(&x);
        let expected = reference(&logical, x.dims(), |v| !v.is_finite());
        force_device_path(device_path);
        let result = check!(x: float[..] finite);
        force_device_path(false);
        let found = result.err().map(|error| {
            let v = &error.violations()[0];
            (v.index().unwrap().to_vec(), v.counts().unwrap().violating)
        });
        prop_assert_eq!(found, expected);
    }
}

#[test]
fn a_nan_bound_is_reported_not_guessed() {
    let x = Tensor::new(&[0.5f32], &Device::Cpu).unwrap();
    let hi = f64::NAN;
    let error = check!(x: f32[N] in 0.0..{hi}).unwrap_err();
    assert_eq!(error.violations()[0].rule(), Rule::Bound);
    assert!(
        error
            .to_string()
            .contains("`x`: bound `{hi}` cannot be evaluated: `{hi}` is NaN"),
        "{error}"
    );
}
