//! Value statistics of a CPU tensor, read in place from its storage.
//!
//! The fast pass ([`summarize`]) walks the layout as contiguous or evenly strided rows (a
//! broadcast dim is read once and its count multiplied), counts the elements outside the rule
//! with a branch-free loop the compiler turns into a vector reduction (built for AVX2 too and
//! chosen at run time), widens f16/bf16 a block at a time, and splits large tensors across
//! threads with rayon. Only when it finds a violation does the slower pass ([`locate`])
//! walk the view in logical order for the first offending index, the counts and the range.

use candle_core::{CpuStorage, DType, Layout, Storage, Tensor};
use rayon::prelude::*;

use crate::value::{Compare, Details, Resolved, Summary, TypedRule};

#[cfg(target_arch = "x86_64")]
mod avx512;

/// Below this many elements one thread is faster than splitting.
const PARALLEL_MIN: usize = 1 << 17;
/// Elements per task when splitting.
const CHUNK: usize = 1 << 16;

/// Counts the violating and ignored elements; `None` if the dtype cannot be read.
pub(crate) fn summarize(tensor: &Tensor, rule: &Resolved) -> Option<Summary> {
    let (storage, layout) = tensor.storage_and_layout();
    let Storage::Cpu(storage) = &*storage else {
        return None;
    };
    dispatch(storage, Summarize { layout, rule })
}

/// Finds the first violating element in logical order and the statistics for the message.
pub(crate) fn locate(tensor: &Tensor, rule: &Resolved) -> Details {
    let (storage, layout) = tensor.storage_and_layout();
    let Storage::Cpu(storage) = &*storage else {
        return Details::default();
    };
    dispatch(storage, Locate { layout, rule }).unwrap_or_default()
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

/// `f8e8m0` is an exponent alone: 2^(e - 127), with 0xFF as NaN.
fn decode_e8m0(bits: u8) -> f32 {
    match bits {
        0xFF => f32::NAN,
        0 => f32::from_bits(0x0040_0000),
        e => f32::from_bits(u32::from(e) << 23),
    }
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
    match (&rule.intervals, rule.ignore.is_empty()) {
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

struct Locate<'a> {
    layout: &'a Layout,
    rule: &'a Resolved,
}

/// How many distinct offending values a message lists.
const OFFENDING_SHOWN: usize = 5;

impl ScanOp for Locate<'_> {
    type Output = Details;

    fn run<T: Copy + Send + Sync, C: Compare>(
        self,
        data: &[T],
        widen: impl Fn(T) -> C + Copy + Send + Sync,
        _bulk: BulkWiden<T, C>,
        dtype: DType,
    ) -> Details {
        let rule = TypedRule::<C>::new(self.rule);
        let dims = self.layout.dims();
        let strides = self.layout.stride();
        let total: usize = dims.iter().product();
        let mut details = Details::default();
        details.counts.total = total as u64;
        let mut index = vec![0usize; dims.len()];
        let mut offset = self.layout.start_offset();
        let mut range: Option<(C, C)> = None;
        let mut offending: Vec<C> = Vec::new();
        for _ in 0..total {
            let v = widen(data[offset]);
            if rule.is_ignored(v) {
                details.counts.ignored += 1;
            } else {
                if v.is_nan() {
                    details.counts.nan += 1;
                } else {
                    range = Some(match range {
                        None => (v, v),
                        Some((lo, hi)) => {
                            (if v < lo { v } else { lo }, if v > hi { v } else { hi })
                        }
                    });
                }
                if !rule.accepts(v) {
                    details.counts.violating += 1;
                    if details.first_index.is_none() {
                        details.first_index = Some(index.clone());
                        details.first_value = Some(v.to_value(dtype));
                    }
                    let seen = offending
                        .iter()
                        .any(|&o| o == v || (o.is_nan() && v.is_nan()));
                    if !seen && offending.len() < OFFENDING_SHOWN {
                        offending.push(v);
                    }
                }
            }
            // Advance the multi-dimensional index in logical (row-major) order.
            for axis in (0..dims.len()).rev() {
                index[axis] += 1;
                offset += strides[axis];
                if index[axis] < dims[axis] {
                    break;
                }
                offset -= strides[axis] * dims[axis];
                index[axis] = 0;
            }
        }
        details.observed = range.map(|(lo, hi)| (lo.to_value(dtype), hi.to_value(dtype)));
        details.offending = offending.into_iter().map(|v| v.to_value(dtype)).collect();
        details
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{Interval, Num};
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
        let details = locate(&transposed, &rule(0, 10));
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
}
