//! The portable range kernels at the bottom of the scan: the range tally a kernel yields
//! ([`RangeTally`]), the plain and lane loops that compute it, and the plain loop over the
//! checked positions of a masked run. The AVX-512 kernels fall back to these, and the fast pass
//! and the masked scan build on them.

use crate::rule::Compare;

/// The smaller of two values that are not NaN.
#[inline(always)]
pub(super) fn smaller<C: PartialOrd>(a: C, b: C) -> C {
    if b < a { b } else { a }
}

/// The larger of two values that are not NaN.
#[inline(always)]
pub(super) fn larger<C: PartialOrd>(a: C, b: C) -> C {
    if b > a { b } else { a }
}

/// What the range kernels yield for a slice against `[lo, hi]`: its length, the elements
/// outside (NaN included), the NaN count, the smallest and largest value that is not NaN
/// (`HIGHEST` and `LOWEST` if there is none), the largest value below `lo` (`LOWEST` if none)
/// and the smallest above `hi` (`HIGHEST` if none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct RangeTally<C> {
    pub(super) len: u64,
    pub(super) outside: u64,
    pub(super) nan: u64,
    pub(super) min: C,
    pub(super) max: C,
    pub(super) below_max: C,
    pub(super) above_min: C,
}

impl<C: Compare> RangeTally<C> {
    pub(super) fn empty() -> Self {
        Self {
            len: 0,
            outside: 0,
            nan: 0,
            min: C::HIGHEST,
            max: C::LOWEST,
            below_max: C::LOWEST,
            above_min: C::HIGHEST,
        }
    }

    pub(super) fn merge(&mut self, other: Self) {
        self.len += other.len;
        self.outside += other.outside;
        self.nan += other.nan;
        self.min = smaller(self.min, other.min);
        self.max = larger(self.max, other.max);
        self.below_max = larger(self.below_max, other.below_max);
        self.above_min = smaller(self.above_min, other.above_min);
    }
}

/// The range tally of a short slice, one element at a time.
pub(super) fn tally_short<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C,
    lo: C,
    hi: C,
) -> RangeTally<C> {
    with_outside(extremes(data, &widen), data, widen, lo, hi)
}

/// `tally` (the extremes and NaN count of `data`) with the elements outside `[lo, hi]`
/// counted, and the nearest offending value on each side.
pub(super) fn with_outside<T: Copy, C: Compare>(
    mut tally: RangeTally<C>,
    data: &[T],
    widen: impl Fn(T) -> C,
    lo: C,
    hi: C,
) -> RangeTally<C> {
    for &x in data {
        let v = widen(x);
        if !((v >= lo) & (v <= hi)) {
            tally.outside += 1;
            if v < lo && v > tally.below_max {
                tally.below_max = v;
            }
            if v > hi && v < tally.above_min {
                tally.above_min = v;
            }
        }
    }
    tally
}

/// The NaN count and the extremes of `data`: a [`RangeTally`] with nothing counted outside.
pub(super) fn extremes<T: Copy, C: Compare>(data: &[T], widen: impl Fn(T) -> C) -> RangeTally<C> {
    let mut tally = RangeTally::empty();
    tally.len = data.len() as u64;
    for &x in data {
        let v = widen(x);
        if v.is_nan() {
            tally.nan += 1;
            continue;
        }
        if v < tally.min {
            tally.min = v;
        }
        if v > tally.max {
            tally.max = v;
        }
    }
    tally
}

/// Independent lanes of the portable loop: each lane keeps its own counters and extremes, so
/// the loop body is the same operation on 16 values and LLVM turns it into vector code
/// without having to reorder a reduction.
pub(super) const LANES: usize = 16;

/// The per-lane state of [`tally_portable`].
struct Lanes<C> {
    outside: [u32; LANES],
    nan: [u32; LANES],
    min: [C; LANES],
    max: [C; LANES],
    below_max: [C; LANES],
    above_min: [C; LANES],
}

impl<C: Compare> Lanes<C> {
    fn new() -> Self {
        Self {
            outside: [0; LANES],
            nan: [0; LANES],
            min: [C::HIGHEST; LANES],
            max: [C::LOWEST; LANES],
            below_max: [C::LOWEST; LANES],
            above_min: [C::HIGHEST; LANES],
        }
    }

    /// Adds `v` to lane `i`. NaN compares false, so it counts as outside and never becomes an
    /// extreme.
    #[inline(always)]
    fn add(&mut self, i: usize, v: C, lo: C, hi: C) {
        self.outside[i] += u32::from(!((v >= lo) & (v <= hi)));
        self.nan[i] += u32::from(v.is_nan());
        self.min[i] = if v < self.min[i] { v } else { self.min[i] };
        self.max[i] = if v > self.max[i] { v } else { self.max[i] };
        let below = (v < lo) & (v > self.below_max[i]);
        self.below_max[i] = if below { v } else { self.below_max[i] };
        let above = (v > hi) & (v < self.above_min[i]);
        self.above_min[i] = if above { v } else { self.above_min[i] };
    }

    fn total(&self, len: usize) -> RangeTally<C> {
        let mut tally = RangeTally::empty();
        tally.len = len as u64;
        for i in 0..LANES {
            tally.outside += u64::from(self.outside[i]);
            tally.nan += u64::from(self.nan[i]);
            tally.min = smaller(tally.min, self.min[i]);
            tally.max = larger(tally.max, self.max[i]);
            tally.below_max = larger(tally.below_max, self.below_max[i]);
            tally.above_min = smaller(tally.above_min, self.above_min[i]);
        }
        tally
    }
}

/// The branch-free range tally. The u32 lane counters are flushed before they could overflow.
#[inline(always)]
pub(super) fn tally_portable<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> RangeTally<C> {
    let mut total = RangeTally::empty();
    for block in data.chunks(1 << 30) {
        let mut lanes = Lanes::new();
        let (groups, tail) = block.as_chunks::<LANES>();
        for group in groups {
            for (i, &x) in group.iter().enumerate() {
                lanes.add(i, widen(x), lo, hi);
            }
        }
        for &x in tail {
            lanes.add(0, widen(x), lo, hi);
        }
        total.merge(lanes.total(block.len()));
    }
    total
}

/// The full tally of one run by a plain loop (for unoptimised builds, as the pass loop above,
/// and short tails).
pub(super) fn tally_checked_plain<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C,
    lo: C,
    hi: C,
) -> (RangeTally<C>, u64) {
    let n = data.len().min(checked.len());
    let mut tally = RangeTally::empty();
    let mut exempt = 0u64;
    let mut i = 0;
    while i < n {
        let (x, m) = (data[i], checked[i]);
        i += 1;
        if m == 0 {
            exempt += 1;
            continue;
        }
        let v = widen(x);
        tally.len += 1;
        if v.is_nan() {
            tally.nan += 1;
            tally.outside += 1;
            continue;
        }
        if v < tally.min {
            tally.min = v;
        }
        if v > tally.max {
            tally.max = v;
        }
        if !(v >= lo && v <= hi) {
            tally.outside += 1;
            if v < lo && v > tally.below_max {
                tally.below_max = v;
            }
            if v > hi && v < tally.above_min {
                tally.above_min = v;
            }
        }
    }
    (tally, exempt)
}
