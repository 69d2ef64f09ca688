//! Dim binding: the slots a call binds its named dims and runs into, the probe that tells a
//! constant in scope from a dim, and the first pass over a clause's tensors that binds each
//! name at its first occurrence. `structure.rs` checks against what is bound here.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use candle_core::{Device, Tensor};

use crate::error::{DimBinding, DimSource, Violation};
use crate::rule::BoundValue;
use crate::spec::{ClauseSpec, ConstantProbe, ContractSpec, DimSpec, ExprOp};

pub(super) const UNBOUND: u16 = u16::MAX;

/// The value of a named dim during one call, and the clause and axis that bound it.
#[derive(Debug, Clone, Copy)]
pub(super) struct DimSlot {
    pub(super) value: usize,
    pub(super) clause: u16,
    pub(super) axis: usize,
    pub(super) source: DimSource,
    /// The dim's name is a constant in scope: the probe that compares with it.
    pub(super) constant: Option<ConstantProbe>,
}

impl DimSlot {
    /// A dim not bound yet.
    pub(super) const UNBOUND: Self = Self {
        value: 0,
        clause: UNBOUND,
        axis: 0,
        source: DimSource::Axis,
        constant: None,
    };

    /// The dim's value: as bound, or a constant's own where no tensor bound it (the clauses
    /// that name it alone were skipped, an `Option` argument being `None`).
    pub(super) fn get(&self) -> Option<usize> {
        if self.clause != UNBOUND {
            return (self.source != DimSource::UnknownConstant).then_some(self.value);
        }
        self.constant.and_then(cached_constant_value)
    }

    pub(super) fn is_bound(&self) -> bool {
        self.clause != UNBOUND
    }
}

/// Whether a dim's probe belongs to a constant: a plain dim's pattern binds every value.
pub(super) fn is_constant(probe: ConstantProbe) -> bool {
    !(probe(0) && probe(1))
}

/// The value a constant's probe accepts, for a message after a mismatch (a probe only
/// compares): `None` when it is negative or above 2^24.
#[cold]
pub(super) fn constant_value(probe: ConstantProbe) -> Option<usize> {
    (0..=1u64 << 24).find(|&v| probe(v)).map(|v| v as usize)
}

/// [`constant_value`], found once per probe (one per constant per call site) in a process.
fn cached_constant_value(probe: ConstantProbe) -> Option<usize> {
    static VALUES: OnceLock<Mutex<HashMap<usize, Option<usize>>>> = OnceLock::new();
    let values = VALUES.get_or_init(Mutex::default);
    let key = probe as usize;
    if let Some(value) = values.lock().ok()?.get(&key) {
        return *value;
    }
    let value = constant_value(probe);
    values.lock().ok()?.insert(key, value);
    value
}

/// The tensors of one clause, with their element index for a sequence.
pub(super) fn tensors_of<'t>(
    arg: &'t ClauseArg<'t>,
) -> impl Iterator<Item = (Option<usize>, &'t Tensor)> {
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
pub(super) struct RunSlot {
    pub(super) dims: Vec<usize>,
    pub(super) clause: u16,
    pub(super) axis: usize,
}

impl RunSlot {
    /// A run not bound yet.
    pub(super) const UNBOUND: Self = Self {
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

/// Mutable access to a call's bindings, independent of their count.
#[derive(Debug)]
pub(super) struct Bindings<'a> {
    pub(super) dims: &'a mut [DimSlot],
    pub(super) runs: &'a mut [RunSlot],
    pub(super) device: &'a mut Option<(Device, &'static str)>,
}

pub(super) struct Checker<'b, 'c> {
    pub(super) spec: &'static ContractSpec,
    pub(super) bindings: &'b mut Bindings<'c>,
    pub(super) values: &'b [BoundValue],
    pub(super) violations: Vec<Violation>,
}

/// Where in the actual dims each dim of a shape lands, once the rank fits.
pub(super) struct Alignment {
    /// Index in the spec of the `..` or `*B`, if any.
    rest: Option<usize>,
    /// How many actual dims the `..` or `*B` covers.
    pub(super) rest_len: usize,
}

impl Alignment {
    pub(super) fn of(shape: &[DimSpec], rank: usize) -> Option<Self> {
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
    pub(super) fn axis(&self, position: usize) -> usize {
        match self.rest {
            Some(rest) if position > rest => position + self.rest_len - 1,
            _ => position,
        }
    }
}

impl Checker<'_, '_> {
    pub(super) fn clause_name(&self, index: u16) -> &'static str {
        clause_name(self.spec, index)
    }

    pub(super) fn binding(&self, dim: u16) -> Option<DimBinding> {
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

    /// Binds each dim that a struct contract's integer field names (`n_head = H`) to the
    /// field's value, before any tensor is read: a tensor then disagrees with the field, not
    /// the other way round. A value that is no size binds nothing; its relation reports it.
    pub(super) fn bind_fields(&mut self) {
        for relation in self.spec.relations.iter().filter(|r| r.binds) {
            let ([ExprOp::Dim(id)], [ExprOp::Value(value)]) = (relation.lhs, relation.rhs) else {
                continue;
            };
            let slot = &mut self.bindings.dims[usize::from(*id)];
            // A constant's name is its value: the relation compares with it.
            if slot.is_bound() || slot.constant.is_some() {
                continue;
            }
            if let Ok(Some(size)) = crate::dims::scope_value(self.values, *value)
                && let Ok(size) = usize::try_from(size)
            {
                *slot = DimSlot {
                    value: size,
                    clause: *value,
                    axis: 0,
                    source: DimSource::Field,
                    constant: None,
                };
            }
        }
    }

    /// Binds the dims of every tensor of a clause, and a sequence's count.
    pub(super) fn bind_clause(&mut self, index: usize, clause: &ClauseSpec, arg: &ClauseArg<'_>) {
        for (_, tensor) in tensors_of(arg) {
            self.bind(index, clause, tensor);
        }
        if let (ClauseArg::Many(items), Some(DimSpec::Named(id))) = (arg, clause.sequence) {
            self.bind_dim(id, items.len(), index as u16, 0, DimSource::Count);
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
pub(super) fn binding_of(spec: &ContractSpec, slot: &DimSlot, dim: u16) -> Option<DimBinding> {
    if !slot.is_bound() {
        // A constant no tensor bound is still its value.
        return slot.get().map(|value| DimBinding {
            name: spec.dims[usize::from(dim)],
            value,
            bound_by: "",
            axis: 0,
            source: DimSource::Constant,
        });
    }
    // A field's binding keeps the index of the field's value in `clause`.
    let bound_by = match slot.source {
        DimSource::Field => spec
            .values
            .get(usize::from(slot.clause))
            .map_or("", |text| {
                text.strip_prefix('{')
                    .and_then(|t| t.strip_suffix('}'))
                    .unwrap_or(text)
            }),
        _ => clause_name(spec, slot.clause),
    };
    Some(DimBinding {
        name: spec.dims[usize::from(dim)],
        value: slot.value,
        bound_by,
        axis: slot.axis,
        source: slot.source,
    })
}
