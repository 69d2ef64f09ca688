//! Value statistics under a `where` mask, read in place from the storage of both tensors.
//!
//! The subject and the mask have the same dims but their own layouts (the mask is usually a
//! broadcast view). The unmasked scan's [`Walk`] (`walk.rs`) walks both together in logical
//! order: size-1 dims are dropped, dims that are broadcast in both (stride 0) are counted in
//! `repeat` instead of read again, and neighbours contiguous in both are merged. The rows of the
//! walk are cut into blocks of at most `CHUNK` elements, shared between threads like the
//! unmasked scan's (`Blocks::map`).
//!
//! Within a block, a run of up to [`BUFFER`] mask elements is turned into "checked" bytes on
//! the stack (a contiguous `u8` mask is used as it is), so the counting loops depend on the
//! subject's dtype only, not on the mask's. A float mask is zero at `0.0` and `-0.0` (the sign
//! bit is masked off); NaN is non-zero (checked), like PyTorch's `bool()`.
//!
//! The pass yields the unmasked scan's block statistics over the checked positions (counts, NaN
//! count, observed range, where the offending values lie) and the exempt count: a loop for the
//! extremes and NaN of the checked positions goes first, and only a run it cannot prove inside
//! is tallied in full, while it is in cache. A failure then reads little, as unmasked: from
//! the first block with a violation, up to its first offending position, and on through a few
//! blocks for distinct offending values.

use std::ops::ControlFlow;

use candle_core::{CpuStorage, DType, Layout, Storage, Tensor};

use super::locate::Located;
use super::portable::{LANES, RangeTally, larger, smaller, tally_checked_plain};
use super::tally::{BulkWiden, Fast, Part, part_general};
use super::walk::{Blocks, PARALLEL_MIN, Walk};
use super::{ScanOp, Want, dispatch};
use crate::rule::{Compare, Details, Resolved, TypedRule};
use crate::scan::{Outcome, Request};

/// Elements converted at once into a stack buffer (mask bytes, widened subject values).
const BUFFER: usize = 1024;

/// The verdict on one CPU tensor under a mask: the pass, then the locating pass if it failed.
pub(crate) fn scan(request: &Request<'_>, mask: &Tensor) -> Outcome {
    let want = Want::Verdict {
        needs_usable: request.needs_usable,
    };
    match read(request.tensor, mask, request.rule, want) {
        Ok(Some(Some((details, _)))) => Outcome::Fail(details),
        Ok(Some(None)) => Outcome::Pass,
        Ok(None) => Outcome::Unreadable,
        Err(reason) => Outcome::Failed(candle_core::Error::Msg(reason)),
    }
}

/// The statistics a failed masked scan reports, whatever the pass found, and how many positions
/// the locating pass read (dims broadcast in both are read once); `Ok(None)` if a dtype cannot
/// be read.
#[cfg(test)]
pub(crate) fn statistics(
    tensor: &Tensor,
    mask: &Tensor,
    rule: &Resolved,
) -> Result<Option<(Details, u64)>, String> {
    read(tensor, mask, rule, Want::Statistics).map(Option::flatten)
}

/// What a masked read found to report: the statistics and how many positions the locating
/// pass read; `None` for a pass.
type Found = Option<(Details, u64)>;

/// `Ok(None)` when the subject's or the mask's dtype cannot be read.
fn read(
    tensor: &Tensor,
    mask: &Tensor,
    rule: &Resolved,
    want: Want,
) -> Result<Option<Found>, String> {
    both_on_cpu(tensor, mask, |data, layout, bits, mask_layout| {
        if !readable_mask(bits) {
            return None;
        }
        let joint = Walk::new([layout, mask_layout]);
        dispatch(
            data,
            MaskedScan {
                joint: &joint,
                mask: bits,
                rule,
                want,
            },
        )
    })
}

/// The CPU storages of both tensors, or why they cannot be read together.
fn both_on_cpu<R>(
    tensor: &Tensor,
    mask: &Tensor,
    read: impl FnOnce(&CpuStorage, &Layout, &CpuStorage, &Layout) -> R,
) -> Result<R, String> {
    if mask.dims() != tensor.dims() {
        return Err(format!(
            "the mask's dims {:?} are not the tensor's {:?}",
            mask.dims(),
            tensor.dims()
        ));
    }
    // Two read locks, as candle's own binary ops take (the mask may share the subject's
    // storage).
    let (storage, layout) = tensor.storage_and_layout();
    let (mask_storage, mask_layout) = mask.storage_and_layout();
    match (&*storage, &*mask_storage) {
        (Storage::Cpu(data), Storage::Cpu(bits)) => Ok(read(data, layout, bits, mask_layout)),
        _ => Err("the tensor and its mask are not both on the CPU".to_string()),
    }
}

fn readable_mask(mask: &CpuStorage) -> bool {
    !matches!(
        mask,
        CpuStorage::F6E2M3(_) | CpuStorage::F6E3M2(_) | CpuStorage::F4(_)
    )
}

/// Writes 1 into `out[i]` where mask element `start + i * stride` is non-zero, else 0.
fn fill_checked(mask: &CpuStorage, start: usize, stride: usize, out: &mut [u8]) {
    #[inline(always)]
    fn fill<M: Copy>(
        data: &[M],
        start: usize,
        stride: usize,
        out: &mut [u8],
        on: impl Fn(M) -> bool,
    ) {
        if stride == 1 {
            let end = start + out.len();
            for (o, &m) in out.iter_mut().zip(&data[start..end]) {
                *o = u8::from(on(m));
            }
        } else {
            for (i, o) in out.iter_mut().enumerate() {
                *o = u8::from(on(data[start + i * stride]));
            }
        }
    }
    // Floats: the sign bit masked off, so -0.0 is zero and NaN is not.
    match mask {
        CpuStorage::U8(d) => fill(d, start, stride, out, |m| m != 0),
        CpuStorage::U32(d) => fill(d, start, stride, out, |m| m != 0),
        CpuStorage::I16(d) => fill(d, start, stride, out, |m| m != 0),
        CpuStorage::I32(d) => fill(d, start, stride, out, |m| m != 0),
        CpuStorage::I64(d) => fill(d, start, stride, out, |m| m != 0),
        CpuStorage::F16(d) => fill(d, start, stride, out, |m| m.to_bits() & 0x7FFF != 0),
        CpuStorage::BF16(d) => fill(d, start, stride, out, |m| m.to_bits() & 0x7FFF != 0),
        CpuStorage::F32(d) => fill(d, start, stride, out, |m| m.to_bits() & 0x7FFF_FFFF != 0),
        CpuStorage::F64(d) => fill(d, start, stride, out, |m| {
            m.to_bits() & 0x7FFF_FFFF_FFFF_FFFF != 0
        }),
        CpuStorage::F8E4M3(d) => fill(d, start, stride, out, |m| m.to_bits() & 0x7F != 0),
        // An exponent alone has no zero: every position is checked.
        CpuStorage::F8E8M0(_) => out.fill(1),
        // Refused before any read (`readable_mask`).
        CpuStorage::F6E2M3(_) | CpuStorage::F6E3M2(_) | CpuStorage::F4(_) => out.fill(1),
    }
}

/// One run of a segment, at most [`BUFFER`] long: the subject's elements (a storage slice, or
/// widened into a buffer) and the mask as checked bytes.
enum Run<'a, T, C> {
    Stored(&'a [T]),
    Widened(&'a [C]),
}

/// Stack space for one run: widened subject values and checked bytes.
struct Buffers<C> {
    values: [C; BUFFER],
    checked: [u8; BUFFER],
}

impl<C: Compare> Buffers<C> {
    fn new() -> Self {
        Self {
            values: [C::LOWEST; BUFFER],
            checked: [0; BUFFER],
        }
    }
}

/// The subject's storage with its conversion into the compare type, and the mask's storage.
#[derive(Clone, Copy)]
struct Sources<'a, T, C, W> {
    data: &'a [T],
    widen: W,
    bulk: BulkWiden<T, C>,
    mask: &'a CpuStorage,
}

/// Calls `visit(offset, run, checked)` for the runs of segment `(row, from, to)`, in order,
/// until it breaks.
#[inline(always)]
fn for_each_run<T: Copy, C: Compare, W: Fn(T) -> C + Copy>(
    joint: &Walk<2>,
    sources: Sources<'_, T, C, W>,
    buffers: &mut Buffers<C>,
    (row, from, to): (usize, usize, usize),
    mut visit: impl FnMut(usize, Run<'_, T, C>, &[u8]) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let Sources {
        data,
        widen,
        bulk,
        mask,
    } = sources;
    let (_, [s_stride, m_stride]) = joint.inner();
    let [s_row, m_row] = joint.row_start(row);
    let Buffers { values, checked } = buffers;
    let mut at = from;
    while at < to {
        let n = (to - at).min(BUFFER);
        let m_off = m_row + at * m_stride;
        let checked: &[u8] = match mask {
            CpuStorage::U8(bits) if m_stride == 1 => &bits[m_off..m_off + n],
            _ => {
                fill_checked(mask, m_off, m_stride, &mut checked[..n]);
                &checked[..n]
            }
        };
        let s_off = s_row + at * s_stride;
        let run = match (s_stride, bulk) {
            (1, None) => Run::Stored(&data[s_off..s_off + n]),
            (1, Some(bulk)) => {
                bulk(&data[s_off..s_off + n], &mut values[..n]);
                Run::Widened(&values[..n])
            }
            _ => {
                for (i, v) in values[..n].iter_mut().enumerate() {
                    *v = widen(data[s_off + i * s_stride]);
                }
                Run::Widened(&values[..n])
            }
        };
        visit(at, run, checked)?;
        at += n;
    }
    ControlFlow::Continue(())
}

struct MaskedScan<'a> {
    joint: &'a Walk<2>,
    mask: &'a CpuStorage,
    rule: &'a Resolved,
    want: Want,
}

impl ScanOp for MaskedScan<'_> {
    type Output = Found;

    fn run<T: Copy + Send + Sync, C: Compare>(
        self,
        data: &[T],
        widen: impl Fn(T) -> C + Copy + Send + Sync,
        bulk: BulkWiden<T, C>,
        dtype: DType,
    ) -> Self::Output {
        let rule = TypedRule::<C>::new(self.rule);
        let joint = self.joint;
        let (inner_len, _) = joint.inner();
        let rows = joint.rows();
        let stored = rows * inner_len;
        let repeat = joint.repeat;
        let checks_nothing = rule.intervals.is_none() && rule.ignore.is_empty() && !rule.integral;
        if checks_nothing
            && matches!(
                self.want,
                Want::Verdict {
                    needs_usable: false
                }
            )
        {
            return None;
        }
        let blocks = Blocks::new(rows, inner_len);
        let sources = Sources {
            data,
            widen,
            bulk,
            mask: self.mask,
        };
        // One interval, nothing ignored, not `integral`: the branch-free loops.
        let single = match (&rule.intervals, rule.ignore.is_empty() && !rule.integral) {
            (Some(intervals), true) if intervals.len() == 1 => Some(intervals[0]),
            _ => None,
        };
        let block = |b: usize| {
            let mut part = Part::empty();
            let mut buffers = Buffers::new();
            for segment in blocks.segments(b) {
                let _ = for_each_run(joint, sources, &mut buffers, segment, |_, run, checked| {
                    part.merge(match (single, run) {
                        (Some((lo, hi)), Run::Stored(run)) => {
                            part_checked(run, checked, widen, lo, hi)
                        }
                        (Some((lo, hi)), Run::Widened(run)) => {
                            part_checked(run, checked, |v| v, lo, hi)
                        }
                        (None, Run::Stored(run)) => {
                            part_general_checked(run, checked, widen, &rule)
                        }
                        (None, Run::Widened(run)) => {
                            part_general_checked(run, checked, |v| v, &rule)
                        }
                    });
                    ControlFlow::Continue(())
                });
            }
            part
        };
        let fast = Fast::collect(blocks, stored >= PARALLEL_MIN, block);
        let all = fast.all;
        let mut details = Details::default();
        let counts = &mut details.counts;
        counts.total = (stored as u64).saturating_mul(repeat);
        counts.violating = all.violating.saturating_mul(repeat);
        counts.ignored = all.ignored.saturating_mul(repeat);
        counts.nan = all.nan.saturating_mul(repeat);
        counts.exempt = all.exempt.saturating_mul(repeat);
        let none_usable = counts.ignored.saturating_add(counts.exempt) >= counts.total;
        let fails = match self.want {
            #[cfg(test)]
            Want::Summary => false,
            Want::Verdict { needs_usable } => counts.violating > 0 || (needs_usable && none_usable),
            #[cfg(test)]
            Want::Statistics => true,
        };
        if !fails {
            return None;
        }
        let located = locate(joint, sources, &rule, blocks, &fast);
        if let Some((row, position, v)) = located.first {
            details.first_index = Some(joint.index(row, position));
            details.first_value = Some(v.to_value(dtype));
        }
        details.observed = all
            .range
            .map(|(lo, hi)| (lo.to_value(dtype), hi.to_value(dtype)));
        // A list that may miss some values is not shown as if it were all of them.
        details.offending = located
            .offending
            .iter()
            .map(|v| v.to_value(dtype))
            .collect();
        details.offending_complete = located.complete;
        Some((details, located.read))
    }
}

/// The unmasked scan's locating pass over the checked positions: from the first block with a
/// violation, stopping at the first offending position once the list is complete.
fn locate<T: Copy, C: Compare, W: Fn(T) -> C + Copy>(
    joint: &Walk<2>,
    sources: Sources<'_, T, C, W>,
    rule: &TypedRule<C>,
    blocks: Blocks,
    fast: &Fast<C>,
) -> Located<C> {
    let mut located = Located::new();
    if fast.first_block.is_none() {
        // Nothing offends: the empty list is complete.
        located.complete = true;
        return located;
    }
    let mut buffers = Buffers::new();
    let widen = sources.widen;
    for b in fast.candidates(blocks) {
        for segment in blocks.segments(b) {
            let row = segment.0;
            let stop = for_each_run(joint, sources, &mut buffers, segment, |at, run, checked| {
                let on = checked.iter().map(|&m| m != 0);
                match run {
                    Run::Stored(run) => {
                        let values = run.iter().map(|&x| widen(x)).zip(on);
                        locate_run(&mut located, values, (row, at), fast, rule)
                    }
                    Run::Widened(run) => {
                        let values = run.iter().copied().zip(on);
                        locate_run(&mut located, values, (row, at), fast, rule)
                    }
                }
            });
            if stop.is_break() {
                return located;
            }
        }
    }
    located
}

/// Reads the positions of one run (each value and whether it is checked) from position `at`
/// of row `row`; breaks at the offending position that completes the list.
fn locate_run<C: Compare>(
    located: &mut Located<C>,
    values: impl Iterator<Item = (C, bool)>,
    (row, at): (usize, usize),
    fast: &Fast<C>,
    rule: &TypedRule<C>,
) -> ControlFlow<()> {
    for (i, (v, on)) in values.enumerate() {
        located.read += 1;
        if !on || rule.is_ignored(v) || rule.accepts(v) {
            continue;
        }
        if located.offends(row, at + i, v, fast, rule) {
            return ControlFlow::Break(());
        }
    }
    ControlFlow::Continue(())
}

/// The part of one run under any rule, over its checked positions.
fn part_general_checked<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C,
    rule: &TypedRule<C>,
) -> Part<C> {
    let on = data.iter().zip(checked).filter(|&(_, &m)| m != 0);
    let mut part = part_general(on.map(|(&x, _)| x), widen, rule);
    part.exempt = checked.iter().filter(|&&m| m == 0).count() as u64;
    part
}

/// The part of one run against the single interval `[lo, hi]`, over its checked positions.
/// Optimised, the pass loop (extremes and NaN of the checked positions, and the exempt count)
/// goes first and a run it cannot prove inside is tallied in full; unoptimised, one plain loop.
#[inline(always)]
fn part_checked<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> Part<C> {
    let (tally, exempt) = if cfg!(debug_assertions) {
        inside_checked_plain(data, checked, widen, lo, hi)
            .unwrap_or_else(|| tally_checked_plain(data, checked, widen, lo, hi))
    } else {
        inside_checked(data, checked, widen, lo, hi)
            .unwrap_or_else(|| tally_checked(data, checked, widen, lo, hi))
    };
    Part {
        exempt,
        ..Part::of_tally(tally, lo, hi)
    }
}

/// `(the range tally of the checked positions, the exempt count)` of one run if every checked
/// position is inside `[lo, hi]`, else `None`; with the best vector width the CPU has.
#[inline(always)]
fn inside_checked<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> Option<(RangeTally<C>, u64)> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512bw") {
        if super::avx512::handles_checked::<C>() {
            // SAFETY: the CPU has AVX-512F and BW, checked just above.
            return unsafe { super::avx512::inside_checked(data, checked, widen, lo, hi) };
        }
        // SAFETY: the CPU has AVX-512F and BW, checked just above.
        return unsafe { inside_checked_avx512(data, checked, widen, lo, hi) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { inside_checked_avx2(data, checked, widen, lo, hi) };
    }
    inside_checked_portable(data, checked, widen, lo, hi)
}

/// The portable pass loop compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn inside_checked_avx2<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> Option<(RangeTally<C>, u64)> {
    inside_checked_portable(data, checked, widen, lo, hi)
}

/// The portable pass loop compiled for AVX-512 (byte compares on the mask).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn inside_checked_avx512<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> Option<(RangeTally<C>, u64)> {
    inside_checked_portable(data, checked, widen, lo, hi)
}

/// The pass loop over independent lanes: each keeps the extremes and a NaN flag of its checked
/// positions and counts its exempt ones, so LLVM vectorises it (u32 counters: a run is at most
/// [`BUFFER`] long).
#[inline(always)]
pub(super) fn inside_checked_portable<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> Option<(RangeTally<C>, u64)> {
    let n = data.len().min(checked.len());
    let (data, checked) = (&data[..n], &checked[..n]);
    let mut min = [C::HIGHEST; LANES];
    let mut max = [C::LOWEST; LANES];
    let mut nan = [0u32; LANES];
    let mut exempt = [0u32; LANES];
    let (groups, tail) = data.as_chunks::<LANES>();
    let (bit_groups, bit_tail) = checked.as_chunks::<LANES>();
    let mut lane = |i: usize, x: T, m: u8| {
        let v = widen(x);
        let on = m != 0;
        nan[i] |= u32::from(on & v.is_nan());
        exempt[i] += u32::from(!on);
        min[i] = if on & (v < min[i]) { v } else { min[i] };
        max[i] = if on & (v > max[i]) { v } else { max[i] };
    };
    for (group, bits) in groups.iter().zip(bit_groups) {
        for i in 0..LANES {
            lane(i, group[i], bits[i]);
        }
    }
    for (&x, &m) in tail.iter().zip(bit_tail) {
        lane(0, x, m);
    }
    let (mut low, mut high, mut any_nan, mut skipped) = (C::HIGHEST, C::LOWEST, 0u32, 0u64);
    for i in 0..LANES {
        low = smaller(low, min[i]);
        high = larger(high, max[i]);
        any_nan |= nan[i];
        skipped += u64::from(exempt[i]);
    }
    // No checked position passes too: `HIGHEST >= lo` and `LOWEST <= hi`.
    if any_nan != 0 || !(low >= lo && high <= hi) {
        return None;
    }
    let tally = RangeTally {
        len: n as u64 - skipped,
        min: low,
        max: high,
        ..RangeTally::empty()
    };
    Some((tally, skipped))
}

/// `(the range tally of the checked positions, the exempt count)` of one run, in full, with
/// the best vector width the CPU has.
#[inline(always)]
fn tally_checked<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> (RangeTally<C>, u64) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512bw") {
        // SAFETY: the CPU has AVX-512F and BW, checked just above.
        return unsafe { tally_checked_avx512(data, checked, widen, lo, hi) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { tally_checked_avx2(data, checked, widen, lo, hi) };
    }
    tally_checked_portable(data, checked, widen, lo, hi)
}

/// The full tally loop compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn tally_checked_avx2<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> (RangeTally<C>, u64) {
    tally_checked_portable(data, checked, widen, lo, hi)
}

/// The full tally loop compiled for AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn tally_checked_avx512<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> (RangeTally<C>, u64) {
    tally_checked_portable(data, checked, widen, lo, hi)
}

/// The per-lane state of [`tally_checked_portable`].
struct CheckedLanes<C> {
    outside: [u32; LANES],
    nan: [u32; LANES],
    exempt: [u32; LANES],
    min: [C; LANES],
    max: [C; LANES],
    below_max: [C; LANES],
    above_min: [C; LANES],
}

/// The full range tally of the checked positions of one run over independent lanes, branch
/// free (an exempt position changes nothing but its lane's exempt count); for a run the pass
/// loop could not prove inside.
#[inline(always)]
pub(super) fn tally_checked_portable<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> (RangeTally<C>, u64) {
    let n = data.len().min(checked.len());
    let (data, checked) = (&data[..n], &checked[..n]);
    let mut l = CheckedLanes {
        outside: [0; LANES],
        nan: [0; LANES],
        exempt: [0; LANES],
        min: [C::HIGHEST; LANES],
        max: [C::LOWEST; LANES],
        below_max: [C::LOWEST; LANES],
        above_min: [C::HIGHEST; LANES],
    };
    let mut lane = |i: usize, x: T, m: u8| {
        let v = widen(x);
        let on = m != 0;
        l.outside[i] += u32::from(on & !((v >= lo) & (v <= hi)));
        l.nan[i] += u32::from(on & v.is_nan());
        l.exempt[i] += u32::from(!on);
        l.min[i] = if on & (v < l.min[i]) { v } else { l.min[i] };
        l.max[i] = if on & (v > l.max[i]) { v } else { l.max[i] };
        let below = on & (v < lo) & (v > l.below_max[i]);
        l.below_max[i] = if below { v } else { l.below_max[i] };
        let above = on & (v > hi) & (v < l.above_min[i]);
        l.above_min[i] = if above { v } else { l.above_min[i] };
    };
    let (groups, tail) = data.as_chunks::<LANES>();
    let (bit_groups, bit_tail) = checked.as_chunks::<LANES>();
    for (group, bits) in groups.iter().zip(bit_groups) {
        for i in 0..LANES {
            lane(i, group[i], bits[i]);
        }
    }
    for (&x, &m) in tail.iter().zip(bit_tail) {
        lane(0, x, m);
    }
    let mut tally = RangeTally::empty();
    let mut exempt = 0u64;
    for i in 0..LANES {
        tally.outside += u64::from(l.outside[i]);
        tally.nan += u64::from(l.nan[i]);
        exempt += u64::from(l.exempt[i]);
        tally.min = smaller(tally.min, l.min[i]);
        tally.max = larger(tally.max, l.max[i]);
        tally.below_max = larger(tally.below_max, l.below_max[i]);
        tally.above_min = smaller(tally.above_min, l.above_min[i]);
    }
    tally.len = n as u64 - exempt;
    (tally, exempt)
}

/// The pass loop of one run written for unoptimised builds, where every call is made: the
/// lane loops cost several times this one, and so do a range's or an iterator's `next` (a
/// slice index is built in); one `partial_cmp` finds a NaN and a new minimum at once.
fn inside_checked_plain<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C,
    lo: C,
    hi: C,
) -> Option<(RangeTally<C>, u64)> {
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
        match v.partial_cmp(&tally.min) {
            None => return None,
            Some(std::cmp::Ordering::Less) => tally.min = v,
            Some(_) => {}
        }
        if v > tally.max {
            tally.max = v;
        }
    }
    // No checked position passes too: `HIGHEST >= lo` and `LOWEST <= hi`.
    if !(tally.min >= lo && tally.max <= hi) {
        return None;
    }
    tally.len = n as u64 - exempt;
    Some((tally, exempt))
}

#[cfg(test)]
mod tests {
    use super::super::locate::LOCATE_BLOCKS;
    use super::super::walk::CHUNK;
    use super::*;
    use crate::error::{OFFENDING_SHOWN, Value};
    use crate::rule::{Ignore, Interval, Num};
    use candle_core::Device;
    use proptest::prelude::*;

    fn below_three() -> Resolved {
        Resolved {
            ranges: Some(vec![Interval {
                lo: Some(Num::Int(0)),
                hi: Some(Num::Int(3)),
                inclusive: false,
            }]),
            ignore: vec![],
            finite: false,
            allow_all: false,
            integral: false,
        }
    }

    #[test]
    fn a_view_broadcast_in_both_is_read_once() {
        let cpu = &Device::Cpu;
        let five = Tensor::new(5u32, cpu)
            .unwrap()
            .broadcast_as((1000, 1000))
            .unwrap();
        let on = Tensor::new(1.0f32, cpu)
            .unwrap()
            .broadcast_as((1000, 1000))
            .unwrap();
        let (details, read) = statistics(&five, &on, &below_three()).unwrap().unwrap();
        assert_eq!(read, 1);
        assert_eq!(details.counts.violating, 1_000_000);
        assert_eq!(details.counts.total, 1_000_000);
        assert_eq!(details.first_index, Some(vec![0, 0]));
        // A mask row over a broadcast subject: the row is read, the subject element with it.
        let row = Tensor::new(&[0u8, 0, 1, 0], cpu)
            .unwrap()
            .broadcast_as((250, 4))
            .unwrap();
        let five = Tensor::new(5u32, cpu)
            .unwrap()
            .broadcast_as((250, 4))
            .unwrap();
        let (details, read) = statistics(&five, &row, &below_three()).unwrap().unwrap();
        // Up to the first offending position, the only one stored.
        assert_eq!(read, 3);
        assert_eq!(details.counts.violating, 250);
        assert_eq!(details.counts.exempt, 750);
        assert_eq!(details.first_index, Some(vec![0, 2]));
        assert_eq!(details.offending, vec![crate::error::Value::Int(5)]);
    }

    #[test]
    fn a_mask_of_other_dims_is_an_error_not_a_panic() {
        let cpu = &Device::Cpu;
        let t = Tensor::zeros((4, 6), DType::F32, cpu).unwrap();
        let mask = Tensor::ones((4, 5), DType::U8, cpu).unwrap();
        let request = Request {
            tensor: &t,
            mask: Some(&mask),
            rule: &below_three(),
            needs_usable: false,
        };
        let Outcome::Failed(error) = scan(&request, &mask) else {
            panic!("a mask of other dims must fail the scan");
        };
        assert!(error.to_string().contains("[4, 5]"), "{error}");
    }

    fn unit() -> Resolved {
        Resolved {
            ranges: Some(vec![Interval {
                lo: Some(Num::Int(0)),
                hi: Some(Num::Int(1)),
                inclusive: true,
            }]),
            ..below_three()
        }
    }

    /// The statistics by a plain walk over the view in logical order, with every distinct
    /// offending value (not only five).
    fn reference(t: &Tensor, mask: &Tensor, rule: &Resolved) -> (Details, Vec<f64>) {
        let as_f64 = |t: &Tensor| -> Vec<f64> {
            let flat = t.flatten_all().unwrap();
            // candle's f8e4m3 -> f64 conversion recurses forever; f32 holds every f8e4m3.
            let flat = match t.dtype() {
                DType::F8E4M3 => flat.to_dtype(DType::F32).unwrap(),
                _ => flat,
            };
            flat.to_dtype(DType::F64).unwrap().to_vec1::<f64>().unwrap()
        };
        let (values, checked) = (as_f64(t), as_f64(mask));
        let typed = TypedRule::<f64>::new(rule);
        let mut details = Details::default();
        details.counts.total = values.len() as u64;
        let mut range: Option<(f64, f64)> = None;
        let mut offending: Vec<f64> = Vec::new();
        for (position, (&v, &m)) in values.iter().zip(&checked).enumerate() {
            // NaN is non-zero: checked.
            if m == 0.0 {
                details.counts.exempt += 1;
                continue;
            }
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

    /// The masked scan's statistics equal the reference's: counts, first index, observed range
    /// (-0.0 equal to 0.0), and its first five offending values, or a start of them when the
    /// list is not proven complete; and the verdict says the same.
    fn same_statistics(t: &Tensor, mask: &Tensor, rule: &Resolved) {
        let what = format!(
            "{:?} {:?} / {:?} {:?}",
            t.dtype(),
            t.layout(),
            mask.dtype(),
            mask.layout()
        );
        let (expected, every_offending) = reference(t, mask, rule);
        let (details, _) = statistics(t, mask, rule).unwrap().unwrap();
        assert_eq!(details.counts, expected.counts, "{what}");
        assert_eq!(details.first_index, expected.first_index, "{what}");
        let range = |d: &Details| d.observed.map(|(lo, hi)| (lo.to_f64(), hi.to_f64()));
        assert_eq!(range(&details), range(&expected), "{what}");
        let listed: Vec<f64> = details.offending.iter().map(|v| v.to_f64()).collect();
        let shown = every_offending.len().min(OFFENDING_SHOWN);
        let prefix = if details.offending_complete {
            shown
        } else {
            listed.len().min(shown)
        };
        let same = listed.len() == prefix
            && listed
                .iter()
                .zip(&every_offending)
                .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()));
        assert!(same, "{what}: {listed:?} vs {every_offending:?}");
        let request = Request {
            tensor: t,
            mask: Some(mask),
            rule,
            needs_usable: false,
        };
        let fails = expected.counts.violating > 0;
        assert_eq!(
            matches!(scan(&request, mask), Outcome::Fail(_)),
            fails,
            "{what}"
        );
    }

    /// Values with NaN, ±inf, -0.0 and values either side of `0..=1`, as `dtype` (NaN and inf
    /// only where the dtype has them); mostly inside, so that most runs pass.
    fn mixed(n: usize, dtype: DType, bad_every: usize) -> Tensor {
        let float = dtype.is_float();
        let data: Vec<f64> = (0..n)
            .map(|i| match ((i * 7919) % bad_every, i % 4) {
                (0, 0) if float => f64::NAN,
                (0, 1) if float => f64::INFINITY,
                (0, 2) if float => -0.0,
                (0, _) => 3.0,
                (1, _) if dtype != DType::U8 && dtype != DType::U32 => -2.0,
                (_, k) => (k % 2) as f64,
            })
            .collect();
        Tensor::from_vec(data, n, &Device::Cpu)
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
    }

    /// A mask of `n` positions as `dtype`: zero about one in five, with -0.0 (zero) and NaN
    /// (non-zero) where the dtype has them.
    fn mask_of(n: usize, dtype: DType) -> Tensor {
        let data: Vec<f64> = (0..n)
            .map(|i| match (i * 31) % 11 {
                0 | 5 => 0.0,
                3 if dtype.is_float() => -0.0,
                7 if dtype.is_float() => f64::NAN,
                k => k as f64,
            })
            .collect();
        Tensor::from_vec(data, n, &Device::Cpu)
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
    }

    #[test]
    fn statistics_match_a_walk_in_logical_order_over_many_blocks() {
        let with_ignore = Resolved {
            ignore: vec![Ignore::Value(Num::Int(3))],
            ..unit()
        };
        let dtypes = [
            DType::F32,
            DType::F64,
            DType::BF16,
            DType::F16,
            DType::F8E4M3,
            DType::U32,
            DType::I64,
            DType::U8,
        ];
        for dtype in dtypes {
            // One block, several on one thread, several split across threads; one bad element
            // in 3 and in about 10^5.
            for (n, bad_every) in [
                (1000, 3),
                (3 * CHUNK + 77, 100_003),
                (2 * PARALLEL_MIN + 13, 3),
            ] {
                let t = mixed(n, dtype, bad_every);
                let mask_dtypes: &[DType] = if n < CHUNK {
                    &[DType::U8, DType::F32, DType::I64]
                } else {
                    &[DType::U8, DType::F32]
                };
                for &mask_dtype in mask_dtypes {
                    let mask = mask_of(n, mask_dtype);
                    same_statistics(&t, &mask, &unit());
                    same_statistics(&t, &mask, &with_ignore);
                }
            }
            // Views: a row mask broadcast over the columns, a transposed subject, a narrowed
            // one; every position checked, and every position exempt.
            let (rows, cols) = (300, 1001);
            let t = mixed(rows * cols, dtype, 997)
                .reshape((rows, cols))
                .unwrap();
            let row_mask = mask_of(rows, DType::U8)
                .reshape((rows, 1))
                .unwrap()
                .broadcast_as((rows, cols))
                .unwrap();
            same_statistics(&t, &row_mask, &unit());
            let t_t = t.t().unwrap();
            let mask_t = mask_of(rows * cols, DType::F16)
                .reshape((cols, rows))
                .unwrap();
            same_statistics(&t_t, &mask_t, &unit());
            let narrow = t.narrow(1, 3, 900).unwrap();
            let ones = Tensor::ones((rows, 900), DType::U8, &Device::Cpu).unwrap();
            same_statistics(&narrow, &ones, &unit());
            same_statistics(&narrow, &ones.zeros_like().unwrap(), &unit());
        }
    }

    #[test]
    fn a_masked_violation_is_located_from_its_block_and_stops_there() {
        let n = 16 * CHUNK + 5;
        let dense = |data: Vec<f32>| Tensor::from_vec(data, n, &Device::Cpu).unwrap();
        let on = Tensor::ones(n, DType::U8, &Device::Cpu).unwrap();
        let stats =
            |t: &Tensor, mask: &Tensor| statistics(t, mask, &below_three()).unwrap().unwrap();
        // One bad element: read from the start of its block up to it, nothing else.
        let at = 11 * CHUNK + 1234;
        let mut data = vec![1.0f32; n];
        data[at] = 7.0;
        let one_bad = dense(data);
        let (details, read) = stats(&one_bad, &on);
        assert_eq!(read, 1235);
        assert_eq!(details.first_index, Some(vec![at]));
        assert_eq!(details.offending, [Value::Float(7.0, DType::F32)]);
        assert!(details.offending_complete);
        // Exempt there, it passes.
        let mut bits = vec![1u8; n];
        bits[at] = 0;
        let off_there = Tensor::from_vec(bits, n, &Device::Cpu).unwrap();
        let request = Request {
            tensor: &one_bad,
            mask: Some(&off_there),
            rule: &below_three(),
            needs_usable: false,
        };
        assert!(matches!(scan(&request, &off_there), Outcome::Pass));
        // Every element bad, one value: the pass's range proves the list at once.
        let (details, read) = stats(&dense(vec![5.0; n]), &on);
        assert_eq!(read, 1);
        assert_eq!(details.counts.violating, n as u64);
        // Two bad values at the two ends: the first's block, then only the last block.
        let mut data = vec![1.0f32; n];
        data[10] = 4.0;
        data[n - 1] = 5.0;
        let (details, read) = stats(&dense(data), &on);
        assert_eq!(read, (CHUNK + 5) as u64);
        assert_eq!(details.first_index, Some(vec![10]));
        let listed = [Value::Float(4.0, DType::F32), Value::Float(5.0, DType::F32)];
        assert_eq!(details.offending, listed);
        // 5 and 7 everywhere and one 6 at the end: not proven after a few blocks, so the list
        // is marked incomplete; the counts and range stay exact.
        let mut data: Vec<f32> = (0..n).map(|i| [5.0, 7.0][i % 2]).collect();
        data[n - 1] = 6.0;
        let (details, read) = stats(&dense(data), &on);
        assert_eq!(read, (LOCATE_BLOCKS * CHUNK) as u64);
        assert!(!details.offending_complete);
        assert_eq!(details.counts.violating, n as u64);
        let observed = details.observed.map(|(lo, hi)| (lo.to_f64(), hi.to_f64()));
        assert_eq!(observed, Some((5.0, 7.0)));
    }

    /// f32 bit patterns weighted towards NaN, ±inf, ±0.0 and the bounds, and mask bytes of 0,
    /// 1 and others.
    fn run() -> impl Strategy<Value = Vec<(u32, u8)>> {
        let bits = prop_oneof![
            Just(f32::NAN.to_bits()),
            Just(f32::INFINITY.to_bits()),
            Just(f32::NEG_INFINITY.to_bits()),
            Just((-0.0f32).to_bits()),
            Just(1.0f32.to_bits()),
            (0.0f32..=1.0).prop_map(f32::to_bits),
            (0.0f32..=1.0).prop_map(f32::to_bits),
            (0.0f32..=1.0).prop_map(f32::to_bits),
            (-2.0f32..2.0).prop_map(f32::to_bits),
            any::<u32>(),
        ];
        let byte = prop_oneof![Just(0u8), Just(1u8), Just(1u8), Just(1u8), any::<u8>()];
        proptest::collection::vec((bits, byte), 0..300)
    }

    /// The full tally of the checked positions by a plain loop, one element at a time.
    fn plain<C: Compare>(data: &[C], checked: &[u8], lo: C, hi: C) -> (RangeTally<C>, u64) {
        tally_checked_plain(data, checked, |v| v, lo, hi)
    }

    fn kernels_agree<C: Compare + std::fmt::Debug>(
        data: &[C],
        checked: &[u8],
        lo: C,
        hi: C,
    ) -> Result<(), TestCaseError> {
        let expected = plain(data, checked, lo, hi);
        prop_assert_eq!(
            tally_checked_portable(data, checked, |v| v, lo, hi),
            expected
        );
        prop_assert_eq!(tally_checked(data, checked, |v| v, lo, hi), expected);
        // The pass loops: the full tally when nothing checked is outside, else nothing (the
        // AVX-512 one may leave ±inf to the full tally).
        let inside = (expected.0.outside == 0).then_some(expected);
        prop_assert_eq!(
            inside_checked_portable(data, checked, |v| v, lo, hi),
            inside
        );
        prop_assert_eq!(inside_checked_plain(data, checked, |v| v, lo, hi), inside);
        let taken = inside_checked(data, checked, |v| v, lo, hi);
        prop_assert!(
            taken.is_none_or(|t| Some(t) == inside),
            "{taken:?} vs {inside:?}"
        );
        let infinite = C::FRACTIONAL
            && data
                .iter()
                .zip(checked)
                .any(|(&v, &m)| m != 0 && (v == C::HIGHEST || v == C::LOWEST));
        prop_assert!(infinite || inside.is_none() || taken.is_some());
        // The part the pass takes, optimised or not.
        let part = part_checked(data, checked, |v| v, lo, hi);
        let whole = Part {
            exempt: expected.1,
            ..Part::of_tally(expected.0, lo, hi)
        };
        prop_assert_eq!(
            (part.violating, part.nan, part.exempt),
            (whole.violating, whole.nan, whole.exempt)
        );
        prop_assert_eq!(part.range.is_some(), whole.range.is_some());
        prop_assert!(
            part.range
                .zip(whole.range)
                .is_none_or(|(a, b)| a.0 == b.0 && a.1 == b.1)
        );
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn masked_kernels_match_a_plain_loop(run in run(), (lo, hi) in prop_oneof![
            Just((0.0f32, 1.0f32)),
            Just((-0.0, 0.0)),
            Just((f32::NEG_INFINITY, f32::INFINITY)),
            (-2.0f32..2.0, -2.0f32..2.0),
        ]) {
            let data: Vec<f32> = run.iter().map(|&(b, _)| f32::from_bits(b)).collect();
            let checked: Vec<u8> = run.iter().map(|&(_, m)| m).collect();
            kernels_agree(&data, &checked, lo, hi)?;
            let wide: Vec<f64> = data.iter().map(|&v| f64::from(v)).collect();
            kernels_agree(&wide, &checked, f64::from(lo), f64::from(hi))?;
            let ints: Vec<i64> = run.iter().map(|&(b, _)| i64::from(b as i16)).collect();
            kernels_agree(&ints, &checked, -300, 300)?;
        }
    }
}
