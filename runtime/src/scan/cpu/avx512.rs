//! The range tally of [`tally_outside`](super::tally::tally_outside) in AVX-512 for f32 and f64
//! elements: sixteen (eight) lanes compared at once against `lo` and `hi`. One pass yields the
//! count outside `[lo, hi]`, the NaN count, the smallest and largest value and, for the
//! offending values, the largest below `lo` and the smallest above `hi`, so the loop keeps up
//! with memory and a failure needs no second full read.
//!
//! The compares are ordered (`_CMP_GE_OQ`, `_CMP_LE_OQ`): a NaN lane is false in both, so it
//! counts as outside, as in the portable loop. The running minimum is `_mm512_min_ps(v, acc)`,
//! which returns `acc` when `v` is NaN (and the maximum likewise), so NaN never enters a range.
//!
//! Elements are widened into a 16-lane array before the compare; for f32 storage `widen` is
//! the identity and the array is one vector load. The tail shorter than one unrolled step goes
//! through the portable loop.
//!
//! That tally takes five compares a vector, which run on one port: it is bound by them, not by
//! memory. A pass needs less, so [`tally_inside`] goes first: the running minimum and maximum and
//! a NaN detector, three operations a vector on two ports, with a prefetch a few pages ahead so
//! that enough lines are in flight when the data comes from memory. Only a slice it cannot
//! prove inside is tallied in full, while it is still in cache.

use std::any::Any;
use std::arch::x86_64::{
    __m512, __m512d, __m512i, _CMP_GE_OQ, _CMP_GT_OQ, _CMP_LE_OQ, _CMP_LT_OQ, _CMP_UNORD_Q,
    _MM_HINT_T0, _mm_prefetch, _mm512_add_pd, _mm512_add_ps, _mm512_cmp_pd_mask,
    _mm512_cmp_ps_mask, _mm512_fmadd_pd, _mm512_fmadd_ps, _mm512_loadu_pd, _mm512_loadu_ps,
    _mm512_loadu_si512, _mm512_mask_add_epi32, _mm512_mask_add_epi64, _mm512_mask_cmp_pd_mask,
    _mm512_mask_cmp_ps_mask, _mm512_mask_max_pd, _mm512_mask_max_ps, _mm512_mask_min_pd,
    _mm512_mask_min_ps, _mm512_mask3_fmadd_ps, _mm512_max_pd, _mm512_max_ps, _mm512_min_pd,
    _mm512_min_ps, _mm512_reduce_add_epi32, _mm512_reduce_add_epi64, _mm512_reduce_max_pd,
    _mm512_reduce_max_ps, _mm512_reduce_min_pd, _mm512_reduce_min_ps, _mm512_set1_epi32,
    _mm512_set1_epi64, _mm512_set1_pd, _mm512_set1_ps, _mm512_setzero_pd, _mm512_setzero_ps,
    _mm512_setzero_si512, _mm512_test_epi8_mask,
};

use super::portable::{RangeTally, tally_checked_plain, tally_portable, tally_short};
use crate::rule::Compare;

/// Counters are flushed after this many elements: each of the 16 lanes of each of the two
/// counters then holds at most `FLUSH / 32`, far below `i32::MAX`.
const FLUSH: usize = 1 << 30;

/// `v` as an `f32` when `C` is `f32` (a compile-time type test, folded away).
#[inline(always)]
fn as_f32<C: 'static>(v: C) -> Option<f32> {
    (&v as &dyn Any).downcast_ref::<f32>().copied()
}

/// `v` as an `f64` when `C` is `f64`.
#[inline(always)]
fn as_f64<C: 'static>(v: C) -> Option<f64> {
    (&v as &dyn Any).downcast_ref::<f64>().copied()
}

/// `v` back in the compare type it was taken from.
#[inline(always)]
fn back<F: 'static + Copy, C: 'static + Copy>(v: F) -> Option<C> {
    (&v as &dyn Any).downcast_ref::<C>().copied()
}

/// A tally in `f32` or `f64` as one in `C` (the same type: only the name changes).
#[inline(always)]
fn tally_back<F: 'static + Copy, C: 'static + Copy>(t: RangeTally<F>) -> Option<RangeTally<C>> {
    Some(RangeTally {
        len: t.len,
        outside: t.outside,
        nan: t.nan,
        min: back(t.min)?,
        max: back(t.max)?,
        below_max: back(t.below_max)?,
        above_min: back(t.above_min)?,
    })
}

/// The range tally of `data` against `[lo, hi]` for a compare type of `f32` or `f64`; `None`
/// for other compare types, which the caller tallies with its own loop.
///
/// # Safety
///
/// The CPU must support AVX-512F (`is_x86_feature_detected!("avx512f")`).
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn tally_outside<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> Option<RangeTally<C>> {
    if let (Some(lo), Some(hi)) = (as_f32(lo), as_f32(hi)) {
        let widen = move |x: T| as_f32(widen(x)).unwrap_or(f32::NAN);
        let mut total = RangeTally::empty();
        for block in data.chunks(FLUSH) {
            // SAFETY: the caller guarantees AVX-512F.
            total.merge(unsafe { tally_f32(block, widen, lo, hi) });
        }
        return tally_back(total);
    }
    if let (Some(lo), Some(hi)) = (as_f64(lo), as_f64(hi)) {
        let widen = move |x: T| as_f64(widen(x)).unwrap_or(f64::NAN);
        let mut total = RangeTally::empty();
        for block in data.chunks(FLUSH) {
            // SAFETY: the caller guarantees AVX-512F.
            total.merge(unsafe { tally_f64(block, widen, lo, hi) });
        }
        return tally_back(total);
    }
    None
}

/// Whether [`tally_inside`] reads compare type `C` (f32 and f64); other types go to the
/// portable loop.
#[inline(always)]
pub(super) fn handles<C: 'static>() -> bool {
    use std::any::TypeId;
    let id = TypeId::of::<C>();
    id == TypeId::of::<f32>() || id == TypeId::of::<f64>()
}

/// The range tally of `data` when every element is inside `[lo, hi]`, by the lighter pass
/// kernel; `None` when some element may not be (NaN, ±inf, a bound crossed) or the compare type
/// is not f32 or f64: the caller then tallies in full.
///
/// # Safety
///
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn tally_inside<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> Option<RangeTally<C>> {
    if let (Some(lo), Some(hi)) = (as_f32(lo), as_f32(hi)) {
        let widen = move |x: T| as_f32(widen(x)).unwrap_or(f32::NAN);
        // SAFETY: the caller guarantees AVX-512F.
        return tally_back(unsafe { inside_f32(data, widen, lo, hi) }?);
    }
    if let (Some(lo), Some(hi)) = (as_f64(lo), as_f64(hi)) {
        let widen = move |x: T| as_f64(widen(x)).unwrap_or(f64::NAN);
        // SAFETY: the caller guarantees AVX-512F.
        return tally_back(unsafe { inside_f64(data, widen, lo, hi) }?);
    }
    None
}

/// How far ahead of the loads the pass kernel prefetches, in bytes: about what covers the
/// memory latency at full bandwidth (4 KiB measured best of 1, 2, 4 and 8 KiB).
const PREFETCH: usize = 4096;

/// A tally of the vectored part (`len` elements) inside `[lo, hi]` and the tail's full tally,
/// merged; `None` if either has an element outside.
fn inside_with_tail<T: Copy, C: Compare>(
    len: usize,
    (min, max): (C, C),
    tail: &[T],
    widen: impl Fn(T) -> C,
    (lo, hi): (C, C),
) -> Option<RangeTally<C>> {
    let mut tally = RangeTally {
        len: len as u64,
        min,
        max,
        ..RangeTally::empty()
    };
    // An empty vectored part passes: `HIGHEST >= lo` and `LOWEST <= hi`.
    if !(min >= lo && max <= hi) {
        return None;
    }
    let tail = tally_short(tail, widen, lo, hi);
    if tail.outside > 0 {
        return None;
    }
    tally.merge(tail);
    Some(tally)
}

/// # Safety
///
/// AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn inside_f32<T: Copy>(
    data: &[T],
    widen: impl Fn(T) -> f32 + Copy,
    lo: f32,
    hi: f32,
) -> Option<RangeTally<f32>> {
    let zero = _mm512_setzero_ps();
    // Four accumulators of each: the loop runs ahead of the min/max latency.
    let mut min: [__m512; 4] = [_mm512_set1_ps(f32::INFINITY); 4];
    let mut max: [__m512; 4] = [_mm512_set1_ps(f32::NEG_INFINITY); 4];
    // `v * 0.0` is 0 unless `v` is NaN or ±inf; summed, it stays NaN once one was.
    let mut poison: [__m512; 4] = [zero; 4];
    let (steps, tail) = data.as_chunks::<F32_STEP>();
    for step in steps {
        for k in 0..F32_STEP / F32_LANES {
            let lanes = &step[k * F32_LANES..(k + 1) * F32_LANES];
            // A hint only: an address past the end is never read.
            let ahead = lanes.as_ptr().cast::<i8>().wrapping_add(PREFETCH);
            _mm_prefetch::<_MM_HINT_T0>(ahead);
            let mut wide = [0f32; F32_LANES];
            for (w, &x) in wide.iter_mut().zip(lanes) {
                *w = widen(x);
            }
            // SAFETY: `wide` holds 16 f32, the 64 bytes an unaligned load reads.
            let v = unsafe { _mm512_loadu_ps(wide.as_ptr()) };
            min[k] = _mm512_min_ps(v, min[k]);
            max[k] = _mm512_max_ps(v, max[k]);
            poison[k] = _mm512_fmadd_ps(v, zero, poison[k]);
        }
    }
    // Added, not compared: a NaN survives a sum, not a `max`.
    let poison = _mm512_add_ps(
        _mm512_add_ps(poison[0], poison[1]),
        _mm512_add_ps(poison[2], poison[3]),
    );
    if _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(poison, poison) != 0 {
        return None;
    }
    let min = _mm512_min_ps(_mm512_min_ps(min[0], min[1]), _mm512_min_ps(min[2], min[3]));
    let max = _mm512_max_ps(_mm512_max_ps(max[0], max[1]), _mm512_max_ps(max[2], max[3]));
    let extremes = (_mm512_reduce_min_ps(min), _mm512_reduce_max_ps(max));
    inside_with_tail(data.len() - tail.len(), extremes, tail, widen, (lo, hi))
}

/// # Safety
///
/// AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn inside_f64<T: Copy>(
    data: &[T],
    widen: impl Fn(T) -> f64 + Copy,
    lo: f64,
    hi: f64,
) -> Option<RangeTally<f64>> {
    let zero = _mm512_setzero_pd();
    let mut min: [__m512d; 4] = [_mm512_set1_pd(f64::INFINITY); 4];
    let mut max: [__m512d; 4] = [_mm512_set1_pd(f64::NEG_INFINITY); 4];
    let mut poison: [__m512d; 4] = [zero; 4];
    let (steps, tail) = data.as_chunks::<F64_STEP>();
    for step in steps {
        for k in 0..F64_STEP / F64_LANES {
            let lanes = &step[k * F64_LANES..(k + 1) * F64_LANES];
            let ahead = lanes.as_ptr().cast::<i8>().wrapping_add(PREFETCH);
            _mm_prefetch::<_MM_HINT_T0>(ahead);
            let mut wide = [0f64; F64_LANES];
            for (w, &x) in wide.iter_mut().zip(lanes) {
                *w = widen(x);
            }
            // SAFETY: `wide` holds 8 f64, the 64 bytes an unaligned load reads.
            let v = unsafe { _mm512_loadu_pd(wide.as_ptr()) };
            min[k] = _mm512_min_pd(v, min[k]);
            max[k] = _mm512_max_pd(v, max[k]);
            poison[k] = _mm512_fmadd_pd(v, zero, poison[k]);
        }
    }
    let poison = _mm512_add_pd(
        _mm512_add_pd(poison[0], poison[1]),
        _mm512_add_pd(poison[2], poison[3]),
    );
    if _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(poison, poison) != 0 {
        return None;
    }
    let min = _mm512_min_pd(_mm512_min_pd(min[0], min[1]), _mm512_min_pd(min[2], min[3]));
    let max = _mm512_max_pd(_mm512_max_pd(max[0], max[1]), _mm512_max_pd(max[2], max[3]));
    let extremes = (_mm512_reduce_min_pd(min), _mm512_reduce_max_pd(max));
    inside_with_tail(data.len() - tail.len(), extremes, tail, widen, (lo, hi))
}

/// Whether [`inside_checked`] reads compare type `C` (f32: f32, f16, bf16 and f8 subjects).
#[inline(always)]
pub(super) fn handles_checked<C: 'static>() -> bool {
    std::any::TypeId::of::<C>() == std::any::TypeId::of::<f32>()
}

/// The masked pass kernel: `(the range tally of the checked positions, the exempt count)` of
/// one run when every position `checked` marks (a non-zero byte) is inside `[lo, hi]`, by the
/// pass kernel's loop with the mask's bits as lane masks (64 mask bytes tested at once); `None`
/// when some checked position may not be, or the compare type is not f32.
///
/// # Safety
///
/// The CPU must support AVX-512F and AVX-512BW.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn inside_checked<T: Copy, C: Compare>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> Option<(RangeTally<C>, u64)> {
    let (Some(lo), Some(hi)) = (as_f32(lo), as_f32(hi)) else {
        return None;
    };
    let widen = move |x: T| as_f32(widen(x)).unwrap_or(f32::NAN);
    // SAFETY: the caller guarantees AVX-512F and BW.
    let (tally, exempt) = unsafe { inside_checked_f32(data, checked, widen, lo, hi) }?;
    Some((tally_back(tally)?, exempt))
}

/// # Safety
///
/// AVX-512F and AVX-512BW.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn inside_checked_f32<T: Copy>(
    data: &[T],
    checked: &[u8],
    widen: impl Fn(T) -> f32 + Copy,
    lo: f32,
    hi: f32,
) -> Option<(RangeTally<f32>, u64)> {
    let n = data.len().min(checked.len());
    let (data, checked) = (&data[..n], &checked[..n]);
    let zero = _mm512_setzero_ps();
    let mut min: [__m512; 4] = [_mm512_set1_ps(f32::INFINITY); 4];
    let mut max: [__m512; 4] = [_mm512_set1_ps(f32::NEG_INFINITY); 4];
    let mut poison: [__m512; 4] = [zero; 4];
    let mut on_count = 0u64;
    let (steps, tail) = data.as_chunks::<F32_STEP>();
    let (bit_steps, bit_tail) = checked.as_chunks::<F32_STEP>();
    for (step, bits) in steps.iter().zip(bit_steps) {
        // The mask is a byte an element: as many elements ahead as the subject's prefetch.
        let ahead = bits.as_ptr().cast::<i8>().wrapping_add(PREFETCH / 4);
        _mm_prefetch::<_MM_HINT_T0>(ahead);
        // SAFETY: `bits` holds 64 bytes, what an unaligned 512-bit load reads.
        let b = unsafe { _mm512_loadu_si512(bits.as_ptr().cast()) };
        let on: u64 = _mm512_test_epi8_mask(b, b);
        on_count += u64::from(on.count_ones());
        for k in 0..F32_STEP / F32_LANES {
            let lanes = &step[k * F32_LANES..(k + 1) * F32_LANES];
            let ahead = lanes.as_ptr().cast::<i8>().wrapping_add(PREFETCH);
            _mm_prefetch::<_MM_HINT_T0>(ahead);
            let mut wide = [0f32; F32_LANES];
            for (w, &x) in wide.iter_mut().zip(lanes) {
                *w = widen(x);
            }
            // SAFETY: `wide` holds 16 f32, the 64 bytes an unaligned load reads.
            let v = unsafe { _mm512_loadu_ps(wide.as_ptr()) };
            // The 16 mask bits of these lanes; an exempt lane leaves every accumulator as is.
            let m = (on >> (k * F32_LANES)) as u16;
            min[k] = _mm512_mask_min_ps(min[k], m, v, min[k]);
            max[k] = _mm512_mask_max_ps(max[k], m, v, max[k]);
            poison[k] = _mm512_mask3_fmadd_ps(v, zero, poison[k], m);
        }
    }
    let poison = _mm512_add_ps(
        _mm512_add_ps(poison[0], poison[1]),
        _mm512_add_ps(poison[2], poison[3]),
    );
    if _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(poison, poison) != 0 {
        return None;
    }
    let min = _mm512_min_ps(_mm512_min_ps(min[0], min[1]), _mm512_min_ps(min[2], min[3]));
    let max = _mm512_max_ps(_mm512_max_ps(max[0], max[1]), _mm512_max_ps(max[2], max[3]));
    let mut tally = RangeTally {
        len: on_count,
        min: _mm512_reduce_min_ps(min),
        max: _mm512_reduce_max_ps(max),
        ..RangeTally::empty()
    };
    // No checked position passes too: `+inf >= lo` and `-inf <= hi`.
    if !(tally.min >= lo && tally.max <= hi) {
        return None;
    }
    let (rest, exempt) = tally_checked_plain(tail, bit_tail, widen, lo, hi);
    if rest.outside > 0 {
        return None;
    }
    tally.merge(rest);
    Some((tally, (n - tail.len()) as u64 - on_count + exempt))
}

/// Lanes of one vector.
const F32_LANES: usize = 16;
/// Elements per unrolled step: four vectors.
const F32_STEP: usize = 4 * F32_LANES;

/// # Safety
///
/// AVX-512F, and `data.len() <= FLUSH`.
#[target_feature(enable = "avx512f")]
unsafe fn tally_f32<T: Copy>(
    data: &[T],
    widen: impl Fn(T) -> f32 + Copy,
    lo: f32,
    hi: f32,
) -> RangeTally<f32> {
    let (lo_v, hi_v) = (_mm512_set1_ps(lo), _mm512_set1_ps(hi));
    let one = _mm512_set1_epi32(1);
    let (mut inside, mut nan): (__m512i, __m512i) =
        (_mm512_setzero_si512(), _mm512_setzero_si512());
    // Two accumulators for each extreme: the min/max latency stays hidden.
    let mut min: [__m512; 2] = [_mm512_set1_ps(f32::INFINITY); 2];
    let mut max: [__m512; 2] = [_mm512_set1_ps(f32::NEG_INFINITY); 2];
    let mut below: [__m512; 2] = [_mm512_set1_ps(f32::NEG_INFINITY); 2];
    let mut above: [__m512; 2] = [_mm512_set1_ps(f32::INFINITY); 2];
    let steps = data.chunks_exact(F32_STEP);
    let tail = steps.remainder();
    for step in steps {
        for (k, lanes) in step.chunks_exact(F32_LANES).enumerate() {
            let a = k & 1;
            let mut wide = [0f32; F32_LANES];
            for (w, &x) in wide.iter_mut().zip(lanes) {
                *w = widen(x);
            }
            // SAFETY: `wide` holds 16 f32, the 64 bytes an unaligned load reads.
            let v = unsafe { _mm512_loadu_ps(wide.as_ptr()) };
            let ge = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(v, lo_v);
            let within = _mm512_mask_cmp_ps_mask::<_CMP_LE_OQ>(ge, v, hi_v);
            inside = _mm512_mask_add_epi32(inside, within, inside, one);
            let unordered = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
            nan = _mm512_mask_add_epi32(nan, unordered, nan, one);
            min[a] = _mm512_min_ps(v, min[a]);
            max[a] = _mm512_max_ps(v, max[a]);
            let lt = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(v, lo_v);
            below[a] = _mm512_mask_max_ps(below[a], lt, v, below[a]);
            let gt = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, hi_v);
            above[a] = _mm512_mask_min_ps(above[a], gt, v, above[a]);
        }
    }
    // Each lane holds at most FLUSH / 16: no wrap in the 32-bit sums.
    let within = _mm512_reduce_add_epi32(inside) as u32 as u64;
    let vectored = (data.len() - tail.len()) as u64;
    let mut tally = RangeTally {
        len: vectored,
        outside: vectored - within,
        nan: _mm512_reduce_add_epi32(nan) as u32 as u64,
        min: _mm512_reduce_min_ps(_mm512_min_ps(min[0], min[1])),
        max: _mm512_reduce_max_ps(_mm512_max_ps(max[0], max[1])),
        below_max: _mm512_reduce_max_ps(_mm512_max_ps(below[0], below[1])),
        above_min: _mm512_reduce_min_ps(_mm512_min_ps(above[0], above[1])),
    };
    tally.merge(tally_portable(tail, widen, lo, hi));
    tally
}

/// Lanes of one f64 vector.
const F64_LANES: usize = 8;
/// Elements per unrolled f64 step.
const F64_STEP: usize = 4 * F64_LANES;

/// # Safety
///
/// AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn tally_f64<T: Copy>(
    data: &[T],
    widen: impl Fn(T) -> f64 + Copy,
    lo: f64,
    hi: f64,
) -> RangeTally<f64> {
    let (lo_v, hi_v) = (_mm512_set1_pd(lo), _mm512_set1_pd(hi));
    let one = _mm512_set1_epi64(1);
    let (mut inside, mut nan): (__m512i, __m512i) =
        (_mm512_setzero_si512(), _mm512_setzero_si512());
    let mut min: [__m512d; 2] = [_mm512_set1_pd(f64::INFINITY); 2];
    let mut max: [__m512d; 2] = [_mm512_set1_pd(f64::NEG_INFINITY); 2];
    let mut below: [__m512d; 2] = [_mm512_set1_pd(f64::NEG_INFINITY); 2];
    let mut above: [__m512d; 2] = [_mm512_set1_pd(f64::INFINITY); 2];
    let steps = data.chunks_exact(F64_STEP);
    let tail = steps.remainder();
    for step in steps {
        for (k, lanes) in step.chunks_exact(F64_LANES).enumerate() {
            let a = k & 1;
            let mut wide = [0f64; F64_LANES];
            for (w, &x) in wide.iter_mut().zip(lanes) {
                *w = widen(x);
            }
            // SAFETY: `wide` holds 8 f64, the 64 bytes an unaligned load reads.
            let v = unsafe { _mm512_loadu_pd(wide.as_ptr()) };
            let ge = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(v, lo_v);
            let within = _mm512_mask_cmp_pd_mask::<_CMP_LE_OQ>(ge, v, hi_v);
            inside = _mm512_mask_add_epi64(inside, within, inside, one);
            let unordered = _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(v, v);
            nan = _mm512_mask_add_epi64(nan, unordered, nan, one);
            min[a] = _mm512_min_pd(v, min[a]);
            max[a] = _mm512_max_pd(v, max[a]);
            let lt = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(v, lo_v);
            below[a] = _mm512_mask_max_pd(below[a], lt, v, below[a]);
            let gt = _mm512_cmp_pd_mask::<_CMP_GT_OQ>(v, hi_v);
            above[a] = _mm512_mask_min_pd(above[a], gt, v, above[a]);
        }
    }
    let within = _mm512_reduce_add_epi64(inside) as u64;
    let vectored = (data.len() - tail.len()) as u64;
    let mut tally = RangeTally {
        len: vectored,
        outside: vectored - within,
        nan: _mm512_reduce_add_epi64(nan) as u64,
        min: _mm512_reduce_min_pd(_mm512_min_pd(min[0], min[1])),
        max: _mm512_reduce_max_pd(_mm512_max_pd(max[0], max[1])),
        below_max: _mm512_reduce_max_pd(_mm512_max_pd(below[0], below[1])),
        above_min: _mm512_reduce_min_pd(_mm512_min_pd(above[0], above[1])),
    };
    tally.merge(tally_portable(tail, widen, lo, hi));
    tally
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::cpu::decode_e8m0;
    use proptest::prelude::*;

    /// f32 bit patterns weighted towards the values a range compare gets wrong: NaN (quiet
    /// and signalling, both signs), ±Inf, ±0.0, subnormals, the bounds themselves, and any
    /// pattern at all.
    fn f32_bits() -> impl Strategy<Value = u32> {
        prop_oneof![
            Just(f32::NAN.to_bits()),
            Just(0xFFC0_0001),
            Just(0x7F80_0001),
            Just(f32::INFINITY.to_bits()),
            Just(f32::NEG_INFINITY.to_bits()),
            Just(0.0f32.to_bits()),
            Just((-0.0f32).to_bits()),
            Just(1.0f32.to_bits()),
            Just(1u32),
            (0.0f32..=1.0).prop_map(f32::to_bits),
            (-2.0f32..2.0).prop_map(f32::to_bits),
            any::<u32>(),
        ]
    }

    /// `[lo, hi]` pairs as the rules build them, including empty and signed-zero ones.
    fn bounds() -> impl Strategy<Value = (f32, f32)> {
        prop_oneof![
            Just((0.0, 1.0)),
            Just((-0.0, 0.0)),
            Just((f32::NEG_INFINITY, f32::INFINITY)),
            Just((f32::MIN, f32::MAX)),
            Just((1.0, 0.0)),
            (-2.0f32..2.0, -2.0f32..2.0),
        ]
    }

    /// The tally by a plain loop, one element at a time.
    fn plain<T: Copy, C: Compare>(
        data: &[T],
        widen: impl Fn(T) -> C,
        lo: C,
        hi: C,
    ) -> RangeTally<C> {
        let mut tally = RangeTally::empty();
        tally.len = data.len() as u64;
        for &x in data {
            let v = widen(x);
            if v.is_nan() {
                tally.nan += 1;
                tally.outside += 1;
                continue;
            }
            if v < lo || v > hi {
                tally.outside += 1;
            }
            if v < tally.min {
                tally.min = v;
            }
            if v > tally.max {
                tally.max = v;
            }
            if v < lo && v > tally.below_max {
                tally.below_max = v;
            }
            if v > hi && v < tally.above_min {
                tally.above_min = v;
            }
        }
        tally
    }

    /// The AVX-512 tally, or `None` on a CPU without it or for a compare type it leaves to the
    /// portable loop (the test then has nothing to compare).
    fn simd<T: Copy, C: Compare>(
        data: &[T],
        widen: impl Fn(T) -> C + Copy,
        lo: C,
        hi: C,
    ) -> Option<RangeTally<C>> {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return None;
        }
        // SAFETY: AVX-512F was detected just above.
        unsafe { tally_outside(data, widen, lo, hi) }
    }

    /// The portable loop and, where the CPU has it, the AVX-512 kernel equal the plain loop.
    fn all_agree<T: Copy, C: Compare + std::fmt::Debug>(
        data: &[T],
        widen: impl Fn(T) -> C + Copy,
        lo: C,
        hi: C,
    ) -> Result<(), TestCaseError> {
        let expected = plain(data, widen, lo, hi);
        prop_assert_eq!(tally_portable(data, widen, lo, hi), expected);
        if let Some(tally) = simd(data, widen, lo, hi) {
            prop_assert_eq!(tally, expected);
        }
        // The extremes loop: the same NaN count and extremes, nothing counted outside.
        let extremes = RangeTally {
            outside: 0,
            below_max: C::LOWEST,
            above_min: C::HIGHEST,
            ..expected
        };
        prop_assert_eq!(super::super::portable::extremes(data, widen), extremes);
        prop_assert_eq!(
            super::super::portable::tally_short(data, widen, lo, hi),
            expected
        );
        // The tally the fast pass takes: the full one, or (unoptimised) the extremes when
        // nothing is outside.
        let lighter = cfg!(debug_assertions) && expected.outside == 0;
        let taken = super::super::tally::range_tally(data, widen, lo, hi);
        prop_assert_eq!(taken, if lighter { extremes } else { expected });
        // The pass kernels: the full tally when nothing is outside, else nothing. The portable
        // one decides from the extremes and NaN alone; the AVX-512 one may leave ±inf to the
        // full tally too.
        let infinite = C::FRACTIONAL
            && data.iter().any(|&x| {
                let v = widen(x);
                v == C::HIGHEST || v == C::LOWEST
            });
        let inside = (expected.outside == 0).then_some(expected);
        prop_assert_eq!(
            super::super::tally::inside_portable(data, widen, lo, hi),
            inside
        );
        let kernel = super::super::tally::tally_inside(data, widen, lo, hi);
        prop_assert!(
            kernel.is_none_or(|t| Some(t) == inside),
            "{kernel:?} vs {inside:?}"
        );
        if std::arch::is_x86_feature_detected!("avx512f") && handles::<C>() {
            // SAFETY: AVX-512F was detected just above.
            let simd = unsafe { tally_inside(data, widen, lo, hi) };
            prop_assert!(
                simd.is_none_or(|t| Some(t) == inside),
                "{simd:?} vs {inside:?}"
            );
            // Without ±inf it never leaves a pass to the full tally.
            prop_assert!(infinite || inside.is_none() || simd.is_some());
            prop_assert_eq!(kernel, simd);
        } else {
            prop_assert_eq!(kernel, inside);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn f32_and_f64_match_a_plain_loop(
            bits in proptest::collection::vec(f32_bits(), 0..300),
            (lo, hi) in bounds(),
        ) {
            let data: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
            all_agree(&data, |v: f32| v, lo, hi)?;
            let wide: Vec<f64> = data.iter().map(|&v| f64::from(v)).collect();
            all_agree(&wide, |v: f64| v, f64::from(lo), f64::from(hi))?;
        }

        #[test]
        fn narrow_floats_and_integers_match_a_plain_loop(
            bits in proptest::collection::vec(any::<u16>(), 0..300),
            (lo, hi) in bounds(),
        ) {
            let f16s: Vec<half::f16> = bits.iter().map(|&b| half::f16::from_bits(b)).collect();
            all_agree(&f16s, |v: half::f16| v.to_f32(), lo, hi)?;
            let bf16s: Vec<half::bf16> = bits.iter().map(|&b| half::bf16::from_bits(b)).collect();
            all_agree(&bf16s, |v: half::bf16| v.to_f32(), lo, hi)?;
            let bytes: Vec<u8> = bits.iter().map(|&b| b as u8).collect();
            let e4m3: Vec<float8::F8E4M3> =
                bytes.iter().map(|&b| float8::F8E4M3::from_bits(b)).collect();
            all_agree(&e4m3, |v: float8::F8E4M3| v.to_f32(), lo, hi)?;
            all_agree(&bytes, decode_e8m0, lo, hi)?;
            let ints: Vec<i16> = bits.iter().map(|&b| b as i16).collect();
            all_agree(&ints, |v: i16| v, -300, 300)?;
            all_agree(&bytes, |v: u8| v, 10, 200)?;
        }
    }

    #[test]
    fn nan_infinities_and_signed_zeros_count_as_the_rule_says() {
        // 70 elements: one unrolled step of 64 and a tail of 6, specials in both.
        let mut data = vec![0.5f32; 70];
        data[3] = f32::NAN;
        data[17] = f32::INFINITY;
        data[40] = f32::NEG_INFINITY;
        data[63] = -0.0;
        data[65] = f32::NAN;
        data[69] = 1.5;
        // In `0..=1`: NaN, +Inf, -Inf and 1.5 are outside; -0.0 equals 0.0 and is inside.
        let expected = RangeTally {
            len: 70,
            outside: 5,
            nan: 2,
            min: f32::NEG_INFINITY,
            max: f32::INFINITY,
            below_max: f32::NEG_INFINITY,
            above_min: 1.5,
        };
        let avx512 = std::arch::is_x86_feature_detected!("avx512f");
        assert_eq!(
            simd(&data, |v: f32| v, 0.0, 1.0).map(|t| t == expected),
            avx512.then_some(true)
        );
        assert_eq!(tally_portable(&data, |v: f32| v, 0.0, 1.0), expected);
        let wide: Vec<f64> = data.iter().map(|&v| f64::from(v)).collect();
        if let Some(tally) = simd(&wide, |v: f64| v, 0.0, 1.0) {
            assert_eq!((tally.outside, tally.nan, tally.above_min), (5, 2, 1.5));
        }
    }

    #[test]
    fn integer_compare_types_are_left_to_the_portable_loop() {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: AVX-512F was detected just above.
            let tally = unsafe { tally_outside(&[1u32, 5, 9], |v: u32| v, 0, 4) };
            assert_eq!(tally, None);
        }
    }

    #[test]
    fn a_large_tensor_split_across_threads_counts_nan_as_outside() {
        use crate::rule::{Interval, Num, Resolved};
        use candle_core::{Device, Tensor};
        let n = (1 << 19) + 13;
        let data: Vec<f64> = (0..n)
            .map(|i| match i % 997 {
                0 => f64::NAN,
                1 => -1e-300,
                2 => -0.0,
                _ => 0.25,
            })
            .collect();
        let expected = data.iter().filter(|v| !(0.0..=1.0).contains(*v)).count() as u64;
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
        let tensor = Tensor::from_vec(data, n, &Device::Cpu).unwrap();
        let summary = crate::scan::cpu::summarize(&tensor, &unit).unwrap();
        assert_eq!(summary.violating, expected);
        // 526 NaN and 526 tiny negatives; -0.0 is inside.
        assert_eq!(expected, 1052);
        assert_eq!(summary.nan, 526);
        let (lo, hi) = summary.observed.unwrap();
        assert_eq!((lo.to_f64(), hi.to_f64()), (-1e-300, 0.25));
    }
}
