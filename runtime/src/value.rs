//! Value rules (`in`, `ignore`, `finite`): resolving bounds at call time, compiling them into
//! exact comparisons for each dtype, and turning scan results into violations.
//!
//! Exactness: integers are compared as integers in their own dtype (bounds are clamped to the
//! dtype's range, never rounded through a float). Float elements are compared in `f32` (for
//! `f32`, `f16`, `bf16` and the 8-bit formats, which widen to `f32` exactly) or `f64`, against
//! bounds rounded outwards or inwards so that `v >= lo` in the compare type holds exactly when
//! it holds for the real numbers. NaN fails every comparison, so it is in no range.

use candle_core::{DType, Tensor};

use crate::error::{Counts, DimBinding, Rule, Subject, Value, Violation};
use crate::help;
use crate::scan;
use crate::spec::{AllowAll, BoundSpec, ClauseSpec, IgnoreSpec, RangeSpec, ValueSpec};

/// A bound computed at call time from an integer parameter or a braced expression.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BoundValue {
    /// An integer.
    Int(i128),
    /// A float.
    Float(f64),
    /// Not evaluated (value checks are off).
    Unset,
    /// `None`: an open bound, or no ignored value.
    Absent,
}

/// Numbers that can bound an `in` range or be ignored: every primitive integer and float, an
/// `Option` of one (`None` is an open bound, or no ignored value), and `bool` for the condition
/// of `allow_all {..}`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot bound an `in` range",
    label = "this bound must be an integer or a float",
    note = "a bound is a literal, a dim, an integer parameter, or a braced expression such as \
            `{{self.vocab_size}}` whose value is a number"
)]
pub trait IntoBound {
    /// The value as a bound.
    fn to_bound(&self) -> BoundValue;
}

macro_rules! int_bound {
    ($($t:ty),*) => {$(
        impl IntoBound for $t {
            fn to_bound(&self) -> BoundValue {
                BoundValue::Int(*self as i128)
            }
        }
    )*};
}
int_bound!(u8, u16, u32, u64, usize, i8, i16, i32, i64, i128, isize);

impl IntoBound for u128 {
    fn to_bound(&self) -> BoundValue {
        BoundValue::Int(i128::try_from(*self).unwrap_or(i128::MAX))
    }
}

impl IntoBound for f32 {
    fn to_bound(&self) -> BoundValue {
        BoundValue::Float(f64::from(*self))
    }
}

impl IntoBound for f64 {
    fn to_bound(&self) -> BoundValue {
        BoundValue::Float(*self)
    }
}

impl IntoBound for bool {
    fn to_bound(&self) -> BoundValue {
        BoundValue::Int(i128::from(*self))
    }
}

impl<T: IntoBound> IntoBound for Option<T> {
    fn to_bound(&self) -> BoundValue {
        match self {
            Some(value) => value.to_bound(),
            None => BoundValue::Absent,
        }
    }
}

impl<T: IntoBound + ?Sized> IntoBound for &T {
    fn to_bound(&self) -> BoundValue {
        (**self).to_bound()
    }
}

/// A bound's value once resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    Int(i128),
    Float(f64),
}

/// One `in` pattern with its bounds resolved.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Interval {
    pub lo: Option<Num>,
    pub hi: Option<Num>,
    pub inclusive: bool,
}

/// An ignored value, resolved.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ignore {
    Value(Num),
    Max,
}

/// A clause's value rules with every bound evaluated.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// `None`: no `in` (every value but what `finite` rejects is allowed).
    pub ranges: Option<Vec<Interval>>,
    pub ignore: Vec<Ignore>,
    pub finite: bool,
    /// Whether a tensor with no usable element is allowed (`allow_all`).
    pub allow_all: bool,
}

/// Why a bound could not be evaluated.
struct BoundProblem {
    text: String,
    reason: String,
    unbound_dim: bool,
}

/// The named dims and evaluated expressions a clause's rule used, for the message.
#[derive(Debug, Clone, Default)]
pub(crate) struct Used {
    pub dims: Vec<DimBinding>,
    pub values: Vec<(&'static str, String)>,
}

/// Resolves bounds and ignored values for one call.
struct Resolver<'a> {
    bounds: &'a [BoundValue],
    dim_value: &'a dyn Fn(u16) -> Option<DimBinding>,
    spec_dims: &'a dyn Fn(u16) -> &'static str,
    used: Used,
}

impl Resolver<'_> {
    /// A parameter or braced expression: `None` when it is `None`.
    fn runtime(&mut self, index: u16, text: &'static str) -> Result<Option<Num>, BoundProblem> {
        let problem = |reason: String| BoundProblem {
            text: text.to_string(),
            reason,
            unbound_dim: false,
        };
        let value = match self.bounds.get(usize::from(index)) {
            Some(BoundValue::Int(v)) => Num::Int(*v),
            Some(BoundValue::Float(v)) if v.is_nan() => {
                return Err(problem(format!("`{text}` is NaN")));
            }
            Some(BoundValue::Float(v)) => Num::Float(*v),
            Some(BoundValue::Absent) => return Ok(None),
            Some(BoundValue::Unset) | None => {
                return Err(problem(format!("`{text}` was not evaluated")));
            }
        };
        let shown = match value {
            Num::Int(v) => v.to_string(),
            Num::Float(v) => v.to_string(),
        };
        if !self.used.values.iter().any(|(t, _)| *t == text) {
            self.used.values.push((text, shown));
        }
        Ok(Some(value))
    }

    /// A bound's value; `None` for an absent optional bound (an open end).
    fn bound(&mut self, bound: BoundSpec) -> Result<Option<Num>, BoundProblem> {
        match bound {
            BoundSpec::Int(v) => Ok(Some(Num::Int(v))),
            BoundSpec::Float(v) => Ok(Some(Num::Float(v))),
            BoundSpec::Dim(id) => match (self.dim_value)(id) {
                Some(binding) => {
                    let value = binding.value;
                    if !self.used.dims.contains(&binding) {
                        self.used.dims.push(binding);
                    }
                    Ok(Some(Num::Int(value as i128)))
                }
                None => {
                    let name = (self.spec_dims)(id);
                    Err(BoundProblem {
                        text: name.to_string(),
                        reason: format!(
                            "`{name}` is not bound: the tensor that binds it is absent or has the \
                             wrong rank"
                        ),
                        unbound_dim: true,
                    })
                }
            },
            BoundSpec::Runtime(index, text) => self.runtime(index, text),
        }
    }

    fn resolve(mut self, spec: &ValueSpec) -> Result<(Resolved, Used), BoundProblem> {
        let ranges = if spec.ranges.is_empty() {
            None
        } else {
            let mut ranges = Vec::with_capacity(spec.ranges.len());
            for range in spec.ranges {
                let RangeSpec { lo, hi, inclusive } = *range;
                let lo = lo.map(|b| self.bound(b)).transpose()?.flatten();
                let hi = hi.map(|b| self.bound(b)).transpose()?.flatten();
                ranges.push(Interval { lo, hi, inclusive });
            }
            Some(ranges)
        };
        let mut ignore = Vec::with_capacity(spec.ignore.len());
        for value in spec.ignore {
            match *value {
                IgnoreSpec::Int(v) => ignore.push(Ignore::Value(Num::Int(v))),
                IgnoreSpec::Float(v) => ignore.push(Ignore::Value(Num::Float(v))),
                IgnoreSpec::Max => ignore.push(Ignore::Max),
                IgnoreSpec::Runtime(index, text) => {
                    if let Some(value) = self.runtime(index, text)? {
                        ignore.push(Ignore::Value(value));
                    }
                }
            }
        }
        let allow_all = match spec.allow_all_ignored {
            AllowAll::No => false,
            AllowAll::Yes => true,
            AllowAll::When(index, _) => {
                matches!(self.bounds.get(usize::from(index)), Some(BoundValue::Int(v)) if *v != 0)
            }
        };
        let resolved = Resolved {
            ranges,
            ignore,
            finite: spec.finite,
            allow_all,
        };
        Ok((resolved, self.used))
    }
}

/// A type elements are compared in: the integer dtypes themselves, `f32` or `f64`.
pub(crate) trait Compare: Copy + PartialOrd + Send + Sync + 'static {
    /// The closed interval `[a, b]` of this type equal to the pattern, or `None` if empty.
    fn interval(interval: Interval, finite: bool) -> Option<(Self, Self)>;
    /// The interval of finite values, for `finite` without `in` (`None`: all values are).
    fn finite_interval() -> Option<(Self, Self)>;
    /// `value` in this type if it is exactly representable.
    fn exact(value: Num) -> Option<Self>;
    /// The type's maximum, for `ignore MAX` (integers only).
    fn max_value() -> Option<Self>;
    fn to_value(self, dtype: DType) -> Value;
    fn is_nan(self) -> bool;
}

/// A clause's rule compiled for one compare type.
#[derive(Debug, Clone)]
pub(crate) struct TypedRule<C> {
    /// Closed intervals; `None`: every value is accepted.
    pub intervals: Option<Vec<(C, C)>>,
    pub ignore: Vec<C>,
}

impl<C: Compare> TypedRule<C> {
    pub fn new(rule: &Resolved) -> Self {
        let intervals: Option<Vec<(C, C)>> = match &rule.ranges {
            Some(ranges) => Some(
                ranges
                    .iter()
                    .filter_map(|r| C::interval(*r, rule.finite))
                    .collect(),
            ),
            None if rule.finite => Some(C::finite_interval().into_iter().collect()),
            None => None,
        };
        // `finite` on an integer dtype restricts nothing.
        let intervals = match intervals {
            Some(v) if v.is_empty() && rule.ranges.is_none() => None,
            other => other,
        };
        let ignore = rule
            .ignore
            .iter()
            .filter_map(|value| match value {
                Ignore::Value(num) => C::exact(*num),
                Ignore::Max => C::max_value(),
            })
            .collect();
        Self { intervals, ignore }
    }

    #[inline(always)]
    pub fn accepts(&self, v: C) -> bool {
        match &self.intervals {
            None => true,
            Some(intervals) => intervals.iter().any(|&(lo, hi)| (v >= lo) & (v <= hi)),
        }
    }

    #[inline(always)]
    pub fn is_ignored(&self, v: C) -> bool {
        self.ignore.contains(&v)
    }
}

macro_rules! int_compare {
    ($($t:ty),*) => {$(
        impl Compare for $t {
            fn interval(interval: Interval, _finite: bool) -> Option<(Self, Self)> {
                let (min, max) = (<$t>::MIN as i128, <$t>::MAX as i128);
                let lo = match interval.lo {
                    None => min,
                    Some(Num::Int(v)) => v,
                    Some(Num::Float(v)) if v == f64::NEG_INFINITY => min,
                    Some(Num::Float(v)) if v == f64::INFINITY => return None,
                    Some(Num::Float(v)) => v.ceil() as i128,
                };
                let hi = match interval.hi {
                    None => max,
                    Some(Num::Int(v)) if interval.inclusive => v,
                    Some(Num::Int(v)) => v.checked_sub(1)?,
                    Some(Num::Float(v)) if v == f64::INFINITY => max,
                    Some(Num::Float(v)) if v == f64::NEG_INFINITY => return None,
                    Some(Num::Float(v)) if interval.inclusive => v.floor() as i128,
                    Some(Num::Float(v)) => (v.ceil() as i128).checked_sub(1)?,
                };
                let (lo, hi) = (lo.max(min), hi.min(max));
                (lo <= hi).then(|| (lo as $t, hi as $t))
            }

            fn finite_interval() -> Option<(Self, Self)> {
                None
            }

            fn exact(value: Num) -> Option<Self> {
                match value {
                    Num::Int(v) => <$t>::try_from(v).ok(),
                    Num::Float(v) if v.fract() == 0.0 && v.is_finite() => {
                        <$t>::try_from(v as i128).ok()
                    }
                    Num::Float(_) => None,
                }
            }

            fn max_value() -> Option<Self> {
                Some(<$t>::MAX)
            }

            fn to_value(self, _dtype: DType) -> Value {
                Value::Int(self as i128)
            }

            fn is_nan(self) -> bool {
                false
            }
        }
    )*};
}
int_compare!(u8, u32, i16, i32, i64);

/// The smallest `f64` at or above `v`.
fn f64_up(v: i128) -> f64 {
    let f = v as f64;
    if f.is_finite() && f < 1.7e38 && (f as i128) < v {
        f.next_up()
    } else {
        f
    }
}

/// The largest `f64` at or below `v`.
fn f64_down(v: i128) -> f64 {
    let f = v as f64;
    if f.is_finite() && f > -1.7e38 && (f as i128) > v {
        f.next_down()
    } else {
        f
    }
}

macro_rules! float_compare {
    ($t:ty, $up:ident, $down:ident) => {
        /// The smallest value of the type at or above `v`.
        fn $up(v: f64) -> $t {
            let r = v as $t;
            if (r as f64) < v { r.next_up() } else { r }
        }

        /// The largest value of the type at or below `v`.
        fn $down(v: f64) -> $t {
            let r = v as $t;
            if (r as f64) > v { r.next_down() } else { r }
        }

        impl Compare for $t {
            fn interval(interval: Interval, finite: bool) -> Option<(Self, Self)> {
                let lo = match interval.lo {
                    None => <$t>::NEG_INFINITY,
                    Some(Num::Int(v)) => $up(f64_up(v)),
                    Some(Num::Float(v)) => $up(v),
                };
                let hi = match interval.hi {
                    None => <$t>::INFINITY,
                    Some(bound) => {
                        let (up, down) = match bound {
                            Num::Int(v) => ($up(f64_up(v)), $down(f64_down(v))),
                            Num::Float(v) => ($up(v), $down(v)),
                        };
                        // v < hi  <=>  v <= the largest value below the smallest value >= hi
                        // (there is none below -inf).
                        if interval.inclusive {
                            down
                        } else if up == <$t>::NEG_INFINITY {
                            return None;
                        } else {
                            up.next_down()
                        }
                    }
                };
                let (lo, hi) = if finite {
                    (lo.max(<$t>::MIN), hi.min(<$t>::MAX))
                } else {
                    (lo, hi)
                };
                (lo <= hi).then_some((lo, hi))
            }

            fn finite_interval() -> Option<(Self, Self)> {
                Some((<$t>::MIN, <$t>::MAX))
            }

            fn exact(value: Num) -> Option<Self> {
                let v = match value {
                    Num::Int(v) => {
                        let f = v as f64;
                        if f.abs() < 9.0e15 { f } else { return None }
                    }
                    Num::Float(v) => v,
                };
                let r = v as $t;
                (r as f64 == v).then_some(r)
            }

            fn max_value() -> Option<Self> {
                None
            }

            fn to_value(self, dtype: DType) -> Value {
                Value::Float(self as f64, dtype)
            }

            fn is_nan(self) -> bool {
                self.is_nan()
            }
        }
    };
}
float_compare!(f32, f32_up, f32_down);
float_compare!(f64, f64_up_f, f64_down_f);

/// Where the first offending element is and what the scan saw, for the message.
#[derive(Debug, Clone, Default)]
pub(crate) struct Details {
    pub first_index: Option<Vec<usize>>,
    pub first_value: Option<Value>,
    pub counts: Counts,
    pub observed: Option<(Value, Value)>,
    pub offending: Vec<Value>,
}

/// What the fast pass found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Summary {
    pub violating: u64,
    pub ignored: u64,
    pub total: u64,
}

impl Summary {
    /// No element is usable: all are ignored, or there are none.
    pub fn none_usable(&self) -> bool {
        self.ignored == self.total
    }
}

/// A value clause that still needs its data read.
pub(crate) struct Pending<'t> {
    pub clause: &'static ClauseSpec,
    /// The element of a sequence clause, for the message.
    pub element: Option<usize>,
    pub tensor: &'t Tensor,
    pub rule: Resolved,
    pub used: Used,
}

impl Pending<'_> {
    /// A clause with `ignore` and no `allow_all` needs at least one usable element.
    pub fn needs_usable(&self) -> bool {
        self.clause.values.is_some_and(|v| !v.ignore.is_empty()) && !self.rule.allow_all
    }
}

/// Checks the value rules of `clauses` (each with a tensor of an allowed dtype): CPU tensors
/// in place, other devices with one transfer for all of them.
pub(crate) fn check_clauses(
    clauses: &[(Option<usize>, &'static ClauseSpec, &Tensor)],
    bounds: &[BoundValue],
    dim_value: &dyn Fn(u16) -> Option<DimBinding>,
    spec_dims: &dyn Fn(u16) -> &'static str,
) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut on_device = Vec::new();
    for &(element, clause, tensor) in clauses {
        let Some(values) = clause.values else {
            continue;
        };
        let resolver = Resolver {
            bounds,
            dim_value,
            spec_dims,
            used: Used::default(),
        };
        let (rule, used) = match resolver.resolve(values) {
            Ok(resolved) => resolved,
            Err(problem) => {
                // A dim left unbound is either explained by a shape violation, or bound only by
                // an absent tensor (a `None` argument or optional path): then the rule that
                // needs it says nothing.
                if !problem.unbound_dim {
                    let mut violation = Violation::new(
                        Subject::of(clause.subject),
                        Rule::Bound,
                        format!("`{}`", problem.text),
                        problem.reason,
                    );
                    violation.note = clause.note;
                    violation.element = element;
                    violations.push(violation);
                }
                continue;
            }
        };
        let pending = Pending {
            clause,
            element,
            tensor,
            rule,
            used,
        };
        if tensor.elem_count() == 0 {
            if pending.needs_usable() {
                let empty = Summary::default();
                violations.extend(violations_of(&pending, empty, Details::default()));
            }
            continue;
        }
        if tensor.device().is_cpu() && !scan::device_path_forced() {
            match scan::cpu::summarize(tensor, &pending.rule) {
                Some(summary) => {
                    if summary.violating > 0 || (pending.needs_usable() && summary.none_usable()) {
                        let details = scan::cpu::locate(tensor, &pending.rule);
                        violations.extend(violations_of(&pending, summary, details));
                    }
                }
                None => violations.push(unreadable(&pending, None)),
            }
        } else {
            on_device.push(pending);
        }
    }
    if !on_device.is_empty() {
        violations.extend(scan::device::check(&on_device));
    }
    violations
}

/// A violation for a tensor whose values cannot be read.
pub(crate) fn unreadable(pending: &Pending<'_>, error: Option<&candle_core::Error>) -> Violation {
    let dtype = pending.tensor.dtype();
    let found = match error {
        None => format!(
            "values of dtype {} cannot be read: candle stores it as packed bytes with no \
             element access",
            dtype.as_str()
        ),
        Some(error) => format!(
            "values could not be checked on {}: {error}",
            crate::guard::device_name(pending.tensor.device())
        ),
    };
    let mut violation = Violation::new(
        Subject::of(pending.clause.subject),
        Rule::Unreadable,
        expected_text(pending.clause.values.expect("a value clause")),
        found,
    );
    violation.note = pending.clause.note;
    violation.element = pending.element;
    violation
}

/// The ignored values as written, with what they were at this call when written as
/// expressions: `-100`, or `{options.ignore_index} = -100`.
fn ignored_text(written: &str, resolved: &[Ignore]) -> String {
    let values: Vec<String> = resolved
        .iter()
        .map(|ignore| match ignore {
            Ignore::Value(Num::Int(v)) => v.to_string(),
            Ignore::Value(Num::Float(v)) => v.to_string(),
            Ignore::Max => "MAX".to_string(),
        })
        .collect();
    let values = values.join(" | ");
    if values == written {
        values
    } else {
        format!("{written} = {values}")
    }
}

/// The rule as written: `0..C`, `0..=1 and finite`, `finite values`, with ignored values.
pub(crate) fn expected_text(values: &ValueSpec) -> String {
    let mut text = match (values.ranges.is_empty(), values.finite) {
        (false, false) => values.ranges_text.to_string(),
        (false, true) => format!("{} and finite", values.ranges_text),
        (true, true) => "finite values".to_string(),
        (true, false) => "any value".to_string(),
    };
    if !values.ignore.is_empty() {
        text.push_str(&format!(" (ignoring {})", values.ignore_text));
    }
    text
}

/// The violations a failed scan stands for: out-of-range elements, all elements ignored, or both.
pub(crate) fn violations_of(
    pending: &Pending<'_>,
    summary: Summary,
    details: Details,
) -> Vec<Violation> {
    let clause = pending.clause;
    let values = clause.values.expect("a value clause");
    let mut out = Vec::new();
    let subject = Subject::of(clause.subject);
    if summary.violating > 0 {
        let rule = if values.ranges.is_empty() {
            Rule::Finite
        } else {
            Rule::Range
        };
        let mut violation = Violation::new(
            subject,
            rule,
            expected_text(values),
            details
                .first_value
                .map(|v| v.to_string())
                .unwrap_or_default(),
        );
        violation.index = details.first_index.clone();
        violation.value = details.first_value;
        violation.counts = Some(details.counts);
        violation.observed = details.observed;
        violation.offending = details.offending.clone();
        violation.bound_dims = pending.used.dims.clone();
        violation.bound_values = pending.used.values.clone();
        violation.help = help::for_values(
            clause,
            &pending.rule,
            pending.tensor.dtype(),
            &details,
            &pending.used,
        );
        violation.note = clause.note;
        out.push(violation);
    }
    if pending.needs_usable() && summary.none_usable() {
        let found = if summary.total == 0 {
            "no elements at all; a mean over them is 0/0".to_string()
        } else {
            format!(
                "all {} elements are ignored values ({}); a mean over them is 0/0",
                summary.total,
                ignored_text(values.ignore_text, &pending.rule.ignore)
            )
        };
        let mut violation = Violation::new(subject, Rule::AllIgnored, expected_text(values), found);
        violation.counts = Some(Counts {
            violating: summary.total,
            total: summary.total,
            nan: 0,
            ignored: summary.ignored,
        });
        violation.help = Some(format!(
            "skip batches with no usable `{}` before this call; a contract that expects \
             all-ignored batches says so with `allow_all`",
            subject.name(),
        ));
        violation.note = clause.note;
        out.push(violation);
    }
    for violation in &mut out {
        violation.element = pending.element;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(lo: Option<Num>, hi: Option<Num>, inclusive: bool) -> Interval {
        Interval { lo, hi, inclusive }
    }

    #[test]
    fn integer_bounds_clamp_to_the_dtype() {
        use Num::*;
        assert_eq!(
            u8::interval(range(Some(Int(0)), Some(Int(300)), false), false),
            Some((0, 255))
        );
        assert_eq!(
            u8::interval(range(Some(Int(-5)), Some(Int(3)), false), false),
            Some((0, 2))
        );
        assert_eq!(
            u8::interval(range(Some(Int(256)), None, false), false),
            None
        );
        assert_eq!(
            u32::interval(range(Some(Int(0)), Some(Int(0)), false), false),
            None
        );
        assert_eq!(
            i64::interval(range(Some(Float(0.5)), Some(Float(2.5)), false), false),
            Some((1, 2))
        );
        assert_eq!(
            i64::interval(range(Some(Float(0.5)), Some(Float(3.0)), false), false),
            Some((1, 2))
        );
        assert_eq!(
            i64::interval(range(None, Some(Float(3.0)), true), false),
            Some((i64::MIN, 3))
        );
        assert_eq!(i16::exact(Int(-100)), Some(-100));
        assert_eq!(u8::exact(Int(-100)), None);
        assert_eq!(u32::exact(Float(2.5)), None);
    }

    #[test]
    fn float_bounds_round_so_comparisons_stay_exact() {
        use Num::*;
        // 0.1 is not an f32: v <= 0.1 holds for the largest f32 below 0.1, not the one above.
        let (_, hi) = f32::interval(range(Some(Int(0)), Some(Float(0.1)), true), false).unwrap();
        assert!((hi as f64) <= 0.1 && (hi.next_up() as f64) > 0.1);
        // v < 1.0 excludes 1.0 and includes the float just below it.
        let (_, hi) = f32::interval(range(Some(Int(0)), Some(Int(1)), false), false).unwrap();
        assert_eq!(hi, 1.0f32.next_down());
        // An integer bound beyond f32's exact integers rounds outward for the lower bound.
        let (lo, _) = f32::interval(range(Some(Int(16_777_217)), None, false), false).unwrap();
        assert_eq!(lo, 16_777_218.0);
        // `finite` clips open ranges to the finite values.
        assert_eq!(
            f32::interval(range(Some(Int(0)), None, false), true),
            Some((0.0, f32::MAX))
        );
        assert_eq!(
            f32::interval(range(Some(Int(0)), None, false), false),
            Some((0.0, f32::INFINITY))
        );
        assert_eq!(
            f64::interval(range(Some(Int(2)), Some(Int(1)), true), false),
            None
        );
        // Nothing is below -inf, not even -inf.
        let minus_inf = Some(Float(f64::NEG_INFINITY));
        assert_eq!(
            f32::interval(range(minus_inf, minus_inf, false), false),
            None
        );
        assert_eq!(
            f32::interval(range(minus_inf, minus_inf, true), false),
            Some((f32::NEG_INFINITY, f32::NEG_INFINITY))
        );
        assert_eq!(f32::exact(Float(0.1)), None);
        assert_eq!(f32::exact(Float(0.5)), Some(0.5));
    }

    #[test]
    fn nan_is_in_no_range_and_finite_rejects_infinities() {
        let rule = Resolved {
            ranges: Some(vec![range(None, None, false)]),
            ignore: vec![],
            finite: false,
            allow_all: false,
        };
        let typed = TypedRule::<f32>::new(&rule);
        assert!(!typed.accepts(f32::NAN));
        assert!(typed.accepts(f32::INFINITY));
        let finite_only = Resolved {
            ranges: None,
            ignore: vec![],
            finite: true,
            allow_all: false,
        };
        let typed = TypedRule::<f32>::new(&finite_only);
        assert!(!typed.accepts(f32::NAN));
        assert!(!typed.accepts(f32::NEG_INFINITY));
        assert!(typed.accepts(-0.0));
        let typed = TypedRule::<i64>::new(&finite_only);
        assert!(typed.accepts(i64::MIN));
    }
}
