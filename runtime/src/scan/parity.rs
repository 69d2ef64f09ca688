//! Property tests: the CPU scan and the device path (forced onto the CPU) agree with a plain
//! reference that walks the logical elements (read back with `to_vec` from an exact `f64` or
//! `i64` twin of the tensor, built with the same view ops), for every readable dtype, awkward
//! layouts (narrowed with offsets, transposed, broadcast), `where` masks of several dtypes and
//! layouts, and random rules (ranges, `ignore`, `finite`, `integral`, the all-ignored rule).

use candle_core::{DType, Device, Tensor};
use proptest::prelude::*;

use crate::error::{Counts, Value};
use crate::rule::{Details, Ignore, Interval, Num, Resolved, decode_e8m0};
use crate::scan::{Outcome, Request, cpu, device};
use crate::spec::Side;

/// Every dtype a scan reads.
const SUBJECT_DTYPES: [DType; 11] = [
    DType::U8,
    DType::U32,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::BF16,
    DType::F16,
    DType::F32,
    DType::F64,
    DType::F8E4M3,
    DType::F8E8M0,
];

/// Mask dtypes: integers, floats (with -0.0 and NaN), and f8e8m0 (which has no zero).
const MASK_DTYPES: [DType; 11] = [
    DType::U8,
    DType::U32,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::BF16,
    DType::F16,
    DType::F32,
    DType::F64,
    DType::F8E4M3,
    DType::F8E8M0,
];

/// One element as the reference sees it: integers exactly, floats widened exactly.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Elem {
    Int(i128),
    Float(f64),
}

impl Elem {
    fn as_f64(self) -> f64 {
        match self {
            Elem::Int(v) => v as f64,
            Elem::Float(v) => v,
        }
    }
}

/// What one element is made from: an integer for integer dtypes, a float for float dtypes, a
/// byte for f8e8m0 (its exponent).
#[derive(Debug, Clone, Copy)]
struct Pick {
    int: i64,
    float: f64,
    exponent: u8,
}

fn pick() -> impl Strategy<Value = Pick> {
    let int = prop_oneof![
        8 => -3i64..12,
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
        1 => Just(255),
        1 => Just(i64::from(i16::MAX)),
        1 => Just(i64::from(i32::MAX)),
    ];
    let float = prop_oneof![
        6 => (-3i32..12).prop_map(f64::from),
        2 => Just(0.5),
        2 => Just(2.5),
        1 => Just(-0.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        2 => -3.0f64..12.0,
        // At and next to the inexact bounds below (f64 0.1 is above the real 0.1, f64 0.3
        // below the real 0.3); each dtype stores its own nearest value.
        1 => Just(0.1),
        1 => Just(0.1f64.next_down()),
        1 => Just(0.3),
        1 => Just(0.3f64.next_up()),
    ];
    let exponent = prop_oneof![4 => 120u8..136, 1 => Just(0xFF), 1 => Just(0u8), 1 => any::<u8>()];
    (int, float, exponent).prop_map(|(int, float, exponent)| Pick {
        int,
        float,
        exponent,
    })
}

/// The bytes of `picks` in `dtype` and the values they hold.
fn encode(dtype: DType, picks: &[Pick]) -> (Vec<u8>, Vec<Elem>) {
    let mut bytes = Vec::new();
    let mut elems = Vec::new();
    for p in picks {
        let elem = match dtype {
            DType::U8 => {
                let v = p.int as u8;
                bytes.push(v);
                Elem::Int(v.into())
            }
            DType::U32 => {
                let v = p.int as u32;
                bytes.extend(v.to_le_bytes());
                Elem::Int(v.into())
            }
            DType::I16 => {
                let v = p.int as i16;
                bytes.extend(v.to_le_bytes());
                Elem::Int(v.into())
            }
            DType::I32 => {
                let v = p.int as i32;
                bytes.extend(v.to_le_bytes());
                Elem::Int(v.into())
            }
            DType::I64 => {
                bytes.extend(p.int.to_le_bytes());
                Elem::Int(p.int.into())
            }
            DType::BF16 => {
                let v = half::bf16::from_f64(p.float);
                bytes.extend(v.to_bits().to_le_bytes());
                Elem::Float(v.to_f64())
            }
            DType::F16 => {
                let v = half::f16::from_f64(p.float);
                bytes.extend(v.to_bits().to_le_bytes());
                Elem::Float(v.to_f64())
            }
            DType::F32 => {
                let v = p.float as f32;
                bytes.extend(v.to_bits().to_le_bytes());
                Elem::Float(v.into())
            }
            DType::F64 => {
                bytes.extend(p.float.to_bits().to_le_bytes());
                Elem::Float(p.float)
            }
            DType::F8E4M3 => {
                let v = float8::F8E4M3::from_f64(p.float);
                bytes.push(v.to_bits());
                Elem::Float(v.to_f64())
            }
            DType::F8E8M0 => {
                bytes.push(p.exponent);
                Elem::Float(decode_e8m0(p.exponent).into())
            }
            other => unreachable!("{other:?} is not generated"),
        };
        elems.push(elem);
    }
    (bytes, elems)
}

/// How a view of the final dims is made from a larger stored tensor: an optional transpose of
/// the stored tensor, then per axis a narrow (by `extra` elements, at an offset) or a broadcast
/// from size 1.
#[derive(Debug, Clone)]
struct Plan {
    swap: Option<(usize, usize)>,
    axes: Vec<(usize, usize, bool)>,
}

fn plan(rank: usize) -> impl Strategy<Value = Plan> {
    let axis = (0usize..3, 0usize..3, prop::bool::weighted(0.3))
        .prop_map(|(extra, offset, broadcast)| (extra, offset.min(extra), broadcast));
    let swap = prop::option::of((0..rank, 0..rank))
        .prop_map(|swap| swap.and_then(|(a, b)| (a != b).then_some((a.min(b), a.max(b)))));
    (swap, prop::collection::vec(axis, rank)).prop_map(|(swap, axes)| Plan { swap, axes })
}

impl Plan {
    /// The dims of the stored tensor (after the transpose is undone).
    fn stored_dims(&self, dims: &[usize]) -> Vec<usize> {
        dims.iter()
            .zip(&self.axes)
            .map(|(&d, &(extra, _, broadcast))| if broadcast { 1 } else { d } + extra)
            .collect()
    }

    /// The view of `dims` over the contiguous `base` (of the stored dims, transposed).
    fn view(&self, base: Tensor, dims: &[usize]) -> Tensor {
        let mut t = match self.swap {
            Some((a, b)) => base.transpose(a, b).unwrap(),
            None => base,
        };
        for (axis, (&d, &(_, offset, broadcast))) in dims.iter().zip(&self.axes).enumerate() {
            let len = if broadcast { 1 } else { d };
            t = t.narrow(axis, offset, len).unwrap();
        }
        t.broadcast_as(dims).unwrap()
    }

    /// The view in `dtype` from `picks`, and its exact twin (f64, or i64 for integers) made
    /// with the same ops, so the twin's `to_vec` lists the view's values in logical order.
    fn build(&self, dtype: DType, picks: &[Pick], dims: &[usize]) -> (Tensor, Tensor) {
        let mut stored = self.stored_dims(dims);
        if let Some((a, b)) = self.swap {
            stored.swap(a, b);
        }
        let count: usize = stored.iter().product();
        let picks: Vec<Pick> = picks.iter().copied().cycle().take(count).collect();
        let (bytes, elems) = encode(dtype, &picks);
        let cpu = &Device::Cpu;
        let base = Tensor::from_raw_buffer(&bytes, dtype, &stored, cpu).unwrap();
        let twin = if dtype.is_int() {
            let ints: Vec<i64> = elems
                .iter()
                .map(|e| match e {
                    Elem::Int(v) => *v as i64,
                    Elem::Float(_) => unreachable!(),
                })
                .collect();
            Tensor::from_vec(ints, stored.as_slice(), cpu).unwrap()
        } else {
            let floats: Vec<f64> = elems.iter().map(|e| e.as_f64()).collect();
            Tensor::from_vec(floats, stored.as_slice(), cpu).unwrap()
        };
        (self.view(base, dims), self.view(twin, dims))
    }
}

/// The logical values of a twin.
fn values_of(twin: &Tensor) -> Vec<Elem> {
    let flat = twin.flatten_all().unwrap();
    match twin.dtype() {
        DType::I64 => flat
            .to_vec1::<i64>()
            .unwrap()
            .into_iter()
            .map(|v| Elem::Int(v.into()))
            .collect(),
        _ => flat
            .to_vec1::<f64>()
            .unwrap()
            .into_iter()
            .map(Elem::Float)
            .collect(),
    }
}

fn bound() -> impl Strategy<Value = Num> {
    prop_oneof![
        6 => (-3i128..12).prop_map(Num::Int),
        1 => Just(Num::Float(0.5)),
        1 => Just(Num::Float(2.5)),
        1 => Just(Num::Float(-0.5)),
        1 => Just(Num::Float(f64::INFINITY)),
        1 => Just(Num::Float(f64::NEG_INFINITY)),
        1 => Just(Num::Inexact(0.1, Side::Below)),
        1 => Just(Num::Inexact(0.3, Side::Above)),
    ]
}

fn rule() -> impl Strategy<Value = (Resolved, bool)> {
    let interval = (
        prop::option::of(bound()),
        prop::option::of(bound()),
        any::<bool>(),
    )
        .prop_map(|(lo, hi, inclusive)| Interval { lo, hi, inclusive });
    let ignore = prop_oneof![
        4 => (-3i128..12).prop_map(|v| Ignore::Value(Num::Int(v))),
        1 => Just(Ignore::Value(Num::Float(0.5))),
        1 => Just(Ignore::Max),
    ];
    (
        prop::option::of(prop::collection::vec(interval, 1..=2)),
        prop::collection::vec(ignore, 0..=2),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(ranges, ignore, finite, integral, allow_all, needs_usable)| {
                let rule = Resolved {
                    ranges,
                    ignore,
                    finite,
                    allow_all,
                    integral,
                };
                (rule, needs_usable)
            },
        )
}

/// The largest value of an integer dtype (`ignore MAX`); `None` for floats.
fn dtype_max(dtype: DType) -> Option<i128> {
    Some(match dtype {
        DType::U8 => u8::MAX.into(),
        DType::U32 => u32::MAX.into(),
        DType::I16 => i16::MAX.into(),
        DType::I32 => i32::MAX.into(),
        DType::I64 => i64::MAX.into(),
        _ => return None,
    })
}

fn is_ignored(v: Elem, rule: &Resolved, dtype: DType) -> bool {
    rule.ignore.iter().any(|ignore| match (ignore, v) {
        (Ignore::Max, Elem::Int(v)) => Some(v) == dtype_max(dtype),
        (Ignore::Max, Elem::Float(_)) => false,
        (Ignore::Value(Num::Int(i)), Elem::Int(v)) => *i == v,
        (Ignore::Value(Num::Float(f)), Elem::Int(v)) => *f == v as f64,
        (Ignore::Value(Num::Inexact(..)), _) => false,
        (Ignore::Value(n), Elem::Float(v)) => {
            // No value equals an inexact literal.
            !matches!(n, Num::Inexact(..)) && n.approx() == v
        }
    })
}

/// `v` against one bound, as real numbers (every generated value is exact in f64).
/// How `v` compares with the real number `bound` stands for (`None` for NaN).
fn cmp_real(v: Elem, bound: Num) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering;
    match (v, bound) {
        (Elem::Int(v), Num::Int(b)) => Some(v.cmp(&b)),
        (v, Num::Inexact(nearest, side)) => match v.as_f64().partial_cmp(&nearest)? {
            // No f64 lies between the nearest and the real number.
            Ordering::Equal if side == Side::Above => Some(Ordering::Less),
            Ordering::Equal => Some(Ordering::Greater),
            other => Some(other),
        },
        (v, b) => v.as_f64().partial_cmp(&num_f64(b)),
    }
}

fn at_least(v: Elem, lo: Num) -> bool {
    cmp_real(v, lo).is_some_and(|o| o.is_ge())
}

fn at_most(v: Elem, hi: Num, inclusive: bool) -> bool {
    cmp_real(v, hi).is_some_and(|o| if inclusive { o.is_le() } else { o.is_lt() })
}

fn num_f64(n: Num) -> f64 {
    n.approx()
}

fn accepts(v: Elem, rule: &Resolved) -> bool {
    let finite = match v {
        Elem::Int(_) => true,
        Elem::Float(f) => f.is_finite(),
    };
    let inside = match &rule.ranges {
        None => true,
        // NaN is in no range, not even `..`.
        Some(_) if v.as_f64().is_nan() => false,
        Some(ranges) => ranges.iter().any(|r| {
            r.lo.is_none_or(|lo| at_least(v, lo))
                && r.hi.is_none_or(|hi| at_most(v, hi, r.inclusive))
        }),
    };
    let whole = match v {
        Elem::Int(_) => true,
        Elem::Float(f) => f.is_finite() && f.fract() == 0.0,
    };
    inside && (!rule.finite || finite) && (!rule.integral || whole)
}

/// What a scan should report.
#[derive(Debug, PartialEq)]
struct Expected {
    fails: bool,
    counts: Counts,
    first_index: Option<Vec<usize>>,
    first_value: Option<f64>,
    observed: Option<(f64, f64)>,
}

fn unravel(mut position: usize, dims: &[usize]) -> Vec<usize> {
    let mut index = vec![0; dims.len()];
    for (axis, &size) in dims.iter().enumerate().rev() {
        index[axis] = position % size;
        position /= size;
    }
    index
}

/// The plain walk over the logical elements.
fn reference(
    values: &[Elem],
    checked: Option<&[bool]>,
    rule: &Resolved,
    needs_usable: bool,
    dtype: DType,
    dims: &[usize],
) -> Expected {
    let mut counts = Counts {
        total: values.len() as u64,
        ..Counts::default()
    };
    let (mut first_index, mut first_value, mut observed) = (None, None, None::<(f64, f64)>);
    for (position, &v) in values.iter().enumerate() {
        if checked.is_some_and(|checked| !checked[position]) {
            counts.exempt += 1;
            continue;
        }
        if is_ignored(v, rule, dtype) {
            counts.ignored += 1;
            continue;
        }
        let f = v.as_f64();
        if f.is_nan() {
            counts.nan += 1;
        } else {
            observed = Some(observed.map_or((f, f), |(lo, hi)| (lo.min(f), hi.max(f))));
        }
        if !accepts(v, rule) {
            counts.violating += 1;
            if first_index.is_none() {
                first_index = Some(unravel(position, dims));
                first_value = Some(f);
            }
        }
    }
    let none_usable = counts.ignored + counts.exempt == counts.total;
    Expected {
        fails: counts.violating > 0 || (needs_usable && none_usable),
        counts,
        first_index,
        first_value,
        observed,
    }
}

/// A scan's outcome in the reference's terms.
fn found(outcome: Outcome) -> Expected {
    match outcome {
        Outcome::Pass => Expected {
            fails: false,
            counts: Counts::default(),
            first_index: None,
            first_value: None,
            observed: None,
        },
        Outcome::Fail(Details {
            first_index,
            first_value,
            counts,
            observed,
            ..
        }) => Expected {
            fails: true,
            counts,
            first_index,
            first_value: first_value.map(Value::to_f64),
            observed: observed.map(|(lo, hi)| (lo.to_f64(), hi.to_f64())),
        },
        Outcome::Unreadable => panic!("a readable dtype was unreadable"),
        Outcome::Failed(error) => panic!("the scan failed: {error}"),
    }
}

/// Equal, with NaN equal to NaN and -0.0 to 0.0 (the observed range may hold either zero).
fn same(a: &Expected, b: &Expected) -> bool {
    let same_f64 = |x: f64, y: f64| x == y || (x.is_nan() && y.is_nan());
    let same_opt = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => same_f64(x, y),
        (None, None) => true,
        _ => false,
    };
    a.fails == b.fails
        && (!a.fails
            || (a.counts == b.counts
                && a.first_index == b.first_index
                && same_opt(a.first_value, b.first_value)
                && same_opt(a.observed.map(|o| o.0), b.observed.map(|o| o.0))
                && same_opt(a.observed.map(|o| o.1), b.observed.map(|o| o.1))))
}

/// One generated case.
#[derive(Debug, Clone)]
struct Case {
    dims: Vec<usize>,
    dtype: DType,
    plan: Plan,
    picks: Vec<Pick>,
    mask: Option<(DType, Plan, Vec<Pick>)>,
    rule: Resolved,
    needs_usable: bool,
}

fn case() -> impl Strategy<Value = Case> {
    prop::collection::vec(1usize..5, 1..=3).prop_flat_map(|dims| {
        let rank = dims.len();
        let picks = || prop::collection::vec(pick(), 1..40);
        let mask = prop::option::weighted(
            0.8,
            (
                prop::sample::select(MASK_DTYPES.to_vec()),
                plan(rank),
                picks(),
            ),
        );
        (
            Just(dims),
            prop::sample::select(SUBJECT_DTYPES.to_vec()),
            plan(rank),
            picks(),
            mask,
            rule(),
        )
            .prop_map(
                |(dims, dtype, plan, picks, mask, (rule, needs_usable))| Case {
                    dims,
                    dtype,
                    plan,
                    picks,
                    mask,
                    rule,
                    needs_usable,
                },
            )
    })
}

fn check_case(case: &Case) -> Result<(), TestCaseError> {
    let (subject, twin) = case.plan.build(case.dtype, &case.picks, &case.dims);
    let values = values_of(&twin);
    let mask = case
        .mask
        .as_ref()
        .map(|(dtype, plan, picks)| plan.build(*dtype, picks, &case.dims));
    let checked: Option<Vec<bool>> = mask.as_ref().map(|(_, twin)| {
        values_of(twin)
            .into_iter()
            .map(|v| v.as_f64() != 0.0)
            .collect()
    });
    let expected = reference(
        &values,
        checked.as_deref(),
        &case.rule,
        case.needs_usable,
        case.dtype,
        &case.dims,
    );
    let request = Request {
        tensor: &subject,
        mask: mask.as_ref().map(|(mask, _)| mask),
        rule: &case.rule,
        needs_usable: case.needs_usable,
    };
    let on_cpu = found(cpu::scan(&request));
    prop_assert!(
        same(&on_cpu, &expected),
        "CPU scan\n  found    {on_cpu:?}\n  expected {expected:?}\n  subject {:?}\n  mask {:?}",
        subject.layout(),
        mask.as_ref().map(|(m, _)| m.layout())
    );
    let on_device = device::scan(std::slice::from_ref(&request))
        .pop()
        .map(found);
    let on_device = on_device.expect("one outcome per request");
    prop_assert!(
        same(&on_device, &expected),
        "device path\n  found    {on_device:?}\n  expected {expected:?}\n  subject {:?}\n  mask {:?}",
        subject.layout(),
        mask.as_ref().map(|(m, _)| m.layout())
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn cpu_and_device_scans_match_a_plain_walk(case in case()) {
        check_case(&case)?;
    }
}

fn unit_interval() -> Resolved {
    Resolved {
        ranges: Some(vec![Interval {
            lo: Some(Num::Int(0)),
            hi: Some(Num::Int(1)),
            inclusive: true,
        }]),
        ignore: vec![],
        finite: false,
        allow_all: false,
        integral: false,
    }
}

fn fail(outcome: Outcome) -> Details {
    match outcome {
        Outcome::Fail(details) => details,
        other => panic!("expected a failure, found {other:?}"),
    }
}

#[test]
fn integral_is_checked_on_the_branch_free_path_too() {
    // Large and contiguous: without `integral` this is the vectorised single-interval count.
    let n = 3 * (1 << 17) + 5;
    let mut data = vec![1.0f32; n];
    data[200_001] = 0.5;
    data[n - 1] = 0.25;
    let t = Tensor::from_vec(data, n, &Device::Cpu).unwrap();
    let plain = unit_interval();
    let request = |rule| Request {
        tensor: &t,
        mask: None,
        rule,
        needs_usable: false,
    };
    assert!(matches!(cpu::scan(&request(&plain)), Outcome::Pass));
    let integral = Resolved {
        integral: true,
        ..unit_interval()
    };
    let details = fail(cpu::scan(&request(&integral)));
    assert_eq!(details.counts.violating, 2);
    assert_eq!(details.first_index, Some(vec![200_001]));
    assert_eq!(details.first_value, Some(Value::Float(0.5, DType::F32)));
    let details = fail(device::scan(&[request(&integral)]).remove(0));
    assert_eq!(details.counts.violating, 2);
    assert_eq!(details.first_index, Some(vec![200_001]));
    // On an integer dtype `integral` restricts nothing.
    let ints = Tensor::new(&[0u32, 1, 1], &Device::Cpu).unwrap();
    let on_ints = Request {
        tensor: &ints,
        mask: None,
        rule: &integral,
        needs_usable: false,
    };
    assert!(matches!(cpu::scan(&on_ints), Outcome::Pass));
}

#[test]
fn a_large_masked_scan_split_across_threads_counts_only_checked_positions() {
    // [rows, 1000] f32, with an attention-style mask [rows, 1] broadcast over the columns:
    // row r is exempt when r % 3 == 0. Values are 0.5, except 7.0 at column 10 of every
    // tenth row.
    let (rows, cols) = (600, 1000);
    let data: Vec<f32> = (0..rows * cols)
        .map(|i| {
            if (i / cols) % 10 == 0 && i % cols == 10 {
                7.0
            } else {
                0.5
            }
        })
        .collect();
    let t = Tensor::from_vec(data, (rows, cols), &Device::Cpu).unwrap();
    let mask: Vec<u8> = (0..rows).map(|r| u8::from(r % 3 != 0)).collect();
    let mask = Tensor::from_vec(mask, (rows, 1), &Device::Cpu)
        .unwrap()
        .broadcast_as((rows, cols))
        .unwrap();
    let rule = unit_interval();
    let request = Request {
        tensor: &t,
        mask: Some(&mask),
        rule: &rule,
        needs_usable: false,
    };
    // Rows 0, 30, 60, ... are exempt; rows 10, 20, 40, 50, ... are checked: 40 of 60.
    let exempt_rows = (0..rows).filter(|r| r % 3 == 0).count() as u64;
    for details in [
        fail(cpu::scan(&request)),
        fail(device::scan(std::slice::from_ref(&request)).remove(0)),
    ] {
        assert_eq!(details.counts.violating, 40);
        assert_eq!(details.counts.exempt, exempt_rows * cols as u64);
        assert_eq!(details.counts.total, (rows * cols) as u64);
        assert_eq!(details.first_index, Some(vec![10, 10]));
    }
    // With every offending row exempt, it passes.
    let mask: Vec<f32> = (0..rows)
        .map(|r| if r % 10 == 0 { -0.0 } else { 1.0 })
        .collect();
    let mask = Tensor::from_vec(mask, (rows, 1), &Device::Cpu)
        .unwrap()
        .broadcast_as((rows, cols))
        .unwrap();
    let request = Request {
        mask: Some(&mask),
        ..request
    };
    assert!(matches!(cpu::scan(&request), Outcome::Pass));
    assert!(matches!(
        device::scan(std::slice::from_ref(&request)).remove(0),
        Outcome::Pass
    ));
}

#[test]
fn a_passing_masked_scan_on_the_device_path_is_one_transfer() {
    let t = Tensor::new(&[[0i64, 5, -1], [2, -1, -1]], &Device::Cpu).unwrap();
    let mask = Tensor::new(&[[1u8, 1, 0], [1, 0, 0]], &Device::Cpu).unwrap();
    let rule = Resolved {
        ranges: Some(vec![Interval {
            lo: Some(Num::Int(0)),
            hi: Some(Num::Int(8)),
            inclusive: false,
        }]),
        ignore: vec![Ignore::Value(Num::Int(-100))],
        finite: false,
        allow_all: false,
        integral: true,
    };
    let request = Request {
        tensor: &t,
        mask: Some(&mask),
        rule: &rule,
        needs_usable: true,
    };
    let before = crate::scan::device_transfers();
    assert!(matches!(device::scan(&[request]).remove(0), Outcome::Pass));
    assert_eq!(crate::scan::device_transfers() - before, 1);
    // Everything exempt: no usable checked position, which `needs_usable` rejects.
    let none = mask.zeros_like().unwrap();
    let request = Request {
        tensor: &t,
        mask: Some(&none),
        rule: &rule,
        needs_usable: true,
    };
    for details in [
        fail(cpu::scan(&request)),
        fail(device::scan(std::slice::from_ref(&request)).remove(0)),
    ] {
        assert_eq!(details.counts.exempt, 6);
        assert_eq!(details.counts.violating, 0);
    }
}
