//! Value rules (`in`, `ignore`, `finite`) at call time: resolving each clause's bounds, then
//! handing the tensors to the scans and their statistics to the reports.

use candle_core::Tensor;

use crate::error::{DimBinding, Violation};
use crate::report::{self, ValueFailure};
use crate::rule::{BoundValue, Details, Ignore, Interval, Num, Resolved, Used};
use crate::scan::{self, Outcome, Request};
use crate::spec::{
    AllowAll, BoundSpec, ClauseSpec, ContractSpec, IgnoreSpec, RangeSpec, TextSpan, ValueSpec,
};

/// Why a bound could not be evaluated.
struct BoundProblem {
    text: String,
    reason: String,
    unbound_dim: bool,
}

/// Resolves bounds and ignored values for one call.
struct Resolver<'a> {
    bounds: &'a [BoundValue],
    dim_value: &'a dyn Fn(u16) -> Option<DimBinding>,
    spec: &'static ContractSpec,
    used: Used,
}

impl Resolver<'_> {
    /// A parameter or braced expression: `None` when it is `None`.
    fn runtime(&mut self, index: u16, text: TextSpan) -> Result<Option<Num>, BoundProblem> {
        let text = self.spec.text_of(text);
        let problem = |reason: String| BoundProblem {
            text: text.to_string(),
            reason,
            unbound_dim: false,
        };
        let value = match self.bounds.get(usize::from(index)) {
            Some(BoundValue::Int(v)) => Num::Int(*v),
            Some(BoundValue::Float(v)) if v.is_nan() => {
                return Err(problem(format!("`{text}` is NaN")));
            }
            Some(BoundValue::Float(v)) => Num::Float(*v),
            Some(BoundValue::Absent) => return Ok(None),
            Some(BoundValue::Unset) | None => {
                return Err(problem(format!("`{text}` was not evaluated")));
            }
        };
        let shown = match value {
            Num::Int(v) => v.to_string(),
            Num::Float(v) | Num::Inexact(v, _) => v.to_string(),
        };
        if !self.used.values.iter().any(|(t, _)| *t == text) {
            self.used.values.push((text, shown));
        }
        Ok(Some(value))
    }

    /// A bound's value; `None` for an absent optional bound (an open end).
    fn bound(&mut self, bound: BoundSpec) -> Result<Option<Num>, BoundProblem> {
        match bound {
            BoundSpec::Int(v) => Ok(Some(Num::Int(v))),
            BoundSpec::Float(v) => Ok(Some(Num::Float(v))),
            BoundSpec::Inexact(v, side) => Ok(Some(Num::Inexact(v, side))),
            BoundSpec::Dim(id) => match (self.dim_value)(id) {
                Some(binding) => {
                    let value = binding.value;
                    if !self.used.dims.contains(&binding) {
                        self.used.dims.push(binding);
                    }
                    Ok(Some(Num::Int(value as i128)))
                }
                None => {
                    let name = self.spec.dims[usize::from(id)];
                    Err(BoundProblem {
                        text: name.to_string(),
                        reason: format!(
                            "`{name}` is not bound: the tensor that binds it is absent or has the \
                             wrong rank"
                        ),
                        unbound_dim: true,
                    })
                }
            },
            BoundSpec::Runtime(index, text) => self.runtime(index, text),
        }
    }

    fn resolve(mut self, spec: &ValueSpec) -> Result<(Resolved, Used), BoundProblem> {
        let ranges = if spec.ranges.is_empty() {
            None
        } else {
            let mut ranges = Vec::with_capacity(spec.ranges.len());
            for range in spec.ranges {
                let RangeSpec { lo, hi, inclusive } = *range;
                let lo = lo.map(|b| self.bound(b)).transpose()?.flatten();
                let hi = hi.map(|b| self.bound(b)).transpose()?.flatten();
                ranges.push(Interval { lo, hi, inclusive });
            }
            Some(ranges)
        };
        let mut ignore = Vec::with_capacity(spec.ignore.len());
        for value in spec.ignore {
            match *value {
                IgnoreSpec::Int(v) => ignore.push(Ignore::Value(Num::Int(v))),
                IgnoreSpec::Float(v) => ignore.push(Ignore::Value(Num::Float(v))),
                IgnoreSpec::Max => ignore.push(Ignore::Max),
                IgnoreSpec::Runtime(index, text) => {
                    if let Some(value) = self.runtime(index, text)? {
                        ignore.push(Ignore::Value(value));
                    }
                }
            }
        }
        let allow_all = match spec.allow_all_ignored {
            AllowAll::No => false,
            AllowAll::Yes => true,
            AllowAll::When(index, _) => {
                matches!(self.bounds.get(usize::from(index)), Some(BoundValue::Int(v)) if *v != 0)
            }
        };
        let resolved = Resolved {
            ranges,
            ignore,
            finite: spec.finite,
            allow_all,
            integral: spec.integral,
        };
        Ok((resolved, self.used))
    }
}

/// A clause's value rules with every bound evaluated, for `arbitrary!`'s draws: `dim` gives a
/// named dim's size. `Err`: why a bound has no value.
#[cfg(feature = "proptest")]
pub(crate) fn resolve(
    spec: &'static ContractSpec,
    values: &ValueSpec,
    bounds: &[BoundValue],
    dim: &dyn Fn(u16) -> Option<usize>,
) -> Result<Resolved, String> {
    let dim_value = |id: u16| {
        dim(id).map(|value| DimBinding {
            name: spec.dims.get(usize::from(id)).copied().unwrap_or_default(),
            value,
            bound_by: "",
            axis: 0,
            source: crate::error::DimSource::Axis,
        })
    };
    let resolver = Resolver {
        bounds,
        dim_value: &dim_value,
        spec,
        used: Used::default(),
    };
    resolver
        .resolve(values)
        .map(|(rule, _)| rule)
        .map_err(|problem| problem.reason)
}

/// One tensor whose clause has value rules, as the guard hands it over.
pub(crate) struct ValueClause<'t> {
    /// The element's index in a sequence clause.
    pub element: Option<usize>,
    pub clause: &'static ClauseSpec,
    pub tensor: &'t Tensor,
    /// The clause's `where` mask, broadcast to the tensor's dims; `None` checks every position.
    pub mask: Option<Tensor>,
}

/// A value clause whose bounds are resolved, waiting for its scan.
struct Pending<'t> {
    spec: &'static ContractSpec,
    clause: &'static ClauseSpec,
    values: &'static ValueSpec,
    element: Option<usize>,
    tensor: &'t Tensor,
    mask: Option<&'t Tensor>,
    rule: Resolved,
    used: Used,
    needs_usable: bool,
}

impl Pending<'_> {
    fn request(&self) -> Request<'_> {
        Request {
            tensor: self.tensor,
            mask: self.mask,
            rule: &self.rule,
            needs_usable: self.needs_usable,
        }
    }

    fn failure(&self) -> ValueFailure<'_> {
        ValueFailure {
            spec: self.spec,
            clause: self.clause,
            values: self.values,
            element: self.element,
            tensor: self.tensor,
            mask: self.mask,
            rule: &self.rule,
            used: &self.used,
            needs_usable: self.needs_usable,
        }
    }

    /// The violations a scan's outcome stands for.
    fn report(&self, outcome: Outcome) -> Vec<Violation> {
        match outcome {
            Outcome::Pass => Vec::new(),
            Outcome::Fail(details) => report::values(&self.failure(), &details),
            Outcome::Unreadable => vec![report::unreadable(
                self.spec,
                self.clause,
                self.values,
                self.element,
                self.tensor,
                None,
            )],
            Outcome::Failed(error) => vec![report::unreadable(
                self.spec,
                self.clause,
                self.values,
                self.element,
                self.tensor,
                Some(&error),
            )],
        }
    }
}

/// Checks the value rules of `clauses` (each with a tensor of an allowed dtype): CPU tensors
/// in place, in the order of the clauses; tensors on other devices after them, with one
/// transfer for all of them. Nothing is allocated while every clause passes.
pub(crate) fn check_clauses(
    spec: &'static ContractSpec,
    clauses: &[ValueClause<'_>],
    bounds: &[BoundValue],
    dim_value: &dyn Fn(u16) -> Option<DimBinding>,
) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut on_device = Vec::new();
    for item in clauses {
        let (element, clause, tensor) = (item.element, item.clause, item.tensor);
        let Some(values) = clause.values else {
            continue;
        };
        let resolver = Resolver {
            bounds,
            dim_value,
            spec,
            used: Used::default(),
        };
        let (rule, used) = match resolver.resolve(values) {
            Ok(resolved) => resolved,
            Err(problem) => {
                // A dim left unbound is either explained by a shape violation, or bound only by
                // an absent tensor (a `None` argument or optional path): then the rule that
                // needs it says nothing.
                if !problem.unbound_dim {
                    violations.push(report::bound(
                        clause,
                        element,
                        &problem.text,
                        problem.reason,
                    ));
                }
                continue;
            }
        };
        let needs_usable = !values.ignore.is_empty() && !rule.allow_all;
        let item = Pending {
            spec,
            clause,
            values,
            element,
            tensor,
            mask: item.mask.as_ref(),
            rule,
            used,
            needs_usable,
        };
        if tensor.elem_count() == 0 {
            if needs_usable {
                violations.extend(report::values(&item.failure(), &Details::default()));
            }
        } else if scan::reads_in_place(tensor) {
            violations.extend(item.report(scan::cpu::scan(&item.request())));
        } else {
            on_device.push(item);
        }
    }
    if !on_device.is_empty() {
        let requests: Vec<Request<'_>> = on_device.iter().map(Pending::request).collect();
        let outcomes = scan::device::scan(&requests);
        for (item, outcome) in on_device.iter().zip(outcomes) {
            violations.extend(item.report(outcome));
        }
    }
    violations
}
