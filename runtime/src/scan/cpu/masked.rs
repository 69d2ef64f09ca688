//! Value statistics under a `where` mask, read in place from the storage of both tensors.
//!
//! The subject and the mask have the same dims but their own layouts (the mask is usually a
//! broadcast view). [`Joint`] walks both together in logical order: size-1 dims are dropped,
//! dims that are broadcast in both (stride 0) are counted in `repeat` instead of read again,
//! and neighbours contiguous in both are merged. The rows of the walk are cut into blocks of at
//! most `CHUNK` elements, shared between threads like the unmasked scan's (`Blocks::map`).
//!
//! Within a block, a run of up to [`BUFFER`] mask elements is turned into "checked" bytes on
//! the stack (a contiguous `u8` mask is used as it is), so the counting loops depend on the
//! subject's dtype only, not on the mask's. A float mask is zero at `0.0` and `-0.0` (the sign
//! bit is masked off); NaN is non-zero (checked), like PyTorch's `bool()`.
//!
//! The pass reads each stored element of both tensors once; only when it finds a violation (or
//! no usable checked position where one is needed) does [`statistics`] read them again for the
//! counts, the observed range, the first offending element in logical order and a few
//! distinct offending values.

use candle_core::{CpuStorage, DType, Layout, Storage, Tensor};

use super::{Blocks, BulkWiden, PARALLEL_MIN, ScanOp, dispatch, view_index};
use crate::rule::{Compare, Details, Resolved, TypedRule};
use crate::scan::{Outcome, Request};

/// Elements converted at once into a stack buffer (mask bytes, widened subject values).
const BUFFER: usize = 1024;

/// The verdict on one CPU tensor under a mask: the pass, then the statistics if it failed.
pub(crate) fn scan(request: &Request<'_>, mask: &Tensor) -> Outcome {
    match verdict(request, mask) {
        Ok(Some(outcome)) => outcome,
        Ok(None) => Outcome::Unreadable,
        Err(reason) => Outcome::Failed(candle_core::Error::Msg(reason)),
    }
}

/// `Ok(None)` when the subject's or the mask's dtype cannot be read.
fn verdict(request: &Request<'_>, mask: &Tensor) -> Result<Option<Outcome>, String> {
    let summary = match pass(request.tensor, mask, request.rule, request.needs_usable)? {
        Some(summary) => summary,
        None => return Ok(None),
    };
    let none_usable = summary.ignored.saturating_add(summary.exempt) >= summary.total;
    if summary.violating == 0 && !(request.needs_usable && none_usable) {
        return Ok(Some(Outcome::Pass));
    }
    Ok(statistics(request.tensor, mask, request.rule)?.map(|(details, _)| Outcome::Fail(details)))
}

/// What the masked pass found, over every position of the view.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct MaskedSummary {
    /// Checked positions that break the rule.
    pub violating: u64,
    /// Checked positions equal to an ignored value.
    pub ignored: u64,
    /// Positions the mask exempts.
    pub exempt: u64,
    pub total: u64,
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

/// The fast pass: counts only. `Ok(None)` if a dtype cannot be read.
pub(crate) fn pass(
    tensor: &Tensor,
    mask: &Tensor,
    rule: &Resolved,
    needs_usable: bool,
) -> Result<Option<MaskedSummary>, String> {
    both_on_cpu(tensor, mask, |data, layout, bits, mask_layout| {
        if !readable_mask(bits) {
            return None;
        }
        let joint = Joint::new(layout, mask_layout);
        dispatch(
            data,
            Pass {
                joint: &joint,
                mask: bits,
                rule,
                needs_usable,
            },
        )
    })
}

/// The statistics of a failed masked scan, and how many positions it read (dims broadcast in
/// both are read once); `Ok(None)` if a dtype cannot be read.
pub(crate) fn statistics(
    tensor: &Tensor,
    mask: &Tensor,
    rule: &Resolved,
) -> Result<Option<(Details, u64)>, String> {
    both_on_cpu(tensor, mask, |data, layout, bits, mask_layout| {
        if !readable_mask(bits) {
            return None;
        }
        let joint = Joint::new(layout, mask_layout);
        dispatch(
            data,
            Statistics {
                joint: &joint,
                mask: bits,
                rule,
            },
        )
    })
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

/// One dim of a [`Joint`] walk: its size, its stride in each tensor, and the axes of the view
/// it stands for, with their sizes.
struct JointDim {
    size: usize,
    subject: usize,
    mask: usize,
    axes: Vec<(usize, usize)>,
}

/// The subject's and the mask's layouts as one walk in logical order.
struct Joint {
    subject_start: usize,
    mask_start: usize,
    dims: Vec<JointDim>,
    /// How many times each walked position stands in the view (dims broadcast in both).
    repeat: u64,
    rank: usize,
    empty: bool,
}

impl Joint {
    fn new(subject: &Layout, mask: &Layout) -> Self {
        let mut repeat = 1u64;
        let mut empty = false;
        let mut dims: Vec<JointDim> = Vec::new();
        let strides = subject.stride().iter().zip(mask.stride());
        for (axis, (&size, (&s, &m))) in subject.dims().iter().zip(strides).enumerate() {
            if size == 0 {
                empty = true;
            }
            if size == 1 {
                continue;
            }
            if s == 0 && m == 0 {
                repeat = repeat.saturating_mul(size as u64);
                continue;
            }
            match dims.last_mut() {
                Some(last) if last.subject == size * s && last.mask == size * m => {
                    last.size *= size;
                    last.subject = s;
                    last.mask = m;
                    last.axes.push((axis, size));
                }
                _ => dims.push(JointDim {
                    size,
                    subject: s,
                    mask: m,
                    axes: vec![(axis, size)],
                }),
            }
        }
        Self {
            subject_start: subject.start_offset(),
            mask_start: mask.start_offset(),
            dims,
            repeat,
            rank: subject.dims().len(),
            empty,
        }
    }

    /// The length of the innermost dim and its stride in the subject and in the mask.
    fn inner(&self) -> (usize, usize, usize) {
        self.dims
            .last()
            .map_or((1, 1, 1), |d| (d.size, d.subject, d.mask))
    }

    /// Runs of the innermost dim.
    fn rows(&self) -> usize {
        if self.empty {
            return 0;
        }
        let outer = self.dims.len().saturating_sub(1);
        self.dims[..outer].iter().map(|d| d.size).product()
    }

    /// Where row `row` starts in the subject's and in the mask's storage.
    fn row_start(&self, row: usize) -> (usize, usize) {
        let outer = self.dims.len().saturating_sub(1);
        let mut rest = row;
        let (mut s, mut m) = (self.subject_start, self.mask_start);
        for dim in self.dims[..outer].iter().rev() {
            let at = rest % dim.size;
            s += at * dim.subject;
            m += at * dim.mask;
            rest /= dim.size;
        }
        (s, m)
    }

    /// The index in the view of position `position` of row `row` (axes broadcast in both at
    /// 0: the first time the view shows it).
    fn index(&self, row: usize, position: usize) -> Vec<usize> {
        view_index(self.rank, &self.dims, row, position, |d| (d.size, &d.axes))
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

/// Calls `visit(offset, run, checked)` for the runs of segment `(row, from, to)`, in order.
#[inline(always)]
fn for_each_run<T: Copy, C: Compare, W: Fn(T) -> C + Copy>(
    joint: &Joint,
    sources: Sources<'_, T, C, W>,
    buffers: &mut Buffers<C>,
    (row, from, to): (usize, usize, usize),
    mut visit: impl FnMut(usize, Run<'_, T, C>, &[u8]),
) {
    let Sources {
        data,
        widen,
        bulk,
        mask,
    } = sources;
    let (_, s_stride, m_stride) = joint.inner();
    let (s_row, m_row) = joint.row_start(row);
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
        visit(at, run, checked);
        at += n;
    }
}

/// The sum of `block` over every block, in parallel for large tensors.
fn over_blocks<R: Copy + Send + Sync>(
    blocks: &Blocks,
    elements: usize,
    zero: R,
    block: impl Fn(usize) -> R + Send + Sync,
    add: impl Fn(R, R) -> R + Send + Sync,
) -> R {
    blocks
        .map(elements >= PARALLEL_MIN, block)
        .into_iter()
        .fold(zero, add)
}

struct Pass<'a> {
    joint: &'a Joint,
    mask: &'a CpuStorage,
    rule: &'a Resolved,
    /// Whether the exempt positions must be counted even when the rule checks no value.
    needs_usable: bool,
}

impl ScanOp for Pass<'_> {
    type Output = MaskedSummary;

    fn run<T: Copy + Send + Sync, C: Compare>(
        self,
        data: &[T],
        widen: impl Fn(T) -> C + Copy + Send + Sync,
        bulk: BulkWiden<T, C>,
        _dtype: DType,
    ) -> MaskedSummary {
        let rule = TypedRule::<C>::new(self.rule);
        let joint = self.joint;
        let (inner_len, _, _) = joint.inner();
        let rows = joint.rows();
        let total = ((rows * inner_len) as u64).saturating_mul(joint.repeat);
        let checks_nothing = rule.intervals.is_none() && rule.ignore.is_empty() && !rule.integral;
        if checks_nothing && !self.needs_usable {
            return MaskedSummary {
                total,
                ..MaskedSummary::default()
            };
        }
        let blocks = Blocks::new(rows, inner_len);
        let sources = Sources {
            data,
            widen,
            bulk,
            mask: self.mask,
        };
        // One interval, nothing ignored, not `integral`: the branch-free loop.
        let single = match (&rule.intervals, rule.ignore.is_empty() && !rule.integral) {
            (Some(intervals), true) if intervals.len() == 1 => Some(intervals[0]),
            _ => None,
        };
        let block = |b: usize| {
            let mut counts = (0u64, 0u64, 0u64);
            let mut buffers = Buffers::new();
            for segment in blocks.segments(b) {
                for_each_run(joint, sources, &mut buffers, segment, |_, run, checked| {
                    let (violating, ignored, exempt) = match (single, run) {
                        (Some((lo, hi)), Run::Stored(run)) => {
                            let (v, e) = count_outside_checked(run, checked, widen, lo, hi);
                            (v, 0, e)
                        }
                        (Some((lo, hi)), Run::Widened(run)) => {
                            let (v, e) = count_outside_checked(run, checked, |v| v, lo, hi);
                            (v, 0, e)
                        }
                        (None, Run::Stored(run)) => count_general(run, checked, widen, &rule),
                        (None, Run::Widened(run)) => count_general(run, checked, |v| v, &rule),
                    };
                    counts.0 += violating;
                    counts.1 += ignored;
                    counts.2 += exempt;
                });
            }
            counts
        };
        let add = |a: (u64, u64, u64), b: (u64, u64, u64)| (a.0 + b.0, a.1 + b.1, a.2 + b.2);
        let elements = rows * inner_len;
        let (violating, ignored, exempt) = over_blocks(&blocks, elements, (0, 0, 0), block, add);
        let repeat = joint.repeat;
        MaskedSummary {
            violating: violating.saturating_mul(repeat),
            ignored: ignored.saturating_mul(repeat),
            exempt: exempt.saturating_mul(repeat),
            total,
        }
    }
}

/// `(checked elements outside [lo, hi], exempt elements)` of one run, with the best vector
/// width the CPU has.
#[inline(always)]
fn count_outside_checked<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512bw") {
        // SAFETY: the CPU has AVX-512F and BW, checked just above.
        return unsafe { count_outside_checked_avx512(data, checked, widen, lo, hi) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { count_outside_checked_avx2(data, checked, widen, lo, hi) };
    }
    count_outside_checked_portable(data, checked, widen, lo, hi)
}

/// The same loop compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn count_outside_checked_avx2<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> (u64, u64) {
    count_outside_checked_portable(data, checked, widen, lo, hi)
}

/// The same loop compiled for AVX-512 (sixteen f32 lanes, byte compares on the mask).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn count_outside_checked_avx512<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> (u64, u64) {
    count_outside_checked_portable(data, checked, widen, lo, hi)
}

/// A branch-free loop over at most [`BUFFER`] elements (u32 counters cannot overflow).
#[inline(always)]
fn count_outside_checked_portable<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> (u64, u64) {
    let (mut outside, mut exempt) = (0u32, 0u32);
    for (&x, &m) in data.iter().zip(checked) {
        let v = widen(x);
        let on = m != 0;
        outside += u32::from(on & !((v >= lo) & (v <= hi)));
        exempt += u32::from(!on);
    }
    (u64::from(outside), u64::from(exempt))
}

/// `(violating, ignored, exempt)` of one run under any rule.
#[inline]
fn count_general<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C,
    rule: &TypedRule<C>,
) -> (u64, u64, u64) {
    let (mut violating, mut ignored, mut exempt) = (0u64, 0u64, 0u64);
    for (&x, &m) in data.iter().zip(checked) {
        if m == 0 {
            exempt += 1;
            continue;
        }
        let v = widen(x);
        if rule.is_ignored(v) {
            ignored += 1;
        } else if !rule.accepts(v) {
            violating += 1;
        }
    }
    (violating, ignored, exempt)
}

/// What one block of checked positions holds; blocks merge in logical order.
struct Tally<C> {
    violating: u64,
    ignored: u64,
    nan: u64,
    exempt: u64,
    range: Option<(C, C)>,
    /// The first offending position: its row, position in the row, and value.
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
            exempt: 0,
            range: None,
            first: None,
            offending: Vec::new(),
            read: 0,
        }
    }

    #[inline(always)]
    fn visit(&mut self, v: C, checked: bool, rule: &TypedRule<C>, row: usize, position: usize) {
        if !checked {
            self.exempt += 1;
            return;
        }
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
        super::note_offending(&mut self.offending, v);
    }

    /// Adds a later block.
    fn merge(&mut self, later: Self) {
        self.violating += later.violating;
        self.ignored += later.ignored;
        self.nan += later.nan;
        self.exempt += later.exempt;
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
    joint: &'a Joint,
    mask: &'a CpuStorage,
    rule: &'a Resolved,
}

impl ScanOp for Statistics<'_> {
    type Output = (Details, u64);

    fn run<T: Copy + Send + Sync, C: Compare>(
        self,
        data: &[T],
        widen: impl Fn(T) -> C + Copy + Send + Sync,
        bulk: BulkWiden<T, C>,
        dtype: DType,
    ) -> (Details, u64) {
        let rule = TypedRule::<C>::new(self.rule);
        let joint = self.joint;
        let (inner_len, _, _) = joint.inner();
        let rows = joint.rows();
        let blocks = Blocks::new(rows, inner_len);
        let sources = Sources {
            data,
            widen,
            bulk,
            mask: self.mask,
        };
        let block = |b: usize| {
            let mut tally = Tally::new();
            let mut buffers = Buffers::new();
            for segment in blocks.segments(b) {
                let row = segment.0;
                for_each_run(joint, sources, &mut buffers, segment, |at, run, checked| {
                    match run {
                        Run::Stored(run) => {
                            for (i, (&x, &m)) in run.iter().zip(checked).enumerate() {
                                tally.visit(widen(x), m != 0, &rule, row, at + i);
                            }
                        }
                        Run::Widened(run) => {
                            for (i, (&v, &m)) in run.iter().zip(checked).enumerate() {
                                tally.visit(v, m != 0, &rule, row, at + i);
                            }
                        }
                    }
                    tally.read += checked.len() as u64;
                });
            }
            tally
        };
        let tallies = blocks.map(rows * inner_len >= PARALLEL_MIN, block);
        let mut all = Tally::new();
        for tally in tallies {
            all.merge(tally);
        }
        let repeat = joint.repeat;
        let mut details = Details::default();
        details.counts.total = ((rows * inner_len) as u64).saturating_mul(repeat);
        details.counts.violating = all.violating.saturating_mul(repeat);
        details.counts.ignored = all.ignored.saturating_mul(repeat);
        details.counts.nan = all.nan.saturating_mul(repeat);
        details.counts.exempt = all.exempt.saturating_mul(repeat);
        if let Some((row, position, v)) = all.first {
            details.first_index = Some(joint.index(row, position));
            details.first_value = Some(v.to_value(dtype));
        }
        details.observed = all
            .range
            .map(|(lo, hi)| (lo.to_value(dtype), hi.to_value(dtype)));
        details.offending = all.offending.iter().map(|v| v.to_value(dtype)).collect();
        // Every position was read: the list is complete.
        details.offending_complete = true;
        (details, all.read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::{Interval, Num};
    use candle_core::Device;

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
    fn the_joint_walk_merges_only_dims_contiguous_in_both() {
        let cpu = &Device::Cpu;
        let t = Tensor::zeros((4, 6, 5), DType::F32, cpu).unwrap();
        let same = Tensor::zeros((4, 6, 5), DType::U8, cpu).unwrap();
        let joint = Joint::new(t.layout(), same.layout());
        assert_eq!((joint.rows(), joint.inner().0, joint.repeat), (1, 120, 1));
        // An attention-style mask [4, 6, 1] broadcast over the last dim: the first two dims
        // merge, the last is walked with mask stride 0.
        let rows = Tensor::zeros((4, 6, 1), DType::U8, cpu).unwrap();
        let rows = rows.broadcast_as((4, 6, 5)).unwrap();
        let joint = Joint::new(t.layout(), rows.layout());
        assert_eq!((joint.rows(), joint.inner()), (24, (5, 1, 0)));
        assert_eq!(joint.row_start(7), (35, 7));
        assert_eq!(joint.index(7, 3), vec![1, 1, 3]);
        // Broadcast in both: counted, not walked.
        let one = Tensor::zeros((4, 1, 5), DType::F32, cpu).unwrap();
        let one = one.broadcast_as((4, 6, 5)).unwrap();
        let mask = Tensor::zeros((1, 1, 5), DType::U8, cpu).unwrap();
        let mask = mask.broadcast_as((4, 6, 5)).unwrap();
        let joint = Joint::new(one.layout(), mask.layout());
        assert_eq!((joint.rows(), joint.inner().0, joint.repeat), (4, 5, 6));
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
        assert_eq!(read, 4);
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
}
