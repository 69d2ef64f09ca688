//! Checking one call against its contract: binding named dims left to right, then dtype, rank,
//! dims, dim expressions, relations, device and `contiguous`, then the value rules.
//!
//! An expansion holds a [`Guard`]: it reads the mode once, and owns what the call binds from
//! the inputs to the `return` clause. In `off` mode it runs none of the closures it is given,
//! so nothing of the contract is evaluated. The success path allocates nothing: violations go
//! into a `Vec` that stays empty, and dims are bound into arrays on the stack.

use candle_core::{Device, Tensor};

use crate::dims::{self, ArithmeticError};
use crate::error::{ContractError, DimBinding, DimSource, Violation};
use crate::mode::{self, Mode};
use crate::report::{self, Known, MaskProblem, Mismatch, RelationFound};
use crate::rule::BoundValue;
use crate::scan;
use crate::spec::{BoundSpec, ClauseSpec, ConstantProbe, ContractSpec, DimSpec, ExprOp, Subject};
use crate::value::{self, ValueClause};

const UNBOUND: u16 = u16::MAX;

/// The value of a named dim during one call, and the clause and axis that bound it.
#[derive(Debug, Clone, Copy)]
struct DimSlot {
    value: usize,
    clause: u16,
    axis: usize,
    source: DimSource,
    /// The dim's name is a constant in scope: the probe that compares with it.
    constant: Option<ConstantProbe>,
}

impl DimSlot {
    /// A dim not bound yet.
    const UNBOUND: Self = Self {
        value: 0,
        clause: UNBOUND,
        axis: 0,
        source: DimSource::Axis,
        constant: None,
    };

    fn get(&self) -> Option<usize> {
        (self.clause != UNBOUND && self.source != DimSource::UnknownConstant).then_some(self.value)
    }

    fn is_bound(&self) -> bool {
        self.clause != UNBOUND
    }
}

/// Whether a dim's probe belongs to a constant: a plain dim's pattern binds every value.
fn is_constant(probe: ConstantProbe) -> bool {
    !(probe(0) && probe(1))
}

/// The value a constant's probe accepts, for a message after a mismatch (a probe only
/// compares): `None` when it is negative or above 2^24.
#[cold]
fn constant_value(probe: ConstantProbe) -> Option<usize> {
    (0..=1u64 << 24).find(|&v| probe(v)).map(|v| v as usize)
}

/// The tensors of one clause, with their element index for a sequence.
fn tensors_of<'t>(arg: &'t ClauseArg<'t>) -> impl Iterator<Item = (Option<usize>, &'t Tensor)> {
    let (one, many) = match arg {
        ClauseArg::One(tensor) => (*tensor, &[][..]),
        ClauseArg::Missing => (None, &[][..]),
        ClauseArg::Many(items) => (None, &items[..]),
    };
    one.map(|t| (None, t)).into_iter().chain(
        many.iter()
            .enumerate()
            .filter_map(|(i, t)| t.map(|t| (Some(i), t))),
    )
}

/// The sizes of a named run of dims (`*B`) during one call.
#[derive(Debug, Clone)]
struct RunSlot {
    dims: Vec<usize>,
    clause: u16,
    axis: usize,
}

impl RunSlot {
    /// A run not bound yet.
    const UNBOUND: Self = Self {
        dims: Vec::new(),
        clause: UNBOUND,
        axis: 0,
    };
}

/// The tensors one clause names at a call.
#[derive(Debug)]
pub enum ClauseArg<'a> {
    /// One tensor, or `None`: an absent `Option` argument, a `None` field, or a path whose
    /// optional step (`?`) was `None`.
    One(Option<&'a Tensor>),
    /// A path whose index step (`[i]`) is past the end.
    Missing,
    /// A sequence (`items: [f32[E]; N]`, or a path through `[..]`); `None` elements are
    /// skipped.
    Many(Vec<Option<&'a Tensor>>),
}

/// The guard of one call: the contract, the mode read at the call, and what the inputs bound
/// (kept for the `return` clause). `BOUNDS` and `VALUES` count the value rules' bounds and the
/// values from scope that dims use (`ContractSpec::values`).
///
/// An expansion is its spec table and at most three calls:
/// `Guard::<DIMS, RUNS, BOUNDS, VALUES>::new(&SPEC)`, [`check_inputs`](Self::check_inputs)
/// before the body and [`check_output`](Self::check_output) after it. A contract with derived
/// subjects (`{target.sum(1)?}: ...`) or masks (`where ...`) adds, after `check_inputs`, the
/// test [`derives`](Self::derives) and, when it holds, the evaluation of those expressions in
/// the function's scope and [`check_derived`](Self::check_derived).
#[derive(Debug)]
pub struct Guard<const DIMS: usize, const RUNS: usize, const BOUNDS: usize, const VALUES: usize> {
    spec: &'static ContractSpec,
    mode: Mode,
    /// `None` until the inputs are checked (and so in `off` mode).
    call: Option<CallState<DIMS, RUNS, BOUNDS, VALUES>>,
}

/// What one guarded call has bound so far. Plain data (`Send`), so an `async fn`'s future
/// stays `Send`.
#[derive(Debug)]
struct CallState<const DIMS: usize, const RUNS: usize, const BOUNDS: usize, const VALUES: usize> {
    dims: [DimSlot; DIMS],
    runs: [RunSlot; RUNS],
    /// The device of the first checked tensor, and that tensor's subject.
    device: Option<(Device, &'static str)>,
    bounds: [BoundValue; BOUNDS],
    values: [BoundValue; VALUES],
    /// The inputs passed and the derived subjects and masks are still to come
    /// ([`Guard::derives`]).
    later: bool,
}

impl<const DIMS: usize, const RUNS: usize, const BOUNDS: usize, const VALUES: usize>
    CallState<DIMS, RUNS, BOUNDS, VALUES>
{
    fn bindings(&mut self) -> Bindings<'_> {
        Bindings {
            dims: &mut self.dims,
            runs: &mut self.runs,
            device: &mut self.device,
        }
    }
}

impl<const DIMS: usize, const RUNS: usize, const BOUNDS: usize, const VALUES: usize>
    Guard<DIMS, RUNS, BOUNDS, VALUES>
{
    /// The guard of a call to the function `spec` describes, in the current [`Mode`].
    #[inline]
    pub fn new(spec: &'static ContractSpec) -> Self {
        Self {
            spec,
            mode: mode::mode(),
            call: None,
        }
    }

    /// Checks the arguments and fields, unless the mode is `off`: then `inputs` is not called.
    /// `inputs` gathers the call's tensors (in the function's scope) and hands them to
    /// [`Inputs::check`].
    #[inline]
    pub fn check_inputs(
        &mut self,
        inputs: impl FnOnce(Inputs<'_, DIMS, RUNS, BOUNDS, VALUES>) -> Result<(), ContractError>,
    ) -> Result<(), ContractError> {
        if self.mode == Mode::Off {
            return Ok(());
        }
        inputs(Inputs { guard: self })
    }

    /// Whether the expansion evaluates the derived subjects and masks now and hands them to
    /// [`check_derived`](Self::check_derived): only in `full` mode (the only mode that checks
    /// values), for a contract that has them, once the inputs passed their dtype, shape, device
    /// and relation checks and, for CPU tensors, the value rules that need no mask (so an
    /// expression such as `{target.sum(1)?}` never runs on a tensor of the wrong shape, nor
    /// `{table.embedding(ids)?}` on CPU ids out of range; device tensors' values are read after
    /// it, in the call's one transfer).
    #[inline]
    pub fn derives(&self) -> bool {
        self.call.as_ref().is_some_and(|call| call.later)
    }

    /// Checks the derived subjects (`derived[k]` belongs to the `k`-th clause whose subject is
    /// [`Subject::Derived`]) with the dims the inputs bound, the relations, and then the value
    /// rules of every input clause, each under its mask (`masks[i]` is the mask of index `i`;
    /// `None` in it checks every position). `args` are the inputs again, as handed to
    /// [`Inputs::check`]. Nothing when [`derives`](Self::derives) is false.
    pub fn check_derived(
        &mut self,
        args: &[ClauseArg<'_>],
        derived: &[ClauseArg<'_>],
        masks: &[ClauseArg<'_>],
    ) -> Result<(), ContractError> {
        let spec = self.spec;
        let Some(call) = self.call.as_mut().filter(|call| call.later) else {
            return Ok(());
        };
        call.later = false;
        let bounds = call.bounds;
        let values = call.values;
        check_derived(
            spec,
            args,
            derived,
            masks,
            &bounds,
            &values,
            call.bindings(),
        )
    }

    /// Checks the value coming out of the body against the `return` clauses (`outputs()[i]`
    /// belongs to `spec.outputs[i]`), with the dims the inputs bound; nothing when the inputs
    /// were not checked (`off` mode). An `Err` returned by the body is passed through
    /// unchecked: its clause arguments are all `ClauseArg::One(None)`.
    #[inline]
    pub fn check_output<'a, const N: usize>(
        &mut self,
        outputs: impl FnOnce() -> [ClauseArg<'a>; N],
    ) -> Result<(), ContractError> {
        match &mut self.call {
            None => Ok(()),
            Some(call) => {
                let bounds = call.bounds;
                let values = call.values;
                check_output(
                    self.spec,
                    self.mode,
                    &outputs(),
                    &bounds,
                    &values,
                    call.bindings(),
                )
            }
        }
    }
}

/// The input check of a [`Guard`] in `full` or `shapes` mode, handed to the closure that
/// gathers the tensors.
#[derive(Debug)]
pub struct Inputs<
    'g,
    const DIMS: usize,
    const RUNS: usize,
    const BOUNDS: usize,
    const VALUES: usize,
> {
    guard: &'g mut Guard<DIMS, RUNS, BOUNDS, VALUES>,
}

impl<const DIMS: usize, const RUNS: usize, const BOUNDS: usize, const VALUES: usize>
    Inputs<'_, DIMS, RUNS, BOUNDS, VALUES>
{
    /// Checks the arguments and fields of one call: `args[i]` belongs to `spec.inputs[i]`,
    /// `constants[i]` is the probe of named dim `i` (see [`ConstantProbe`]), `values` are the
    /// values from scope that `spec.values` names, and `bounds` evaluates the value rules'
    /// bounds, called in `full` mode only.
    #[inline]
    pub fn check(
        self,
        args: &[ClauseArg<'_>],
        constants: &[ConstantProbe; DIMS],
        values: [BoundValue; VALUES],
        bounds: impl FnOnce() -> [BoundValue; BOUNDS],
    ) -> Result<(), ContractError> {
        let guard = self.guard;
        let bounds = if guard.mode == Mode::Full {
            bounds()
        } else {
            [BoundValue::Unset; BOUNDS]
        };
        let call = guard.call.insert(CallState {
            dims: [DimSlot::UNBOUND; DIMS],
            runs: [const { RunSlot::UNBOUND }; RUNS],
            device: None,
            bounds,
            values,
            later: false,
        });
        let mut bindings = Bindings {
            dims: &mut call.dims,
            runs: &mut call.runs,
            device: &mut call.device,
        };
        let later = check_inputs(
            guard.spec,
            guard.mode,
            args,
            &call.bounds,
            &call.values,
            constants,
            &mut bindings,
        )?;
        call.later = later;
        Ok(())
    }
}

/// Mutable access to a call's bindings, independent of their count.
#[derive(Debug)]
struct Bindings<'a> {
    dims: &'a mut [DimSlot],
    runs: &'a mut [RunSlot],
    device: &'a mut Option<(Device, &'static str)>,
}

/// Checks the arguments and fields of one call (see [`Inputs::check`]). `Ok(true)`: they
/// passed, and the derived subjects and masks come next ([`Guard::check_derived`]), with the
/// relations and value rules.
fn check_inputs(
    spec: &'static ContractSpec,
    mode: Mode,
    args: &[ClauseArg<'_>],
    bounds: &[BoundValue],
    values: &[BoundValue],
    constants: &[ConstantProbe],
    bindings: &mut Bindings<'_>,
) -> Result<bool, ContractError> {
    if args.len() != spec.inputs.len() {
        return Err(malformed(spec, "input", spec.inputs.len(), args.len()));
    }
    for (slot, &probe) in bindings.dims.iter_mut().zip(constants) {
        if is_constant(probe) {
            slot.constant = Some(probe);
        }
    }
    let two_phase = mode == Mode::Full && has_later(spec);
    let mut checker = Checker {
        spec,
        bindings,
        values,
        violations: Vec::new(),
    };
    // A derived subject is not computed yet: its clause waits for `check_derived`.
    let given = || {
        spec.inputs
            .iter()
            .zip(args)
            .enumerate()
            .filter(|(_, (clause, _))| !is_derived(clause))
    };
    for (index, (clause, arg)) in given() {
        checker.bind_clause(index, clause, arg);
    }
    let mut first_device: Option<(&Device, &'static str)> = None;
    for (index, (clause, arg)) in given() {
        checker.check_clause(index, clause, arg, &mut first_device);
    }
    if (two_phase || !spec.outputs.is_empty()) && spec.same_device {
        *checker.bindings.device = first_device.map(|(device, owner)| (device.clone(), owner));
    }
    // A relation naming a dim that only a derived subject binds is skipped here (its dim is
    // unbound) and checked with the derived subjects.
    checker.check_relations(false);
    if two_phase && checker.violations.is_empty() {
        // The value rules that need no derived subject and no mask are read now where that is
        // free (CPU tensors, in place), so an expression such as `{table.embedding(ids)?}`
        // never runs on ids the contract rejects; tensors on a device wait for the call's one
        // transfer.
        let dims = &*checker.bindings.dims;
        let clauses: Vec<ValueClause<'_>> = value_clauses(
            spec.inputs
                .iter()
                .zip(args)
                .filter(|(clause, _)| read_first(spec, clause, dims)),
        )
        .into_iter()
        .filter(|item| scan::reads_in_place(item.tensor))
        .collect();
        if !clauses.is_empty() {
            checker.check_values(&clauses, bounds);
        }
        if checker.violations.is_empty() {
            return Ok(true);
        }
        return checker.finish(false).map(|()| false);
    }
    if mode == Mode::Full {
        // After a shape violation the derived subjects and masks are not computed: the value
        // rules that need neither are still checked.
        // (A bound on a dim left unbound says nothing, as `value` resolves it.)
        let clauses = value_clauses(
            spec.inputs
                .iter()
                .zip(args)
                .filter(|(clause, _)| needs_nothing_later(clause)),
        );
        if !clauses.is_empty() {
            checker.check_values(&clauses, bounds);
        }
    }
    checker.finish(false).map(|()| false)
}

/// Whether a clause's value rules are read before the derived subjects are computed: it needs
/// neither one nor a mask, and every dim its bounds name is bound by an argument (not by a
/// derived subject, which is not computed yet).
fn read_first(spec: &ContractSpec, clause: &ClauseSpec, dims: &[DimSlot]) -> bool {
    let bound_by_argument = |id: u16| {
        dims.get(usize::from(id)).is_some_and(|slot| {
            slot.is_bound()
                && spec
                    .inputs
                    .get(usize::from(slot.clause))
                    .is_some_and(|owner| !is_derived(owner))
        })
    };
    let bounds_ready = clause.values.is_none_or(|values| {
        values
            .ranges
            .iter()
            .flat_map(|range| [range.lo, range.hi])
            .flatten()
            .all(|bound| match bound {
                BoundSpec::Dim(id) => bound_by_argument(id),
                _ => true,
            })
    });
    needs_nothing_later(clause) && bounds_ready
}

/// Whether a clause is neither a derived subject nor masked: its tensors are at hand with the
/// inputs.
fn needs_nothing_later(clause: &ClauseSpec) -> bool {
    !is_derived(clause) && clause.mask.is_none()
}

/// Whether a clause's subject is computed before the body (`{target.sum(1)?}: ...`).
fn is_derived(clause: &ClauseSpec) -> bool {
    matches!(clause.subject, Subject::Derived(_))
}

/// Whether a contract has derived subjects or masks, checked after the inputs.
fn has_later(spec: &ContractSpec) -> bool {
    spec.inputs
        .iter()
        .any(|clause| is_derived(clause) || clause.mask.is_some())
}

/// Checks the derived subjects, the relations and the value rules (see
/// [`Guard::check_derived`]).
fn check_derived(
    spec: &'static ContractSpec,
    args: &[ClauseArg<'_>],
    derived: &[ClauseArg<'_>],
    masks: &[ClauseArg<'_>],
    bounds: &[BoundValue],
    values: &[BoundValue],
    mut bindings: Bindings<'_>,
) -> Result<(), ContractError> {
    let derived_clauses = spec.inputs.iter().filter(|c| is_derived(c)).count();
    let mask_count = spec
        .inputs
        .iter()
        .filter_map(|c| c.mask.map(|m| usize::from(m.index) + 1))
        .max()
        .unwrap_or(0);
    if args.len() != spec.inputs.len() {
        return Err(malformed(spec, "input", spec.inputs.len(), args.len()));
    }
    if derived.len() != derived_clauses {
        return Err(malformed(spec, "derived", derived_clauses, derived.len()));
    }
    if masks.len() != mask_count {
        return Err(malformed(spec, "mask", mask_count, masks.len()));
    }
    // Each clause with its tensors: the argument, or the next derived subject.
    let mut derived_args = derived.iter();
    let all: Vec<(usize, &'static ClauseSpec, &ClauseArg<'_>)> = spec
        .inputs
        .iter()
        .zip(args)
        .enumerate()
        .map(|(index, (clause, arg))| {
            let arg = if is_derived(clause) {
                derived_args.next().unwrap_or(arg)
            } else {
                arg
            };
            (index, clause, arg)
        })
        .collect();
    let mut checker = Checker {
        spec,
        bindings: &mut bindings,
        values,
        violations: Vec::new(),
    };
    for &(index, clause, arg) in all.iter().filter(|(_, c, _)| is_derived(c)) {
        checker.bind_clause(index, clause, arg);
    }
    // The derived clauses, and the arguments' clauses again where a dim expression may name a
    // dim only a derived subject binds (every other dim of theirs was bound by an argument and
    // checked already, and nothing is reported twice: those checks passed).
    let device = checker.bindings.device.clone();
    let mut first_device = device.as_ref().map(|(d, owner)| (d, *owner));
    let waits_for_derived = |clause: &ClauseSpec| {
        is_derived(clause)
            || clause
                .shape
                .iter()
                .chain(&clause.sequence)
                .any(|dim| matches!(dim, DimSpec::Expr(_)))
    };
    for &(index, clause, arg) in all.iter().filter(|(_, c, _)| waits_for_derived(c)) {
        checker.check_clause(index, clause, arg, &mut first_device);
    }
    checker.check_relations(false);
    if !checker.violations.is_empty() {
        return checker.finish(false);
    }
    // The CPU tensors `check_inputs` read already are not read again (a dim bound by an
    // argument stays bound by it, so `read_first` says the same as it did there).
    let dims = &*checker.bindings.dims;
    let mut clauses: Vec<ValueClause<'_>> =
        value_clauses(all.iter().map(|&(_, clause, arg)| (clause, arg)))
            .into_iter()
            .filter(|item| {
                !(read_first(spec, item.clause, dims) && scan::reads_in_place(item.tensor))
            })
            .collect();
    checker.attach_masks(&mut clauses, masks);
    if !clauses.is_empty() {
        checker.check_values(&clauses, bounds);
    }
    checker.finish(false)
}

/// Checks the value coming out of the body (see [`Guard::check_output`]).
fn check_output(
    spec: &'static ContractSpec,
    mode: Mode,
    args: &[ClauseArg<'_>],
    bounds: &[BoundValue],
    values: &[BoundValue],
    mut bindings: Bindings<'_>,
) -> Result<(), ContractError> {
    if spec.outputs.is_empty() || args.iter().all(|a| matches!(a, ClauseArg::One(None))) {
        return Ok(());
    }
    if args.len() != spec.outputs.len() {
        return Err(malformed(spec, "return", spec.outputs.len(), args.len()));
    }
    let first = spec.inputs.len();
    let mut checker = Checker {
        spec,
        bindings: &mut bindings,
        values,
        violations: Vec::new(),
    };
    for (k, (clause, arg)) in spec.outputs.iter().zip(args).enumerate() {
        checker.bind_clause(first + k, clause, arg);
    }
    let device = checker.bindings.device.clone();
    let mut first_device = device.as_ref().map(|(d, owner)| (d, *owner));
    for (k, (clause, arg)) in spec.outputs.iter().zip(args).enumerate() {
        checker.check_clause(first + k, clause, arg, &mut first_device);
    }
    checker.check_relations(true);
    if mode == Mode::Full {
        let clauses = value_clauses(spec.outputs.iter().zip(args));
        if !clauses.is_empty() {
            checker.check_values(&clauses, bounds);
        }
    }
    checker.finish(true)
}

/// An expansion that does not match its spec (a macro and runtime of different versions, which
/// the exact version pin rules out): an error, never a panic or a silently skipped clause.
#[cold]
fn malformed(
    spec: &'static ContractSpec,
    what: &str,
    expected: usize,
    found: usize,
) -> ContractError {
    let violation = Violation::new(
        Subject::Argument(spec.function),
        crate::error::Rule::Count,
        format!("{expected} tensors for the contract's {what} clauses"),
        format!(
            "{found}: the expansion and the runtime differ (`candle-contracts` and \
             `candle-contracts-macros` must be the same version)"
        ),
    );
    ContractError::new(spec, false, vec![violation])
}

/// The tensors whose value rules apply: an allowed dtype, and a clause with value rules.
fn value_clauses<'t>(
    clauses: impl Iterator<Item = (&'static ClauseSpec, &'t ClauseArg<'t>)>,
) -> Vec<ValueClause<'t>> {
    let mut out = Vec::new();
    for (clause, arg) in clauses {
        if clause.values.is_none() {
            continue;
        }
        for (element, tensor) in tensors_of(arg) {
            if clause.dtypes.contains(tensor.dtype()) {
                out.push(ValueClause {
                    element,
                    clause,
                    tensor,
                    mask: None,
                });
            }
        }
    }
    out
}

struct Checker<'b, 'c> {
    spec: &'static ContractSpec,
    bindings: &'b mut Bindings<'c>,
    values: &'b [BoundValue],
    violations: Vec<Violation>,
}

/// Where in the actual dims each dim of a shape lands, once the rank fits.
struct Alignment {
    /// Index in the spec of the `..` or `*B`, if any.
    rest: Option<usize>,
    /// How many actual dims the `..` or `*B` covers.
    rest_len: usize,
}

impl Alignment {
    fn of(shape: &[DimSpec], rank: usize) -> Option<Self> {
        let rest = shape
            .iter()
            .position(|d| matches!(d, DimSpec::Rest | DimSpec::Run(_)));
        let fixed = shape.len() - usize::from(rest.is_some());
        match rest {
            Some(_) if rank >= fixed => Some(Self {
                rest,
                rest_len: rank - fixed,
            }),
            None if rank == fixed => Some(Self { rest, rest_len: 0 }),
            _ => None,
        }
    }

    /// The actual axis of spec position `position` (for positions other than the rest).
    fn axis(&self, position: usize) -> usize {
        match self.rest {
            Some(rest) if position > rest => position + self.rest_len - 1,
            _ => position,
        }
    }
}

impl Checker<'_, '_> {
    fn clause_name(&self, index: u16) -> &'static str {
        clause_name(self.spec, index)
    }

    fn binding(&self, dim: u16) -> Option<DimBinding> {
        binding_of(self.spec, &self.bindings.dims[usize::from(dim)], dim)
    }

    /// Binds a named dim at an occurrence of size `actual`, if nothing bound it yet. A constant
    /// is bound to its own value, found by its probe.
    fn bind_dim(&mut self, id: u16, actual: usize, clause: u16, axis: usize, source: DimSource) {
        let index = usize::from(id);
        if self.bindings.dims[index].is_bound() {
            return;
        }
        let constant = self.bindings.dims[index].constant;
        let mut slot = DimSlot {
            value: actual,
            clause,
            axis,
            source,
            constant,
        };
        if let Some(probe) = constant {
            slot.source = DimSource::Constant;
            if !probe(actual as u64) {
                match constant_value(probe) {
                    Some(value) => slot.value = value,
                    None => slot.source = DimSource::UnknownConstant,
                }
            }
        }
        self.bindings.dims[index] = slot;
    }

    /// Binds the dims of every tensor of a clause, and a sequence's count.
    fn bind_clause(&mut self, index: usize, clause: &ClauseSpec, arg: &ClauseArg<'_>) {
        for (_, tensor) in tensors_of(arg) {
            self.bind(index, clause, tensor);
        }
        if let (ClauseArg::Many(items), Some(DimSpec::Named(id))) = (arg, clause.sequence) {
            self.bind_dim(id, items.len(), index as u16, 0, DimSource::Count);
        }
    }

    /// Checks every tensor of a clause: presence, layout, device; a sequence's count.
    fn check_clause<'t>(
        &mut self,
        index: usize,
        clause: &'static ClauseSpec,
        arg: &'t ClauseArg<'t>,
        first_device: &mut Option<(&'t Device, &'static str)>,
    ) {
        let missing = match (arg, clause.subject) {
            (ClauseArg::Missing, _) => Some(true),
            (ClauseArg::One(None), Subject::Field(_)) if !clause.optional => Some(false),
            _ => None,
        };
        if let Some(past_the_end) = missing {
            self.violations
                .push(report::missing(self.spec, clause, past_the_end));
            return;
        }
        if let (ClauseArg::Many(items), Some(count)) = (arg, clause.sequence) {
            self.check_count(index, clause, items.len(), count);
        }
        let before = self.violations.len();
        for (element, tensor) in tensors_of(arg) {
            self.check_layout(clause, tensor);
            if self.spec.same_device {
                match *first_device {
                    None => *first_device = Some((tensor.device(), clause.subject.name())),
                    Some((device, owner)) => {
                        if !tensor.device().same_device(device) {
                            self.violations
                                .push(report::device(clause, tensor, device, owner));
                        }
                    }
                }
            }
            for violation in &mut self.violations[before..] {
                if violation.element.is_none() {
                    violation.element = element;
                }
            }
        }
    }

    /// A sequence's length against its count (`N`, a literal or an expression).
    fn check_count(&mut self, index: usize, clause: &ClauseSpec, len: usize, count: DimSpec) {
        let (expected, bound) = match count {
            DimSpec::Fixed(n) => (Some(n), Vec::new()),
            DimSpec::Named(id) => {
                let slot = self.bindings.dims[usize::from(id)];
                if slot.clause == index as u16 && slot.source == DimSource::Count {
                    return; // this clause bound it
                }
                let binding = self.binding(id);
                (slot.get(), binding.into_iter().collect())
            }
            DimSpec::Expr(expr) => match self.eval(expr.ops) {
                Ok(Some(n)) => (usize::try_from(n).ok(), self.names_in(expr.ops)),
                Ok(None) => (None, Vec::new()),
                Err(problem) => {
                    let names = self.names_in(expr.ops);
                    self.violations.push(report::dim_arithmetic(
                        self.spec,
                        clause,
                        None,
                        self.spec.text_of(expr.text),
                        problem,
                        names,
                    ));
                    return;
                }
            },
            DimSpec::Any | DimSpec::Rest | DimSpec::Run(_) => (None, Vec::new()),
        };
        if let Some(expected) = expected
            && expected != len
        {
            self.violations
                .push(report::count(clause, expected, len, bound));
        }
    }

    /// First pass: bind every named dim and run at its first occurrence.
    fn bind(&mut self, index: usize, clause: &ClauseSpec, tensor: &Tensor) {
        let dims = tensor.dims();
        let Some(alignment) = Alignment::of(clause.shape, dims.len()) else {
            return;
        };
        let clause_index = index as u16;
        for (position, dim) in clause.shape.iter().enumerate() {
            match *dim {
                DimSpec::Named(id) => {
                    let axis = alignment.axis(position);
                    self.bind_dim(id, dims[axis], clause_index, axis, DimSource::Axis);
                }
                DimSpec::Run(id) => {
                    let slot = &mut self.bindings.runs[usize::from(id)];
                    if slot.clause == UNBOUND {
                        slot.dims = dims[position..position + alignment.rest_len].to_vec();
                        slot.clause = clause_index;
                        slot.axis = position;
                    }
                }
                DimSpec::Fixed(_) | DimSpec::Any | DimSpec::Rest | DimSpec::Expr(_) => {}
            }
        }
    }

    /// Second pass: dtype, rank, every dim against its literal, binding or expression, and
    /// `contiguous`.
    fn check_layout(&mut self, clause: &'static ClauseSpec, tensor: &Tensor) {
        if !clause.dtypes.contains(tensor.dtype()) {
            self.violations
                .push(report::dtype(self.spec, clause, tensor));
        }
        let dims = tensor.dims();
        match Alignment::of(clause.shape, dims.len()) {
            None => {
                let expected = self.expected_shape(clause);
                let slots = &self.bindings.dims;
                let fixed = |id: u16, size: usize| {
                    let slot = &slots[usize::from(id)];
                    match (slot.get(), slot.constant) {
                        (Some(value), _) => Some(value == size),
                        (None, Some(probe)) => Some(probe(size as u64)),
                        (None, None) => None,
                    }
                };
                let violation = report::rank(clause, expected, dims, fixed);
                self.violations.push(violation);
            }
            Some(alignment) => self.check_dims(clause, dims, &alignment),
        }
        if clause.contiguous && !tensor.is_contiguous() {
            self.violations.push(report::contiguous(clause, tensor));
        }
    }

    fn check_dims(&mut self, clause: &'static ClauseSpec, dims: &[usize], alignment: &Alignment) {
        let mut mismatches = Vec::new();
        for (position, dim) in clause.shape.iter().enumerate() {
            let axis = alignment.axis(position);
            match *dim {
                DimSpec::Fixed(expected) => {
                    if dims[axis] != expected {
                        mismatches.push(Mismatch::Fixed {
                            axis,
                            actual: dims[axis],
                            expected,
                        });
                    }
                }
                DimSpec::Named(id) => {
                    let slot = self.bindings.dims[usize::from(id)];
                    let matches = match slot.source {
                        DimSource::UnknownConstant => {
                            slot.constant.is_some_and(|probe| probe(dims[axis] as u64))
                        }
                        _ => slot.get() == Some(dims[axis]),
                    };
                    if !matches && let Some(binding) = self.binding(id) {
                        mismatches.push(Mismatch::Named {
                            axis,
                            actual: dims[axis],
                            binding,
                        });
                    }
                }
                DimSpec::Run(id) => {
                    let actual = &dims[position..position + alignment.rest_len];
                    let slot = &self.bindings.runs[usize::from(id)];
                    if slot.dims != actual {
                        mismatches.push(Mismatch::Run {
                            from: position,
                            actual: actual.to_vec(),
                            name: self.spec.runs[usize::from(id)],
                            bound: slot.dims.clone(),
                            bound_by: self.clause_name(slot.clause),
                            bound_at: slot.axis,
                        });
                    }
                }
                DimSpec::Expr(expr) => match self.eval(expr.ops) {
                    Ok(Some(expected)) if expected == dims[axis] as u64 => {}
                    Ok(Some(expected)) => mismatches.push(Mismatch::Expr {
                        axis,
                        actual: dims[axis],
                        text: self.spec.text_of(expr.text),
                        expected,
                        names: self.names_in(expr.ops),
                    }),
                    // A dim it names is bound only by an absent `Option`: nothing to compare.
                    Ok(None) => {}
                    Err(problem) => {
                        let names = self.names_in(expr.ops);
                        self.violations.push(report::dim_arithmetic(
                            self.spec,
                            clause,
                            Some(axis),
                            self.spec.text_of(expr.text),
                            problem,
                            names,
                        ));
                    }
                },
                DimSpec::Any | DimSpec::Rest => {}
            }
        }
        if !mismatches.is_empty() {
            let expected = self.expected_shape(clause);
            let sizes = self.expected_sizes(clause, dims, alignment);
            self.violations
                .push(report::shape(clause, expected, dims, mismatches, sizes));
        }
    }

    /// What a dim of a shape stands for now.
    fn known(&self, dim: &DimSpec) -> Known<'_> {
        match *dim {
            DimSpec::Named(id) => match self.bindings.dims[usize::from(id)].get() {
                Some(value) => Known::Size(value as u64),
                None => Known::Unknown,
            },
            DimSpec::Run(id) => {
                let slot = &self.bindings.runs[usize::from(id)];
                if slot.clause == UNBOUND {
                    Known::Unknown
                } else {
                    Known::Run(&slot.dims)
                }
            }
            DimSpec::Expr(expr) => match self.eval(expr.ops) {
                Ok(Some(value)) => Known::Size(value),
                _ => Known::Unknown,
            },
            DimSpec::Fixed(_) | DimSpec::Any | DimSpec::Rest => Known::Unknown,
        }
    }

    fn expected_shape(&self, clause: &ClauseSpec) -> String {
        report::expected_shape(self.spec, clause, |dim| self.known(dim))
    }

    /// The sizes a shape stands for once its names are bound, if every dim of it is known.
    fn expected_sizes(
        &self,
        clause: &ClauseSpec,
        dims: &[usize],
        alignment: &Alignment,
    ) -> Option<Vec<usize>> {
        let mut sizes = Vec::with_capacity(dims.len());
        for (position, dim) in clause.shape.iter().enumerate() {
            let axis = alignment.axis(position);
            match *dim {
                DimSpec::Fixed(n) => sizes.push(n),
                DimSpec::Named(id) => sizes.push(self.bindings.dims[usize::from(id)].get()?),
                DimSpec::Any => sizes.push(dims[axis]),
                DimSpec::Rest => sizes.extend(&dims[position..position + alignment.rest_len]),
                DimSpec::Run(id) => sizes.extend(&self.bindings.runs[usize::from(id)].dims),
                DimSpec::Expr(expr) => {
                    sizes.push(usize::try_from(self.eval(expr.ops).ok()??).ok()?)
                }
            }
        }
        Some(sizes)
    }

    fn check_relations(&mut self, after_body: bool) {
        for relation in self.spec.relations {
            if relation.after_body != after_body {
                continue;
            }
            let lhs = self.eval_signed(relation.lhs);
            let rhs = self.eval_signed(relation.rhs);
            let found = match (lhs, rhs) {
                (Ok(Some(lhs)), Ok(Some(rhs))) if relation.op.holds(lhs, rhs) => continue,
                (Ok(Some(lhs)), Ok(Some(rhs))) => RelationFound::Sides(lhs, rhs),
                (Err(problem), _) | (_, Err(problem)) => RelationFound::Problem(problem),
                // A dim bound only by an absent `Option`: the relation says nothing.
                _ => continue,
            };
            let mut names = self.names_in(relation.lhs);
            for name in self.names_in(relation.rhs) {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            self.violations
                .push(report::relation(self.spec, relation, found, names));
        }
    }

    /// Evaluates a dim expression as a size: `Ok(None)` when a dim is not bound, an error when
    /// it is below zero.
    fn eval(&self, ops: &[ExprOp]) -> Result<Option<u64>, ArithmeticError> {
        dims::as_size(self.eval_signed(ops)?)
    }

    /// Evaluates one side of a relation, which may be negative (`T > lim` with `lim = -1`).
    fn eval_signed(&self, ops: &[ExprOp]) -> Result<Option<i128>, ArithmeticError> {
        dims::eval_ops(
            ops,
            |id| self.bindings.dims[usize::from(id)].get(),
            |index| dims::scope_value(self.values, index),
        )
    }

    fn names_in(&self, ops: &[ExprOp]) -> Vec<DimBinding> {
        let mut names: Vec<DimBinding> = Vec::new();
        for op in ops {
            let binding = match *op {
                ExprOp::Dim(id) => self.binding(id),
                ExprOp::Value(index) => match dims::scope_value(self.values, index) {
                    Ok(Some(value)) => Some(DimBinding {
                        name: self
                            .spec
                            .values
                            .get(usize::from(index))
                            .copied()
                            .unwrap_or("?"),
                        value: usize::try_from(value).unwrap_or(usize::MAX),
                        bound_by: "",
                        axis: 0,
                        source: DimSource::Scope,
                    }),
                    _ => None,
                },
                _ => None,
            };
            if let Some(binding) = binding
                && !names.contains(&binding)
            {
                names.push(binding);
            }
        }
        names
    }

    /// Gives each value clause with a `where` its mask, broadcast to the subject's dims; a
    /// mask that does not broadcast, or is on another device, is a violation and its clause's
    /// value rules are not checked. An absent mask (`None`) checks every position.
    fn attach_masks(&mut self, clauses: &mut Vec<ValueClause<'_>>, masks: &[ClauseArg<'_>]) {
        clauses.retain_mut(|item| {
            let Some(spec) = item.clause.mask else {
                return true;
            };
            let mask = match masks.get(usize::from(spec.index)) {
                Some(ClauseArg::One(Some(mask))) => *mask,
                _ => return true,
            };
            let text = self.spec.text_of(spec.text);
            let subject = item.tensor;
            let problem = if !scan::readable(mask.dtype()) {
                MaskProblem::Unreadable(mask)
            } else if !mask.device().same_device(subject.device()) {
                MaskProblem::Device { mask, subject }
            } else {
                match mask.broadcast_as(subject.dims()) {
                    Ok(view) => {
                        item.mask = Some(view);
                        return true;
                    }
                    Err(_) => MaskProblem::Shape {
                        mask: mask.dims(),
                        dims: subject.dims(),
                    },
                }
            };
            self.violations
                .push(report::mask(item.clause, item.element, text, problem));
            false
        });
    }

    fn check_values(&mut self, clauses: &[ValueClause<'_>], bounds: &[BoundValue]) {
        let dims = &*self.bindings.dims;
        let spec = self.spec;
        let dim_value =
            |id: u16| -> Option<DimBinding> { binding_of(spec, &dims[usize::from(id)], id) };
        let found = value::check_clauses(spec, clauses, bounds, &dim_value);
        self.violations.extend(found);
    }

    fn finish(self, after_body: bool) -> Result<(), ContractError> {
        if self.violations.is_empty() {
            Ok(())
        } else {
            Err(ContractError::new(self.spec, after_body, self.violations))
        }
    }
}

fn clause_name(spec: &ContractSpec, index: u16) -> &'static str {
    let index = usize::from(index);
    match spec.inputs.get(index) {
        Some(clause) => clause.subject.name(),
        None => spec
            .outputs
            .get(index - spec.inputs.len())
            .map_or("return", |clause| clause.subject.name()),
    }
}

/// A bound dim's value and where it came from, for messages.
fn binding_of(spec: &ContractSpec, slot: &DimSlot, dim: u16) -> Option<DimBinding> {
    if !slot.is_bound() {
        return None;
    }
    Some(DimBinding {
        name: spec.dims[usize::from(dim)],
        value: slot.value,
        bound_by: clause_name(spec, slot.clause),
        axis: slot.axis,
        source: slot.source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{DTypeSet, TextSpan};
    use candle_core::DType;

    static CLAUSES: [ClauseSpec; 1] = [ClauseSpec {
        subject: Subject::Argument("x"),
        optional: false,
        dtypes: DTypeSet::F32,
        dtypes_span: TextSpan { start: 3, end: 6 },
        shape: &[DimSpec::Named(0)],
        shape_span: TextSpan { start: 6, end: 9 },
        values: None,
        contiguous: false,
        note: None,
        sequence: None,
        mask: None,
    }];

    static SPEC: ContractSpec = ContractSpec {
        function: "f",
        file: "f.rs",
        line: 1,
        column: 1,
        dims: &["N"],
        values: &[],
        runs: &[],
        inputs: &CLAUSES,
        outputs: &CLAUSES,
        relations: &[],
        same_device: true,
        text: "x: f32[N]",
    };

    fn guard(mode: Mode) -> Guard<1, 0, 1, 0> {
        Guard {
            spec: &SPEC,
            mode,
            call: None,
        }
    }

    fn plain(_: u64) -> bool {
        true
    }

    #[test]
    fn off_mode_runs_none_of_the_closures() {
        let mut off = guard(Mode::Off);
        let result = off.check_inputs(|_| panic!("the inputs closure ran in off mode"));
        assert!(result.is_ok());
        let result = off.check_output(|| -> [ClauseArg<'_>; 1] {
            panic!("the outputs closure ran in off mode")
        });
        assert!(result.is_ok());
    }

    #[test]
    fn shapes_mode_keeps_the_bindings_and_evaluates_no_bound() {
        let x = Tensor::zeros(3, DType::F32, &Device::Cpu).unwrap();
        let y = Tensor::zeros(4, DType::F32, &Device::Cpu).unwrap();
        let mut shapes = guard(Mode::Shapes);
        shapes
            .check_inputs(|inputs| {
                inputs.check(&[ClauseArg::One(Some(&x))], &[plain], [], || {
                    panic!("a bound was evaluated in shapes mode")
                })
            })
            .unwrap();
        // The return clause sees `N = 3` bound by the inputs.
        let error = shapes
            .check_output(|| [ClauseArg::One(Some(&y))])
            .unwrap_err();
        assert!(error.body_ran());
        assert!(
            error
                .to_string()
                .contains("dim 0 is 4 but N = 3 (bound by `x` dim 0)"),
            "{error}"
        );
    }

    #[test]
    fn an_expansion_that_does_not_match_its_spec_is_an_error() {
        let mut full = guard(Mode::Full);
        let error = full
            .check_inputs(|inputs| inputs.check(&[], &[plain], [], || [BoundValue::Unset]))
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("1 tensors for the contract's input clauses"),
            "{error}"
        );
    }
}
