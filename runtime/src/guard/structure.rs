//! Structural checks: presence, dtype, rank, every dim against its literal, binding or
//! expression, a sequence's count, the relations between dims, the device and `contiguous`,
//! each against the dims `bind.rs` bound.

use candle_core::{Device, Tensor};

use super::bind::{Alignment, Checker, ClauseArg, UNBOUND, tensors_of};
use crate::dims::{self, ArithmeticError};
use crate::error::{DimBinding, DimSource};
use crate::report::{self, Known, Mismatch, RelationFound};
use crate::spec::{ClauseSpec, DimSpec, ExprOp, Subject};

impl Checker<'_, '_> {
    /// Checks every tensor of a clause: presence, layout, device; a sequence's count.
    pub(super) fn check_clause<'t>(
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

    pub(super) fn check_relations(&mut self, after_body: bool) {
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
}
