//! The per-call cost of a struct contract's clauses, against the same clauses written on the
//! method and against no contract, in one run, on a GPT-2-style causal self-attention block
//! (`c_attn` Linear[E -> 3E], `c_proj` Linear[E -> E], `n_head` = H, `head_dim` = D,
//! E == H * D) at B = 4, T = 64, E = 256, H = 8 (D = 32), f32 on the CPU. The forward body is
//! the same three ways: `plain` (no contract), `method` (the struct's clauses written out on the
//! method) and `struct` (the clauses on the struct, which its method takes); each contract runs
//! in `shapes` and `full` mode (the same checks here: the contract has no value rule).
//!
//! - `struct_contract_step` (criterion): one forward call, timed between other work as a
//!   training step has it: an MLP-sized matmul of unrelated data ([256, 256] × [256, 1024],
//!   untimed) before each call. `plain_again` repeats `plain` after the guarded ones: the
//!   run-to-run noise, far larger than what a guard adds.
//! - `struct_contract_clauses` (criterion): the clauses alone, precise where the forward's
//!   noise is not: the same contracts on a method of each struct whose body returns its input,
//!   back to back (`off` mode too: one atomic load).
//! - Then two plain timing loops, the variants taking turns call by call (a neighbour's burst
//!   lands on all of them alike), each call after the matmul: the forwards, rounds of 31 calls
//!   of each, printing each round's ratios to the plain forward and their range; and the
//!   clauses alone, one call at a time after the matmul (their metadata out of the cache).
//!
//! The summary prints each contract's overhead per call (its clauses' median less the plain
//! method's), back to back and after the matmul, in µs and as a share of the plain forward, and
//! the struct contract's overhead over the method contract's. `STRUCT_BENCH_SECONDS` sets each
//! criterion benchmark's measurement time (3 s by default), `STRUCT_BENCH_ROUNDS` the loops'
//! rounds (7 by default); a filter argument applies to the criterion groups only.
//!
//! `cargo bench -p candle-contracts --bench struct_contract`

use std::cell::RefCell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use candle_contracts::{Mode, set_mode};
use candle_core::{Device, Result, Tensor};
use candle_nn::Linear;
use criterion::Criterion;

const B: usize = 4;
const T: usize = 64;
const E: usize = 256;
const H: usize = 8;

#[candle_contracts::contract]
mod attention {
    use candle_contracts::contract;
    use candle_core::{Module, Result, Tensor};
    use candle_nn::Linear;

    /// No contract.
    #[derive(Debug)]
    pub struct Plain {
        pub c_attn: Linear,
        pub c_proj: Linear,
        pub n_head: usize,
        pub head_dim: usize,
        /// [T, T]: 0 on and below the diagonal, -inf above.
        pub mask: Tensor,
    }

    impl Plain {
        pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
            let (b, t, e) = x.dims3()?;
            let qkv = self.c_attn.forward(x)?;
            let split = |at: usize| {
                qkv.narrow(2, at * e, e)?
                    .reshape((b, t, self.n_head, self.head_dim))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let (q, k, v) = (split(0)?, split(1)?, split(2)?);
            let att = (q.matmul(&k.t()?)? / (self.head_dim as f64).sqrt())?;
            let att = candle_nn::ops::softmax_last_dim(&att.broadcast_add(&self.mask)?)?;
            let y = att.matmul(&v)?.transpose(1, 2)?.contiguous()?;
            self.c_proj.forward(&y.reshape((b, t, e))?)
        }

        /// The clauses' reference: what `echo` costs without a contract.
        pub fn echo(&self, x: &Tensor) -> Result<Tensor> {
            Ok(x.clone())
        }
    }

    /// The struct's clauses written out on each method.
    #[derive(Debug)]
    pub struct OnMethod {
        pub c_attn: Linear,
        pub c_proj: Linear,
        pub n_head: usize,
        pub head_dim: usize,
        pub mask: Tensor,
    }

    impl OnMethod {
        #[contract(x: f32[B, T, E], return: f32[B, T, E], self.c_attn: Linear[E -> 3 * E],
                   self.c_proj: Linear[E -> E], self.n_head = H, self.head_dim = D,
                   E == H * D)]
        pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
            let (b, t, e) = x.dims3()?;
            let qkv = self.c_attn.forward(x)?;
            let split = |at: usize| {
                qkv.narrow(2, at * e, e)?
                    .reshape((b, t, self.n_head, self.head_dim))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let (q, k, v) = (split(0)?, split(1)?, split(2)?);
            let att = (q.matmul(&k.t()?)? / (self.head_dim as f64).sqrt())?;
            let att = candle_nn::ops::softmax_last_dim(&att.broadcast_add(&self.mask)?)?;
            let y = att.matmul(&v)?.transpose(1, 2)?.contiguous()?;
            self.c_proj.forward(&y.reshape((b, t, e))?)
        }

        #[contract(x: f32[B, T, E], return: f32[B, T, E], self.c_attn: Linear[E -> 3 * E],
                   self.c_proj: Linear[E -> E], self.n_head = H, self.head_dim = D,
                   E == H * D)]
        pub fn echo(&self, x: &Tensor) -> Result<Tensor> {
            Ok(x.clone())
        }
    }

    /// The same clauses on the struct: each method with `self` and a contract takes them.
    #[derive(Debug)]
    #[contract(c_attn: Linear[E -> 3 * E], c_proj: Linear[E -> E], n_head = H, head_dim = D,
               E == H * D)]
    pub struct OnStruct {
        pub c_attn: Linear,
        pub c_proj: Linear,
        pub n_head: usize,
        pub head_dim: usize,
        pub mask: Tensor,
    }

    impl OnStruct {
        #[contract(x: f32[B, T, E], return: f32[B, T, E])]
        pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
            let (b, t, e) = x.dims3()?;
            let qkv = self.c_attn.forward(x)?;
            let split = |at: usize| {
                qkv.narrow(2, at * e, e)?
                    .reshape((b, t, self.n_head, self.head_dim))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let (q, k, v) = (split(0)?, split(1)?, split(2)?);
            let att = (q.matmul(&k.t()?)? / (self.head_dim as f64).sqrt())?;
            let att = candle_nn::ops::softmax_last_dim(&att.broadcast_add(&self.mask)?)?;
            let y = att.matmul(&v)?.transpose(1, 2)?.contiguous()?;
            self.c_proj.forward(&y.reshape((b, t, e))?)
        }

        #[contract(x: f32[B, T, E], return: f32[B, T, E])]
        pub fn echo(&self, x: &Tensor) -> Result<Tensor> {
            Ok(x.clone())
        }
    }
}

use attention::{OnMethod, OnStruct, Plain};

/// Each benchmark's measurement time: `STRUCT_BENCH_SECONDS`, else 3 s.
fn measurement_time() -> Duration {
    let seconds = std::env::var("STRUCT_BENCH_SECONDS")
        .ok()
        .and_then(|seconds| seconds.parse().ok())
        .unwrap_or(3.0);
    Duration::from_secs_f64(seconds)
}

/// The three blocks, on the same weights, and an input.
struct Blocks {
    plain: Plain,
    on_method: OnMethod,
    on_struct: OnStruct,
    x: Tensor,
}

impl Blocks {
    fn new() -> Result<Self> {
        let device = &Device::Cpu;
        let scale = 1.0 / (E as f32).sqrt();
        let c_attn = Linear::new(
            Tensor::randn(0f32, scale, (3 * E, E), device)?,
            Some(Tensor::zeros(3 * E, candle_core::DType::F32, device)?),
        );
        let c_proj = Linear::new(
            Tensor::randn(0f32, scale, (E, E), device)?,
            Some(Tensor::zeros(E, candle_core::DType::F32, device)?),
        );
        let mask: Vec<f32> = (0..T * T)
            .map(|i| match i % T > i / T {
                true => f32::NEG_INFINITY,
                false => 0.0,
            })
            .collect();
        let mask = Tensor::from_vec(mask, (T, T), device)?;
        let head_dim = E / H;
        Ok(Self {
            plain: Plain {
                c_attn: c_attn.clone(),
                c_proj: c_proj.clone(),
                n_head: H,
                head_dim,
                mask: mask.clone(),
            },
            on_method: OnMethod {
                c_attn: c_attn.clone(),
                c_proj: c_proj.clone(),
                n_head: H,
                head_dim,
                mask: mask.clone(),
            },
            on_struct: OnStruct {
                c_attn,
                c_proj,
                n_head: H,
                head_dim,
                mask,
            },
            x: Tensor::randn(0f32, 1f32, (B, T, E), device)?,
        })
    }

    /// The three forwards agree, and both guards reject an input of another width in `shapes`
    /// mode: what is timed is a guard that checks.
    fn sanity(&self) -> Result<()> {
        set_mode(Mode::Shapes);
        let plain = self.plain.forward(&self.x)?;
        assert_eq!(plain.dims(), &[B, T, E]);
        for other in [
            self.on_method.forward(&self.x)?,
            self.on_struct.forward(&self.x)?,
        ] {
            let diff = (&plain - &other)?.abs()?.max_all()?.to_scalar::<f32>()?;
            assert_eq!(diff, 0.0);
        }
        let narrow = self.x.narrow(2, 0, E - 8)?;
        assert!(self.on_method.forward(&narrow).is_err());
        assert!(self.on_struct.forward(&narrow).is_err());
        assert!(self.on_struct.echo(&narrow).is_err());
        set_mode(Mode::Full);
        Ok(())
    }
}

/// Which block a call goes to.
#[derive(Debug, Clone, Copy)]
enum Block {
    Plain,
    OnMethod,
    OnStruct,
}

/// The variants measured: a name, the block and the mode. The forwards are the first five;
/// the clauses alone take all seven.
const VARIANTS: [(&str, Block, Mode); 7] = [
    ("plain", Block::Plain, Mode::Full),
    ("method_shapes", Block::OnMethod, Mode::Shapes),
    ("struct_shapes", Block::OnStruct, Mode::Shapes),
    ("method_full", Block::OnMethod, Mode::Full),
    ("struct_full", Block::OnStruct, Mode::Full),
    ("method_off", Block::OnMethod, Mode::Off),
    ("struct_off", Block::OnStruct, Mode::Off),
];
const FORWARDS: usize = 5;

impl Blocks {
    fn forward(&self, block: Block) -> Result<Tensor> {
        let x = black_box(&self.x);
        match block {
            Block::Plain => self.plain.forward(x),
            Block::OnMethod => self.on_method.forward(x),
            Block::OnStruct => self.on_struct.forward(x),
        }
    }

    fn echo(&self, block: Block) -> Result<Tensor> {
        let x = black_box(&self.x);
        match block {
            Block::Plain => self.plain.echo(x),
            Block::OnMethod => self.on_method.echo(x),
            Block::OnStruct => self.on_struct.echo(x),
        }
    }
}

/// What a training step does between two forward calls: a matmul of unrelated data, the size
/// of an MLP's up-projection of the same batch ([B * T, E] × [E, 4E]).
struct OtherWork {
    a: Tensor,
    b: Tensor,
}

impl OtherWork {
    fn new() -> Result<Self> {
        Ok(Self {
            a: Tensor::randn(0f32, 1f32, (B * T, E), &Device::Cpu)?,
            b: Tensor::randn(0f32, 1f32, (E, 4 * E), &Device::Cpu)?,
        })
    }

    fn run(&self) {
        black_box(black_box(&self.a).matmul(black_box(&self.b)).unwrap());
    }
}

/// `f`'s time in seconds.
fn timed(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64()
}

/// The median (robust to a neighbour's burst on a shared machine).
fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Each clauses benchmark's batches: seconds per call, in the order measured.
#[derive(Default)]
struct Records(RefCell<Vec<(&'static str, Vec<f64>)>>);

impl Records {
    fn push(&self, name: &'static str, seconds: f64) {
        let mut records = self.0.borrow_mut();
        match records.iter_mut().find(|(n, _)| *n == name) {
            Some((_, times)) => times.push(seconds),
            None => records.push((name, vec![seconds])),
        }
    }

    /// The median seconds per call of `name`, where it ran (a filter may leave it out).
    fn median(&self, name: &str) -> Option<f64> {
        let records = self.0.borrow();
        let (_, times) = records.iter().find(|(n, _)| *n == name)?;
        Some(median(times.clone()))
    }
}

/// The forward, one call at a time after the other work; only the call is timed. Criterion
/// measures one variant after the other, so a neighbour's load that comes and goes lands on
/// some only: `plain_again` shows how much, and the summary's ratios come from `interleaved`.
fn step(c: &mut Criterion, blocks: &Blocks, other: &OtherWork) {
    let mut variants = VARIANTS[..FORWARDS].to_vec();
    variants.insert(3, ("plain_again", Block::Plain, Mode::Full));
    let mut group = c.benchmark_group("struct_contract_step");
    group.sample_size(30).measurement_time(measurement_time());
    for (name, block, mode) in variants {
        set_mode(mode);
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    other.run();
                    let start = Instant::now();
                    let y = blocks.forward(block).unwrap();
                    total += start.elapsed();
                    black_box(y);
                }
                total
            })
        });
    }
    set_mode(Mode::Full);
    group.finish();
}

/// The clauses alone: `echo` returns its input, with each contract, back to back.
fn clauses(c: &mut Criterion, blocks: &Blocks, records: &Records) {
    let mut group = c.benchmark_group("struct_contract_clauses");
    group.measurement_time(measurement_time());
    for (name, block, mode) in VARIANTS {
        set_mode(mode);
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(blocks.echo(block).unwrap());
                }
                let elapsed = start.elapsed();
                records.push(name, elapsed.as_secs_f64() / iters as f64);
                elapsed
            })
        });
    }
    set_mode(Mode::Full);
    group.finish();
}

/// The first `count` variants taking turns, one call of `call` each after the other work (the
/// order rotating from one step to the next), `steps` calls of each: the times, by variant.
fn taking_turns(
    other: &OtherWork,
    count: usize,
    steps: usize,
    call: impl Fn(Block) -> Result<Tensor>,
) -> Vec<Vec<f64>> {
    let mut times = vec![Vec::with_capacity(steps); count];
    for step in 0..steps {
        for turn in 0..count {
            let k = (step + turn) % count;
            let (_, block, mode) = VARIANTS[k];
            set_mode(mode);
            other.run();
            let mut y = None;
            times[k].push(timed(|| y = Some(call(block).unwrap())));
            black_box(y);
        }
    }
    set_mode(Mode::Full);
    times
}

/// The forwards taking turns, 31 calls of each a round: each round's median of each and its
/// ratio to the plain forward's, and those ratios' range over the rounds. Returns the plain
/// forward's median over every call.
fn interleaved(blocks: &Blocks, other: &OtherWork, rounds: usize) -> f64 {
    const STEPS: usize = 31;
    println!(
        "forward, each call after a [{}, {E}] x [{E}, {}] matmul of other data, the variants \
         taking turns ({STEPS} calls of each a round; medians):",
        B * T,
        4 * E
    );
    let mut ratios = vec![Vec::new(); FORWARDS];
    let mut plain = Vec::new();
    for round in 0..rounds {
        let times = taking_turns(other, FORWARDS, STEPS, |block| blocks.forward(block));
        plain.extend(times[0].iter().copied());
        let medians: Vec<f64> = times.into_iter().map(median).collect();
        let mut line = format!("  round {round}: plain {:.0} µs", medians[0] * 1e6);
        for (k, (name, ..)) in VARIANTS[..FORWARDS].iter().enumerate().skip(1) {
            let ratio = medians[k] / medians[0];
            ratios[k].push(ratio);
            line.push_str(&format!(", {name} {ratio:.3}x"));
        }
        println!("{line}");
    }
    for (k, (name, ..)) in VARIANTS[..FORWARDS].iter().enumerate().skip(1) {
        let mut ratios = ratios[k].clone();
        ratios.sort_by(f64::total_cmp);
        println!(
            "  {name} / plain: min {:.3}, median {:.3}, max {:.3} over {rounds} rounds",
            ratios[0],
            ratios[rounds / 2],
            ratios[rounds - 1]
        );
    }
    median(plain)
}

/// The clauses' cost per call, back to back (criterion's batches) and one call after the other
/// work (the clauses reading metadata that has left the cache), and what each contract adds to
/// the unguarded forward (`plain`, seconds).
fn summary(blocks: &Blocks, other: &OtherWork, records: &Records, plain: f64, steps: usize) {
    let us = |seconds: f64| seconds * 1e6;
    let after: Vec<f64> = taking_turns(other, FORWARDS, steps, |block| blocks.echo(block))
        .into_iter()
        .map(median)
        .collect();
    println!(
        "clauses alone (a method returning its input; medians), against the plain forward's \
         {:.0} µs:",
        us(plain)
    );
    println!(
        "  {:<14} {:>13} {:>10} {:>16} {:>10}",
        "", "back to back", "added", "after the matmul", "added"
    );
    let back_to_back = |name| records.median(name);
    for (k, (name, ..)) in VARIANTS.iter().enumerate() {
        let mut line = format!("  {name:<14}");
        match (back_to_back(name), back_to_back("plain")) {
            (Some(time), Some(echo)) if k > 0 => line.push_str(&format!(
                " {:>10.3} µs {:>+7.3} µs",
                us(time),
                us(time - echo)
            )),
            (Some(time), _) => line.push_str(&format!(" {:>10.3} µs {:>10}", us(time), "")),
            (None, _) => line.push_str(&format!(" {:>13} {:>10}", "", "")),
        }
        if let Some(time) = after.get(k) {
            line.push_str(&format!(" {:>13.3} µs", us(*time)));
            if k > 0 {
                let added = time - after[0];
                line.push_str(&format!(
                    " {:>+7.3} µs, {:.4}% of the forward",
                    us(added),
                    100.0 * added / plain
                ));
            }
        }
        println!("{line}");
    }
    if let (Some(method), Some(on_struct), Some(echo)) = (
        back_to_back("method_shapes"),
        back_to_back("struct_shapes"),
        back_to_back("plain"),
    ) {
        println!(
            "  struct clauses / the same clauses on the method, shapes mode: {:.2}x back to \
             back, {:.2}x after the matmul",
            (on_struct - echo) / (method - echo),
            (after[2] - after[0]) / (after[1] - after[0])
        );
    }
}

fn main() -> Result<()> {
    // `cargo bench` passes `--bench`; a filter applies to the criterion groups only, and
    // `--test` (`cargo test --benches`) runs one short round of the loops.
    let test = std::env::args().any(|arg| arg == "--test");
    let rounds: usize = match test {
        true => 1,
        false => std::env::var("STRUCT_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(7)
            .max(1),
    };
    let blocks = Blocks::new()?;
    blocks.sanity()?;
    let other = OtherWork::new()?;
    // Warm up (page faults, thread pools).
    for _ in 0..5 {
        other.run();
        blocks.forward(Block::Plain)?;
    }
    let records = Records::default();
    let mut criterion = Criterion::default().configure_from_args();
    step(&mut criterion, &blocks, &other);
    clauses(&mut criterion, &blocks, &records);
    criterion.final_summary();
    println!("\nstruct_contract: B = {B}, T = {T}, E = {E}, H = {H}, f32 on the CPU");
    let plain = interleaved(&blocks, &other, rounds);
    summary(&blocks, &other, &records, plain, rounds * 31);
    Ok(())
}
