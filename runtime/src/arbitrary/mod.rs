//! `arbitrary!(f)`: the inputs a contracted function accepts, as a proptest `Strategy` (the
//! `proptest` feature).
//!
//! Nothing is generated beside the function: `arbitrary!` names it by its path, and
//!
//! - its signature comes from its type ([`params`]: which parameters are drawn, which given);
//! - its contract comes from its own guard, asked through the probe (`crate::probe`): a call
//!   with placeholders stops at the guard, which answers with its spec table; a second call,
//!   with the given values, answers with what the guard evaluates before reading a tensor
//!   (values from scope, bounds, constants, and what a receiver's fields bind);
//! - every draw is judged by the same guard: a third kind of call runs the whole input check
//!   (derived subjects and masks included, in `full` mode) and stops before the body. So a
//!   value the strategy yields has passed the contract's own check, and a rule the strategy
//!   cannot construct (most derived subjects) is met by drawing again.
//!
//! A draw is a [`layout`] (dims, runs, dtypes), kept where the relations hold, then tensors
//! whose values are drawn per dtype from the clause's rules ([`values`]).

mod cases;
mod layout;
mod params;
mod render;
mod values;

use std::any::Any;
use std::cell::Cell;
use std::fmt::{self, Debug};
use std::rc::Rc;
use std::sync::Arc;

use proptest::strategy::{BoxedStrategy, NewTree, Strategy, ValueTree};
use proptest::test_runner::{Config, Reason, TestCaseError, TestError, TestRunner};

use crate::error::{ContractError, Rule};
use crate::probe::{self, Ask, Finding, Outcome};
use crate::spec::{ContractSpec, Subject};
use layout::{DimSetting, Draw, Plan, Problem, SKIPS};
pub use params::{
    Append, ContractedFn, ContractedMethod, Drawn, Gather, Kind, Param, Returned, Slot,
};

/// Draws in a row the contract's guard may reject before the contract is reported as one that
/// `arbitrary!` cannot meet.
const DRAW_TRIES: usize = 256;

/// What `arbitrary!` was given besides the function: values of its parameters that are not
/// tensors (`k = 3`) and dims narrowed or fixed (`dims = [N in 1..=64, C = 10]`).
pub struct Settings {
    name: &'static str,
    given: Vec<(&'static str, Box<dyn Any + Send + Sync>)>,
    dims: Vec<DimSetting>,
    mistakes: Vec<String>,
}

impl Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let given: Vec<&str> = self.given.iter().map(|(name, _)| *name).collect();
        f.debug_struct("Settings")
            .field("name", &self.name)
            .field("given", &given)
            .field("dims", &self.dims)
            .finish_non_exhaustive()
    }
}

impl Settings {
    /// Nothing given yet, for the function `arbitrary!` names as `name` (its path as written).
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            given: Vec::new(),
            dims: Vec::new(),
            mistakes: Vec::new(),
        }
    }

    /// The value of the parameter `name` (a number or `bool`), as written: an integer literal
    /// is an `i32` here, and fits the parameter's integer type if its value does.
    pub fn given<T: Any + Send + Sync>(mut self, name: &'static str, value: T) -> Self {
        self.given.push((name, Box::new(value)));
        self
    }

    /// The named dim `name` drawn from `lo..=hi` (`lo == hi` fixes it).
    pub fn dim(mut self, name: &'static str, lo: usize, hi: usize) -> Self {
        self.dims.push(DimSetting { name, lo, hi });
        self
    }

    /// The named dim `name` drawn from `lo..end`.
    pub fn dim_below(mut self, name: &'static str, lo: usize, end: usize) -> Self {
        match end.checked_sub(1) {
            Some(hi) => self.dims.push(DimSetting { name, lo, hi }),
            None => self
                .mistakes
                .push(format!("`dims` gives `{name}` the empty range {lo}..{end}")),
        }
        self
    }
}

/// The strategy `arbitrary!` returns: every value is a tuple of the function's drawn
/// parameters, in order (`Tensor`, `Option<Tensor>` or `Vec<Tensor>` each), that its contract's
/// guard accepted.
///
/// A mistake in what `arbitrary!` was given (an unknown parameter or dim, a missing or
/// mistyped value, a receiver that breaks the contract, a function without a contract) is the
/// error of every `new_tree`, so the test runner reports it.
///
/// # Panics
///
/// `new_tree` panics when the contract cannot be met: when a relation (or a dim expression)
/// fails in every one of 1000 layouts drawn from the dims' ranges (the message names it as
/// written, `N > 8`), or when the guard rejects 256 draws in a row (the message has its last
/// violation). `arbitrary!` itself panics for a clause whose dtypes are all ones candle cannot
/// create on the CPU (the f8, f6 and f4 families).
pub struct Arbitrary<'r, V> {
    judge: Rc<Judge<'r>>,
    convert: fn(Vec<Option<Drawn>>) -> V,
    draws: Result<(Arc<Plan>, BoxedStrategy<Draw>), String>,
}

impl<V> Arbitrary<'_, V> {
    /// How many draws the contract's guard rejected so far (each was drawn again): zero where
    /// the strategy constructs every rule, which the tests check.
    pub fn rejected(&self) -> usize {
        self.judge.rejected.get()
    }
}

impl<V> Debug for Arbitrary<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Arbitrary")
            .field("function", &self.judge.name)
            .field("ready", &self.draws.is_ok())
            .finish_non_exhaustive()
    }
}

type Call<'r> = Box<dyn Fn(&[Slot<'_>]) -> Result<(), String> + 'r>;

/// The function and what it was given: calls it for its guard's answers.
struct Judge<'r> {
    name: &'static str,
    spec: Option<&'static ContractSpec>,
    call: Call<'r>,
    /// Per parameter, its given value and name.
    given: Vec<Option<(Box<dyn Any + Send + Sync>, &'static str)>>,
    /// How many new draws the guard rejected.
    rejected: Cell<usize>,
}

/// The strategy of a contracted function's inputs (what `arbitrary!(f)` expands to).
pub fn function<F, M>(f: F, settings: Settings) -> Arbitrary<'static, F::Value>
where
    F: ContractedFn<M> + 'static,
{
    let call: Call<'static> = Box::new(move |slots: &[Slot<'_>]| f.call_with(slots).map(drop));
    build(call, F::kinds(), F::value, settings)
}

/// The strategy of a contracted method's inputs on `receiver` (what
/// `arbitrary!(Type::method, &receiver)` expands to): the dims its `self.` clauses bind are
/// read from the receiver.
pub fn method<'r, S, F, M>(f: F, receiver: &'r S, settings: Settings) -> Arbitrary<'r, F::Value>
where
    S: ?Sized,
    F: ContractedMethod<S, M> + 'r,
{
    let call: Call<'r> = Box::new(move |slots: &[Slot<'_>]| f.call_with(receiver, slots).map(drop));
    build(call, F::kinds(), F::value, settings)
}

fn build<'r, V>(
    call: Call<'r>,
    kinds: Vec<Kind>,
    convert: fn(Vec<Option<Drawn>>) -> V,
    settings: Settings,
) -> Arbitrary<'r, V> {
    let mut judge = Judge {
        name: settings.name,
        spec: None,
        call,
        given: Vec::new(),
        rejected: Cell::new(0),
    };
    let draws = match judge.prepare(&kinds, settings) {
        Ok(plan) => {
            let plan = Arc::new(plan);
            let draws = plan.draws();
            Ok((plan, draws))
        }
        Err(Problem::Misuse(message)) => Err(message),
        Err(Problem::Unsatisfiable(message)) => panic!("{message}"),
    };
    Arbitrary {
        judge: Rc::new(judge),
        convert,
        draws,
    }
}

/// The root of a path clause: `self` of `self.weight`, `batch` of `batch.labels`.
fn root(path: &str) -> &str {
    let end = path
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(path.len());
    &path[..end]
}

/// The last segment of a path as written, without generics: `forward` of `Net::<f32>::forward`.
fn last_segment(path: &str) -> String {
    let mut depth = 0usize;
    let mut plain = String::new();
    for c in path.chars().filter(|c| !c.is_whitespace()) {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    plain
        .split("::")
        .filter(|segment| !segment.is_empty())
        .last()
        .unwrap_or_default()
        .to_string()
}

impl Judge<'_> {
    fn misuse(&self, message: impl fmt::Display) -> Problem {
        Problem::Misuse(format!("arbitrary!({}): {message}", self.name))
    }

    /// Calls the function with `slots` under `ask`.
    fn probe(&self, ask: Ask, bound: Vec<bool>, slots: &[Slot<'_>]) -> (Outcome, Option<String>) {
        let mut failed = None;
        let outcome = probe::run(ask, bound, || {
            if let Err(error) = (self.call)(slots) {
                failed = Some(error);
            }
        });
        (outcome, failed)
    }

    /// Asks the guard for its spec and scope, maps the given values to parameters, and plans
    /// the draws.
    fn prepare(&mut self, kinds: &[Kind], settings: Settings) -> Result<Plan, Problem> {
        if let Some(mistake) = settings.mistakes.first() {
            return Err(self.misuse(mistake));
        }
        let placeholders = vec![Slot::Placeholder; kinds.len()];
        let spec = match self.probe(Ask::Spec, Vec::new(), &placeholders) {
            (Outcome::Found(Finding::Spec(spec)), _) => spec,
            (_, Some(failed)) => return Err(self.misuse(failed)),
            (Outcome::Panicked(message), _) => {
                return Err(self.misuse(format!(
                    "`{}` panicked before it reached a contract's guard: {message}",
                    self.name
                )));
            }
            _ => {
                return Err(self.misuse(format!(
                    "`{}` returned without reaching a contract's guard: `arbitrary!` takes a \
                     function or method with `#[contract(...)]` (not an `async fn`, whose \
                     future it does not poll)",
                    self.name
                )));
            }
        };
        if spec.params.len() != kinds.len() || spec.function != last_segment(self.name) {
            return Err(self.misuse(format!(
                "the first guard `{}` reached is the contract of `{}`, not its own: \
                 `arbitrary!` takes a function with `#[contract(...)]`",
                self.name, spec.function
            )));
        }
        self.spec = Some(spec);
        let mut given: Vec<Option<(Box<dyn Any + Send + Sync>, &'static str)>> =
            (0..kinds.len()).map(|_| None).collect();
        for (name, value) in settings.given {
            let Some(index) = spec.params.iter().position(|p| *p == name) else {
                return Err(self.misuse(format!(
                    "`{}` has no parameter `{name}`; its parameters are {}",
                    spec.function,
                    spec.params.join(", ")
                )));
            };
            if !matches!(kinds[index], Kind::Given(_)) {
                return Err(self.misuse(format!(
                    "`{name}` is a tensor parameter, which `arbitrary!` draws: remove \
                     `{name} = ...`"
                )));
            }
            given[index] = Some((value, spec.params[index]));
        }
        for (index, kind) in kinds.iter().enumerate() {
            if let (Kind::Given(ty), None) = (kind, &given[index]) {
                let param = spec.params[index];
                return Err(self.misuse(format!(
                    "`{param}` is a `{ty}` parameter, which `arbitrary!` does not draw: give \
                     its value, as in `arbitrary!({}, {param} = ...)`",
                    self.name
                )));
            }
        }
        self.given = given;
        // What the guard can read before the drawn tensors: the receiver's fields and paths
        // from given parameters.
        let bound = spec
            .inputs
            .iter()
            .map(|clause| match clause.subject {
                Subject::Field(path) => {
                    let root = root(path);
                    root == "self"
                        || spec
                            .params
                            .iter()
                            .zip(kinds)
                            .any(|(p, k)| *p == root && matches!(k, Kind::Given(_)))
                }
                _ => false,
            })
            .collect();
        let slots = self.slots(&[]);
        let scope = match self.probe(Ask::Scope(spec), bound, &slots) {
            (Outcome::Found(Finding::Scope(scope)), _) => scope,
            (_, Some(failed)) => return Err(self.misuse(failed)),
            (Outcome::Panicked(message), _) => {
                return Err(self.misuse(format!(
                    "evaluating the contract's values from scope panicked: {message}"
                )));
            }
            _ => {
                return Err(self.misuse(format!(
                    "`{}` returned before its guard evaluated the contract's values",
                    self.name
                )));
            }
        };
        Plan::new(spec, self.name, kinds, scope, &settings.dims)
    }

    /// One slot per parameter: its given value, or what was drawn (a placeholder where
    /// nothing was).
    fn slots<'a>(&'a self, drawn: &'a [Option<Drawn>]) -> Vec<Slot<'a>> {
        self.given
            .iter()
            .enumerate()
            .map(|(index, given)| match (given, drawn.get(index)) {
                (Some((value, name)), _) => Slot::Given(&**value, name),
                (None, Some(Some(drawn))) => Slot::Drawn(drawn),
                _ => Slot::Placeholder,
            })
            .collect()
    }

    /// The guard's verdict on a draw; `Err` says why it was rejected.
    fn verdict(&self, drawn: &[Option<Drawn>]) -> Result<(), String> {
        self.answer(drawn)?.map_err(|error| error.to_string())
    }

    /// The guard's own answer on a draw, in `full` mode; `Err`: the guard gave none, and why.
    fn answer(&self, drawn: &[Option<Drawn>]) -> Result<Result<(), ContractError>, String> {
        let Some(spec) = self.spec else {
            return Err("the contract is unknown".to_string());
        };
        let slots = self.slots(drawn);
        match self.probe(Ask::Verdict(spec), Vec::new(), &slots) {
            (Outcome::Found(Finding::Verdict(verdict)), _) => Ok(verdict),
            (_, Some(failed)) => Err(failed),
            (Outcome::Panicked(message), _) => Err(format!(
                "the call panicked before its guard's verdict: {message}"
            )),
            _ => Err(format!(
                "`{}` returned before its guard's verdict: a derived subject or mask could not \
                 be evaluated (its `?` returned an error)",
                self.name
            )),
        }
    }
}

impl<'r, V: Debug> Strategy for Arbitrary<'r, V> {
    type Tree = ArbitraryTree<'r, V>;
    type Value = V;

    fn new_tree(&self, runner: &mut TestRunner) -> NewTree<Self> {
        let (_, draws) = self
            .draws
            .as_ref()
            .map_err(|message| Reason::from(message.clone()))?;
        let mut last = String::new();
        for _ in 0..DRAW_TRIES {
            let tree = draws.new_tree(runner)?;
            let drawn = tree.current();
            match self.judge.verdict(&drawn.values) {
                Ok(()) => {
                    return Ok(ArbitraryTree {
                        judge: Rc::clone(&self.judge),
                        convert: self.convert,
                        tree,
                        accepted: drawn,
                    });
                }
                Err(why) => {
                    self.judge.rejected.set(self.judge.rejected.get() + 1);
                    last = why;
                }
            }
        }
        panic!(
            "arbitrary!({}): the contract's guard rejected {DRAW_TRIES} draws in a row, so \
             `arbitrary!` cannot meet it with these dims (or it has a derived subject or mask \
             that it cannot construct); the last rejection:\n{last}",
            self.judge.name
        )
    }
}

/// A draw the contract's guard accepted, shrinking only to draws it accepts: a step to one it
/// rejects is followed by another step the same way, a few dozen times at most.
pub struct ArbitraryTree<'r, V> {
    judge: Rc<Judge<'r>>,
    convert: fn(Vec<Option<Drawn>>) -> V,
    tree: Box<dyn ValueTree<Value = Draw>>,
    /// The last draw the guard accepted: the current value.
    accepted: Draw,
}

impl<V> Debug for ArbitraryTree<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArbitraryTree")
            .field("function", &self.judge.name)
            .field("accepted", &self.accepted)
            .finish_non_exhaustive()
    }
}

impl<V> ArbitraryTree<'_, V> {
    fn step(&mut self, step: fn(&mut dyn ValueTree<Value = Draw>) -> bool) -> bool {
        for _ in 0..SKIPS {
            if !step(&mut *self.tree) {
                return false;
            }
            let drawn = self.tree.current();
            if self.judge.verdict(&drawn.values).is_ok() {
                self.accepted = drawn;
                return true;
            }
        }
        false
    }
}

impl<V: Debug> ValueTree for ArbitraryTree<'_, V> {
    type Value = V;

    fn current(&self) -> V {
        (self.convert)(self.accepted.values.clone())
    }

    fn simplify(&mut self) -> bool {
        self.step(|tree| tree.simplify())
    }

    fn complicate(&mut self) -> bool {
        self.step(|tree| tree.complicate())
    }
}

/// How many draws `violations!` tries for one with every `Option` tensor present (each is
/// present four times in five).
const BASE_DRAWS: usize = 64;

/// How many steps `assert_contract!` shrinks a failing draw at most.
const MAX_SHRINK_STEPS: u32 = 65_536;

/// How many steps the base draw of `violations!` shrinks at most: its cases are small.
const BASE_SHRINKS: usize = 4096;

/// One input of a contracted function that breaks one rule of one clause, and what the guard
/// must answer: a value of `violations!(f)` (the guard reports [`rule`](Self::rule)) or of
/// `exemptions!(f)` (the broken value is exempt, and the guard accepts the input).
///
/// The input is a valid draw of `arbitrary!` with one tensor changed: its dtype, its rank, one
/// dim, or its values (see `violations!`), and for a clause with a `where` mask, the mask's
/// element 0.
pub struct ViolationCase<V> {
    case: cases::Case,
    convert: fn(Vec<Option<Drawn>>) -> V,
}

impl<V> ViolationCase<V> {
    /// The broken clause as the contract's text writes it, subject included:
    /// `target: u32[N] in 0..C`.
    pub fn clause(&self) -> &str {
        &self.case.clause
    }

    /// The subject the guard blames: the argument whose tensor was changed, as the contract
    /// names it (what [`Violation::argument`](crate::Violation::argument) returns).
    pub fn subject(&self) -> &'static str {
        self.case.subject
    }

    /// The rule the guard reports for this input; for an exemption, the rule the changed value
    /// would break if the contract did not exempt it.
    pub fn rule(&self) -> Rule {
        self.case.rule
    }

    /// Whether the contract exempts the changed value (a mask's 0 where the value is, or an
    /// ignored value outside the `in` patterns): the guard must accept this input. True for
    /// the cases of `exemptions!`, false for those of `violations!`.
    pub fn is_exempt(&self) -> bool {
        self.case.exempt
    }

    /// What was changed, in words: `target[0] = 4, one above \`0..C\``.
    pub fn change(&self) -> &str {
        &self.case.change
    }

    /// The arguments, as `arbitrary!` yields them: a tuple of the drawn parameters.
    pub fn args(&self) -> V {
        (self.convert)(self.case.values.clone())
    }

    /// Whether `error` reports this case: one of its violations is of [`rule`](Self::rule) on
    /// [`subject`](Self::subject). Whichever guard reported it: the cases of one contract may
    /// test another function's guard (a guarded op, a loosened copy). To know that the
    /// function's own guard reported it, compare [`ContractError::function`] with
    /// [`function`](Self::function) too (a contracted function the body calls reports with
    /// its own name).
    pub fn is_reported_by(&self, error: &ContractError) -> bool {
        error
            .violations()
            .iter()
            .any(|v| v.argument() == self.case.subject && v.rule() == self.case.rule)
    }

    /// The name of the function whose contract this case breaks, as its guard's errors give
    /// it ([`ContractError::function`]).
    pub fn function(&self) -> &'static str {
        self.case.function
    }
}

impl<V> Debug for ViolationCase<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ViolationCase")
            .field("clause", &self.case.clause)
            .field("subject", &self.case.subject)
            .field("rule", &self.case.rule)
            .field("change", &self.case.change)
            .field("exempt", &self.case.exempt)
            .finish_non_exhaustive()
    }
}

impl<V: Debug> Arbitrary<'_, V> {
    /// The draw the violation cases start from: the first of a deterministic runner with every
    /// `Option` tensor present (so that its clause has cases too), shrunk without losing one.
    fn base(&self) -> Result<(Arc<Plan>, Draw), String> {
        let (plan, _) = self.draws.as_ref().map_err(Clone::clone)?;
        let present = |tree: &ArbitraryTree<'_, V>| {
            tree.accepted.layout.present.iter().filter(|p| **p).count()
        };
        let mut runner = TestRunner::deterministic();
        let mut tree = self.new_tree(&mut runner).map_err(|r| r.to_string())?;
        for _ in 0..BASE_DRAWS {
            if tree.accepted.layout.present.iter().all(|p| *p) {
                break;
            }
            tree = self.new_tree(&mut runner).map_err(|r| r.to_string())?;
        }
        // The smallest draw reached before a step dropped an `Option` tensor.
        let mut kept = tree.accepted.clone();
        for _ in 0..BASE_SHRINKS {
            let before = present(&tree);
            if !tree.simplify() {
                break;
            }
            if present(&tree) < before {
                break;
            }
            kept = tree.accepted.clone();
        }
        Ok((Arc::clone(plan), kept))
    }

    /// The inputs that break one rule of one clause each (what `violations!` returns).
    ///
    /// # Panics
    ///
    /// As `arbitrary!`'s strategy, and where it would report an error (a mistake in what
    /// `violations!` was given): with that message.
    pub fn violations(&self) -> Vec<ViolationCase<V>> {
        self.cases("violations", false)
    }

    /// The inputs whose broken value the contract exempts, which the guard must accept (what
    /// `exemptions!` returns).
    ///
    /// # Panics
    ///
    /// As [`violations`](Self::violations).
    pub fn exemptions(&self) -> Vec<ViolationCase<V>> {
        self.cases("exemptions", true)
    }

    fn cases(&self, which: &str, exempt: bool) -> Vec<ViolationCase<V>> {
        self.all_cases(which)
            .into_iter()
            .filter(|case| case.case.exempt == exempt)
            .collect()
    }

    /// The violations and the exemptions, from one base draw.
    fn all_cases(&self, which: &str) -> Vec<ViolationCase<V>> {
        let (plan, base) = self.base().unwrap_or_else(|message| {
            let name = self.judge.name;
            panic!("{which}!({name}): {}", unprefixed(&message, name))
        });
        cases::cases(&plan, &base)
            .into_iter()
            .map(|case| ViolationCase {
                case,
                convert: self.convert,
            })
            .collect()
    }
}

/// A strategy's message without its own `arbitrary!(f): ` prefix, for another macro's.
fn unprefixed<'m>(message: &'m str, name: &str) -> &'m str {
    message
        .strip_prefix(&format!("arbitrary!({name}): "))
        .unwrap_or(message)
}

type Run<'r> = Box<dyn Fn(&[Slot<'_>]) -> Result<Option<String>, String> + 'r>;

/// `assert_contract!(f)`: runs `f` on `cases` valid draws and every violation case.
#[track_caller]
pub fn assert_function<F, M>(f: F, settings: Settings, cases: u32)
where
    F: ContractedFn<M> + Clone + 'static,
    F::Ret: Returned,
{
    let called = f.clone();
    let call: Call<'static> = Box::new(move |slots: &[Slot<'_>]| called.call_with(slots).map(drop));
    let run: Run<'static> =
        Box::new(move |slots: &[Slot<'_>]| f.call_with(slots).map(|r| r.failure()));
    let strategy = build(call, F::kinds(), |drawn| drawn, settings);
    assert_contract(&strategy, &run, cases);
}

/// `assert_contract!(Type::method, &receiver)`: as [`assert_function`], on `receiver`.
#[track_caller]
pub fn assert_method<'r, S, F, M>(f: F, receiver: &'r S, settings: Settings, cases: u32)
where
    S: ?Sized,
    F: ContractedMethod<S, M> + Clone + 'r,
    F::Ret: Returned,
{
    let called = f.clone();
    let call: Call<'r> =
        Box::new(move |slots: &[Slot<'_>]| called.call_with(receiver, slots).map(drop));
    let run: Run<'r> =
        Box::new(move |slots: &[Slot<'_>]| f.call_with(receiver, slots).map(|r| r.failure()));
    let strategy = build(call, F::kinds(), |drawn| drawn, settings);
    assert_contract(&strategy, &run, cases);
}

/// [`run_once`] with the function's own guard in `full` mode, so that its `return` clause is
/// checked whatever the process's mode (`shapes` skips its value rules, `off` all of it;
/// another test's `set_mode` may have set either).
fn run_in_full_mode(judge: &Judge<'_>, run: &Run<'_>, slots: &[Slot<'_>]) -> Option<String> {
    match judge.spec {
        Some(spec) => probe::in_full_mode(spec, || run_once(run, slots)),
        None => run_once(run, slots),
    }
}

/// Why a call on a valid draw failed: its error, its panic, or a slot that did not fit.
fn run_once(run: &Run<'_>, slots: &[Slot<'_>]) -> Option<String> {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(slots)));
    match outcome {
        Ok(Ok(None)) => None,
        Ok(Ok(Some(error))) => Some(format!("it returned an error:\n{error}")),
        Ok(Err(mismatch)) => Some(mismatch),
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string());
            Some(format!("it panicked:\n{message}"))
        }
    }
}

#[track_caller]
fn assert_contract(strategy: &Arbitrary<'_, Vec<Option<Drawn>>>, run: &Run<'_>, cases: u32) {
    let judge = &strategy.judge;
    let name = judge.name;
    // Shrinking steps the dims and every value one at a time: proptest's default of 1024
    // steps stops it half way on a draw of a few hundred elements.
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: MAX_SHRINK_STEPS,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&DrawOf(strategy), |draw| {
        let slots = judge.slots(&draw.values);
        match run_in_full_mode(judge, run, &slots) {
            None => Ok(()),
            Some(why) => Err(TestCaseError::fail(why)),
        }
    });
    match result {
        Ok(()) => {}
        Err(TestError::Abort(reason)) => {
            panic!(
                "assert_contract!({name}): {}",
                unprefixed(&reason.to_string(), name)
            )
        }
        Err(TestError::Fail(why, draw)) => {
            let Some(spec) = judge.spec else {
                panic!("assert_contract!({name}): {why}");
            };
            panic!(
                "assert_contract!({name}) failed on a valid input, shrunk to {}:\n{}{why}",
                render::dims(spec, &draw.layout),
                render::values(spec, &draw.values),
            );
        }
    }
    let mut missed = Vec::new();
    let (exemptions, violations): (Vec<_>, Vec<_>) = strategy
        .all_cases("assert_contract")
        .into_iter()
        .partition(ViolationCase::is_exempt);
    for case in &violations {
        match judge.answer(&case.case.values) {
            Ok(Err(error)) if case.is_reported_by(&error) => {}
            Ok(Err(error)) => missed.push(format!(
                "- `{}` with {}: expected a {:?} violation of `{}`; the guard reported:\n{error}",
                case.clause(),
                case.change(),
                case.rule(),
                case.subject()
            )),
            Ok(Ok(())) => missed.push(format!(
                "- `{}` with {}: expected a {:?} violation of `{}`; the guard accepted it",
                case.clause(),
                case.change(),
                case.rule(),
                case.subject()
            )),
            Err(why) => missed.push(format!(
                "- `{}` with {}: expected a {:?} violation of `{}`; the guard gave no answer: \
                 {why}",
                case.clause(),
                case.change(),
                case.rule(),
                case.subject()
            )),
        }
    }
    if !missed.is_empty() {
        panic!(
            "assert_contract!({name}): {} of {} violation cases were not reported as expected:\n{}",
            missed.len(),
            violations.len(),
            missed.join("\n")
        );
    }
    // An exempt value is a valid input: the whole call must succeed on it, as on a draw.
    for case in &exemptions {
        let slots = judge.slots(&case.case.values);
        if let Some(why) = run_in_full_mode(judge, run, &slots) {
            let inputs = match judge.spec {
                Some(spec) => render::values(spec, &case.case.values),
                None => String::new(),
            };
            missed.push(format!(
                "- `{}` with {}: exempt, expected to succeed; the input:\n{inputs}{why}",
                case.clause(),
                case.change(),
            ));
        }
    }
    if !missed.is_empty() {
        panic!(
            "assert_contract!({name}) failed on {} of {} exempt inputs (valid: the contract \
             exempts the value changed):\n{}",
            missed.len(),
            exemptions.len(),
            missed.join("\n")
        );
    }
}

/// The strategy's draws with their layouts (for `assert_contract!`'s message).
struct DrawOf<'a, 'r>(&'a Arbitrary<'r, Vec<Option<Drawn>>>);

impl Debug for DrawOf<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'a, 'r> Strategy for DrawOf<'a, 'r> {
    type Tree = DrawTree<'r>;
    type Value = Draw;

    fn new_tree(&self, runner: &mut TestRunner) -> NewTree<Self> {
        self.0.new_tree(runner).map(DrawTree)
    }
}

/// A tree of [`DrawOf`]: the accepted draw, layout included.
struct DrawTree<'r>(ArbitraryTree<'r, Vec<Option<Drawn>>>);

impl Debug for DrawTree<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl ValueTree for DrawTree<'_> {
    type Value = Draw;

    fn current(&self) -> Draw {
        self.0.accepted.clone()
    }

    fn simplify(&mut self) -> bool {
        self.0.simplify()
    }

    fn complicate(&mut self) -> bool {
        self.0.complicate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_give_their_root_and_last_segment() {
        assert_eq!(root("self.weight"), "self");
        assert_eq!(root("batch.labels?"), "batch");
        assert_eq!(last_segment("f"), "f");
        assert_eq!(last_segment("Net :: < f32 > :: forward"), "forward");
        assert_eq!(last_segment("model::Net::forward"), "forward");
        assert_eq!(last_segment("scaled::<f32>"), "scaled");
        assert_eq!(last_segment("Net::<f32>::forward"), "forward");
    }
}
