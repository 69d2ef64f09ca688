//! Value statistics of a CPU tensor, read in place from its storage.
//!
//! The fast pass walks the layout as contiguous or evenly strided rows (a broadcast dim is read
//! once and its count multiplied), cut into blocks of about [`CHUNK`] stored elements in logical
//! order and, when large, shared between the calling thread and rayon tasks
//! ([`Blocks::map`]). One read of each block yields everything a message states about the whole
//! tensor: the violating, ignored and NaN counts, the observed range, and the ranges the
//! offending values lie in (below and above the rule's interval). A pass needs less than that
//! tally (no NaN and both extremes inside means nothing is outside), so a lighter loop for the
//! extremes and NaN alone goes first and only a slice that fails it is tallied in full, while
//! it is still in cache. The loops are branch-free: AVX-512 for f32 and f64 compare types
//! (`cpu/avx512.rs`), else loops over 16 independent lanes that the compiler vectorises (built
//! for AVX2 too and chosen at run time); f16/bf16 are widened a block at a time. An unoptimised
//! build, where loops run as written, takes plain loops instead.
//!
//! Only when the fast pass finds a violation does the locating pass run, and it reads little:
//! it starts at the first block that holds a violation, stops at the first offending element
//! in logical order, then reads on through the following blocks (only those with violations,
//! for a tensor split across threads) for a few distinct offending values until it has
//! [`OFFENDING_SHOWN`], has seen every violation, or the fast pass's ranges prove the list
//! complete; it never reads more than [`LOCATE_BLOCKS`] blocks.
//! A list it cannot prove complete is dropped rather than shown as if it were: a violation
//! costs about what a pass costs.

use candle_core::{CpuStorage, DType, Layout, Storage, Tensor};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::rule::{Compare, Details, Resolved, Summary, TypedRule, decode_e8m0};
use crate::scan::{Outcome, Request};

#[cfg(target_arch = "x86_64")]
mod avx512;
mod masked;

/// Below this many elements one thread is faster than splitting.
const PARALLEL_MIN: usize = 1 << 17;
/// Stored elements per block (a task when splitting; the unit the locating pass reads).
const CHUNK: usize = 1 << 16;
pub(crate) use crate::error::OFFENDING_SHOWN;
/// The most blocks the locating pass reads: the first offender's and a few with violations
/// after it.
const LOCATE_BLOCKS: usize = 4;

/// The verdict on one CPU tensor: the fast pass, then the locating pass if it failed.
pub(crate) fn scan(request: &Request<'_>) -> Outcome {
    if let Some(mask) = request.mask {
        return masked::scan(request, mask);
    }
    let read = read(
        request.tensor,
        request.rule,
        Want::Verdict {
            needs_usable: request.needs_usable,
        },
    );
    match read {
        None => Outcome::Unreadable,
        Some(Read {
            details: Some((details, _)),
            ..
        }) => Outcome::Fail(details),
        Some(_) => Outcome::Pass,
    }
}

/// What the fast pass alone found; `None` if the dtype cannot be read.
#[cfg(test)]
pub(crate) fn summarize(tensor: &Tensor, rule: &Resolved) -> Option<Summary> {
    read(tensor, rule, Want::Summary).map(|read| read.summary)
}

/// The statistics a failed scan reports, and how many stored elements the locating pass read
/// (the fast pass reads each once); `None` if the dtype cannot be read.
#[cfg(test)]
pub(crate) fn statistics(tensor: &Tensor, rule: &Resolved) -> Option<(Details, u64)> {
    read(tensor, rule, Want::Statistics).and_then(|read| read.details)
}

/// How far a read goes.
#[derive(Clone, Copy)]
enum Want {
    /// The fast pass only.
    #[cfg(test)]
    Summary,
    /// The fast pass, and the statistics if the tensor breaks the rule.
    Verdict { needs_usable: bool },
    /// Both passes, whatever the fast pass found.
    #[cfg(test)]
    Statistics,
}

/// What a read found.
struct Read {
    #[cfg(test)]
    summary: Summary,
    details: Option<(Details, u64)>,
}

fn read(tensor: &Tensor, rule: &Resolved, want: Want) -> Option<Read> {
    let (storage, layout) = tensor.storage_and_layout();
    let Storage::Cpu(storage) = &*storage else {
        return None;
    };
    dispatch(storage, Scan { layout, rule, want })
}

/// Widens a slice at once (vectorised where the hardware converts in bulk, as for f16/bf16).
type BulkWiden<T, C> = Option<fn(&[T], &mut [C])>;

/// An operation over a typed storage slice, with the conversion into its compare type.
trait ScanOp {
    type Output;
    fn run<T: Copy + Send + Sync, C: Compare>(
        self,
        data: &[T],
        widen: impl Fn(T) -> C + Copy + Send + Sync,
        bulk: BulkWiden<T, C>,
        dtype: DType,
    ) -> Self::Output;
}

fn dispatch<O: ScanOp>(storage: &CpuStorage, op: O) -> Option<O::Output> {
    use half::slice::HalfFloatSliceExt;
    Some(match storage {
        CpuStorage::U8(d) => op.run(d, |v: u8| v, None, DType::U8),
        CpuStorage::U32(d) => op.run(d, |v: u32| v, None, DType::U32),
        CpuStorage::I16(d) => op.run(d, |v: i16| v, None, DType::I16),
        CpuStorage::I32(d) => op.run(d, |v: i32| v, None, DType::I32),
        CpuStorage::I64(d) => op.run(d, |v: i64| v, None, DType::I64),
        CpuStorage::BF16(d) => op.run(
            d,
            |v: half::bf16| v.to_f32(),
            Some(|src: &[half::bf16], dst: &mut [f32]| src.convert_to_f32_slice(dst)),
            DType::BF16,
        ),
        CpuStorage::F16(d) => op.run(
            d,
            |v: half::f16| v.to_f32(),
            Some(|src: &[half::f16], dst: &mut [f32]| src.convert_to_f32_slice(dst)),
            DType::F16,
        ),
        CpuStorage::F32(d) => op.run(d, |v: f32| v, None, DType::F32),
        CpuStorage::F64(d) => op.run(d, |v: f64| v, None, DType::F64),
        CpuStorage::F8E4M3(d) => op.run(d, |v: float8::F8E4M3| v.to_f32(), None, DType::F8E4M3),
        CpuStorage::F8E8M0(d) => op.run(d, decode_e8m0, None, DType::F8E8M0),
        CpuStorage::F6E2M3(_) | CpuStorage::F6E3M2(_) | CpuStorage::F4(_) => return None,
    })
}

/// A layout reduced to rows: `rows` runs of `inner_len` elements `inner_stride` apart, each
/// starting where its outer index puts it. Size-1 dims are dropped, broadcast (stride 0) dims
/// are counted in `repeat` instead of read again, and dims that are contiguous with each other
/// are merged, so a contiguous tensor is one row. Rows are numbered as in [`Stored`], which
/// merges the same way and also knows each element's index in the view.
struct Walk {
    start: usize,
    outer: Vec<(usize, usize)>,
    rows: usize,
    inner_len: usize,
    inner_stride: usize,
    repeat: u64,
}

impl Walk {
    fn new(layout: &Layout) -> Self {
        let mut repeat = 1u64;
        let mut empty = false;
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for (&size, &stride) in layout.dims().iter().zip(layout.stride()) {
            if size == 0 {
                empty = true;
            }
            if size == 1 {
                continue;
            }
            if stride == 0 {
                repeat = repeat.saturating_mul(size as u64);
                continue;
            }
            match merged.last_mut() {
                Some(last) if last.1 == size * stride => *last = (last.0 * size, stride),
                _ => merged.push((size, stride)),
            }
        }
        let (inner_len, inner_stride) = merged.pop().unwrap_or((1, 1));
        let rows = if empty {
            0
        } else {
            merged.iter().map(|&(size, _)| size).product()
        };
        Self {
            start: layout.start_offset(),
            outer: merged,
            rows,
            inner_len,
            inner_stride,
            repeat,
        }
    }

    fn row_start(&self, row: usize) -> usize {
        let mut rest = row;
        let mut offset = self.start;
        for &(size, stride) in self.outer.iter().rev() {
            offset += (rest % size) * stride;
            rest /= size;
        }
        offset
    }

    /// Stored elements the walk reads.
    fn stored(&self) -> usize {
        self.rows * self.inner_len
    }
}

/// A layout as its stored elements: size-1 and broadcast (stride 0) dims dropped, the broadcast
/// ones counted in `repeat`, and neighbours that are contiguous with each other merged. Each
/// merged dim keeps the axes it stands for, so a stored element's first index in the view is
/// known: its broadcast axes at 0 (the first time the view shows it).
struct Stored {
    dims: Vec<Merged>,
    rank: usize,
}

/// One dim of a [`Stored`] layout and the axes of the view it covers, with their sizes.
struct Merged {
    size: usize,
    stride: usize,
    axes: Vec<(usize, usize)>,
}

impl Stored {
    /// Merges as [`Walk::new`] does, so rows and positions mean the same in both.
    fn new(layout: &Layout) -> Self {
        let mut dims: Vec<Merged> = Vec::new();
        for (axis, (&size, &stride)) in layout.dims().iter().zip(layout.stride()).enumerate() {
            if size == 1 || stride == 0 {
                continue;
            }
            match dims.last_mut() {
                Some(last) if last.stride == size * stride => {
                    last.size *= size;
                    last.stride = stride;
                    last.axes.push((axis, size));
                }
                _ => dims.push(Merged {
                    size,
                    stride,
                    axes: vec![(axis, size)],
                }),
            }
        }
        Self {
            dims,
            rank: layout.dims().len(),
        }
    }

    /// The index in the view of element `position` of row `row`.
    fn index(&self, row: usize, position: usize) -> Vec<usize> {
        view_index(self.rank, &self.dims, row, position, |d| (d.size, &d.axes))
    }
}

/// The index in a view of rank `rank` of element `position` of row `row`, for a walk over
/// merged `dims` (each with its size and the axes of the view it covers, with their sizes);
/// axes no dim covers (size 1, broadcast) are at 0.
pub(super) fn view_index<D>(
    rank: usize,
    dims: &[D],
    row: usize,
    position: usize,
    parts: impl Fn(&D) -> (usize, &[(usize, usize)]),
) -> Vec<usize> {
    let mut index = vec![0; rank];
    let Some((inner, outer)) = dims.split_last() else {
        return index;
    };
    let mut place = |axes: &[(usize, usize)], mut at: usize| {
        for &(axis, size) in axes.iter().rev() {
            index[axis] = at % size;
            at /= size;
        }
    };
    place(parts(inner).1, position);
    let mut rest = row;
    for dim in outer.iter().rev() {
        let (size, axes) = parts(dim);
        place(axes, rest % size);
        rest /= size;
    }
    index
}

/// How the stored elements are cut into tasks: parts of one long row, or several short rows.
#[derive(Clone, Copy)]
struct Blocks {
    rows: usize,
    inner_len: usize,
    /// Parts per row (long rows) ...
    parts: usize,
    /// ... or rows per block (short rows).
    rows_per_block: usize,
    count: usize,
}

impl Blocks {
    fn new(rows: usize, inner_len: usize) -> Self {
        if inner_len >= CHUNK {
            let parts = inner_len.div_ceil(CHUNK);
            Self {
                rows,
                inner_len,
                parts,
                rows_per_block: 1,
                count: rows * parts,
            }
        } else {
            let rows_per_block = (CHUNK / inner_len.max(1)).max(1);
            Self {
                rows,
                inner_len,
                parts: 1,
                rows_per_block,
                count: rows.div_ceil(rows_per_block),
            }
        }
    }

    /// `block(b)` for every block, in block order. With `parallel`, the calling thread and
    /// rayon tasks (one fewer than the pool's threads) claim blocks from one counter: the caller
    /// starts at once and a helper joins when it wakes, so a call between other work does not
    /// wait for sleeping workers (a fork-join from outside the pool sleeps until they wake, and
    /// measured no faster than one thread on two cores). A helper that wakes after the last
    /// block is claimed finds nothing to do.
    fn map<R: Send + Sync>(self, parallel: bool, block: impl Fn(usize) -> R + Sync) -> Vec<R> {
        let helpers = rayon::current_num_threads()
            .saturating_sub(1)
            .min(self.count.saturating_sub(1));
        if !parallel || helpers == 0 {
            return (0..self.count).map(block).collect();
        }
        let next = AtomicUsize::new(0);
        let slots: Vec<OnceLock<R>> = (0..self.count).map(|_| OnceLock::new()).collect();
        let claim = || {
            loop {
                let b = next.fetch_add(1, Ordering::Relaxed);
                let Some(slot) = slots.get(b) else { break };
                // Each block is claimed once, so the slot is empty.
                let _ = slot.set(block(b));
            }
        };
        rayon::in_place_scope(|scope| {
            for _ in 0..helpers {
                scope.spawn(|_| claim());
            }
            claim();
        });
        // The scope has joined every helper: each slot is full.
        slots.into_iter().filter_map(OnceLock::into_inner).collect()
    }

    /// The `(row, from, to)` segments of block `block`, in logical order.
    fn segments(self, block: usize) -> impl Iterator<Item = (usize, usize, usize)> {
        let (first_row, last_row, from, to) = if self.parts > 1 {
            let part = block % self.parts;
            let from = part * CHUNK;
            let row = block / self.parts;
            (row, row + 1, from, (from + CHUNK).min(self.inner_len))
        } else {
            let first = block * self.rows_per_block;
            let last = (first + self.rows_per_block).min(self.rows);
            (first, last, 0, self.inner_len)
        };
        (first_row..last_row).map(move |row| (row, from, to))
    }
}

/// What one read of some stored elements found, in the compare type.
#[derive(Clone, Copy, Debug)]
struct Part<C> {
    violating: u64,
    ignored: u64,
    nan: u64,
    /// The smallest and largest value that is neither ignored nor NaN.
    range: Option<(C, C)>,
    /// The offending values that are not NaN lie in `below` and `above`: under and over the
    /// rule's interval (for a rule of several intervals, with ignored values or `integral`, all
    /// of them in `above`). A side whose two ends are equal holds one distinct value.
    below: Option<(C, C)>,
    above: Option<(C, C)>,
    /// Positions a `where` mask exempts (none without a mask); the counts above are of the
    /// checked positions only.
    exempt: u64,
}

/// The smaller of two values that are not NaN.
#[inline(always)]
fn smaller<C: PartialOrd>(a: C, b: C) -> C {
    if b < a { b } else { a }
}

/// The larger of two values that are not NaN.
#[inline(always)]
fn larger<C: PartialOrd>(a: C, b: C) -> C {
    if b > a { b } else { a }
}

fn union<C: Compare>(a: Option<(C, C)>, b: Option<(C, C)>) -> Option<(C, C)> {
    match (a, b) {
        (Some((lo, hi)), Some((l, h))) => Some((smaller(lo, l), larger(hi, h))),
        (range, None) | (None, range) => range,
    }
}

impl<C: Compare> Part<C> {
    fn empty() -> Self {
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
    fn merge(&mut self, other: Self) {
        self.violating += other.violating;
        self.ignored += other.ignored;
        self.nan += other.nan;
        self.exempt += other.exempt;
        self.range = union(self.range, other.range);
        self.below = union(self.below, other.below);
        self.above = union(self.above, other.above);
    }

    /// The part of a slice tallied against the single interval `[lo, hi]`.
    fn of_tally(tally: RangeTally<C>, lo: C, hi: C) -> Self {
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

/// What the range kernels yield for a slice against `[lo, hi]`: its length, the elements
/// outside (NaN included), the NaN count, the smallest and largest value that is not NaN
/// (`HIGHEST` and `LOWEST` if there is none), the largest value below `lo` (`LOWEST` if none)
/// and the smallest above `hi` (`HIGHEST` if none).
#[derive(Clone, Copy, Debug, PartialEq)]
struct RangeTally<C> {
    len: u64,
    outside: u64,
    nan: u64,
    min: C,
    max: C,
    below_max: C,
    above_min: C,
}

impl<C: Compare> RangeTally<C> {
    fn empty() -> Self {
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

    fn merge(&mut self, other: Self) {
        self.len += other.len;
        self.outside += other.outside;
        self.nan += other.nan;
        self.min = smaller(self.min, other.min);
        self.max = larger(self.max, other.max);
        self.below_max = larger(self.below_max, other.below_max);
        self.above_min = smaller(self.above_min, other.above_min);
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
fn range_tally<T: Copy, C: Compare>(
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

/// The range tally of a short slice, one element at a time.
fn tally_short<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C,
    lo: C,
    hi: C,
) -> RangeTally<C> {
    with_outside(extremes(data, &widen), data, widen, lo, hi)
}

/// `tally` (the extremes and NaN count of `data`) with the elements outside `[lo, hi]`
/// counted, and the nearest offending value on each side.
fn with_outside<T: Copy, C: Compare>(
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
fn extremes<T: Copy, C: Compare>(data: &[T], widen: impl Fn(T) -> C) -> RangeTally<C> {
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

/// Below this many elements a plain loop is faster than setting up vector lanes.
const SHORT: usize = 64;

/// The range tally of `data` with the best vector width the CPU has: AVX-512 for f32 and f64
/// compare types, else the portable loop compiled for AVX2 or plain; a plain loop for a short
/// slice (a small tensor, a broadcast one, a narrow view's rows).
#[inline]
fn tally_outside<T: Copy, C: Compare>(
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
fn tally_inside<T: Copy, C: Compare>(
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
fn inside_portable<T: Copy, C: Compare>(
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

/// Independent lanes of the portable loop: each lane keeps its own counters and extremes, so
/// the loop body is the same operation on 16 values and LLVM turns it into vector code
/// without having to reorder a reduction.
const LANES: usize = 16;

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
fn tally_portable<T: Copy, C: Compare>(
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

/// The part of any run of elements, under any rule.
fn part_general<T: Copy, C: Compare>(
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
struct Fast<C> {
    /// Every stored element, each once.
    all: Part<C>,
    /// The first block, in logical order, that holds a violation.
    first_block: Option<usize>,
    /// Each block's part, for a tensor split across threads (`None`: one thread, few blocks).
    blocks: Option<Vec<Part<C>>>,
}

impl<C: Compare> Fast<C> {
    /// The parts of every block, merged: in order on this thread for a small read (no list of
    /// parts kept), else shared between threads ([`Blocks::map`]).
    fn collect(blocks: Blocks, parallel: bool, block: impl Fn(usize) -> Part<C> + Sync) -> Self {
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

    /// The blocks the locating pass reads, in order: from the first with a violation, only
    /// those with violations where the parts are known, [`LOCATE_BLOCKS`] at most.
    fn candidates(&self, blocks: Blocks) -> impl Iterator<Item = usize> + '_ {
        let first = self.first_block.unwrap_or(blocks.count);
        (first..blocks.count)
            .filter(|&b| {
                self.blocks
                    .as_ref()
                    .is_none_or(|parts| parts.get(b).is_some_and(|part| part.violating > 0))
            })
            .take(LOCATE_BLOCKS)
    }
}

fn fast_pass<T: Copy + Send + Sync, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy + Send + Sync,
    bulk: BulkWiden<T, C>,
    rule: &TypedRule<C>,
    walk: &Walk,
    blocks: Blocks,
) -> Fast<C> {
    let block = |b: usize| {
        let mut part = Part::empty();
        for (row, from, to) in blocks.segments(b) {
            let start = walk.row_start(row);
            if walk.inner_stride == 1 {
                part.merge(part_contiguous(
                    &data[start + from..start + to],
                    widen,
                    bulk,
                    rule,
                ));
            } else {
                let elements = (from..to).map(|i| data[start + i * walk.inner_stride]);
                part.merge(part_general(elements, widen, rule));
            }
        }
        part
    };
    Fast::collect(blocks, walk.stored() >= PARALLEL_MIN, block)
}

/// What the locating pass found: the first offending element (row, position in the row,
/// value), distinct offending values in order of first appearance, whether they are all the
/// tensor's (or as many as a message lists), and how many stored elements it read.
struct Located<C> {
    first: Option<(usize, usize, C)>,
    offending: Vec<C>,
    complete: bool,
    read: u64,
    /// Offending elements met so far.
    seen: u64,
}

impl<C: Compare> Located<C> {
    fn new() -> Self {
        Self {
            first: None,
            offending: Vec::new(),
            complete: false,
            read: 0,
            seen: 0,
        }
    }

    /// Notes offending element `v` at `position` of row `row`; whether the list is now
    /// complete: as long as a message shows, every violation seen, or proven by the fast
    /// pass's ranges.
    fn offends(
        &mut self,
        row: usize,
        position: usize,
        v: C,
        fast: &Fast<C>,
        rule: &TypedRule<C>,
    ) -> bool {
        self.seen += 1;
        if self.first.is_none() {
            self.first = Some((row, position, v));
        }
        let listed = self.offending.len();
        note_offending(&mut self.offending, v);
        self.complete = self.offending.len() == OFFENDING_SHOWN
            || self.seen == fast.all.violating
            || (self.offending.len() > listed && proven_complete(&fast.all, rule, &self.offending));
        self.complete
    }
}

/// Reads from the first block with a violation, in logical order, for the first offending
/// element and a few distinct offending values; stops as soon as the list is complete, and
/// after [`LOCATE_BLOCKS`] blocks with violations in any case.
fn locate<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C,
    rule: &TypedRule<C>,
    walk: &Walk,
    blocks: Blocks,
    fast: &Fast<C>,
) -> Located<C> {
    let mut located = Located::new();
    if fast.first_block.is_none() {
        // Nothing offends: the empty list is complete.
        located.complete = true;
        return located;
    }
    'blocks: for b in fast.candidates(blocks) {
        for (row, from, to) in blocks.segments(b) {
            let start = walk.row_start(row);
            for position in from..to {
                let v = widen(data[start + position * walk.inner_stride]);
                located.read += 1;
                if rule.is_ignored(v) || rule.accepts(v) {
                    continue;
                }
                if located.offends(row, position, v, fast, rule) {
                    break 'blocks;
                }
            }
        }
    }
    located
}

/// Adds `v` to the distinct offending values (NaN equal to NaN), up to [`OFFENDING_SHOWN`].
pub(super) fn note_offending<C: Compare>(offending: &mut Vec<C>, v: C) {
    let seen = offending
        .iter()
        .any(|&o| o == v || (o.is_nan() && v.is_nan()));
    if !seen && offending.len() < OFFENDING_SHOWN {
        offending.push(v);
    }
}

/// Whether `listed` holds every distinct offending value, by the fast pass's ranges: NaN is
/// listed if any element is NaN, and each side of the interval holds one value, listed.
fn proven_complete<C: Compare>(all: &Part<C>, rule: &TypedRule<C>, listed: &[C]) -> bool {
    // NaN breaks every rule that has intervals or `integral`; without them nothing does.
    let nan_breaks = rule.intervals.is_some() || rule.integral;
    let nan_listed = all.nan == 0 || !nan_breaks || listed.iter().any(|o| o.is_nan());
    let side_listed =
        |side: Option<(C, C)>| side.is_none_or(|(a, b)| a == b && listed.contains(&a));
    nan_listed && side_listed(all.below) && side_listed(all.above)
}

/// The fast pass, then the locating pass if the tensor fails (or always, for `statistics`).
struct Scan<'a> {
    layout: &'a Layout,
    rule: &'a Resolved,
    want: Want,
}

impl ScanOp for Scan<'_> {
    type Output = Read;

    fn run<T: Copy + Send + Sync, C: Compare>(
        self,
        data: &[T],
        widen: impl Fn(T) -> C + Copy + Send + Sync,
        bulk: BulkWiden<T, C>,
        dtype: DType,
    ) -> Read {
        let rule = TypedRule::<C>::new(self.rule);
        let walk = Walk::new(self.layout);
        let blocks = Blocks::new(walk.rows, walk.inner_len);
        let fast = fast_pass(data, widen, bulk, &rule, &walk, blocks);
        let repeat = walk.repeat;
        let all = fast.all;
        let summary = Summary {
            violating: all.violating.saturating_mul(repeat),
            ignored: all.ignored.saturating_mul(repeat),
            total: (walk.stored() as u64).saturating_mul(repeat),
            nan: all.nan.saturating_mul(repeat),
            observed: all
                .range
                .map(|(lo, hi)| (lo.to_value(dtype), hi.to_value(dtype))),
        };
        let fails = match self.want {
            #[cfg(test)]
            Want::Summary => false,
            Want::Verdict { needs_usable } => {
                summary.violating > 0 || (needs_usable && summary.none_usable())
            }
            #[cfg(test)]
            Want::Statistics => true,
        };
        if !fails {
            return Read {
                #[cfg(test)]
                summary,
                details: None,
            };
        }
        let located = locate(data, widen, &rule, &walk, blocks, &fast);
        let mut details = Details {
            observed: summary.observed,
            ..Details::default()
        };
        details.counts.total = summary.total;
        details.counts.violating = summary.violating;
        details.counts.ignored = summary.ignored;
        details.counts.nan = summary.nan;
        if let Some((row, position, v)) = located.first {
            details.first_index = Some(Stored::new(self.layout).index(row, position));
            details.first_value = Some(v.to_value(dtype));
        }
        // A list that may miss some values is not shown as if it were all of them.
        details.offending = located
            .offending
            .iter()
            .map(|v| v.to_value(dtype))
            .collect();
        details.offending_complete = located.complete;
        Read {
            #[cfg(test)]
            summary,
            details: Some((details, located.read)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Value;
    use crate::rule::{Ignore, Interval, Num};
    use candle_core::Device;

    fn rule(lo: i128, hi: i128) -> Resolved {
        Resolved {
            ranges: Some(vec![Interval {
                lo: Some(Num::Int(lo)),
                hi: Some(Num::Int(hi)),
                inclusive: false,
            }]),
            ignore: vec![],
            finite: false,
            allow_all: false,
            integral: false,
        }
    }

    #[test]
    fn walk_merges_contiguous_dims_and_skips_broadcasts() {
        let t = Tensor::zeros((4, 3, 5), DType::F32, &Device::Cpu).unwrap();
        let walk = Walk::new(t.layout());
        assert_eq!((walk.rows, walk.inner_len, walk.inner_stride), (1, 60, 1));
        let narrowed = t.narrow(2, 1, 3).unwrap();
        let walk = Walk::new(narrowed.layout());
        assert_eq!((walk.rows, walk.inner_len, walk.inner_stride), (12, 3, 1));
        assert_eq!(walk.row_start(1), 1 + 5);
        let broadcast = Tensor::zeros(5, DType::F32, &Device::Cpu)
            .unwrap()
            .broadcast_as((7, 5))
            .unwrap();
        let walk = Walk::new(broadcast.layout());
        assert_eq!((walk.rows, walk.inner_len, walk.repeat), (1, 5, 7));
    }

    #[test]
    fn counts_on_views_match_the_logical_elements() {
        let data: Vec<i64> = (0..24).collect();
        let t = Tensor::from_vec(data, (4, 6), &Device::Cpu).unwrap();
        // Columns 2..5 of every row: values 2,3,4, 8,9,10, 14,15,16, 20,21,22; seven are >= 10.
        let view = t.narrow(1, 2, 3).unwrap();
        let summary = summarize(&view, &rule(0, 10)).unwrap();
        assert_eq!(
            summary,
            Summary {
                violating: 7,
                ignored: 0,
                total: 12,
                nan: 0,
                observed: Some((Value::Int(2), Value::Int(22))),
            }
        );
        let transposed = t.t().unwrap();
        let (details, _) = statistics(&transposed, &rule(0, 10)).unwrap();
        // Logical order of the transpose walks column 0 first: 0, 6, 12 -> 12 is first.
        assert_eq!(details.first_index, Some(vec![0, 2]));
        assert_eq!(details.counts.violating, 14);
        let broadcast = Tensor::new(&[1i64, 20], &Device::Cpu)
            .unwrap()
            .broadcast_as((3, 2))
            .unwrap();
        let summary = summarize(&broadcast, &rule(0, 10)).unwrap();
        assert_eq!(
            summary,
            Summary {
                violating: 3,
                ignored: 0,
                total: 6,
                nan: 0,
                observed: Some((Value::Int(1), Value::Int(20))),
            }
        );
    }

    #[test]
    fn large_tensors_split_across_threads_count_the_same() {
        let n = PARALLEL_MIN * 3 + 17;
        let data: Vec<f32> = (0..n)
            .map(|i| if i % 1000 == 7 { 2.0 } else { 0.5 })
            .collect();
        let expected = data.iter().filter(|&&v| v > 1.0).count() as u64;
        let t = Tensor::from_vec(data, n, &Device::Cpu).unwrap();
        let unit = Resolved {
            ranges: Some(vec![Interval {
                lo: Some(Num::Int(0)),
                hi: Some(Num::Int(1)),
                inclusive: true,
            }]),
            ignore: vec![],
            finite: false,
            allow_all: false,
            integral: false,
        };
        assert_eq!(summarize(&t, &unit).unwrap().violating, expected);
        let matrix = t
            .narrow(0, 0, 3000 * 131)
            .unwrap()
            .reshape((3000, 131))
            .unwrap();
        let view = matrix.narrow(1, 1, 130).unwrap();
        let plain: u64 = view
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
            .iter()
            .filter(|&&v| v > 1.0)
            .count() as u64;
        assert_eq!(summarize(&view, &unit).unwrap().violating, plain);
    }

    #[test]
    fn blocks_map_yields_every_block_in_order_from_any_thread() {
        let blocks = Blocks::new(1, 40 * CHUNK + 3);
        assert_eq!(blocks.count, 41);
        let expected: Vec<usize> = (0..41).map(|b| b * 3).collect();
        for parallel in [false, true] {
            assert_eq!(blocks.map(parallel, |b| b * 3), expected);
        }
        // From a worker of the pool (a guard called inside a parallel loop), and from a pool
        // of one thread, which has no helper to spare.
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            assert_eq!(pool.install(|| blocks.map(true, |b| b * 3)), expected);
            let nested: Vec<Vec<usize>> = pool.install(|| {
                use rayon::prelude::*;
                (0..4)
                    .into_par_iter()
                    .map(|_| blocks.map(true, |b| b * 3))
                    .collect()
            });
            assert!(nested.iter().all(|v| *v == expected));
        }
        // One block, and none.
        assert_eq!(Blocks::new(1, 5).map(true, |b| b + 1), vec![1]);
        assert_eq!(Blocks::new(0, 5).map(true, |b| b + 1), Vec::<usize>::new());
    }

    #[test]
    fn e8m0_decodes_powers_of_two() {
        assert_eq!(decode_e8m0(127), 1.0);
        assert_eq!(decode_e8m0(128), 2.0);
        assert_eq!(decode_e8m0(0) as f64, 2f64.powi(-127));
        assert_eq!(decode_e8m0(254) as f64, 2f64.powi(127));
        assert!(decode_e8m0(255).is_nan());
    }

    /// The statistics by a plain walk over every element of the view in logical order, with
    /// every distinct offending value (not only five).
    fn reference(t: &Tensor, rule: &Resolved) -> (Details, Vec<f64>) {
        let flat = t.flatten_all().unwrap();
        // candle's f8e4m3 -> f64 conversion recurses forever; f32 holds every f8e4m3 exactly.
        let values: Vec<f64> = if t.dtype() == DType::F8E4M3 {
            let wide = flat.to_dtype(DType::F32).unwrap().to_vec1::<f32>().unwrap();
            wide.into_iter().map(f64::from).collect()
        } else {
            flat.to_dtype(DType::F64).unwrap().to_vec1::<f64>().unwrap()
        };
        let typed = TypedRule::<f64>::new(rule);
        let mut details = Details::default();
        details.counts.total = values.len() as u64;
        let mut range: Option<(f64, f64)> = None;
        let mut offending: Vec<f64> = Vec::new();
        for (position, &v) in values.iter().enumerate() {
            if typed.is_ignored(v) {
                details.counts.ignored += 1;
                continue;
            }
            if v.is_nan() {
                details.counts.nan += 1;
            } else {
                range = Some(range.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))));
            }
            if !typed.accepts(v) {
                details.counts.violating += 1;
                if !offending
                    .iter()
                    .any(|&o| o == v || (o.is_nan() && v.is_nan()))
                {
                    offending.push(v);
                }
                if details.first_index.is_none() {
                    let mut index = vec![0; t.rank()];
                    let mut rest = position;
                    for (axis, &size) in t.dims().iter().enumerate().rev() {
                        index[axis] = rest % size;
                        rest /= size;
                    }
                    details.first_index = Some(index);
                }
            }
        }
        details.observed =
            range.map(|(lo, hi)| (Value::Float(lo, DType::F64), Value::Float(hi, DType::F64)));
        (details, offending)
    }

    fn as_f64(observed: Option<(Value, Value)>) -> Option<(f64, f64)> {
        observed.map(|(lo, hi)| (lo.to_f64(), hi.to_f64()))
    }

    /// The fast pass's counts and range, and the locating pass's first index and values, equal
    /// the reference's; the listed values are its first five, or a start of them when not
    /// proven complete.
    fn same_statistics(t: &Tensor, rule: &Resolved) {
        let what = format!("{:?} {:?}", t.dtype(), t.layout());
        let (expected, every_offending) = reference(t, rule);
        let summary = summarize(t, rule).unwrap();
        let counts = (
            summary.violating,
            summary.ignored,
            summary.nan,
            summary.total,
        );
        let c = expected.counts;
        assert_eq!(counts, (c.violating, c.ignored, c.nan, c.total), "{what}");
        assert_eq!(
            as_f64(summary.observed),
            as_f64(expected.observed),
            "{what}"
        );
        let (details, _) = statistics(t, rule).unwrap();
        assert_eq!(details.counts, expected.counts, "{what}");
        assert_eq!(details.first_index, expected.first_index, "{what}");
        assert_eq!(
            as_f64(details.observed),
            as_f64(expected.observed),
            "{what}"
        );
        let listed: Vec<f64> = details.offending.iter().map(|v| v.to_f64()).collect();
        let first_five: Vec<f64> = every_offending
            .iter()
            .copied()
            .take(OFFENDING_SHOWN)
            .collect();
        let same = |a: &[f64], b: &[f64]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
        };
        // A complete list is the first five; one that is not is a start of it.
        if details.offending_complete {
            assert!(
                same(&listed, &first_five),
                "{what}: {listed:?} vs {every_offending:?}"
            );
        } else {
            assert!(
                same(&listed, &first_five[..listed.len().min(first_five.len())]),
                "{what}: {listed:?} vs {every_offending:?}"
            );
        }
        // Below a few blocks the locating pass can read everything: the list is complete.
        if t.elem_count() < CHUNK {
            assert!(details.offending_complete, "{what}: {listed:?}");
        }
    }

    #[test]
    fn statistics_match_a_walk_in_logical_order_on_every_view() {
        let data: Vec<f32> = (0..4 * 6 * 5)
            .map(|i| match i % 17 {
                3 => f32::NAN,
                7 => 9.0,
                11 => -2.0,
                _ => (i % 3) as f32,
            })
            .collect();
        let t = Tensor::from_vec(data, (4, 6, 5), &Device::Cpu).unwrap();
        let one_interval = rule(0, 3);
        let two_intervals = Resolved {
            ranges: Some(vec![
                Interval {
                    lo: Some(Num::Int(0)),
                    hi: Some(Num::Int(1)),
                    inclusive: false,
                },
                Interval {
                    lo: Some(Num::Int(2)),
                    hi: Some(Num::Int(3)),
                    inclusive: false,
                },
            ]),
            ignore: vec![Ignore::Value(Num::Int(-2))],
            finite: false,
            allow_all: false,
            integral: false,
        };
        let views = [
            t.clone(),
            t.narrow(1, 1, 4).unwrap(),
            t.transpose(0, 2).unwrap(),
            t.narrow(2, 2, 1).unwrap(),
            t.narrow(0, 1, 1).unwrap().broadcast_as((3, 6, 5)).unwrap(),
            t.narrow(2, 0, 1).unwrap().broadcast_as((4, 6, 7)).unwrap(),
            t.narrow(1, 2, 1)
                .unwrap()
                .broadcast_as((4, 9, 5))
                .unwrap()
                .transpose(1, 2)
                .unwrap(),
        ];
        for view in &views {
            same_statistics(view, &one_interval);
            same_statistics(view, &two_intervals);
        }
    }

    /// Values with NaN, ±inf, -0.0 and values either side of `0..3`, as `dtype` (NaN and inf
    /// only where the dtype has them).
    fn mixed(n: usize, dtype: DType) -> Tensor {
        let float = dtype.is_float();
        let data: Vec<f64> = (0..n)
            .map(|i| match (i * 7919) % 23 {
                0 if float => f64::NAN,
                1 if float => f64::INFINITY,
                2 if float => f64::NEG_INFINITY,
                3 if float => -0.0,
                4 => 5.0,
                5 if dtype != DType::U8 && dtype != DType::U32 => -4.0,
                6 => 3.0,
                k => (k % 3) as f64,
            })
            .collect();
        Tensor::from_vec(data, n, &Device::Cpu)
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
    }

    #[test]
    fn the_fast_pass_yields_the_reference_counts_and_range_on_every_dtype() {
        let dtypes = [
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
        ];
        let with_ignore = Resolved {
            ignore: vec![Ignore::Value(Num::Int(5))],
            ..rule(0, 3)
        };
        for dtype in dtypes {
            // One thread and several, with tails that are no whole vector.
            for n in [1, 67, 1000, PARALLEL_MIN + 4099] {
                let t = mixed(n, dtype);
                same_statistics(&t, &rule(0, 3));
                same_statistics(&t, &with_ignore);
            }
            let t = mixed(60 * 37, dtype).reshape((60, 37)).unwrap();
            for view in [
                t.narrow(1, 3, 30).unwrap(),
                t.t().unwrap(),
                t.narrow(0, 5, 1).unwrap().broadcast_as((9, 37)).unwrap(),
            ] {
                same_statistics(&view, &rule(0, 3));
            }
        }
        // Only NaN: no observed range, every element offending, NaN listed once.
        for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
            let nan = Tensor::full(f32::NAN, (3, 70), &Device::Cpu)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            same_statistics(&nan, &rule(0, 3));
            let summary = summarize(&nan, &rule(0, 3)).unwrap();
            assert_eq!((summary.nan, summary.violating), (210, 210));
            assert_eq!(summary.observed, None);
            let (details, read) = statistics(&nan, &rule(0, 3)).unwrap();
            assert_eq!(read, 1);
            assert!(matches!(details.offending[..], [Value::Float(v, _)] if v.is_nan()));
        }
    }

    #[test]
    fn a_broadcast_view_is_read_over_its_stored_elements() {
        // One stored element shown 10^8 times: the failure path reads it once.
        let five = Tensor::new(5u32, &Device::Cpu).unwrap();
        let view = five.broadcast_as((10_000, 10_000)).unwrap();
        let (details, read) = statistics(&view, &rule(0, 3)).unwrap();
        assert_eq!(read, 1);
        assert_eq!(details.counts.violating, 100_000_000);
        assert_eq!(details.counts.total, 100_000_000);
        assert_eq!(details.first_index, Some(vec![0, 0]));
        // A broadcast row: its 7 stored elements, each read once.
        let row = Tensor::new(&[0u32, 1, 2, 3, 4, 5, 6], &Device::Cpu).unwrap();
        let view = row.broadcast_as((1000, 7)).unwrap();
        let (details, read) = statistics(&view, &rule(0, 3)).unwrap();
        assert_eq!(read, 7);
        assert_eq!(details.counts.violating, 4000);
        assert_eq!(details.first_index, Some(vec![0, 3]));
        // Beyond 2^32 elements, over one stored element: the counts are exact.
        let huge = five.broadcast_as((1 << 17, 1 << 16)).unwrap();
        let (details, read) = statistics(&huge, &rule(0, 3)).unwrap();
        assert_eq!((read, details.counts.violating), (1, 1 << 33));
    }

    #[test]
    fn a_dense_violation_is_located_from_its_block_and_stops_there() {
        let n = 16 * CHUNK + 5;
        let dense = |data: Vec<f32>| Tensor::from_vec(data, n, &Device::Cpu).unwrap();
        // One bad element: read from the start of its block up to it, nothing else.
        let at = 11 * CHUNK + 1234;
        let mut data = vec![1.0f32; n];
        data[at] = 7.0;
        let (details, read) = statistics(&dense(data), &rule(0, 3)).unwrap();
        assert_eq!(read, 1235);
        assert_eq!(details.first_index, Some(vec![at]));
        assert_eq!(details.offending, [Value::Float(7.0, DType::F32)]);
        // Every element bad, one value: the fast pass's range proves the list at once.
        let (details, read) = statistics(&dense(vec![5.0; n]), &rule(0, 3)).unwrap();
        assert_eq!(read, 1);
        assert_eq!(details.counts.violating, n as u64);
        assert_eq!(details.offending, [Value::Float(5.0, DType::F32)]);
        // Two bad values at the two ends: the first's block, then only the last block (the
        // clean ones between are skipped).
        let mut data = vec![1.0f32; n];
        data[10] = 4.0;
        data[n - 1] = 5.0;
        let (details, read) = statistics(&dense(data), &rule(0, 3)).unwrap();
        assert_eq!(read, (CHUNK + 5) as u64);
        assert_eq!(details.first_index, Some(vec![10]));
        let listed = [Value::Float(4.0, DType::F32), Value::Float(5.0, DType::F32)];
        assert_eq!(details.offending, listed);
        // Values below and above the range everywhere, one each: proven from the ranges.
        let data: Vec<f32> = (0..n).map(|i| [1.0, -1.0, 9.0][i % 3]).collect();
        let (details, read) = statistics(&dense(data), &rule(0, 3)).unwrap();
        assert_eq!(read, 3);
        let listed = [
            Value::Float(-1.0, DType::F32),
            Value::Float(9.0, DType::F32),
        ];
        assert_eq!(details.offending, listed);
    }

    #[test]
    fn a_list_that_cannot_be_proven_complete_is_dropped_after_a_few_blocks() {
        // 5 and 7 everywhere, and one 6 at the end: after LOCATE_BLOCKS blocks the list 5, 7
        // could still miss values, so it is marked incomplete; the counts and range stay exact.
        let n = 16 * CHUNK;
        let mut data: Vec<u32> = (0..n).map(|i| [5, 7][i % 2]).collect();
        data[n - 1] = 6;
        let t = Tensor::from_vec(data, n, &Device::Cpu).unwrap();
        let (details, read) = statistics(&t, &rule(0, 3)).unwrap();
        assert_eq!(read, (LOCATE_BLOCKS * CHUNK) as u64);
        assert_eq!(details.counts.violating, n as u64);
        assert_eq!(details.first_index, Some(vec![0]));
        assert_eq!(details.first_value, Some(Value::Int(5)));
        assert_eq!(details.observed, Some((Value::Int(5), Value::Int(7))));
        // Kept for the help lines, but not shown as the offending values.
        assert!(!details.offending_complete, "{:?}", details.offending);
        assert_eq!(details.offending, [Value::Int(5), Value::Int(7)]);
    }

    #[test]
    fn nan_is_listed_among_the_offending_values_of_integral_alone() {
        // 0.5 first, a NaN three blocks later: NaN breaks `integral` too, so the list 0.5 is
        // not complete until the NaN's block is read.
        let n = 4 * CHUNK;
        let mut data = vec![1.0f32; n];
        data[0] = 0.5;
        data[3 * CHUNK + 7] = f32::NAN;
        let t = Tensor::from_vec(data, n, &Device::Cpu).unwrap();
        let whole = Resolved {
            ranges: None,
            ignore: vec![],
            finite: false,
            allow_all: false,
            integral: true,
        };
        let (details, _) = statistics(&t, &whole).unwrap();
        assert_eq!(details.counts.violating, 2);
        assert_eq!(details.offending.len(), 2, "{:?}", details.offending);
        assert!(details.offending[1].to_f64().is_nan());
    }
}
