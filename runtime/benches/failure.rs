//! The failure path against the pass path, in one run: a `u32[N, M] in 0..3` rule on
//! [4096, 4096] elements, dense (all 1; or 5 at the last element) and broadcast from one stored
//! element (1, or 5). The pass already yields the counts and the range; a violation reads only
//! from the first block that holds one, up to its first offending element; a broadcast view is
//! read over its stored elements only.

use std::hint::black_box;
use std::time::Duration;

use candle_contracts::check;
use candle_core::{Device, Tensor};
use criterion::{Criterion, criterion_group, criterion_main};

const SIDE: usize = 4096;

fn verdict(x: &Tensor) -> bool {
    check!(x: u32[N, M] in 0..3).is_ok()
}

fn failure_path(c: &mut Criterion) {
    let shape = (SIDE, SIDE);
    let mut data = vec![1u32; SIDE * SIDE];
    let dense_pass = Tensor::from_slice(&data, shape, &Device::Cpu).unwrap();
    *data.last_mut().unwrap() = 5;
    let dense_fail = Tensor::from_vec(data, shape, &Device::Cpu).unwrap();
    let one = |v: u32| {
        Tensor::new(v, &Device::Cpu)
            .unwrap()
            .broadcast_as(shape)
            .unwrap()
    };
    let (broadcast_pass, broadcast_fail) = (one(1), one(5));
    let mut group = c.benchmark_group("failure_u32_4096x4096");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    for (name, x, ok) in [
        ("dense_pass", &dense_pass, true),
        ("dense_violation", &dense_fail, false),
        ("broadcast_pass", &broadcast_pass, true),
        ("broadcast_violation", &broadcast_fail, false),
    ] {
        assert_eq!(verdict(x), ok, "{name}");
        group.bench_function(name, |b| b.iter(|| verdict(black_box(x))));
    }
    group.finish();
}

criterion_group!(benches, failure_path);
criterion_main!(benches);
