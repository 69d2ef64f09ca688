//! Checking one call against its contract: binding named dims left to right, then dtype, rank,
//! dims, dim expressions, relations, device and `contiguous`, then the value rules.
//!
//! An expansion holds a [`Guard`]: it reads the mode once, and owns what the call binds from
//! the inputs to the `return` clause. In `off` mode it runs none of the closures it is given,
//! so nothing of the contract is evaluated. The success path allocates nothing: violations go
//! into a `Vec` that stays empty, and dims are bound into arrays on the stack.
//!
//! Three files by job, imports running one way: `bind.rs` binds the named dims and runs (the
//! slots, the constant probes), `structure.rs` checks dtype, rank, dims, relations, device and
//! `contiguous` against them, and this file holds the call API the expansion uses ([`Guard`],
//! [`Inputs`], [`ClauseArg`]) and the phases of a call: inputs, derived subjects and masks,
//! the value coming out.

use candle_core::Device;

use crate::error::{ContractError, DimBinding, DimSource, Violation};
use crate::mode::{self, Mode};
#[cfg(feature = "proptest")]
use crate::probe;
use crate::report::{self, MaskProblem};
use crate::rule::BoundValue;
use crate::scan;
use crate::spec::{BoundSpec, ClauseSpec, ConstantProbe, ContractSpec, DimSpec, Subject};
use crate::value::{self, ValueClause};

mod bind;
mod structure;

pub use bind::ClauseArg;
use bind::{Bindings, Checker, DimSlot, RunSlot, binding_of, is_constant, tensors_of};

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
        #[cfg(feature = "proptest")]
        let probed = self.probed();
        if self.mode == Mode::Off {
            return Ok(());
        }
        let result = inputs(Inputs { guard: self });
        // A probe for the verdict stops here unless derived subjects or masks come next.
        #[cfg(feature = "proptest")]
        if probed && (result.is_err() || !self.derives()) {
            probe::answer(probe::Finding::Verdict(result));
        }
        result
    }

    /// Whether `arbitrary!` probes this call (see `probe`): the spec is answered at once, and a
    /// call asked for its scope or verdict is checked in `full` mode.
    #[cfg(feature = "proptest")]
    #[inline]
    fn probed(&mut self) -> bool {
        match probe::asks(self.spec) {
            None => false,
            Some(probe::Ask::Spec) => probe::answer(probe::Finding::Spec(self.spec)),
            Some(probe::Ask::Scope(_) | probe::Ask::Verdict(_)) => {
                self.mode = Mode::Full;
                true
            }
            // Checked in `full` mode, and run on: nothing is answered.
            Some(probe::Ask::Full(_)) => {
                self.mode = Mode::Full;
                false
            }
        }
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
        let result = check_derived(
            spec,
            args,
            derived,
            masks,
            &bounds,
            &values,
            call.bindings(),
        );
        #[cfg(feature = "proptest")]
        if let Some(probe::Ask::Verdict(_)) = probe::asks(spec) {
            probe::answer(probe::Finding::Verdict(result));
        }
        result
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
        #[cfg(feature = "proptest")]
        if let Some(probe::Ask::Scope(_)) = probe::asks(guard.spec) {
            let scope = scope_of(guard.spec, args, constants, &values, &bounds);
            probe::answer(probe::Finding::Scope(scope));
        }
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
    checker.bind_fields();
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

/// What a probed call knows before its tensors are read (see `probe::Ask::Scope`): the values
/// and bounds, the constants, and what the clauses `probe::bound_clauses` names bind and break.
#[cfg(feature = "proptest")]
fn scope_of(
    spec: &'static ContractSpec,
    args: &[ClauseArg<'_>],
    constants: &[ConstantProbe],
    values: &[BoundValue],
    bounds: &[BoundValue],
) -> probe::Scope {
    let mut dims = vec![DimSlot::UNBOUND; spec.dims.len()];
    let mut runs = vec![RunSlot::UNBOUND; spec.runs.len()];
    let mut device = None;
    let mut found = Vec::with_capacity(constants.len());
    for (slot, &constant) in dims.iter_mut().zip(constants) {
        if is_constant(constant) {
            slot.constant = Some(constant);
            found.push(match bind::constant_value(constant) {
                Some(value) => probe::Constant::Value(value),
                None => probe::Constant::Unknown,
            });
        } else {
            found.push(probe::Constant::No);
        }
    }
    let mut bindings = Bindings {
        dims: &mut dims,
        runs: &mut runs,
        device: &mut device,
    };
    let mut checker = Checker {
        spec,
        bindings: &mut bindings,
        values,
        violations: Vec::new(),
    };
    let wanted = probe::bound_clauses();
    let bound = || {
        spec.inputs
            .iter()
            .zip(args)
            .enumerate()
            .filter(|(index, _)| wanted.get(*index).copied().unwrap_or(false))
    };
    checker.bind_fields();
    for (index, (clause, arg)) in bound() {
        checker.bind_clause(index, clause, arg);
    }
    let mut first_device = None;
    for (index, (clause, arg)) in bound() {
        checker.check_clause(index, clause, arg, &mut first_device);
    }
    let clauses = value_clauses(bound().map(|(_, pair)| pair));
    if !clauses.is_empty() {
        checker.check_values(&clauses, bounds);
    }
    let violations = checker.finish(false);
    probe::Scope {
        values: values.to_vec(),
        bounds: bounds.to_vec(),
        constants: found,
        dims: dims.iter().map(DimSlot::get).collect(),
        runs: runs
            .iter()
            .map(|run| (run.clause != bind::UNBOUND).then(|| run.dims.clone()))
            .collect(),
        violations,
    }
}

/// Whether a clause's value rules are read before the derived subjects are computed: it needs
/// neither one nor a mask, and every dim its bounds name is bound by an argument (not by a
/// derived subject, which is not computed yet).
fn read_first(spec: &ContractSpec, clause: &ClauseSpec, dims: &[DimSlot]) -> bool {
    let bound_by_argument = |id: u16| {
        dims.get(usize::from(id)).is_some_and(|slot| {
            slot.is_bound()
                && (slot.source == DimSource::Field
                    || spec
                        .inputs
                        .get(usize::from(slot.clause))
                        .is_some_and(|owner| !is_derived(owner)))
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

impl Checker<'_, '_> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{DTypeSet, TextSpan};
    use candle_core::{DType, Tensor};

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
        params: &["x"],
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
