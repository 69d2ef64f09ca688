//! `arbitrary!`: a contract's valid inputs as a proptest strategy. Each contract's bodies return
//! `Ok(())`, so calling the function checks a draw with the guard itself; every strategy is
//! drawn 10,000 times with none rejected, and the draws must reach the rules' edges.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

// The strategy's type, for its count of rejected draws.
use candle_contracts::__private::arbitrary::Arbitrary;
use candle_contracts::{
    arbitrary, assert_contract, contract, exemptions, violations, ContractError, Rule,
};
use candle_core::{DType, Result, Tensor};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

const DRAWS: usize = 10_000;

/// Draws `count` values of `strategy` (a deterministic runner) and hands each to `check`,
/// which says whether the contracted function accepted it; returns how many it rejected. The
/// strategy constructs every rule of these contracts, so its own guard check (the safety net
/// that draws again) must never have rejected a draw either.
fn draw<V: std::fmt::Debug>(
    strategy: &Arbitrary<'_, V>,
    count: usize,
    mut check: impl FnMut(V) -> bool,
) -> usize {
    let mut runner = TestRunner::deterministic();
    let mut invalid = 0;
    for _ in 0..count {
        let value = strategy.new_tree(&mut runner).expect("a draw").current();
        if !check(value) {
            invalid += 1;
        }
    }
    assert_eq!(strategy.rejected(), 0, "draws the guard rejected");
    invalid
}

/// Every element of a tensor as an `f64`.
fn values(tensor: &Tensor) -> Vec<f64> {
    tensor
        .flatten_all()
        .and_then(|t| t.to_dtype(DType::F64))
        .and_then(|t| t.to_vec1::<f64>())
        .expect("readable")
}

// --- Cross-entropy: shared dims, a class range, an ignore index --------------------------------

#[contract(
    logits: float[N, C],
    target: u8 | u32 | i64 [N] in 0..C ignore -100,
)]
fn cross_entropy(logits: &Tensor, target: &Tensor) -> Result<()> {
    let _ = (logits, target);
    Ok(())
}

#[test]
fn cross_entropy_draws_are_valid_and_reach_both_class_edges_and_the_ignore_index() {
    let strategy = arbitrary!(cross_entropy);
    let (mut zero, mut last, mut ignored, mut dtypes, mut classes) =
        (0, 0, 0, BTreeSet::new(), BTreeSet::new());
    let invalid = draw(&strategy, DRAWS, |(logits, target)| {
        let c = logits.dims()[1];
        classes.insert(c);
        dtypes.insert(format!("{:?}/{:?}", logits.dtype(), target.dtype()));
        let v = values(&target);
        zero += usize::from(v.contains(&0.0));
        last += usize::from(v.contains(&(c as f64 - 1.0)));
        ignored += usize::from(v.contains(&-100.0));
        assert!(
            v.iter().any(|&x| x != -100.0),
            "one usable target at least: {v:?}"
        );
        assert_eq!(target.dims(), &logits.dims()[..1]);
        cross_entropy(&logits, &target).is_ok()
    });
    assert_eq!(invalid, 0);
    assert!(
        zero > DRAWS / 4 && last > DRAWS / 4,
        "0 in {zero}, C - 1 in {last} draws"
    );
    assert!(ignored > DRAWS / 20, "-100 in {ignored} draws");
    assert_eq!(classes, (1..=8).collect(), "C is drawn from 1..=8");
    // Every float dtype for the logits, every listed dtype for the targets.
    assert_eq!(dtypes.len(), 4 * 3, "{dtypes:?}");
}

#[test]
fn dims_can_be_narrowed_and_fixed() {
    let strategy = arbitrary!(cross_entropy, dims = [N in 20..=30, C = 10]);
    let mut seen = BTreeSet::new();
    let invalid = draw(&strategy, 500, |(logits, target)| {
        assert_eq!(logits.dims()[1], 10);
        seen.insert(logits.dims()[0]);
        cross_entropy(&logits, &target).is_ok()
    });
    assert_eq!(invalid, 0);
    assert_eq!(seen, (20..=30).collect());
    let strategy = arbitrary!(cross_entropy, dims = [N in 1..3]);
    let mut seen = BTreeSet::new();
    let invalid = draw(&strategy, 200, |(logits, target)| {
        seen.insert(logits.dims()[0]);
        cross_entropy(&logits, &target).is_ok()
    });
    assert_eq!(invalid, 0);
    assert_eq!(seen, [1, 2].into());
}

// --- Every relation kind --------------------------------------------------------------------

#[contract(
    x: f32[A, B],
    y: f32[B, C],
    z: f32[D],
    w: f32[E],
    A <= B,
    B < C + 4,
    C != A,
    D >= A,
    E > 1,
    D % 2 == 0,
    E == C,
)]
fn related(x: &Tensor, y: &Tensor, z: &Tensor, w: &Tensor) -> Result<()> {
    let _ = (x, y, z, w);
    Ok(())
}

#[test]
fn relations_of_every_kind_hold_in_every_draw() {
    let strategy = arbitrary!(related);
    let mut shapes = BTreeSet::new();
    let invalid = draw(&strategy, DRAWS, |(x, y, z, w)| {
        let (a, b) = x.dims2().unwrap();
        let (b2, c) = y.dims2().unwrap();
        let (d, e) = (z.dims1().unwrap(), w.dims1().unwrap());
        assert!(b == b2 && a <= b && b < c + 4 && c != a && d >= a && e > 1 && d % 2 == 0);
        assert_eq!(e, c);
        shapes.insert((a, b, c, d));
        related(&x, &y, &z, &w).is_ok()
    });
    assert_eq!(invalid, 0);
    assert!(shapes.len() > 50, "{} distinct layouts", shapes.len());
}

// --- Dim expressions and runs ---------------------------------------------------------------

#[contract(
    x: f32[*B, N, 2 * C],
    y: f32[*B, N + 1],
    z: f32[H, H / 2, L - 1, L, _],
    rest: u8[.., C] in 0..=1,
)]
fn expressions(x: &Tensor, y: &Tensor, z: &Tensor, rest: &Tensor) -> Result<()> {
    let _ = (x, y, z, rest);
    Ok(())
}

#[test]
fn dim_expressions_and_runs_are_computed_from_the_drawn_dims() {
    let strategy = arbitrary!(expressions);
    let mut ranks = BTreeSet::new();
    let invalid = draw(&strategy, DRAWS, |(x, y, z, rest)| {
        let (xd, yd) = (x.dims(), y.dims());
        let run = xd.len() - 2;
        assert_eq!(xd[..run], yd[..run], "the run is the same in x and y");
        assert_eq!(yd[run], xd[run] + 1);
        assert_eq!(xd[run + 1] % 2, 0);
        assert_eq!(*rest.dims().last().unwrap() * 2, xd[run + 1]);
        ranks.insert((run, rest.rank()));
        let _ = z;
        expressions(&x, &y, &z, &rest).is_ok()
    });
    assert_eq!(invalid, 0);
    assert_eq!(ranks.len(), 9, "runs and `..` of 0 to 2 dims: {ranks:?}");
}

// --- Sequences ------------------------------------------------------------------------------

#[contract(items: [f32[E]; N], counts: u32[N] in 0..=E)]
fn sequence(items: &[Tensor], counts: &Tensor) -> Result<()> {
    let _ = (items, counts);
    Ok(())
}

#[test]
fn a_sequence_has_its_count_and_shared_dims() {
    let strategy = arbitrary!(sequence);
    let mut lengths = BTreeSet::new();
    let invalid = draw(&strategy, DRAWS, |(items, counts)| {
        assert_eq!(items.len(), counts.dims1().unwrap());
        let e = items[0].dims1().unwrap();
        assert!(items.iter().all(|t| t.dims1().unwrap() == e));
        assert!(values(&counts).iter().all(|&v| v <= e as f64));
        lengths.insert(items.len());
        sequence(&items, &counts).is_ok()
    });
    assert_eq!(invalid, 0);
    assert_eq!(lengths, (1..=8).collect());
}

// --- Masks ----------------------------------------------------------------------------------

#[contract(
    input_ids: i64[B, T] in 0..V where attention_mask,
    attention_mask: u8[B, T] in 0..=1,
    table: f32[V, D],
    labels: u32[B] in 0..D where keep,
)]
fn masked(
    input_ids: &Tensor,
    attention_mask: &Tensor,
    table: &Tensor,
    labels: &Tensor,
    keep: &Tensor,
) -> Result<()> {
    let _ = (input_ids, attention_mask, table, labels, keep);
    Ok(())
}

#[test]
fn masked_clauses_and_a_mask_without_a_clause() {
    let strategy = arbitrary!(masked);
    let (mut zeros, mut ones) = (0, 0);
    let invalid = draw(&strategy, DRAWS, |(ids, mask, table, labels, keep)| {
        let v = table.dims()[0] as f64;
        assert!(values(&ids).iter().all(|&id| (0.0..v).contains(&id)));
        // `keep` has no clause: a 0/1 `u8` of `labels`' shape.
        assert_eq!(keep.dtype(), DType::U8);
        assert_eq!(keep.dims(), labels.dims());
        let k = values(&keep);
        zeros += usize::from(k.contains(&0.0));
        ones += usize::from(k.contains(&1.0));
        masked(&ids, &mask, &table, &labels, &keep).is_ok()
    });
    assert_eq!(invalid, 0);
    assert!(zeros > DRAWS / 4 && ones > DRAWS / 4);
}

/// The value cases of a masked clause: with the mask's element 0 set to 1, a violation the guard
/// reports; set to 0, an exemption it accepts.
#[test]
fn a_masked_clause_has_a_checked_and_an_exempt_case_per_value_change() {
    let cases = violations!(masked);
    let ranges: Vec<&str> = cases
        .iter()
        .filter(|c| c.rule() == Rule::Range)
        .map(|c| c.change())
        .collect();
    assert!(
        ranges
            .contains(&"input_ids[0, 0] = -1, one below `0..V`, where `attention_mask[0, 0]` = 1"),
        "{ranges:?}"
    );
    assert!(
        ranges
            .iter()
            .any(|c| c.starts_with("labels[0] = ") && c.ends_with("where `keep[0]` = 1")),
        "{ranges:?}"
    );
    for case in &cases {
        assert!(!case.is_exempt());
        let (ids, mask, table, labels, keep) = case.args();
        let error = masked(&ids, &mask, &table, &labels, &keep).expect_err(case.change());
        let error = ContractError::find_in(&error).expect("a contract error");
        assert!(case.is_reported_by(error), "{case:?}: {error}");
    }
    let exempt = exemptions!(masked);
    let changes: Vec<(&str, Rule, &str)> = exempt
        .iter()
        .map(|c| (c.subject(), c.rule(), c.change()))
        .collect();
    // `input_ids` one below and one above `0..V`, `labels` one above `0..D` (`-1` is no `u32`).
    assert_eq!(changes.len(), 3, "{changes:?}");
    assert!(
        changes.contains(&(
            "input_ids",
            Rule::Range,
            "input_ids[0, 0] = -1, one below `0..V`, exempt where `attention_mask[0, 0]` = 0"
        )),
        "{changes:?}"
    );
    for case in &exempt {
        assert!(case.is_exempt());
        let (ids, mask, table, labels, keep) = case.args();
        let exempting = match case.subject() {
            "input_ids" => &mask,
            _ => &keep,
        };
        assert_eq!(values(exempting)[0], 0.0, "{case:?}");
        masked(&ids, &mask, &table, &labels, &keep).unwrap_or_else(|e| panic!("{case:?}: {e}"));
    }
    assert_contract!(masked, cases = 16);
}

#[contract(target: i64[N] in 0..C ignore -100 where keep, logits: f32[N, C])]
fn masked_ignoring(target: &Tensor, keep: &Tensor, logits: &Tensor) -> Result<()> {
    let _ = (target, keep, logits);
    Ok(())
}

/// An ignored value outside the range is an exemption; neither kind is made where it would
/// leave no checked element that is not ignored (the guard reports `AllIgnored` there).
#[test]
fn exemptions_keep_a_usable_element_where_the_clause_needs_one() {
    let one: Vec<String> = exemptions!(masked_ignoring, dims = [N = 1])
        .iter()
        .map(|c| c.change().to_string())
        .collect();
    assert_eq!(one, Vec::<String>::new());
    let three = exemptions!(masked_ignoring, dims = [N = 3]);
    let mut changes: Vec<&str> = three.iter().map(|c| c.change()).collect();
    changes.sort();
    assert_eq!(changes.len(), 3, "{changes:?}");
    assert!(
        changes.contains(&"target[0] = -100, ignored, where `keep[0]` = 1"),
        "{changes:?}"
    );
    for case in &three {
        let (target, keep, logits) = case.args();
        masked_ignoring(&target, &keep, &logits).unwrap_or_else(|e| panic!("{case:?}: {e}"));
    }
    // Without a mask: `-100` alone in a batch of one is all ignored, not exempt.
    assert!(exemptions!(ce_loss, dims = [N = 1]).is_empty());
    let ce = exemptions!(ce_loss, dims = [N = 2]);
    let changes: Vec<&str> = ce.iter().map(|c| c.change()).collect();
    // (The draw is a `u32`, which cannot hold -100.)
    assert_eq!(changes, ["target[0] = -100, ignored (as i64)"]);
    assert_contract!(masked_ignoring, cases = 16, dims = [N = 3]);
}

// --- ignore and allow_all -------------------------------------------------------------------

#[contract(logits: f32[N, C], target: i64[N] in 0..C ignore -100 | MAX allow_all)]
fn allow_all(logits: &Tensor, target: &Tensor) -> Result<()> {
    let _ = (logits, target);
    Ok(())
}

#[test]
fn allow_all_draws_all_ignored_targets_now_and_then() {
    let strategy = arbitrary!(allow_all);
    let (mut all, mut minus_100, mut max) = (0, 0, 0);
    let invalid = draw(&strategy, DRAWS, |(logits, target)| {
        let v = target.to_vec1::<i64>().unwrap();
        all += usize::from(v.iter().all(|&x| x == -100 || x == i64::MAX));
        minus_100 += usize::from(v.contains(&-100));
        max += usize::from(v.contains(&i64::MAX));
        allow_all(&logits, &target).is_ok()
    });
    assert_eq!(invalid, 0);
    assert!(all > DRAWS / 20, "{all} all-ignored draws");
    assert!(
        minus_100 > DRAWS / 10 && max > DRAWS / 10,
        "{minus_100} / {max}"
    );
}

// --- finite and integral, a given parameter ---------------------------------------------------

#[contract(
    x: float[N] finite,
    labels: float[N] in 0.0..{num_classes as f64} integral,
    scores: f32[N] in -1.5..=2.5,
)]
fn numbers(x: &Tensor, labels: &Tensor, scores: &Tensor, num_classes: usize) -> Result<()> {
    let _ = (x, labels, scores, num_classes);
    Ok(())
}

#[test]
fn finite_integral_and_float_edges() {
    let strategy = arbitrary!(numbers, num_classes = 4);
    let (mut lo, mut hi, mut label_edges) = (0, 0, BTreeSet::new());
    let invalid = draw(&strategy, DRAWS, |(x, labels, scores)| {
        assert!(values(&x).iter().all(|v| v.is_finite()));
        for label in values(&labels) {
            assert!(
                label.fract() == 0.0 && (0.0..4.0).contains(&label),
                "{label}"
            );
            label_edges.insert(label as i64);
        }
        let s = values(&scores);
        lo += usize::from(s.contains(&-1.5));
        hi += usize::from(s.contains(&2.5));
        numbers(&x, &labels, &scores, 4).is_ok()
    });
    assert_eq!(invalid, 0);
    assert_eq!(label_edges, (0..4).collect());
    assert!(lo > DRAWS / 10 && hi > DRAWS / 10, "{lo} / {hi}");
}

#[contract(target: u32[N] in 0..k)]
fn below_k(target: &Tensor, k: usize) -> Result<()> {
    let _ = (target, k);
    Ok(())
}

#[test]
fn a_given_parameter_bounds_the_values() {
    let strategy = arbitrary!(below_k, k = 3);
    let mut seen = BTreeSet::new();
    let invalid = draw(&strategy, 2000, |(target,)| {
        seen.extend(values(&target).into_iter().map(|v| v as i64));
        below_k(&target, 3).is_ok()
    });
    assert_eq!(invalid, 0);
    assert_eq!(seen, [0, 1, 2].into());
}

#[contract(x: f32[T, D], positions: u32[T] in 0..{max_len}, T <= max_len, D % heads == 0)]
fn positions(x: &Tensor, positions: &Tensor, max_len: usize, heads: u32) -> Result<()> {
    let _ = (x, positions, max_len, heads);
    Ok(())
}

#[test]
fn given_parameters_in_relations_and_braced_bounds() {
    let strategy = arbitrary!(positions, heads = 2, max_len = 3);
    let (mut lengths, mut seen) = (BTreeSet::new(), BTreeSet::new());
    let invalid = draw(&strategy, 2000, |(x, p)| {
        let (t, d) = x.dims2().unwrap();
        assert!(t <= 3 && d % 2 == 0, "{t} {d}");
        lengths.insert(t);
        seen.extend(values(&p).into_iter().map(|v| v as i64));
        positions(&x, &p, 3, 2).is_ok()
    });
    assert_eq!(invalid, 0);
    assert_eq!(lengths, [1, 2, 3].into());
    assert_eq!(seen, [0, 1, 2].into());
}

mod layers {
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};

    pub struct Norm;

    impl Norm {
        /// An associated function without a receiver: drawn like a free one.
        #[contract(x: bf16 | f16 [N, D], weight: bf16 | f16 [D] in 0.5..=2.0)]
        pub fn apply(x: &Tensor, weight: &Tensor) -> Result<()> {
            let _ = (x, weight);
            Ok(())
        }
    }

    #[contract(x: f32[N], return: f32[N])]
    pub fn identity(x: Tensor) -> Result<Tensor> {
        Ok(x)
    }
}

#[test]
fn module_paths_associated_functions_and_owned_tensors() {
    let strategy = arbitrary!(layers::Norm::apply);
    let mut dtypes = BTreeSet::new();
    let invalid = draw(&strategy, 2000, |(x, weight)| {
        dtypes.insert(format!("{:?}", weight.dtype()));
        assert!(values(&weight).iter().all(|w| (0.5..=2.0).contains(w)));
        layers::Norm::apply(&x, &weight).is_ok()
    });
    assert_eq!(invalid, 0);
    assert_eq!(dtypes.len(), 2, "{dtypes:?}");
    let strategy = arbitrary!(layers::identity);
    assert_eq!(draw(&strategy, 200, |(x,)| layers::identity(x).is_ok()), 0);
}

// --- A derived subject ----------------------------------------------------------------------

#[contract(
    target: f32[N, C] in 0.0..=1.0,
    {target.sum(1)?}: f32[N] in 0.999..=1.001,
)]
fn distributions(target: &Tensor) -> Result<()> {
    let _ = target;
    Ok(())
}

#[test]
fn a_derived_row_sum_is_met_by_construction() {
    let strategy = arbitrary!(distributions);
    let invalid = draw(&strategy, DRAWS, |(target,)| {
        let sums = target.sum(1).and_then(|s| s.to_vec1::<f32>()).unwrap();
        assert!(sums.iter().all(|s| (0.999..=1.001).contains(s)), "{sums:?}");
        distributions(&target).is_ok()
    });
    assert_eq!(invalid, 0);
}

#[contract(
    x: f32[N] in 0.0..=1.0,
    {x.mean_all()?}: f32[] in 0.25..=0.75,
)]
fn balanced(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

#[test]
fn a_derived_subject_it_cannot_construct_is_met_by_drawing_again() {
    let strategy = arbitrary!(balanced);
    let mut runner = TestRunner::deterministic();
    let mut invalid = 0;
    for _ in 0..2000 {
        let (x,) = strategy.new_tree(&mut runner).expect("a draw").current();
        let mean = x.mean_all().and_then(|m| m.to_scalar::<f32>()).unwrap();
        assert!((0.25..=0.75).contains(&mean), "{mean}");
        invalid += usize::from(balanced(&x).is_err());
    }
    assert_eq!(invalid, 0);
    assert!(
        strategy.rejected() > 0,
        "some draws were rejected and drawn again"
    );
}

// --- Option<&Tensor> ------------------------------------------------------------------------

#[contract(x: f32[N, C], bias: f32[C])]
fn with_bias(x: &Tensor, bias: Option<&Tensor>) -> Result<()> {
    let _ = (x, bias);
    Ok(())
}

#[test]
fn an_optional_tensor_is_drawn_present_and_absent() {
    let strategy = arbitrary!(with_bias);
    let (mut some, mut none) = (0, 0);
    let invalid = draw(&strategy, DRAWS, |(x, bias): (Tensor, Option<Tensor>)| {
        match &bias {
            Some(bias) => {
                some += 1;
                assert_eq!(bias.dims1().unwrap(), x.dims()[1]);
            }
            None => none += 1,
        }
        with_bias(&x, bias.as_ref()).is_ok()
    });
    assert_eq!(invalid, 0);
    assert!(
        some > DRAWS / 2 && none > DRAWS / 10,
        "{some} present, {none} absent"
    );
}

// --- A method: the receiver's fields bind dims ----------------------------------------------

struct Embedding {
    weight: Tensor,
}

impl Embedding {
    #[contract(self.weight: f32[V, D], ids: u32[N] in 0..V, scale: f32[D])]
    fn forward(&self, ids: &Tensor, scale: &Tensor) -> Result<()> {
        let _ = (ids, scale);
        Ok(())
    }
}

#[test]
fn a_method_reads_its_dims_from_the_receiver() {
    let weight = Tensor::zeros((13, 5), DType::F32, &candle_core::Device::Cpu).unwrap();
    let embedding = Embedding { weight };
    let strategy = arbitrary!(Embedding::forward, &embedding);
    let mut top = 0;
    let invalid = draw(&strategy, 2000, |(ids, scale)| {
        assert_eq!(scale.dims1().unwrap(), 5);
        top += usize::from(values(&ids).contains(&12.0));
        embedding.forward(&ids, &scale).is_ok()
    });
    assert_eq!(invalid, 0);
    assert!(top > 200, "V - 1 = 12 in {top} draws");
}

// --- Shrinking ------------------------------------------------------------------------------

#[contract(x: f32[N], return: f32[N])]
fn column(x: &Tensor) -> Result<Tensor> {
    if x.dims1()? > 1 {
        x.unsqueeze(1)
    } else {
        Ok(x.clone())
    }
}

#[test]
fn a_failing_case_shrinks_to_the_smallest_failing_dim() {
    let mut runner = TestRunner::new(Config {
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&arbitrary!(column), |(x,)| {
        column(&x).map_err(|error| TestCaseError::fail(error.to_string()))?;
        Ok(())
    });
    match result {
        Err(TestError::Fail(reason, (x,))) => {
            assert!(reason.to_string().contains("return"), "{reason}");
            assert_eq!(x.dims(), [2], "the shrunk counterexample");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

// --- A contract no draw meets ---------------------------------------------------------------

#[contract(x: f32[N], N > 8)]
fn large(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

#[test]
#[should_panic(expected = "N > 8")]
fn an_unsatisfiable_relation_panics_naming_it() {
    let strategy = arbitrary!(large, dims = [N in 1..=8]);
    let _ = strategy.new_tree(&mut TestRunner::deterministic());
}

#[test]
fn an_unsatisfiable_relation_is_reported_within_seconds() {
    let start = Instant::now();
    let panicked = std::panic::catch_unwind(|| {
        let strategy = arbitrary!(large, dims = [N in 1..=8]);
        let _ = strategy.new_tree(&mut TestRunner::deterministic());
    });
    assert!(panicked.is_err());
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    // Widened, the same contract is met.
    let strategy = arbitrary!(large, dims = [N in 1..=12]);
    assert_eq!(draw(&strategy, 100, |(x,)| large(&x).is_ok()), 0);
}

#[contract(x: f8e4m3[N], y: f32 | f8e4m3 [N])]
fn eight_bit(x: &Tensor, y: &Tensor) -> Result<()> {
    let _ = (x, y);
    Ok(())
}

#[test]
#[should_panic(expected = "the clause `x: f8e4m3[N]` allows only dtypes candle cannot draw")]
fn a_clause_of_only_f8_dtypes_panics_naming_it() {
    let _ = arbitrary!(eight_bit);
}

#[test]
#[should_panic(expected = "no draw meets the limit of 1048576 elements")]
fn draws_too_large_to_hold_are_refused() {
    let strategy = arbitrary!(cross_entropy, dims = [N = 2000, C = 1000]);
    let _ = strategy.new_tree(&mut TestRunner::deterministic());
}

// --- Mistakes are the strategy's error ------------------------------------------------------

fn not_contracted(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

#[test]
fn mistakes_abort_the_run_with_a_reason() {
    let reason =
        |strategy: &dyn Fn(&mut TestRunner) -> String| strategy(&mut TestRunner::deterministic());
    let missing = reason(&|runner| {
        arbitrary!(below_k)
            .new_tree(runner)
            .unwrap_err()
            .to_string()
    });
    assert!(missing.contains("`k` is a `usize` parameter"), "{missing}");
    let unknown = reason(&|runner| {
        arbitrary!(below_k, k = 3, j = 4)
            .new_tree(runner)
            .unwrap_err()
            .to_string()
    });
    assert!(
        unknown.contains("no parameter `j`; its parameters are target, k"),
        "{unknown}"
    );
    let dim = reason(&|runner| {
        arbitrary!(below_k, k = 3, dims = [M = 2])
            .new_tree(runner)
            .unwrap_err()
            .to_string()
    });
    assert!(dim.contains("`M`, which is no named dim"), "{dim}");
    let negative = reason(&|runner| {
        arbitrary!(below_k, k = -3)
            .new_tree(runner)
            .unwrap_err()
            .to_string()
    });
    assert!(
        negative.contains("`k` is a `usize` parameter"),
        "{negative}"
    );
    let plain = reason(&|runner| {
        arbitrary!(not_contracted)
            .new_tree(runner)
            .unwrap_err()
            .to_string()
    });
    assert!(
        plain.contains("without reaching a contract's guard"),
        "{plain}"
    );
    let small = Embedding {
        weight: Tensor::zeros(3, DType::F32, &candle_core::Device::Cpu).unwrap(),
    };
    let receiver = reason(&|runner| {
        arbitrary!(Embedding::forward, &small)
            .new_tree(runner)
            .unwrap_err()
            .to_string()
    });
    assert!(
        receiver.contains("the receiver or a given value breaks the contract"),
        "{receiver}"
    );
}

// --- Draws per second -----------------------------------------------------------------------

#[contract(
    q: f32[B, H, T, D],
    k: f32[B, H, S, D],
    v: f32[B, H, S, D],
    mask: u8[T, S] in 0..=1,
)]
fn attention(q: &Tensor, k: &Tensor, v: &Tensor, mask: &Tensor) -> Result<()> {
    let _ = (q, k, v, mask);
    Ok(())
}

fn rate<S: Strategy>(strategy: &S) -> f64 {
    let mut runner = TestRunner::deterministic();
    let start = Instant::now();
    let mut count = 0;
    while start.elapsed() < Duration::from_secs(2) {
        let _ = strategy.new_tree(&mut runner).expect("a draw").current();
        count += 1;
    }
    count as f64 / start.elapsed().as_secs_f64()
}

#[test]
#[ignore = "a measurement: cargo test --release --features arbitrary --test arbitrary -- --ignored --nocapture"]
fn draws_per_second() {
    for run in 1..=3 {
        let loss = rate(&arbitrary!(cross_entropy));
        let attention = rate(&arbitrary!(attention));
        println!("run {run}: cross-entropy {loss:.0} draws/s, attention {attention:.0} draws/s");
    }
}

// --- assert_contract!: the contract as a property test --------------------------------------

/// A planted bug: for `N > 1` the body returns `[N, 1]` where the contract says `[N]`.
#[test]
#[should_panic(expected = "N = 2")]
fn assert_contract_fails_a_planted_bug_with_the_shrunk_dims() {
    assert_contract!(column);
}

#[test]
fn assert_contract_reports_the_shrunk_input_in_the_contracts_terms_and_the_error() {
    let panic = std::panic::catch_unwind(|| assert_contract!(column, cases = 64))
        .expect_err("the planted bug fails");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.starts_with("assert_contract!(column) failed on a valid input, shrunk to N = 2:"),
        "{message}"
    );
    assert!(message.contains("\n  x: f32[2] = ["), "{message}");
    assert!(message.contains("it returned an error:"), "{message}");
    assert!(message.contains("by its return value"), "{message}");
    assert!(message.contains("return"), "{message}");
}

#[contract(x: f32[N], return: f32[N])]
fn column_fixed(x: &Tensor) -> Result<Tensor> {
    x.affine(2.0, 1.0)
}

#[contract(x: f32[N, D], return: f32[N])]
fn row_sums(x: &Tensor) -> Result<Tensor> {
    x.sum(1)
}

#[contract(p: f32[N] in 0.0..=1.0 finite, w: bf16 | f16 [N] in -2.0..2.0 finite integral)]
fn bounded_and_finite(p: &Tensor, w: &Tensor) -> Result<()> {
    let _ = (p, w);
    Ok(())
}

#[test]
fn assert_contract_passes_correct_functions() {
    assert_contract!(bounded_and_finite, cases = 32);
    assert_contract!(column_fixed);
    assert_contract!(row_sums, cases = 64);
    assert_contract!(cross_entropy, cases = 64);
    assert_contract!(attention, cases = 32);
    assert_contract!(numbers, num_classes = 4, cases = 32);
    assert_contract!(expressions, cases = 32);
    assert_contract!(positions, max_len = 16, heads = 2, cases = 32);
    let weight = Tensor::zeros((13, 5), DType::F32, &candle_core::Device::Cpu).unwrap();
    let embedding = Embedding { weight };
    assert_contract!(Embedding::forward, &embedding, cases = 32);
    // `self.weight` binds `V` and `D` first: `scale`'s `D` is checked against it.
    let changes: Vec<String> = violations!(Embedding::forward, &embedding)
        .iter()
        .map(|case| format!("{:?} {}", case.rule(), case.change()))
        .collect();
    assert_eq!(
        changes,
        [
            "DType ids as f32",
            "Rank ids with a trailing dim of 1",
            // No -1: `ids` is a `u32` only.
            "Range ids[0] = 13, one above `0..V`",
            "DType scale as i64",
            "Rank scale with a trailing dim of 1",
            "Shape scale dim 0 = 6, one more than D",
        ]
    );
    // Relations, masks, sequences, derived subjects, `allow_all`, optional tensors and given
    // bounds: their valid draws pass, and each of their violation cases is reported.
    assert_contract!(related, cases = 32);
    assert_contract!(masked, cases = 32);
    assert_contract!(sequence, cases = 32);
    let counts: Vec<String> = violations!(sequence)
        .iter()
        .map(|case| case.change().to_string())
        .collect();
    assert!(
        counts.contains(&"counts dim 0 = 2, one more than N".to_string()),
        "the count of `items` binds `N`: {counts:?}"
    );
    assert_contract!(distributions, cases = 32);
    assert_contract!(balanced, cases = 32);
    assert_contract!(allow_all, cases = 32);
    assert_contract!(with_bias, cases = 32);
    assert_contract!(below_k, k = 5, cases = 32);
}

#[contract(x: f32[N])]
fn panics_on_two(x: &Tensor) -> Result<()> {
    assert!(x.dims1()? < 2, "two or more elements");
    Ok(())
}

#[test]
fn assert_contract_reports_a_panicking_body() {
    let panic = std::panic::catch_unwind(|| assert_contract!(panics_on_two, cases = 64))
        .expect_err("the body panics");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("shrunk to N = 2:"), "{message}");
    assert!(
        message.contains("it panicked:\ntwo or more elements"),
        "{message}"
    );
}

// --- violations!: inputs breaking one rule each ---------------------------------------------

/// Each case as `(clause, rule)`.
fn listed<V>(cases: &[candle_contracts::ViolationCase<V>]) -> Vec<(String, Rule)> {
    cases
        .iter()
        .map(|case| (case.clause().to_string(), case.rule()))
        .collect()
}

#[contract(
    logits: f32[N, C] finite,
    target: u32 | i64 [N] in 0..C ignore -100,
    return: f32[],
)]
fn ce_loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    // `LossOptions::default()` ignores -100, as the contract does.
    candle_contracts::nn::cross_entropy_with(
        logits,
        target,
        candle_contracts::nn::LossOptions::default(),
    )
}

#[test]
fn the_cross_entropy_cases_each_break_one_rule_and_its_guard_reports_it() {
    let cases = violations!(ce_loss);
    let logits = "logits: f32[N, C] finite".to_string();
    let target = "target: u32 | i64 [N] in 0..C ignore -100".to_string();
    assert_eq!(
        listed(&cases),
        [
            (logits.clone(), Rule::DType),
            (logits.clone(), Rule::Rank),
            (logits.clone(), Rule::Finite),
            (logits.clone(), Rule::Finite),
            (logits.clone(), Rule::Finite),
            (target.clone(), Rule::DType),
            (target.clone(), Rule::Rank),
            (target.clone(), Rule::Shape),
            (target.clone(), Rule::Range),
            (target.clone(), Rule::Range),
            (target.clone(), Rule::AllIgnored),
        ]
    );
    let changes: Vec<&str> = cases.iter().map(|case| case.change()).collect();
    assert!(
        changes.contains(&"target[0] = -1, one below `0..C` (as i64)"),
        "{changes:?}"
    );
    for case in &cases {
        let (logits, target) = case.args();
        let error = ce_loss(&logits, &target).expect_err(case.change());
        let error = ContractError::find_in(&error).expect("a contract error");
        assert!(case.is_reported_by(error), "{case:?}: {error}");
        assert!(!error.body_ran(), "{case:?}");
    }
    assert_contract!(ce_loss, cases = 64);
}

#[test]
fn the_attention_cases_each_break_one_rule_and_its_guard_reports_it() {
    let cases = violations!(attention);
    let (q, k, v, mask) = (
        "q: f32[B, H, T, D]",
        "k: f32[B, H, S, D]",
        "v: f32[B, H, S, D]",
        "mask: u8[T, S] in 0..=1",
    );
    let expected: Vec<(String, Rule)> = [
        (q, Rule::DType),
        (q, Rule::Rank),
        (k, Rule::DType),
        (k, Rule::Rank),
        (k, Rule::Shape), // B
        (k, Rule::Shape), // H
        (k, Rule::Shape), // D
        (v, Rule::DType),
        (v, Rule::Rank),
        (v, Rule::Shape), // B
        (v, Rule::Shape), // H
        (v, Rule::Shape), // S
        (v, Rule::Shape), // D
        (mask, Rule::DType),
        (mask, Rule::Rank),
        (mask, Rule::Shape), // T
        (mask, Rule::Shape), // S
        (mask, Rule::Range), // 2
    ]
    .into_iter()
    .map(|(clause, rule)| (clause.to_string(), rule))
    .collect();
    assert_eq!(listed(&cases), expected);
    let shapes: Vec<&str> = cases
        .iter()
        .filter(|c| c.rule() == Rule::Shape)
        .map(|c| c.change())
        .collect();
    assert!(
        shapes.contains(&"v dim 2 = 2, one more than S"),
        "{shapes:?}"
    );
    for case in &cases {
        let (q, k, v, mask) = case.args();
        let error = attention(&q, &k, &v, &mask).expect_err(case.change());
        let error = ContractError::find_in(&error).expect("a contract error");
        assert!(case.is_reported_by(error), "{case:?}: {error}");
    }
}

/// `ce_loss` with its class range removed: its guard lets a class id past `C` through.
#[contract(
    logits: f32[N, C] finite,
    target: u32 | i64 [N] ignore -100,
    return: f32[],
)]
fn ce_loss_loosened(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    let _ = target;
    logits.sum_all()
}

#[test]
fn a_loosened_guard_misses_exactly_the_cases_of_the_removed_bound() {
    let cases = violations!(ce_loss);
    let missed: Vec<String> = cases
        .iter()
        .filter(|case| {
            let (logits, target) = case.args();
            match ce_loss_loosened(&logits, &target) {
                Ok(_) => true,
                Err(error) => {
                    !ContractError::find_in(&error).is_some_and(|e| case.is_reported_by(e))
                }
            }
        })
        .map(|case| format!("{:?} {}", case.rule(), case.change()))
        .collect();
    assert_eq!(
        missed,
        [
            "Range target[0] = -1, one below `0..C` (as i64)",
            "Range target[0] = 1, one above `0..C`",
        ]
    );
}

// --- candle_contracts::nn, tested by contracts ----------------------------------------------
//
// Each guarded op wrapped in a contract that states what it promises (`return`): the op must
// accept every input the contract draws, return that, and its guard (called through the
// wrapper) stands behind the wrapper's own.

#[contract(
    logits: f32[N, C] finite,
    target: u32 | i64 [N] in 0..C,
    return: f32[] finite,
)]
fn nn_cross_entropy(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    candle_contracts::nn::cross_entropy(logits, target)
}

#[contract(
    log_probs: f32[N, C] in ..=0.0,
    target: u32 | i64 [N] in 0..C,
    return: f32[] in 0.0.. finite,
)]
fn nn_nll(log_probs: &Tensor, target: &Tensor) -> Result<Tensor> {
    candle_contracts::nn::nll(log_probs, target)
}

#[contract(
    probabilities: f32[*S] in 0.0..=1.0,
    target: f32[*S] in 0.0..=1.0,
    return: f32[] finite,
)]
fn nn_binary_cross_entropy(probabilities: &Tensor, target: &Tensor) -> Result<Tensor> {
    candle_contracts::nn::binary_cross_entropy(probabilities, target)
}

#[contract(ids: u32 | i64 [*B] in 0..V, table: f32[V, D], return: f32[*B, D])]
fn nn_embedding(ids: &Tensor, table: &Tensor) -> Result<Tensor> {
    candle_contracts::nn::embedding(ids, table)
}

#[contract(source: f32[S, D], ids: u32 | i64 [I] in 0..S, return: f32[I, D])]
fn nn_index_select(source: &Tensor, ids: &Tensor) -> Result<Tensor> {
    candle_contracts::nn::index_select(source, ids, 0)
}

#[test]
fn guarded_ops_keep_their_contracts_on_every_valid_input() {
    assert_contract!(nn_cross_entropy, cases = 64);
    assert_contract!(nn_nll, cases = 64);
    assert_contract!(nn_binary_cross_entropy, cases = 64);
    assert_contract!(nn_embedding, cases = 64);
    assert_contract!(nn_index_select, cases = 64);
}

/// The op's own guard, without the wrapper's: the wrapper's range cases reach the op, which
/// must report each on the same argument.
#[test]
fn guarded_ops_report_the_range_cases_of_their_contract() {
    let mut checked = Vec::new();
    for case in violations!(nn_embedding) {
        if case.rule() != Rule::Range {
            continue;
        }
        let (ids, table) = case.args();
        let error = candle_contracts::nn::embedding(&ids, &table).expect_err(case.change());
        let error = ContractError::find_in(&error).expect("a contract error");
        assert!(case.is_reported_by(error), "{case:?}: {error}");
        checked.push(case.change().to_string());
    }
    for case in violations!(nn_cross_entropy) {
        if !matches!(case.rule(), Rule::Range | Rule::Finite) {
            continue;
        }
        let (logits, target) = case.args();
        let error = candle_contracts::nn::cross_entropy(&logits, &target).expect_err(case.change());
        let error = ContractError::find_in(&error).expect("a contract error");
        assert!(case.is_reported_by(error), "{case:?}: {error}");
        checked.push(case.change().to_string());
    }
    assert_eq!(
        checked,
        [
            "ids = -1, one below `0..V` (as i64)",
            "ids = 1, one above `0..V`",
            "logits[0, 0] = NaN",
            "logits[0, 0] = inf",
            "logits[0, 0] = -inf",
            "target[0] = -1, one below `0..C` (as i64)",
            "target[0] = 1, one above `0..C`",
        ]
    );
}

/// An `Option` tensor is present in the draw the cases start from: its clause has cases too,
/// so a loosened clause on it is caught.
#[test]
fn an_optional_tensors_clause_has_its_cases() {
    let cases = violations!(with_bias);
    let bias = "bias: f32[C]".to_string();
    let on_bias: Vec<Rule> = cases
        .iter()
        .filter(|case| case.clause() == bias)
        .map(|case| case.rule())
        .collect();
    assert_eq!(on_bias, [Rule::DType, Rule::Rank, Rule::Shape], "{cases:?}");
    for case in cases.iter().filter(|case| case.clause() == bias) {
        let (x, bias) = case.args();
        let error = with_bias(&x, bias.as_ref()).expect_err(case.change());
        let error = ContractError::find_in(&error).expect("a contract error");
        assert!(case.is_reported_by(error), "{case:?}: {error}");
    }
}

// --- What a breaker found: each contract here made a case or a draw wrong before -----------

#[contract(
    input_ids: u32[B, T] in 0..V where attention_mask,
    labels: i64[B, T] in 0..V ignore -100 where attention_mask,
    attention_mask: u8[B, T] in 0..=1,
    table: f32[V, E],
)]
fn causal_lm(
    input_ids: &Tensor,
    labels: &Tensor,
    attention_mask: &Tensor,
    table: &Tensor,
) -> Result<()> {
    let _ = (input_ids, labels, attention_mask, table);
    Ok(())
}

#[contract(ids: u32[B, T] in 0..V where m, m: f32[B, T] in 0.0..=1.0, {m.sum(1)?}: f32[B] in 0.5..=1.0, table: f32[V, E])]
fn derived_over_the_mask(ids: &Tensor, m: &Tensor, table: &Tensor) -> Result<()> {
    let _ = (ids, m, table);
    Ok(())
}

#[contract(x: f32[N, C] in 0.0..=1.0 where m, m: u8[N, C] in 0..=1, {x.sum(1)?}: f32[N] in 0.0..=100.0)]
fn derived_over_the_subject(x: &Tensor, m: &Tensor) -> Result<()> {
    let _ = (x, m);
    Ok(())
}

/// Padding ids are 0: the ids are their own mask.
#[contract(ids: i64[N] in 1..V where ids, table: f32[V, E])]
fn masked_by_itself(ids: &Tensor, table: &Tensor) -> Result<()> {
    let _ = (ids, table);
    Ok(())
}

#[contract({x.sum(1)?}: f32[N], x: f32[N, D])]
fn derived_written_first(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

#[contract(x: f32[N, C], {x.sum(1)?}: f32[M], y: f32[M])]
fn derived_binds_after_the_arguments(x: &Tensor, y: &Tensor) -> Result<()> {
    let _ = (x, y);
    Ok(())
}

#[contract(x: u32[N, D] in 0..10, {x.sum(1)?}: u32[N] in 0..100)]
fn integer_row_sums(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

#[contract(labels: i64[H, W] in 0..C where valid, valid: u8[H, W] in 0 | 255, logits: f32[C, H, W])]
fn mask_of_255(labels: &Tensor, valid: &Tensor, logits: &Tensor) -> Result<()> {
    let _ = (labels, valid, logits);
    Ok(())
}

#[contract(t: i64[N] in 0..C ignore 0, x: f32[N, C])]
fn ignores_a_value_in_its_range(t: &Tensor, x: &Tensor) -> Result<()> {
    let _ = (t, x);
    Ok(())
}

#[contract(a: u32[B, T] in 0..V where m, b: u32[T] in 0..V where m, table: f32[V, E])]
fn one_mask_two_ranks(a: &Tensor, b: &Tensor, m: &Tensor, table: &Tensor) -> Result<()> {
    let _ = (a, b, m, table);
    Ok(())
}

#[test]
fn exemptions_keep_every_other_rule() {
    // The mask at 0 for `input_ids` leaves `labels`, which shares it, no checked element.
    assert_contract!(causal_lm, cases = 16);
    // A derived subject is never masked: a change it reads is no exemption.
    assert!(exemptions!(derived_over_the_mask).is_empty());
    assert!(exemptions!(derived_over_the_subject).is_empty());
    assert_contract!(derived_over_the_mask, cases = 16);
    assert_contract!(derived_over_the_subject, cases = 16);
}

#[test]
fn a_clause_masked_by_itself_is_broken_only_by_non_zero_values() {
    let cases = violations!(masked_by_itself, dims = [V = 5]);
    let changes: Vec<&str> = cases
        .iter()
        .filter(|c| c.rule() == Rule::Range)
        .map(|c| c.change())
        .collect();
    assert_eq!(changes, ["ids[0] = 5, one above `1..V`"]);
    let exempt: Vec<String> = exemptions!(masked_by_itself, dims = [V = 5, N = 2])
        .iter()
        .map(|c| c.change().to_string())
        .collect();
    assert_eq!(exempt, ["ids[0] = 0, one below `1..V`, its own mask"]);
    assert_contract!(masked_by_itself, cases = 16, dims = [V = 5]);
}

#[test]
fn derived_subjects_bind_their_dims_after_the_arguments() {
    assert_contract!(derived_written_first, cases = 16);
    assert_contract!(derived_binds_after_the_arguments, cases = 16);
    let blamed: Vec<String> = violations!(derived_binds_after_the_arguments)
        .iter()
        .filter(|c| c.rule() == Rule::Shape)
        .map(|c| c.change().to_string())
        .collect();
    assert!(!blamed.iter().any(|c| c.starts_with("y ")), "{blamed:?}");
}

#[test]
fn a_derived_sum_over_an_integer_clause_is_drawn() {
    let strategy = arbitrary!(integer_row_sums);
    let mut runner = TestRunner::deterministic();
    for _ in 0..64 {
        let (x,) = strategy.new_tree(&mut runner).expect("a draw").current();
        integer_row_sums(&x).expect("valid");
    }
}

#[test]
fn a_mask_that_allows_only_0_and_255_is_set_to_255() {
    let changes: Vec<String> = violations!(mask_of_255)
        .iter()
        .filter(|c| c.rule() == Rule::Range)
        .map(|c| c.change().to_string())
        .collect();
    assert!(
        changes
            .iter()
            .any(|c| c.ends_with("where `valid[0, 0]` = 255")),
        "{changes:?}"
    );
    assert_contract!(mask_of_255, cases = 16);
}

#[test]
fn draws_keep_a_usable_value_outside_an_ignored_one_and_share_a_mask_across_ranks() {
    // (With `C = 1` the only value is the ignored one: such layouts are drawn again.)
    let strategy = arbitrary!(ignores_a_value_in_its_range, dims = [C in 2..=8]);
    assert_eq!(
        draw(&strategy, 2000, |(t, x)| ignores_a_value_in_its_range(
            &t, &x
        )
        .is_ok()),
        0
    );
    let strategy = arbitrary!(one_mask_two_ranks);
    assert_eq!(
        draw(&strategy, 500, |(a, b, m, table)| one_mask_two_ranks(
            &a, &b, &m, &table
        )
        .is_ok()),
        0
    );
}

/// An embedding that does not zero its padding ids: the contract exempts them, so the body
/// must take them.
#[contract(
    input_ids: i64[B, T] in 0..V where attention_mask,
    attention_mask: u8[B, T] in 0..=1,
    table: f32[V, E],
    return: f32[B, T, E],
)]
fn embed_without_zeroing_padding(
    input_ids: &Tensor,
    attention_mask: &Tensor,
    table: &Tensor,
) -> Result<Tensor> {
    let _ = attention_mask;
    let (b, t) = input_ids.dims2()?;
    table
        .index_select(&input_ids.flatten_all()?, 0)?
        .reshape((b, t, table.dim(1)?))
}

#[test]
fn assert_contract_runs_the_body_on_exempt_inputs() {
    let failure = std::panic::catch_unwind(|| {
        assert_contract!(embed_without_zeroing_padding, cases = 16);
    })
    .expect_err("the body fails on an exempt padding id");
    let message = failure
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains("exempt inputs"), "{message}");
    assert!(
        message.contains("exempt where `attention_mask[0, 0]` = 0"),
        "{message}"
    );
    // The input, as a failing draw shows it.
    assert!(
        message.contains("\n  attention_mask: u8[1, 1] = [0]"),
        "{message}"
    );
}

#[contract(x: f32[N] in 0.0..=1.0)]
fn strict_probabilities(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

/// A loosened contract whose body calls a strict contracted function.
#[contract(x: f32[N])]
fn loose_probabilities(x: &Tensor) -> Result<()> {
    strict_probabilities(x)
}

#[test]
fn a_case_names_the_function_whose_guard_must_report_it() {
    let cases = violations!(strict_probabilities);
    let range = cases
        .iter()
        .find(|c| c.rule() == Rule::Range)
        .expect("a range case");
    let (x,) = range.args();
    let error = loose_probabilities(&x).expect_err("the inner guard fails");
    let error = ContractError::find_in(&error).expect("a contract error");
    // The rule and subject match; the function tells the guards apart.
    assert!(range.is_reported_by(error));
    assert_eq!(range.function(), "strict_probabilities");
    assert_eq!(error.function(), "strict_probabilities");
    let cases = violations!(loose_probabilities);
    let dtype = cases.iter().find(|c| c.rule() == Rule::DType).unwrap();
    assert_eq!(dtype.function(), "loose_probabilities");
    assert_ne!(dtype.function(), error.function());
}

#[test]
fn a_mistake_is_reported_once_under_the_macro_used() {
    let failure = std::panic::catch_unwind(|| assert_contract!(below_k, cases = 4))
        .expect_err("`k` is not given");
    let message = failure
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.starts_with("assert_contract!(below_k): "),
        "{message}"
    );
    assert!(!message.contains("arbitrary!(below_k)"), "{message}");
    assert!(message.contains("`k`"), "{message}");
}

#[contract(
    labels: i64[N] in 0..V ignore -100 where ids,
    ids: i64[N] in 1..V where m,
    m: u8[N] in 0..=1,
    table: f32[V, E],
)]
fn labels_masked_by_ids(labels: &Tensor, ids: &Tensor, m: &Tensor, table: &Tensor) -> Result<()> {
    let _ = (labels, ids, m, table);
    Ok(())
}

#[contract(
    ids: i64[B, T] in 1..V where ids,
    labels: i64[B, T] in 0..V where ids,
    table: f32[V, E],
)]
fn labels_under_padding_ids(ids: &Tensor, labels: &Tensor, table: &Tensor) -> Result<()> {
    let _ = (ids, labels, table);
    Ok(())
}

#[test]
fn a_violation_breaks_no_other_clauses_usable_element() {
    // `ids[0] = 0` would leave `labels` (masked by `ids`) no checked element: the guard would
    // report `labels` first. No such case is made.
    let cases = violations!(labels_masked_by_ids);
    let changes: Vec<&str> = cases.iter().map(|c| c.change()).collect();
    assert!(
        !changes.iter().any(|c| c.starts_with("ids[0] = 0")),
        "{changes:?}"
    );
    for case in &cases {
        let (labels, ids, m, table) = case.args();
        let error = labels_masked_by_ids(&labels, &ids, &m, &table).expect_err(case.change());
        let error = ContractError::find_in(&error).unwrap();
        assert_eq!(
            error.violations()[0].argument(),
            case.subject(),
            "{case:?}: {error}"
        );
    }
}

#[test]
fn a_mask_masked_by_itself_may_be_set_to_0() {
    let exempt: Vec<String> = exemptions!(labels_under_padding_ids, dims = [B = 2, T = 3])
        .iter()
        .map(|c| c.change().to_string())
        .collect();
    assert!(
        exempt.iter().any(
            |c| c.starts_with("labels[0, 0] = ") && c.ends_with("exempt where `ids[0, 0]` = 0")
        ),
        "{exempt:?}"
    );
    assert_contract!(labels_under_padding_ids, cases = 16, dims = [B = 2, T = 3]);
}
