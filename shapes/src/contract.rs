//! A contract's tensor clauses as types, and the binding of its dim names to the sizes given at
//! one call: how a callee's `target: u8 | u32 | i64 [N]` is checked against a caller's tensor.

use std::collections::BTreeMap;

use crate::dim::{Dim, Factor};
use crate::facts::Relation;
use crate::parse::{ParseError, clause_colon, parse_spec, split_top_level};
use crate::reason::Reason;
use crate::shape::{Shape, TensorType, compare_dtypes};
use crate::verdict::{Axis, Verdict};

/// One tensor clause: its subject (`target`, `self.weight`, `return`) and its dtype and shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clause {
    /// The subject as written (`target`, `return`, `self.weight`).
    pub subject: String,
    /// The dtypes and shape; dim names are the contract's own.
    pub spec: TensorType,
}

impl Clause {
    /// `target: u8 | u32 | i64 [N]`: the clause without its value constraints.
    pub fn signature(&self) -> String {
        format!("{}: {}", self.subject, self.spec)
    }
}

/// The tensor clauses of a contract, in order, and the equalities it states between dims
/// (other relations, options and value constraints are the run-time guard's business).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contract {
    /// The tensor clauses, left to right.
    pub clauses: Vec<Clause>,
    /// `E == H * D`: a dim name and the expression it equals. The guard checks relations
    /// before the body runs, so within the body `E` is `H * D`. (The text reader,
    /// [`Contract::parse`], reads none.)
    pub facts: Vec<(String, Dim)>,
    /// `self.n_head = H`: an integer field's path and the dim its value is, for the whole
    /// body (the guard binds the dim from the field before the body runs). (The text reader
    /// reads none.)
    pub fields: Vec<(String, String)>,
    /// `{self.conv.config().padding} == 1` (a convolution's `with padding = 1`): a path and
    /// the number the guard checked it is, before the body runs. (The text reader reads none.)
    pub field_values: Vec<(String, u64)>,
    /// `self.multi_query = true`: a `bool` field's path and the value the guard checked it
    /// has, before the body runs. (The text reader reads none.)
    pub field_flags: Vec<(String, bool)>,
    /// `self.kv_cache?.0: f32[B, KVH, P, HD] else P = 0`: a clause's subject and the dim the
    /// guard binds to 0 where an optional step of that path finds `None`. (The text reader
    /// reads none.)
    pub absent_zero: Vec<(String, String)>,
    /// `self.act_fn != Swiglu`: the path of a candle-nn `Activation` the guard checked is not
    /// `Swiglu`, so it keeps its input's shape. (The text reader reads none.)
    pub not_swiglu: Vec<String>,
    /// Every relation between dims the contract states (`E == H * D`, `D % 2 == 0`,
    /// `T <= P`): facts within the body ([`Facts`](crate::facts::Facts)), and what a call must
    /// not certainly break. (The text reader reads none.)
    pub relations: Vec<Relation>,
    /// The dim names the contract uses where the clauses above hold no shape: a value bound
    /// (`in 0..C`), a sequence of tensors (`items: [f32[E]; N]`), a derived subject. The guard
    /// binds or needs them as it does any other. (The text reader reads none.)
    pub named_elsewhere: Vec<String>,
    /// The element type of each sequence of tensors (`items: [f32[E]; N]`, `return: [..]`):
    /// every element has it, its dims shared across elements, as the guard checks them. (The
    /// text reader reads none.)
    pub sequences: Vec<Clause>,
}

impl Contract {
    /// Reads a contract's text (what `#[contract(...)]` or `check!(...)` holds).
    pub fn parse(text: &str) -> Result<Contract, ParseError> {
        let mut clauses = Vec::new();
        let mut offset = 0;
        for piece in split_top_level(text, ',') {
            let start = offset;
            offset += piece.len() + 1;
            // A relation (`N >= 1`), an option (`on_violation = panic`) or a trailing comma.
            let Some(colon) = clause_colon(piece) else {
                continue;
            };
            let subject = piece[..colon].trim().to_string();
            // A derived subject (`{target.sum(1)?}: ...`) names no variable of the body.
            if subject.starts_with('{') {
                continue;
            }
            // A sequence of tensors (`items: [f32[E]; N]`) is no tensor: left unknown.
            if piece[colon + 1..].trim_start().starts_with('[') {
                continue;
            }
            let (spec, _constraints) =
                parse_spec(&piece[colon + 1..]).map_err(|error| ParseError {
                    message: format!("in the clause of `{subject}`: {}", error.message),
                    offset: start + colon + 1 + error.offset,
                })?;
            clauses.push(Clause { subject, spec });
        }
        Ok(Contract {
            clauses,
            facts: Vec::new(),
            fields: Vec::new(),
            field_values: Vec::new(),
            field_flags: Vec::new(),
            absent_zero: Vec::new(),
            not_swiglu: Vec::new(),
            relations: Vec::new(),
            named_elsewhere: Vec::new(),
            sequences: Vec::new(),
        })
    }

    /// Adds `other`'s clauses, facts, fields and relations after this one's (a struct
    /// contract's to each method's, or two `#[contract]` attributes of one function).
    pub fn extend(&mut self, other: Contract) {
        self.clauses.extend(other.clauses);
        self.facts.extend(other.facts);
        self.fields.extend(other.fields);
        self.field_values.extend(other.field_values);
        self.field_flags.extend(other.field_flags);
        self.absent_zero.extend(other.absent_zero);
        self.not_swiglu.extend(other.not_swiglu);
        self.relations.extend(other.relations);
        self.named_elsewhere.extend(other.named_elsewhere);
        self.sequences.extend(other.sequences);
    }

    /// The element type of the sequence `subject` (`items` of `items: [f32[E]; N]`).
    pub fn sequence(&self, subject: &str) -> Option<&Clause> {
        self.sequences
            .iter()
            .find(|clause| clause.subject == subject)
    }

    /// The clause of `subject`.
    pub fn clause(&self, subject: &str) -> Option<&Clause> {
        self.clauses.iter().find(|clause| clause.subject == subject)
    }

    /// The clauses without value constraints, joined: `logits: float[N, C], target: u8 | u32 |
    /// i64 [N]`.
    pub fn signature(&self) -> String {
        self.clauses
            .iter()
            .map(Clause::signature)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The sizes a callee's dim names and named runs stand for at one call, bound left to right
/// from the tensors given, as the run-time guard binds them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bindings {
    dims: BTreeMap<String, Dim>,
    runs: BTreeMap<String, Shape>,
    /// Braced dims the call gives a size (`{n_rep}`), by their text.
    braced: BTreeMap<String, Dim>,
}

/// A check of an expression dim, done once every plain name is bound.
struct Deferred {
    clause: usize,
    axis: Axis,
    pattern: Dim,
    found: Dim,
}

impl Bindings {
    /// No name bound.
    pub fn new() -> Bindings {
        Bindings::default()
    }

    /// What `name` is bound to; unknown if it is not.
    pub fn dim(&self, name: &str) -> Dim {
        self.dims.get(name).cloned().unwrap_or_default()
    }

    /// What the run `*name` is bound to; unknown if it is not.
    pub fn run(&self, name: &str) -> Shape {
        self.runs.get(name).cloned().unwrap_or_else(Shape::unknown)
    }

    /// Binds `name` (a caller may know a size the callee names, such as `depth`).
    pub fn bind_dim(&mut self, name: impl Into<String>, dim: Dim) {
        self.dims.insert(name.into(), dim);
    }

    /// Binds the braced dim `{text}` (`{n_rep}` of an integer parameter the call gives 2).
    pub fn bind_braced(&mut self, text: &str, dim: Dim) {
        self.braced.insert(text.to_string(), dim);
    }

    /// A pattern dim in the caller's terms: bound names replaced, anything else unknown.
    pub fn instantiate_dim(&self, pattern: &Dim) -> Dim {
        pattern.substitute(&mut |factor| match factor {
            Factor::Symbol(name) => self.dims.get(name).cloned(),
            Factor::Braced(text) => self.braced.get(text).cloned(),
            _ => None,
        })
    }

    /// A pattern in the caller's terms: bound names and runs replaced, anything else unknown.
    pub fn instantiate(&self, pattern: &TensorType) -> TensorType {
        let front = pattern
            .shape
            .front()
            .iter()
            .map(|d| self.instantiate_dim(d));
        let shape = match pattern.shape.run() {
            None => Shape::new(front.collect()),
            Some(run) => {
                let middle = match &run.name {
                    Some(name) => self.run(name),
                    None => Shape::unknown(),
                };
                let back = pattern.shape.back().iter().map(|d| self.instantiate_dim(d));
                Shape::join(front.collect(), middle, back.collect())
            }
        };
        TensorType::new(pattern.dtypes, shape)
    }

    /// Matches each `(pattern, tensor given)` pair in order, binding names on the way; dims
    /// that are expressions are checked after every plain name is bound. `Err` holds the
    /// index of the first pair that certainly fails, and why.
    pub fn match_all(
        &mut self,
        pairs: &[(&TensorType, &TensorType)],
    ) -> Result<(), (usize, Reason)> {
        let mut deferred = Vec::new();
        for (clause, (pattern, found)) in pairs.iter().enumerate() {
            if let Verdict::Different(reason) =
                self.match_shape(clause, &pattern.shape, &found.shape, &mut deferred)
            {
                return Err((clause, reason));
            }
            if let Verdict::Different(reason) = compare_dtypes(found.dtypes, pattern.dtypes) {
                return Err((clause, reason));
            }
        }
        for check in deferred {
            let expected = self.instantiate_dim(&check.pattern);
            if check.found.compare(&expected).is_different() {
                return Err((
                    check.clause,
                    Reason::Dim {
                        axis: check.axis,
                        found: check.found,
                        expected,
                    },
                ));
            }
        }
        Ok(())
    }

    fn match_dim(
        &mut self,
        clause: usize,
        axis: Axis,
        pattern: &Dim,
        found: &Dim,
        deferred: &mut Vec<Deferred>,
    ) -> Verdict<Reason> {
        if pattern.is_unknown() {
            return Verdict::Equal;
        }
        let Some(name) = pattern.as_symbol() else {
            deferred.push(Deferred {
                clause,
                axis,
                pattern: pattern.clone(),
                found: found.clone(),
            });
            return Verdict::Possible;
        };
        match self.dims.get(name) {
            Some(bound) if !bound.is_unknown() => {
                found.compare(bound).map_reason(|()| Reason::Dim {
                    axis,
                    found: found.clone(),
                    expected: bound.clone(),
                })
            }
            _ => {
                self.dims.insert(name.to_string(), found.clone());
                Verdict::Equal
            }
        }
    }

    fn match_shape(
        &mut self,
        clause: usize,
        pattern: &Shape,
        found: &Shape,
        deferred: &mut Vec<Deferred>,
    ) -> Verdict<Reason> {
        // The ranks first: only known ranks (or a minimum that is already too large) differ.
        let verdict = found.compare(&rank_only(pattern));
        if let Verdict::Different(reason @ Reason::Rank { .. }) = verdict {
            return Verdict::Different(reason);
        }
        let (pf, pb) = (pattern.front(), pattern.back());
        let mut verdict = Verdict::Equal;
        match (pattern.run(), found.dims()) {
            (None, Some(dims)) => {
                for (i, (p, f)) in pf.iter().zip(dims).enumerate() {
                    verdict =
                        verdict.and(|| self.match_dim(clause, Axis::Front(i), p, f, deferred));
                }
            }
            (None, None) => {
                let (ff, fb) = (found.front(), found.back());
                for (i, (p, f)) in pf.iter().zip(ff).enumerate() {
                    verdict =
                        verdict.and(|| self.match_dim(clause, Axis::Front(i), p, f, deferred));
                }
                for k in 1..=pf.len().min(fb.len()) {
                    let (p, f) = (&pf[pf.len() - k], &fb[fb.len() - k]);
                    verdict = verdict.and(|| self.match_dim(clause, Axis::Back(k), p, f, deferred));
                }
                verdict = verdict.and(|| Verdict::Possible);
            }
            (Some(run), dims) => {
                let (ff, fb) = match dims {
                    Some(dims) => (dims, dims),
                    None => (found.front(), found.back()),
                };
                for (i, (p, f)) in pf.iter().zip(ff).enumerate() {
                    verdict =
                        verdict.and(|| self.match_dim(clause, Axis::Front(i), p, f, deferred));
                }
                for k in 1..=pb.len().min(fb.len()) {
                    let (p, f) = (&pb[pb.len() - k], &fb[fb.len() - k]);
                    verdict = verdict.and(|| self.match_dim(clause, Axis::Back(k), p, f, deferred));
                }
                let middle = match dims {
                    // The rank check above makes the slice non-empty-ranged; unknown otherwise.
                    Some(dims) => dims
                        .get(pf.len()..dims.len().saturating_sub(pb.len()))
                        .map_or_else(Shape::unknown, |middle| Shape::new(middle.to_vec())),
                    None if pf.len() <= ff.len() && pb.len() <= fb.len() => Shape::with_run(
                        ff[pf.len()..].to_vec(),
                        found
                            .run()
                            .cloned()
                            .unwrap_or_else(crate::shape::Run::anonymous),
                        fb[..fb.len() - pb.len()].to_vec(),
                    ),
                    None => Shape::unknown(),
                };
                if let Some(name) = &run.name {
                    verdict = verdict.and(|| match self.runs.get(name) {
                        Some(bound) => middle.compare(bound).map_reason(|_| {
                            Reason::Other(format!(
                                "`*{name}` is {middle} here, {bound} where it was bound"
                            ))
                        }),
                        None => {
                            self.runs.insert(name.clone(), middle.clone());
                            Verdict::Equal
                        }
                    });
                }
            }
        }
        verdict
    }
}

/// A shape of the same rank (or minimum rank) whose dims are all unknown.
fn rank_only(shape: &Shape) -> Shape {
    let unknown = |dims: &[Dim]| vec![Dim::Unknown; dims.len()];
    match shape.run() {
        None => Shape::new(unknown(shape.front())),
        Some(_) => Shape::with_run(
            unknown(shape.front()),
            crate::shape::Run::anonymous(),
            unknown(shape.back()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_tensor_type;

    fn t(text: &str) -> TensorType {
        parse_tensor_type(text).unwrap()
    }

    fn check(contract: &str, given: &[&str]) -> Result<Bindings, (usize, String)> {
        let contract = Contract::parse(contract).unwrap();
        let given: Vec<TensorType> = given.iter().map(|g| t(g)).collect();
        let pairs: Vec<_> = contract
            .clauses
            .iter()
            .map(|c| &c.spec)
            .zip(&given)
            .collect();
        let mut bindings = Bindings::new();
        bindings
            .match_all(&pairs)
            .map(|()| bindings)
            .map_err(|(i, reason)| (i, reason.to_string()))
    }

    const CROSS_ENTROPY: &str =
        "logits: float[N, C] finite, target: u8 | u32 | i64 [N] in 0..C, N >= 1";

    #[test]
    fn contracts_parse_their_tensor_clauses_only() {
        let contract = Contract::parse(CROSS_ENTROPY).unwrap();
        assert_eq!(
            contract.signature(),
            "logits: float[N, C], target: u8 | u32 | i64 [N]"
        );
        let bce = Contract::parse(
            "probabilities: float[*S] in 0.0..=1.0, target: float[*S] in 0.0..=1.0",
        )
        .unwrap();
        assert_eq!(
            bce.signature(),
            "probabilities: float[*S], target: float[*S]"
        );
        assert!(Contract::parse("x: f32[N").is_err());
        let mixed = Contract::parse(
            "items: [f32[E]; N], self.weight: f32[V, D], {x.sum(1)?}: f32[B], return: f32[], \
             on_violation = panic, T <= P",
        )
        .unwrap();
        // A derived subject names no variable of the body: it is not read.
        assert_eq!(mixed.signature(), "self.weight: f32[V, D], return: f32[]");
    }

    #[test]
    fn a_column_target_is_certainly_the_wrong_rank() {
        let (clause, reason) = check(CROSS_ENTROPY, &["f32[N, C]", "u32[N, 1]"]).unwrap_err();
        assert_eq!(clause, 1);
        assert_eq!(reason, "rank 2 given, rank 1 expected");
    }

    #[test]
    fn names_bind_across_clauses() {
        let bound = check(CROSS_ENTROPY, &["f32[B, 10]", "u32[B]"]).unwrap();
        assert_eq!(bound.dim("N"), Dim::symbol("B"));
        assert_eq!(bound.dim("C"), Dim::lit(10));
        let (clause, reason) = check(CROSS_ENTROPY, &["f32[32, 10]", "u32[16]"]).unwrap_err();
        assert_eq!(
            (clause, reason.as_str()),
            (1, "dim 0: 16 given, 32 expected")
        );
        let (_, reason) = check(CROSS_ENTROPY, &["f32[B, 10]", "u32[B + 1]"]).unwrap_err();
        assert_eq!(reason, "dim 0: B + 1 given, B expected");
        // Two names of the caller may be equal at run time.
        assert!(check(CROSS_ENTROPY, &["f32[B, 10]", "u32[M]"]).is_ok());
        assert!(check(CROSS_ENTROPY, &["_[..]", "u32[M]"]).is_ok());
        let (_, reason) = check(CROSS_ENTROPY, &["i64[B, 10]", "u32[B]"]).unwrap_err();
        assert_eq!(reason, "dtype i64 given, float expected");
    }

    #[test]
    fn expressions_are_checked_once_their_names_are_bound() {
        assert!(check("a: f32[N + 1], b: f32[N]", &["f32[B + 1]", "f32[B]"]).is_ok());
        let (clause, reason) =
            check("a: f32[N + 1], b: f32[N]", &["f32[5]", "f32[5]"]).unwrap_err();
        assert_eq!((clause, reason.as_str()), (0, "dim 0: 5 given, 6 expected"));
        assert!(check("a: f32[N / 2], b: f32[N]", &["f32[B]", "f32[C]"]).is_ok());
        assert!(check("a: f32[{k}]", &["f32[3]"]).is_ok());
    }

    #[test]
    fn runs_bind_to_the_dims_they_cover() {
        let bound = check("a: _[*S], b: _[*S]", &["f32[B, 3]", "f32[B, 3]"]).unwrap();
        assert_eq!(bound.run("S").to_string(), "[B, 3]");
        let (clause, reason) = check("a: _[*S], b: _[*S]", &["f32[N, 1]", "f32[N]"]).unwrap_err();
        assert_eq!(clause, 1);
        assert_eq!(reason, "`*S` is [N] here, [N, 1] where it was bound");
        assert!(check("a: _[*S], b: _[*S]", &["f32[*B, 1]", "f32[*B, 1]"]).is_ok());
        assert!(check("a: _[*S], b: _[*S]", &["f32[..]", "f32[N]"]).is_ok());
        let (_, reason) = check("a: _[S, ..]", &["f32[]"]).unwrap_err();
        assert_eq!(reason, "rank 0 given, rank 1 or more expected");
        assert!(check("a: _[S, ..], b: _[S]", &["f32[..]", "f32[3]"]).is_ok());
        let (_, reason) = check("a: _[S, T]", &["f32[A, B, C, ..]"]).unwrap_err();
        assert_eq!(reason, "rank 3 or more given, rank 2 expected");
    }

    #[test]
    fn instantiation_puts_bound_sizes_in_the_callee_pattern() {
        let bound = check(
            "ids: _[*I], table: float[V, D]",
            &["u32[B, T]", "f32[1000, 64]"],
        )
        .unwrap();
        assert_eq!(
            bound.instantiate(&t("float[*I, D]")).to_string(),
            "float[B, T, 64]"
        );
        assert_eq!(
            bound.instantiate(&t("float[.., D, E]")).to_string(),
            "float[.., 64, _]"
        );
    }
}
