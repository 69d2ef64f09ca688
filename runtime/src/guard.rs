//! Checking one call against its contract: binding named dims left to right, then dtype, rank,
//! dims, dim expressions, relations, device and `contiguous`, then the value rules.
//!
//! The success path allocates nothing: violations go into a `Vec` that stays empty, and dims are
//! bound into arrays the expansion keeps on the stack.

use candle_core::{Device, Tensor};

use crate::error::{
    ContractError, DimBinding, DimSource, Rule, Subject, Violation, format_dims, format_run,
    join_elided,
};
use crate::help;
use crate::mode::Mode;
use crate::spec::{ClauseSpec, ConstantProbe, ContractSpec, DimSpec, ExprOp, SubjectSpec};
use crate::value::{self, BoundValue};

const UNBOUND: u16 = u16::MAX;

/// The value of a named dim during one call, and the clause and axis that bound it.
#[derive(Debug, Clone, Copy)]
pub struct DimSlot {
    value: usize,
    clause: u16,
    axis: usize,
    source: DimSource,
    /// The dim's name is a constant in scope: the probe that compares with it.
    constant: Option<ConstantProbe>,
}

impl DimSlot {
    /// A dim not bound yet.
    pub const UNBOUND: Self = Self {
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
pub struct RunSlot {
    dims: Vec<usize>,
    clause: u16,
    axis: usize,
}

impl RunSlot {
    /// A run not bound yet.
    pub const UNBOUND: Self = Self {
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

/// What one guarded call has bound so far; kept from the inputs to the return clause.
/// Plain data (`Send`), so an `async fn`'s future stays `Send`.
#[derive(Debug)]
pub struct CallState<const DIMS: usize, const RUNS: usize> {
    dims: [DimSlot; DIMS],
    runs: [RunSlot; RUNS],
    device: Option<Device>,
}

impl<const DIMS: usize, const RUNS: usize> CallState<DIMS, RUNS> {
    /// Nothing bound.
    #[inline]
    pub const fn new() -> Self {
        Self {
            dims: [DimSlot::UNBOUND; DIMS],
            runs: [const { RunSlot::UNBOUND }; RUNS],
            device: None,
        }
    }

    /// A view of the bindings for the guard.
    #[inline]
    pub fn bindings(&mut self) -> Bindings<'_> {
        Bindings {
            dims: &mut self.dims,
            runs: &mut self.runs,
            device: &mut self.device,
        }
    }
}

impl<const DIMS: usize, const RUNS: usize> Default for CallState<DIMS, RUNS> {
    fn default() -> Self {
        Self::new()
    }
}

/// Mutable access to a call's bindings, independent of their count.
#[derive(Debug)]
pub struct Bindings<'a> {
    dims: &'a mut [DimSlot],
    runs: &'a mut [RunSlot],
    device: &'a mut Option<Device>,
}

/// Checks the arguments and fields of one call (`args[i]` belongs to `spec.inputs[i]`;
/// `values` are the values from scope that `spec.values` names, evaluated unless the mode is
/// off; `bounds` the value rules' bounds, evaluated in full mode; `constants[i]` the probe of
/// named dim `i`, see [`ConstantProbe`]).
pub fn check_inputs(
    spec: &'static ContractSpec,
    mode: Mode,
    args: &[ClauseArg<'_>],
    bounds: &[BoundValue],
    values: &[BoundValue],
    constants: &[ConstantProbe],
    mut bindings: Bindings<'_>,
) -> Result<(), ContractError> {
    debug_assert_eq!(args.len(), spec.inputs.len());
    for (slot, &probe) in bindings.dims.iter_mut().zip(constants) {
        if is_constant(probe) {
            slot.constant = Some(probe);
        }
    }
    let mut checker = Checker {
        spec,
        bindings: &mut bindings,
        values,
        violations: Vec::new(),
    };
    for (index, (clause, arg)) in spec.inputs.iter().zip(args).enumerate() {
        checker.bind_clause(index, clause, arg);
    }
    let mut first_device: Option<(&Device, &'static str)> = None;
    for (index, (clause, arg)) in spec.inputs.iter().zip(args).enumerate() {
        checker.check_clause(index, clause, arg, &mut first_device);
    }
    if !spec.outputs.is_empty() && spec.same_device {
        *checker.bindings.device = first_device.map(|(device, _)| device.clone());
    }
    checker.check_relations(false);
    if mode == Mode::Full {
        let clauses = value_clauses(spec.inputs, args);
        if !clauses.is_empty() {
            checker.check_values(&clauses, bounds);
        }
    }
    checker.finish(false)
}

/// Checks the value coming out of the body against the `return` clauses (`args[i]` belongs to
/// `spec.outputs[i]`), with the dims the inputs bound. An `Err` returned by the body is passed
/// through unchecked: its `args` are all `ClauseArg::One(None)`.
pub fn check_output(
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
    let mut first_device = device.as_ref().map(|d| (d, "the arguments"));
    for (k, (clause, arg)) in spec.outputs.iter().zip(args).enumerate() {
        checker.check_clause(first + k, clause, arg, &mut first_device);
    }
    checker.check_relations(true);
    if mode == Mode::Full {
        let clauses = value_clauses(spec.outputs, args);
        if !clauses.is_empty() {
            checker.check_values(&clauses, bounds);
        }
    }
    checker.finish(true)
}

/// The tensors whose value rules apply: an allowed dtype, and a clause with value rules.
fn value_clauses<'t>(
    clauses: &'static [ClauseSpec],
    args: &'t [ClauseArg<'t>],
) -> Vec<(Option<usize>, &'static ClauseSpec, &'t Tensor)> {
    let mut out = Vec::new();
    for (clause, arg) in clauses.iter().zip(args) {
        if clause.values.is_none() {
            continue;
        }
        for (element, tensor) in tensors_of(arg) {
            if clause.dtypes.contains(tensor.dtype()) {
                out.push((element, clause, tensor));
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
            (ClauseArg::Missing, _) => Some("past the end of its sequence"),
            (ClauseArg::One(None), SubjectSpec::Field(_)) => Some("None"),
            _ => None,
        };
        if let Some(found) = missing {
            let mut violation = Violation::new(
                Subject::of(clause.subject),
                Rule::Missing,
                format!("{}{}", clause.dtypes_text, clause.shape_text),
                found.to_string(),
            );
            violation.note = clause.note;
            self.violations.push(violation);
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
                    Some((device, owner)) => self.check_device(clause, tensor, device, owner),
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
                Ok(Some(n)) => (Some(n as usize), self.names_in(expr.ops)),
                _ => (None, Vec::new()),
            },
            DimSpec::Any | DimSpec::Rest | DimSpec::Run(_) => (None, Vec::new()),
        };
        if let Some(expected) = expected
            && expected != len
        {
            let mut violation = Violation::new(
                Subject::of(clause.subject),
                Rule::Count,
                expected.to_string(),
                len.to_string(),
            );
            violation.bound_dims = bound;
            violation.note = clause.note;
            self.violations.push(violation);
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
        let subject = Subject::of(clause.subject);
        let dtype = tensor.dtype();
        if !clause.dtypes.contains(dtype) {
            let mut violation = Violation::new(
                subject,
                Rule::DType,
                clause.dtypes_text.to_string(),
                dtype.as_str().to_string(),
            );
            violation.help = help::for_dtype(clause, tensor);
            violation.note = clause.note;
            self.violations.push(violation);
        }
        let dims = tensor.dims();
        match Alignment::of(clause.shape, dims.len()) {
            None => {
                let expected_rank = clause
                    .shape
                    .iter()
                    .filter(|d| !matches!(d, DimSpec::Rest | DimSpec::Run(_)))
                    .count();
                let variadic = expected_rank != clause.shape.len();
                let mut violation = Violation::new(
                    subject,
                    Rule::Rank,
                    self.expected_shape(clause),
                    format_dims(dims),
                );
                violation.expected.push_str(&format!(
                    " (rank {}, expected rank {}{})",
                    dims.len(),
                    if variadic { "at least " } else { "" },
                    expected_rank
                ));
                violation.help = help::for_rank(clause, dims);
                violation.note = clause.note;
                self.violations.push(violation);
            }
            Some(alignment) => self.check_dims(clause, dims, &alignment),
        }
        if clause.contiguous && !tensor.is_contiguous() {
            let mut violation = Violation::new(
                subject,
                Rule::Contiguous,
                "a contiguous layout".to_string(),
                format!(
                    "stride {} for shape {}",
                    format_dims(tensor.stride()),
                    format_dims(dims)
                ),
            );
            violation.help = Some(
                "a transpose, narrow or broadcast made a strided view; call `.contiguous()?` \
                 before passing it"
                    .to_string(),
            );
            violation.note = clause.note;
            self.violations.push(violation);
        }
    }

    fn check_dims(&mut self, clause: &'static ClauseSpec, dims: &[usize], alignment: &Alignment) {
        let mut details = Vec::new();
        let mut bound_dims = Vec::new();
        for (position, dim) in clause.shape.iter().enumerate() {
            let axis = alignment.axis(position);
            match *dim {
                DimSpec::Fixed(expected) => {
                    if dims[axis] != expected {
                        details.push(format!("dim {axis} is {}, expected {expected}", dims[axis]));
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
                        details.push(format!("dim {axis} is {} but {binding}", dims[axis]));
                        bound_dims.push(binding);
                    }
                }
                DimSpec::Run(id) => {
                    let actual = &dims[position..position + alignment.rest_len];
                    let slot = &self.bindings.runs[usize::from(id)];
                    if slot.dims != actual {
                        let end = position + alignment.rest_len;
                        let mut detail = format!(
                            "dims {position}..{end} are {} but *{} = {} (bound by `{}` dims \
                             {}..{})",
                            format_run(actual),
                            self.spec.runs[usize::from(id)],
                            format_run(&slot.dims),
                            self.clause_name(slot.clause),
                            slot.axis,
                            slot.axis + slot.dims.len(),
                        );
                        // A long run is elided: name the first dim that differs.
                        if let Some(i) = actual.iter().zip(&slot.dims).position(|(a, b)| a != b)
                            && actual.len().max(slot.dims.len()) > 12
                        {
                            detail.push_str(&format!(
                                "; dim {} is {}, expected {}",
                                position + i,
                                actual[i],
                                slot.dims[i]
                            ));
                        }
                        details.push(detail);
                    }
                }
                DimSpec::Expr(expr) => match self.eval(expr.ops) {
                    Ok(Some(expected)) if expected == dims[axis] as u64 => {}
                    Ok(Some(expected)) => {
                        let names = self.names_in(expr.ops);
                        // `{cfg.hidden} = 4` already says what a lone value is.
                        let shown: Vec<DimBinding> = names
                            .iter()
                            .filter(|b| b.name != expr.text)
                            .cloned()
                            .collect();
                        details.push(format!(
                            "dim {axis} is {} but {} = {expected}{}",
                            dims[axis],
                            expr.text,
                            with_names(&shown)
                        ));
                        bound_dims.extend(names);
                    }
                    // A dim it names is bound only by an absent `Option`: nothing to compare.
                    Ok(None) => {}
                    Err(problem) => {
                        let names = self.names_in(expr.ops);
                        details.push(format!(
                            "dim {axis}: {} {problem}{}",
                            expr.text,
                            with_names(&names)
                        ));
                        bound_dims.extend(names);
                    }
                },
                DimSpec::Any | DimSpec::Rest => {}
            }
        }
        if !details.is_empty() {
            let mut violation = Violation::new(
                Subject::of(clause.subject),
                Rule::Shape,
                self.expected_shape(clause),
                format_dims(dims),
            );
            let expected_sizes = self.expected_sizes(clause, dims, alignment);
            violation.help = help::for_shape(clause, dims, expected_sizes.as_deref(), &bound_dims);
            violation.details = details;
            violation.bound_dims = bound_dims;
            violation.note = clause.note;
            self.violations.push(violation);
        }
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
                DimSpec::Expr(expr) => sizes.push(self.eval(expr.ops).ok()?? as usize),
            }
        }
        Some(sizes)
    }

    /// The shape as written, followed by its bound values when it names any:
    /// `[B, P] = [4, 6]`.
    fn expected_shape(&self, clause: &ClauseSpec) -> String {
        let literal_only = clause
            .shape
            .iter()
            .all(|d| matches!(d, DimSpec::Fixed(_) | DimSpec::Any | DimSpec::Rest));
        if literal_only {
            return clause.shape_text.to_string();
        }
        let mut any_bound = false;
        let parts: Vec<String> = clause
            .shape
            .iter()
            .map(|dim| match *dim {
                DimSpec::Fixed(n) => n.to_string(),
                DimSpec::Any => "_".to_string(),
                DimSpec::Rest => "..".to_string(),
                DimSpec::Named(id) => match self.bindings.dims[usize::from(id)].get() {
                    Some(value) => {
                        any_bound = true;
                        value.to_string()
                    }
                    None => self.spec.dims[usize::from(id)].to_string(),
                },
                DimSpec::Run(id) => {
                    let slot = &self.bindings.runs[usize::from(id)];
                    if slot.clause == UNBOUND {
                        format!("*{}", self.spec.runs[usize::from(id)])
                    } else {
                        any_bound = true;
                        join_elided(&slot.dims)
                    }
                }
                DimSpec::Expr(expr) => match self.eval(expr.ops) {
                    Ok(Some(value)) => {
                        any_bound = true;
                        value.to_string()
                    }
                    _ => expr.text.to_string(),
                },
            })
            .filter(|part| !part.is_empty())
            .collect();
        if any_bound {
            format!("{} = [{}]", clause.shape_text, join_elided(&parts))
        } else {
            clause.shape_text.to_string()
        }
    }

    fn check_device(
        &mut self,
        clause: &ClauseSpec,
        tensor: &Tensor,
        expected: &Device,
        owner: &str,
    ) {
        if !tensor.device().same_device(expected) {
            let mut violation = Violation::new(
                Subject::of(clause.subject),
                Rule::Device,
                format!("{} like `{owner}`", device_name(expected)),
                device_name(tensor.device()),
            );
            violation.help = Some(
                "move the tensors to one device first (`.to_device(&device)?`), or state \
                 `same_device = false` in the contract"
                    .to_string(),
            );
            self.violations.push(violation);
        }
    }

    fn check_relations(&mut self, after_body: bool) {
        for relation in self.spec.relations {
            if relation.after_body != after_body {
                continue;
            }
            let lhs = self.eval_signed(relation.lhs);
            let rhs = self.eval_signed(relation.rhs);
            let mut names = self.names_in(relation.lhs);
            for name in self.names_in(relation.rhs) {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            let found = match (lhs, rhs) {
                (Ok(Some(lhs)), Ok(Some(rhs))) if relation.op.holds(lhs, rhs) => continue,
                (Ok(Some(lhs)), Ok(Some(rhs))) => {
                    let simple =
                        |ops: &[ExprOp]| matches!(ops, [ExprOp::Dim(_)] | [ExprOp::Lit(_)]);
                    if simple(relation.lhs) && simple(relation.rhs) {
                        String::new()
                    } else {
                        format!("left side is {lhs}, right side is {rhs}")
                    }
                }
                (Err(problem), _) | (_, Err(problem)) => format!("cannot evaluate: {problem}"),
                // A dim bound only by an absent `Option`: the relation says nothing.
                _ => continue,
            };
            let mut violation = Violation::new(
                Subject::Relation(relation.text),
                Rule::Relation,
                relation.text.to_string(),
                found,
            );
            violation.bound_dims = names;
            self.violations.push(violation);
        }
    }

    /// Evaluates a dim expression as a size: `Ok(None)` when a dim is not bound, an error when
    /// it is below zero.
    fn eval(&self, ops: &[ExprOp]) -> Result<Option<u64>, &'static str> {
        match self.eval_signed(ops)? {
            Some(value) => u64::try_from(value)
                .map(Some)
                .map_err(|_| "goes below zero"),
            None => Ok(None),
        }
    }

    /// Evaluates one side of a relation, which may be negative (`T > lim` with `lim = -1`).
    fn eval_signed(&self, ops: &[ExprOp]) -> Result<Option<i128>, &'static str> {
        eval_ops(
            ops,
            |id| self.bindings.dims[usize::from(id)].get(),
            |index| scope_value(self.values, index),
        )
    }

    fn names_in(&self, ops: &[ExprOp]) -> Vec<DimBinding> {
        let mut names: Vec<DimBinding> = Vec::new();
        for op in ops {
            let binding = match *op {
                ExprOp::Dim(id) => self.binding(id),
                ExprOp::Value(index) => match scope_value(self.values, index) {
                    Ok(Some(value)) => Some(DimBinding {
                        name: self
                            .spec
                            .values
                            .get(usize::from(index))
                            .copied()
                            .unwrap_or("?"),
                        value: value as usize,
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

    fn check_values(
        &mut self,
        clauses: &[(Option<usize>, &'static ClauseSpec, &Tensor)],
        bounds: &[BoundValue],
    ) {
        let dims = &*self.bindings.dims;
        let spec = self.spec;
        let dim_value =
            |id: u16| -> Option<DimBinding> { binding_of(spec, &dims[usize::from(id)], id) };
        let spec_dims = |id: u16| spec.dims[usize::from(id)];
        let found = value::check_clauses(clauses, bounds, &dim_value, &spec_dims);
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

fn with_names(names: &[DimBinding]) -> String {
    if names.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = names.iter().map(ToString::to_string).collect();
    format!(" with {}", parts.join(", "))
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

/// A value from scope in a dim expression: `Ok(None)` for `None` (what needs it is skipped).
fn scope_value(values: &[BoundValue], index: u16) -> Result<Option<i128>, &'static str> {
    match values.get(usize::from(index)) {
        Some(BoundValue::Int(v)) => Ok(Some(*v)),
        Some(BoundValue::Float(_)) => Err("uses a float where a dim needs an integer"),
        Some(BoundValue::Absent) => Ok(None),
        Some(BoundValue::Unset) | None => Err("uses a value that was not evaluated"),
    }
}

/// Evaluates a postfix dim expression on integers: `/` rounds towards zero (down, for the
/// non-negative sizes of dims), and dividing by zero or overflowing is an error, never a wrap.
/// A size that ends below zero is an error where a size is needed (`Checker::eval`).
pub(crate) fn eval_ops(
    ops: &[ExprOp],
    dim: impl Fn(u16) -> Option<usize>,
    value: impl Fn(u16) -> Result<Option<i128>, &'static str>,
) -> Result<Option<i128>, &'static str> {
    let mut stack = [0i128; 16];
    let mut depth = 0usize;
    for op in ops {
        let value = match *op {
            ExprOp::Lit(value) => i128::from(value),
            ExprOp::Dim(id) => match dim(id) {
                Some(value) => value as i128,
                None => return Ok(None),
            },
            ExprOp::Value(index) => match value(index)? {
                Some(value) => value,
                None => return Ok(None),
            },
            binary => {
                if depth < 2 {
                    return Err("is malformed");
                }
                let (lhs, rhs) = (stack[depth - 2], stack[depth - 1]);
                depth -= 2;
                match binary {
                    ExprOp::Add => lhs.checked_add(rhs).ok_or("overflows")?,
                    ExprOp::Sub => lhs.checked_sub(rhs).ok_or("overflows")?,
                    ExprOp::Mul => lhs.checked_mul(rhs).ok_or("overflows")?,
                    ExprOp::Div => lhs.checked_div(rhs).ok_or("divides by zero")?,
                    ExprOp::Rem => lhs.checked_rem(rhs).ok_or("divides by zero")?,
                    ExprOp::Lit(_) | ExprOp::Dim(_) | ExprOp::Value(_) => {
                        unreachable!("handled above")
                    }
                }
            }
        };
        if depth == stack.len() {
            return Err("is too deeply nested");
        }
        stack[depth] = value;
        depth += 1;
    }
    if depth == 1 {
        Ok(Some(stack[0]))
    } else {
        Err("is malformed")
    }
}

/// `cpu`, `cuda:0`, `metal:0`.
pub(crate) fn device_name(device: &Device) -> String {
    match device.location() {
        candle_core::DeviceLocation::Cpu => "cpu".to_string(),
        candle_core::DeviceLocation::Cuda { gpu_id } => format!("cuda:{gpu_id}"),
        candle_core::DeviceLocation::Metal { gpu_id } => format!("metal:{gpu_id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dim_arithmetic_is_checked() {
        let dims = [Some(5usize), Some(0), None];
        let dim = |id: u16| dims[usize::from(id)];
        let eval = |ops: &[ExprOp]| eval_ops(ops, dim, |_| Ok(None));
        use ExprOp::*;
        assert_eq!(eval(&[Dim(0), Lit(1), Add]), Ok(Some(6)));
        assert_eq!(eval(&[Dim(0), Lit(2), Div]), Ok(Some(2)));
        assert_eq!(eval(&[Dim(0), Lit(3), Rem]), Ok(Some(2)));
        assert_eq!(eval(&[Lit(2), Dim(0), Mul]), Ok(Some(10)));
        // Signed: a relation may compare with a negative value; a size below zero is refused
        // by `Checker::eval` (tested end to end).
        assert_eq!(eval(&[Dim(1), Lit(1), Sub]), Ok(Some(-1)));
        assert_eq!(eval(&[Dim(0), Dim(1), Div]), Err("divides by zero"));
        assert_eq!(eval(&[Lit(u64::MAX), Lit(u64::MAX), Mul]), Err("overflows"));
        assert_eq!(eval(&[Dim(2), Lit(1), Add]), Ok(None));
        let values = [
            BoundValue::Int(768),
            BoundValue::Int(-1),
            BoundValue::Absent,
        ];
        let with_values = |ops: &[ExprOp]| eval_ops(ops, dim, |i| scope_value(&values, i));
        assert_eq!(with_values(&[Value(0), Lit(2), Div]), Ok(Some(384)));
        assert_eq!(with_values(&[Value(1)]), Ok(Some(-1)));
        assert_eq!(with_values(&[Dim(0), Value(2), Add]), Ok(None));
    }
}
