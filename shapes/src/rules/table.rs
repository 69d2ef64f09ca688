//! Ops whose rule is a contract: `candle_contracts::nn`'s guarded ops (their contracts are the
//! `check!` texts of `runtime/src/nn/`; a test keeps the two equal) and candle-nn's loss
//! functions (their checks written as contracts).

use crate::contract::{Bindings, Contract};
use crate::dim::Dim;
use crate::dtype::DTypeSet;
use crate::rules::{Arg, Argument, Mismatch, Outcome, suggest};
use crate::shape::{Resolved, Shape, TensorType, compare_dtypes};
use crate::verdict::Verdict;

/// The result type of a contract op from the bound names, the tensors given (each narrowed to
/// its clause's dtypes) and the other arguments.
type Returns = fn(&Bindings, &[TensorType], &[Arg]) -> TensorType;

/// One op checked by a contract.
#[derive(Debug)]
pub struct ContractOp {
    /// The full path (`candle_contracts::nn::cross_entropy`).
    pub path: &'static str,
    /// The name messages use (`nn::cross_entropy`, as the run-time guard names it).
    pub op: &'static str,
    /// The parameters in order; a clause names one of them.
    pub params: &'static [&'static str],
    /// The tensor clauses without value constraints (for `candle_contracts::nn`, exactly the
    /// op's `check!` with its value constraints removed).
    pub contract: &'static str,
    /// For an op indexing along `dim`: (the position of the indexed tensor, the position of
    /// `dim`); its clause sees the tensor with `dim` moved first, as the guard does.
    pub along: Option<(usize, usize)>,
    /// Whether the first two tensors must share a dtype (candle's element-wise ops inside).
    pub same_dtype: bool,
    returns: Returns,
}

fn scalar(_: &Bindings, given: &[TensorType], _: &[Arg]) -> TensorType {
    TensorType::new(first(given).dtypes, Shape::scalar())
}

/// `[]` for a mean or sum, `[N]` for `Reduction::None`: the options decide at run time.
fn reduced(_: &Bindings, given: &[TensorType], _: &[Arg]) -> TensorType {
    TensorType::new(first(given).dtypes, Shape::unknown())
}

fn first(given: &[TensorType]) -> TensorType {
    given.first().cloned().unwrap_or_else(TensorType::unknown)
}

fn param(given: &[TensorType], i: usize) -> TensorType {
    given.get(i).cloned().unwrap_or_else(TensorType::unknown)
}

const OPS: &[ContractOp] = &[
    ContractOp {
        path: "candle_contracts::nn::cross_entropy",
        op: "nn::cross_entropy",
        params: &["logits", "target"],
        contract: "logits: float[N, C], target: u8 | u32 | i64 [N]",
        along: None,
        same_dtype: false,
        returns: scalar,
    },
    ContractOp {
        path: "candle_contracts::nn::nll",
        op: "nn::nll",
        params: &["log_probs", "target"],
        contract: "log_probs: float[N, C], target: u8 | u32 | i64 [N]",
        along: None,
        same_dtype: false,
        returns: scalar,
    },
    ContractOp {
        path: "candle_contracts::nn::cross_entropy_with",
        op: "nn::cross_entropy_with",
        params: &["logits", "target", "options"],
        contract: "logits: float[N, C], target: u8 | u32 | i64 [N]",
        along: None,
        same_dtype: false,
        returns: reduced,
    },
    ContractOp {
        path: "candle_contracts::nn::nll_with",
        op: "nn::nll_with",
        params: &["log_probs", "target", "options"],
        contract: "log_probs: float[N, C], target: u8 | u32 | i64 [N]",
        along: None,
        same_dtype: false,
        returns: reduced,
    },
    ContractOp {
        path: "candle_contracts::nn::binary_cross_entropy",
        op: "nn::binary_cross_entropy",
        params: &["probabilities", "target"],
        contract: "probabilities: float[*S], target: float[*S]",
        along: None,
        same_dtype: false,
        returns: scalar,
    },
    ContractOp {
        path: "candle_contracts::nn::binary_cross_entropy_with_logit",
        op: "nn::binary_cross_entropy_with_logit",
        params: &["logits", "target"],
        contract: "logits: float[*S], target: float[*S]",
        along: None,
        same_dtype: false,
        returns: scalar,
    },
    ContractOp {
        path: "candle_contracts::nn::embedding",
        op: "nn::embedding",
        params: &["ids", "table"],
        contract: "ids: u8 | u32 | i64 [..], table: float[V, D]",
        along: None,
        same_dtype: false,
        returns: |bound, given, _| {
            let (ids, table) = (param(given, 0), param(given, 1));
            TensorType::new(table.dtypes, ids.shape.appended(bound.dim("D")))
        },
    },
    ContractOp {
        path: "candle_contracts::nn::index_select",
        op: "nn::index_select",
        params: &["source", "ids", "dim"],
        contract: "source: _[S, ..], ids: u8 | u32 | i64 [I]",
        along: Some((0, 2)),
        same_dtype: false,
        returns: |bound, given, args| {
            let source = param(given, 0);
            let at = args
                .get(2)
                .and_then(Arg::dim_index)
                .map(|i| source.shape.resolve(i));
            match at {
                Some(Resolved::At(axis)) => {
                    source.with_shape(source.shape.clone().with_dim(axis, bound.dim("I")))
                }
                _ => source.with_shape(Shape::unknown()),
            }
        },
    },
    ContractOp {
        path: "candle_contracts::nn::gather",
        op: "nn::gather",
        params: &["source", "ids", "dim"],
        contract: "source: _[S, ..], ids: u8 | u32 | i64 [..]",
        along: Some((0, 2)),
        same_dtype: false,
        returns: |_, given, _| TensorType::new(param(given, 0).dtypes, param(given, 1).shape),
    },
    ContractOp {
        path: "candle_contracts::nn::scatter_add",
        op: "nn::scatter_add",
        params: &["base", "ids", "source", "dim"],
        contract: "base: _[S, ..], ids: u8 | u32 | i64 [..], source: _[..]",
        along: Some((0, 3)),
        same_dtype: false,
        returns: |_, given, _| param(given, 0),
    },
    ContractOp {
        path: "candle_contracts::nn::index_add",
        op: "nn::index_add",
        params: &["base", "ids", "source", "dim"],
        contract: "base: _[S, ..], ids: u8 | u32 | i64 [I], source: _[..]",
        along: Some((0, 3)),
        same_dtype: false,
        returns: |_, given, _| param(given, 0),
    },
    ContractOp {
        path: "candle_contracts::nn::one_hot",
        op: "nn::one_hot",
        params: &["indices", "depth", "on_value", "off_value"],
        contract: "indices: u8 | u32 | i64 [..]",
        along: None,
        same_dtype: false,
        // The dtype is that of `on_value`, a Rust scalar the checker does not see.
        returns: |_, given, args| {
            let depth = args.get(1).map_or(Dim::Unknown, Arg::size);
            TensorType::new(DTypeSet::ANY, param(given, 0).shape.appended(depth))
        },
    },
    ContractOp {
        path: "candle_nn::loss::cross_entropy",
        op: "candle_nn::loss::cross_entropy",
        params: &["inp", "target"],
        contract: "inp: _[N, C], target: u8 | u32 | i64 [N]",
        along: None,
        same_dtype: false,
        returns: scalar,
    },
    ContractOp {
        path: "candle_nn::loss::nll",
        op: "candle_nn::loss::nll",
        params: &["inp", "target"],
        contract: "inp: _[N, C], target: u8 | u32 | i64 [N]",
        along: None,
        same_dtype: false,
        returns: scalar,
    },
    ContractOp {
        path: "candle_nn::loss::mse",
        op: "candle_nn::loss::mse",
        params: &["inp", "target"],
        contract: "inp: _[*S], target: _[*S]",
        along: None,
        same_dtype: true,
        returns: scalar,
    },
    ContractOp {
        path: "candle_nn::loss::binary_cross_entropy_with_logit",
        op: "candle_nn::loss::binary_cross_entropy_with_logit",
        params: &["inp", "target"],
        contract: "inp: _[*S], target: _[*S]",
        along: None,
        same_dtype: true,
        returns: scalar,
    },
];

/// Every op whose rule is a contract.
pub fn contract_ops() -> &'static [ContractOp] {
    OPS
}

impl ContractOp {
    /// The op's contract, parsed; empty if the text does not parse (a test guarantees it does).
    pub fn parsed(&self) -> Contract {
        Contract::parse(self.contract).unwrap_or_default()
    }

    /// The type of a call with `args`, or the clause it certainly violates.
    pub(crate) fn apply(&self, args: &[Arg]) -> Outcome {
        let contract = self.parsed();
        let given: Vec<TensorType> = (0..self.params.len())
            .map(|i| {
                args.get(i)
                    .map_or_else(TensorType::unknown, Arg::tensor_type)
            })
            .collect();
        let mut seen = given.clone();
        if let Some((tensor, dim)) = self.along {
            // As `guard_along`: `dim` must be in the rank (candle's error), and the clause
            // sees the tensor with `dim` moved first.
            let moved = crate::rules::method(
                "transpose",
                &param(&given, tensor),
                &[Arg::int(0), args.get(dim).cloned().unwrap_or(Arg::Unknown)],
            )
            .map_err(|mismatch| {
                Box::new(Mismatch {
                    op: self.op.to_string(),
                    argument: Argument::Position(dim),
                    ..*mismatch
                })
            })?;
            if let Some(slot) = seen.get_mut(tensor) {
                *slot = moved;
            }
        }
        let mut positions = Vec::new();
        let mut pairs = Vec::new();
        for clause in &contract.clauses {
            if let Some(position) = self.params.iter().position(|p| *p == clause.subject) {
                positions.push((position, clause));
                pairs.push((&clause.spec, &seen[position]));
            }
        }
        let mut bindings = Bindings::new();
        if let Err((i, reason)) = bindings.match_all(&pairs) {
            let (position, clause) = positions[i];
            let found = &given[position];
            return Err(Box::new(Mismatch {
                op: self.op.to_string(),
                argument: Argument::Position(position),
                expected: clause.signature(),
                found: found.to_string(),
                help: suggest(found, &clause.spec, &reason),
                reason,
            }));
        }
        if self.same_dtype {
            let (a, b) = (param(&given, 0), param(&given, 1));
            if let Verdict::Different(reason) = compare_dtypes(b.dtypes, a.dtypes) {
                return Err(Box::new(Mismatch {
                    op: self.op.to_string(),
                    argument: Argument::Position(1),
                    expected: format!(
                        "{}: {}[..] (the dtype of `{}`)",
                        self.params[1], a.dtypes, self.params[0]
                    ),
                    found: b.to_string(),
                    help: super::same_dtype_help(a.dtypes, self.params[0], b.dtypes),
                    reason,
                }));
            }
        }
        let narrowed: Vec<TensorType> = given
            .iter()
            .enumerate()
            .map(|(i, tensor)| {
                let dtypes = contract
                    .clause(self.params[i])
                    .map_or(DTypeSet::ANY, |clause| clause.spec.dtypes);
                TensorType::new(tensor.dtypes.intersection(dtypes), tensor.shape.clone())
            })
            .collect();
        Ok((self.returns)(&bindings, &narrowed, args))
    }
}
