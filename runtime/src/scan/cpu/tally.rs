//! The fast pass: each block of the walk tallied against the rule (the counts, the NaN count,
//! the observed range and where the offending values lie), by the branch-free range kernels
//! for a single interval and a general loop for any rule, and the blocks' parts merged.

#[cfg(target_arch = "x86_64")]
use super::avx512;
use super::portable::{
    LANES, RangeTally, extremes, larger, smaller, tally_portable, tally_short, with_outside,
};
use super::walk::{Blocks, PARALLEL_MIN, Walk};
use crate::rule::{Compare, TypedRule};

/// Widens a slice at once (vectorised where the hardware converts in bulk, as for f16/bf16).
pub(super) type BulkWiden<T, C> = Option<fn(&[T], &mut [C])>;

/// What one read of some stored elements found, in the compare type.
#[derive(Clone, Copy, Debug)]
pub(super) struct Part<C> {
    pub(super) violating: u64,
    pub(super) ignored: u64,
    pub(super) nan: u64,
    /// The smallest and largest value that is neither ignored nor NaN.
    pub(super) range: Option<(C, C)>,
    /// The offending values that are not NaN lie in `below` and `above`: under and over the
    /// rule's interval (for a rule of several intervals, with ignored values or `integral`, all
    /// of them in `above`). A side whose two ends are equal holds one distinct value.
    pub(super) below: Option<(C, C)>,
    pub(super) above: Option<(C, C)>,
    /// Positions a `where` mask exempts (none without a mask); the counts above are of the
    /// checked positions only.
    pub(super) exempt: u64,
}

fn union<C: Compare>(a: Option<(C, C)>, b: Option<(C, C)>) -> Option<(C, C)> {
    match (a, b) {
        (Some((lo, hi)), Some((l, h))) => Some((smaller(lo, l), larger(hi, h))),
        (range, None) | (None, range) => range,
    }
}

impl<C: Compare> Part<C> {
    pub(super) fn empty() -> Self {
        Self {
            violating: 0,
            ignored: 0,
            nan: 0,
            range: None,
            below: None,
            above: None,
            exempt: 0,
        }
    }

    /// Adds the elements of `other`.
    pub(super) fn merge(&mut self, other: Self) {
        self.violating += other.violating;
        self.ignored += other.ignored;
        self.nan += other.nan;
        self.exempt += other.exempt;
        self.range = union(self.range, other.range);
        self.below = union(self.below, other.below);
        self.above = union(self.above, other.above);
    }

    /// The part of a slice tallied against the single interval `[lo, hi]`.
    pub(super) fn of_tally(tally: RangeTally<C>, lo: C, hi: C) -> Self {
        let usable = tally.len - tally.nan;
        let range = (usable > 0).then_some((tally.min, tally.max));
        Self {
            violating: tally.outside,
            ignored: 0,
            nan: tally.nan,
            range,
            below: range.and_then(|(min, _)| (min < lo).then_some((min, tally.below_max))),
            above: range.and_then(|(_, max)| (max > hi).then_some((tally.above_min, max))),
            exempt: 0,
        }
    }
}

/// The part of a contiguous slice.
#[inline]
fn part_contiguous<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy,
    bulk: BulkWiden<T, C>,
    rule: &TypedRule<C>,
) -> Part<C> {
    // `integral` needs the general loop; without it the branch-free ones stay as they were.
    match (&rule.intervals, rule.ignore.is_empty() && !rule.integral) {
        // Every value is accepted (`finite` on an integer dtype): nothing can break the rule,
        // so nothing is read; the counts of a failure (no element at all) are zero.
        (None, true) if C::finite_interval().is_none() => Part::empty(),
        (Some(intervals), true) if intervals.len() == 1 => {
            let (lo, hi) = intervals[0];
            let tally = match bulk {
                // Widen a block at a time into a stack buffer, then tally in the compare type.
                Some(bulk) => {
                    const BUFFER: usize = 1024;
                    let mut buffer = [lo; BUFFER];
                    let mut total = RangeTally::empty();
                    for block in data.chunks(BUFFER) {
                        let wide = &mut buffer[..block.len()];
                        bulk(block, wide);
                        total.merge(range_tally(wide, |v| v, lo, hi));
                    }
                    total
                }
                None => range_tally(data, widen, lo, hi),
            };
            Part::of_tally(tally, lo, hi)
        }
        _ => part_general(data.iter().copied(), widen, rule),
    }
}

/// The range tally of `data`. What a pass needs is lighter than the full tally (no NaN and both
/// extremes inside means nothing is outside), so a kernel for that goes first and only a slice
/// that fails it is tallied in full, while it is still in cache. Optimised, that is the pass
/// kernel ([`tally_inside`]: the full tally's compares, not memory, would bound a pass);
/// unoptimised, where loops run as written, a plain extremes-and-NaN loop.
#[inline]
pub(super) fn range_tally<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> RangeTally<C> {
    if cfg!(debug_assertions) {
        let extremes = extremes(data, widen);
        // Empty passes too: `HIGHEST >= lo` and `LOWEST <= hi`.
        if extremes.nan == 0 && extremes.min >= lo && extremes.max <= hi {
            return extremes;
        }
        // Unoptimised, the lane kernel costs several times the plain loop.
        return with_outside(extremes, data, widen, lo, hi);
    }
    if data.len() < SHORT {
        return tally_short(data, widen, lo, hi);
    }
    tally_inside(data, widen, lo, hi).unwrap_or_else(|| tally_outside(data, widen, lo, hi))
}

/// Below this many elements a plain loop is faster than setting up vector lanes.
const SHORT: usize = 64;

/// The range tally of `data` with the best vector width the CPU has: AVX-512 for f32 and f64
/// compare types, else the portable loop compiled for AVX2 or plain; a plain loop for a short
/// slice (a small tensor, a broadcast one, a narrow view's rows).
#[inline]
pub(super) fn tally_outside<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> RangeTally<C> {
    if data.len() < SHORT {
        return tally_short(data, widen, lo, hi);
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F, checked just above.
        if let Some(tally) = unsafe { avx512::tally_outside(data, widen, lo, hi) } {
            return tally;
        }
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { tally_avx2(data, widen, lo, hi) };
    }
    tally_portable(data, widen, lo, hi)
}

/// The range tally of `data` if every element is inside `[lo, hi]`, from the extremes and NaN
/// alone; `None` when some element may not be (the caller tallies in full). AVX-512 for f32
/// and f64 compare types, else the portable loop compiled for AVX2 or plain.
#[inline]
pub(super) fn tally_inside<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> Option<RangeTally<C>> {
    #[cfg(target_arch = "x86_64")]
    if avx512::handles::<C>() && std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F, checked just above.
        return unsafe { avx512::tally_inside(data, widen, lo, hi) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { inside_avx2(data, widen, lo, hi) };
    }
    inside_portable(data, widen, lo, hi)
}

/// The portable pass loop compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn inside_avx2<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> Option<RangeTally<C>> {
    inside_portable(data, widen, lo, hi)
}

/// The pass loop over independent lanes: each keeps its own extremes and NaN flag (no counter,
/// no compare against the bounds), so LLVM vectorises it into two or three operations a vector.
#[inline(always)]
pub(super) fn inside_portable<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> Option<RangeTally<C>> {
    let mut min = [C::HIGHEST; LANES];
    let mut max = [C::LOWEST; LANES];
    let mut nan = [0u32; LANES];
    let (groups, tail) = data.as_chunks::<LANES>();
    for group in groups {
        for (i, &x) in group.iter().enumerate() {
            let v = widen(x);
            nan[i] |= u32::from(v.is_nan());
            min[i] = if v < min[i] { v } else { min[i] };
            max[i] = if v > max[i] { v } else { max[i] };
        }
    }
    let mut tally = RangeTally::empty();
    tally.len = (data.len() - tail.len()) as u64;
    for i in 0..LANES {
        tally.nan += u64::from(nan[i]);
        tally.min = smaller(tally.min, min[i]);
        tally.max = larger(tally.max, max[i]);
    }
    if tally.nan > 0 || !(tally.min >= lo && tally.max <= hi) {
        return None;
    }
    let tail = tally_short(tail, widen, lo, hi);
    if tail.outside > 0 {
        return None;
    }
    tally.merge(tail);
    Some(tally)
}

/// The same loop compiled for AVX2, chosen at run time like candle's own `vec_sum`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn tally_avx2<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> RangeTally<C> {
    tally_portable(data, widen, lo, hi)
}

/// The part of any run of elements, under any rule.
pub(super) fn part_general<T: Copy, C: Compare>(
    elements: impl Iterator<Item = T>,
    widen: impl Fn(T) -> C,
    rule: &TypedRule<C>,
) -> Part<C> {
    let mut part = Part::empty();
    for x in elements {
        let v = widen(x);
        if rule.is_ignored(v) {
            part.ignored += 1;
            continue;
        }
        if v.is_nan() {
            part.nan += 1;
        } else {
            part.range = union(part.range, Some((v, v)));
        }
        if !rule.accepts(v) {
            part.violating += 1;
            if !v.is_nan() {
                part.above = union(part.above, Some((v, v)));
            }
        }
    }
    part
}

/// What the fast pass found over the whole tensor, and where its violations are.
pub(super) struct Fast<C> {
    /// Every stored element, each once.
    pub(super) all: Part<C>,
    /// The first block, in logical order, that holds a violation.
    pub(super) first_block: Option<usize>,
    /// Each block's part, for a tensor split across threads (`None`: one thread, few blocks).
    pub(super) blocks: Option<Vec<Part<C>>>,
}

impl<C: Compare> Fast<C> {
    /// The parts of every block, merged: in order on this thread for a small read (no list of
    /// parts kept), else shared between threads ([`Blocks::map`]).
    pub(super) fn collect(
        blocks: Blocks,
        parallel: bool,
        block: impl Fn(usize) -> Part<C> + Sync,
    ) -> Self {
        if !parallel {
            let mut all = Part::empty();
            let mut first_block = None;
            for b in 0..blocks.count {
                let part = block(b);
                if part.violating > 0 && first_block.is_none() {
                    first_block = Some(b);
                }
                all.merge(part);
            }
            return Self {
                all,
                first_block,
                blocks: None,
            };
        }
        let parts = blocks.map(true, block);
        let mut all = Part::empty();
        for part in &parts {
            all.merge(*part);
        }
        Self {
            all,
            first_block: parts.iter().position(|part| part.violating > 0),
            blocks: Some(parts),
        }
    }
}

pub(super) fn fast_pass<T: Copy + Send + Sync, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy + Send + Sync,
    bulk: BulkWiden<T, C>,
    rule: &TypedRule<C>,
    walk: &Walk<1>,
    blocks: Blocks,
) -> Fast<C> {
    let (_, [inner_stride]) = walk.inner();
    let block = |b: usize| {
        let mut part = Part::empty();
        for (row, from, to) in blocks.segments(b) {
            let [start] = walk.row_start(row);
            if inner_stride == 1 {
                part.merge(part_contiguous(
                    &data[start + from..start + to],
                    widen,
                    bulk,
                    rule,
                ));
            } else {
                let elements = (from..to).map(|i| data[start + i * inner_stride]);
                part.merge(part_general(elements, widen, rule));
            }
        }
        part
    };
    Fast::collect(blocks, walk.stored() >= PARALLEL_MIN, block)
}
