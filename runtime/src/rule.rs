//! The rule types every layer above shares: bounds as the expansion passes them, a clause's
//! value rules once resolved (`Resolved`), compiled for one compare type (`TypedRule`), and the
//! statistics a scan returns (`Summary`, `Details`).
//!
//! Exactness: integers are compared as integers in their own dtype (bounds are clamped to the
//! dtype's range, never rounded through a float). Float elements are compared in `f32` (for
//! `f32`, `f16`, `bf16` and the 8-bit formats, which widen to `f32` exactly) or `f64`, against
//! bounds rounded outwards or inwards so that `v >= lo` in the compare type holds exactly when
//! it holds for the real numbers. NaN fails every comparison, so it is in no range.

use candle_core::DType;

use crate::error::{Counts, DimBinding, Value};
use crate::spec::Side;

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
    /// A float literal strictly between two adjacent `f64`s: the nearest one, and the side.
    Inexact(f64, Side),
}

impl Num {
    /// The nearest `f64`, for messages and for choosing what they report.
    pub fn approx(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) | Num::Inexact(f, _) => f,
        }
    }
}

/// The adjacent `f64`s `(a, b)` with `a < real < b` for an inexact literal.
fn neighbours(nearest: f64, side: Side) -> (f64, f64) {
    match side {
        Side::Above => (nearest, nearest.next_up()),
        Side::Below => (nearest.next_down(), nearest),
    }
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
    /// `integral`: every checked value must be a whole number (NaN and ±inf are not).
    pub integral: bool,
}

impl Resolved {
    /// Whether `v` lies in one of the `in` patterns (every value does without `in`), compared as
    /// an `f64`: for choosing what a message reports, not for the verdict.
    pub fn in_ranges(&self, v: f64) -> bool {
        let as_f64 = Num::approx;
        self.ranges.as_ref().is_none_or(|ranges| {
            ranges.iter().any(|range| {
                let above = range.lo.is_none_or(|lo| v >= as_f64(lo));
                let below = range.hi.is_none_or(|hi| {
                    if range.inclusive {
                        v <= as_f64(hi)
                    } else {
                        v < as_f64(hi)
                    }
                });
                above && below
            })
        })
    }
}

/// The named dims and evaluated expressions a clause's rule used, for the message.
#[derive(Debug, Clone, Default)]
pub(crate) struct Used {
    pub dims: Vec<DimBinding>,
    pub values: Vec<(&'static str, String)>,
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
    /// The element as the user's value, in its own dtype.
    fn to_value(self, dtype: DType) -> Value;
    /// Whether the element is NaN (never, for integers).
    fn is_nan(self) -> bool;
    /// Whether the element is a whole number (always, for integers; never NaN or ±inf).
    fn is_whole(self) -> bool;
    /// Whether the type holds values that are not whole numbers (floats).
    const FRACTIONAL: bool;
    /// The largest value (+inf for floats): where a running minimum starts.
    const HIGHEST: Self;
    /// The smallest value (-inf for floats): where a running maximum starts.
    const LOWEST: Self;
}

/// A clause's rule compiled for one compare type.
#[derive(Debug, Clone)]
pub(crate) struct TypedRule<C> {
    /// Closed intervals; `None`: every value is accepted.
    pub intervals: Option<Vec<(C, C)>>,
    pub ignore: Vec<C>,
    /// `integral` on a type with fractions: an accepted value must also be whole.
    pub integral: bool,
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
        // `integral` on an integer dtype restricts nothing.
        let integral = rule.integral && C::FRACTIONAL;
        Self {
            intervals,
            ignore,
            integral,
        }
    }

    #[inline(always)]
    pub fn accepts(&self, v: C) -> bool {
        let inside = match &self.intervals {
            None => true,
            Some(intervals) => intervals.iter().any(|&(lo, hi)| (v >= lo) & (v <= hi)),
        };
        inside && (!self.integral || v.is_whole())
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
                    // No integer lies strictly between adjacent f64s below 2^53; beyond, the
                    // macro refuses an inexact literal on a clause with integer dtypes.
                    Some(Num::Inexact(v, side)) => neighbours(v, side).1.ceil() as i128,
                };
                let hi = match interval.hi {
                    None => max,
                    Some(Num::Int(v)) if interval.inclusive => v,
                    Some(Num::Int(v)) => v.checked_sub(1)?,
                    Some(Num::Float(v)) if v == f64::INFINITY => max,
                    Some(Num::Float(v)) if v == f64::NEG_INFINITY => return None,
                    Some(Num::Float(v)) if interval.inclusive => v.floor() as i128,
                    Some(Num::Float(v)) => (v.ceil() as i128).checked_sub(1)?,
                    // v < real and v <= real agree: no integer equals an inexact literal.
                    Some(Num::Inexact(v, side)) => neighbours(v, side).0.floor() as i128,
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
                    Num::Float(_) | Num::Inexact(..) => None,
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

            fn is_whole(self) -> bool {
                true
            }

            const FRACTIONAL: bool = false;

            const HIGHEST: Self = <$t>::MAX;
            const LOWEST: Self = <$t>::MIN;
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
                    // The smallest value >= real is the smallest >= the f64 above it.
                    Some(Num::Inexact(v, side)) => $up(neighbours(v, side).1),
                };
                let hi = match interval.hi {
                    None => <$t>::INFINITY,
                    // No value equals an inexact literal, so `<` and `<=` agree: the largest
                    // value <= the f64 below it.
                    Some(Num::Inexact(v, side)) => $down(neighbours(v, side).0),
                    Some(bound) => {
                        let (up, down) = match bound {
                            Num::Int(v) => ($up(f64_up(v)), $down(f64_down(v))),
                            Num::Float(v) | Num::Inexact(v, _) => ($up(v), $down(v)),
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
                    Num::Inexact(..) => return None,
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

            fn is_whole(self) -> bool {
                // inf - inf and NaN - NaN are NaN, which is not 0.
                self - self.trunc() == 0.0
            }

            const FRACTIONAL: bool = true;

            const HIGHEST: Self = <$t>::INFINITY;
            const LOWEST: Self = <$t>::NEG_INFINITY;
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
    /// A few distinct offending values, in order of first appearance.
    pub offending: Vec<Value>,
    /// Whether `offending` holds every distinct offending value (up to five); a list that may
    /// miss some (the device path's first value, a CPU list not proven complete) still feeds the
    /// help lines but is not shown as the offending values.
    pub offending_complete: bool,
}

/// What the fast pass found: the counts and the observed range, over the whole tensor.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Summary {
    pub violating: u64,
    pub ignored: u64,
    pub total: u64,
    pub nan: u64,
    /// The smallest and largest element that is neither NaN nor ignored.
    pub observed: Option<(Value, Value)>,
}

impl Summary {
    /// No element is usable: all are ignored, or there are none.
    pub fn none_usable(&self) -> bool {
        self.ignored == self.total
    }
}

/// `f8e8m0` is an exponent alone: 2^(e - 127), with 0xFF as NaN.
pub(crate) fn decode_e8m0(bits: u8) -> f32 {
    match bits {
        0xFF => f32::NAN,
        0 => f32::from_bits(0x0040_0000),
        e => f32::from_bits(u32::from(e) << 23),
    }
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
    fn an_inexact_literal_compares_as_the_real_number_written() {
        use Num::*;
        // f64 0.1 is 0.1000000000000000055..., above the real 0.1; f64 0.3 is below 0.3.
        let tenth = Inexact(0.1, Side::Below);
        let three_tenths = Inexact(0.3, Side::Above);
        for inclusive in [true, false] {
            let (_, hi) = f64::interval(range(None, Some(tenth), inclusive), false).unwrap();
            assert_eq!(hi, 0.1f64.next_down());
            let (_, hi) = f64::interval(range(None, Some(three_tenths), inclusive), false).unwrap();
            assert_eq!(hi, 0.3);
            // f32 0.1 is 0.100000001490116..., above 0.1 too.
            let (_, hi) = f32::interval(range(None, Some(tenth), inclusive), false).unwrap();
            assert_eq!(hi, 0.1f32.next_down());
        }
        let (lo, _) = f64::interval(range(Some(tenth), None, true), false).unwrap();
        assert_eq!(lo, 0.1);
        let (lo, _) = f64::interval(range(Some(three_tenths), None, true), false).unwrap();
        assert_eq!(lo, 0.3f64.next_up());
        // A single inexact value is no value of any float dtype.
        assert_eq!(
            f64::interval(range(Some(tenth), Some(tenth), true), false),
            None
        );
        assert_eq!(
            f32::interval(range(Some(tenth), Some(tenth), true), false),
            None
        );
        assert_eq!(f64::exact(tenth), None);
        // An integer dtype in a mixed clause: 0.1..2.3 holds 1 and 2.
        let two_point_three = Inexact(2.3, Side::Above);
        assert_eq!(
            i64::interval(range(Some(tenth), Some(two_point_three), false), false),
            Some((1, 2))
        );
    }

    #[test]
    fn nan_is_in_no_range_and_finite_rejects_infinities() {
        let rule = Resolved {
            ranges: Some(vec![range(None, None, false)]),
            ignore: vec![],
            finite: false,
            allow_all: false,
            integral: false,
        };
        let typed = TypedRule::<f32>::new(&rule);
        assert!(!typed.accepts(f32::NAN));
        assert!(typed.accepts(f32::INFINITY));
        let finite_only = Resolved {
            ranges: None,
            ignore: vec![],
            finite: true,
            allow_all: false,
            integral: false,
        };
        let typed = TypedRule::<f32>::new(&finite_only);
        assert!(!typed.accepts(f32::NAN));
        assert!(!typed.accepts(f32::NEG_INFINITY));
        assert!(typed.accepts(-0.0));
        let typed = TypedRule::<i64>::new(&finite_only);
        assert!(typed.accepts(i64::MIN));
    }

    #[test]
    fn integral_accepts_whole_numbers_only() {
        let rule = Resolved {
            ranges: None,
            ignore: vec![Ignore::Value(Num::Float(0.5))],
            finite: false,
            allow_all: false,
            integral: true,
        };
        let typed = TypedRule::<f32>::new(&rule);
        assert!(typed.integral);
        for whole in [0.0, -0.0, 3.0, -7.0, 16_777_216.0, f32::MAX] {
            assert!(typed.accepts(whole), "{whole}");
        }
        for not_whole in [
            0.5,
            -2.25,
            1e-30,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ] {
            assert!(!typed.accepts(not_whole), "{not_whole}");
        }
        // An ignored value is allowed before `integral` is asked.
        assert!(typed.is_ignored(0.5));
        assert!(TypedRule::<f64>::new(&rule).accepts(1e300));
        assert!(!TypedRule::<f64>::new(&rule).accepts(0.1));
        // On an integer dtype `integral` restricts nothing.
        let typed = TypedRule::<i64>::new(&rule);
        assert!(!typed.integral && typed.intervals.is_none());
    }
}
