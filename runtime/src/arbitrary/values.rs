//! The values of one drawn tensor: for its dtype, the intervals a clause's `in` allows (as the
//! guard compares them: `rule.rs`), the window draws fall in (an open end is cut to a few dozen
//! values), the edges and ignored values, drawn often, and the tensor built from them.
//!
//! Every element is a proptest strategy of its own (`Union` of the windows, the edges and the
//! ignored values), so an element shrinks towards its window's simplest value.

use candle_core::{DType, Device, Tensor};
use half::{bf16, f16};
use proptest::prelude::*;
use proptest::strategy::Union;

use crate::rule::{Compare, Ignore, Interval, Num, Resolved};

/// How far past a bound an open end's draws reach.
const OPEN_REACH: i64 = 64;
/// Where draws fall when neither end is bounded: `-SPREAD..=SPREAD`.
const SPREAD: i64 = 10;
/// The weights of a window's draws, an edge and an ignored value.
const WEIGHT_WINDOW: u32 = 6;
const WEIGHT_EDGE: u32 = 3;
const WEIGHT_IGNORE: u32 = 2;
/// One tensor in this many is all ignored values, where `allow_all` allows it.
const ALL_IGNORED_ONE_IN: u32 = 8;

/// The dtypes `arbitrary!` draws, in order of preference (a draw shrinks towards the first of a
/// clause's dtypes): those candle creates on the CPU, without the f8, f6 and f4 families.
pub(crate) const DRAWN_DTYPES: [DType; 9] = [
    DType::F32,
    DType::F64,
    DType::F16,
    DType::BF16,
    DType::U32,
    DType::I64,
    DType::U8,
    DType::I32,
    DType::I16,
];

/// What one element may be, for one dtype: windows to draw from, edges and ignored values (all
/// exact values of the dtype), and the all-ignored rule.
#[derive(Debug, Clone)]
pub(crate) struct Recipe<T> {
    windows: Vec<(T, T)>,
    edges: Vec<T>,
    ignore: Vec<T>,
    /// `allow_all` with ignored values: a tensor of ignored values only is drawn now and then.
    all_ignored: bool,
    /// `ignore` without `allow_all`: a tensor needs one element that is not ignored.
    needs_usable: bool,
    /// Floats only: every value a whole number.
    integral: bool,
}

/// A recipe for an integer or a float dtype.
#[derive(Debug, Clone)]
pub(crate) enum Values {
    Int(Recipe<i64>),
    Float(Recipe<f64>),
}

/// The interval of `C` a pattern allows, as `(lo, hi, lo_open, hi_open)`: an end is open when
/// the pattern has no bound there (or an infinite one).
fn typed<C: Compare>(interval: Interval, finite: bool) -> Option<(C, C, bool, bool)> {
    let open = |bound: Option<Num>| match bound {
        None => true,
        Some(Num::Float(v)) => v.is_infinite(),
        Some(_) => false,
    };
    C::interval(interval, finite).map(|(lo, hi)| (lo, hi, open(interval.lo), open(interval.hi)))
}

/// Every pattern of `rule` as typed intervals; a rule without `in` is one interval open at both
/// ends.
pub(crate) fn intervals<C: Compare>(rule: &Resolved) -> Vec<(C, C, bool, bool)> {
    let everything = Interval {
        lo: None,
        hi: None,
        inclusive: false,
    };
    match &rule.ranges {
        None => typed::<C>(everything, rule.finite).into_iter().collect(),
        Some(ranges) => ranges
            .iter()
            .filter_map(|range| typed::<C>(*range, rule.finite))
            .collect(),
    }
}

/// The window of an integer interval, and its edges.
fn int_window(lo: i64, hi: i64, lo_open: bool, hi_open: bool) -> ((i64, i64), Vec<i64>) {
    let (from, to) = match (lo_open, hi_open) {
        (true, true) => (lo.max(-SPREAD), hi.min(SPREAD)),
        (false, true) => (lo, hi.min(lo.saturating_add(OPEN_REACH))),
        (true, false) => (lo.max(hi.saturating_sub(OPEN_REACH)), hi),
        (false, false) => (lo, hi),
    };
    // An interval far from 0 and open at both ends (`i64` above 100, say) keeps its own end.
    let (from, to) = if from > to { (lo, lo) } else { (from, to) };
    let mut edges = Vec::new();
    if !lo_open {
        edges.push(lo);
    }
    if !hi_open && hi != lo {
        edges.push(hi);
    }
    ((from, to), edges)
}

/// A recipe for an integer dtype compared as `C`.
fn int_recipe<C: Compare + Into<i64>>(rule: &Resolved, has_ignore: bool) -> Recipe<i64> {
    let mut windows = Vec::new();
    let mut edges = Vec::new();
    for (lo, hi, lo_open, hi_open) in intervals::<C>(rule) {
        let (window, ends) = int_window(lo.into(), hi.into(), lo_open, hi_open);
        windows.push(window);
        edges.extend(ends);
    }
    let ignore = rule
        .ignore
        .iter()
        .filter_map(|value| match value {
            Ignore::Value(num) => C::exact(*num),
            Ignore::Max => C::max_value(),
        })
        .map(Into::into)
        .collect();
    Recipe {
        windows,
        edges,
        ignore,
        all_ignored: has_ignore && rule.allow_all,
        needs_usable: has_ignore && !rule.allow_all,
        integral: false,
    }
}

/// The value of `dtype` nearest to `v`.
pub(crate) fn round_to(dtype: DType, v: f64) -> f64 {
    match dtype {
        DType::F16 => f16::from_f64(v).to_f64(),
        DType::BF16 => bf16::from_f64(v).to_f64(),
        DType::F32 => f64::from(v as f32),
        _ => v,
    }
}

/// The next value of `dtype` above `v`, a value of the dtype.
pub(crate) fn next_up(dtype: DType, v: f64) -> f64 {
    let half_up = |bits: u16| -> u16 {
        match bits {
            // -0 and +0: the smallest positive value.
            0x8000 | 0 => 1,
            b if b & 0x8000 == 0 => b + 1,
            b => b - 1,
        }
    };
    match dtype {
        DType::F16 if v.is_finite() => f16::from_bits(half_up(f16::from_f64(v).to_bits())).to_f64(),
        DType::BF16 if v.is_finite() => {
            bf16::from_bits(half_up(bf16::from_f64(v).to_bits())).to_f64()
        }
        DType::F32 => f64::from((v as f32).next_up()),
        DType::F16 | DType::BF16 => v,
        _ => v.next_up(),
    }
}

/// The next value of `dtype` below `v`, a value of the dtype.
pub(crate) fn next_down(dtype: DType, v: f64) -> f64 {
    -next_up(dtype, -v)
}

/// The smallest value of `dtype` at or above `v`.
pub(crate) fn at_or_above(dtype: DType, v: f64) -> f64 {
    let r = round_to(dtype, v);
    if r < v { next_up(dtype, r) } else { r }
}

/// The largest value of `dtype` at or below `v`.
pub(crate) fn at_or_below(dtype: DType, v: f64) -> f64 {
    let r = round_to(dtype, v);
    if r > v { next_down(dtype, r) } else { r }
}

/// The largest finite value of `dtype`.
fn finite_max(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => f16::MAX.to_f64(),
        DType::BF16 => bf16::MAX.to_f64(),
        DType::F32 => f64::from(f32::MAX),
        _ => f64::MAX,
    }
}

/// A recipe for a float dtype compared as `C` (`f32` for f16, bf16 and f32; `f64`).
fn float_recipe<C: Compare + Into<f64>>(
    dtype: DType,
    rule: &Resolved,
    has_ignore: bool,
) -> Recipe<f64> {
    let max = finite_max(dtype);
    let mut windows = Vec::new();
    let mut edges = Vec::new();
    for (lo, hi, lo_open, hi_open) in intervals::<C>(rule) {
        let (lo, hi): (f64, f64) = (lo.into(), hi.into());
        // An end at the dtype's largest value or beyond (`finite`'s clip) is as good as open.
        let lo_open = lo_open || lo <= -max;
        let hi_open = hi_open || hi >= max;
        let (lo, hi) = (
            at_or_above(dtype, lo.max(-max)),
            at_or_below(dtype, hi.min(max)),
        );
        let (lo, hi) = if rule.integral {
            (
                at_or_above(dtype, lo.ceil()),
                at_or_below(dtype, hi.floor()),
            )
        } else {
            (lo, hi)
        };
        // An empty interval (or a NaN end, which no bound has): nothing to draw.
        if lo.partial_cmp(&hi).is_none_or(|order| order.is_gt()) {
            continue;
        }
        let reach = OPEN_REACH as f64;
        let spread = SPREAD as f64;
        let (from, to) = match (lo_open, hi_open) {
            (true, true) => (lo.max(-spread), hi.min(spread)),
            (false, true) => (lo, hi.min(lo + reach)),
            (true, false) => (lo.max(hi - reach), hi),
            (false, false) => (lo, hi),
        };
        let (from, to) = if from > to { (lo, lo) } else { (from, to) };
        windows.push((at_or_above(dtype, from), at_or_below(dtype, to)));
        if !lo_open {
            edges.push(lo);
        }
        if !hi_open && hi != lo {
            edges.push(hi);
        }
    }
    let ignore = rule
        .ignore
        .iter()
        .filter_map(|value| match value {
            Ignore::Value(num) => C::exact(*num).map(Into::into),
            Ignore::Max => None,
        })
        .filter(|v: &f64| round_to(dtype, *v) == *v)
        .collect();
    Recipe {
        windows,
        edges,
        ignore,
        all_ignored: has_ignore && rule.allow_all,
        needs_usable: has_ignore && !rule.allow_all,
        integral: rule.integral,
    }
}

impl Values {
    /// The recipe for `dtype` under `rule` (`has_ignore`: the clause says `ignore`).
    pub(crate) fn new(dtype: DType, rule: &Resolved, has_ignore: bool) -> Self {
        match dtype {
            DType::U8 => Values::Int(int_recipe::<u8>(rule, has_ignore)),
            DType::U32 => Values::Int(int_recipe::<u32>(rule, has_ignore)),
            DType::I16 => Values::Int(int_recipe::<i16>(rule, has_ignore)),
            DType::I32 => Values::Int(int_recipe::<i32>(rule, has_ignore)),
            DType::I64 => Values::Int(int_recipe::<i64>(rule, has_ignore)),
            DType::F64 => Values::Float(float_recipe::<f64>(dtype, rule, has_ignore)),
            _ => Values::Float(float_recipe::<f32>(dtype, rule, has_ignore)),
        }
    }

    /// A clause without value rules: windows around zero.
    pub(crate) fn unconstrained(dtype: DType) -> Self {
        let rule = Resolved {
            ranges: None,
            ignore: Vec::new(),
            finite: false,
            allow_all: false,
            integral: false,
        };
        Self::new(dtype, &rule, false)
    }
}

/// Rows of `values` (of `shape`) along `axis` rescaled to sum to `target`: a derived subject
/// `{x.sum(axis)?}` in a range. A row whose sum is not a positive number becomes uniform.
pub(crate) fn rescale(values: &mut [f64], shape: &[usize], axis: usize, to: Rescale) {
    let Rescale { target, lo, hi } = to;
    let Some(&len) = shape.get(axis) else { return };
    if len == 0 || values.is_empty() {
        return;
    }
    let inner: usize = shape[axis + 1..].iter().product();
    let outer = values.len() / (len * inner);
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| o * len * inner + k * inner + i;
            let sum: f64 = (0..len).map(|k| values[at(k)]).sum();
            let positive = (0..len).all(|k| values[at(k)] >= 0.0);
            // Scaled where every value stays in the tensor's own range; all alike otherwise.
            let scaled = positive
                && sum > 0.0
                && sum.is_finite()
                && (0..len).all(|k| (lo..=hi).contains(&(values[at(k)] * target / sum)));
            for k in 0..len {
                let v = &mut values[at(k)];
                *v = if scaled {
                    *v * target / sum
                } else {
                    target / len as f64
                };
            }
        }
    }
}

/// What a derived sum's rows are rescaled to: the sum, and the range of each value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rescale {
    pub target: f64,
    pub lo: f64,
    pub hi: f64,
}

/// One element's strategy: the windows, the edges and the ignored values, weighted.
fn element<T>(recipe: &Recipe<T>, window: impl Fn(T, T) -> BoxedStrategy<T>) -> BoxedStrategy<T>
where
    T: Copy + Default + std::fmt::Debug + PartialEq + 'static,
{
    let mut arms: Vec<(u32, BoxedStrategy<T>)> = Vec::new();
    let count = recipe.windows.len().max(1) as u32;
    for &(lo, hi) in &recipe.windows {
        let strategy = if lo == hi {
            Just(lo).boxed()
        } else {
            window(lo, hi)
        };
        arms.push(((WEIGHT_WINDOW * 2).div_ceil(count), strategy));
    }
    if !recipe.edges.is_empty() {
        arms.push((
            WEIGHT_EDGE * 2,
            prop::sample::select(recipe.edges.clone()).boxed(),
        ));
    }
    if !recipe.ignore.is_empty() {
        arms.push((
            WEIGHT_IGNORE * 2,
            prop::sample::select(recipe.ignore.clone()).boxed(),
        ));
    }
    match arms.len() {
        0 => Nothing::strategy(),
        1 => arms.pop().map(|(_, s)| s).unwrap_or_else(Nothing::strategy),
        _ => Union::new_weighted(arms).boxed(),
    }
}

/// A recipe with no value at all (an empty `in` for this dtype and no ignored value): zeros,
/// which the guard's verdict rejects, so the draw is made again.
struct Nothing;

impl Nothing {
    fn strategy<T: Default + std::fmt::Debug + Clone + 'static>() -> BoxedStrategy<T> {
        Just(T::default()).boxed()
    }
}

/// `values` with one usable element where every element is ignored and the rule needs one.
fn keep_one_usable<T: Copy + PartialEq>(recipe: &Recipe<T>, values: &mut [T]) {
    if !recipe.needs_usable || values.is_empty() {
        return;
    }
    // A window's end that is not ignored itself (`in 0..C ignore 0` has `C - 1`).
    let usable = recipe
        .windows
        .iter()
        .flat_map(|&(lo, hi)| [lo, hi])
        .find(|v| !recipe.ignore.contains(v));
    if values.iter().all(|v| recipe.ignore.contains(v))
        && let Some(usable) = usable
    {
        values[0] = usable;
    }
}

/// The elements of one tensor of `count` elements, per recipe.
fn elements<T>(
    recipe: &Recipe<T>,
    count: usize,
    window: impl Fn(T, T) -> BoxedStrategy<T>,
) -> BoxedStrategy<Vec<T>>
where
    T: Copy + Default + std::fmt::Debug + PartialEq + 'static,
{
    let fixed = recipe.clone();
    let drawn = prop::collection::vec(element(recipe, window), count)
        .prop_map(move |mut values| {
            keep_one_usable(&fixed, &mut values);
            values
        })
        .boxed();
    match recipe.ignore.first() {
        Some(&ignored) if recipe.all_ignored && count > 0 => Union::new_weighted(vec![
            (ALL_IGNORED_ONE_IN - 1, drawn),
            (1, Just(vec![ignored; count]).boxed()),
        ])
        .boxed(),
        _ => drawn,
    }
}

/// A CPU tensor of `shape` and `dtype` from integer values (each within the dtype's range).
pub(crate) fn int_tensor(
    values: Vec<i64>,
    shape: &[usize],
    dtype: DType,
) -> candle_core::Result<Tensor> {
    let device = &Device::Cpu;
    match dtype {
        DType::U8 => Tensor::from_vec(values.iter().map(|&v| v as u8).collect(), shape, device),
        DType::U32 => Tensor::from_vec(values.iter().map(|&v| v as u32).collect(), shape, device),
        DType::I16 => Tensor::from_vec(values.iter().map(|&v| v as i16).collect(), shape, device),
        DType::I32 => Tensor::from_vec(values.iter().map(|&v| v as i32).collect(), shape, device),
        _ => Tensor::from_vec(values, shape, device),
    }
}

/// A CPU tensor of `shape` and `dtype` from float values (each a value of the dtype).
pub(crate) fn float_tensor(
    values: Vec<f64>,
    shape: &[usize],
    dtype: DType,
) -> candle_core::Result<Tensor> {
    let device = &Device::Cpu;
    match dtype {
        DType::F16 => Tensor::from_vec(
            values.iter().map(|&v| f16::from_f64(v)).collect(),
            shape,
            device,
        ),
        DType::BF16 => Tensor::from_vec(
            values.iter().map(|&v| bf16::from_f64(v)).collect(),
            shape,
            device,
        ),
        DType::F32 => Tensor::from_vec(values.iter().map(|&v| v as f32).collect(), shape, device),
        _ => Tensor::from_vec(values, shape, device),
    }
}

/// A draw of one tensor of `shape` and `dtype` under `values`; `rescale` is a derived sum's
/// axis and target (floats only).
pub(crate) fn tensor(
    values: &Values,
    dtype: DType,
    shape: Vec<usize>,
    rescale_to: Option<(usize, Rescale)>,
) -> BoxedStrategy<Tensor> {
    let count: usize = shape.iter().product();
    match values {
        Values::Int(recipe) => elements(recipe, count, |lo, hi| (lo..=hi).boxed())
            .prop_map(move |values| {
                int_tensor(values, &shape, dtype).expect("a CPU tensor of its own length")
            })
            .boxed(),
        Values::Float(recipe) => {
            let integral = recipe.integral;
            let snap = move |lo: f64, hi: f64| {
                (lo..=hi)
                    .prop_map(move |v| {
                        let v = if integral { v.round() } else { v };
                        round_to(dtype, v).clamp(lo, hi)
                    })
                    .boxed()
            };
            elements(recipe, count, snap)
                .prop_map(move |mut values| {
                    if let Some((axis, to)) = rescale_to {
                        rescale(&mut values, &shape, axis, to);
                        for v in &mut values {
                            *v = round_to(dtype, *v);
                        }
                    }
                    float_tensor(values, &shape, dtype).expect("a CPU tensor of its own length")
                })
                .boxed()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_range(lo: Option<Num>, hi: Option<Num>, inclusive: bool) -> Resolved {
        Resolved {
            ranges: Some(vec![Interval { lo, hi, inclusive }]),
            ignore: vec![Ignore::Value(Num::Int(-100))],
            finite: false,
            allow_all: false,
            integral: false,
        }
    }

    #[test]
    fn class_indices_have_both_edges_and_the_ignore_index() {
        let rule = in_range(Some(Num::Int(0)), Some(Num::Int(10)), false);
        let Values::Int(recipe) = Values::new(DType::I64, &rule, true) else {
            panic!("an integer recipe")
        };
        assert_eq!(recipe.windows, [(0, 9)]);
        assert_eq!(recipe.edges, [0, 9]);
        assert_eq!(recipe.ignore, [-100]);
        assert!(recipe.needs_usable);
        // u32 cannot hold -100: no ignored value for it.
        let Values::Int(recipe) = Values::new(DType::U32, &rule, true) else {
            panic!("an integer recipe")
        };
        assert!(recipe.ignore.is_empty());
    }

    #[test]
    fn float_windows_hold_only_values_of_the_dtype_inside_the_range() {
        let rule = in_range(Some(Num::Float(0.999)), Some(Num::Float(1.001)), true);
        for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
            let Values::Float(recipe) = Values::new(dtype, &rule, false) else {
                panic!("a float recipe")
            };
            let (lo, hi) = recipe.windows[0];
            assert!((0.999..=1.001).contains(&lo), "{dtype:?} {lo}");
            assert!((0.999..=1.001).contains(&hi), "{dtype:?} {hi}");
            assert_eq!(round_to(dtype, lo), lo);
            assert_eq!(round_to(dtype, hi), hi);
        }
        // An open end reaches a few dozen past the bound; `..1.0` stays below 1.
        let open = in_range(None, Some(Num::Int(1)), false);
        let Values::Float(recipe) = Values::new(DType::F32, &open, false) else {
            panic!("a float recipe")
        };
        assert_eq!(recipe.windows[0].1, f64::from(1.0f32.next_down()));
        assert_eq!(recipe.edges, [f64::from(1.0f32.next_down())]);
        assert!(recipe.windows[0].0 >= -64.0);
    }

    #[test]
    fn rescaled_rows_sum_to_the_target() {
        let mut values = vec![1.0, 3.0, 0.0, 0.0, 2.0, 2.0];
        let to = |target| Rescale {
            target,
            lo: f64::NEG_INFINITY,
            hi: f64::INFINITY,
        };
        rescale(&mut values, &[2, 3], 1, to(1.0));
        assert_eq!(values[..3], [0.25, 0.75, 0.0]);
        let second: f64 = values[3..].iter().sum();
        assert!((second - 1.0).abs() < 1e-12);
        // Along axis 0: columns.
        let mut values = vec![1.0, 0.0, 1.0, 0.0];
        rescale(&mut values, &[2, 2], 0, to(2.0));
        assert_eq!(values, [1.0, 1.0, 1.0, 1.0]);
        // A value the scaling would take past the tensor's own range: the row all alike.
        let mut values = vec![1.0, 0.01];
        let capped = Rescale {
            target: 1.5,
            lo: 0.0,
            hi: 1.0,
        };
        rescale(&mut values, &[2], 0, capped);
        assert_eq!(values, [0.75, 0.75]);
    }
}
