//! Value statistics of a CPU tensor, read in place from its storage.
//!
//! The fast pass ([`summarize`]) walks the layout as contiguous or evenly strided rows (a
//! broadcast dim is read once and its count multiplied), counts the elements outside the rule
//! with a branch-free loop the compiler turns into a vector reduction (built for AVX2 too and
//! chosen at run time), widens f16/bf16 a block at a time, and splits large tensors across
//! threads with rayon. Only when it finds a violation does one more pass ([`statistics`]) read
//! the stored elements again, split across threads the same way, for the counts, the observed
//! range, the first offending element in logical order and a few distinct offending values: a
//! broadcast dim is not read again there either, so a violation costs about what a pass costs.

use candle_core::{CpuStorage, DType, Layout, Storage, Tensor};
use rayon::prelude::*;

use crate::rule::{Compare, Details, Resolved, Summary, TypedRule, decode_e8m0};
use crate::scan::{Outcome, Request};

#[cfg(target_arch = "x86_64")]
mod avx512;
mod masked;

/// Below this many elements one thread is faster than splitting.
const PARALLEL_MIN: usize = 1 << 17;
/// Elements per task when splitting.
const CHUNK: usize = 1 << 16;

/// The verdict on one CPU tensor: the fast pass, then the statistics if it failed.
pub(crate) fn scan(request: &Request<'_>) -> Outcome {
    if let Some(mask) = request.mask {
        return masked::scan(request, mask);
    }
    let Some(summary) = summarize(request.tensor, request.rule) else {
        return Outcome::Unreadable;
    };
    if summary.violating == 0 && !(request.needs_usable && summary.none_usable()) {
        return Outcome::Pass;
    }
    match statistics(request.tensor, request.rule) {
        Some((details, _)) => Outcome::Fail(details),
        None => Outcome::Unreadable,
    }
}

/// Counts the violating and ignored elements; `None` if the dtype cannot be read.
pub(crate) fn summarize(tensor: &Tensor, rule: &Resolved) -> Option<Summary> {
    let (storage, layout) = tensor.storage_and_layout();
    let Storage::Cpu(storage) = &*storage else {
        return None;
    };
    dispatch(storage, Summarize { layout, rule })
}

/// The statistics of a failed scan, and how many stored elements were read (each once);
/// `None` if the dtype cannot be read.
pub(crate) fn statistics(tensor: &Tensor, rule: &Resolved) -> Option<(Details, u64)> {
    let (storage, layout) = tensor.storage_and_layout();
    let Storage::Cpu(storage) = &*storage else {
        return None;
    };
    dispatch(storage, Statistics { layout, rule })
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
/// are merged, so a contiguous tensor is one row.
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
                repeat *= size as u64;
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
}

struct Summarize<'a> {
    layout: &'a Layout,
    rule: &'a Resolved,
}

impl ScanOp for Summarize<'_> {
    type Output = Summary;

    fn run<T: Copy + Send + Sync, C: Compare>(
        self,
        data: &[T],
        widen: impl Fn(T) -> C + Copy + Send + Sync,
        bulk: BulkWiden<T, C>,
        _dtype: DType,
    ) -> Summary {
        let rule = TypedRule::<C>::new(self.rule);
        let walk = Walk::new(self.layout);
        let total = walk.rows * walk.inner_len;
        let add = |a: (u64, u64), b: (u64, u64)| (a.0 + b.0, a.1 + b.1);
        let row = |r: usize| {
            let start = walk.row_start(r);
            count_run(
                data,
                start,
                walk.inner_len,
                walk.inner_stride,
                widen,
                bulk,
                &rule,
            )
        };
        let (violating, ignored) = if total < PARALLEL_MIN {
            (0..walk.rows).map(row).fold((0, 0), add)
        } else if walk.rows == 1 && walk.inner_stride == 1 {
            data[walk.start..walk.start + walk.inner_len]
                .par_chunks(CHUNK)
                .map(|chunk| count_contiguous(chunk, widen, bulk, &rule))
                .reduce(|| (0, 0), add)
        } else {
            let rows_per_task = (CHUNK / walk.inner_len.max(1)).max(1);
            (0..walk.rows)
                .into_par_iter()
                .with_min_len(rows_per_task)
                .map(row)
                .reduce(|| (0, 0), add)
        };
        Summary {
            violating: violating * walk.repeat,
            ignored: ignored * walk.repeat,
            total: total as u64 * walk.repeat,
        }
    }
}

#[inline]
fn count_run<T: Copy, C: Compare>(
    data: &[T],
    start: usize,
    len: usize,
    stride: usize,
    widen: impl Fn(T) -> C + Copy,
    bulk: BulkWiden<T, C>,
    rule: &TypedRule<C>,
) -> (u64, u64) {
    if stride == 1 {
        count_contiguous(&data[start..start + len], widen, bulk, rule)
    } else {
        let elements = (0..len).map(|i| data[start + i * stride]);
        count_general(elements, widen, rule)
    }
}

/// `(violating, ignored)` in a contiguous slice.
#[inline]
fn count_contiguous<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy,
    bulk: BulkWiden<T, C>,
    rule: &TypedRule<C>,
) -> (u64, u64) {
    // `integral` needs the general loop; without it the branch-free one stays as it was.
    match (&rule.intervals, rule.ignore.is_empty() && !rule.integral) {
        (None, true) => (0, 0),
        (Some(intervals), true) if intervals.len() == 1 => {
            let (lo, hi) = intervals[0];
            match bulk {
                // Widen a block at a time into a stack buffer, then count in the compare type.
                Some(bulk) => {
                    const BUFFER: usize = 1024;
                    let mut buffer = [lo; BUFFER];
                    let mut total = 0;
                    for block in data.chunks(BUFFER) {
                        let wide = &mut buffer[..block.len()];
                        bulk(block, wide);
                        total += count_outside(wide, |v| v, lo, hi);
                    }
                    (total, 0)
                }
                None => (count_outside(data, widen, lo, hi), 0),
            }
        }
        _ => count_general(data.iter().copied(), widen, rule),
    }
}

/// Elements outside `[lo, hi]` (NaN included), with the best vector width the CPU has:
/// AVX-512 for f32 and f64 compare types, else the portable loop compiled for AVX2 or plain.
#[inline]
fn count_outside<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F, checked just above.
        if let Some(count) = unsafe { avx512::count_outside(data, widen, lo, hi) } {
            return count;
        }
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { count_outside_avx2(data, widen, lo, hi) };
    }
    count_outside_portable(data, widen, lo, hi)
}

/// The same loop compiled for AVX2 (eight f32 lanes), chosen at run time like candle's own
/// `vec_sum`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn count_outside_avx2<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> u64 {
    count_outside_portable(data, widen, lo, hi)
}

/// A branch-free counting loop that LLVM turns into a vector reduction with several
/// accumulators. The u32 counter is flushed before it could overflow.
#[inline(always)]
fn count_outside_portable<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> u64 {
    let mut total = 0u64;
    for block in data.chunks(1 << 30) {
        let mut count = 0u32;
        for &x in block {
            let v = widen(x);
            count += u32::from(!((v >= lo) & (v <= hi)));
        }
        total += u64::from(count);
    }
    total
}

fn count_general<T: Copy, C: Compare>(
    elements: impl Iterator<Item = T>,
    widen: impl Fn(T) -> C,
    rule: &TypedRule<C>,
) -> (u64, u64) {
    let (mut violating, mut ignored) = (0u64, 0u64);
    for x in elements {
        let v = widen(x);
        if rule.is_ignored(v) {
            ignored += 1;
        } else if !rule.accepts(v) {
            violating += 1;
        }
    }
    (violating, ignored)
}

/// A layout as its stored elements: size-1 and broadcast (stride 0) dims dropped, the broadcast
/// ones counted in `repeat`, and neighbours that are contiguous with each other merged. Each
/// merged dim keeps the axes it stands for, so a stored element's first index in the view is
/// known: its broadcast axes at 0 (the first time the view shows it).
struct Stored {
    start: usize,
    dims: Vec<Merged>,
    repeat: u64,
    rank: usize,
    empty: bool,
}

/// One dim of a [`Stored`] layout and the axes of the view it covers, with their sizes.
struct Merged {
    size: usize,
    stride: usize,
    axes: Vec<(usize, usize)>,
}

impl Stored {
    fn new(layout: &Layout) -> Self {
        let mut repeat = 1u64;
        let mut empty = false;
        let mut dims: Vec<Merged> = Vec::new();
        for (axis, (&size, &stride)) in layout.dims().iter().zip(layout.stride()).enumerate() {
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
            start: layout.start_offset(),
            dims,
            repeat,
            rank: layout.dims().len(),
            empty,
        }
    }

    /// The length and stride of the innermost dim (one element for a scalar).
    fn inner(&self) -> (usize, usize) {
        self.dims.last().map_or((1, 1), |d| (d.size, d.stride))
    }

    /// Runs of the innermost dim.
    fn rows(&self) -> usize {
        if self.empty {
            return 0;
        }
        let outer = self.dims.len().saturating_sub(1);
        self.dims[..outer].iter().map(|d| d.size).product()
    }

    fn row_start(&self, row: usize) -> usize {
        let outer = self.dims.len().saturating_sub(1);
        let mut rest = row;
        let mut offset = self.start;
        for dim in self.dims[..outer].iter().rev() {
            offset += (rest % dim.size) * dim.stride;
            rest /= dim.size;
        }
        offset
    }

    /// The index in the view of element `position` of row `row`.
    fn index(&self, row: usize, position: usize) -> Vec<usize> {
        let mut index = vec![0; self.rank];
        let Some((inner, outer)) = self.dims.split_last() else {
            return index;
        };
        let mut place = |dim: &Merged, mut at: usize| {
            for &(axis, size) in dim.axes.iter().rev() {
                index[axis] = at % size;
                at /= size;
            }
        };
        place(inner, position);
        let mut rest = row;
        for dim in outer.iter().rev() {
            place(dim, rest % dim.size);
            rest /= dim.size;
        }
        index
    }
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

/// How many distinct offending values a message lists.
const OFFENDING_SHOWN: usize = 5;

/// What one block of stored elements holds; blocks merge in logical order.
struct Tally<C> {
    violating: u64,
    ignored: u64,
    nan: u64,
    range: Option<(C, C)>,
    /// The first offending element: its row, position in the row, and value.
    first: Option<(usize, usize, C)>,
    offending: Vec<C>,
    read: u64,
}

impl<C: Compare> Tally<C> {
    fn new() -> Self {
        Self {
            violating: 0,
            ignored: 0,
            nan: 0,
            range: None,
            first: None,
            offending: Vec::new(),
            read: 0,
        }
    }

    #[inline(always)]
    fn visit(&mut self, v: C, rule: &TypedRule<C>, row: usize, position: usize) {
        if rule.is_ignored(v) {
            self.ignored += 1;
            return;
        }
        if v.is_nan() {
            self.nan += 1;
        } else {
            self.range = Some(match self.range {
                None => (v, v),
                Some((lo, hi)) => (if v < lo { v } else { lo }, if v > hi { v } else { hi }),
            });
        }
        if !rule.accepts(v) {
            self.violating += 1;
            if self.first.is_none() {
                self.first = Some((row, position, v));
            }
            self.note_offending(v);
        }
    }

    fn note_offending(&mut self, v: C) {
        let seen = self
            .offending
            .iter()
            .any(|&o| o == v || (o.is_nan() && v.is_nan()));
        if !seen && self.offending.len() < OFFENDING_SHOWN {
            self.offending.push(v);
        }
    }

    /// The tally of a contiguous slice under one interval `[lo, hi]` with nothing ignored: a
    /// branch-free pass for the counts and the range, then, only if something is outside,
    /// a second look at this slice for the first offending elements.
    #[inline(always)]
    fn of_slice<T: Copy>(
        slice: &[T],
        widen: impl Fn(T) -> C,
        lo: C,
        hi: C,
        row: usize,
        from: usize,
    ) -> Self {
        let mut tally = Self::new();
        // A slice is at most one block (`CHUNK` elements): u32 counters cannot overflow and
        // keep the loop in vector registers.
        let (mut outside, mut nan) = (0u32, 0u32);
        let (mut min, mut max) = (C::HIGHEST, C::LOWEST);
        for &x in slice {
            let v = widen(x);
            outside += u32::from(!((v >= lo) & (v <= hi)));
            nan += u32::from(v.is_nan());
            // NaN compares false, so it never becomes the minimum or maximum.
            min = if v < min { v } else { min };
            max = if v > max { v } else { max };
        }
        tally.violating = u64::from(outside);
        tally.nan = u64::from(nan);
        tally.read = slice.len() as u64;
        let usable = slice.len() as u64 - tally.nan;
        tally.range = (usable > 0).then_some((min, max));
        if outside > 0 {
            for (i, &x) in slice.iter().enumerate() {
                let v = widen(x);
                if !((v >= lo) & (v <= hi)) {
                    if tally.first.is_none() {
                        tally.first = Some((row, from + i, v));
                    }
                    tally.note_offending(v);
                    if tally.offending.len() == OFFENDING_SHOWN {
                        break;
                    }
                }
            }
        }
        tally
    }

    /// Adds a later block.
    fn merge(&mut self, later: Self) {
        self.violating += later.violating;
        self.ignored += later.ignored;
        self.nan += later.nan;
        self.read += later.read;
        self.range = match (self.range, later.range) {
            (Some((lo, hi)), Some((l, h))) => {
                Some((if l < lo { l } else { lo }, if h > hi { h } else { hi }))
            }
            (range, None) | (None, range) => range,
        };
        if self.first.is_none() {
            self.first = later.first;
        }
        for v in later.offending {
            self.note_offending(v);
        }
    }
}

struct Statistics<'a> {
    layout: &'a Layout,
    rule: &'a Resolved,
}

impl ScanOp for Statistics<'_> {
    type Output = (Details, u64);

    fn run<T: Copy + Send + Sync, C: Compare>(
        self,
        data: &[T],
        widen: impl Fn(T) -> C + Copy + Send + Sync,
        _bulk: BulkWiden<T, C>,
        dtype: DType,
    ) -> (Details, u64) {
        let rule = TypedRule::<C>::new(self.rule);
        let stored = Stored::new(self.layout);
        let (inner_len, inner_stride) = stored.inner();
        let rows = stored.rows();
        let blocks = Blocks::new(rows, inner_len);
        // One interval, nothing ignored, contiguous rows: the common case, counted by a
        // branch-free loop; only a block with a violation is read again for where it is.
        let plain = rule.ignore.is_empty() && !rule.integral;
        let single = match (&rule.intervals, plain, inner_stride) {
            (Some(intervals), true, 1) if intervals.len() == 1 => Some(intervals[0]),
            _ => None,
        };
        let block = |b: usize| {
            let mut tally = Tally::new();
            for (row, from, to) in blocks.segments(b) {
                let start = stored.row_start(row);
                match single {
                    Some((lo, hi)) => {
                        let slice = &data[start + from..start + to];
                        tally.merge(Tally::of_slice(slice, widen, lo, hi, row, from));
                    }
                    None => {
                        for position in from..to {
                            let v = widen(data[start + position * inner_stride]);
                            tally.visit(v, &rule, row, position);
                        }
                        tally.read += (to - from) as u64;
                    }
                }
            }
            tally
        };
        let tallies: Vec<Tally<C>> = if rows * inner_len < PARALLEL_MIN {
            (0..blocks.count).map(block).collect()
        } else {
            (0..blocks.count).into_par_iter().map(block).collect()
        };
        let mut all = Tally::new();
        for tally in tallies {
            all.merge(tally);
        }
        let repeat = stored.repeat;
        let mut details = Details::default();
        details.counts.total = ((rows * inner_len) as u64).saturating_mul(repeat);
        details.counts.violating = all.violating.saturating_mul(repeat);
        details.counts.ignored = all.ignored.saturating_mul(repeat);
        details.counts.nan = all.nan.saturating_mul(repeat);
        if let Some((row, position, v)) = all.first {
            details.first_index = Some(stored.index(row, position));
            details.first_value = Some(v.to_value(dtype));
        }
        details.observed = all
            .range
            .map(|(lo, hi)| (lo.to_value(dtype), hi.to_value(dtype)));
        details.offending = all.offending.iter().map(|v| v.to_value(dtype)).collect();
        (details, all.read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::{Interval, Num};
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
                total: 12
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
                total: 6
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
    fn e8m0_decodes_powers_of_two() {
        assert_eq!(decode_e8m0(127), 1.0);
        assert_eq!(decode_e8m0(128), 2.0);
        assert_eq!(decode_e8m0(0) as f64, 2f64.powi(-127));
        assert_eq!(decode_e8m0(254) as f64, 2f64.powi(127));
        assert!(decode_e8m0(255).is_nan());
    }

    /// The statistics by a plain walk over every element of the view in logical order.
    fn reference(t: &Tensor, rule: &Resolved) -> Details {
        let values = t.flatten_all().unwrap().to_dtype(DType::F64).unwrap();
        let values = values.to_vec1::<f64>().unwrap();
        let typed = TypedRule::<f64>::new(rule);
        let mut details = Details::default();
        details.counts.total = values.len() as u64;
        let mut range: Option<(f64, f64)> = None;
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
        details.observed = range.map(|(lo, hi)| {
            (
                crate::error::Value::Float(lo, DType::F64),
                crate::error::Value::Float(hi, DType::F64),
            )
        });
        details
    }

    fn same_statistics(t: &Tensor, rule: &Resolved) {
        let (details, _) = statistics(t, rule).unwrap();
        let expected = reference(t, rule);
        assert_eq!(details.counts, expected.counts, "{:?}", t.layout());
        assert_eq!(
            details.first_index,
            expected.first_index,
            "{:?}",
            t.layout()
        );
        let as_f64 = |d: &Details| d.observed.map(|(lo, hi)| (lo.to_f64(), hi.to_f64()));
        assert_eq!(as_f64(&details), as_f64(&expected), "{:?}", t.layout());
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
            ignore: vec![crate::rule::Ignore::Value(Num::Int(-2))],
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
    fn a_dense_violation_reads_each_element_once() {
        let n = PARALLEL_MIN * 2 + 3;
        let mut data = vec![1u32; n];
        data[n - 1] = 5;
        data[n / 2] = 4;
        let t = Tensor::from_vec(data, n, &Device::Cpu).unwrap();
        let (details, read) = statistics(&t, &rule(0, 3)).unwrap();
        assert_eq!(read, n as u64);
        assert_eq!(details.counts.violating, 2);
        assert_eq!(details.first_index, Some(vec![n / 2]));
        assert_eq!(
            details.offending,
            vec![crate::error::Value::Int(4), crate::error::Value::Int(5)]
        );
    }
}
