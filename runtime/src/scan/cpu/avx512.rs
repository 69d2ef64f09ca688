//! The range count of [`count_outside`](super::count_outside) in AVX-512 for f32 and f64
//! elements: sixteen (eight) lanes compared at once against `lo` and `hi`, the lanes inside
//! added into four independent counters, so the loop keeps up with memory. The compare is
//! ordered (`_CMP_GE_OQ`, `_CMP_LE_OQ`): a NaN lane is false in both, so it counts as outside,
//! as in the portable loop.
//!
//! Elements are widened into a 16-lane array before the compare; for f32 storage `widen` is
//! the identity and the array is one vector load. The tail shorter than one unrolled step goes
//! through the portable loop.

use std::any::Any;
use std::arch::x86_64::{
    __m512i, _CMP_GE_OQ, _CMP_LE_OQ, _mm512_add_epi32, _mm512_add_epi64, _mm512_cmp_pd_mask,
    _mm512_cmp_ps_mask, _mm512_loadu_pd, _mm512_loadu_ps, _mm512_mask_add_epi32,
    _mm512_mask_add_epi64, _mm512_mask_cmp_pd_mask, _mm512_mask_cmp_ps_mask,
    _mm512_reduce_add_epi32, _mm512_reduce_add_epi64, _mm512_set1_epi32, _mm512_set1_epi64,
    _mm512_set1_pd, _mm512_set1_ps, _mm512_setzero_si512,
};

use super::count_outside_portable;
use crate::rule::Compare;

/// Counters are flushed after this many elements: each of the 16 lanes of each of the four
/// counters then holds at most `FLUSH / 64`, far below `i32::MAX`.
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

/// Elements of `data` outside `[lo, hi]` (NaN included) for a compare type of `f32` or `f64`;
/// `None` for other compare types, which the caller counts with its own loop.
///
/// # Safety
///
/// The CPU must support AVX-512F (`is_x86_feature_detected!("avx512f")`).
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn count_outside<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C + Copy,
    lo: C,
    hi: C,
) -> Option<u64> {
    if let (Some(lo), Some(hi)) = (as_f32(lo), as_f32(hi)) {
        let widen = move |x: T| as_f32(widen(x)).unwrap_or(f32::NAN);
        let mut total = 0u64;
        for block in data.chunks(FLUSH) {
            // SAFETY: the caller guarantees AVX-512F.
            total += unsafe { count_outside_f32(block, widen, lo, hi) };
        }
        return Some(total);
    }
    if let (Some(lo), Some(hi)) = (as_f64(lo), as_f64(hi)) {
        let widen = move |x: T| as_f64(widen(x)).unwrap_or(f64::NAN);
        let mut total = 0u64;
        for block in data.chunks(FLUSH) {
            // SAFETY: the caller guarantees AVX-512F.
            total += unsafe { count_outside_f64(block, widen, lo, hi) };
        }
        return Some(total);
    }
    None
}

/// Lanes of one vector.
const F32_LANES: usize = 16;
/// Elements per unrolled step: four vectors.
const F32_STEP: usize = 4 * F32_LANES;

/// # Safety
///
/// AVX-512F, and `data.len() <= FLUSH`.
#[target_feature(enable = "avx512f")]
unsafe fn count_outside_f32<T: Copy>(
    data: &[T],
    widen: impl Fn(T) -> f32 + Copy,
    lo: f32,
    hi: f32,
) -> u64 {
    let (lo_v, hi_v) = (_mm512_set1_ps(lo), _mm512_set1_ps(hi));
    let one = _mm512_set1_epi32(1);
    let mut inside: [__m512i; 4] = [_mm512_setzero_si512(); 4];
    let steps = data.chunks_exact(F32_STEP);
    let tail = steps.remainder();
    for step in steps {
        for (counter, lanes) in inside.iter_mut().zip(step.chunks_exact(F32_LANES)) {
            let mut wide = [0f32; F32_LANES];
            for (w, &x) in wide.iter_mut().zip(lanes) {
                *w = widen(x);
            }
            // SAFETY: `wide` holds 16 f32, the 64 bytes an unaligned load reads.
            let v = unsafe { _mm512_loadu_ps(wide.as_ptr()) };
            let ge = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(v, lo_v);
            let within = _mm512_mask_cmp_ps_mask::<_CMP_LE_OQ>(ge, v, hi_v);
            *counter = _mm512_mask_add_epi32(*counter, within, *counter, one);
        }
    }
    let sum = _mm512_add_epi32(
        _mm512_add_epi32(inside[0], inside[1]),
        _mm512_add_epi32(inside[2], inside[3]),
    );
    // Each lane holds at most FLUSH / 64 and the 16 lanes at most FLUSH / 4: no wrap.
    let within = _mm512_reduce_add_epi32(sum) as u32 as u64;
    let vectored = (data.len() - tail.len()) as u64;
    (vectored - within) + count_outside_portable(tail, widen, lo, hi)
}

/// Lanes of one f64 vector.
const F64_LANES: usize = 8;
/// Elements per unrolled f64 step.
const F64_STEP: usize = 4 * F64_LANES;

/// # Safety
///
/// AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn count_outside_f64<T: Copy>(
    data: &[T],
    widen: impl Fn(T) -> f64 + Copy,
    lo: f64,
    hi: f64,
) -> u64 {
    let (lo_v, hi_v) = (_mm512_set1_pd(lo), _mm512_set1_pd(hi));
    let one = _mm512_set1_epi64(1);
    let mut inside: [__m512i; 4] = [_mm512_setzero_si512(); 4];
    let steps = data.chunks_exact(F64_STEP);
    let tail = steps.remainder();
    for step in steps {
        for (counter, lanes) in inside.iter_mut().zip(step.chunks_exact(F64_LANES)) {
            let mut wide = [0f64; F64_LANES];
            for (w, &x) in wide.iter_mut().zip(lanes) {
                *w = widen(x);
            }
            // SAFETY: `wide` holds 8 f64, the 64 bytes an unaligned load reads.
            let v = unsafe { _mm512_loadu_pd(wide.as_ptr()) };
            let ge = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(v, lo_v);
            let within = _mm512_mask_cmp_pd_mask::<_CMP_LE_OQ>(ge, v, hi_v);
            *counter = _mm512_mask_add_epi64(*counter, within, *counter, one);
        }
    }
    let sum = _mm512_add_epi64(
        _mm512_add_epi64(inside[0], inside[1]),
        _mm512_add_epi64(inside[2], inside[3]),
    );
    let within = _mm512_reduce_add_epi64(sum) as u64;
    let vectored = (data.len() - tail.len()) as u64;
    (vectored - within) + count_outside_portable(tail, widen, lo, hi)
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

    /// The AVX-512 count, or `None` on a CPU without it (the test then has nothing to compare).
    fn simd<T: Copy, C: Compare>(
        data: &[T],
        widen: impl Fn(T) -> C + Copy,
        lo: C,
        hi: C,
    ) -> Option<u64> {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return None;
        }
        // SAFETY: AVX-512F was detected just above.
        let count = unsafe { count_outside(data, widen, lo, hi) };
        assert!(count.is_some(), "f32 and f64 have an AVX-512 kernel");
        count
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn f32_and_f64_match_the_portable_loop(
            bits in proptest::collection::vec(f32_bits(), 0..300),
            (lo, hi) in bounds(),
        ) {
            let data: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
            if let Some(count) = simd(&data, |v: f32| v, lo, hi) {
                prop_assert_eq!(count, count_outside_portable(&data, |v: f32| v, lo, hi));
            }
            let wide: Vec<f64> = data.iter().map(|&v| f64::from(v)).collect();
            let (lo, hi) = (f64::from(lo), f64::from(hi));
            if let Some(count) = simd(&wide, |v: f64| v, lo, hi) {
                prop_assert_eq!(count, count_outside_portable(&wide, |v: f64| v, lo, hi));
            }
        }

        #[test]
        fn narrow_floats_match_the_portable_loop(
            bits in proptest::collection::vec(any::<u16>(), 0..300),
            (lo, hi) in bounds(),
        ) {
            let f16s: Vec<half::f16> = bits.iter().map(|&b| half::f16::from_bits(b)).collect();
            let widen = |v: half::f16| v.to_f32();
            if let Some(count) = simd(&f16s, widen, lo, hi) {
                prop_assert_eq!(count, count_outside_portable(&f16s, widen, lo, hi));
            }
            let bf16s: Vec<half::bf16> = bits.iter().map(|&b| half::bf16::from_bits(b)).collect();
            let widen = |v: half::bf16| v.to_f32();
            if let Some(count) = simd(&bf16s, widen, lo, hi) {
                prop_assert_eq!(count, count_outside_portable(&bf16s, widen, lo, hi));
            }
            let bytes: Vec<u8> = bits.iter().map(|&b| b as u8).collect();
            let e4m3: Vec<float8::F8E4M3> = bytes.iter().map(|&b| float8::F8E4M3::from_bits(b)).collect();
            let widen = |v: float8::F8E4M3| v.to_f32();
            if let Some(count) = simd(&e4m3, widen, lo, hi) {
                prop_assert_eq!(count, count_outside_portable(&e4m3, widen, lo, hi));
            }
            if let Some(count) = simd(&bytes, decode_e8m0, lo, hi) {
                prop_assert_eq!(count, count_outside_portable(&bytes, decode_e8m0, lo, hi));
            }
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
        if let Some(count) = simd(&data, |v: f32| v, 0.0, 1.0) {
            assert_eq!(count, 5);
        }
        let wide: Vec<f64> = data.iter().map(|&v| f64::from(v)).collect();
        if let Some(count) = simd(&wide, |v: f64| v, 0.0, 1.0) {
            assert_eq!(count, 5);
        }
        assert_eq!(count_outside_portable(&data, |v: f32| v, 0.0, 1.0), 5);
    }

    #[test]
    fn integer_compare_types_are_left_to_the_portable_loop() {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: AVX-512F was detected just above.
            let count = unsafe { count_outside(&[1u32, 5, 9], |v: u32| v, 0, 4) };
            assert_eq!(count, None);
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
    }
}
