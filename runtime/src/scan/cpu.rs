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
//!
//! [`CHUNK`]: walk::CHUNK
//! [`Blocks::map`]: walk::Blocks::map
//! [`OFFENDING_SHOWN`]: crate::error::OFFENDING_SHOWN
//! [`LOCATE_BLOCKS`]: locate::LOCATE_BLOCKS
//!
//! One file a job: `cpu/walk.rs` the layout walk and its blocks (the masked scan walks with it
//! too), `cpu/tally.rs` the fast pass and its kernels (`cpu/avx512.rs` the AVX-512 ones),
//! `cpu/locate.rs` the locating pass, `cpu/masked.rs` the scan under a `where` mask; this file
//! dispatches on the dtype (for the masked scan too) and puts the passes together.

use candle_core::{CpuStorage, DType, Layout, Storage, Tensor};

use crate::rule::{Compare, Details, Resolved, Summary, TypedRule, decode_e8m0};
use crate::scan::{Outcome, Request};

#[cfg(target_arch = "x86_64")]
mod avx512;
mod locate;
mod masked;
mod portable;
mod tally;
mod walk;

use locate::locate;
use tally::{BulkWiden, fast_pass};
use walk::{Blocks, Walk};

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
        let walk = Walk::new([self.layout]);
        let blocks = Blocks::new(walk.rows(), walk.inner().0);
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
            details.first_index = Some(walk.index(row, position));
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
    use super::locate::LOCATE_BLOCKS;
    use super::walk::{CHUNK, PARALLEL_MIN};
    use super::*;
    use crate::error::{OFFENDING_SHOWN, Value};
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
