//! The plan of a draw, and its two stages.
//!
//! The plan comes from the contract's spec, what its guard knew before reading any tensor (the
//! probe's scope: values from scope, bounds, constants, the dims a receiver's fields bind) and
//! what `arbitrary!` was given: the domain of every named dim, and for every parameter where
//! its tensor comes from (its clause, the clause it masks, or nothing) and its dtypes.
//!
//! A draw is a [`Layout`] first (named dims, runs, the sizes of `_` and `..`, dtypes, which
//! optional tensors are present), kept only where every relation and dim expression holds;
//! then the tensors for it. The tensors are a `prop_flat_map` of the layout, so a failing case
//! shrinks its dims first and its values within them.

use std::sync::Arc;

use candle_core::DType;
use proptest::prelude::*;
use proptest::strategy::{NewTree, ValueTree};
use proptest::test_runner::TestRunner;

use super::params::{Drawn, Kind};
use super::values::{self, DRAWN_DTYPES, Values};
use crate::dims::{self, ArithmeticError};
use crate::probe::{Constant, Scope};
use crate::rule::{BoundValue, Compare, Interval, Num, Resolved};
use crate::spec::{ClauseSpec, ContractSpec, DimSpec, ExprOp, Subject};

/// A named dim drawn from `1..=8` unless told otherwise.
const DEFAULT_DIM: (usize, usize) = (1, 8);
/// The sizes of `_`, of each dim of `..` and of a run.
const FREE_DIM: std::ops::RangeInclusive<usize> = 1..=4;
/// How many dims a `..` or a run covers.
const REST_RANK: std::ops::RangeInclusive<usize> = 0..=2;
/// How often an `Option` parameter is present.
const PRESENT: f64 = 0.8;
/// The most elements the tensors of one draw hold (each is a strategy of its own while drawn):
/// a layout above it is drawn again, as one that breaks a relation.
const MAX_ELEMENTS: usize = 1 << 20;
/// Layouts drawn before a relation that none met is reported.
pub(crate) const LAYOUT_TRIES: usize = 1000;

/// What `arbitrary!` was told about a named dim: `N in 1..=64` or `C = 10` (`lo == hi`).
#[derive(Debug, Clone)]
pub(crate) struct DimSetting {
    pub name: &'static str,
    pub lo: usize,
    pub hi: usize,
}

/// The sizes a named dim is drawn from (inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Domain {
    lo: usize,
    hi: usize,
}

/// Where a drawn parameter's tensor comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// A number or `bool`, given.
    Given,
    /// Its own clause.
    Clause(&'static ClauseSpec),
    /// No clause of its own, but the mask of the clause of the parameter at this index
    /// (`where mask`): a 0/1 `u8` tensor of that parameter's shape.
    Mask(usize),
    /// No clause at all: a small `f32` tensor of rank 0 to 2.
    Free,
}

/// How one parameter is drawn.
#[derive(Debug, Clone)]
struct ParamPlan {
    kind: Kind,
    source: Source,
    dtypes: Vec<DType>,
    /// Its first `_` size in [`Layout::free`] and first `..` in [`Layout::rests`].
    free: usize,
    rests: usize,
    /// A derived subject `{name.sum(axis)?}` in a range: its rows are rescaled to meet it.
    rescale: Option<(usize, &'static ClauseSpec)>,
}

/// Why a plan cannot be made: a mistake in what `arbitrary!` was given (reported as the
/// strategy's error), or a contract no draw can meet (a panic).
#[derive(Debug)]
pub(crate) enum Problem {
    Misuse(String),
    Unsatisfiable(String),
}

/// Everything a draw needs, shared by the strategy's stages.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) spec: &'static ContractSpec,
    /// The function as `arbitrary!` names it, for messages.
    pub(crate) name: &'static str,
    values: Vec<BoundValue>,
    bounds: Vec<BoundValue>,
    dims: Vec<Domain>,
    /// A run's sizes where a receiver's field binds them; drawn otherwise.
    runs: Vec<Option<Vec<usize>>>,
    params: Vec<ParamPlan>,
    free: usize,
    rests: usize,
}

/// One draw's shapes and dtypes, before its tensors.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// Each named dim's size.
    pub dims: Vec<usize>,
    /// Each named run's sizes.
    pub runs: Vec<Vec<usize>>,
    /// The sizes of the `_` dims (and `_` counts) of every drawn clause.
    pub free: Vec<usize>,
    /// The dims of the `..`s of every drawn clause.
    pub rests: Vec<Vec<usize>>,
    /// Each parameter's dtype (unused for a given one).
    pub dtypes: Vec<DType>,
    /// Whether each `Option` parameter is present (`true` for the others).
    pub present: Vec<bool>,
}

/// One draw: its layout, and one value per parameter (`None` for a given one).
#[derive(Debug, Clone)]
pub(crate) struct Draw {
    pub layout: Layout,
    pub values: Vec<Option<Drawn>>,
}

/// The line of the contract's text that holds `clause`'s dtypes: the clause as written.
pub(crate) fn clause_text(spec: &ContractSpec, clause: &ClauseSpec) -> String {
    let at = clause.dtypes_span.start as usize;
    let text = spec.text;
    let start = text
        .get(..at)
        .and_then(|t| t.rfind('\n'))
        .map_or(0, |i| i + 1);
    let end = text
        .get(at..)
        .and_then(|t| t.find('\n'))
        .map_or(text.len(), |i| at + i);
    text.get(start..end)
        .map_or_else(|| clause.subject.name().to_string(), str::to_string)
}

/// `{x.sum(1)?}` or `{x.sum_keepdim(1)?}`: the parameter and the axis.
fn summed(text: &str) -> Option<(&str, usize)> {
    let text = text.trim().strip_prefix('{')?.strip_suffix('}')?.trim();
    let text = text.strip_suffix('?').unwrap_or(text).trim_end();
    let (name, call) = text.split_once('.')?;
    let args = call
        .strip_prefix("sum_keepdim(")
        .or_else(|| call.strip_prefix("sum("))?
        .strip_suffix(')')?;
    let axis = args.trim().trim_end_matches("usize").parse().ok()?;
    let name = name.trim();
    name.chars()
        .all(|c| c.is_alphanumeric() || c == '_')
        .then_some((name, axis))
}

/// How many `_` sizes and `..`s a clause's shape and count take.
fn slots(clause: &ClauseSpec) -> (usize, usize) {
    let dims = clause.shape.iter().chain(&clause.sequence);
    let free = dims.clone().filter(|d| matches!(d, DimSpec::Any)).count();
    let rests = dims.filter(|d| matches!(d, DimSpec::Rest)).count();
    (free, rests)
}

impl Plan {
    /// The plan for `spec`, with parameters of `kinds` (one per name in `spec.params`), what
    /// the guard knew (`scope`) and the dims `settings` narrow or fix.
    pub(crate) fn new(
        spec: &'static ContractSpec,
        name: &'static str,
        kinds: &[Kind],
        scope: Scope,
        settings: &[DimSetting],
    ) -> Result<Self, Problem> {
        let misuse = |message: String| Problem::Misuse(format!("arbitrary!({name}): {message}"));
        if let Err(error) = scope.violations {
            return Err(misuse(format!(
                "the receiver or a given value breaks the contract, so no input can meet it:\n\
                 {error}"
            )));
        }
        for setting in settings {
            if !spec.dims.contains(&setting.name) {
                let known = if spec.dims.is_empty() {
                    "it names none".to_string()
                } else {
                    format!("its dims are {}", spec.dims.join(", "))
                };
                return Err(misuse(format!(
                    "`dims` names `{}`, which is no named dim of the contract of `{}`: {known}",
                    setting.name, spec.function
                )));
            }
            if setting.lo > setting.hi {
                return Err(misuse(format!(
                    "`dims` gives `{}` an empty range ({}..={})",
                    setting.name, setting.lo, setting.hi
                )));
            }
        }
        let mut dims = Vec::with_capacity(spec.dims.len());
        for (id, dim) in spec.dims.iter().enumerate() {
            let setting = settings.iter().rev().find(|s| s.name == *dim);
            let known = match scope.constants.get(id) {
                Some(Constant::Value(value)) => Some((*value, "is a constant of value")),
                Some(Constant::Unknown) if setting.is_none() => {
                    return Err(misuse(format!(
                        "`{dim}` is a constant in scope whose value was not found (above \
                         2^24): give it, as in `dims = [{dim} = ...]`"
                    )));
                }
                _ => scope
                    .dims
                    .get(id)
                    .copied()
                    .flatten()
                    .map(|value| (value, "is bound by the receiver to")),
            };
            let domain = match (known, setting) {
                (Some((value, _)), None) => Domain {
                    lo: value,
                    hi: value,
                },
                (Some((value, how)), Some(setting))
                    if !(setting.lo..=setting.hi).contains(&value) =>
                {
                    return Err(misuse(format!(
                        "`dims` gives `{dim}` {}..={}, but `{dim}` {how} {value}",
                        setting.lo, setting.hi
                    )));
                }
                (Some((value, _)), Some(_)) => Domain {
                    lo: value,
                    hi: value,
                },
                (None, Some(setting)) => Domain {
                    lo: setting.lo,
                    hi: setting.hi,
                },
                (None, None) => Domain {
                    lo: DEFAULT_DIM.0,
                    hi: DEFAULT_DIM.1,
                },
            };
            dims.push(domain);
        }
        let argument = |name: &str, sequence: bool| {
            spec.inputs.iter().find(|clause| {
                matches!(clause.subject, Subject::Argument(n) if n == name)
                    && clause.sequence.is_some() == sequence
            })
        };
        let mut params = Vec::with_capacity(kinds.len());
        let (mut free, mut rests) = (0, 0);
        for (param, &kind) in spec.params.iter().zip(kinds) {
            let source = match kind {
                Kind::Given(_) => Source::Given,
                Kind::Sequence => argument(param, true).map_or(Source::Free, Source::Clause),
                Kind::Tensor | Kind::Optional => {
                    argument(param, false).map_or(Source::Free, Source::Clause)
                }
            };
            let (dtypes, taken) = match source {
                Source::Clause(clause) => {
                    let dtypes: Vec<DType> = DRAWN_DTYPES
                        .iter()
                        .copied()
                        .filter(|d| clause.dtypes.contains(*d))
                        .collect();
                    if dtypes.is_empty() {
                        return Err(Problem::Unsatisfiable(format!(
                            "arbitrary!({name}): the clause `{}` allows only dtypes candle \
                             cannot draw on the CPU (the f8, f6 and f4 families)",
                            clause_text(spec, clause),
                        )));
                    }
                    (dtypes, slots(clause))
                }
                Source::Free => (
                    vec![DType::F32],
                    (0, 1 + usize::from(kind == Kind::Sequence)),
                ),
                Source::Given | Source::Mask(_) => (vec![DType::F32], (0, 0)),
            };
            params.push(ParamPlan {
                kind,
                source,
                dtypes,
                free,
                rests,
                rescale: None,
            });
            free += taken.0;
            rests += taken.1;
        }
        // A tensor with no clause that masks a clause gets that clause's shape.
        for clause in spec.inputs {
            let Some(mask) = clause.mask else { continue };
            let text = spec.text_of(mask.text);
            let Some(masked) = spec.params.iter().position(|p| *p == text) else {
                continue;
            };
            let owner = spec
                .params
                .iter()
                .position(|p| matches!(clause.subject, Subject::Argument(n) if n == *p));
            // Of several clauses it masks, the one of fewest dims: a mask broadcast to the
            // others (`[T]` for `[T]` and `[B, T]`).
            let rank_of = |owner: usize| {
                spec.inputs
                    .iter()
                    .find(|c| matches!(c.subject, Subject::Argument(n) if n == spec.params[owner]))
                    .map_or(usize::MAX, |c| c.shape.len())
            };
            if let (Some(owner), Some(plan)) = (owner, params.get_mut(masked))
                && plan.kind != Kind::Sequence
            {
                match plan.source {
                    Source::Free => {
                        plan.source = Source::Mask(owner);
                        plan.dtypes = vec![DType::U8];
                    }
                    Source::Mask(other) if rank_of(owner) < rank_of(other) => {
                        plan.source = Source::Mask(owner);
                    }
                    _ => {}
                }
            }
        }
        // A derived subject `{x.sum(axis)?}`: `x`'s rows are rescaled to meet its range.
        for clause in spec.inputs {
            let Subject::Derived(text) = clause.subject else {
                continue;
            };
            let Some((summed, axis)) = summed(text) else {
                continue;
            };
            if let Some(plan) = spec
                .params
                .iter()
                .position(|p| *p == summed)
                .and_then(|index| params.get_mut(index))
                && matches!(plan.source, Source::Clause(_))
                && matches!(plan.kind, Kind::Tensor | Kind::Optional)
            {
                // Only float rows of any value are rescaled; an integer or `integral` clause is
                // met by drawing again.
                let floats: Vec<DType> = plan
                    .dtypes
                    .iter()
                    .copied()
                    .filter(|d| d.is_float())
                    .collect();
                let integral = match plan.source {
                    Source::Clause(own) => own.values.is_some_and(|v| v.integral),
                    _ => false,
                };
                if !floats.is_empty() && !integral {
                    plan.dtypes = floats;
                    plan.rescale = Some((axis, clause));
                }
            }
        }
        let runs = (0..spec.runs.len())
            .map(|id| scope.runs.get(id).cloned().flatten())
            .collect();
        Ok(Self {
            spec,
            name,
            values: scope.values,
            bounds: scope.bounds,
            dims,
            runs,
            params,
            free,
            rests,
        })
    }

    /// The layouts, before the relations are asked.
    fn layouts(&self) -> BoxedStrategy<Layout> {
        let dims: Vec<BoxedStrategy<usize>> =
            self.dims.iter().map(|d| (d.lo..=d.hi).boxed()).collect();
        let runs: Vec<BoxedStrategy<Vec<usize>>> = self
            .runs
            .iter()
            .map(|run| match run {
                Some(sizes) => Just(sizes.clone()).boxed(),
                None => prop::collection::vec(FREE_DIM, REST_RANK).boxed(),
            })
            .collect();
        let free: Vec<_> = (0..self.free).map(|_| FREE_DIM).collect();
        let rests: Vec<_> = (0..self.rests)
            .map(|_| prop::collection::vec(FREE_DIM, REST_RANK))
            .collect();
        let dtypes: Vec<BoxedStrategy<DType>> = self
            .params
            .iter()
            .map(|p| match p.dtypes.as_slice() {
                [only] => Just(*only).boxed(),
                many => prop::sample::select(many.to_vec()).boxed(),
            })
            .collect();
        let present: Vec<BoxedStrategy<bool>> = self
            .params
            .iter()
            .map(|p| match p.kind {
                Kind::Optional => prop::bool::weighted(PRESENT).boxed(),
                _ => Just(true).boxed(),
            })
            .collect();
        (dims, runs, free, rests, dtypes, present)
            .prop_map(|(dims, runs, free, rests, dtypes, present)| Layout {
                dims,
                runs,
                free,
                rests,
                dtypes,
                present,
            })
            .boxed()
    }

    /// A dim expression's value in `layout`: `Ok(None)` where a value from scope is `None`.
    fn eval(&self, ops: &[ExprOp], layout: &Layout) -> Result<Option<i128>, ArithmeticError> {
        dims::eval_ops(
            ops,
            |id| layout.dims.get(usize::from(id)).copied(),
            |index| dims::scope_value(&self.values, index),
        )
    }

    /// A clause's shape in `layout`, its `_` sizes and `..`s taken from the cursors.
    fn shape(
        &self,
        shape: &[DimSpec],
        layout: &Layout,
        free: &mut usize,
        rests: &mut usize,
    ) -> Result<Vec<usize>, (String, ArithmeticError)> {
        let mut dims = Vec::with_capacity(shape.len());
        for dim in shape {
            match *dim {
                DimSpec::Fixed(size) => dims.push(size),
                DimSpec::Named(id) => dims.push(layout.dims[usize::from(id)]),
                DimSpec::Any => {
                    dims.push(layout.free.get(*free).copied().unwrap_or(1));
                    *free += 1;
                }
                DimSpec::Rest => {
                    dims.extend(layout.rests.get(*rests).into_iter().flatten());
                    *rests += 1;
                }
                DimSpec::Run(id) => dims.extend(&layout.runs[usize::from(id)]),
                DimSpec::Expr(expr) => {
                    let size = self
                        .eval(expr.ops, layout)
                        .and_then(dims::as_size)
                        .map_err(|e| (self.spec.text_of(expr.text).to_string(), e))?;
                    dims.push(size.map_or(1, |s| s as usize));
                }
            }
        }
        Ok(dims)
    }

    /// The shape of each tensor of parameter `index` (one; a sequence's count of them).
    fn shapes(
        &self,
        index: usize,
        layout: &Layout,
    ) -> Result<Vec<Vec<usize>>, (String, ArithmeticError)> {
        let plan = &self.params[index];
        let (mut free, mut rests) = (plan.free, plan.rests);
        let clause = match plan.source {
            Source::Given => return Ok(Vec::new()),
            Source::Clause(clause) => clause,
            Source::Mask(owner) => return self.shapes(owner, layout),
            Source::Free => {
                let shape = layout.rests.get(rests).cloned().unwrap_or_default();
                let count = match plan.kind {
                    Kind::Sequence => layout.rests.get(rests + 1).map_or(1, Vec::len),
                    _ => 1,
                };
                return Ok(vec![shape; count]);
            }
        };
        let shape = self.shape(clause.shape, layout, &mut free, &mut rests)?;
        let count = match clause.sequence {
            None => 1,
            Some(count) => {
                let count = self.shape(&[count], layout, &mut free, &mut rests)?;
                count.first().copied().unwrap_or(1)
            }
        };
        Ok(vec![shape; count])
    }

    /// Whether every relation and dim expression holds in `layout`; `Err`: the first that does
    /// not, as written, and why.
    fn check(&self, layout: &Layout) -> Result<(), String> {
        for relation in self.spec.relations {
            if relation.after_body || relation.binds {
                continue;
            }
            let text = self.spec.text_of(relation.text);
            let sides = self
                .eval(relation.lhs, layout)
                .and_then(|lhs| Ok((lhs, self.eval(relation.rhs, layout)?)));
            match sides {
                Ok((Some(lhs), Some(rhs))) if !relation.op.holds(lhs, rhs) => {
                    return Err(format!("the contract's `{text}`"));
                }
                Err(problem) => {
                    return Err(format!("the contract's `{text}` (it {})", problem.text()));
                }
                _ => {}
            }
        }
        let mut elements = 0usize;
        for index in 0..self.params.len() {
            match self.shapes(index, layout) {
                Err((text, problem)) => {
                    return Err(format!("the contract's `{text}` (it {})", problem.text()));
                }
                Ok(shapes) => {
                    for shape in shapes {
                        let count = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
                        elements = elements.saturating_add(count.unwrap_or(usize::MAX));
                    }
                }
            }
        }
        if elements > MAX_ELEMENTS {
            return Err(format!(
                "the limit of {MAX_ELEMENTS} elements in the tensors of one draw"
            ));
        }
        Ok(())
    }

    /// The value rules of `clause` in `layout`, resolved (`None`: it has none, or a bound has
    /// no value; the guard's verdict decides then).
    pub(crate) fn rule(&self, clause: &ClauseSpec, layout: &Layout) -> Option<Resolved> {
        let values = clause.values?;
        let dim = |id: u16| layout.dims.get(usize::from(id)).copied();
        crate::value::resolve(self.spec, values, &self.bounds, &dim).ok()
    }

    /// The draws of every parameter's value for `layout` (`None` for a given one).
    fn tensors(&self, layout: &Layout) -> Vec<BoxedStrategy<Option<Drawn>>> {
        (0..self.params.len())
            .map(|index| self.draw(index, layout))
            .collect()
    }

    fn draw(&self, index: usize, layout: &Layout) -> BoxedStrategy<Option<Drawn>> {
        let plan = &self.params[index];
        if matches!(plan.source, Source::Given) {
            return Just(None).boxed();
        }
        if !layout.present.get(index).copied().unwrap_or(true) {
            return Just(Some(Drawn::Optional(None))).boxed();
        }
        let dtype = layout.dtypes.get(index).copied().unwrap_or(DType::F32);
        let values = match plan.source {
            Source::Clause(clause) => match (self.rule(clause, layout), clause.values) {
                (Some(rule), Some(spec)) => Values::new(dtype, &rule, !spec.ignore.is_empty()),
                _ => Values::unconstrained(dtype),
            },
            Source::Mask(_) => {
                let zero_one = Resolved {
                    ranges: Some(vec![Interval {
                        lo: Some(Num::Int(0)),
                        hi: Some(Num::Int(1)),
                        inclusive: true,
                    }]),
                    ignore: Vec::new(),
                    finite: false,
                    allow_all: false,
                    integral: false,
                };
                Values::new(DType::U8, &zero_one, false)
            }
            Source::Free | Source::Given => Values::unconstrained(dtype),
        };
        let shapes = self.shapes(index, layout).unwrap_or_default();
        let rescale = plan.rescale.and_then(|(axis, derived)| {
            let first_range = |rule: Resolved| {
                let range = rule.ranges.as_ref()?.first()?;
                <f64 as Compare>::interval(*range, true)
            };
            let (mut lo, mut hi) = first_range(self.rule(derived, layout)?)?;
            // Within what the rows can sum to, each value in the tensor's own range.
            let own = match plan.source {
                Source::Clause(clause) => self.rule(clause, layout).and_then(first_range),
                _ => None,
            };
            let (each_lo, each_hi) = own.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
            let len = shapes
                .first()
                .and_then(|s| s.get(axis))
                .copied()
                .unwrap_or(0) as f64;
            if len > 0.0 {
                lo = lo.max(each_lo * len);
                hi = hi.min(each_hi * len);
            }
            let target = match (lo.is_finite(), hi.is_finite()) {
                _ if lo > hi => return None,
                (true, true) => lo + (hi - lo) / 2.0,
                (true, false) => lo,
                (false, true) => hi,
                (false, false) => return None,
            };
            Some((
                axis,
                values::Rescale {
                    target,
                    lo: each_lo,
                    hi: each_hi,
                },
            ))
        });
        let mut tensors: Vec<BoxedStrategy<candle_core::Tensor>> = shapes
            .into_iter()
            .map(|shape| values::tensor(&values, dtype, shape, rescale))
            .collect();
        match plan.kind {
            Kind::Sequence => tensors
                .prop_map(|tensors| Some(Drawn::Sequence(tensors)))
                .boxed(),
            Kind::Optional => match tensors.pop() {
                Some(tensor) => tensor
                    .prop_map(|tensor| Some(Drawn::Optional(Some(tensor))))
                    .boxed(),
                None => Just(Some(Drawn::Optional(None))).boxed(),
            },
            _ => match tensors.pop() {
                Some(tensor) => tensor
                    .prop_map(|tensor| Some(Drawn::Tensor(tensor)))
                    .boxed(),
                None => Just(None).boxed(),
            },
        }
    }

    /// Every draw: a layout where the relations hold, then its tensors; one value per
    /// parameter (`None` for a given one).
    pub(crate) fn draws(self: &Arc<Self>) -> BoxedStrategy<Draw> {
        let plan = Arc::clone(self);
        Related {
            plan: Arc::clone(self),
            layouts: self.layouts(),
        }
        .prop_flat_map(move |layout| (Just(layout.clone()), plan.tensors(&layout)))
        .prop_map(|(layout, values)| Draw { layout, values })
        .boxed()
    }
}

/// Layouts where every relation and dim expression holds: a draw that breaks one is drawn
/// again, [`LAYOUT_TRIES`] times at most, and then the relation most often broken is reported
/// (a panic: the contract cannot be met with these dims). Shrinking skips such layouts.
#[derive(Debug)]
struct Related {
    plan: Arc<Plan>,
    layouts: BoxedStrategy<Layout>,
}

impl Strategy for Related {
    type Tree = RelatedTree;
    type Value = Layout;

    fn new_tree(&self, runner: &mut TestRunner) -> NewTree<Self> {
        let mut broken: Vec<(String, usize)> = Vec::new();
        for _ in 0..LAYOUT_TRIES {
            let tree = self.layouts.new_tree(runner)?;
            match self.plan.check(&tree.current()) {
                Ok(()) => {
                    let accepted = tree.current();
                    return Ok(RelatedTree {
                        plan: Arc::clone(&self.plan),
                        tree,
                        accepted,
                    });
                }
                Err(text) => match broken.iter_mut().find(|(t, _)| *t == text) {
                    Some((_, count)) => *count += 1,
                    None => broken.push((text, 1)),
                },
            }
        }
        let (text, count) = broken
            .into_iter()
            .max_by_key(|(_, count)| *count)
            .unwrap_or_default();
        let domains: Vec<String> = self
            .plan
            .spec
            .dims
            .iter()
            .zip(&self.plan.dims)
            .map(|(name, d)| match d.lo == d.hi {
                true => format!("{name} = {}", d.lo),
                false => format!("{name} in {}..={}", d.lo, d.hi),
            })
            .collect();
        panic!(
            "arbitrary!({}): no draw meets {text} ({count} of {LAYOUT_TRIES} \
             draws broke it) with dims [{}]; set the dims' ranges so it can hold, with \
             `dims = [...]`",
            self.plan.name,
            domains.join(", ")
        )
    }
}

/// A layout that shrinks only to layouts where the relations hold: a step to one that breaks
/// a relation is followed by another step the same way, [`SKIPS`] times at most.
struct RelatedTree {
    plan: Arc<Plan>,
    tree: Box<dyn ValueTree<Value = Layout>>,
    /// The last layout where the relations hold: the current value.
    accepted: Layout,
}

/// How many steps a shrink takes past layouts or draws the contract rejects.
pub(crate) const SKIPS: usize = 64;

impl RelatedTree {
    fn step(&mut self, step: fn(&mut dyn ValueTree<Value = Layout>) -> bool) -> bool {
        for _ in 0..SKIPS {
            if !step(&mut *self.tree) {
                return false;
            }
            let layout = self.tree.current();
            if self.plan.check(&layout).is_ok() {
                self.accepted = layout;
                return true;
            }
        }
        false
    }
}

impl ValueTree for RelatedTree {
    type Value = Layout;

    fn current(&self) -> Layout {
        self.accepted.clone()
    }

    fn simplify(&mut self) -> bool {
        self.step(|tree| tree.simplify())
    }

    fn complicate(&mut self) -> bool {
        self.step(|tree| tree.complicate())
    }
}

impl std::fmt::Debug for RelatedTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelatedTree")
            .field("accepted", &self.accepted)
            .finish_non_exhaustive()
    }
}
