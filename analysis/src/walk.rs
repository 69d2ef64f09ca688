//! The walk of one contracted function's body: each expression's value (a tensor type, a
//! size, a dim index, ...) from the contract, the engine's rules and the contracts of the
//! functions it calls, and every call that is certain to fail.
//!
//! What is not known is unknown and silent. A method is candle's only on a receiver known to
//! be a `Tensor`; a name that a loop, a closure, a macro or a `&mut` may change is forgotten;
//! branches that disagree are joined. So a correct program is never reported.

use std::collections::{BTreeMap, BTreeSet};

use candle_contracts_shapes::dim::Factor;
use candle_contracts_shapes::facts::{Cmp, Relation};
use candle_contracts_shapes::rules::layer::{self, ConvGeometry, Layer};
use candle_contracts_shapes::{
    Arg, Argument, Axis, Bindings, Contract, DType, Dim, DimIndex, Env, Facts, Mismatch, Parts,
    Rank, Reason, Shape, TensorType, check_read_rank, has_method_rule, rules::contract_ops,
    rules::function_under, rules::method_under, rules::parts_under, suggest,
};
use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit::Visit;

use crate::construct::{
    FieldFact, KV_CACHES, binds_anywhere, constructed_fields, has_ref_mut, is_usize,
    root_for_other_crates, takes_ref_self,
};
use crate::finding::{Finding, Join, LetHint, Origin, Site, Unchecked};
use crate::index::{
    DIVERGING_MACROS, EXPRESSION_MACROS, FileId, FnDef, FnId, Index, ModId, Resolved,
    TRACING_MACROS, is_conditional, name_of, token_idents as idents, use_names,
};

/// What the walk knows of a value.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Value {
    /// A candle `Tensor` (or `Result<Tensor>`), with what is known of its type.
    Tensor(TensorType),
    /// An array of tensors (`[&a, &b]`), or a `Vec` of them whose length is known (`chunk`'s
    /// parts).
    Tensors(Vec<TensorType>),
    /// A `Vec` of tensors (`chunk`'s parts), how many unknown, each of this type.
    TensorsEach(TensorType, Dim),
    /// A `Vec` with nothing in it yet (`Vec::new()`, `vec![]`): `push` on a local name fills
    /// it ([`Value::Tensors`], or [`Value::TensorsEach`] after a loop).
    EmptyVec,
    /// An integer, with the size it is where known.
    Int(Dim),
    /// A float.
    Float,
    /// A `bool` whose value the contract states (`self.multi_query = true`).
    Bool(bool),
    /// A `bool` whose value is not known (`j <= i + offset`).
    Flag,
    /// A `Vec` of host numbers of this dtype (`let mask: Vec<_> = (0..t).map(|j| u8::from(j
    /// <= i)).collect()`), for `Tensor::new`, `from_slice` and `from_vec`, with how many
    /// (`Dim::Unknown` where not known).
    Numbers(DType, Dim),
    /// One of std's iterators of this many items, their values not followed (`(0..t).map(..)`,
    /// `.rev()`): what `collect` gathers.
    Iter(Dim),
    /// A tensor's whole shape where a tuple of sizes cannot say it (`mask.shape()` of a
    /// `u8[*S]`), for `broadcast_as`.
    Shape(Shape),
    /// A `DType::*`.
    DType(DType),
    /// A `D::Minus*`.
    DimIndex(DimIndex),
    /// A tuple.
    Tuple(Vec<Value>),
    /// A range of indices (`2..`, `..t`), its end one past the last.
    Range(Option<Dim>, Option<Dim>),
    /// A value of a type of the crates read, by its key, and how it is held.
    Instance(String, Access),
    /// A value of another crate's type, by its path (`candle_contracts::nn::Embedding`).
    External(String),
    /// An `Option` of a value (`mask: Option<&Tensor>`, `self.kv_cache`), `None` or not.
    Optional(Box<Value>),
    /// std's `None`: an `Option` that holds nothing (after a branch that gives `Some(mask)`,
    /// an `Option` of the mask).
    Nothing,
    /// A `Vec`, array or slice of the crate's values (`self.layers: Vec<Block>`), each
    /// element this value as a place.
    Each(Box<Value>),
    /// A candle-nn `Func` (or `FuncT`) of a closure the walk read: applying it
    /// (`xs.apply(&block)`) walks that closure with the tensor given.
    Func(FuncRef),
    /// A `Vec` of `Func`s each of which applies as this one (how many unknown): the ones a
    /// loop pushes, built alike on every pass.
    Funcs(FuncRef),
    /// What an expression that never completes yields (`return`, `panic!`).
    Never,
    /// Anything else.
    Other,
}

impl Value {
    fn tensor_unknown() -> Value {
        Value::Tensor(TensorType::unknown())
    }

    /// The value after a change the walk cannot follow that keeps its Rust type.
    fn forgotten(&self) -> Value {
        match self {
            Value::Tensor(_) => Value::tensor_unknown(),
            Value::Int(_) => Value::Int(Dim::Unknown),
            Value::Float => Value::Float,
            Value::Bool(_) | Value::Flag => Value::Flag,
            Value::Instance(key, access) => Value::Instance(key.clone(), *access),
            Value::External(path) => Value::External(path.clone()),
            Value::Optional(inner) => Value::Optional(Box::new(inner.forgotten())),
            Value::Each(inner) => Value::Each(Box::new(inner.forgotten())),
            // A `Vec<f32>` written to (`weights[i] = 1.0`) holds `f32`s still, how many not
            // known.
            Value::Numbers(dtype, _) => Value::Numbers(*dtype, Dim::Unknown),
            _ => Value::Other,
        }
    }

    /// What two branches agree on.
    fn join(&self, other: &Value) -> Value {
        self.join_with(other, &mut Joiner::unnamed())
    }

    /// What two branches agree on, the sizes they disagree on named by `joiner`.
    fn join_with(&self, other: &Value, joiner: &mut Joiner) -> Value {
        let mut disagree = |a: &Dim, b: &Dim| joiner.name(a, b);
        match (self, other) {
            (Value::Never, v) | (v, Value::Never) => v.clone(),
            (Value::Tensor(a), Value::Tensor(b)) => Value::Tensor(a.join_by(b, &mut disagree)),
            (Value::Int(a), Value::Int(b)) if a == b => Value::Int(a.clone()),
            (Value::Int(a), Value::Int(b)) => Value::Int(disagree(a, b)),
            (Value::Tuple(a), Value::Tuple(b)) if a.len() == b.len() => Value::Tuple(
                a.iter()
                    .zip(b)
                    .map(|(x, y)| x.join_with(y, joiner))
                    .collect(),
            ),
            (Value::Tensors(a), Value::Tensors(b)) if a.len() == b.len() => Value::Tensors(
                a.iter()
                    .zip(b)
                    .map(|(x, y)| x.join_by(y, &mut disagree))
                    .collect(),
            ),
            (Value::TensorsEach(a, n), Value::TensorsEach(b, m)) => Value::TensorsEach(
                a.join_by(b, &mut disagree),
                if n == m { n.clone() } else { Dim::Unknown },
            ),
            // A `Vec` filled on one path and not (or less) on the other: how many is unknown,
            // each element one of the types either path pushed (one stands for many: unnamed).
            (Value::EmptyVec, Value::TensorsEach(t, _))
            | (Value::TensorsEach(t, _), Value::EmptyVec) => {
                Value::TensorsEach(t.clone(), Dim::Unknown)
            }
            (Value::EmptyVec, Value::Tensors(ts)) | (Value::Tensors(ts), Value::EmptyVec)
                if !ts.is_empty() =>
            {
                Value::TensorsEach(each_of(ts.iter()), Dim::Unknown)
            }
            (Value::Tensors(a), Value::Tensors(b)) if !a.is_empty() && !b.is_empty() => {
                Value::TensorsEach(each_of(a.iter().chain(b)), Dim::Unknown)
            }
            (Value::Tensors(ts), Value::TensorsEach(t, _))
            | (Value::TensorsEach(t, _), Value::Tensors(ts)) => {
                Value::TensorsEach(each_of(ts.iter().chain([t])), Dim::Unknown)
            }
            (Value::Optional(a), Value::Optional(b)) => {
                Value::Optional(Box::new(a.join_with(b, joiner)))
            }
            (Value::Nothing, Value::Optional(held)) | (Value::Optional(held), Value::Nothing) => {
                Value::Optional(held.clone())
            }
            // One element stands for many: a name would say they are all one size.
            (Value::Each(a), Value::Each(b)) => Value::Each(Box::new(a.join(b))),
            // A list of `Func`s filled on one path and not on the other.
            (Value::EmptyVec, funcs @ Value::Funcs(_))
            | (funcs @ Value::Funcs(_), Value::EmptyVec) => funcs.clone(),
            (a, b) if a == b => a.clone(),
            (Value::Bool(_) | Value::Flag, Value::Bool(_) | Value::Flag) => Value::Flag,
            _ => Value::Other,
        }
    }

    /// The same value with every size replaced by `f`'s answer.
    fn map_dims(&self, f: &mut dyn FnMut(&Dim) -> Dim) -> Value {
        let mut tensor = |t: &TensorType| t.with_shape(t.shape.map_dims(&mut *f));
        match self {
            Value::Tensor(t) => Value::Tensor(tensor(t)),
            Value::Tensors(ts) => Value::Tensors(ts.iter().map(&mut tensor).collect()),
            Value::TensorsEach(t, n) => Value::TensorsEach(tensor(t), f(n)),
            Value::Int(d) => Value::Int(f(d)),
            Value::Tuple(items) => Value::Tuple(items.iter().map(|v| v.map_dims(f)).collect()),
            Value::Shape(shape) => Value::Shape(shape.map_dims(&mut *f)),
            Value::Range(a, b) => Value::Range(a.as_ref().map(&mut *f), b.as_ref().map(&mut *f)),
            Value::Optional(inner) => Value::Optional(Box::new(inner.map_dims(f))),
            Value::Each(inner) => Value::Each(Box::new(inner.map_dims(f))),
            // What a `Func` captured, too (a loop's index it was built with, forgotten).
            Value::Func(func) => Value::Func(func.map_dims(f)),
            Value::Funcs(func) => Value::Funcs(func.map_dims(f)),
            other => other.clone(),
        }
    }

    fn arg(&self) -> Arg {
        match self {
            Value::Tensor(t) => Arg::Tensor(t.clone()),
            Value::Tensors(ts) => Arg::Tensors(ts.clone()),
            Value::TensorsEach(t, n) => Arg::TensorsEach(t.clone(), n.clone()),
            Value::Int(d) => Arg::Int(d.clone()),
            Value::Float => Arg::Float,
            Value::DType(d) => Arg::DType(*d),
            Value::DimIndex(i) => Arg::Dim(*i),
            Value::Tuple(items) => Arg::Tuple(items.iter().map(Value::arg).collect()),
            Value::Shape(shape) => Arg::Shape(shape.clone()),
            Value::Range(start, end) => Arg::Range(start.clone(), end.clone()),
            _ => Arg::Unknown,
        }
    }

    fn hint(&self) -> String {
        match self {
            Value::Tensor(t) if !t.is_unknown() => t.to_string(),
            Value::Int(d) if !d.is_unknown() => format!("= {d}"),
            // Not a tensor: said so, so that a count of unknown tensors leaves it out.
            Value::Int(_) => "= _".to_string(),
            Value::Float => "float".to_string(),
            Value::Bool(_) | Value::Flag => "bool".to_string(),
            // Rust's never type: the `let` is never bound (`todo!()` before it).
            Value::Never => "!".to_string(),
            Value::DType(dtype) => format!("DType::{dtype:?}"),
            Value::Numbers(dtype, _) => format!("Vec<{dtype}>"),
            // Not a tensor: said so, so that a count of tensors leaves it out.
            Value::Shape(shape) => format!("Shape{shape}"),
            Value::Optional(held) if matches!(**held, Value::Tensor(ref t) if !t.is_unknown()) => {
                format!("Option<{}>", held.hint())
            }
            // A list before its first `push`: its elements' type comes from the pushes.
            Value::EmptyVec => "Vec".to_string(),
            Value::Nothing => "None".to_string(),
            Value::Tensors(ts) if ts.iter().any(|t| !t.is_unknown()) => {
                Parts::Each(ts.clone()).to_string()
            }
            Value::TensorsEach(t, _) if !t.is_unknown() => Parts::All(t.clone()).to_string(),
            Value::Tuple(items)
                if items
                    .iter()
                    .any(|v| !matches!(v.hint().as_str(), "?" | "= _")) =>
            {
                let items: Vec<String> = items.iter().map(Value::hint).collect();
                // A long run of one item (`[[0f32; 16]; 16]`) as Rust writes an array of it.
                match items.first() {
                    Some(first) if items.len() > 4 && items.iter().all(|item| item == first) => {
                        format!("[{first}; {}]", items.len())
                    }
                    _ => format!("({})", items.join(", ")),
                }
            }
            // Not a tensor: a value of another crate's type (a candle-nn layer, a `Func`) or of
            // the crate's own, by the type's name (`Conv2d`, `Config`), so that a count of
            // tensors leaves it out.
            Value::External(path) => path.rsplit("::").next().unwrap_or(path).to_string(),
            Value::Func(_) => "Func".to_string(),
            Value::Funcs(_) => "Vec<Func>".to_string(),
            Value::Instance(key, _) => key.rsplit("::").next().unwrap_or(key).to_string(),
            _ => "?".to_string(),
        }
    }
}

/// A layer's type as a layer clause states it, from the weight its constructor gave
/// (`Linear[{cin} -> 10]` of a weight `[10, {cin}]`, `Conv2d[CIN -> COUT, 3]` of `[COUT, CIN,
/// 3, 3]` in one group): the type's name alone where the clause's form has no place for what
/// is known, `_` for a size not known.
fn layer_hint(layer: Layer, dims: &[Dim], geometry: Option<&ConvGeometry>) -> Option<String> {
    let shown = |dim: &Dim| match dim.is_unknown() {
        true => "_".to_string(),
        false => dim.to_string(),
    };
    Some(match (layer, dims) {
        (Layer::Linear, [out, input]) => format!("Linear[{} -> {}]", shown(input), shown(out)),
        (Layer::Embedding, [v, e]) => format!("Embedding[{}, {}]", shown(v), shown(e)),
        (Layer::LayerNorm, [d]) => format!("LayerNorm[{}]", shown(d)),
        (Layer::RmsNorm, [d]) => format!("RmsNorm[{}]", shown(d)),
        (Layer::Conv1d | Layer::Conv2d, [out, input, kernel, ..]) => {
            let groups = geometry.map_or(Dim::Unknown, |g| g.groups.clone());
            let name = if layer == Layer::Conv1d {
                "Conv1d"
            } else {
                "Conv2d"
            };
            let input = match groups.is_unknown() {
                true => Dim::Unknown,
                false => input.clone().mul(groups),
            };
            format!(
                "{name}[{} -> {}, {}]",
                shown(&input),
                shown(out),
                shown(kernel)
            )
        }
        _ => return None,
    })
}

/// Names the sizes two branches of one `if` or `match` give differently (`T` where the cache
/// is empty, `P + T` where it holds `P` steps): after the branches, a size of its own (`?1`),
/// one value on every run. Every value that had that same pair of sizes has it (the two
/// halves of a `(k, v)` cache), so they still agree with each other. A pair with an unknown
/// side stays unknown: only a name that may meet its twin is worth keeping.
struct Joiner {
    memo: BTreeMap<(Dim, Dim), Dim>,
    /// The count of sizes named so far in this walk; `None` where nothing is named.
    count: Option<usize>,
    /// What the condition of the `if` makes true in one branch (the first side of each pair
    /// is the `then` branch's).
    fact: Option<BranchFact>,
    /// The contract's facts, under which a branch's fact is read (`n_rep == 1` of
    /// `n_rep = H / KVH` makes `H` be `KVH` where `H % KVH == 0`).
    facts: Facts,
}

/// `factor == value` in one branch of an `if` (`n_rep == 1` in the `then` branch, or in the
/// `else` branch of `n_rep != 1`); several at once where an absent cache's sizes are all 0
/// (see [`Walker::absent_sizes`]).
struct BranchFact {
    in_then: bool,
    values: Vec<(Factor, Dim)>,
}

impl Joiner {
    fn unnamed() -> Joiner {
        Joiner {
            memo: BTreeMap::new(),
            count: None,
            fact: None,
            facts: Facts::none(),
        }
    }

    /// The size after the branches, `a` the first's and `b` the second's. Where the branch
    /// with a fact gives what the other's expression is under it (`H` where `n_rep == 1`,
    /// `H * n_rep` else), that expression holds on both.
    fn name(&mut self, a: &Dim, b: &Dim) -> Dim {
        if let Some(fact) = &self.fact
            && !a.is_unknown()
            && !b.is_unknown()
        {
            let (with_fact, other) = if fact.in_then { (a, b) } else { (b, a) };
            let under_fact = |dim: &Dim| {
                fact.values
                    .iter()
                    .fold(self.facts.with_quotients(dim), |dim, (factor, value)| {
                        dim.replace_factor(factor, value)
                    })
            };
            if under_fact(other).compare(&under_fact(with_fact))
                == candle_contracts_shapes::Verdict::Equal
            {
                return other.clone();
            }
        }
        let Some(count) = self.count.as_mut() else {
            return Dim::Unknown;
        };
        if a.is_unknown() || b.is_unknown() {
            return Dim::Unknown;
        }
        self.memo
            .entry((a.clone(), b.clone()))
            .or_insert_with(|| {
                *count += 1;
                Dim::symbol(format!("?{count}"))
            })
            .clone()
    }
}

/// `x > 0` of a size (`0 < x`, `x >= 1`, `1 <= x`): false only where `x == 0`, the fact of
/// the `else` branch (`if seqlen_offset > 0 { cat(..) } else { mask }`); `x < 1`, `x <= 0`
/// (and mirrored): the `then` branch's. A size never negative, so nothing else is false.
fn zero_in_one_branch(op: syn::BinOp, left: &Value, right: &Value) -> Option<BranchFact> {
    use syn::BinOp;
    let (Value::Int(left), Value::Int(right)) = (left, right) else {
        return None;
    };
    // The size, the constant it is compared with, and whether the size stands on the left.
    let (size, constant, size_left) = match (left.as_constant(), right.as_constant()) {
        (None, Some(c)) => (left, c, true),
        (Some(c), None) => (right, c, false),
        _ => return None,
    };
    if size.may_be_negative() {
        return None;
    }
    let factor = size.as_factor()?.clone();
    // Read with the size on the left (`0 < x` is `x > 0`): `x > 0`, `x >= 1` are false where
    // `x == 0`, `x < 1`, `x <= 0` true.
    let in_then = match (op, size_left, constant) {
        (BinOp::Gt(_), true, 0) | (BinOp::Lt(_), false, 0) => false,
        (BinOp::Ge(_), true, 1) | (BinOp::Le(_), false, 1) => false,
        (BinOp::Lt(_), true, 1) | (BinOp::Gt(_), false, 1) => true,
        (BinOp::Le(_), true, 0) | (BinOp::Ge(_), false, 0) => true,
        _ => return None,
    };
    Some(BranchFact {
        in_then,
        values: vec![(factor, Dim::lit(0))],
    })
}

/// The `?N` names in a type's text, in order.
fn join_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('?') {
        let digits: String = rest[at + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if !digits.is_empty() {
            names.push(format!("?{digits}"));
        }
        rest = &rest[at + 1 + digits.len()..];
    }
    names
}

/// A name in scope: its value, where its type was declared, and the place it holds where it
/// is a layer an `Option` field holds (`p` of `Some(p)` matched on `&self.proj`: `self.proj?`,
/// whose clauses state its weight).
#[derive(Clone, Debug)]
struct Binding {
    value: Value,
    origin: Option<Origin>,
    place: Option<String>,
}

impl Binding {
    /// A name bound to `value`, holding no place of its own.
    fn new(value: Value, origin: Option<Origin>) -> Binding {
        Binding {
            value,
            origin,
            place: None,
        }
    }
}

/// A `Func` the walk built (see [`Value::Func`]): equal to another of the same closure with
/// the same captures.
#[derive(Clone)]
struct FuncRef(std::rc::Rc<FuncBody>);

impl PartialEq for FuncRef {
    /// The same closure with the same captures: one built on each pass of a loop
    /// (`blocks.push(block(cfg, vb.pp(i))?)`) with what every pass knows alike.
    fn eq(&self, other: &FuncRef) -> bool {
        let (a, b) = (&*self.0, &*other.0);
        let same_frames = |x: &[BTreeMap<String, Binding>], y: &[BTreeMap<String, Binding>]| {
            x.len() == y.len()
                && x.iter().zip(y).all(|(fx, fy)| {
                    fx.len() == fy.len()
                        && fx.iter().all(|(name, bx)| {
                            fy.get(name)
                                .is_some_and(|by| bx.value == by.value && bx.place == by.place)
                        })
                })
        };
        std::rc::Rc::ptr_eq(&self.0, &other.0)
            || (a.owner == b.owner
                && a.nth == b.nth
                && a.facts == b.facts
                && a.field_dims == b.field_dims
                && a.built_tables == b.built_tables
                && a.local_paths == b.local_paths
                && a.subjects.len() == b.subjects.len()
                && a.subjects.iter().all(|(subject, (value, _))| {
                    b.subjects.get(subject).is_some_and(|(v, _)| v == value)
                })
                && same_frames(&a.scope, &b.scope))
    }
}

impl Eq for FuncRef {}

impl std::fmt::Debug for FuncRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Func({}#{})", self.0.owner, self.0.nth)
    }
}

impl FuncRef {
    /// The same closure with every size it captured replaced by `f`'s answer.
    fn map_dims(&self, f: &mut dyn FnMut(&Dim) -> Dim) -> FuncRef {
        let body = &*self.0;
        let scope = body
            .scope
            .iter()
            .map(|frame| {
                frame
                    .iter()
                    .map(|(name, binding)| {
                        let mut binding = binding.clone();
                        binding.value = binding.value.map_dims(&mut *f);
                        (name.clone(), binding)
                    })
                    .collect()
            })
            .collect();
        let subjects = body
            .subjects
            .iter()
            .map(|(subject, (value, origin))| {
                (subject.clone(), (value.map_dims(&mut *f), origin.clone()))
            })
            .collect();
        let field_dims = body
            .field_dims
            .iter()
            .map(|(name, dim)| (name.clone(), f(dim)))
            .collect();
        FuncRef(std::rc::Rc::new(FuncBody {
            owner: body.owner,
            nth: body.nth,
            scope,
            local_paths: body.local_paths.clone(),
            subjects,
            field_dims,
            built_tables: body.built_tables.clone(),
            facts: body.facts.clone(),
        }))
    }
}

/// The closure of a `Func` and what it captured where it was built.
struct FuncBody {
    /// The function whose body holds the closure.
    owner: FnId,
    /// Which closure of that body, in the order a walk of its syntax meets them.
    nth: usize,
    /// What the walk knew where the closure stands: a `move` closure holds its own copies,
    /// and a borrowing one keeps what it borrows from changing while it lives.
    scope: Vec<BTreeMap<String, Binding>>,
    local_paths: Vec<BTreeMap<String, Option<Vec<String>>>>,
    subjects: BTreeMap<String, (Value, Option<Origin>)>,
    field_dims: BTreeMap<String, Dim>,
    built_tables: BTreeSet<String>,
    facts: Facts,
}

/// How many `Func`s deep the walk follows one applied inside another (a model's closure
/// applying its stages', each applying its blocks').
const FUNC_DEPTH: usize = 6;

/// The closures of a body, in the order a walk of its syntax meets them.
#[derive(Default)]
struct Closures<'b>(Vec<&'b syn::ExprClosure>);

impl<'b> syn::visit::Visit<'b> for Closures<'b> {
    fn visit_expr_closure(&mut self, closure: &'b syn::ExprClosure) {
        self.0.push(closure);
        syn::visit::visit_expr_closure(self, closure);
    }
}

/// How a value of a type of the crates read is held, which decides the method a call reaches:
/// Rust tries the value itself, then `&` of it, then `&mut`, and at each step an inherent
/// method before a trait's. So an inherent method is certain only where its receiver (`self`,
/// `&self`, `&mut self`) is the first step tried, that is, matches how the value is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// `&Model`.
    Ref,
    /// `&mut Model`.
    Mut,
    /// `Model`: an owned value or a place (a field).
    Owned,
    /// `Arc<Model>`, `Rc<Model>`: only its `&self` methods reach it, after the pointer's own
    /// (`clone`, `as_ref`, ..) and any trait of the crate's that may be the pointer's.
    Shared,
}

/// What a Rust type is, as far as the walk cares.
#[derive(Clone)]
enum Kind {
    Tensor,
    Int,
    Float,
    Instance(String, Access),
    External(String),
    /// std's `Option` of a kind.
    Optional(Box<Kind>),
    /// A tuple, inside an `Option` (`Option<(Tensor, Tensor)>`).
    Tuple(Vec<Kind>),
    /// A `Vec`, array or slice of the crate's values.
    Each(Box<Kind>),
    Other,
}

impl Kind {
    /// A value of this kind whose tensor type, size or contents are not known.
    fn unknown_value(self) -> Value {
        match self {
            Kind::Tensor => Value::tensor_unknown(),
            Kind::Int => Value::Int(Dim::Unknown),
            Kind::Float => Value::Float,
            Kind::Instance(key, access) => Value::Instance(key, access),
            Kind::External(path) => Value::External(path),
            Kind::Optional(inner) => Value::Optional(Box::new(inner.unknown_value())),
            Kind::Tuple(kinds) => {
                Value::Tuple(kinds.into_iter().map(Kind::unknown_value).collect())
            }
            Kind::Each(inner) => Value::Each(Box::new(inner.unknown_value())),
            Kind::Other => Value::Other,
        }
    }
}

/// Methods of candle's `Tensor` that return a `Tensor` (or `Result<Tensor>`) but have no rule
/// in the engine ([`has_method_rule`] covers those): their result is a tensor of unknown type.
const UNKNOWN_TENSOR_METHODS: &[&str] = &[
    "scatter_add",
    "index_add",
    "conv_transpose1d",
    "conv_transpose2d",
    "cumsum",
    "pow",
    "broadcast_pow",
    "apply",
    "apply_t",
    "log_sum_exp",
    "var",
    "var_keepdim",
    "roll",
    "upsample_nearest1d",
    "upsample_nearest2d",
    "interpolate1d",
    "interpolate2d",
    "slice_assign",
    "slice_scatter",
    "slice_scatter0",
    "sort_last_dim",
    "arg_sort_last_dim",
    "cmp",
    "broadcast_cmp",
    "squeeze_dims",
    "abs_diff",
];

/// Methods of std's integer types that give an integer.
const INT_METHODS: &[&str] = &[
    "min",
    "max",
    "clamp",
    "saturating_sub",
    "saturating_add",
    "wrapping_sub",
    "wrapping_add",
    "abs_diff",
    "div_ceil",
    "next_multiple_of",
    "next_power_of_two",
    "pow",
    "isqrt",
];

/// Methods of `f32` and `f64` that give a float of the same type.
const FLOAT_METHODS: &[&str] = &[
    "sqrt", "powi", "powf", "exp", "ln", "log", "log2", "log10", "abs", "recip", "floor", "ceil",
    "round", "min", "max", "clamp", "sin", "cos", "tanh",
];

/// Methods of a `Vec` of tensors that give the same tensors (by reference, cloned, or as the
/// `Result` of an array, which a pattern of another length does not match).
const LIST_VIEWS: &[&str] = &["as_slice", "clone", "to_vec", "try_into"];

/// Methods of `Result` (and `anyhow`'s `Context`) that keep the `Ok` value.
const KEEP_OK: &[&str] = &["unwrap", "expect", "context", "with_context", "map_err"];

/// candle's `&self` methods that read a tensor without a rule of their own; any other method
/// without a rule may take `&mut self` (`clone_from`, a trait's `reset_to`) and replace it.
const READ_ONLY: &[&str] = &[
    "shape",
    "dims",
    "dims1",
    "dim",
    "rank",
    "dtype",
    "device",
    "layout",
    "stride",
    "is_contiguous",
    "elem_count",
    "to_scalar",
    "to_vec0",
    "to_vec1",
    "to_vec2",
    "to_vec3",
];

/// What the walk needs of the source it reads: how messages quote an expression.
pub trait SourceText {
    /// The text of `tokens`, written in `file`, as a message quotes it (`w2.t()?`).
    fn text(&self, file: FileId, tokens: &TokenStream) -> String;
}

/// The function whose body is walked, and where it stands.
#[derive(Clone, Copy)]
pub struct Function<'a> {
    /// Its signature.
    pub sig: &'a syn::Signature,
    /// Its body.
    pub block: &'a syn::Block,
    /// Its contract's tensor clauses (empty for `#[contract]` without clauses).
    pub contract: &'a Contract,
    /// The module it is written in.
    pub module: ModId,
    /// The key of its `impl` block's type, for methods.
    pub owner: Option<&'a str>,
    /// The generic parameters of its `impl` block.
    pub impl_generics: &'a [String],
    /// As messages name it: `model::forward`, `Mlp::forward`.
    pub display: &'a str,
    /// The file it is written in.
    pub file: FileId,
    /// Code without a contract (`main`, a data loader): only a call whose success it takes
    /// (`?`, `.unwrap()`, `.expect(..)`) is reported, since code that inspects a `Result`
    /// (`.unwrap_err()`, `is_err()`, a `match`) may expect the failure.
    pub glue: bool,
}

impl std::fmt::Debug for Function<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Function")
            .field("display", &self.display)
            .field("module", &self.module)
            .finish_non_exhaustive()
    }
}

impl<'a> Function<'a> {
    /// The function `def` of an index, with its contract `contract`.
    pub fn of(def: &'a FnDef, contract: &'a Contract) -> Function<'a> {
        Function {
            sig: def.sig,
            block: def.block,
            contract,
            module: def.module,
            owner: def.owner.as_deref(),
            impl_generics: &def.impl_generics,
            display: &def.display,
            file: def.file,
            glue: false,
        }
    }
}

/// Checks the body of `f` with what `index` knows: the certain failures, in the order of the
/// body, and the type of every name a `let` binds.
pub fn walk(
    index: &Index,
    source: &dyn SourceText,
    f: Function<'_>,
) -> (Vec<Finding>, Vec<LetHint>) {
    let (findings, hints, _) = walk_with_unchecked(index, source, f);
    (findings, hints)
}

/// [`walk`]'s findings alone, without the reasons `shapes` gives for shapes not known (the
/// macro's walk: none reads them).
pub fn walk_for_findings(index: &Index, source: &dyn SourceText, f: Function<'_>) -> Vec<Finding> {
    let mut walker = Walker::new(index, source, f);
    walker.whys_off = true;
    walker.run(f).0
}

/// [`walk`], with the `if`s of the function's own code whose branches are not reported in
/// (for `shapes`).
pub fn walk_with_unchecked(
    index: &Index,
    source: &dyn SourceText,
    f: Function<'_>,
) -> (Vec<Finding>, Vec<LetHint>, Vec<Unchecked>) {
    Walker::new(index, source, f).run(f)
}

/// No clause: the contract of a helper followed at its call.
static NO_CLAUSES: Contract = Contract {
    clauses: Vec::new(),
    facts: Vec::new(),
    fields: Vec::new(),
    field_values: Vec::new(),
    field_flags: Vec::new(),
    absent_zero: Vec::new(),
    not_swiglu: Vec::new(),
    relations: Vec::new(),
    named_elsewhere: Vec::new(),
    sequences: Vec::new(),
};

/// Iterator adapters whose items are their receiver's.
const ITEM_KEEPING_ADAPTERS: &[&str] = &[
    "filter",
    "take",
    "skip",
    "rev",
    "step_by",
    "take_while",
    "skip_while",
];

/// How many tensors a `Vec` filled by `push` lists one by one; past that, each is one type.
const MAX_LISTED: usize = 16;

/// How deep helpers without a contract are followed into (a helper's helper, no further).
const INLINE_DEPTH: usize = 2;

struct Walker<'a> {
    index: &'a Index,
    source: &'a dyn SourceText,
    f: Function<'a>,
    env: Env,
    contract: Contract,
    /// What the contract's relations let the engine decide (`D % 2 == 0`, `T <= P`).
    facts: Facts,
    /// Frames of names, innermost last; the first holds the parameters.
    scope: Vec<BTreeMap<String, Binding>>,
    /// The `use`s (`Some`) and other items (`None`) declared in the blocks entered.
    local_paths: Vec<BTreeMap<String, Option<Vec<String>>>>,
    /// Clauses on paths from a parameter that cannot change (`self.head.weight()`), and the
    /// integer fields a contract names as dims (`self.n_head = H`: an `Int`), by their text
    /// without spaces.
    subjects: BTreeMap<String, (Value, Option<Origin>)>,
    /// How many closures and async blocks the walk is inside.
    closures: usize,
    /// How many of those closures are the body of a candle-nn `Func` or `FuncT`
    /// (`Func::new(move |xs| ..)`): a layer's `forward`, whose failures are the layer's.
    layer_bodies: usize,
    /// Set by a call of `Func::new` (or `func`, `FuncT::new`, `func_t`) for its closure
    /// argument, taken by that closure's walk.
    next_is_layer_body: bool,
    findings: Vec<Finding>,
    /// Whether the wrong value is a returned `Result`: its fix goes after a `?`.
    fix_result: bool,
    hints: Vec<LetHint>,
    /// Certain failures met so far, reported or not (in code that may never run).
    failures: usize,
    /// The last call whose own rule certainly fails ([`expr_id`]): `?` or `unwrap` of it
    /// never gives a value.
    failed_call: Option<usize>,
    /// Whether the last `Never` came from such a failure, not a `return` or `panic!`.
    failure_never: bool,
    /// The value the last block so ended with would have given, for its `return` clause.
    value_after_failure: Option<Value>,
    /// What the call that so failed gave, for a `let` of it.
    failed_value: Option<Value>,
    /// Whether the names being bound are a `let`'s (the ones `shapes` prints).
    in_let: bool,
    /// The op of the `let` being bound (`matmul`, `Tensor::zeros`), for its hints.
    let_op: String,
    /// While a `let`'s value is walked: the first place its shape was lost, said for `shapes`
    /// (an operand already unknown, a layer of unknown sizes, a call not followed), and the
    /// first cause of all (through the names it was read from).
    let_why: Option<(String, String)>,
    /// For each name bound to a shape not fully known, the first cause of all (see
    /// `let_why`).
    why_of: BTreeMap<String, String>,
    /// Whether a `let`'s value is being walked (see `let_why`).
    why_wanted: bool,
    /// Whether no one reads the reasons (`let_why`): the macro's walk, which only reports.
    whys_off: bool,
    /// The `if`s of the function's own code whose branches are not reported in.
    unchecked: Vec<Unchecked>,
    /// Inside code that may never run for the contract's shapes (a branch whose condition is
    /// not certain, a loop's body, a helper followed at its call): nothing in it is reported.
    quiet: usize,
    /// In a helper followed at its call: its first certain failure the helper takes (its
    /// tail, an operand of `?`), where the tensor it names is a parameter of the helper (not
    /// shadowed), by that name.
    helper_failure: Option<(Mismatch, String)>,
    /// In a `Func`'s closure followed where it is applied: its first certain failure on the
    /// closure's own path (no branch, loop or closure around it), as its message and note
    /// say it (see [`Walker::apply_func`]).
    func_failure: Option<(String, String)>,
    /// Whether the expression being walked is one whose success the code takes (the operand of
    /// `?`, the receiver of `.unwrap()`, a contracted function's tail): only those calls are
    /// reported, since code may look at an `Err` it expects (`x.dims4().is_ok()`).
    taken: bool,
    /// The `macro_rules!` the body defines, each with the names its definition holds: a call
    /// may assign any of those it sees where it is defined, without naming them.
    body_macros: BodyMacros,
    /// What the body's `return`s give, joined (for a helper followed at its call).
    returned: Option<Value>,
    /// The receiver is `&mut self`: clauses on paths from it hold until something may change
    /// that path (an assignment, a `&mut`, a method that may take `&mut self`).
    self_mut: bool,
    /// `&mut` parameters (`cache: &mut Cache`) some clause's path from which the walk holds
    /// (`cache.kvs[block_idx]?`): held until anything that may change the parameter (see
    /// [`Walker::guard_mut_roots`]).
    mut_roots: BTreeSet<String>,
    /// Parameters held by value (`ctx: Ctx<'_>`, `self`), whose fields may lend a `&mut`.
    owned_roots: BTreeSet<String>,
    /// The arguments of the call being walked that are a `&mut` parameter passed on whole to
    /// a parameter of type `&T` (`self.apply_rotary_emb(&q, index_pos, cache)`): a shared
    /// reborrow, which changes nothing.
    shared_args: Vec<*const syn::Expr>,
    /// The next expression walked is the base of a field or index (`cache` of `cache.kvs`):
    /// a place read, not the parameter used as a value.
    as_place_base: bool,
    /// The subjects of an element at a parameter's index read so far (see
    /// [`Walker::absent_sizes`]).
    read_indexed: BTreeSet<String>,
    /// The helpers being followed, innermost last (none is followed into twice).
    inlined: Vec<FnId>,
    /// The sizes of `self`'s integer fields (`n_head` → `cfg.num_attention_heads`): one fixed
    /// value for the whole body, where `self` cannot change (see [`Walker::bind_field_dims`]).
    field_dims: BTreeMap<String, Dim>,
    /// The tables of `self`'s `Embedding`s that every construction in sight builds with
    /// `embedding(V, E, vb)` (`self.wte.embeddings()`): their rows are the table's width,
    /// whether the constructor's sizes or a clause's state it.
    built_tables: BTreeSet<String>,
    /// The names of the `let`s whose unknown size became a size of its own (`{seq_len}` from
    /// `let (_, seq_len, _) = x.dims3()?`): each name at most once in a walk.
    fresh_sizes: BTreeSet<String>,
    /// The sizes branches gave differently, named so far (`?1`, `?2`, ..: see [`Joiner`]).
    joined: usize,
    /// What each of those names stands for: the first branch's size and the second's.
    join_sizes: BTreeMap<String, (Dim, Dim)>,
    /// The names of [`Walker::join_sizes`] an `Activation` of an unknown variant gave (its
    /// input's last dim, or half of it under `Swiglu`), not two branches.
    activation_joins: BTreeSet<String>,
    /// Set while a loop's body is walked to see whether it keeps what it finds: a pass's
    /// names would differ from the next one's.
    loop_passes: usize,
    /// The sizes 0 where an `Option` field is `None` (see [`Walker::absent_sizes`]), each
    /// with the field (`P` → `self.kv_cache`).
    absent_names: BTreeMap<String, String>,
    /// The weights the constructors in sight gave `self`'s layers (`self.conv1.weight()` of
    /// `conv2d(in_channels, ..)`), by subject, as [`Walker::bind_built`] read them.
    built_weights: Vec<(String, Vec<Dim>)>,
    /// The candle-nn layers the function's own top-level `let`s build (`let conv =
    /// conv2d(cin, cout, 3, config, vb.pp("conv"))?;`), by the `let`'s address, as
    /// [`crate::construct::let_layers`] reads them.
    let_layers: BTreeMap<usize, FieldFact>,
    /// How many local layers have a place of their own so far (see [`LOCAL_LAYER`]).
    local_layers: usize,
    /// The function walked, as the index holds it (the macro walks its own tokens).
    own_id: Option<FnId>,
    /// Set by [`Walker::loop_invariant`] where a loop's first run certainly leaves.
    first_run_leaves: bool,
    /// Set by [`Walker::loop_element`] for a `for` over a range of integers (`0..n`): its
    /// start and its end (one past the last) where written.
    loop_range: Option<(Dim, Option<Dim>)>,
    /// Set where a test of a shape the walk cannot decide has a branch that leaves the function
    /// (`if xs.rank() == 2 { return xs.t(); }`): what follows runs only for shapes that test
    /// rules out, which the walk cannot tell apart (a `dims2()?` after it takes `xs` for rank
    /// 2), so nothing after it is reported in (see [`Walker::block`]). Also after a `loop` that
    /// only a macro out of sight may leave.
    left_on_a_shape: bool,
    /// Locals whose value may follow from a tensor's shape (`let r = rank_of(x);`, `vec |=
    /// x.rank() == 1;`, assigned under an undecided test of a shape): a test of one is a test
    /// of a shape (see [`Walker::reads_shape`]). Never taken back: a name marked once stays so.
    shape_derived: BTreeSet<String>,
    /// Locals a shape gave a value the walk knows (`let mut is_mat = x.rank() == 2;`): a test
    /// of one is a test of a shape once the walk no longer knows its value (`flip(&mut
    /// is_mat)`, set in a loop).
    shape_initialized: BTreeSet<String>,
    /// How many undecided tests of a shape the walk is inside the branches of: a local
    /// assigned there is in [`Walker::shape_derived`].
    shape_tests: usize,
    /// How many statements after one that never completes the walk is in (see
    /// [`Walker::live_break`]).
    dead: usize,
    /// Set where a `break` of the innermost loop, or a labelled one, is reached in code that
    /// may run: a `loop` without one never completes.
    live_break: bool,
    /// As [`Walker::live_break`], for a `continue`.
    live_continue: bool,
    /// How many `Func`s deep this walk is (see [`FUNC_DEPTH`]).
    func_depth: usize,
}

impl<'a> Walker<'a> {
    /// A walk of `f`'s body, its contract's constants and facts applied, its generic
    /// parameters hiding the module's names; its parameters are not bound yet.
    fn new(index: &'a Index, source: &'a dyn SourceText, f: Function<'a>) -> Walker<'a> {
        let generics: Vec<String> = f
            .impl_generics
            .iter()
            .cloned()
            .chain(crate::index::generic_names(&f.sig.generics))
            .collect();
        // A parameter of a type that is or may be an `Option` (`&Option<Tensor>`, an alias):
        // the guard skips its clauses where it holds `None`.
        let may_be_option = |ty: &syn::Type| {
            let text = ty.to_token_stream().to_string();
            let mut inner = ty;
            while let syn::Type::Reference(r) = inner {
                inner = &r.elem;
            }
            text.split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|word| word == "Option")
                || matches!(inner, syn::Type::Path(p) if p.qself.is_none()
                && matches!(
                    index.resolve(f.module, &path_segments(&p.path)),
                    Resolved::Type(key) if index.is_alias(&key)
                ))
        };
        let mut contract = with_facts(&surely_bound(
            &with_constants(index, f.contract, f.module, &generics),
            f.sig,
            &may_be_option,
        ));
        let facts = Facts::new(&contract.relations);
        for clause in &mut contract.clauses {
            clause.spec = facts.simplify_type(&clause.spec);
        }
        Walker {
            index,
            source,
            f,
            env: Env::for_function(f.display.to_string(), &contract),
            contract,
            facts,
            scope: vec![BTreeMap::new()],
            local_paths: vec![generics.into_iter().map(|name| (name, None)).collect()],
            subjects: BTreeMap::new(),
            closures: 0,
            layer_bodies: 0,
            next_is_layer_body: false,
            findings: Vec::new(),
            fix_result: false,
            hints: Vec::new(),
            failures: 0,
            failed_call: None,
            failure_never: false,
            value_after_failure: None,
            failed_value: None,
            in_let: false,
            let_op: String::new(),
            let_why: None,
            why_of: BTreeMap::new(),
            why_wanted: false,
            whys_off: false,
            unchecked: Vec::new(),
            taken: false,
            helper_failure: None,
            func_failure: None,
            quiet: 0,
            body_macros: body_macros(f.block),
            returned: None,
            self_mut: false,
            mut_roots: BTreeSet::new(),
            owned_roots: BTreeSet::new(),
            shared_args: Vec::new(),
            as_place_base: false,
            read_indexed: BTreeSet::new(),
            inlined: Vec::new(),
            fresh_sizes: BTreeSet::new(),
            joined: 0,
            join_sizes: BTreeMap::new(),
            activation_joins: BTreeSet::new(),
            loop_passes: 0,
            absent_names: BTreeMap::new(),
            built_weights: Vec::new(),
            let_layers: BTreeMap::new(),
            local_layers: 0,
            own_id: None,
            first_run_leaves: false,
            loop_range: None,
            left_on_a_shape: false,
            shape_derived: BTreeSet::new(),
            shape_initialized: BTreeSet::new(),
            shape_tests: 0,
            dead: 0,
            live_break: false,
            live_continue: false,
            func_depth: 0,
            field_dims: BTreeMap::new(),
            built_tables: BTreeSet::new(),
        }
    }

    /// What the helper `id` (a function without a contract, or without a `return` clause)
    /// gives for these arguments: its body walked with them, nothing in it reported. Its
    /// parameters that are candle tensors (by reference or by value, never `&mut`) or lists
    /// of them (`&[Tensor]`, `Vec<Tensor>`) take the arguments' types, and its sizes the
    /// arguments' sizes; `None` where it is not followed (too deep, recursive,
    /// `async`, under `cfg`, under an attribute macro).
    /// With the helper's first certain failure, where it names one of its tensor parameters
    /// (see [`Walker::report_helper_failure`]).
    fn inline(
        &self,
        id: FnId,
        args: &[Value],
        on_self: bool,
        place: Option<&str>,
    ) -> Option<(Value, Option<(Mismatch, String)>)> {
        self.inline_any(id, args, on_self, place, false)
    }

    /// [`Walker::inline`] of one of a function's twins under `cfg` (see
    /// [`Index::twin_fns`]): one of them is compiled in, so each is followed. Its value, and
    /// its certain failure where it has one.
    fn inline_twin(&self, id: FnId, args: &[Value]) -> Option<(Value, Option<(Mismatch, String)>)> {
        self.inline_any(id, args, false, None, true)
    }

    fn inline_any(
        &self,
        id: FnId,
        args: &[Value],
        on_self: bool,
        place: Option<&str>,
        twin: bool,
    ) -> Option<(Value, Option<(Mismatch, String)>)> {
        let callee = &self.index.fns[id];
        if self.inlined.len() >= INLINE_DEPTH
            || self.inlined.contains(&id)
            || callee.sig.asyncness.is_some()
            || (callee.conditional && !twin)
            || !callee.attrs.iter().all(crate::index::is_inert_attribute)
            || self.index.is_wrapped(id)
            || attributed_parameters(callee.sig)
        {
            return None;
        }
        // A body of the macro's cached file is proc-macro2's own tokens: a token stream built
        // from them inside the macro must be one of those too.
        let _file_tokens = crate::index::FileTokens::enter(self.index);
        let mut nested = Walker::new(self.index, self.source, Function::of(callee, &NO_CLAUSES));
        // A helper's `let`s are not shown: no reasons are kept for them.
        nested.whys_off = true;
        // The helper's sizes are the caller's: the caller's facts hold in it.
        nested.facts = self.facts.clone();
        nested.quiet = 1;
        nested.inlined = self.inlined.iter().copied().chain([id]).collect();
        nested.bind_params();
        nested.read_let_layers();
        // `self.transpose_for_scores(&q)`: a `&self` method of this very value reads the sizes
        // its fields hold here.
        if on_self
            && callee.owner.as_deref() == self.f.owner
            && receiver_access(callee.sig) == Some(Access::Ref)
        {
            nested.field_dims = self
                .field_dims
                .iter()
                .filter(|(name, _)| {
                    !self.self_mut || self.subjects.contains_key(&size_subject(name))
                })
                .map(|(name, dim)| (name.clone(), dim.clone()))
                .collect();
            // And what the caller's contract states of them, where it holds at the call
            // (`num_attention_heads = H` is `H` in llama's `self.repeat_kv(k)` too).
            for (subject, held) in &self.subjects {
                if subject.starts_with("self.") {
                    nested.subjects.insert(subject.clone(), held.clone());
                }
            }
        }
        // `self.patch_embeddings.forward(xs)`: a `&self` method of a struct held in a field
        // reads what the caller knows of that field's layers (`self.projection.weight()` is
        // the caller's `self.patch_embeddings.projection.weight()`) and sizes.
        if let Some(place) = place
            && receiver_access(callee.sig) == Some(Access::Ref)
        {
            let prefix = format!("{place}.");
            for (subject, held) in &self.subjects {
                if let Some(rest) = subject.strip_prefix(&prefix) {
                    nested.subjects.insert(format!("self.{rest}"), held.clone());
                }
            }
            let field = place.trim_start_matches("self.");
            for (name, dim) in &self.field_dims {
                if let Some(inner) = name.strip_prefix(field).and_then(|r| r.strip_prefix('.'))
                    && !inner.contains('.')
                    && (!self.self_mut || self.subjects.contains_key(&size_subject(name)))
                {
                    nested.field_dims.insert(inner.to_string(), dim.clone());
                }
            }
        }
        let params = callee.sig.inputs.iter().filter_map(|input| match input {
            syn::FnArg::Typed(typed) => Some(typed),
            syn::FnArg::Receiver(_) => None,
        });
        for (typed, arg) in params.zip(args) {
            let syn::Pat::Ident(ident) = &*typed.pat else {
                continue;
            };
            // A tensor by reference or by value (moved into the helper, or a clone), and a
            // list of them (`&[Tensor]`, `Vec<Tensor>`); never behind `&mut`, which the
            // helper may replace.
            let value = match (nested.kind(&typed.ty, false), arg) {
                (Kind::Tensor, Value::Tensor(t)) if !nested.may_be_mut_ref(&typed.ty) => {
                    Value::Tensor(t.clone())
                }
                (Kind::Int, Value::Int(d)) => Value::Int(d.clone()),
                (_, list @ (Value::Tensors(_) | Value::TensorsEach(..)))
                    if nested.is_tensor_list(&typed.ty) =>
                {
                    list.clone()
                }
                _ => continue,
            };
            nested.bind(&name_of(&ident.ident), value, None);
        }
        // Its tail is what it returns: a certain failure there is the helper's.
        nested.taken = true;
        let tail = nested.block(callee.block);
        let value = match (tail, nested.returned) {
            (Value::Never, Some(returned)) => returned,
            (tail, Some(returned)) => tail.join(&returned),
            (tail, None) => tail,
        };
        Some((value, nested.helper_failure))
    }

    fn module(&self) -> ModId {
        self.f.module
    }

    /// The text of an expression, as messages quote it.
    fn text(&self, tokens: &impl ToTokens) -> String {
        self.source.text(self.f.file, &tokens.to_token_stream())
    }

    fn bind_params(&mut self) {
        let sig = self.f.sig;
        let mut immutable_roots = BTreeSet::new();
        // `cache: &mut Cache`, whose optional clauses the walk may hold (see `mut_roots`).
        let mut mut_ref_roots: BTreeSet<String> = BTreeSet::new();
        // Roots reached through a shared reference (`&self`, `cfg: &Config`), or `&mut self`
        // followed path by path.
        let mut shared_roots: BTreeSet<String> = BTreeSet::new();
        for input in &sig.inputs {
            match input {
                syn::FnArg::Receiver(receiver) => {
                    // `self: Rc<Self>` and the like hold it another way.
                    let access = match (&receiver.reference, receiver.mutability) {
                        _ if receiver.colon_token.is_some() => None,
                        (Some(_), Some(_)) => Some(Access::Mut),
                        (Some(_), None) => Some(Access::Ref),
                        (None, _) => Some(Access::Owned),
                    };
                    let value = match (self.f.owner, access) {
                        (Some(key), Some(access)) => Value::Instance(key.to_string(), access),
                        _ => Value::Other,
                    };
                    if access == Some(Access::Owned) {
                        self.owned_roots.insert("self".to_string());
                    }
                    self.bind("self", value, None);
                    if access == Some(Access::Ref) {
                        shared_roots.insert("self".to_string());
                    }
                    if receiver.mutability.is_none() && !self.may_be_mut_ref(&receiver.ty) {
                        immutable_roots.insert("self".to_string());
                    } else if access == Some(Access::Mut)
                        && self_only_in_paths(self.f.block.to_token_stream())
                    {
                        // `&mut self`, never passed on whole: followed, path by path, until
                        // something may change it.
                        self.self_mut = true;
                        immutable_roots.insert("self".to_string());
                        shared_roots.insert("self".to_string());
                    }
                    let fixed = matches!(access, Some(Access::Ref | Access::Owned))
                        && receiver.mutability.is_none();
                    if (fixed || self.self_mut)
                        && self.inlined.is_empty()
                        && let Some(key) = self.f.owner
                    {
                        self.bind_constructed_fields(key, fixed);
                    }
                }
                syn::FnArg::Typed(typed) => {
                    let syn::Pat::Ident(ident) = &*typed.pat else {
                        self.bind_unknown(&typed.pat);
                        continue;
                    };
                    let name = name_of(&ident.ident);
                    if !matches!(strip_type_parens(&typed.ty), syn::Type::Reference(_)) {
                        self.owned_roots.insert(name.clone());
                    }
                    let clause = self.contract.clause(&name).map(|c| c.spec.clone());
                    let origin = clause.is_some().then(|| Origin::Clause(name.clone()));
                    let value = match self.kind(&typed.ty, clause.is_some()) {
                        Kind::Tensor => match clause {
                            Some(spec) => Value::Tensor(spec),
                            // By value, a trait method taking `self` would win over candle's
                            // `&self` one of the same name: only references are certain.
                            None if matches!(&*typed.ty, syn::Type::Reference(_)) => {
                                Value::tensor_unknown()
                            }
                            None => Value::Other,
                        },
                        // `mask: Option<&Tensor>`: its clause holds where it is `Some`.
                        Kind::Optional(inner) if matches!(*inner, Kind::Tensor) => {
                            Value::Optional(Box::new(match clause {
                                Some(spec) => Value::Tensor(spec),
                                None => Value::tensor_unknown(),
                            }))
                        }
                        // `others: &[Tensor]`: each element a tensor, of the type its
                        // sequence clause states (`[f32[B, _, _, _]; N]`: the guard checks
                        // each) where nothing in the body may replace one (no `mut`).
                        _ if self.is_tensor_list(&typed.ty) => Value::TensorsEach(
                            match self.contract.sequence(&name) {
                                Some(clause) if ident.mutability.is_none() => clause.spec.clone(),
                                _ => TensorType::unknown(),
                            },
                            Dim::Unknown,
                        ),
                        // `past_len: usize`: one fixed size for the whole body, the value a
                        // clause names `{past_len}` (only in the function's own walk: a helper
                        // followed at its call takes the caller's argument or nothing).
                        Kind::Int
                            if crate::construct::is_usize(&typed.ty)
                                && ident.mutability.is_none()
                                && ident.by_ref.is_none()
                                && self.inlined.is_empty() =>
                        {
                            Value::Int(Dim::braced(&name))
                        }
                        kind => kind.unknown_value(),
                    };
                    self.bind(&name, value, origin);
                    if matches!(&*typed.ty, syn::Type::Reference(r) if r.mutability.is_none()) {
                        shared_roots.insert(name.clone());
                    }
                    // `p: (&mut Cache, usize)`, `cache: Box<&mut Cache>`: held by value, but
                    // `halve(p.0)` reborrows what it reaches with no `&mut` written.
                    let params: BTreeSet<String> = crate::index::generic_names(&sig.generics)
                        .into_iter()
                        .collect();
                    let lends = !matches!(strip_type_parens(&typed.ty), syn::Type::Reference(_))
                        && self.type_lends_mut(self.module(), &typed.ty, &params);
                    if ident.mutability.is_none() && !self.may_be_mut_ref(&typed.ty) && !lends {
                        immutable_roots.insert(name);
                    } else if ident.mutability.is_none()
                        && ident.by_ref.is_none()
                        && ident.subpat.is_none()
                        && self.inlined.is_empty()
                        && matches!(&*typed.ty, syn::Type::Reference(r)
                            if r.mutability.is_some()
                                && matches!(self.kind(&r.elem, false), Kind::Instance(..)))
                    {
                        mut_ref_roots.insert(name);
                    }
                }
            }
        }
        // A field's sequence clause (mamba's `conv1d_weights: [f32[DI]; D_CONV]`) too: each
        // element of that type, as the guard checks each (`self.conv1d_weights[d_c]`).
        let tensors = self.contract.clauses.iter().map(|clause| (clause, false));
        let lists = self.contract.sequences.iter().map(|clause| (clause, true));
        for (clause, list) in tensors.chain(lists) {
            let subject: String = clause.subject.split_whitespace().collect();
            let root = subject.split(['.', '(', '[', '?']).next().unwrap_or("");
            let plain = match list {
                false => !subject.contains(['?', '[', '{']) || is_optional_layer_weight(&subject),
                true => !subject.contains(['?', '[', '{', '(']),
            };
            if subject != root
                && plain
                && immutable_roots.contains(root)
                && !through_interior_mutability(&subject)
                && self.stable_path(&subject)
            {
                let origin = Some(Origin::Clause(subject.clone()));
                let value = match list {
                    true => Value::TensorsEach(clause.spec.clone(), Dim::Unknown),
                    false => Value::Tensor(clause.spec.clone()),
                };
                self.subjects.insert(subject, (value, origin));
            }
        }
        self.bind_optional_subjects(&immutable_roots, &mut_ref_roots);
        // `self.n_head = H`: the field's value is `H` while `self` cannot change it; and
        // `{self.conv.config().padding} == 1`: the number, only behind a shared reference
        // (`&self`, `cfg: &Config`), as an owned value may hold a `&mut` (`ctx: Ctx<'_>` with
        // `cfg: &'a mut Config`) the body writes through.
        let named = self
            .contract
            .fields
            .iter()
            .map(|(path, dim)| (path, with_facts_dim(&self.contract, dim), false));
        let numbers = self
            .contract
            .field_values
            .iter()
            .map(|(path, n)| (path, Value::Int(Dim::lit(*n)), true));
        // `self.multi_query = true`: the same, for a `bool` field (stated both ways, a
        // contract the macro rejects, it decides nothing).
        let flags = self
            .contract
            .field_flags
            .iter()
            .filter(|(path, value)| {
                !self
                    .contract
                    .field_flags
                    .iter()
                    .any(|(other, v)| other == path && v != value)
            })
            .map(|(path, value)| (path, Value::Bool(*value), true));
        // `self.act_fn != Swiglu`: the activation keeps its input's shape, as one every
        // constructor builds as `Activation::Relu` does (see [`Walker::bind_built`]).
        // Each as the path the guard read, the subject it is held under, and its value.
        let activations = self
            .contract
            .not_swiglu
            .iter()
            .map(|path| (path, shape_keeping(path), Value::Other, true));
        let held: Vec<(&String, String, Value, bool)> = named
            .map(|(path, dim, shared_only)| (path, Value::Int(dim), shared_only))
            .chain(numbers)
            .chain(flags)
            .map(|(path, value, shared_only)| (path, path.clone(), value, shared_only))
            .chain(activations)
            .collect();
        for (path, subject, value, shared_only) in held {
            let root = path.split('.').next().unwrap_or("");
            // `{self.k()} == 1` holds when the guard reads it; a method of the crate's may
            // give another value in the body.
            if (!shared_only || shared_roots.contains(root))
                && immutable_roots.contains(root)
                && !through_interior_mutability(path)
                && self.stable_path(path)
            {
                let origin = Some(Origin::Clause(path.clone()));
                self.subjects.insert(subject, (value, origin));
            }
        }
        self.name_built_sizes();
    }

    /// Where a clause states the weight of a layer a constructor in sight also built
    /// (`conv1: Conv2d[CIN -> COUT, 3]` and `conv2d(in_channels, out_channels, 3, ..)`), both
    /// hold on entry (the guard checked the one, the construction gave the other, and nothing
    /// changed the field since), so each size the construction named (`new(in_channels)`,
    /// `cfg.hidden_size`) is the clause's dim (`CIN`) in every other place that construction
    /// gave it: `norm1` built by `group_norm(32, in_channels, ..)` has `CIN` channels. A size
    /// two clauses give two different dims stays as it was.
    fn name_built_sizes(&mut self) {
        let mut pairs: Vec<(Dim, Dim)> = Vec::new();
        for (subject, built) in &self.built_weights {
            let Some((Value::Tensor(stated), Some(Origin::Clause(_)))) = self.subjects.get(subject)
            else {
                continue;
            };
            let Some(stated) = stated.shape.dims() else {
                continue;
            };
            if stated.len() != built.len() {
                continue;
            }
            pairs.extend(built.iter().cloned().zip(stated.iter().cloned()));
        }
        // `num_heads = H` of a struct contract on a field its constructions gave
        // `cfg.num_attention_heads`: that size is `H` too.
        for (path, _) in &self.contract.fields {
            let Some(field) = path.strip_prefix("self.") else {
                continue;
            };
            if let (Some((Value::Int(stated), Some(Origin::Clause(_)))), Some(built)) =
                (self.subjects.get(path), self.field_dims.get(field))
            {
                pairs.push((built.clone(), stated.clone()));
            }
        }
        let mut named: BTreeMap<String, Option<Dim>> = BTreeMap::new();
        for (built, stated) in &pairs {
            let Some(name) = built.as_symbol() else {
                continue;
            };
            // Only a construction's own names: a config's field, a parameter or a `let`.
            let constructed = (name.contains('.') && !name.starts_with("self."))
                || crate::construct::names_a_constructor_value(built);
            if stated.is_unknown() || !constructed {
                continue;
            }
            named
                .entry(name.to_string())
                .and_modify(|dim| {
                    if dim.as_ref() != Some(stated) {
                        *dim = None;
                    }
                })
                .or_insert_with(|| Some(stated.clone()));
        }
        let named: BTreeMap<String, Dim> = named
            .into_iter()
            .filter_map(|(name, dim)| Some((name, dim?)))
            .collect();
        if named.is_empty() {
            return;
        }
        let mut rename = |dim: &Dim| {
            dim.substitute(&mut |factor| match factor {
                Factor::Symbol(name) => named
                    .get(name)
                    .cloned()
                    .or_else(|| Some(Dim::symbol(name.clone()))),
                Factor::Braced(text) => Some(Dim::braced(text)),
                // Divisions and remainders are taken apart by `substitute` itself.
                _ => None,
            })
        };
        // What only the constructions gave (no clause's): their weights and geometries.
        for (value, origin) in self.subjects.values_mut() {
            if origin.is_some() {
                continue;
            }
            *value = value.map_dims(&mut rename);
        }
        for dim in self.field_dims.values_mut() {
            *dim = rename(dim);
        }
    }

    /// `self.kv_cache?.0: f32[B, KVH, P, D]` on a field `kv_cache: Option<(Tensor, Tensor)>`
    /// (or `self.cache?: ..` on an `Option<Tensor>`): where the field is `Some`, the guard
    /// checked what it holds, so a `Some((prev_k, prev_v))` of `&self.kv_cache` binds those
    /// types. Held as the field's subject, forgotten where the body may change the field.
    ///
    /// An element at an integer parameter's index (`cache.kvs[block_idx]?.0` on a field
    /// `kvs: Vec<Option<(Tensor, Tensor)>>`) is held the same way, for that index as the body
    /// writes it; and a `&mut` parameter's paths (`cache: &mut Cache`) are held until anything
    /// may change the parameter (see [`Walker::guard_mut_roots`]).
    fn bind_optional_subjects(
        &mut self,
        immutable_roots: &BTreeSet<String>,
        mut_ref_roots: &BTreeSet<String>,
    ) {
        let mut held: BTreeMap<String, Value> = BTreeMap::new();
        for clause in &self.contract.clauses {
            let subject: String = clause.subject.split_whitespace().collect();
            let Some((base, rest)) = subject.split_once('?') else {
                continue;
            };
            let part = match rest.strip_prefix('.') {
                None if rest.is_empty() => None,
                Some(index) if !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) => {
                    match index.parse::<usize>() {
                        Ok(index) => Some(index),
                        Err(_) => continue,
                    }
                }
                _ => continue,
            };
            let (list, at) = match base.strip_suffix(']').and_then(|b| b.rsplit_once('[')) {
                Some((list, at)) if self.is_index_param(at) => (list, Some(at)),
                _ => (base, None),
            };
            let root = list.split('.').next().unwrap_or("");
            let mutable = mut_ref_roots.contains(root);
            // `self.kv_cache.v()?` of a `ConcatKvCache` field.
            let cache_half = ["k()", "v()"]
                .iter()
                .find_map(|half| list.strip_suffix(half)?.strip_suffix('.'))
                .filter(|cache| {
                    !cache.contains(['(', '[', '{', '?'])
                        && matches!(self.path_value_of(cache),
                            Some(Value::External(path)) if path == CONCAT_KV_CACHE)
                });
            if list == root
                || (list.contains(['(', '[', '{', '?']) && cache_half.is_none())
                || !(immutable_roots.contains(root) || mutable)
                || through_interior_mutability(list)
                || !self.stable_path(list)
                || (mutable && !self.owned_fields(list))
            {
                continue;
            }
            let value = match at {
                None if cache_half.is_some() => {
                    Some(Value::Optional(Box::new(Value::tensor_unknown())))
                }
                None => held.get(base).cloned().or_else(|| self.path_value_of(list)),
                Some(_) => held
                    .get(base)
                    .cloned()
                    .or_else(|| self.element_value_of(list)),
            };
            let Some(value) = value else {
                continue;
            };
            if mutable {
                self.mut_roots.insert(root.to_string());
            }
            let refined = match (value, part) {
                (Value::Optional(inner), None) if matches!(*inner, Value::Tensor(_)) => {
                    Value::Optional(Box::new(Value::Tensor(clause.spec.clone())))
                }
                (Value::Optional(inner), Some(index)) => match *inner {
                    Value::Tuple(mut items)
                        if matches!(items.get(index), Some(Value::Tensor(_))) =>
                    {
                        items[index] = Value::Tensor(clause.spec.clone());
                        Value::Optional(Box::new(Value::Tuple(items)))
                    }
                    _ => continue,
                },
                _ => continue,
            };
            held.insert(base.to_string(), refined);
        }
        for (base, value) in held {
            let origin = Some(Origin::Clause(format!("{base}?")));
            self.subjects.insert(base, (value, origin));
        }
    }

    /// What a path of fields from a parameter holds by its type (`self.kv_cache` is an
    /// `Option` of two tensors), before any clause.
    fn path_value_of(&self, text: &str) -> Option<Value> {
        let mut steps = text.split('.');
        let mut value = self.lookup(steps.next()?)?.value.clone();
        for step in steps {
            value = match value {
                Value::Instance(key, _) => self.field_value(&key, step),
                _ => return None,
            };
        }
        Some(value)
    }

    /// Whether the field `name` of the struct `key` may hold a way to change what it reaches
    /// while the struct itself cannot change: a `&mut` or a raw pointer anywhere in its type, a
    /// type alias (which may be one) or a type parameter (which may be given one).
    fn field_lends_mut(&self, key: &str, name: &str) -> bool {
        let Some((module, ty)) = self.index.field(key, name) else {
            return false;
        };
        self.names_type_parameter(key, ty) || self.type_lends_mut(module, ty, &BTreeSet::new())
    }

    /// Whether a type written in `module` may hold a way to change what it reaches while a
    /// value of it cannot change: a `&mut` or a raw pointer anywhere in it (`(&mut Cache,
    /// usize)`, `Box<&mut Cache>`), a type alias, or one of `params` (type parameters).
    fn type_lends_mut(&self, module: ModId, ty: &syn::Type, params: &BTreeSet<String>) -> bool {
        struct Lends<'w, 'i> {
            walker: &'w Walker<'i>,
            module: ModId,
            params: &'w BTreeSet<String>,
            found: bool,
        }
        impl<'ast> Visit<'ast> for Lends<'_, '_> {
            fn visit_type_reference(&mut self, r: &'ast syn::TypeReference) {
                self.found |= r.mutability.is_some();
                syn::visit::visit_type_reference(self, r);
            }
            fn visit_type_ptr(&mut self, _: &'ast syn::TypePtr) {
                self.found = true;
            }
            fn visit_type_path(&mut self, p: &'ast syn::TypePath) {
                let segments = path_segments(&p.path);
                if let [only] = segments.as_slice()
                    && self.params.contains(only)
                {
                    self.found = true;
                }
                if let Resolved::Type(key) = self.walker.index.resolve(self.module, &segments)
                    && self.walker.index.is_alias(&key)
                {
                    self.found = true;
                }
                syn::visit::visit_type_path(self, p);
            }
            // `impl DerefMut<Target = Cache>`: any type at all.
            fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
                self.found = true;
            }
        }
        let mut lends = Lends {
            walker: self,
            module,
            params,
            found: false,
        };
        lends.visit_type(ty);
        lends.found
    }

    /// What each element of a list a path of fields names holds by its type
    /// (`cache.kvs: Vec<Option<(Tensor, Tensor)>>` holds an `Option` of two tensors).
    fn element_value_of(&self, list: &str) -> Option<Value> {
        let (owner, field) = list.rsplit_once('.')?;
        let Value::Instance(key, _) = self.path_value_of(owner)? else {
            return None;
        };
        let (module, ty) = self.index.field(&key, field)?;
        if self.names_type_parameter(&key, ty) {
            return None;
        }
        let element = self.list_element(module, ty)?;
        Some(
            self.kind_at(element, false, module, Some(&key), false)
                .unknown_value(),
        )
    }

    /// Whether each field on a path from a parameter is held by value (no reference, which
    /// a `&mut` parameter could lend on and have written through elsewhere).
    fn owned_fields(&self, path: &str) -> bool {
        let mut steps = path.split('.');
        let Some(mut value) = steps
            .next()
            .and_then(|root| self.lookup(root))
            .map(|b| b.value.clone())
        else {
            return false;
        };
        for step in steps {
            let Value::Instance(key, _) = &value else {
                return false;
            };
            match self.index.field(key, step) {
                Some((_, ty)) if !matches!(ty, syn::Type::Reference(_) | syn::Type::Ptr(_)) => {}
                _ => return false,
            }
            value = self.field_value(key, step);
        }
        true
    }

    /// Whether `name` is an integer parameter the body cannot change (`block_idx: usize`),
    /// which a clause's path may index with.
    fn is_index_param(&self, name: &str) -> bool {
        self.is_param(name)
            && self
                .lookup(name)
                .is_some_and(|binding| binding.value == Value::Int(Dim::braced(name)))
    }

    /// `cache.kvs[block_idx]` of a clause's path indexed by that parameter: the subject's
    /// text, where the walk holds what the clause says the element holds.
    fn indexed_subject(&self, index: &syn::ExprIndex) -> Option<(String, Value)> {
        let list = subject_text(unparen(&index.expr))?;
        let syn::Expr::Path(at) = unparen(&index.index) else {
            return None;
        };
        let at = name_of(at.path.get_ident().filter(|_| at.qself.is_none())?);
        if !self.is_index_param(&at) {
            return None;
        }
        let text = format!("{list}[{at}]");
        let value = self.subject_value_of(&text)?;
        Some((text, value))
    }

    /// Forgets what the walk holds of a `&mut` parameter's paths (see `mut_roots`) before
    /// what may change the parameter: a method called on a place from it (a candle tensor's
    /// own methods aside), the parameter itself used as a value (moved or reborrowed; as a
    /// `&T` argument it is only read), or a macro, closure or loop that names it.
    /// Assignments and `&mut` borrows are [`Walker::forget`]'s already.
    fn guard_mut_roots(&mut self, expr: &syn::Expr) {
        let mut touched = Vec::new();
        for root in &self.mut_roots {
            let names = |tokens: TokenStream| mentions_ident(tokens, root);
            let changes = match expr {
                syn::Expr::MethodCall(m) => {
                    let on_place = place_root(&m.receiver).as_deref() == Some(root.as_str());
                    on_place && !self.reads_tensor_field(&m.receiver, &name_of(&m.method))
                }
                syn::Expr::Path(p) => {
                    p.qself.is_none()
                        && p.path.get_ident().is_some_and(|i| name_of(i) == *root)
                        && self.is_param(root)
                        && !self.as_place_base
                        && !self.shared_args.contains(&(expr as *const syn::Expr))
                }
                syn::Expr::Closure(_)
                | syn::Expr::ForLoop(_)
                | syn::Expr::While(_)
                | syn::Expr::Loop(_)
                | syn::Expr::Async(_) => names(expr.to_token_stream()),
                _ => false,
            };
            if changes {
                touched.push(root.clone());
            }
        }
        if !touched.is_empty() {
            self.forget_in(|c| c.kept.extend(touched));
        }
    }

    /// Whether `receiver` is a path of fields from a parameter to a candle `Tensor` (by the
    /// field's type), and `method` one of candle's, which take `&self`.
    fn reads_tensor_field(&self, receiver: &syn::Expr, method: &str) -> bool {
        let Some(text) = subject_text(unparen(receiver)).filter(|t| !t.contains('(')) else {
            return false;
        };
        !self.may_be_crates_tensor_method(method)
            && (has_method_rule(method) || READ_ONLY.contains(&method))
            && text.contains('.')
            && matches!(self.path_value_of(&text), Some(Value::Tensor(_)))
    }

    /// `self.kvs` or the parameter in a call's arguments, where the callee (a method of the
    /// crate's, the only one of its name on the receiver's type) takes a `&T` there.
    fn mark_shared_args(&mut self, call: &syn::ExprMethodCall) {
        if self.mut_roots.is_empty() {
            return;
        }
        let Value::Instance(key, _) = (match unparen(&call.receiver) {
            syn::Expr::Path(p) if p.path.is_ident("self") => self
                .lookup("self")
                .map_or(Value::Other, |binding| binding.value.clone()),
            _ => return,
        }) else {
            return;
        };
        let [id] = self.index.methods(&key, &name_of(&call.method)) else {
            return;
        };
        let inputs: Vec<&syn::FnArg> = self.index.fns[*id].sig.inputs.iter().collect();
        let Some((syn::FnArg::Receiver(_), params)) = inputs.split_first() else {
            return;
        };
        for (arg, param) in call.args.iter().zip(params) {
            let shared = matches!(param, syn::FnArg::Typed(t)
                if matches!(&*t.ty, syn::Type::Reference(r) if r.mutability.is_none()));
            let whole = matches!(unparen(arg), syn::Expr::Path(p)
                if p.qself.is_none()
                    && p.path.get_ident().is_some_and(|i| self.mut_roots.contains(&name_of(i))));
            if shared && whole {
                self.shared_args.push(arg as *const syn::Expr);
            }
        }
    }

    /// The function walked, as the index holds it: the one of its body (the CLI's), or else
    /// (the macro walks its own tokens) the one function of that file, module and name with
    /// as many statements.
    fn find_own_id(&self) -> Option<FnId> {
        let fns = &self.index.fns;
        if let Some(id) = fns.iter().position(|f| std::ptr::eq(f.block, self.f.block)) {
            return Some(id);
        }
        let mut ids = (0..fns.len()).filter(|&id| {
            let def = &fns[id];
            def.file == self.f.file
                && def.module == self.f.module
                && def.display == self.f.display
                && def.block.stmts.len() == self.f.block.stmts.len()
        });
        match (ids.next(), ids.next()) {
            (Some(id), None) => Some(id),
            _ => None,
        }
    }

    /// Reads the layers the function's own top-level `let`s build, from the index's copy of
    /// the function (see [`Walker::find_own_id`]).
    fn read_let_layers(&mut self) {
        self.own_id = self.find_own_id();
        let Some(def) = self.own_id.map(|id| &self.index.fns[id]) else {
            return;
        };
        for (at, fact) in crate::construct::let_layers(self.index, def) {
            if let Some(syn::Stmt::Local(local)) = self.f.block.stmts.get(at) {
                self.let_layers
                    .insert(local as *const syn::Local as usize, fact);
            }
        }
    }

    /// `let conv = conv2d(cin, cout, 3, config, vb.pp("conv"))?;` at the top of the function's
    /// own body: the name holds the layer its reading gives (weight and geometry), under a
    /// place of its own that no expression's text can name and nothing else reaches.
    fn bind_let_layer(&mut self, local: &syn::Local) {
        let Some(FieldFact::Layer(layer, dims, geometry)) = self
            .let_layers
            .get(&(local as *const syn::Local as usize))
            .cloned()
        else {
            return;
        };
        // Each `{cin}` the size the walk holds for the parameter here (in a helper followed at
        // its call, the caller's argument); a config's field (`cfg.hidden_size`) only in the
        // function's own walk, where the name is its own parameter's.
        let own = self.inlined.is_empty();
        // The parameter itself, not a `let` that shadows it (`let c = c / 2;`).
        let params = self.scope.first();
        let remap = |dim: &Dim| {
            dim.substitute(&mut |factor| match factor {
                Factor::Braced(param) => match params.and_then(|frame| frame.get(param)) {
                    Some(Binding {
                        value: Value::Int(size),
                        ..
                    }) if !size.is_unknown() => Some(size.clone()),
                    _ => None,
                },
                Factor::Symbol(name) if own => Some(Dim::symbol(name.clone())),
                _ => None,
            })
        };
        let fact = FieldFact::Layer(
            layer,
            dims.iter().map(remap).collect(),
            geometry.map(|g| ConvGeometry {
                padding: remap(&g.padding),
                stride: remap(&g.stride),
                dilation: remap(&g.dilation),
                groups: remap(&g.groups),
            }),
        );
        let syn::Pat::Ident(ident) = (match &local.pat {
            syn::Pat::Type(typed) => &*typed.pat,
            pat => pat,
        }) else {
            return;
        };
        let name = name_of(&ident.ident);
        self.local_layers += 1;
        let place = format!("{name}{LOCAL_LAYER}{}", self.local_layers);
        let Some(binding) = self.scope.last_mut().and_then(|frame| frame.get_mut(&name)) else {
            return;
        };
        if !matches!(&binding.value, Value::External(path) if Layer::from_path(path) == Some(layer))
        {
            return;
        }
        binding.place = Some(place.clone());
        // `shapes` shows the layer as a clause would state it.
        if let (FieldFact::Layer(layer, dims, geometry), Some(hint)) =
            (&fact, self.hints.last_mut())
            && hint.name == name
            && let Some(ty) = layer_hint(*layer, dims, geometry.as_ref())
        {
            hint.ty = ty;
        }
        self.bind_built(&place, &fact);
    }

    /// What `self`'s fields hold for the whole body of a `&self` (or immutable `self`)
    /// method: each `usize` field is one fixed size, the expression every constructor gives
    /// it (`cfg.num_attention_heads`) or else a symbol of its own (`self.n_head`); each
    /// candle-nn layer every constructor builds alike has that weight, as a layer clause
    /// would state it (a clause of the contract wins).
    ///
    /// Only in the walk of the method itself: a helper followed at its call may be another
    /// value's method, whose constructor's `cfg.hidden_size` is not this one's. Behind
    /// `&mut self` (`fixed` false; `self` only ever used in paths), only what the constructors
    /// give, for fields nothing in sight assigns, and only until the body may change `self`
    /// (a method of its own may replace it whole): each size is held with a subject of its
    /// own, which the walk forgets as it forgets clauses on `self`.
    fn bind_constructed_fields(&mut self, key: &str, fixed: bool) {
        let Some((_, item)) = self.index.struct_item(key) else {
            return;
        };
        let constructed = constructed_fields(self.index, key);
        let mut sizes = Vec::new();
        for field in &item.fields {
            let Some(ident) = &field.ident else { continue };
            let name = name_of(ident);
            match constructed.get(&name) {
                Some(FieldFact::Size(dim)) => sizes.push((name, dim.clone())),
                // `self.config.hidden_size`: the `cfg.hidden_size` the layers were built with.
                Some(FieldFact::Config(param, config)) => {
                    let Some((_, config_item)) = self.index.struct_item(config) else {
                        continue;
                    };
                    for inner in &config_item.fields {
                        if let Some(inner_ident) = &inner.ident
                            && is_usize(&inner.ty)
                        {
                            let inner_name = name_of(inner_ident);
                            sizes.push((
                                format!("{name}.{inner_name}"),
                                Dim::symbol(format!("{param}.{inner_name}")),
                            ));
                        }
                    }
                }
                Some(fact) => {
                    // `patch_embeddings: PatchEmbeddings::new(cfg, vb.pp(..))?`: its sizes too.
                    if let FieldFact::Nested(_, inner) = fact {
                        for (inner_name, fact) in inner {
                            if let FieldFact::Size(dim) = fact {
                                sizes.push((format!("{name}.{inner_name}"), dim.clone()));
                            }
                        }
                    }
                    self.bind_built(&format!("self.{name}"), fact);
                }
                // Behind `&mut self`, held only until the body may change it (below).
                None if is_usize(&field.ty) => {
                    let symbol = Dim::symbol(format!("self.{name}"));
                    sizes.push((name, symbol));
                }
                None => {}
            }
        }
        if !fixed {
            for (name, _) in &sizes {
                self.subjects
                    .insert(size_subject(name), (Value::Other, None));
            }
        }
        self.bind_field_dims(sizes);
    }

    /// What a construction gave the field at `place` (`self.c_attn`, or
    /// `self.patch_embeddings.projection` of a struct built in a field), as subjects the walk
    /// forgets where the place may change: a layer's weight (any dtype: the `VarBuilder`'s,
    /// which the constructor does not show) and a convolution's geometry, as a layer clause
    /// would state them; an `Activation` that keeps the shape (any but `Swiglu`); a `Tensor` a
    /// `VarBuilder` gave, only where the crate is all in sight (as a receiver, a by-value
    /// tensor may meet another file's trait method taking `self`); a nested struct's own.
    fn bind_built(&mut self, place: &str, fact: &FieldFact) {
        let any_dtype = |dims: &[Dim]| {
            Value::Tensor(TensorType::new(
                TensorType::unknown().dtypes,
                Shape::new(dims.to_vec()),
            ))
        };
        match fact {
            FieldFact::Layer(layer, dims, geometry) => {
                if let Some(geometry) = geometry {
                    self.subjects.insert(
                        conv_geometry(place),
                        (
                            Value::Tuple(vec![
                                Value::Int(geometry.padding.clone()),
                                Value::Int(geometry.stride.clone()),
                                Value::Int(geometry.dilation.clone()),
                                Value::Int(geometry.groups.clone()),
                            ]),
                            None,
                        ),
                    );
                }
                let Some(accessor) = layer.weight_key() else {
                    return;
                };
                let subject = format!("{place}.{accessor}");
                if *layer == Layer::Embedding {
                    self.built_tables.insert(subject.clone());
                }
                self.built_weights.push((subject.clone(), dims.clone()));
                self.subjects
                    .entry(subject)
                    .or_insert((any_dtype(dims), None));
            }
            FieldFact::Activation(variant) => {
                let subject = match variant.as_str() {
                    "Swiglu" => last_dim_halving(place),
                    _ => shape_keeping(place),
                };
                self.subjects.insert(subject, (Value::Other, None));
            }
            FieldFact::Flag(_) => {
                self.subjects
                    .insert(either_value(place), (Value::Other, None));
            }
            FieldFact::Tensor(dims) if self.index.whole_crate(self.module()) => {
                self.subjects
                    .entry(place.to_string())
                    .or_insert((any_dtype(dims), None));
            }
            FieldFact::Nested(_, inner) => {
                for (name, fact) in inner {
                    self.bind_built(&format!("{place}.{name}"), fact);
                }
            }
            FieldFact::KvCache(_, dim) => {
                self.subjects
                    .insert(kv_cache_dim(place), (Value::Int(dim.clone()), None));
            }
            // Read where a `match` binds the variant's layer (`Walker::mark_variant_layer`).
            FieldFact::Variants(_, variants) => {
                for (variant, fact) in variants {
                    self.bind_built(&format!("{place}@{variant}"), fact);
                }
            }
            // Read where `Some(p)` of `&self.position_embeddings` binds it (its place is
            // `self.position_embeddings?`).
            FieldFact::Optional(held) => self.bind_built(&format!("{place}?"), held),
            _ => {}
        }
    }

    /// Gives `self`'s integer fields their sizes (`n_head` → `H`) for the whole body: where
    /// the body reads `self.n_head`, that size. The caller vouches that `self` cannot change
    /// in the body (a `&self` receiver) and that each field holds that size.
    fn bind_field_dims(&mut self, pairs: impl IntoIterator<Item = (String, Dim)>) {
        self.field_dims.extend(pairs);
    }

    /// The size `self.field` holds, where [`Walker::bind_field_dims`] gave it one.
    fn field_dim(&self, expr: &syn::ExprField) -> Option<Dim> {
        let syn::Member::Named(member) = &expr.member else {
            return None;
        };
        // `self.n_head`, or a stored config's `self.config.hidden_size`.
        let name = match strip_refs(&expr.base) {
            base if is_self_path(base) => name_of(member),
            syn::Expr::Field(syn::ExprField {
                base,
                member: syn::Member::Named(config),
                ..
            }) if is_self_path(strip_refs(base)) => {
                format!("{}.{}", name_of(config), name_of(member))
            }
            _ => return None,
        };
        if !self.is_param("self") {
            return None;
        }
        if self.self_mut && !self.subjects.contains_key(&size_subject(&name)) {
            return None;
        }
        self.field_dims.get(&name).cloned()
    }

    /// The size the integer field `field` of `receiver` holds here (`self.n_head` of
    /// `self`, `self.attn.n_head` of `self.attn`), where a clause names it as a dim or
    /// [`Walker::bind_field_dims`] gave it one.
    fn receiver_field_size(&self, receiver: &syn::Expr, field: &str) -> Option<Dim> {
        if field.contains(['.', '(', '[', '?', '@', '{']) || !self.is_param("self") {
            return None;
        }
        let text = subject_text(strip_refs(receiver))?;
        // A clause's dim first (`self.heads = H` of the caller's own contract).
        if let Some(Value::Int(size)) = self.subject_value_of(&format!("{text}.{field}"))
            && !size.is_unknown()
        {
            return Some(size);
        }
        let name = match text.strip_prefix("self")? {
            "" => field.to_string(),
            rest => {
                let inner = rest.strip_prefix('.')?;
                if inner.contains(['.', '(', '[', '?', '@', '{']) {
                    return None;
                }
                format!("{inner}.{field}")
            }
        };
        if self.self_mut && !self.subjects.contains_key(&size_subject(&name)) {
            return None;
        }
        self.field_dims.get(&name).cloned()
    }

    /// Whether what a path from a parameter names stays what its clause says while the
    /// parameter cannot change: fields do; a method's value only where it is a candle-nn
    /// layer's tensor (`self.head.weight()`): a method of the user's may read a cell or a
    /// global that changes.
    fn stable_path(&self, subject: &str) -> bool {
        let mut steps = subject.split('.');
        let Some(root) = steps.next() else {
            return false;
        };
        let value = match self.lookup(root) {
            Some(binding) => binding.value.clone(),
            None => return false,
        };
        let owned = self.owned_roots.contains(root);
        self.stable_steps(value, &steps.collect::<Vec<_>>(), 0, owned)
    }

    /// [`Walker::stable_path`] from `value` on: each step a field, a candle-nn layer's
    /// accessor, or a method of the crate's type that gives such a path of its own `self`
    /// (with_tracing's `fn embeddings(&self) -> &Tensor { self.inner.embeddings() }`).
    ///
    /// From a parameter held by value (`owned`), a field that may lend a `&mut` is not stable
    /// (see [`Walker::field_lends_mut`]); behind a shared reference, nothing can be changed
    /// through one, and behind `&mut self` the walk follows such reborrows itself.
    fn stable_steps(&self, mut value: Value, steps: &[&str], depth: usize, owned: bool) -> bool {
        for step in steps {
            // `self.proj?`: the layer an `Option` field holds, where it holds one.
            if let Some(field) = step.strip_suffix('?') {
                value = match value {
                    Value::Instance(key, _) if owned && self.field_lends_mut(&key, field) => {
                        return false;
                    }
                    Value::Instance(key, _) => match self.field_value(&key, field) {
                        Value::Optional(held) => *held,
                        _ => return false,
                    },
                    _ => return false,
                };
                continue;
            }
            value = match (step.strip_suffix("()"), value) {
                // A field the type in sight does not declare is reached through a `Deref` of
                // the crate's, which may give another value at each call.
                (None, Value::Instance(key, _))
                    if self.index.struct_item(&key).is_some()
                        && self.index.field(&key, step).is_none() =>
                {
                    return false;
                }
                // `ctx.cache` of `struct Ctx<'a> { cache: &'a mut Cache }`: `helper(ctx.cache)`
                // reborrows it, with no `&mut` written, and may change what is below it.
                (None, Value::Instance(key, _)) if owned && self.field_lends_mut(&key, step) => {
                    return false;
                }
                (None, Value::Instance(key, _)) => self.field_value(&key, step),
                (None, _) => Value::Other,
                (Some(method), Value::External(path))
                    if Layer::from_path(&path).is_some() && LAYER_ACCESSORS.contains(&method) =>
                {
                    Value::tensor_unknown()
                }
                // A `BatchNorm`'s running statistics (`bn.running_mean()`), as fixed in shape
                // as its weight.
                (Some("running_mean" | "running_var"), Value::External(path))
                    if is_batch_norm(&path) =>
                {
                    Value::tensor_unknown()
                }
                // How many steps a candle-nn kv cache holds (`self.kv_cache.current_seq_len() =
                // P`): changed only by its `&mut self` methods.
                (Some("current_seq_len"), Value::External(path))
                    if GROWING_KV_CACHES.contains(&path.as_str()) =>
                {
                    Value::Int(Dim::Unknown)
                }
                // A `ConcatKvCache`'s keys or values (`self.kv_cache.v()?`): changed only by
                // its `&mut self` methods.
                (Some("k" | "v"), Value::External(path)) if path == CONCAT_KV_CACHE => {
                    Value::Optional(Box::new(Value::tensor_unknown()))
                }
                // A convolution's own `config()` (its settings, read as `.stride`).
                (Some("config"), Value::External(path))
                    if matches!(Layer::from_path(&path), Some(Layer::Conv1d | Layer::Conv2d)) =>
                {
                    Value::Other
                }
                (Some(method), Value::Instance(key, _)) if depth < 3 => {
                    match self.accessor_path(&key, method) {
                        Some(inner) => {
                            let inner: Vec<&str> = inner.split('.').skip(1).collect();
                            let own = Value::Instance(key.clone(), Access::Ref);
                            if !self.stable_steps(own, &inner, depth + 1, false) {
                                return false;
                            }
                            Value::tensor_unknown()
                        }
                        None => return false,
                    }
                }
                (Some(_), _) => return false,
            };
        }
        true
    }

    /// The path a method of the crate's type `key` gives, where it is one: the only method of
    /// its name (no trait's beside it), `&self` and nothing else, no generics, not under
    /// `cfg` or an attribute macro, its body the one expression `self.inner.embeddings()`.
    fn accessor_path(&self, key: &str, method: &str) -> Option<String> {
        let [id] = self.index.methods(key, method) else {
            return None;
        };
        let f = &self.index.fns[*id];
        if !takes_ref_self(f.sig)
            || f.sig.inputs.len() != 1
            || !f.sig.generics.params.is_empty()
            || f.conditional
            || f.trait_of.is_some()
            || !self.index.trait_impl_methods(key, method).is_empty()
            || self.index.is_provided_method(method)
            || self.index.may_be_any_types_method(method)
            || self.index.may_be_foreign_method(method)
            || self.index.is_wrapped(*id)
        {
            return None;
        }
        let [syn::Stmt::Expr(tail, None)] = f.block.stmts.as_slice() else {
            return None;
        };
        let text = subject_text(strip_refs(tail))?;
        (text.starts_with("self.") && !text.contains(['?', '[', '{'])).then_some(text)
    }

    // ----- scope -----

    fn bind(&mut self, name: &str, value: Value, origin: Option<Origin>) {
        if let Some(frame) = self.scope.last_mut() {
            frame.insert(name.to_string(), Binding::new(value, origin));
        }
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scope.iter().rev().find_map(|frame| frame.get(name))
    }

    /// Whether `name` is the parameter itself (not shadowed by a `let`).
    fn is_param(&self, name: &str) -> bool {
        self.scope
            .iter()
            .rposition(|frame| frame.contains_key(name))
            == Some(0)
    }

    fn set(&mut self, name: &str, value: Value, origin: Option<Origin>) {
        if let Some(frame) = self.scope.iter_mut().rev().find(|f| f.contains_key(name)) {
            frame.insert(name.to_string(), Binding::new(value, origin));
        }
    }

    /// Forgets what the walk knew of names a loop, closure, `&mut` or macro may change.
    fn forget(&mut self, changed: &Changed) {
        if self.self_mut {
            let places = &changed.method_places;
            self.subjects.retain(|subject, _| {
                settled(subject) || !places.iter().any(|place| may_read(subject, place))
            });
        }
        if !changed.self_places.is_empty() {
            if self.self_mut {
                let places = &changed.self_places;
                self.subjects.retain(|subject, _| {
                    settled(subject) || !places.iter().any(|place| may_read(subject, place))
                });
            } else {
                let mut whole = Changed {
                    kept: changed.kept.clone(),
                    rebound: changed.rebound.clone(),
                    self_touched: changed.self_touched,
                    ..Changed::default()
                };
                whole.kept.insert("self".to_string());
                return self.forget(&whole);
            }
        }
        for frame in &mut self.scope {
            for (name, binding) in frame.iter_mut() {
                if changed.rebound.contains(name) {
                    *binding = Binding::new(Value::Other, None);
                } else if changed.kept.contains(name) {
                    *binding = Binding::new(binding.value.forgotten(), None);
                }
            }
        }
        if changed.kept.contains("self")
            || changed.rebound.contains("self")
            || (self.self_mut && changed.self_touched)
        {
            self.subjects.clear();
        }
        let roots: Vec<String> = changed
            .kept
            .iter()
            .chain(&changed.rebound)
            .cloned()
            .collect();
        self.subjects.retain(|subject, _| {
            let root = subject.split(['.', '(']).next().unwrap_or("");
            !roots.iter().any(|r| r == root)
        });
    }

    /// An empty set of changes, that knows the body's macros.
    fn changes(&self) -> Changed {
        Changed {
            macros: self.body_macros.clone(),
            ..Changed::default()
        }
    }

    fn forget_in(&mut self, visit: impl FnOnce(&mut Changed)) {
        let mut changed = self.changes();
        visit(&mut changed);
        self.forget(&changed);
    }

    /// Binds every name a pattern binds to an unknown value.
    fn bind_unknown(&mut self, pat: &syn::Pat) {
        let mut names = PatNames::default();
        names.visit_pat(pat);
        for ident in names.0 {
            self.bind_let(&ident, Value::Other);
        }
    }

    fn bind_let(&mut self, ident: &syn::Ident, value: Value) {
        // `None` in a pattern is std's variant (a pattern cannot shadow a unit variant in
        // scope, and the prelude's is): it binds nothing.
        if ident == "None" {
            return;
        }
        let site = Site::of(ident);
        if self.in_let {
            let ty = value.hint();
            self.hints.push(LetHint {
                site,
                name: name_of(ident),
                joins: self.joins_in(&ty),
                absent: self.absent_in(&ty),
                // Not for a name bound only to be kept (`_enter` of a tracing span).
                why: (vague(&value) && !ident.to_string().starts_with('_'))
                    .then(|| self.let_why.as_ref().map(|(shown, _)| shown.clone()))
                    .flatten(),
                ty,
                op: self.let_op.clone(),
            });
        }
        match &self.let_why {
            Some((_, cause)) if self.in_let && vague(&value) => {
                self.why_of.insert(name_of(ident), cause.clone());
            }
            _ => {
                self.why_of.remove(&name_of(ident));
            }
        }
        let origin = matches!(value, Value::Tensor(_)).then_some(Origin::Binding(site));
        self.bind(&name_of(ident), value, origin);
    }

    fn bind_pattern(&mut self, pat: &syn::Pat, value: Value) {
        match pat {
            syn::Pat::Ident(ident) if ident.subpat.is_none() => self.bind_let(&ident.ident, value),
            syn::Pat::Type(typed) => self.bind_pattern(&typed.pat, value),
            syn::Pat::Reference(r) => self.bind_pattern(&r.pat, value),
            syn::Pat::Paren(p) => self.bind_pattern(&p.pat, value),
            syn::Pat::Tuple(tuple) => match value {
                Value::Tuple(items)
                    if items.len() == tuple.elems.len()
                        && !tuple.elems.iter().any(|p| matches!(p, syn::Pat::Rest(_))) =>
                {
                    for (p, v) in tuple.elems.iter().zip(items) {
                        self.bind_pattern(p, v);
                    }
                }
                _ => self.bind_unknown(pat),
            },
            // `[q, k, v]`, `[first, ..]` of a list of tensors: each name its part.
            syn::Pat::Slice(slice) => {
                // `..`, or `tail @ ..` (which binds a slice).
                let rest = slice.elems.iter().position(|p| match p {
                    syn::Pat::Rest(_) => true,
                    syn::Pat::Ident(ident) => ident.subpat.is_some(),
                    _ => false,
                });
                let count = slice.elems.len() - usize::from(rest.is_some());
                let part = |i: usize| match &value {
                    Value::TensorsEach(t, _) => Some(t.clone()),
                    Value::Tensors(ts) => match rest {
                        None if ts.len() == count => ts.get(i).cloned(),
                        Some(at) if ts.len() >= count && i < at => ts.get(i).cloned(),
                        // After the rest, counted from the end of the list.
                        Some(_) if ts.len() >= count => {
                            ts.get(ts.len() + i + 1 - slice.elems.len()).cloned()
                        }
                        _ => None,
                    },
                    _ => None,
                };
                if !matches!(value, Value::Tensors(_) | Value::TensorsEach(..))
                    || (0..slice.elems.len()).any(|i| Some(i) != rest && part(i).is_none())
                {
                    return self.bind_unknown(pat);
                }
                for (i, p) in slice.elems.iter().enumerate() {
                    match (Some(i) == rest, part(i)) {
                        (true, _) => self.bind_unknown(p),
                        (false, Some(t)) => self.bind_pattern(p, Value::Tensor(t)),
                        (false, None) => self.bind_unknown(p),
                    }
                }
            }
            _ => self.bind_unknown(pat),
        }
    }

    /// [`Self::bind_refutable`] of a value read from `scrutinee`: `Some(p)` of an `Option`
    /// field of `self` (`&self.proj`, `self.proj.as_ref()`) makes `p` that field's layer, read
    /// by the clauses on `self.proj?`.
    fn bind_refutable_from(&mut self, pat: &syn::Pat, value: Value, scrutinee: &syn::Expr) {
        self.bind_refutable(pat, value);
        self.mark_layer_places(pat, scrutinee);
    }

    /// After [`Self::bind_refutable_from`]'s binding: the place of each `Some(p)` of an
    /// `Option` field, through a tuple written out (`match (temb, &self.time_emb_proj)`).
    fn mark_layer_places(&mut self, pat: &syn::Pat, scrutinee: &syn::Expr) {
        let mut inner = pat;
        while let syn::Pat::Reference(syn::PatReference { pat, .. })
        | syn::Pat::Paren(syn::PatParen { pat, .. }) = inner
        {
            inner = pat;
        }
        let mut scrutinee = scrutinee;
        while let syn::Expr::Paren(syn::ExprParen { expr, .. })
        | syn::Expr::Group(syn::ExprGroup { expr, .. }) = scrutinee
        {
            scrutinee = expr;
        }
        if let (syn::Pat::Tuple(pats), syn::Expr::Tuple(exprs)) = (inner, scrutinee) {
            if pats.elems.len() == exprs.elems.len() {
                for (pat, expr) in pats.elems.iter().zip(&exprs.elems) {
                    self.mark_layer_places(pat, expr);
                }
            }
            return;
        }
        let syn::Pat::TupleStruct(some) = inner else {
            return;
        };
        let [
            syn::Pat::Ident(syn::PatIdent {
                ident,
                subpat: None,
                ..
            }),
        ] = some.elems.iter().collect::<Vec<_>>().as_slice()
        else {
            return;
        };
        if some.qself.is_some() {
            return;
        }
        let name = name_of(ident);
        if !(some.path.is_ident("Some") && self.is_primitive("Some")) {
            self.mark_variant_layer(&some.path, &name, scrutinee);
            return;
        }
        let Some(place) = option_place(scrutinee) else {
            return;
        };
        if let Some(binding) = self
            .scope
            .last_mut()
            .and_then(|frame| frame.get_mut(&name))
            .filter(|binding| matches!(binding.value, Value::External(_)))
        {
            binding.place = Some(format!("{place}?"));
        }
    }

    /// `p` of `Proj::Conv2d(p)`, where the crate enum's variant holds a candle-nn layer: that
    /// layer, and where the `match` reads a field of `self` (`&self.proj_in`), the place
    /// `self.proj_in@Conv2d`, whose sizes are the ones its constructions give that variant.
    fn mark_variant_layer(&mut self, path: &syn::Path, name: &str, scrutinee: &syn::Expr) {
        let segments = path_segments(path);
        let Some((variant, prefix)) = segments.split_last() else {
            return;
        };
        if prefix.is_empty() {
            return;
        }
        let Resolved::Type(key) = self.resolve(prefix) else {
            return;
        };
        let Some((module, ty)) = self.index.variant_payload(&key, variant) else {
            return;
        };
        let layer = match self.kind_at(ty, false, module, None, false) {
            Kind::External(layer) => layer,
            // `Kind::Attention(attn)` of `&self.kind`, whose variant holds a struct of the
            // crate's (of an enum with no type parameter, which a crate type could share a
            // name with): a reference to it, whose methods (and their contracts) apply.
            Kind::Instance(held, _)
                if self
                    .index
                    .enum_item(&key)
                    .is_some_and(|e| e.generics.params.is_empty()) =>
            {
                let access = match scrutinee {
                    syn::Expr::Reference(r) if r.mutability.is_some() => Access::Mut,
                    syn::Expr::Reference(_) => Access::Ref,
                    _ => return,
                };
                if let Some(frame) = self.scope.last_mut()
                    && frame.contains_key(name)
                {
                    frame.insert(
                        name.to_string(),
                        Binding::new(Value::Instance(held, access), None),
                    );
                }
                return;
            }
            _ => return,
        };
        if Layer::from_path(&layer).is_none() && !KV_CACHES.contains(&layer.as_str()) {
            return;
        }
        // `&mut self.kv_cache` for a cache's `append`: the construction scan takes its
        // variant's facts as settled only where each arm does no more than that.
        let scrutinee = match scrutinee {
            syn::Expr::Reference(r) if KV_CACHES.contains(&layer.as_str()) => &*r.expr,
            other => other,
        };
        let place = option_place(scrutinee).map(|place| format!("{place}@{variant}"));
        if let Some(frame) = self.scope.last_mut()
            && frame.contains_key(name)
        {
            let mut binding = Binding::new(Value::External(layer), None);
            binding.place = place;
            frame.insert(name.to_string(), binding);
        }
    }

    /// The text of a layer's place for its clauses: a name bound to an `Option` field's layer
    /// is that field (`p` is `self.proj?`), and so is `self.proj.as_ref().unwrap()`.
    fn layer_place(&self, receiver: &syn::Expr) -> Option<String> {
        let text = subject_text(strip_refs(receiver))?;
        if let Some(held) = text.strip_suffix(".as_ref().unwrap()")
            && held.starts_with("self.")
        {
            return Some(format!("{held}?"));
        }
        match self.lookup(&text).and_then(|binding| binding.place.clone()) {
            Some(place) if !text.contains('.') => Some(place),
            _ => Some(text),
        }
    }

    /// Binds what a pattern that may not match binds where it does (`let .. else`, a `match`
    /// arm, `if let`): the parts of a list of tensors for a slice pattern; anything else
    /// unknown.
    fn bind_refutable(&mut self, pat: &syn::Pat, value: Value) {
        let mut inner = pat;
        while let syn::Pat::Reference(syn::PatReference { pat, .. })
        | syn::Pat::Paren(syn::PatParen { pat, .. })
        | syn::Pat::Type(syn::PatType { pat, .. }) = inner
        {
            inner = pat;
        }
        match (inner, value) {
            (syn::Pat::Slice(_), value) => self.bind_pattern(pat, value),
            // `Some(mask)` of an `Option`: what it holds, where std's `Some` is meant.
            (syn::Pat::TupleStruct(some), Value::Optional(held))
                if some.qself.is_none()
                    && some.path.is_ident("Some")
                    && some.elems.len() == 1
                    && self.is_primitive("Some") =>
            {
                self.bind_pattern(&some.elems[0], *held);
            }
            // `(Some(mask), Some(tokens))` of a tuple of `Option`s: each part refutably.
            (syn::Pat::Tuple(tuple), Value::Tuple(items))
                if tuple.elems.len() == items.len()
                    && !tuple.elems.iter().any(|p| matches!(p, syn::Pat::Rest(_))) =>
            {
                for (elem, item) in tuple.elems.iter().zip(items) {
                    self.bind_refutable(elem, item);
                }
            }
            // `d => d`: a binding (no constant of the name), the whole value.
            (syn::Pat::Ident(binding), value)
                if binding.subpat.is_none() && self.is_primitive(&name_of(&binding.ident)) =>
            {
                self.bind_pattern(inner, value);
            }
            _ => self.bind_unknown(pat),
        }
    }

    // ----- types and paths -----

    /// What the Rust type `ty` (written in this function's module) is; `clause` says the
    /// contract has a clause on it, which makes any type named `Tensor` candle's.
    fn kind(&self, ty: &syn::Type, clause: bool) -> Kind {
        self.kind_at(ty, clause, self.module(), self.f.owner, true)
    }

    /// What `ty` is when written in `module` (in an `impl` of `owner`); `body` says it is
    /// written in this function's body, where the body's own `use`s count.
    fn kind_at(
        &self,
        ty: &syn::Type,
        clause: bool,
        module: ModId,
        owner: Option<&str>,
        body: bool,
    ) -> Kind {
        let again = |ty: &syn::Type| self.kind_at(ty, clause, module, owner, body);
        match ty {
            syn::Type::Reference(r) => match again(&r.elem) {
                // `&&Model`: its own trait `impl`s (`impl Run for &&Model`) come before any
                // method of `Model`'s.
                Kind::Instance(_, Access::Ref | Access::Mut) => Kind::Other,
                // `&Arc<Model>`: a trait's method for `Arc<Model>` (or for every type) comes
                // before `Model`'s own, as for the `Arc` itself.
                Kind::Instance(key, Access::Shared) => Kind::Instance(key, Access::Shared),
                Kind::Instance(key, _) if r.mutability.is_some() => {
                    Kind::Instance(key, Access::Mut)
                }
                Kind::Instance(key, _) => Kind::Instance(key, Access::Ref),
                kind => kind,
            },
            syn::Type::Paren(p) => again(&p.elem),
            syn::Type::Group(g) => again(&g.elem),
            // `patch_size: (usize, usize)`: each part by its type.
            syn::Type::Tuple(t) if !t.elems.is_empty() => {
                Kind::Tuple(t.elems.iter().map(again).collect())
            }
            // `[Block; 12]`, `[Block]`: the crate's values, each a place.
            syn::Type::Array(syn::TypeArray { elem, .. })
            | syn::Type::Slice(syn::TypeSlice { elem, .. }) => match again(elem) {
                Kind::Instance(key, _) => Kind::Each(Box::new(Kind::Instance(key, Access::Owned))),
                _ => Kind::Other,
            },
            syn::Type::Path(p) if p.qself.is_none() => {
                let segments = path_segments(&p.path);
                let last = segments.last().map_or("", String::as_str);
                if segments.len() == 1 {
                    match last {
                        "usize" | "u8" | "u16" | "u32" | "u64" | "isize" | "i8" | "i16" | "i32"
                        | "i64" => return Kind::Int,
                        "f32" | "f64" => return Kind::Float,
                        "Self" => {
                            return match owner {
                                Some(key) => Kind::Instance(key.to_string(), Access::Owned),
                                None => Kind::Other,
                            };
                        }
                        _ => {}
                    }
                }
                let resolved = if body {
                    self.resolve(&segments)
                } else {
                    self.index.resolve(module, &segments)
                };
                // std's `Option`, `Vec`, `Box`, `Rc` and `Arc` (not a type of the crate's of
                // that name), by their first type argument.
                if let Some(wrapper) = std_wrapper(&segments, &resolved) {
                    let inner = p.path.segments.last().and_then(|s| match &s.arguments {
                        syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                            Some(syn::GenericArgument::Type(inner)) => Some(inner),
                            _ => None,
                        },
                        _ => None,
                    });
                    let Some(inner) = inner else {
                        return Kind::Other;
                    };
                    return match (wrapper, inner) {
                        ("Option", syn::Type::Tuple(t)) => Kind::Optional(Box::new(Kind::Tuple(
                            t.elems.iter().map(again).collect(),
                        ))),
                        ("Option", inner) => Kind::Optional(Box::new(again(inner))),
                        // `layers: Vec<Block>`: the crate's values, each a place.
                        ("Vec", inner) => match again(inner) {
                            Kind::Instance(key, _) => {
                                Kind::Each(Box::new(Kind::Instance(key, Access::Owned)))
                            }
                            _ => Kind::Other,
                        },
                        (pointer, inner) => match again(inner) {
                            Kind::Tensor => Kind::Tensor,
                            // `self.rotary_emb.apply(..)` through an `Arc<RotaryEmbedding>`:
                            // only its `&self` methods reach it (see `Access::Shared`).
                            Kind::Instance(key, _) if pointer != "Box" => {
                                Kind::Instance(key, Access::Shared)
                            }
                            _ => Kind::Other,
                        },
                    };
                }
                match resolved {
                    Resolved::External(path) if is_candle_tensor(&path) => Kind::Tensor,
                    Resolved::External(path) => Kind::External(path.join("::")),
                    Resolved::Type(key) => Kind::Instance(key, Access::Owned),
                    _ if clause && last == "Tensor" => Kind::Tensor,
                    _ => Kind::Other,
                }
            }
            _ => Kind::Other,
        }
    }

    /// Whether `ty` is a list of candle tensors that its holder cannot change: `&[Tensor]`,
    /// `Vec<Tensor>`, `&Vec<Tensor>` (elements `&Tensor` too).
    fn is_tensor_list(&self, ty: &syn::Type) -> bool {
        let element = |ty: &syn::Type| match ty {
            syn::Type::Reference(r) if r.mutability.is_some() => false,
            ty => matches!(self.kind(ty, false), Kind::Tensor),
        };
        let vec_of = |ty: &syn::Type| match ty {
            syn::Type::Path(p) if p.qself.is_none() => {
                let segments = path_segments(&p.path);
                // std's, unless the crate has a `Vec` of its own.
                let is_vec = std_wrapper(&segments, &self.resolve(&segments)) == Some("Vec");
                let inner = p.path.segments.last().and_then(|s| match &s.arguments {
                    syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => a.args.first(),
                    _ => None,
                });
                match inner {
                    Some(syn::GenericArgument::Type(inner)) if is_vec => element(inner),
                    _ => false,
                }
            }
            _ => false,
        };
        match ty {
            syn::Type::Reference(r) if r.mutability.is_none() => match &*r.elem {
                syn::Type::Slice(slice) => element(&slice.elem),
                other => vec_of(other),
            },
            other => vec_of(other),
        }
    }

    /// The kind of what a function returns (the `Ok` value of a `Result`), in the callee's
    /// own module.
    fn return_kind(&self, callee: &FnDef) -> Kind {
        match ok_type(callee.sig) {
            Some(ty) => self.kind_in(callee, ty),
            None => Kind::Other,
        }
    }

    /// Whether a function returns std's `Vec` of tensors (`Result<Vec<Tensor>>`), as its own
    /// module names the types.
    fn returns_tensor_vec(&self, callee: &FnDef) -> bool {
        let Some(syn::Type::Path(p)) = ok_type(callee.sig) else {
            return false;
        };
        let segments = path_segments(&p.path);
        let resolved = self.index.resolve(callee.module, &segments);
        let element = match p.path.segments.last().map(|s| &s.arguments) {
            Some(syn::PathArguments::AngleBracketed(a)) if a.args.len() == 1 => a.args.first(),
            _ => None,
        };
        p.qself.is_none()
            && std_wrapper(&segments, &resolved) == Some("Vec")
            && matches!(element, Some(syn::GenericArgument::Type(ty))
                if matches!(self.kind_in(callee, ty), Kind::Tensor))
    }

    /// The kinds of the elements of the tuple a function returns (`Result<(Tensor, Tensor)>`),
    /// in the callee's own module; `None` where it returns no tuple.
    fn tuple_kinds(&self, callee: &FnDef) -> Option<Vec<Kind>> {
        match ok_type(callee.sig)? {
            syn::Type::Tuple(tuple) if !tuple.elems.is_empty() => Some(
                tuple
                    .elems
                    .iter()
                    .map(|ty| self.kind_in(callee, ty))
                    .collect(),
            ),
            _ => None,
        }
    }

    /// What `ty`, written in `callee`'s signature, is.
    fn kind_in(&self, callee: &FnDef, ty: &syn::Type) -> Kind {
        let generics: Vec<String> = callee
            .impl_generics
            .iter()
            .cloned()
            .chain(crate::index::generic_names(&callee.sig.generics))
            .collect();
        if crate::index::starts_with_any(ty, &generics) {
            return Kind::Other;
        }
        self.kind_at(
            ty,
            callee.contract.is_some(),
            callee.module,
            callee.owner.as_deref(),
            false,
        )
    }

    /// A named field of a value of a type of the crates read, by its declared type.
    fn field_value(&self, key: &str, name: &str) -> Value {
        let Some((module, ty)) = self.index.field(key, name) else {
            return Value::Other;
        };
        if self.names_type_parameter(key, ty) {
            return Value::Other;
        }
        // `conv1d_weights: Vec<Tensor>`, `[Tensor; 4]`: each element a tensor.
        if let Some(element) = self.list_element(module, ty)
            && matches!(
                self.kind_at(element, false, module, Some(key), false),
                Kind::Tensor
            )
        {
            return Value::TensorsEach(TensorType::unknown(), Dim::Unknown);
        }
        self.kind_at(ty, false, module, Some(key), false)
            .unknown_value()
    }

    /// Whether a field's type of the struct `key` names one of its type parameters (`struct
    /// Model<Block> { layers: Vec<Block> }`), whatever crate type shares its name.
    fn names_type_parameter(&self, key: &str, ty: &syn::Type) -> bool {
        let Some((_, item)) = self.index.struct_item(key) else {
            return false;
        };
        let params: BTreeSet<String> = crate::index::generic_names(&item.generics)
            .into_iter()
            .collect();
        // (A visit, not tokens: the type is the index's, whose tokens may not mix with the
        // compiler's here.)
        struct Names<'p>(&'p BTreeSet<String>, bool);
        impl<'ast> Visit<'ast> for Names<'_> {
            fn visit_ident(&mut self, ident: &'ast proc_macro2::Ident) {
                self.1 |= self.0.contains(&name_of(ident));
            }
        }
        let mut names = Names(&params, false);
        names.visit_type(ty);
        names.1
    }

    /// The element type of std's `Vec<T>` or an array `[T; N]`.
    fn list_element<'t>(&self, module: ModId, ty: &'t syn::Type) -> Option<&'t syn::Type> {
        match ty {
            syn::Type::Array(array) => Some(&*array.elem),
            syn::Type::Path(p) if p.qself.is_none() => {
                let segments = path_segments(&p.path);
                let is_vec =
                    std_wrapper(&segments, &self.index.resolve(module, &segments)) == Some("Vec");
                match p.path.segments.last().map(|s| &s.arguments) {
                    Some(syn::PathArguments::AngleBracketed(a)) if is_vec && a.args.len() == 1 => {
                        match a.args.first() {
                            Some(syn::GenericArgument::Type(inner)) => Some(inner),
                            _ => None,
                        }
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// What a path written in the body names: the blocks' own `use`s and items first.
    fn resolve(&self, segments: &[String]) -> Resolved {
        let Some(first) = segments.first() else {
            return Resolved::Unknown;
        };
        for frame in self.local_paths.iter().rev() {
            match frame.get(first) {
                Some(Some(path)) => {
                    let mut full = path.clone();
                    full.extend(segments[1..].iter().cloned());
                    return self.index.resolve(self.module(), &full);
                }
                Some(None) => return Resolved::Unknown,
                None => {}
            }
        }
        let opaque = self.local_paths.iter().any(|frame| frame.contains_key(""));
        if opaque && !matches!(first.as_str(), "crate" | "self" | "super" | "Self") {
            return Resolved::Unknown;
        }
        if first == "Self" {
            return match (self.f.owner, segments.len()) {
                (Some(key), 1) => Resolved::Type(key.to_string()),
                (Some(key), 2) => Resolved::Assoc(key.to_string(), segments[1].clone()),
                _ => Resolved::Unknown,
            };
        }
        self.index.resolve(self.module(), segments)
    }

    /// Whether `name` is std's primitive type (or prelude item: `Some`, `None`) here: nothing
    /// the crate, the module or the body's blocks declare (`type f32 = f64;` in a block,
    /// `fn Some(..)`, `use Wrap::*` of an enum with a `Some`) or may declare (a macro's items)
    /// has it.
    fn is_primitive(&self, name: &str) -> bool {
        !self.block_may_name(name)
            && matches!(
                self.index.resolve(self.module(), &[name.to_string()]),
                Resolved::Unknown
            )
            && !self.index.may_import(self.module(), name)
    }

    /// Whether an item of the body's blocks (or a macro's, which may make any) is named so.
    fn block_may_name(&self, name: &str) -> bool {
        self.local_paths
            .iter()
            .any(|frame| frame.contains_key(name) || frame.contains_key(""))
    }

    /// The dtype of a scalar parameter read as it came (`on_true` of `on_true: f32`, not
    /// shadowed): its declared primitive type, which no assignment changes.
    fn scalar_param_dtype(&self, expr: &syn::Expr) -> Option<DType> {
        let syn::Expr::Path(path) = unparen(expr) else {
            return None;
        };
        let name = path.path.get_ident()?.to_string();
        // An item of a block (`const p: f64 = 1.0;`, a macro's) hides it too.
        // (In a helper followed at its call too: the parameter's declared type is the
        // dtype, whatever the caller passes, as glm's `masked_fill(.., f32::NEG_INFINITY)`.)
        if !self.is_param(&name) || self.block_may_name(&name) {
            return None;
        }
        self.f.sig.inputs.iter().find_map(|input| match input {
            syn::FnArg::Typed(typed) => match (&*typed.pat, &*typed.ty) {
                (syn::Pat::Ident(ident), syn::Type::Path(ty))
                    if ident.ident == name && ty.qself.is_none() =>
                {
                    let ty = ty.path.get_ident()?.to_string();
                    self.is_primitive(&ty).then(|| dtype_of_name(&ty)).flatten()
                }
                _ => None,
            },
            syn::FnArg::Receiver(_) => None,
        })
    }

    // ----- statements and blocks -----

    fn block(&mut self, block: &syn::Block) -> Value {
        self.scope.push(BTreeMap::new());
        let mut paths = BTreeMap::new();
        for stmt in &block.stmts {
            let unknown_macro = match stmt {
                syn::Stmt::Item(syn::Item::Macro(m)) => m.ident.is_none(),
                syn::Stmt::Item(item) => {
                    local_item(item, &mut paths);
                    false
                }
                syn::Stmt::Macro(m) => !self.known_macro(&m.mac),
                syn::Stmt::Expr(syn::Expr::Macro(m), _) => !self.known_macro(&m.mac),
                _ => false,
            };
            // A macro may define items here that shadow the module's names.
            if unknown_macro {
                paths.insert(String::new(), None);
            }
        }
        self.local_paths.push(paths);
        let mut value = Value::Other;
        let mut never = false;
        // A statement certain to fail under `?`: nothing after it runs either, but what it
        // says is still reported (every certain mismatch of a body at once).
        let mut failed = false;
        // After a leaving test of a shape (see `left_on_a_shape`): quiet to the block's end.
        let mut after_shape_guard = false;
        for (i, stmt) in block.stmts.iter().enumerate() {
            let last = i + 1 == block.stmts.len();
            // A statement under `cfg` may not be compiled: what it binds or changes is
            // unknown after it, and nothing in it is reported.
            if is_conditional_stmt(stmt) {
                self.forget_in(|c| c.visit_stmt(stmt));
                if let syn::Stmt::Local(local) = stmt {
                    self.bind_unknown(&local.pat);
                }
                // A `break` or `continue` in it may be compiled in: its loop may complete.
                let (breaks, continues) = stmt_jumps(stmt);
                self.live_break |= breaks;
                self.live_continue |= continues;
                // `#[cfg(debug_assertions)] return ..;`: where compiled in, nothing after it
                // may run (twins under opposite `cfg`s leave on every build).
                if !after_shape_guard && stmt_may_leave(stmt) {
                    after_shape_guard = true;
                    self.quiet += 1;
                }
                continue;
            }
            // Only the block's value is taken where the block is; after a statement that never
            // completes, nothing runs.
            let outer = self.taken;
            self.taken &= last;
            self.quiet += usize::from(never);
            self.dead += usize::from(never || failed);
            self.failure_never = false;
            let v = self.stmt(stmt);
            // `ensure_matrix(x)?;`: a function given a tensor, called for its error only, is
            // a test of its shape that may leave.
            if let Some(call) = discarded_try(stmt)
                && self.on_every_path()
                && self.reads_shape(call)
                && self.validates_shape(call)
            {
                self.left_on_a_shape = true;
            }
            self.dead -= usize::from(never || failed);
            self.quiet -= usize::from(never);
            self.taken = outer;
            if self.left_on_a_shape && !after_shape_guard {
                after_shape_guard = true;
                self.quiet += 1;
            }
            match (v == Value::Never, self.failure_never) {
                (true, true) => failed = true,
                (true, false) => never = true,
                _ => {}
            }
            if last && matches!(stmt, syn::Stmt::Expr(_, None)) {
                value = v;
            }
        }
        self.quiet -= usize::from(after_shape_guard);
        self.local_paths.pop();
        self.scope.pop();
        self.failure_never = failed && !never;
        if self.failure_never {
            self.value_after_failure = Some(value);
            return Value::Never;
        }
        if never { Value::Never } else { value }
    }

    fn stmt(&mut self, stmt: &syn::Stmt) -> Value {
        match stmt {
            syn::Stmt::Local(local) => {
                // A `let` inside this one's value (a block's) has its own.
                let outer_why = (self.let_why.take(), self.why_wanted);
                self.why_wanted = !self.whys_off;
                let value = match &local.init {
                    Some(init) => {
                        let value = self.expr(&init.expr);
                        // A size the walk knows (`let (b, c, h, w) = xs.dims4()?`) is its
                        // own: a test of it is decided where it can be, and a test the
                        // contract's free sizes leave open runs either way for some input.
                        // (A tensor is no value of a shape: a test of its shape is one.)
                        let reads = self.reads_shape(&init.expr);
                        let tensors = matches!(
                            value,
                            Value::Tensor(_) | Value::Tensors(_) | Value::TensorsEach(..)
                        );
                        // (A tensor set under an undecided test of a shape is a flag of it.)
                        if self.shape_tests > 0 || (!tensors && reads) {
                            let mut names = PatNames::default();
                            names.visit_pat(&local.pat);
                            let names = names.0.iter().map(name_of);
                            match self.shape_tests == 0 && known_numbers(&value, &local.pat) {
                                true => self.shape_initialized.extend(names),
                                false => self.shape_derived.extend(names),
                            }
                        }
                        if let Some((_, diverge)) = &init.diverge {
                            // It runs only where the pattern does not match: as an undecided
                            // branch, nothing in it is reported.
                            let saved = self.scope.clone();
                            self.quiet += 1;
                            self.expr(diverge);
                            self.quiet -= 1;
                            self.scope = saved;
                            // `let [a, b] = x.dims() else { return .. };`: a leaving test of a
                            // shape, as an `if`'s.
                            if self.on_every_path()
                                && (self.reads_shape(&init.expr)
                                    || self.tests_success(&local.pat, &init.expr))
                            {
                                self.left_on_a_shape = true;
                            }
                        }
                        value
                    }
                    None => Value::Other,
                };
                // `let mask: Vec<u8> = ..`: host numbers of that dtype. A `collect` is a `Vec`
                // only where its turbofish or the `let`'s type says so (not a `BTreeSet`).
                let value = match (&value, &local.pat) {
                    (Value::Other, syn::Pat::Type(typed)) => {
                        match vec_element_dtype(&typed.ty, &|name| self.is_primitive(name)) {
                            Some(dtype) => Value::Numbers(dtype, Dim::Unknown),
                            None => value,
                        }
                    }
                    (Value::Numbers(..), syn::Pat::Type(typed))
                        if !is_vec_type(&typed.ty) || !self.is_primitive("Vec") =>
                    {
                        Value::Other
                    }
                    (Value::Numbers(..), pat)
                        if !matches!(pat, syn::Pat::Type(_))
                            && local.init.as_ref().is_some_and(|init| {
                                matches!(unparen(&init.expr), syn::Expr::MethodCall(m)
                                    if m.method == "collect" && m.turbofish.is_none())
                            }) =>
                    {
                        Value::Other
                    }
                    _ => value,
                };
                if let Some(init) = &local.init {
                    self.reborrows(std::iter::once(&*init.expr));
                }
                // `let ref mut r = h;` is a `&mut` of `h`.
                if let Some(init) = &local.init
                    && has_ref_mut(&local.pat)
                {
                    self.forget_in(|c| c.write_to(&init.expr));
                }
                // An initializer that never completes (`return`, a call certain to fail
                // under `?`): nothing after this `let` runs.
                let never = value == Value::Never;
                // After a failure certain under `?`, the rest is still checked (every mismatch
                // at once) with what the call would have given: a tensor of unknown type.
                let value = match never {
                    true if self.failure_never => self.failed_value.take().unwrap_or(Value::Other),
                    // Never bound (`shapes` shows Rust's `!`); what follows is not reached.
                    true => Value::Never,
                    false => value,
                };
                let value = match &local.init {
                    Some(init) if init.diverge.is_none() && !never => {
                        let value = self.fresh_sizes(&local.pat, &init.expr, value);
                        self.name_joined_size(&local.pat, value)
                    }
                    _ => value,
                };
                self.in_let = true;
                self.let_op = local
                    .init
                    .as_ref()
                    .map(|i| op_of(&i.expr))
                    .unwrap_or_default();
                if local.init.as_ref().is_some_and(|i| i.diverge.is_some()) {
                    self.bind_refutable(&local.pat, value);
                } else {
                    self.bind_pattern(&local.pat, value);
                    self.bind_let_layer(local);
                }
                self.in_let = false;
                (self.let_why, self.why_wanted) = outer_why;
                if never { Value::Never } else { Value::Other }
            }
            syn::Stmt::Item(_) => Value::Other,
            syn::Stmt::Expr(expr, _) => self.expr(expr),
            syn::Stmt::Macro(m) => self.mac(&m.mac),
        }
    }

    /// `let kv_len = kv_input.dim(1)?;` where that size is one two branches gave differently
    /// (`?1`): the code's own name for it (`{kv_len}`) from here on, wherever `?1` stands. The
    /// same value under another name, where the name is not a size already (as
    /// [`Walker::fresh_sizes`]).
    fn name_joined_size(&mut self, pat: &syn::Pat, value: Value) -> Value {
        if !self.inlined.is_empty() || self.closures > 0 {
            return value;
        }
        let pat = match pat {
            syn::Pat::Type(typed) => &*typed.pat,
            pat => pat,
        };
        let syn::Pat::Ident(ident) = pat else {
            return value;
        };
        if ident.subpat.is_some() || ident.by_ref.is_some() || ident.mutability.is_some() {
            return value;
        }
        let name = name_of(&ident.ident);
        let param = self.scope.first().is_some_and(|f| f.contains_key(&name));
        let Value::Int(dim) = &value else {
            return value;
        };
        let Some(joined) = dim.as_symbol().filter(|s| s.starts_with('?')) else {
            return value;
        };
        if param || self.fresh_sizes.contains(&name) {
            return value;
        }
        let joined = Dim::symbol(joined);
        let named = Dim::braced(&name);
        self.fresh_sizes.insert(name);
        let mut rename = |d: &Dim| {
            d.substitute(&mut |factor| match factor {
                Factor::Symbol(s) if Dim::symbol(s.clone()) == joined => Some(named.clone()),
                Factor::Symbol(s) => Some(Dim::symbol(s.clone())),
                Factor::Braced(text) => Some(Dim::braced(text)),
                _ => None,
            })
        };
        for frame in &mut self.scope {
            for binding in frame.values_mut() {
                binding.value = binding.value.map_dims(&mut rename);
            }
        }
        for (held, _) in self.subjects.values_mut() {
            *held = held.map_dims(&mut rename);
        }
        Value::Int(named)
    }

    /// `let (_, seq_len, _) = x.dims3()?;` or `let seq_len = x.dim(1)?;` where that size of the
    /// local tensor `x` is unknown: the size gets a name of its own (`{seq_len}`), and `x` has
    /// it from here on. Only in the function's own walk, outside closures (but a `Func`'s),
    /// for a name not bound so before nor a parameter's: each such size is one value for the whole walk (a loop's
    /// body is walked once, with what it changes forgotten).
    fn fresh_sizes(&mut self, pat: &syn::Pat, init: &syn::Expr, value: Value) -> Value {
        // A `Func`'s closure is a layer's `forward`: within one run of it, each such size is
        // one value too (and none of its names leaves it).
        if !self.inlined.is_empty() || self.closures > self.layer_bodies {
            return value;
        }
        let syn::Expr::Try(tried) = unparen(init) else {
            return value;
        };
        let syn::Expr::MethodCall(call) = unparen(&tried.expr) else {
            return value;
        };
        let syn::Expr::Path(receiver) = unparen(strip_refs(&call.receiver)) else {
            return value;
        };
        let Some(receiver) = receiver
            .path
            .get_ident()
            .filter(|_| receiver.qself.is_none())
            .map(name_of)
        else {
            return value;
        };
        let Some(Binding {
            value: Value::Tensor(t),
            origin,
            ..
        }) = self.lookup(&receiver).cloned()
        else {
            return value;
        };
        let pat = match pat {
            syn::Pat::Type(typed) => &*typed.pat,
            pat => pat,
        };
        // A plain immutable name, not yet a size of its own nor a parameter.
        let name_of_pat = |this: &Self, pat: &syn::Pat| match pat {
            syn::Pat::Ident(ident)
                if ident.subpat.is_none()
                    && ident.by_ref.is_none()
                    && ident.mutability.is_none() =>
            {
                let name = name_of(&ident.ident);
                let param = this.scope.first().is_some_and(|f| f.contains_key(&name));
                (!param && !this.fresh_sizes.contains(&name)).then_some(name)
            }
            _ => None,
        };
        let method = call.method.to_string();
        let n = match dims_count(&method) {
            Some(n) => n,
            None if method == "dim" && call.args.len() == 1 => {
                let (Value::Int(Dim::Unknown), Some(name)) = (&value, name_of_pat(self, pat))
                else {
                    return value;
                };
                let index = match unparen(&call.args[0]) {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(int),
                        ..
                    }) => int.base10_parse::<usize>().ok().map(DimIndex::Index),
                    syn::Expr::Path(p) => match self.path_value(p) {
                        Value::DimIndex(index) => Some(index),
                        _ => None,
                    },
                    _ => None,
                };
                let Some(candle_contracts_shapes::shape::Resolved::At(axis)) =
                    index.map(|index| t.shape.resolve(index))
                else {
                    return value;
                };
                let size = Dim::braced(&name);
                self.fresh_sizes.insert(name);
                let refined = t.with_shape(t.shape.clone().with_dim(axis, size.clone()));
                self.set(&receiver, Value::Tensor(refined), origin);
                return Value::Int(size);
            }
            _ => return value,
        };
        let (syn::Pat::Tuple(tuple), Value::Tuple(mut items)) = (pat, value.clone()) else {
            return value;
        };
        if tuple.elems.len() != n || items.len() != n {
            return value;
        }
        let mut renamed = false;
        for (item, elem) in items.iter_mut().zip(&tuple.elems) {
            if matches!(item, Value::Int(Dim::Unknown))
                && let Some(name) = name_of_pat(self, elem)
            {
                *item = Value::Int(Dim::braced(&name));
                self.fresh_sizes.insert(name);
                renamed = true;
            }
        }
        if !renamed {
            return value;
        }
        // `dimsN()` succeeded: `x` has rank `n` and these sizes.
        let refined = match t.shape.rank() {
            candle_contracts_shapes::Rank::Exactly(rank) if rank != n => {
                return Value::Tuple(items);
            }
            _ => Shape::new(
                items
                    .iter()
                    .map(|item| match item {
                        Value::Int(dim) => dim.clone(),
                        _ => Dim::Unknown,
                    })
                    .collect(),
            ),
        };
        self.set(&receiver, Value::Tensor(t.with_shape(refined)), origin);
        Value::Tuple(items)
    }

    /// Walks the function: its findings, its `let`s' types, its unchecked `if`s.
    fn run(mut self, f: Function<'_>) -> (Vec<Finding>, Vec<LetHint>, Vec<Unchecked>) {
        self.bind_params();
        self.read_let_layers();
        // A contracted function returns its tail: a certain failure there is the function's.
        self.taken = !f.glue;
        let mut tail = self.block(f.block);
        // A body that certainly fails early: its tail is still checked, every mismatch at once.
        if tail == Value::Never && self.failure_never {
            tail = self.value_after_failure.take().unwrap_or(Value::Never);
        }
        if let Some(expr) = tail_expr(f.block) {
            self.check_return(expr, &tail);
        }
        // No call can give a value of an uninhabited type, and no sizes pass a guard whose
        // relations contradict each other (`N > M, M > N`): the body never runs.
        if f.sig.inputs.iter().any(|input| match input {
            syn::FnArg::Typed(t) => uninhabited(&t.ty),
            syn::FnArg::Receiver(_) => false,
        }) || Facts::contradict(&self.contract.relations)
        {
            self.findings.clear();
        }
        (self.findings, self.hints, self.unchecked)
    }

    // ----- expressions -----

    fn expr(&mut self, expr: &syn::Expr) -> Value {
        if !self.mut_roots.is_empty() {
            self.guard_mut_roots(expr);
        }
        self.as_place_base = false;
        match expr {
            syn::Expr::Paren(p) => self.expr(&p.expr),
            syn::Expr::Group(g) => self.expr(&g.expr),
            syn::Expr::Lit(lit) => match &lit.lit {
                syn::Lit::Int(int) if int.suffix().starts_with('f') => Value::Float,
                syn::Lit::Int(int) => match int.base10_parse::<u64>() {
                    Ok(n) => Value::Int(Dim::lit(n)),
                    Err(_) => Value::Other,
                },
                syn::Lit::Float(_) => Value::Float,
                // `if true { .. }`: a condition the walk decides.
                syn::Lit::Bool(b) => Value::Bool(b.value),
                _ => Value::Other,
            },
            syn::Expr::Path(p) => self.path_value(p),
            // `&raw mut x` (or `&raw const x`, written through later): `x` may change.
            syn::Expr::RawAddr(r) => {
                self.expr(&r.expr);
                self.forget_in(|c| c.kept.extend(root(&r.expr)));
                if root(&r.expr).as_deref() == Some("self") {
                    self.subjects.clear();
                }
                Value::Other
            }
            syn::Expr::Reference(r) => {
                let value = self.expr(&r.expr);
                // `&mut self.cross_attn`: behind `&mut self`, only below that field.
                if r.mutability.is_some() {
                    self.forget_in(|c| c.write_to(&r.expr));
                }
                match value {
                    // `&m` of an `m: &Model` is a `&&Model` (see `kind_at`).
                    Value::Instance(_, Access::Ref | Access::Mut) => Value::Other,
                    // `&self.model` of an `Arc<Model>`: the pointer's own `impl`s still come
                    // first.
                    Value::Instance(key, Access::Shared) => Value::Instance(key, Access::Shared),
                    Value::Instance(key, _) if r.mutability.is_some() => {
                        Value::Instance(key, Access::Mut)
                    }
                    Value::Instance(key, _) => Value::Instance(key, Access::Ref),
                    value => value,
                }
            }
            syn::Expr::Try(t) => {
                let outer = std::mem::replace(&mut self.taken, true);
                let value = self.expr(&t.expr);
                self.taken = outer;
                // `Err(e)?` of std's `Err` returns, as `return Err(e.into())` does.
                if let syn::Expr::Call(call) = unparen(&t.expr)
                    && let syn::Expr::Path(p) = unparen(&call.func)
                    && p.qself.is_none()
                    && p.path.is_ident("Err")
                    && self.lookup("Err").is_none()
                    && self.is_primitive("Err")
                {
                    return Value::Never;
                }
                // `?` of a call certain to fail returns its error: no value comes out.
                if self.failed_call == Some(call_id(&t.expr)) {
                    self.failure_never = true;
                    self.failed_value = Some(value);
                    return Value::Never;
                }
                value
            }
            syn::Expr::Unary(u) => {
                let value = self.expr(&u.expr);
                match (&u.op, value) {
                    (syn::UnOp::Deref(_), Value::Instance(key, _)) => {
                        Value::Instance(key, Access::Owned)
                    }
                    (syn::UnOp::Deref(_), v) => v,
                    (syn::UnOp::Neg(_), Value::Tensor(t)) => Value::Tensor(t),
                    (syn::UnOp::Neg(_), Value::Float) => Value::Float,
                    // A signed number (`-1i64` in `Tensor::new(&[-1i64, 2], ..)`): no size.
                    (syn::UnOp::Neg(_), Value::Int(_)) => Value::Int(Dim::Unknown),
                    (syn::UnOp::Not(_), Value::Bool(value)) => Value::Bool(!value),
                    (syn::UnOp::Not(_), Value::Flag) => Value::Flag,
                    _ => Value::Other,
                }
            }
            syn::Expr::Cast(c) => {
                let value = self.expr(&c.expr);
                // Std's integer type, not a crate's of that name (`type u8 = u32;`).
                let to_int = matches!(self.kind(&c.ty, false), Kind::Int)
                    && matches!(&*c.ty, syn::Type::Path(p)
                        if p.qself.is_none()
                            && p.path.get_ident().is_some_and(|i| self.is_primitive(&name_of(i))));
                match (value, self.kind(&c.ty, false)) {
                    // A size stays itself where the type holds every size (`as usize`); a
                    // narrower one keeps only a number it holds (`300 as u8` is 44).
                    (Value::Int(d), _)
                        if to_int && holds_any_size(&c.ty) && !d.may_be_negative() =>
                    {
                        Value::Int(d)
                    }
                    (Value::Int(d), _)
                        if to_int && d.as_literal().is_some_and(|n| fits(n, &c.ty)) =>
                    {
                        Value::Int(d)
                    }
                    // An unsigned narrowing wraps: `n as u32` is `n % 2^32` for every size.
                    (Value::Int(d), _) if to_int && !d.may_be_negative() => {
                        match unsigned_modulus(&c.ty) {
                            Some(modulus) => Value::Int(d.rem(Dim::lit(modulus))),
                            None => Value::Int(Dim::Unknown),
                        }
                    }
                    (Value::Int(_) | Value::Float, Kind::Float) => Value::Float,
                    (_, Kind::Int) => Value::Int(Dim::Unknown),
                    _ => Value::Other,
                }
            }
            syn::Expr::Tuple(t) => {
                let items = t.elems.iter().map(|e| self.expr(e)).collect();
                self.reborrows(t.elems.iter());
                spelled_within_bounds(Value::Tuple(items))
            }
            syn::Expr::Range(r) => {
                let bound = |walker: &mut Self, e: &Option<Box<syn::Expr>>| {
                    e.as_ref().map(|e| match walker.expr(e) {
                        Value::Int(d) => d,
                        _ => Dim::Unknown,
                    })
                };
                let start = bound(self, &r.start);
                let end = bound(self, &r.end);
                let end = match r.limits {
                    syn::RangeLimits::Closed(_) => end.map(|e| e.add(Dim::lit(1))),
                    syn::RangeLimits::HalfOpen(_) => end,
                };
                Value::Range(start, end)
            }
            syn::Expr::Array(a) => {
                let items: Vec<Value> = a.elems.iter().map(|e| self.expr(e)).collect();
                self.reborrows(a.elems.iter());
                spelled_within_bounds(array_value(items))
            }
            // `[0u32; 4]`, `[[0f32; 4]; 2]`: the item so many times, where the count is a
            // small number (for `Tensor::new`).
            syn::Expr::Repeat(r) => {
                let item = self.expr(&r.expr);
                match self.expr(&r.len) {
                    Value::Int(n)
                        if matches!(item, Value::Int(_) | Value::Float | Value::Tuple(_)) =>
                    {
                        match n.as_literal().and_then(|n| usize::try_from(n).ok()) {
                            Some(n)
                                if n >= 1
                                    && n.saturating_mul(spelled_items(&item)) <= MAX_REPEATED =>
                            {
                                array_value(vec![item; n])
                            }
                            _ => Value::Other,
                        }
                    }
                    _ => Value::Other,
                }
            }
            syn::Expr::Block(b) => {
                let value = self.block(&b.block);
                if b.label.is_some() {
                    // A `break 'label` may skip what follows it in the block.
                    self.forget_in(|c| c.visit_block(&b.block));
                    Value::Other
                } else {
                    value
                }
            }
            syn::Expr::Unsafe(u) => self.block(&u.block),
            syn::Expr::TryBlock(t) => self.block(&t.block),
            syn::Expr::Const(c) => {
                self.block(&c.block);
                Value::Other
            }
            syn::Expr::If(i) => {
                let value = self.if_expr(i);
                if matches!(value, Value::Tensor(_)) {
                    self.note_why(&value, || {
                        "its branches give shapes that differ".to_string()
                    });
                }
                value
            }
            syn::Expr::Match(m) => {
                let value = self.match_expr(m);
                if matches!(value, Value::Tensor(_)) {
                    self.note_why(&value, || "its arms give shapes that differ".to_string());
                }
                value
            }
            syn::Expr::Let(l) => {
                let value = self.expr(&l.expr);
                if has_ref_mut(&l.pat) {
                    self.forget_in(|c| c.write_to(&l.expr));
                }
                self.bind_refutable_from(&l.pat, value, &l.expr);
                Value::Other
            }
            syn::Expr::ForLoop(f) => {
                // `for &d in x.dims() { if d != 1 { return .. } }`, `for i in 0..x.rank()`,
                // `for p in &xs.chunk(2, 0)?`: how many passes run, and so whether one leaves,
                // follows from a tensor: as a leaving test of a shape.
                let passes_on_a_shape = self.on_every_path()
                    && self.mentions_tensor(&f.expr)
                    && may_leave(&syn::Expr::Block(syn::ExprBlock {
                        attrs: Vec::new(),
                        label: None,
                        block: f.body.clone(),
                    }));
                let value = self.for_loop(f);
                if passes_on_a_shape && value != Value::Never {
                    self.left_on_a_shape = true;
                }
                value
            }
            // `while true { .. }` leaves as a `loop` does: only by `break` or `return`.
            syn::Expr::While(w)
                if matches!(unparen(&w.cond),
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Bool(b), .. }) if b.value) =>
            {
                self.endless_loop(&w.body)
            }
            syn::Expr::While(w) => {
                let mut changed = self.changes();
                changed.visit_expr(&w.cond);
                changed.visit_block(&w.body);
                self.forget(&changed);
                self.scope.push(BTreeMap::new());
                self.expr(&w.cond);
                let shape_test = self.reads_shape(&w.cond);
                self.quiet += 1;
                self.shape_tests += usize::from(shape_test);
                let outer = (
                    std::mem::take(&mut self.live_break),
                    std::mem::take(&mut self.live_continue),
                );
                self.block(&w.body);
                (self.live_break, self.live_continue) = outer;
                self.shape_tests -= usize::from(shape_test);
                self.quiet -= 1;
                self.scope.pop();
                self.forget(&changed);
                // `while x.rank() < 2 { return .. }`: as a leaving `if` on a shape.
                if self.on_every_path()
                    && self.reads_shape(&w.cond)
                    && may_leave(&syn::Expr::Block(syn::ExprBlock {
                        attrs: Vec::new(),
                        label: None,
                        block: w.body.clone(),
                    }))
                {
                    self.left_on_a_shape = true;
                }
                Value::Other
            }
            syn::Expr::Loop(l) => self.endless_loop(&l.body),
            syn::Expr::Closure(c) => {
                let layer_body = std::mem::take(&mut self.next_is_layer_body);
                let mut changed = self.changes();
                changed.visit_expr(&c.body);
                let saved = self.scope.clone();
                let saved_subjects = self.subjects.clone();
                self.closures += 1;
                self.layer_bodies += usize::from(layer_body);
                self.scope.push(BTreeMap::new());
                for (position, input) in c.inputs.iter().enumerate() {
                    match input {
                        syn::Pat::Type(typed) => match (&*typed.pat, self.kind(&typed.ty, false)) {
                            (syn::Pat::Ident(ident), Kind::Tensor) => {
                                self.bind_let(&ident.ident, Value::tensor_unknown())
                            }
                            _ => self.bind_unknown(&typed.pat),
                        },
                        // A `Func`'s closure takes `&Tensor` first (`FuncT`'s a `bool` then).
                        syn::Pat::Ident(ident)
                            if layer_body
                                && position == 0
                                && ident.by_ref.is_none()
                                && ident.subpat.is_none() =>
                        {
                            self.bind_let(&ident.ident, Value::tensor_unknown())
                        }
                        pat => self.bind_unknown(pat),
                    }
                }
                // The body may run any number of times.
                self.forget(&changed);
                // A layer's body: what it returns is the layer's `Result`, which `apply`
                // gives its caller. Its failures stay inside it.
                let outer = std::mem::replace(&mut self.taken, layer_body);
                let failure = (
                    self.failures,
                    self.failed_call.take(),
                    std::mem::take(&mut self.failure_never),
                    self.value_after_failure.take(),
                );
                // A `return` in the closure leaves the closure.
                let left = std::mem::take(&mut self.left_on_a_shape);
                self.expr(&c.body);
                self.left_on_a_shape = left;
                (
                    self.failures,
                    self.failed_call,
                    self.failure_never,
                    self.value_after_failure,
                ) = failure;
                self.taken = outer;
                self.closures -= 1;
                self.layer_bodies -= usize::from(layer_body);
                self.scope = saved;
                self.subjects = saved_subjects;
                self.forget(&changed);
                Value::Other
            }
            syn::Expr::Async(a) => {
                let mut changed = self.changes();
                changed.visit_block(&a.block);
                let saved = self.scope.clone();
                let saved_subjects = self.subjects.clone();
                self.closures += 1;
                self.forget(&changed);
                let left = std::mem::take(&mut self.left_on_a_shape);
                self.block(&a.block);
                self.left_on_a_shape = left;
                self.closures -= 1;
                self.scope = saved;
                self.subjects = saved_subjects;
                self.forget(&changed);
                Value::Other
            }
            syn::Expr::Await(a) => {
                self.expr(&a.base);
                Value::Other
            }
            syn::Expr::Return(r) => {
                if let Some(value_expr) = &r.expr {
                    // What a contracted function returns is its result: taken by its caller.
                    let outer = std::mem::replace(&mut self.taken, !self.f.glue);
                    let value = self.expr(value_expr);
                    self.taken = outer;
                    self.check_return(value_expr, &value);
                    if self.closures == 0 {
                        self.returned = Some(match self.returned.take() {
                            Some(before) => before.join(&value),
                            None => value,
                        });
                    }
                }
                Value::Never
            }
            syn::Expr::Break(b) => {
                if let Some(e) = &b.expr {
                    self.expr(e);
                }
                if self.dead == 0 {
                    self.live_break = true;
                }
                Value::Never
            }
            syn::Expr::Continue(_) => {
                if self.dead == 0 {
                    self.live_continue = true;
                }
                Value::Never
            }
            syn::Expr::Assign(a) => {
                self.mark_shape_derived(&a.left, &a.right);
                let outer_why = (self.let_why.take(), self.why_wanted);
                self.why_wanted = !self.whys_off;
                let value = self.expr(&a.right);
                if let Some(name) = place_local(&a.left) {
                    match self.let_why.take() {
                        Some((_, cause)) if vague(&value) => {
                            self.why_of.insert(name, cause);
                        }
                        _ => {
                            self.why_of.remove(&name);
                        }
                    }
                }
                (self.let_why, self.why_wanted) = outer_why;
                self.reborrows(std::iter::once(&*a.right));
                match place_local(&a.left) {
                    Some(name) if self.lookup(&name).is_some() => {
                        // An assignment keeps the place's Rust type: a tensor stays a tensor
                        // (`xs = layer.forward(&xs)?` of a layer the walk cannot see).
                        let value = match (value, self.lookup(&name).map(|b| &b.value)) {
                            (Value::Other, Some(Value::Tensor(_))) => Value::tensor_unknown(),
                            (value, _) => value,
                        };
                        let origin = matches!(value, Value::Tensor(_))
                            .then(|| Origin::Binding(Site::of(&a.left)));
                        self.set(&name, value, origin);
                        if name == "self" {
                            self.subjects.clear();
                        }
                    }
                    _ => {
                        self.expr(&a.left);
                        // `self.kv_cache = None;`: what a clause says the field holds where
                        // it is `Some` still holds.
                        let emptied = match unparen(&a.right) {
                            syn::Expr::Path(p)
                                if p.qself.is_none()
                                    && p.path.is_ident("None")
                                    && matches!(
                                        self.resolve(&["None".to_string()]),
                                        Resolved::Unknown
                                    ) =>
                            {
                                subject_text(&a.left).and_then(|text| {
                                    let held = self.subjects.get(&text)?.clone();
                                    matches!(held.0, Value::Optional(_)).then_some((text, held))
                                })
                            }
                            _ => None,
                        };
                        self.forget_in(|c| c.write_to(&a.left));
                        if let Some((text, held)) = emptied {
                            self.subjects.insert(text, held);
                        }
                    }
                }
                Value::Other
            }
            syn::Expr::Binary(b) => self.binary(b),
            syn::Expr::Field(field) => {
                if let Some(value) = self.subject_value(expr) {
                    return value;
                }
                if let Some(dim) = self.field_dim(field) {
                    return Value::Int(dim);
                }
                self.as_place_base = true;
                let base = self.expr(&field.base);
                match (base, &field.member) {
                    (Value::Tuple(items), syn::Member::Unnamed(i)) => {
                        items.get(i.index as usize).cloned().unwrap_or(Value::Other)
                    }
                    (Value::Instance(key, _), syn::Member::Named(name)) => {
                        self.field_value(&key, &name_of(name))
                    }
                    _ => Value::Other,
                }
            }
            syn::Expr::Index(i) => {
                if let Some((text, value)) = self.indexed_subject(i) {
                    self.operand(&i.index);
                    self.read_indexed.insert(text);
                    return value;
                }
                self.as_place_base = true;
                let base = self.expr(&i.expr);
                let index = self.operand(&i.index);
                index_value(base, index)
            }
            syn::Expr::Struct(lit) => {
                for field in &lit.fields {
                    self.expr(&field.expr);
                }
                self.reborrows(lit.fields.iter().map(|field| &field.expr));
                if let Some(rest) = &lit.rest {
                    self.expr(rest);
                }
                let segments = path_segments(&lit.path);
                match (&lit.qself, self.resolve(&segments)) {
                    (None, Resolved::Type(key)) => Value::Instance(key, Access::Owned),
                    _ => Value::Other,
                }
            }
            syn::Expr::MethodCall(call) => self.method_call(expr, call),
            syn::Expr::Call(call) => self.call(call),
            syn::Expr::Macro(m) => self.mac(&m.mac),
            _ => {
                // Struct literals, ranges, ...: nothing known, but what they may change is.
                self.forget_in(|c| c.visit_expr(expr));
                Value::Other
            }
        }
    }

    fn path_value(&mut self, p: &syn::ExprPath) -> Value {
        let segments = path_segments(&p.path);
        if p.qself.is_none()
            && let [name] = segments.as_slice()
            && let Some(binding) = self.lookup(name)
        {
            let value = binding.value.clone();
            // A tensor, or anything whose `let` lost what it was (`let k = cache.append(..)`).
            if matches!(value, Value::Tensor(_)) || self.why_of.contains_key(name) {
                let cause = self.why_of.get(name).cloned();
                let hint = value.hint();
                // A parameter as its clause states it (not after a loop or branch changed it).
                let param = self.is_param(name)
                    && self
                        .f
                        .contract
                        .clause(name)
                        .is_some_and(|clause| clause.spec.to_string() == hint);
                self.note_cause(&value, || match cause {
                    Some(cause) => (format!("from `{name}` (`{hint}`): {cause}"), cause),
                    None => {
                        let shown = match param {
                            true => format!("the contract gives `{name}` as `{hint}`"),
                            false => format!("`{name}` is `{hint}` here"),
                        };
                        (shown.clone(), shown)
                    }
                });
            }
            return value;
        }
        // std's `None`, where no item of the crate's is named so.
        if p.qself.is_none()
            && let [name] = segments.as_slice()
            && name == "None"
            && self.is_primitive(name)
        {
            return Value::Nothing;
        }
        if let [.., d, minus] = segments.as_slice()
            && d == "D"
        {
            match minus.as_str() {
                "Minus1" => return Value::DimIndex(DimIndex::FromEnd(1)),
                "Minus2" => return Value::DimIndex(DimIndex::FromEnd(2)),
                _ => {}
            }
        }
        if let [.., dtype, name] = segments.as_slice()
            && dtype == "DType"
            && let Some(dtype) = dtype_variant(name)
        {
            return Value::DType(dtype);
        }
        // `f32::NEG_INFINITY`, `u32::MAX` of std's primitive types: a float, an integer.
        if p.qself.is_none()
            && let [ty, constant] = segments.as_slice()
            && self.is_primitive(ty)
        {
            let float = matches!(ty.as_str(), "f32" | "f64");
            let integer = matches!(
                ty.as_str(),
                "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize"
            );
            match constant.as_str() {
                "MAX" | "MIN" if integer => return Value::Int(Dim::Unknown),
                "MAX" | "MIN" | "INFINITY" | "NEG_INFINITY" | "NAN" | "MIN_POSITIVE"
                | "EPSILON"
                    if float =>
                {
                    return Value::Float;
                }
                _ => {}
            }
        }
        match self.resolve(&segments) {
            Resolved::Const(Some(n)) => Value::Int(Dim::lit(n)),
            Resolved::Const(None) => Value::Other,
            // `const USE_POOL: bool = false;`: its value.
            Resolved::Flag(value) => Value::Bool(value),
            _ => Value::Other,
        }
    }

    /// The clause's type of a path the contract names (`self.head.weight()`).
    fn subject_value(&self, expr: &syn::Expr) -> Option<Value> {
        let text = subject_text(expr)?;
        // `conv.weight()` of a layer a `let` built: its place's.
        if let Some((root, rest)) = text.split_once('.')
            && let Some(place) = self
                .lookup(root)
                .and_then(|binding| binding.place.as_deref())
                .filter(|place| place.contains(LOCAL_LAYER))
        {
            return self.subject_value_of(&format!("{place}.{rest}"));
        }
        self.subject_value_of(&text)
    }

    /// The clause's type of a path the contract names, by its text without spaces.
    fn subject_value_of(&self, text: &str) -> Option<Value> {
        let root = text.split(['.', '(']).next()?;
        if !self.is_param(root) && !root.contains(LOCAL_LAYER) {
            return None;
        }
        let (value, _) = self.subjects.get(text)?;
        Some(value.clone())
    }

    fn subject_origin(&self, expr: &syn::Expr) -> Option<Origin> {
        let text = subject_text(strip_refs(expr))?;
        match text.split_once('.') {
            None => self.lookup(&text)?.origin.clone(),
            Some(_) => self.subjects.get(&text)?.1.clone(),
        }
    }

    /// A `loop` (or `while true`): what follows runs only after a `break`.
    fn endless_loop(&mut self, body: &syn::Block) -> Value {
        let mut changed = self.changes();
        changed.visit_block(body);
        self.forget(&changed);
        let outer = (
            std::mem::take(&mut self.live_break),
            std::mem::take(&mut self.live_continue),
        );
        self.block(body);
        let breaks = self.live_break;
        (self.live_break, self.live_continue) = outer;
        self.forget(&changed);
        // A `loop` no `break` leaves (in a macro's tokens neither), or whose every `break` is
        // after a statement that never completes on every pass (`loop { if x.rank() < 2 {
        // return .. } break; }` of a known rank): nothing after it runs (a `return` or `?` in
        // it leaves the function).
        match (may_break(body) && breaks, self.hidden_jump(body)) {
            (true, _) => Value::Other,
            // Only a macro of the crate's (`stop!()`), or a labelled `break`, may leave it: its
            // value is unknown, and what follows may never run.
            (false, true) => {
                if self.on_every_path() {
                    self.left_on_a_shape = true;
                }
                Value::Other
            }
            (false, false) => Value::Never,
        }
    }

    fn if_expr(&mut self, i: &syn::ExprIf) -> Value {
        self.scope.push(BTreeMap::new());
        // A branch may be code that never runs for the shapes the contract states (a test of
        // a shape, a config flag for another layout): only a branch that certainly runs is
        // reported in.
        // `if let Some(t) = t` of an `Option` argument under its clause: a caller may give
        // `Some`, with its clause's dims, so the branch runs for some call. (Where it is
        // `None`, what needs a dim only it binds is unchecked: `else` stays quiet.)
        let some_argument = match &*i.cond {
            syn::Expr::Let(l) => self.is_some_pattern(&l.pat) && self.is_option_argument(&l.expr),
            _ => false,
        };
        // `if let Some((prev_k, prev_v)) = &self.kv_cache`: the `else` branch is where the
        // field is `None`.
        let absent = match &*i.cond {
            syn::Expr::Let(l) if self.is_any_some_pattern(&l.pat) => self.absent_sizes(&l.expr),
            _ => Vec::new(),
        };
        // `if self.use_flash_attn` of a flag every constructor takes from a config: either
        // branch runs for some construction, so both are reported in.
        let either_flag = self.is_either_flag(&i.cond);
        // `if seqlen_offset > 0` of an integer parameter the contract leaves free: a caller
        // may give a value for either branch.
        let (free_then, free_else) = self.free_integer_condition(&i.cond);
        let (verdict, fact) = self.condition(&i.cond);
        let fact = match (fact, absent.is_empty()) {
            (None, false) => Some(BranchFact {
                in_then: false,
                values: absent,
            }),
            (fact, _) => fact,
        };
        let quiet_then = verdict != Some(true) && !some_argument && !either_flag && !free_then;
        let quiet_else = verdict != Some(false) && !either_flag && !free_else;
        if !self.whys_off
            && self.quiet == 0
            && self.inlined.is_empty()
            && verdict.is_none()
            && branches_call(i)
        {
            let cond = quoted(&i.cond);
            let what = match (quiet_then, quiet_else && i.else_branch.is_some()) {
                (true, true) => Some(format!("`if {cond}`: neither branch is checked")),
                (true, false) => Some(format!("`if {cond}`: its branch is not checked")),
                (false, true) => Some(format!("`if {cond}`: its `else` is not checked")),
                (false, false) => None,
            };
            if let Some(what) = what {
                self.unchecked.push(Unchecked {
                    site: Site::of(&i.cond),
                    what,
                });
            }
        }
        let mut before = self.scope.clone();
        before.pop();
        let shape_test = verdict.is_none() && self.reads_shape(&i.cond);
        self.shape_tests += usize::from(shape_test);
        // A branch the condition certainly rules out never runs: it adds nothing.
        self.quiet += usize::from(quiet_then);
        let then = match verdict {
            Some(false) => Value::Never,
            _ => self.block(&i.then_branch),
        };
        self.quiet -= usize::from(quiet_then);
        self.scope.pop();
        let then_scope = std::mem::replace(&mut self.scope, before.clone());
        self.quiet += usize::from(quiet_else);
        let otherwise = match (&i.else_branch, verdict) {
            // Certainly true: no path goes around the branch (what it assigns holds after).
            (_, Some(true)) => Value::Never,
            (Some((_, e)), _) => self.expr(e),
            (None, _) => Value::Other,
        };
        self.quiet -= usize::from(quiet_else);
        self.shape_tests -= usize::from(shape_test);
        if verdict.is_none()
            && (then == Value::Never || otherwise == Value::Never)
            && self.on_every_path()
            && self.reads_shape(&i.cond)
        {
            self.left_on_a_shape = true;
        }
        let else_scope = std::mem::take(&mut self.scope);
        let mut joiner = self.joiner();
        joiner.fact = fact;
        self.scope = match (&then, &otherwise) {
            (Value::Never, _) => else_scope,
            (_, Value::Never) => then_scope,
            _ => merge_with(&then_scope, &else_scope, &mut joiner),
        };
        let value = match (&i.else_branch, verdict) {
            // The one branch that runs.
            (_, Some(true)) => then,
            (Some(_), Some(false)) => otherwise,
            (Some(_), None) => then.join_with(&otherwise, &mut joiner),
            (None, _) => Value::Other,
        };
        self.joined(joiner);
        value
    }

    /// The sizes that are 0 where an `Option` field the contract states is `None`
    /// (`&self.kv_cache` or `self.kv_cache.as_ref()`, as the body found it): each dim name
    /// a clause through `self.kv_cache?` gives with `else P = 0` (the guard bound it so), and
    /// each that only the clauses through `self.kv_cache?` state, no other clause, relation,
    /// value rule or field. Where the field is `None` nothing binds such a name, so any size may
    /// stand for it, and 0 makes the `None` branch's sizes the `Some` branch's: no cached
    /// step is `P + T` with `P` 0. A mismatch for every size is one for 0 too: certain on
    /// both branches. Only in the function's own walk, outside closures and loops (where an
    /// earlier run may have changed the field); empty where none holds.
    fn absent_sizes(&mut self, scrutinee: &syn::Expr) -> Vec<(Factor, Dim)> {
        let mut expr = scrutinee;
        loop {
            expr = match expr {
                syn::Expr::Paren(p) => &p.expr,
                syn::Expr::Group(g) => &g.expr,
                syn::Expr::Reference(r) if r.mutability.is_none() => &r.expr,
                syn::Expr::MethodCall(m) if m.method == "as_ref" && m.args.is_empty() => {
                    &m.receiver
                }
                _ => break,
            };
        }
        // `&cache.kvs[block_idx]`, first read here: no value so far holds what only its
        // clause binds.
        let indexed = match expr {
            syn::Expr::Index(index) => self.indexed_subject(index).map(|(text, _)| text),
            _ => None,
        };
        let Some(base) = indexed
            .clone()
            .or_else(|| subject_text(expr))
            .filter(|base| base.contains('.'))
        else {
            return Vec::new();
        };
        let optional = format!("{base}?");
        let as_found = matches!(self.subjects.get(&base),
            Some((Value::Optional(_), Some(Origin::Clause(origin)))) if *origin == optional);
        let first_use = match expr {
            _ if indexed.is_some() => !self.read_indexed.contains(&base),
            syn::Expr::Field(field) => first_use_of_field(self.f.block, field, true),
            _ => false,
        };
        if !as_found
            || !first_use
            || !self.inlined.is_empty()
            || self.closures > 0
            || self.loop_passes > 0
        {
            return Vec::new();
        }
        let symbols =
            |dim: &Dim| -> Vec<String> { dim.symbols().into_iter().map(str::to_string).collect() };
        let shape_symbols = |spec: &TensorType| -> Vec<String> {
            spec.shape
                .front()
                .iter()
                .chain(spec.shape.back())
                .flat_map(symbols)
                .collect()
        };
        let mut own = BTreeSet::new();
        let mut elsewhere: BTreeSet<String> = BTreeSet::new();
        // `else P = 0`: the guard bound `P` to 0 where the path found `None`, whatever else
        // names it.
        let mut stated = BTreeSet::new();
        for contract in [self.f.contract, &self.contract] {
            for (subject, dim) in &contract.absent_zero {
                let subject: String = subject.split_whitespace().collect();
                if subject.starts_with(&optional) {
                    stated.insert(dim.clone());
                }
            }
            for clause in &contract.clauses {
                let subject: String = clause.subject.split_whitespace().collect();
                if subject.starts_with(&optional) {
                    own.extend(shape_symbols(&clause.spec));
                } else {
                    elsewhere.extend(shape_symbols(&clause.spec));
                }
            }
            for relation in &contract.relations {
                elsewhere.extend(symbols(&relation.lhs));
                elsewhere.extend(symbols(&relation.rhs));
            }
            for (name, value) in &contract.facts {
                elsewhere.insert(name.clone());
                elsewhere.extend(symbols(value));
            }
            elsewhere.extend(contract.fields.iter().map(|(_, dim)| dim.clone()));
            elsewhere.extend(contract.named_elsewhere.iter().cloned());
        }
        // A parameter's name, or any item's (a constant of this crate or another), is a
        // value, never free.
        let free: Vec<String> = own
            .difference(&elsewhere)
            .chain(&stated)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|name| {
                !name.starts_with('?') && self.lookup(name).is_none() && !self.names_an_item(name)
            })
            .cloned()
            .collect();
        for name in &free {
            self.absent_names.insert(name.clone(), base.clone());
        }
        free.into_iter()
            .map(|name| (Factor::Symbol(name), Dim::lit(0)))
            .collect()
    }

    /// Whether a condition is a `bool` field of `self` (or its negation) that every
    /// constructor sets from a config's field, as the body found it (see [`either_value`]),
    /// in the function's own walk.
    fn is_either_flag(&self, cond: &syn::Expr) -> bool {
        let cond = match unparen(cond) {
            syn::Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Not(_),
                expr,
                ..
            }) => unparen(expr),
            cond => cond,
        };
        let syn::Expr::Field(field) = cond else {
            return false;
        };
        // The first the body says of the flag: no earlier test has ruled a value out on this
        // path (`if self.flag { return .. }` before, an enclosing `if !self.flag`).
        self.inlined.is_empty()
            && subject_text(cond).is_some_and(|text| {
                text.starts_with("self.") && self.subjects.contains_key(&either_value(&text))
            })
            && first_use_of_field_with(self.f.block, field, false, &|name| {
                self.leaves_field_alone(name, &field_name(field), &mut BTreeSet::new())
            })
            && !self.called_where_field_is_read(&field_name(field))
    }

    /// Whether code may have tested the flag before this method runs, so that it runs for one
    /// value only. The type's methods that may test it: those naming the field, and those
    /// calling such a one (`check()` calling `self.is_flash()`). Yes where one of them calls
    /// this method (`if self.use_flash_attn { .. } else { self.eager(..) }`, `Self::flash(self,
    /// ..)`), or where one of them other than this method is called from outside the type's
    /// methods (`self.attn.check()?` or `attn.validate()?` before `attn.forward(..)`), both by
    /// name.
    fn called_where_field_is_read(&self, field: &str) -> bool {
        let Some(owner) = self.f.owner else {
            return true;
        };
        // The bodies read may be the macro's cached file's: tokens built from them must be
        // proc-macro2's own.
        let _file_tokens = crate::index::FileTokens::enter(self.index);
        let name = name_of(&self.f.sig.ident);
        // Methods test a built value; a constructor naming the field sets it.
        let own: Vec<&FnDef> = self
            .index
            .fns
            .iter()
            .filter(|def| def.owner.as_deref() == Some(owner) && def.sig.receiver().is_some())
            .collect();
        let mut testing: BTreeSet<String> = own
            .iter()
            .filter(|def| def.name != name && block_names(def.block, field))
            .map(|def| def.name.clone())
            .collect();
        loop {
            let more: Vec<String> = own
                .iter()
                .filter(|def| def.name != name && !testing.contains(&def.name))
                .filter(|def| testing.iter().any(|t| calls_method(def.block, t)))
                .map(|def| def.name.clone())
                .collect();
            if more.is_empty() {
                break;
            }
            testing.extend(more);
        }
        if own
            .iter()
            .any(|def| testing.contains(&def.name) && calls_method(def.block, &name))
        {
            return true;
        }
        let krate = self.index.modules[self.f.module].krate;
        self.index.fns.iter().any(|def| {
            def.owner.as_deref() != Some(owner)
                && self.index.modules[def.module].krate == krate
                && testing.iter().any(|t| calls_method(def.block, t))
        })
    }

    /// Whether a call `self.name(..)` of this type's own method (one, in sight) certainly
    /// neither reads nor changes the field `field`: its body never names it, and every other
    /// `self` in it is a field other than it or a call of a method of which the same holds
    /// (candle's llama calls `self.apply_rotary_emb(..)` before `if self.use_flash_attn`).
    fn leaves_field_alone(&self, name: &str, field: &str, seen: &mut BTreeSet<String>) -> bool {
        if !seen.insert(name.to_string()) {
            return true;
        }
        if seen.len() > 16 {
            return false;
        }
        let Some(owner) = self.f.owner else {
            return false;
        };
        let [id] = self.index.methods(owner, name) else {
            return false;
        };
        let callee = &self.index.fns[*id];
        if !self.index.trait_impl_methods(owner, name).is_empty() {
            return false;
        }
        let mut uses = Vec::new();
        if !self_uses(callee.block, field, &mut uses) {
            return false;
        }
        uses.iter()
            .all(|method| self.leaves_field_alone(method, field, seen))
    }

    /// Whether `expr` is std's `Some(..)` written out (`Some(&mask)`): an `Option` that is
    /// certainly `Some`.
    fn is_some_call(&self, expr: &syn::Expr) -> bool {
        matches!(unparen(expr), syn::Expr::Call(call)
            if call.args.len() == 1
                && matches!(unparen(&call.func), syn::Expr::Path(p)
                    if p.qself.is_none() && p.path.is_ident("Some"))
                && self.is_primitive("Some"))
    }

    /// Whether `name` may name an item where the body stands: one of the crates read or
    /// another crate's (a constant, a unit variant through a `use`), a generic parameter,
    /// an item of the body, or anything a glob `use` of the body may bring.
    fn names_an_item(&self, name: &str) -> bool {
        self.local_paths
            .iter()
            .any(|frame| frame.contains_key(name) || frame.contains_key(""))
            || !matches!(self.resolve(&[name.to_string()]), Resolved::Unknown)
    }

    /// Whether a pattern is `Some(..)` of std's `Some` holding a pattern that matches every
    /// value (names, `_`, tuples and references of them): it matches every `Some`.
    fn is_any_some_pattern(&self, pat: &syn::Pat) -> bool {
        // A name binds only where it names nothing: `None`, a constant or a unit variant in
        // scope (`Some((prev, None))`, `Some((prev, ZERO))`, `Some((prev, Full))`) matches
        // some values only. Lowercase, as Rust names bindings, and no item of the name.
        let binds = |ident: &syn::PatIdent| {
            let name = name_of(&ident.ident);
            ident.subpat.is_none()
                && name.starts_with(|c: char| c.is_lowercase() || c == '_')
                && !self.names_an_item(&name)
        };
        fn matches_all(pat: &syn::Pat, binds: &dyn Fn(&syn::PatIdent) -> bool) -> bool {
            match pat {
                syn::Pat::Ident(ident) => binds(ident),
                syn::Pat::Wild(_) | syn::Pat::Rest(_) => true,
                syn::Pat::Tuple(tuple) => tuple.elems.iter().all(|p| matches_all(p, binds)),
                syn::Pat::Reference(r) => matches_all(&r.pat, binds),
                syn::Pat::Paren(p) => matches_all(&p.pat, binds),
                _ => false,
            }
        }
        matches!(pat, syn::Pat::TupleStruct(some)
            if some.qself.is_none()
                && some.path.is_ident("Some")
                && some.elems.len() == 1
                && matches_all(&some.elems[0], &binds)
                && self.is_primitive("Some"))
    }

    /// Whether a pattern is `Some(t)` (or `Some(_)`, `Some(ref t)`) of std's `Some`: it
    /// matches every `Some`.
    fn is_some_pattern(&self, pat: &syn::Pat) -> bool {
        match pat {
            syn::Pat::TupleStruct(some) => {
                some.qself.is_none()
                    && some.path.is_ident("Some")
                    && some.elems.len() == 1
                    && matches!(
                        &some.elems[0],
                        syn::Pat::Wild(_) | syn::Pat::Ident(syn::PatIdent { subpat: None, .. })
                    )
                    && self.is_primitive("Some")
            }
            _ => false,
        }
    }

    /// Whether `expr` is an `Option` argument of the function as its caller gave it, under
    /// its clause (`t`, `&t`, `t.as_ref()`), in the function's own walk: the first mention of
    /// the name in the body (nothing before may have tested or changed it), no item of the
    /// body's blocks named so (nor a macro that may make one), and no relation on a dim only
    /// its clause binds (one may leave no `Some` a valid call).
    fn is_option_argument(&self, expr: &syn::Expr) -> bool {
        let syn::Expr::Path(p) = option_view(expr) else {
            return false;
        };
        let (Some(name), true) = (p.path.get_ident(), self.inlined.is_empty()) else {
            return false;
        };
        let name = name_of(name);
        let as_given = self.lookup(&name).is_some_and(|binding| {
            matches!(binding.value, Value::Optional(_))
                && matches!(&binding.origin, Some(Origin::Clause(subject)) if *subject == name)
        });
        let shadowed = self
            .local_paths
            .iter()
            .any(|frame| frame.contains_key(&name) || frame.contains_key(""));
        as_given
            && !shadowed
            && first_mention(self.f.block, &name).is_some_and(|first| std::ptr::eq(first, p))
            && !self.relation_on_optional_dims(&name)
    }

    /// For `x > 0` (`>`, `>=`, `<`, `<=`, `==`, `!=` against an integer literal, either side)
    /// of an unsigned integer parameter `x` that the contract leaves free, whether some value
    /// of its type makes the condition true, and whether some makes it false: where a caller
    /// may give a value for a branch, it runs for some call, as the `Some` branch of an
    /// `Option` argument does. Free: a plain parameter (not `mut`, never rebound, no item of
    /// its name), first named in this condition and in no macro (nothing before depends on
    /// it), named by no clause but the `return` one (checked after) and by no relation, fact
    /// or field of the contract, and every value able to reach the function (see
    /// [`Walker::any_value_reaches`]); in the function's own walk, outside closures and
    /// loops. `(false, false)` otherwise.
    fn free_integer_condition(&self, cond: &syn::Expr) -> (bool, bool) {
        let syn::Expr::Binary(b) = unparen(cond) else {
            return (false, false);
        };
        let literal = |e: &syn::Expr| match unparen(e) {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(int),
                attrs,
            }) if attrs.is_empty() => int.base10_parse::<u64>().ok(),
            _ => None,
        };
        fn param(e: &syn::Expr) -> Option<(String, &syn::ExprPath)> {
            match unparen(e) {
                syn::Expr::Path(p) if p.qself.is_none() => {
                    p.path.get_ident().map(|i| (name_of(i), p))
                }
                _ => None,
            }
        }
        use syn::BinOp;
        // As `x OP k`, the literal moved to the right (`0 < x` is `x > 0`).
        let (name, path, k, op) = match (
            param(&b.left),
            literal(&b.right),
            literal(&b.left),
            param(&b.right),
        ) {
            (Some((name, path)), Some(k), _, _) => (name, path, k, b.op),
            (_, _, Some(k), Some((name, path))) => {
                let flipped = match b.op {
                    BinOp::Lt(t) => BinOp::Gt(syn::token::Gt(t.spans[0])),
                    BinOp::Le(t) => BinOp::Ge(syn::token::Ge(t.spans)),
                    BinOp::Gt(t) => BinOp::Lt(syn::token::Lt(t.spans[0])),
                    BinOp::Ge(t) => BinOp::Le(syn::token::Le(t.spans)),
                    other => other,
                };
                (name, path, k, flipped)
            }
            _ => return (false, false),
        };
        let Some(max) = unsigned_parameter(self.f.sig, &name, &|n| self.is_primitive(n)) else {
            return (false, false);
        };
        // (Some value makes it true, some makes it false) over `0..=max`.
        let possible = match op {
            BinOp::Gt(_) => (k < max, true),
            BinOp::Ge(_) => (k <= max, k >= 1),
            BinOp::Lt(_) => (k >= 1, k <= max),
            BinOp::Le(_) => (true, k < max),
            BinOp::Eq(_) => (k <= max, true),
            BinOp::Ne(_) => (true, k <= max),
            _ => return (false, false),
        };
        // The function walked (in the macro too, which walks its own tokens).
        let id = self.own_id;
        if !self.is_param(&name)
            || !self.inlined.is_empty()
            || self.closures > 0
            || self.loop_passes > 0
            || !free_up_to(self.f.block, &name, path)
            || !id.is_some_and(|id| self.any_value_reaches(id))
        {
            return (false, false);
        }
        // Named by the contract anywhere but its `return` clause: a dim, a value bound.
        if [self.f.contract, &self.contract]
            .iter()
            .any(|contract| names_outside_return(contract, &name))
        {
            return (false, false);
        }
        possible
    }

    /// Whether every value of an unsigned parameter of `index.fns[id]` may reach it: the
    /// function is one other crates may call with any value (not under `cfg`, nor in a
    /// module that is). A private function's callers are not followed: whether a call in sight
    /// runs, and with what else, the walk cannot be sure of (a review found dead calls, calls
    /// after a check in a closure or a loop, and other arguments that fail the callee first).
    fn any_value_reaches(&self, id: FnId) -> bool {
        let f = &self.index.fns[id];
        !f.conditional
            && !self.index.modules[f.module].conditional
            && f.sig.asyncness.is_none()
            && root_for_other_crates(self.index, f)
    }

    /// Whether a relation or fact of the contract names a dim that only the clause of the
    /// `Option` argument `name` binds (no clause of an argument that is always given does).
    fn relation_on_optional_dims(&self, name: &str) -> bool {
        let optional_params: BTreeSet<String> = self
            .f
            .sig
            .inputs
            .iter()
            .filter_map(|input| match input {
                syn::FnArg::Typed(typed) => match &*typed.pat {
                    // An `Option` (through an alias too), or a type the walk cannot read.
                    syn::Pat::Ident(ident)
                        if !matches!(
                            self.kind(&typed.ty, true),
                            Kind::Tensor | Kind::Int | Kind::Float
                        ) =>
                    {
                        Some(name_of(&ident.ident))
                    }
                    _ => None,
                },
                syn::FnArg::Receiver(_) => None,
            })
            .collect();
        let symbols = |spec: &TensorType| -> BTreeSet<String> {
            spec.shape
                .front()
                .iter()
                .chain(spec.shape.back())
                .flat_map(|dim| dim.symbols().into_iter().map(str::to_string))
                .collect()
        };
        let mut own = BTreeSet::new();
        let mut always = BTreeSet::new();
        for clause in &self.f.contract.clauses {
            let root = clause
                .subject
                .split(['.', '(', '[', '?'])
                .next()
                .unwrap_or("");
            if clause.subject == name {
                own.extend(symbols(&clause.spec));
            } else if !clause.subject.contains('?') && !optional_params.contains(root) {
                always.extend(symbols(&clause.spec));
            }
        }
        always.extend(self.f.contract.fields.iter().map(|(_, dim)| dim.clone()));
        let only_own: BTreeSet<&String> = own.difference(&always).collect();
        let named = |dim: &Dim| {
            dim.symbols()
                .iter()
                .any(|s| only_own.contains(&s.to_string()))
        };
        // The function's own contract: the walk's keeps no relation on such a dim.
        self.f
            .contract
            .relations
            .iter()
            .any(|relation| named(&relation.lhs) || named(&relation.rhs))
            || self
                .f
                .contract
                .facts
                .iter()
                .any(|(dim, value)| only_own.contains(dim) || named(value))
    }

    /// A [`Joiner`] for one pair of paths: naming only in the function's own walk (a helper
    /// followed at each call would give two calls one name), outside closures (run any number
    /// of times) and outside a loop's trial passes.
    fn joiner(&self) -> Joiner {
        let named = self.inlined.is_empty() && self.closures == 0 && self.loop_passes == 0;
        Joiner {
            memo: BTreeMap::new(),
            count: named.then_some(self.joined),
            fact: None,
            facts: self.facts.clone(),
        }
    }

    /// Takes back the count of a [`Walker::joiner`].
    fn joined(&mut self, joiner: Joiner) {
        if let Some(count) = joiner.count {
            self.joined = count;
            for ((first, second), name) in joiner.memo {
                if let Some(name) = name.as_symbol().filter(|s| s.starts_with('?')) {
                    // What holds for both sizes holds for the name (`?1` of `T` or `P + T`
                    // is at most `P + T`).
                    self.facts
                        .set_alternatives(name, first.clone(), second.clone());
                    self.join_sizes.insert(name.to_string(), (first, second));
                }
            }
        }
    }

    /// The names of sizes two branches gave differently in a hint's type (`?1` in
    /// `f32[B, ?1, D]`), each with the two sizes, nested names first.
    fn joins_in(&self, ty: &str) -> Vec<Join> {
        let mut joins: Vec<Join> = Vec::new();
        let mut pending: Vec<String> = join_names(ty);
        while let Some(name) = pending.pop() {
            if joins.iter().any(|seen| seen.name == name) {
                continue;
            }
            let Some((first, second)) = self.join_sizes.get(&name) else {
                continue;
            };
            let (first, second) = (first.to_string(), second.to_string());
            pending.extend(join_names(&first));
            pending.extend(join_names(&second));
            let by = match self.activation_joins.contains(&name) {
                true => "the activation's variant (`Swiglu` halves the last dim)",
                false => "the branch taken",
            };
            joins.push(Join {
                name,
                first,
                second,
                by: by.to_string(),
            });
        }
        joins.sort_by_key(|join| join.name[1..].parse::<usize>().unwrap_or(usize::MAX));
        joins
    }

    /// The sizes of a hint's type that are 0 where an `Option` field is `None`, each with
    /// the field.
    fn absent_in(&self, ty: &str) -> Vec<(String, String)> {
        let names: BTreeSet<&str> = ty
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .collect();
        self.absent_names
            .iter()
            .filter(|(name, _)| names.contains(name.as_str()))
            .map(|(name, field)| (name.clone(), field.clone()))
            .collect()
    }

    /// Walks an `if`'s condition; whether it is certainly true or false, where it compares
    /// two sizes the walk knows (`x.dim(1)? == 8` with `x: f32[N, 4]` is false), and what a
    /// comparison of a size with another makes true in one branch (`n_rep == 1`).
    fn condition(&mut self, cond: &syn::Expr) -> (Option<bool>, Option<BranchFact>) {
        use syn::BinOp;
        // `!self.multi_query`: the other way round.
        if let syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Not(_),
            expr,
            ..
        }) = cond
        {
            let (verdict, _) = self.condition(expr);
            return (verdict.map(|v| !v), None);
        }
        if let syn::Expr::Paren(inner) = cond {
            return self.condition(&inner.expr);
        }
        if let syn::Expr::Let(l) = cond
            && let Some(verdict) = self.dims_result_verdict(l)
        {
            self.expr(cond);
            return (Some(verdict), None);
        }
        // `a && b`, `a || b` (no `let` in them): the right one runs only where the left one
        // does not decide, so it is reported in only where the left one certainly lets it run.
        if let syn::Expr::Binary(b) = cond
            && matches!(b.op, BinOp::And(_) | BinOp::Or(_))
            && !has_let(cond)
        {
            let and = matches!(b.op, BinOp::And(_));
            let (left, _) = self.condition(&b.left);
            let runs = left == Some(and);
            // What it changes holds after it only where it certainly runs; where it may not,
            // what it may change is unknown after it (and nothing where it never runs).
            let saved = (!runs).then(|| (self.scope.clone(), self.subjects.clone()));
            self.quiet += usize::from(!runs);
            let (right, _) = self.condition(&b.right);
            self.quiet -= usize::from(!runs);
            if let Some((scope, subjects)) = saved {
                (self.scope, self.subjects) = (scope, subjects);
                if left.is_none() {
                    self.forget_in(|c| c.visit_expr(&b.right));
                }
            }
            // `false && _` is false and `true || _` true; so is `_ && false`, `_ || true`.
            let verdict = match (left, right) {
                (Some(l), _) if l != and => Some(l),
                (Some(_), r) => r,
                (None, Some(r)) if r != and => Some(r),
                (None, _) => None,
            };
            return (verdict, None);
        }
        // `x.dims2().is_ok()` of a tensor of known rank.
        if let syn::Expr::MethodCall(m) = unparen(cond)
            && m.args.is_empty()
            && (m.method == "is_ok" || m.method == "is_err")
            && let syn::Expr::MethodCall(dims) = unparen(&m.receiver)
            && let Some(fits) = self.dims_call_fits(dims)
        {
            // Its receiver is a name: walking it changes nothing (and the failing `dimsN`
            // is looked at, not taken).
            return (Some(fits == (m.method == "is_ok")), None);
        }
        let syn::Expr::Binary(b) = cond else {
            // A flag the contract states (`if self.multi_query`).
            return match self.expr(cond) {
                Value::Bool(value) => (Some(value), None),
                _ => (None, None),
            };
        };
        let equal = match b.op {
            BinOp::Eq(_) => true,
            BinOp::Ne(_) => false,
            BinOp::Gt(_) | BinOp::Lt(_) | BinOp::Ge(_) | BinOp::Le(_) => {
                let (left, right) = (self.operand(&b.left), self.operand(&b.right));
                // Two numbers (`x.rank() < 2` of a known rank): decided.
                if let (Value::Int(l), Value::Int(r)) = (&left, &right)
                    && let (Some(l), Some(r)) = (l.as_constant(), r.as_constant())
                {
                    let verdict = match b.op {
                        BinOp::Gt(_) => l > r,
                        BinOp::Lt(_) => l < r,
                        BinOp::Ge(_) => l >= r,
                        _ => l <= r,
                    };
                    return (Some(verdict), None);
                }
                return (None, zero_in_one_branch(b.op, &left, &right));
            }
            _ => {
                self.expr(cond);
                return (None, None);
            }
        };
        let (left, right) = (self.operand(&b.left), self.operand(&b.right));
        // Two known `bool`s (`USE_POOL == false` of a constant).
        if let (Value::Bool(l), Value::Bool(r)) = (&left, &right) {
            return (Some((l == r) == equal), None);
        }
        let (Value::Int(left), Value::Int(right)) = (left, right) else {
            return (None, None);
        };
        let fact = match (left.as_factor(), right.as_factor()) {
            (Some(factor), _) if !right.is_unknown() => Some((factor.clone(), right.clone())),
            (_, Some(factor)) if !left.is_unknown() => Some((factor.clone(), left.clone())),
            _ => None,
        }
        .map(|(factor, value)| BranchFact {
            in_then: equal,
            values: vec![(factor, value)],
        });
        let verdict = match self.facts.compare(&left, &right) {
            candle_contracts_shapes::Verdict::Equal => Some(equal),
            candle_contracts_shapes::Verdict::Different(()) => Some(!equal),
            candle_contracts_shapes::Verdict::Possible => None,
        };
        (verdict, fact)
    }

    /// Whether a trait of the crate may give `Tensor` a method `name` found before candle's
    /// (a by-value `self` one on an owned tensor), or code `include!` brings in may hold one.
    fn may_be_crates_tensor_method(&self, name: &str) -> bool {
        ["candle_core::Tensor", "candle::Tensor"]
            .iter()
            .any(|path| self.index.has_external_method_in(path, name, self.module()))
            || self.index.may_be_any_types_method(name)
            || self.index.includes_code(self.module())
    }

    /// Whether `let Ok((b, t)) = x.dims2()` (or `let Err(_) = ..`) matches, where `x` is a
    /// local tensor of known rank: candle's `dimsN` is `Ok` exactly on a tensor of rank N. Only
    /// patterns that match every value inside (names, `_`, tuples of them).
    fn dims_result_verdict(&self, l: &syn::ExprLet) -> Option<bool> {
        // A name binds only where no item of that name is in scope (`ROWS` of a `const
        // ROWS` is a pattern of its value).
        fn irrefutable(pat: &syn::Pat, binds: &dyn Fn(&str) -> bool) -> bool {
            match pat {
                syn::Pat::Ident(i) => i.subpat.is_none() && binds(&name_of(&i.ident)),
                syn::Pat::Wild(_) | syn::Pat::Rest(_) => true,
                syn::Pat::Tuple(t) => t.elems.iter().all(|p| irrefutable(p, binds)),
                syn::Pat::Paren(p) => irrefutable(&p.pat, binds),
                _ => false,
            }
        }
        let binds = |name: &str| self.is_primitive(name);
        let syn::Pat::TupleStruct(ts) = &*l.pat else {
            return None;
        };
        let ok = match ts.path.get_ident()?.to_string().as_str() {
            "Ok" => true,
            "Err" => false,
            _ => return None,
        };
        let variant = if ok { "Ok" } else { "Err" };
        if ts.qself.is_some()
            || ts.elems.len() != 1
            || !ts.elems.iter().all(|p| irrefutable(p, &binds))
            || self.lookup(variant).is_some()
            || !self.is_primitive(variant)
        {
            return None;
        }
        let syn::Expr::MethodCall(call) = unparen(&l.expr) else {
            return None;
        };
        Some(self.dims_call_fits(call)? == ok)
    }

    /// Whether `x.dimsN()` (or `x.dim(i)`) is `Ok`, where `x` is a local tensor of known rank:
    /// candle's `dimsN` is `Ok` exactly on a tensor of rank N, `dim(i)` on one above `i`.
    fn dims_call_fits(&self, call: &syn::ExprMethodCall) -> Option<bool> {
        // candle's `dims1` to `dims5`, where no trait of the crate's may give `Tensor` a
        // method of the name found first (a by-value `dims2(self)`, a `dims6`).
        let method = call.method.to_string();
        // `x.dim(2)`, `x.dim(D::Minus2)`: fits a rank above the index.
        if method == "dim" && call.args.len() == 1 && call.turbofish.is_none() {
            let needed = match unparen(&call.args[0]) {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i),
                    ..
                }) if i.suffix().is_empty() || i.suffix() == "usize" => {
                    i.base10_parse::<usize>().ok()? + 1
                }
                syn::Expr::Path(p) => match path_segments(&p.path).as_slice() {
                    [.., d, minus] if d == "D" && minus == "Minus1" => 1,
                    [.., d, minus] if d == "D" && minus == "Minus2" => 2,
                    _ => return None,
                },
                _ => return None,
            };
            if self.may_be_crates_tensor_method(&method)
                || self.index.may_be_foreign_method(&method)
            {
                return None;
            }
            let t = self.named_tensor(&call.receiver)?;
            return match t.shape.rank() {
                Rank::Exactly(r) => Some(r >= needed),
                Rank::AtLeast(r) if r >= needed => Some(true),
                Rank::AtLeast(_) => None,
            };
        }
        let rank: usize = match method.strip_prefix("dims") {
            Some(n @ ("1" | "2" | "3" | "4" | "5"))
                if call.args.is_empty() && call.turbofish.is_none() =>
            {
                n.parse().ok()?
            }
            _ => return None,
        };
        if self.may_be_crates_tensor_method(&method) || self.index.may_be_foreign_method(&method) {
            return None;
        }
        let t = self.named_tensor(&call.receiver)?;
        match t.shape.rank() {
            Rank::Exactly(r) => Some(r == rank),
            Rank::AtLeast(r) if r > rank => Some(false),
            Rank::AtLeast(_) => None,
        }
    }

    /// Whether the walk is where every path of the function's body passes (no undecided
    /// branch, loop or closure around it; a helper's or a `Func`'s body walked at its call
    /// is quiet by one from the start).
    fn on_every_path(&self) -> bool {
        self.quiet == usize::from(!self.inlined.is_empty()) && self.closures == self.layer_bodies
    }

    /// Whether an expression asks the shape of a tensor a name holds (`x.rank()`,
    /// `x.dims()`, `x.dim(1)?`, `x.shape()`, `x.elem_count()`, in a macro's tokens too:
    /// `matches!(x.rank(), 0 | 1)`), whether a call on one succeeds (`x.dims2().is_ok()`,
    /// `let Ok(ys) = xs.apply(&conv)`), or a function given one (`is_vec(&x)`), outside
    /// closures.
    fn reads_shape(&self, expr: &syn::Expr) -> bool {
        let is_tensor = |name: &str| {
            self.lookup(name)
                .is_some_and(|binding| matches!(binding.value, Value::Tensor(_)))
        };
        let is_derived = |name: &str| {
            self.shape_derived.contains(name)
                || (self.shape_initialized.contains(name)
                    && self.lookup(name).is_some_and(|binding| {
                        !known_numbers(&binding.value, &syn::Pat::Verbatim(TokenStream::new()))
                    }))
        };
        let mut reads = ShapeReads {
            found: false,
            is_tensor: &is_tensor,
            is_derived: &is_derived,
        };
        reads.visit_expr(expr);
        reads.found
    }

    /// Whether `call` is of a function of the crate (`ensure_matrix(x)`, `Self::check(x)`)
    /// whose body asks a tensor's shape (`x.rank()`, `x.dims2()`): called for its error only,
    /// it is a test of that shape. A function out of sight, or one that reads only values
    /// (`check_finite(x)`, an optimizer's step), is not.
    fn validates_shape(&self, call: &syn::Expr) -> bool {
        // It asks a shape, and fails somewhere: a diverging macro (`bail!`) or an `Err(..)`.
        // A function that reads dims to print them (`log_stats`, `let (b, f) = x.dims2()?`)
        // does not (where such a `dims2()?` fails, the walk of the call says so).
        #[derive(Default)]
        struct Asks {
            asks: bool,
            fails: bool,
        }
        impl<'v> Visit<'v> for Asks {
            fn visit_expr_method_call(&mut self, call: &'v syn::ExprMethodCall) {
                self.asks |= SHAPE_QUERIES.iter().any(|name| call.method == name);
                syn::visit::visit_expr_method_call(self, call);
            }
            fn visit_expr_path(&mut self, p: &'v syn::ExprPath) {
                self.fails |= p.path.is_ident("Err");
            }
            fn visit_macro(&mut self, mac: &'v syn::Macro) {
                let name = mac.path.segments.last().map(|s| name_of(&s.ident));
                self.fails |= name
                    .as_deref()
                    .is_some_and(|name| DIVERGING_MACROS.contains(&name));
                let mut names = BTreeSet::new();
                idents(&mac.tokens, &mut names);
                self.asks |= SHAPE_QUERIES.iter().any(|name| names.contains(*name));
            }
        }
        let syn::Expr::Call(call) = unparen(call) else {
            return false;
        };
        let syn::Expr::Path(path) = unparen(&call.func) else {
            return false;
        };
        let Resolved::Fn(id) = self.resolve(&path_segments(&path.path)) else {
            return false;
        };
        let mut asks = Asks::default();
        asks.visit_block(self.index.fns[id].block);
        asks.asks && asks.fails
    }

    /// Whether an expression names a tensor or a local a shape gave (`x.dims()`,
    /// `0..x.rank()`, `&xs.chunk(2, 0)?`), outside closures: not a list of tensors given (`for
    /// y in ys`, whose length no shape decides).
    fn mentions_tensor(&self, expr: &syn::Expr) -> bool {
        struct Names<'w, 'a>(bool, &'w Walker<'a>);
        impl<'v> Visit<'v> for Names<'_, '_> {
            fn visit_expr_path(&mut self, p: &'v syn::ExprPath) {
                if let Some(ident) = p.path.get_ident() {
                    let name = name_of(ident);
                    self.0 |= self.1.shape_derived.contains(&name)
                        || self
                            .1
                            .lookup(&name)
                            .is_some_and(|binding| matches!(binding.value, Value::Tensor(_)));
                }
            }
            fn visit_expr_closure(&mut self, _: &'v syn::ExprClosure) {}
        }
        let mut names = Names(false, self);
        names.visit_expr(expr);
        names.0
    }

    /// A `for` loop (see `Expr::ForLoop`).
    fn for_loop(&mut self, f: &syn::ExprForLoop) -> Value {
        self.loop_range = None;
        let element = self.loop_element(&f.expr);
        let range = match unparen(&f.expr) {
            syn::Expr::Range(_) => self.loop_range.take(),
            _ => None,
        };
        self.loop_range = None;
        // How many passes a `for` over `start..end` makes, where `start <= end` is certain
        // and no integer narrower than `usize` takes part (`(n as u8) * 65` wraps in a
        // release build, where the walk would count 65 times `n`).
        let passes = match &range {
            Some((start, Some(end)))
                if !narrow_integer(f.expr.to_token_stream())
                    && self
                        .facts
                        .decide(&Relation::new(start.clone(), Cmp::Le, end.clone()))
                        == Some(true) =>
            {
                Some(end.clone().sub(start.clone()))
            }
            _ => None,
        };
        // An index is a size (at least 0) only where the range starts at 0 or more.
        let index_is_size = range
            .as_ref()
            .is_some_and(|(start, _)| Dim::lit(0).at_most(start) == Some(true));
        // Empty `Vec`s every pass pushes one tensor to: after the loop, `passes` of them.
        let counted: Vec<String> = match &passes {
            Some(_) => self
                .pushed_once_per_pass(f)
                .into_iter()
                .filter(|name| {
                    self.lookup(name)
                        .is_some_and(|binding| binding.value == Value::EmptyVec)
                })
                .collect(),
            None => Vec::new(),
        };
        let index = match index_is_size {
            true => self.loop_index(&f.pat, &element),
            false => None,
        };
        let element = match &index {
            Some(size) => Value::Int(size.clone()),
            None => element,
        };
        if self.loop_invariant(f, &element, index.as_ref()) {
            if let Some(size) = &index {
                self.forget_size(size);
            }
            // A loop that certainly runs (`for x in [a]`, `0..3`) and whose first run
            // certainly leaves: nothing after it runs.
            if std::mem::take(&mut self.first_run_leaves) && runs_at_least_once(&f.expr) {
                return Value::Never;
            }
            if let Some(passes) = passes {
                for name in counted {
                    if let Some(Value::TensorsEach(each, _)) =
                        self.lookup(&name).map(|binding| binding.value.clone())
                    {
                        self.set(&name, Value::TensorsEach(each, passes.clone()), None);
                    }
                }
            }
            return Value::Other;
        }
        let mut changed = self.changes();
        changed.visit_block(&f.body);
        self.forget(&changed);
        self.scope.push(BTreeMap::new());
        self.bind_pattern(&f.pat, element);
        // The body may run no time at all.
        self.quiet += 1;
        let outer = (
            std::mem::take(&mut self.live_break),
            std::mem::take(&mut self.live_continue),
        );
        let body = self.block(&f.body);
        let passes_on = self.live_break || self.live_continue || self.hidden_jump(&f.body);
        (self.live_break, self.live_continue) = outer;
        self.quiet -= 1;
        self.scope.pop();
        self.forget(&changed);
        if let Some(size) = &index {
            self.forget_size(size);
        }
        // A loop that certainly runs whose every pass leaves the function before any
        // `break` or `continue` (`for _ in 0..3 { if x.rank() < 2 { return .. } break;
        // }` of a known rank): nothing after it runs.
        if body == Value::Never && !passes_on && runs_at_least_once(&f.expr) {
            return Value::Never;
        }
        Value::Other
    }

    /// The local `Vec`s a `for` loop's every pass pushes exactly one element to: a
    /// `list.push(..)` statement of the body's own (not under an `if`, a `match` or a
    /// closure), the list's name written nowhere else in the body (no other push, no
    /// `let` that shadows it, no macro that may name it) nor bound by the loop's pattern.
    /// (Borrows rule out another name for the list inside the loop.) A pass that leaves the
    /// function before its push leaves no list behind; `break` and `continue` are for the
    /// caller to rule out.
    fn pushed_once_per_pass(&self, f: &syn::ExprForLoop) -> Vec<String> {
        fn count(tokens: TokenStream, name: &str) -> usize {
            tokens
                .into_iter()
                .map(|token| match token {
                    TokenTree::Ident(ident) if ident == name => 1,
                    TokenTree::Group(group) => count(group.stream(), name),
                    _ => 0,
                })
                .sum()
        }
        if !self.vec_method_is_std("push") {
            return Vec::new();
        }
        let body = f.body.to_token_stream();
        let pattern = f.pat.to_token_stream();
        f.body
            .stmts
            .iter()
            .filter_map(|stmt| match stmt {
                syn::Stmt::Expr(syn::Expr::MethodCall(m), _)
                    if m.method == "push" && m.args.len() == 1 && m.turbofish.is_none() =>
                {
                    match unparen(&m.receiver) {
                        syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(name_of),
                        _ => None,
                    }
                }
                _ => None,
            })
            .filter(|name| {
                name != "self"
                    && count(body.clone(), name) == 1
                    && count(pattern.clone(), name) == 0
            })
            .collect()
    }

    /// Whether a loop's body may `break` or `continue` where the walk does not see it: a
    /// labelled one (it may go to any loop around it), one in a macro's tokens, or a macro
    /// that may expand to one (one of the crate's, or of another crate: `next!()` of
    /// `macro_rules! next { () => { continue } }`).
    fn hidden_jump(&self, block: &syn::Block) -> bool {
        struct Jumps<'w, 'a>(bool, &'w Walker<'a>);
        impl<'v> Visit<'v> for Jumps<'_, '_> {
            fn visit_expr_break(&mut self, b: &'v syn::ExprBreak) {
                self.0 |= b.label.is_some();
                syn::visit::visit_expr_break(self, b);
            }
            fn visit_expr_continue(&mut self, c: &'v syn::ExprContinue) {
                self.0 |= c.label.is_some();
            }
            fn visit_macro(&mut self, mac: &'v syn::Macro) {
                let mut names = BTreeSet::new();
                idents(&mac.tokens, &mut names);
                let index = self.1.index;
                let jumps = match mac.path.segments.last().map(|s| name_of(&s.ident)) {
                    Some(name) if index.defines_macro(&name) => index.macro_may_jump(&name),
                    Some(name) => {
                        !(EXPRESSION_MACROS.contains(&name.as_str())
                            || DIVERGING_MACROS.contains(&name.as_str())
                            || name == "matches"
                            || QUIET_MACROS.contains(&name.as_str())
                            || TRACING_MACROS.contains(&name.as_str()))
                    }
                    None => true,
                };
                self.0 |= names.contains("break") || names.contains("continue") || jumps;
            }
        }
        let mut jumps = Jumps(false, self);
        jumps.visit_block(block);
        jumps.0
    }

    /// Whether `pat` tests whether `expr`, a call on a tensor, succeeds (`match x.reshape(..) {
    /// Ok(y) => y, Err(_) => return .. }`, `let Ok(y) = x.reshape(..) else { .. }`).
    fn tests_success(&self, pat: &syn::Pat, expr: &syn::Expr) -> bool {
        let is_tensor = |name: &str| {
            self.lookup(name)
                .is_some_and(|binding| matches!(binding.value, Value::Tensor(_)))
        };
        let reads = ShapeReads {
            found: false,
            is_tensor: &is_tensor,
            is_derived: &|_| false,
        };
        matches!(pat, syn::Pat::TupleStruct(ts) if ts.path.is_ident("Ok") || ts.path.is_ident("Err"))
            && reads.succeeds(expr)
    }

    /// `place = value` (or `place op= value`): a local `place` is in
    /// [`Walker::shape_derived`] where `value` reads a shape or the walk is inside a branch of
    /// an undecided test of one.
    fn mark_shape_derived(&mut self, place: &syn::Expr, value: &syn::Expr) {
        if let Some(name) = place_local(place)
            && (self.shape_tests > 0
                || (!matches!(
                    self.lookup(&name).map(|binding| &binding.value),
                    Some(Value::Tensor(_) | Value::Tensors(_) | Value::TensorsEach(..))
                ) && self.reads_shape(value)))
        {
            self.shape_derived.insert(name);
        }
    }

    /// The tensor a plain name holds (`x` in `x.dims2()`): looked at, walking nothing.
    fn named_tensor(&self, receiver: &syn::Expr) -> Option<TensorType> {
        let syn::Expr::Path(p) = unparen(receiver) else {
            return None;
        };
        let binding = self.lookup(&name_of(p.path.get_ident()?))?;
        match &binding.value {
            Value::Tensor(t) => Some(t.clone()),
            _ => None,
        }
    }

    fn match_expr(&mut self, m: &syn::ExprMatch) -> Value {
        // Not taken: an `Err(_) =>` arm may handle what fails (`match a.narrow(1, 2, 5)`).
        let read_before = self.read_indexed.clone();
        let scrutinee = self.operand(&m.expr);
        // Each arm may be code that never runs for the contract's shapes (see `if_expr`),
        // but for the `Some(t) =>` arm of an `Option` argument under its clause (see
        // `if_expr`), after nothing but a `None =>` arm.
        let is_none = |pat: &syn::Pat| match pat {
            syn::Pat::Ident(none) => {
                none.ident == "None" && none.subpat.is_none() && self.is_primitive("None")
            }
            syn::Pat::Path(none) => none.path.is_ident("None") && self.is_primitive("None"),
            _ => false,
        };
        let some_arm = m
            .arms
            .iter()
            .position(|arm| !is_none(&arm.pat) || arm.guard.is_some())
            .filter(|&at| {
                let arm = &m.arms[at];
                // An arm under `cfg` may be compiled out, and another in its place.
                at <= 1
                    && !m
                        .arms
                        .iter()
                        .any(|arm| crate::index::is_conditional(&arm.attrs))
                    && arm.guard.is_none()
                    && self.is_some_pattern(&arm.pat)
                    && self.is_option_argument(&m.expr)
            });
        // `None => .., Some((prev_k, prev_v)) => ..` of `&self.kv_cache` (either order, or
        // `Some(..) => .., _ => ..`): the sizes of an absent cache in the `None` arm.
        let none_arm = match m.arms.as_slice() {
            [first, second]
                if m.arms.iter().all(|arm| {
                    arm.guard.is_none() && !crate::index::is_conditional(&arm.attrs)
                }) =>
            {
                let some = |arm: &syn::Arm| self.is_any_some_pattern(&arm.pat);
                if is_none(&first.pat) && some(second) {
                    Some(0)
                } else if some(first)
                    && (is_none(&second.pat) || matches!(second.pat, syn::Pat::Wild(_)))
                {
                    Some(1)
                } else {
                    None
                }
            }
            _ => None,
        };
        // (Whether the scrutinee's element was read before it.)
        let read_now = std::mem::replace(&mut self.read_indexed, read_before);
        let absent = none_arm
            .map(|at| (at, self.absent_sizes(&m.expr)))
            .filter(|(_, values)| !values.is_empty());
        self.read_indexed.extend(read_now);
        // `match x.rank() { 3 => .., 2 => .., _ => bail!(..) }` of a known number: the one arm
        // that runs.
        if let Value::Int(size) = &scrutinee
            && let Some(number) = size.as_literal()
            && let Some(at) = self.arm_of_number(m, number)
        {
            let arm = &m.arms[at];
            self.scope.push(BTreeMap::new());
            self.bind_refutable_from(&arm.pat, scrutinee.clone(), &m.expr);
            let value = self.expr(&arm.body);
            self.scope.pop();
            return value;
        }
        // `match x.dtype() { DType::F16 | DType::BF16 => DType::F32, d => d }` of a known
        // dtype (Gemma's `RmsNorm`): the one arm that runs.
        if let Value::DType(dtype) = &scrutinee
            && let Some(at) = self.arm_of_dtype(m, *dtype)
        {
            let arm = &m.arms[at];
            self.scope.push(BTreeMap::new());
            self.bind_refutable_from(&arm.pat, scrutinee.clone(), &m.expr);
            let value = self.expr(&arm.body);
            self.scope.pop();
            return value;
        }
        let conditional = usize::from(m.arms.len() > 1);
        let shape_test = m.arms.len() > 1
            && (self.reads_shape(&m.expr)
                || m.arms.iter().any(|arm| {
                    arm.guard
                        .as_ref()
                        .is_some_and(|(_, guard)| self.reads_shape(guard))
                        || self.tests_success(&arm.pat, &m.expr)
                }));
        self.quiet += conditional;
        self.shape_tests += usize::from(shape_test);
        let value = self.match_arms(m, &scrutinee, some_arm, absent);
        self.shape_tests -= usize::from(shape_test);
        self.quiet -= conditional;
        // `match x.dims() { [_] => return .., _ => {} }`: as a leaving `if` on a shape.
        if shape_test && self.on_every_path() && m.arms.iter().any(|arm| may_leave(&arm.body)) {
            self.left_on_a_shape = true;
        }
        value
    }

    /// The arm of `m` that a scrutinee of value `number` certainly takes: the first whose
    /// pattern matches it, past arms whose integer literals or ranges rule it out. None where
    /// an arm before it may be taken or not (a guard, a name that may be a constant, any
    /// other pattern), or an arm stands under an attribute (`#[cfg]` may compile it out).
    fn arm_of_number(&self, m: &syn::ExprMatch, number: u64) -> Option<usize> {
        /// Whether the pattern matches `number`: `Some(true)` certainly, `Some(false)`
        /// certainly not, `None` where the walk cannot tell.
        fn matches_number(pat: &syn::Pat, number: u64) -> Option<bool> {
            let literal = |expr: &syn::Expr| match expr {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(int),
                    attrs,
                }) if attrs.is_empty() => int.base10_parse::<u64>().ok(),
                _ => None,
            };
            match pat {
                syn::Pat::Wild(_) => Some(true),
                syn::Pat::Lit(lit) => {
                    let syn::Lit::Int(int) = &lit.lit else {
                        return None;
                    };
                    Some(int.base10_parse::<u64>().ok()? == number)
                }
                syn::Pat::Range(range) => {
                    let start = match &range.start {
                        Some(start) => literal(start)?,
                        None => 0,
                    };
                    let inside_end = match (&range.end, &range.limits) {
                        (None, _) => true,
                        (Some(end), syn::RangeLimits::HalfOpen(_)) => number < literal(end)?,
                        (Some(end), syn::RangeLimits::Closed(_)) => number <= literal(end)?,
                    };
                    Some(start <= number && inside_end)
                }
                syn::Pat::Or(or) => {
                    // Every case decided, or none is.
                    let mut any = false;
                    for case in &or.cases {
                        any |= matches_number(case, number)?;
                    }
                    Some(any)
                }
                syn::Pat::Paren(p) => matches_number(&p.pat, number),
                _ => None,
            }
        }
        if m.arms.iter().any(|arm| !arm.attrs.is_empty()) {
            return None;
        }
        for (at, arm) in m.arms.iter().enumerate() {
            match (matches_number(&arm.pat, number)?, &arm.guard) {
                (false, _) => continue,
                (true, None) => return Some(at),
                (true, Some(_)) => return None,
            }
        }
        None
    }

    /// The arm of `m` that a scrutinee of candle's `dtype` certainly takes: the first whose
    /// pattern matches it (`DType::F16 | DType::BF16`, `_`, or a name `d` as the last arm),
    /// past arms whose `DType::*` paths rule it out. None where an arm before it may be taken
    /// or not (a guard, a name before the last arm, which may be a constant, a `DType` that
    /// may not be candle's, a variant this crate does not know), or an arm stands under an
    /// attribute. A name as the last arm, past arms that cannot match, is taken whatever it is:
    /// a constant that did not match would leave the `match` not exhaustive.
    fn arm_of_dtype(&self, m: &syn::ExprMatch, dtype: DType) -> Option<usize> {
        let dtype_path = self.dtype_path()?;
        let last = m.arms.len().checked_sub(1)?;
        let matches_dtype = |pat: &syn::Pat, at: usize| -> Option<bool> {
            fn go(dtype_path: &str, pat: &syn::Pat, dtype: DType, last: bool) -> Option<bool> {
                match pat {
                    syn::Pat::Wild(_) => Some(true),
                    syn::Pat::Ident(binding) if binding.subpat.is_none() && last => Some(true),
                    syn::Pat::Path(p) if p.qself.is_none() => {
                        let segments = path_segments(&p.path);
                        let (variant, prefix) = segments.split_last()?;
                        (prefix.join("::") == dtype_path).then_some(())?;
                        Some(dtype_variant(variant)? == dtype)
                    }
                    syn::Pat::Or(or) => {
                        let mut any = false;
                        for case in &or.cases {
                            any |= go(dtype_path, case, dtype, false)?;
                        }
                        Some(any)
                    }
                    syn::Pat::Paren(p) => go(dtype_path, &p.pat, dtype, last),
                    _ => None,
                }
            }
            go(&dtype_path, pat, dtype, at == last)
        };
        if m.arms.iter().any(|arm| !arm.attrs.is_empty()) {
            return None;
        }
        for (at, arm) in m.arms.iter().enumerate() {
            match (matches_dtype(&arm.pat, at)?, &arm.guard) {
                (false, _) => continue,
                (true, None) => return Some(at),
                (true, Some(_)) => return None,
            }
        }
        None
    }

    /// `live_arm`: an arm that runs for some call, and is reported in. `absent`: of two
    /// arms, the one where an `Option` field is `None`, and the sizes 0 there (see
    /// [`Walker::absent_sizes`]).
    fn match_arms(
        &mut self,
        m: &syn::ExprMatch,
        scrutinee: &Value,
        live_arm: Option<usize>,
        absent: Option<(usize, Vec<(Factor, Dim)>)>,
    ) -> Value {
        if m.arms.iter().any(|arm| has_ref_mut(&arm.pat)) {
            self.forget_in(|c| c.kept.extend(root(&m.expr)));
        }
        // Each arm starts where the guards before it may have left off (a guard that ran and
        // failed).
        let mut before = self.scope.clone();
        let mut value: Option<Value> = None;
        let mut after: Option<Vec<BTreeMap<String, Binding>>> = None;
        for (at, arm) in m.arms.iter().enumerate() {
            // Only the `match`'s own quiet is lifted (`match_expr` adds one for two arms).
            let live = usize::from(live_arm == Some(at) && m.arms.len() > 1);
            self.quiet -= live;
            self.scope = before.clone();
            self.scope.push(BTreeMap::new());
            self.bind_refutable_from(&arm.pat, scrutinee.clone(), &m.expr);
            if let Some((_, guard)) = &arm.guard {
                self.expr(guard);
                let mut guarded = self.scope.clone();
                guarded.pop();
                before = merge(&before, &guarded);
            }
            let v = self.expr(&arm.body);
            self.quiet += live;
            self.scope.pop();
            if v == Value::Never {
                continue;
            }
            // One joiner for the value and the names of this pair of paths: a `(k, v)` the
            // arm yields and a `k` it assigns had their sizes on the same runs.
            let mut joiner = self.joiner();
            if let (Some((none_at, values)), 1) = (&absent, at) {
                joiner.fact = Some(BranchFact {
                    in_then: *none_at == 0,
                    values: values.clone(),
                });
            }
            value = Some(match value {
                Some(prev) => prev.join_with(&v, &mut joiner),
                None => v,
            });
            after = Some(match after {
                Some(prev) => merge_with(&prev, &self.scope, &mut joiner),
                None => self.scope.clone(),
            });
            self.joined(joiner);
        }
        self.scope = after.unwrap_or(before);
        value.unwrap_or(Value::Never)
    }

    /// An operand, a receiver or an argument: not what the enclosing `?` takes.
    fn operand(&mut self, expr: &syn::Expr) -> Value {
        let outer = std::mem::replace(&mut self.taken, false);
        let value = self.expr(expr);
        self.taken = outer;
        value
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Value {
        use syn::BinOp;
        // `a && b`, `a || b` and comparisons as values (`let two = x.rank() == 2 && ..;`), as
        // in a condition: the right side of `&&` may not run (reported in only where it
        // certainly does), and what decides them gives the `bool`.
        let whole = syn::Expr::Binary(b.clone());
        // A `let` chain (`let Some(a) = a && ..`): each part walked, what follows knowing
        // what both paths know (`condition` walks a chain as this).
        if matches!(b.op, BinOp::And(_) | BinOp::Or(_)) && has_let(&whole) {
            self.operand(&b.left);
            let skipped = self.scope.clone();
            self.operand(&b.right);
            self.scope = merge(&skipped, &self.scope);
            return Value::Flag;
        }
        if matches!(
            b.op,
            BinOp::And(_)
                | BinOp::Or(_)
                | BinOp::Eq(_)
                | BinOp::Ne(_)
                | BinOp::Lt(_)
                | BinOp::Le(_)
                | BinOp::Gt(_)
                | BinOp::Ge(_)
        ) {
            let outer = std::mem::replace(&mut self.taken, false);
            let (verdict, _) = self.condition(&whole);
            self.taken = outer;
            // std's `&&`, `||`, `PartialEq` and `PartialOrd` give `bool`s.
            return verdict.map_or(Value::Flag, Value::Bool);
        }
        let left = self.operand(&b.left);
        let right = self.operand(&b.right);
        let name = match b.op {
            BinOp::Add(_) => "add",
            BinOp::Sub(_) => "sub",
            BinOp::Mul(_) => "mul",
            BinOp::Div(_) => "div",
            BinOp::Rem(_) => "rem",
            BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_) => {
                self.mark_shape_derived(&b.left, &b.right);
                // `n += 1` of a known `n`, `leave |= true`: a local's new value, where known.
                let combined = match (b.op, &left, &right) {
                    (BinOp::AddAssign(_), Value::Int(a), Value::Int(c))
                        if !a.is_unknown() && !c.is_unknown() =>
                    {
                        Some(Value::Int(self.facts.simplify(&a.clone().add(c.clone()))))
                    }
                    (BinOp::MulAssign(_), Value::Int(a), Value::Int(c))
                        if !a.is_unknown() && !c.is_unknown() =>
                    {
                        Some(Value::Int(self.facts.simplify(&a.clone().mul(c.clone()))))
                    }
                    (BinOp::BitOrAssign(_), Value::Bool(a), Value::Bool(c)) => {
                        Some(Value::Bool(*a || *c))
                    }
                    (BinOp::BitOrAssign(_), Value::Flag, Value::Bool(true))
                    | (BinOp::BitOrAssign(_), Value::Bool(true), Value::Flag) => {
                        Some(Value::Bool(true))
                    }
                    (BinOp::BitAndAssign(_), Value::Bool(a), Value::Bool(c)) => {
                        Some(Value::Bool(*a && *c))
                    }
                    (BinOp::BitAndAssign(_), Value::Flag, Value::Bool(false))
                    | (BinOp::BitAndAssign(_), Value::Bool(false), Value::Flag) => {
                        Some(Value::Bool(false))
                    }
                    (BinOp::BitXorAssign(_), Value::Bool(a), Value::Bool(c)) => {
                        Some(Value::Bool(a != c))
                    }
                    _ => None,
                };
                // As an assignment: behind `&mut self`, `self.steps += 1` changes only what
                // is below `self.steps`.
                self.forget_in(|c| c.write_to(&b.left));
                // (A plain name only: `*count += 1` writes behind a reference.)
                if let (Some(value), syn::Expr::Path(p)) = (combined, unparen(&b.left))
                    && let Some(name) = p.path.get_ident().map(name_of)
                    && self.lookup(&name).is_some()
                {
                    self.set(&name, value, None);
                }
                return Value::Other;
            }
            _ => return Value::Other,
        };
        match (left, right) {
            // Rust's `/` and `%` truncate toward zero, the engine's floor: the same only where
            // neither side may be negative.
            (Value::Int(a), Value::Int(c))
                if matches!(name, "div" | "rem")
                    && (a.may_be_negative() || c.may_be_negative()) =>
            {
                Value::Int(Dim::Unknown)
            }
            (Value::Int(a), Value::Int(c)) => Value::Int(self.facts.simplify(&match name {
                "add" => a.add(c),
                "sub" => a.sub(c),
                "mul" => a.mul(c),
                "div" => a.div(c),
                _ => a.rem(c),
            })),
            // candle's operators on tensors are its `add`, `sub`, `mul` and `div`.
            (Value::Tensor(a), Value::Tensor(c)) if name != "rem" => {
                match method_under(&self.facts, name, &a, &[Arg::Tensor(c)]) {
                    Ok(t) => Value::Tensor(t),
                    Err(mismatch) => {
                        self.report(&mismatch, &b.left, &[&*b.right], b.to_token_stream());
                        Value::tensor_unknown()
                    }
                }
            }
            (Value::Tensor(a), Value::Float | Value::Int(_)) => Value::Tensor(a),
            (Value::Float | Value::Int(_), Value::Tensor(c)) => Value::Tensor(c),
            (Value::Float, Value::Float | Value::Int(_)) | (Value::Int(_), Value::Float) => {
                Value::Float
            }
            _ => Value::Other,
        }
    }

    fn method_call(&mut self, expr: &syn::Expr, call: &syn::ExprMethodCall) -> Value {
        let shared_before = self.shared_args.len();
        self.mark_shared_args(call);
        let value = self.method_call_walked(expr, call);
        self.shared_args.truncate(shared_before);
        value
    }

    fn method_call_walked(&mut self, expr: &syn::Expr, call: &syn::ExprMethodCall) -> Value {
        if call.args.is_empty()
            && let Some(value) = self.subject_value(expr)
        {
            return value;
        }
        let name = name_of(&call.method);
        // `.unwrap()` and `.expect(..)` take the success of their receiver, as `?` does;
        // `.context(..)` gives a `Result` on, taken where it is taken.
        let takes = match name.as_str() {
            "unwrap" | "expect" => true,
            "context" | "with_context" => self.taken,
            _ => false,
        };
        let outer = std::mem::replace(&mut self.taken, takes);
        let receiver = self.expr(&call.receiver);
        self.taken = outer;
        // `stub(x)?.transpose(1, 2)`: a receiver that never completes leaves no call to make
        // (its arguments are still read, quietly unless the receiver is a certain failure
        // whose every mismatch is reported).
        if receiver == Value::Never {
            let failure = self.failure_never;
            self.quiet += usize::from(!failure);
            for arg in &call.args {
                self.operand(arg);
            }
            self.quiet -= usize::from(!failure);
            self.failure_never = failure;
            return Value::Never;
        }
        let args: Vec<Value> = call.args.iter().map(|a| self.operand(a)).collect();
        let arg_exprs: Vec<&syn::Expr> = call.args.iter().collect();
        self.passes_self(&arg_exprs);
        // `x.dims4().unwrap()` of a call certain to fail: it never gives a value (`.context`
        // gives the error on, as a value).
        if matches!(name.as_str(), "unwrap" | "expect")
            && self.failed_call == Some(call_id(&call.receiver))
        {
            self.failure_never = true;
            self.failed_value = Some(receiver);
            return Value::Never;
        }
        // `x.shape().dims4()` of a tensor `x`: candle's `Shape` reads its sizes as the
        // tensor's own `dims4()` does (segformer's `x.shape().dims3()`).
        let receiver = match unparen(&call.receiver) {
            syn::Expr::MethodCall(shape)
                if shape.method == "shape"
                    && shape.args.is_empty()
                    && call.args.is_empty()
                    && matches!(
                        name.as_str(),
                        "dims1" | "dims2" | "dims3" | "dims4" | "dims5" | "rank" | "elem_count"
                    ) =>
            {
                match unparen(&shape.receiver) {
                    syn::Expr::Path(p) if p.qself.is_none() => p
                        .path
                        .get_ident()
                        .and_then(|ident| self.lookup(&name_of(ident)))
                        .filter(|binding| matches!(binding.value, Value::Tensor(_)))
                        .map_or(receiver, |binding| binding.value.clone()),
                    // `encoder_hidden_states[0].shape().dims4()` of a list of tensors.
                    syn::Expr::Index(ix) => match unparen(&ix.expr) {
                        syn::Expr::Path(p) if p.qself.is_none() => {
                            let list = p
                                .path
                                .get_ident()
                                .and_then(|ident| self.lookup(&name_of(ident)))
                                .map(|binding| binding.value.clone());
                            let at = match unparen(&ix.index) {
                                syn::Expr::Lit(syn::ExprLit {
                                    lit: syn::Lit::Int(int),
                                    ..
                                }) => int.base10_parse::<usize>().ok(),
                                _ => None,
                            };
                            match (list, at) {
                                (Some(Value::TensorsEach(each, _)), _) => Value::Tensor(each),
                                (Some(Value::Tensors(parts)), Some(at)) if at < parts.len() => {
                                    Value::Tensor(parts[at].clone())
                                }
                                _ => receiver,
                            }
                        }
                        _ => receiver,
                    },
                    _ => receiver,
                }
            }
            _ => receiver,
        };
        // A failure of this call's own rule (its receiver and arguments walked already); the
        // last call walked is the one a `?` or `unwrap` right after it is of.
        let before = self.failures;
        // A tensor's method that gives no tensor (`device()`, `dims4()`) loses no shape, nor
        // does a method of an `Option`, a number or a `bool` (`mask.is_some()`).
        let on_tensor = matches!(receiver, Value::Tensor(_));
        let on_std_value = matches!(
            receiver,
            Value::Optional(_)
                | Value::Nothing
                | Value::Int(_)
                | Value::Float
                | Value::Bool(_)
                | Value::Flag
                | Value::Range(..)
        );
        let why = (self.why_wanted && self.let_why.is_none())
            .then(|| method_why(call, &name, &receiver, &args));
        let items = self.iterated_items(&receiver, &name, call);
        let value = self.method_dispatch(call, &name, receiver, args, &arg_exprs);
        self.failed_call = (self.failures > before).then(|| expr_id(call));
        if let Some(why) = why
            && !on_std_value
            && (!on_tensor || matches!(value, Value::Tensor(_)) || !reads_no_tensor(&name))
        {
            self.note_why(&value, || why);
        }
        // `x.device().is_cpu()` of a tensor `x`: candle's `Device`'s test, a `bool`.
        if value == Value::Other
            && call.args.is_empty()
            && matches!(name.as_str(), "is_cpu" | "is_cuda" | "is_metal")
            && let syn::Expr::MethodCall(device) = unparen(&call.receiver)
            && device.method == "device"
            && device.args.is_empty()
            && let syn::Expr::Path(p) = unparen(&device.receiver)
            && let Some(ident) = p.path.get_ident()
            && matches!(
                self.lookup(&name_of(ident)).map(|b| &b.value),
                Some(Value::Tensor(_))
            )
        {
            return Value::Flag;
        }
        // `(0..t).map(|j| u8::from(j <= i)).collect()`: a `Vec` of host numbers.
        if value == Value::Other
            && name == "collect"
            && let Some(dtype) = self.collected_dtype(call)
        {
            return Value::Numbers(dtype, items.unwrap_or(Dim::Unknown));
        }
        match (value, items) {
            (Value::Other, Some(items)) if name != "collect" => Value::Iter(items),
            (value, _) => value,
        }
    }

    /// How many items std's iterator `receiver.name()` gives where that is known: a range of
    /// known ends (`0..t`, its end one past the last) or an [`Value::Iter`], through the
    /// adaptors that keep the count (`map`, `rev`, `copied`, `cloned`, `into_iter`) and into
    /// `collect`. `None` where a method of that name may be the crate's own.
    fn iterated_items(
        &self,
        receiver: &Value,
        name: &str,
        call: &syn::ExprMethodCall,
    ) -> Option<Dim> {
        let keeps_count = match name {
            "map" | "copied" | "cloned" => call.args.len() == usize::from(name == "map"),
            "rev" | "into_iter" | "collect" => call.args.is_empty(),
            _ => false,
        };
        if !keeps_count || self.index.may_be_any_types_method(name) {
            return None;
        }
        match receiver {
            Value::Range(Some(start), Some(end)) => {
                let count = self.facts.simplify(&end.clone().sub(start.clone()));
                (!count.is_unknown() && !count.may_be_negative()).then_some(count)
            }
            Value::Iter(count) => Some(count.clone()),
            _ => None,
        }
    }

    /// The dtype of the numbers `collect` gathers into a `Vec`: from its turbofish
    /// (`collect::<Vec<u32>>()`), or the values its iterator's last `map` gives (a literal of
    /// a type, a cast, `f32::MIN`, `u8::from(..)`, an `if` either of whose branches is one;
    /// through `flat_map`, the inner iterator's). `None` where a method of the chain may be
    /// the crate's own.
    fn collected_dtype(&self, call: &syn::ExprMethodCall) -> Option<DType> {
        if self.index.may_be_any_types_method("collect") {
            return None;
        }
        let primitive = |name: &str| self.is_primitive(name);
        if let Some(turbofish) = &call.turbofish {
            let [syn::GenericArgument::Type(ty)] =
                turbofish.args.iter().collect::<Vec<_>>().as_slice()
            else {
                return None;
            };
            if let Some(dtype) = vec_element_dtype(ty, &primitive) {
                return Some(dtype);
            }
            // `Vec<_>` leaves it to the iterator; any other collection is no `Vec` of numbers.
            let syn::Type::Path(p) = ty else {
                return None;
            };
            let last = p.path.segments.last()?;
            let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
                return None;
            };
            let is_vec = last.ident == "Vec" && p.path.segments.len() == 1 && primitive("Vec");
            if !is_vec
                || !matches!(
                    args.args.first(),
                    Some(syn::GenericArgument::Type(syn::Type::Infer(_)))
                )
            {
                return None;
            }
        }
        self.iterator_dtype(&call.receiver, &primitive)
    }

    /// The dtype of the items an iterator chain yields, where its last `map` says.
    fn iterator_dtype(&self, expr: &syn::Expr, primitive: &dyn Fn(&str) -> bool) -> Option<DType> {
        let syn::Expr::MethodCall(m) = unparen(expr) else {
            return match unparen(expr) {
                syn::Expr::Block(b) => match b.block.stmts.last() {
                    Some(syn::Stmt::Expr(tail, None)) => self.iterator_dtype(tail, primitive),
                    _ => None,
                },
                // `(0..seq_len as u32)`: the type its ends are written in.
                syn::Expr::Range(r) => [&r.start, &r.end]
                    .into_iter()
                    .flatten()
                    .find_map(|end| literal_dtype(end, primitive)),
                _ => None,
            };
        };
        let name = name_of(&m.method);
        if self.index.may_be_any_types_method(&name) {
            return None;
        }
        let closure = || match m.args.first().map(unparen) {
            Some(syn::Expr::Closure(c)) if m.args.len() == 1 => Some(&*c.body),
            _ => None,
        };
        // The chain starts at a range (`(0..t)`): no type of the crate's own has its `map`.
        let from_range = |mut e: &syn::Expr| loop {
            match unparen(e) {
                syn::Expr::Range(_) => return true,
                syn::Expr::MethodCall(inner)
                    if ITEM_KEEPING_ADAPTERS.contains(&name_of(&inner.method).as_str()) =>
                {
                    e = &inner.receiver
                }
                _ => return false,
            }
        };
        match name.as_str() {
            "map" if from_range(&m.receiver) => value_dtype(closure()?, primitive),
            "flat_map" if from_range(&m.receiver) => self.iterator_dtype(closure()?, primitive),
            adapter if ITEM_KEEPING_ADAPTERS.contains(&adapter) => {
                self.iterator_dtype(&m.receiver, primitive)
            }
            _ => None,
        }
    }

    fn method_dispatch(
        &mut self,
        call: &syn::ExprMethodCall,
        name: &str,
        receiver: Value,
        args: Vec<Value>,
        arg_exprs: &[&syn::Expr],
    ) -> Value {
        let name = name.to_string();
        match receiver {
            // `xs.apply(&self.q_proj)`: candle's own `apply` runs the layer's `forward`.
            Value::Tensor(t)
                if matches!(name.as_str(), "apply" | "apply_t")
                    && let Some(Value::External(path)) = args.first()
                    && let Some(layer) = Layer::from_path(path)
                    && !self
                        .index
                        .has_external_method_in(path, "forward", self.module()) =>
            {
                self.layer_forward(layer, strip_refs(arg_exprs[0]), &t, Some(&call.receiver))
            }
            // The crate's own trait gives `Tensor` a method of that name: a by-value `self`
            // one is found before candle's `&self` one on an owned tensor. (Code `include!`
            // brings in may hold such a trait: in its crate, no tensor method is certain.)
            Value::Tensor(_) if self.may_be_crates_tensor_method(&name) => {
                self.forget_in(|c| c.kept.extend(root(&call.receiver)));
                Value::Other
            }
            // `xs.apply(&block)` of a `Func` the walk built: its closure, with `xs`.
            Value::Tensor(t)
                if matches!(name.as_str(), "apply" | "apply_t")
                    && let Some(Value::Func(func)) = args.first() =>
            {
                let (value, failure) = self.apply_func_failing(func, &t);
                // One that fails whatever it is given is reported in its closure (the
                // builder's own walk): here only what fails for this input.
                if let Some(failure) = failure
                    && self
                        .apply_func_failing(func, &TensorType::unknown())
                        .1
                        .is_none()
                {
                    self.report_func_failure(call, func, &t, failure);
                }
                value
            }
            // `block.forward(&xs)` (`forward_t(&xs, train)` of a `FuncT`) of a `Func` the walk
            // built: candle-nn's `Module`'s, where no trait of the crate's may give it one.
            Value::Func(func)
                if (name == "forward" && args.len() == 1
                    || name == "forward_t" && args.len() == 2)
                    && let Some(Value::Tensor(t)) = args.first()
                    && !self.index.may_be_any_types_method(&name)
                    && ![
                        "candle_nn::Func",
                        "candle_nn::func::Func",
                        "candle_nn::FuncT",
                        "candle_nn::func::FuncT",
                    ]
                    .iter()
                    .any(|path| {
                        self.index
                            .has_external_method_in(path, &name, self.module())
                    }) =>
            {
                self.apply_func(&func, t)
            }
            // `xs.apply(&self.mlp)`: candle's `apply` runs `<M as Module>::forward`, the one
            // of the crate's `impl Module for M` (no other method of the name can be meant).
            Value::Tensor(t)
                if matches!(name.as_str(), "apply" | "apply_t")
                    && let Some(Value::Instance(key, _)) = args.first()
                    && let Some(id) = self.module_forward(key, name == "apply_t") =>
            {
                let mut forward_args = vec![Value::Tensor(t)];
                let mut forward_exprs = vec![&*call.receiver];
                if name == "apply_t" {
                    forward_args.extend(args.get(1).cloned());
                    forward_exprs.extend(arg_exprs.get(1).copied());
                }
                let value = self.call_fn(
                    id,
                    Some(strip_refs(arg_exprs[0])),
                    &forward_args,
                    &forward_exprs,
                );
                // `Module::forward` and `ModuleT::forward_t` take `&self`: behind `&mut self`,
                // the layer changes only what it could behind `&self` (mpt's tied head read
                // after `xs.apply(&self.wte)`).
                match takes_shared_self(self.index.fns[id].sig) {
                    true => self.touched_shared(strip_refs(arg_exprs[0])),
                    false => self.touched(strip_refs(arg_exprs[0])),
                }
                value
            }
            Value::Tensor(t) => {
                let value = self.tensor_method(&t, &name, &args, &call.receiver, call, arg_exprs);
                if matches!(value, Value::Other) && !READ_ONLY.contains(&name.as_str()) {
                    // A method the walk does not know may take `&mut self`.
                    self.forget_in(|c| c.kept.extend(root(&call.receiver)));
                }
                value
            }
            Value::External(path) => {
                let value = self.external_method(&path, &name, &args, call, arg_exprs);
                // A candle-nn layer's `forward`, and its own inherent `&self` methods
                // (`bn.weight_and_bias()`), change nothing.
                let layer = path.rsplit("::").next().unwrap_or(&path);
                let own = Layer::from_path(&path).is_some()
                    && crate::construct::is_own_layer_method(layer, &name);
                if !matches!(value, Value::Tensor(_)) && !own {
                    self.touched(&call.receiver);
                }
                value
            }
            // `mask.unwrap()`, `cache.as_ref()`: what the `Option` holds, or the same `Option`.
            Value::Optional(held) if matches!(name.as_str(), "unwrap" | "expect") => *held,
            // `context.unwrap_or(xs)`: what it holds, or the default, by the call.
            Value::Optional(held) if name == "unwrap_or" && args.len() == 1 => {
                let mut joiner = self.joiner();
                let value = held.join_with(&args[0], &mut joiner);
                self.joined(joiner);
                value
            }
            optional @ Value::Optional(_)
                if matches!(name.as_str(), "as_ref" | "clone" | "cloned")
                    && call.args.is_empty() =>
            {
                optional
            }
            // `all.last().context("no last")?`, `mask.ok_or(..)?`: the `Result` of what it
            // holds, taken as `unwrap` takes it.
            Value::Optional(held)
                if matches!(
                    name.as_str(),
                    "context" | "with_context" | "ok_or" | "ok_or_else"
                ) && args.len() == 1
                    && self.vec_method_is_std(&name) =>
            {
                *held
            }
            // `hidden_states.last()`, `.first()` of a list of tensors: an element, if any.
            Value::Tensors(parts)
                if matches!(name.as_str(), "first" | "last")
                    && call.args.is_empty()
                    && self.vec_method_is_std(&name) =>
            {
                let part = match name.as_str() {
                    "first" => parts.first(),
                    _ => parts.last(),
                };
                match part {
                    Some(part) => Value::Optional(Box::new(Value::Tensor(part.clone()))),
                    None => Value::Nothing,
                }
            }
            // `hidden_states.reverse()` of a local list: the same tensors, the other way round.
            list @ (Value::Tensors(_) | Value::TensorsEach(..))
                if name == "reverse"
                    && call.args.is_empty()
                    && self.vec_method_is_std(&name)
                    && let Some(local) = self.local_receiver(&call.receiver) =>
            {
                let reversed = match list {
                    Value::Tensors(mut parts) => {
                        parts.reverse();
                        Value::Tensors(parts)
                    }
                    each => each,
                };
                self.set(&local, reversed, None);
                Value::Other
            }
            // `encoder_hidden_states.len()`: std's, which changes nothing.
            Value::TensorsEach(_, count)
                if matches!(name.as_str(), "len" | "is_empty")
                    && call.args.is_empty()
                    && self.vec_method_is_std(&name) =>
            {
                match name.as_str() {
                    "len" => Value::Int(count),
                    _ => Value::Flag,
                }
            }
            Value::TensorsEach(each, _)
                if matches!(name.as_str(), "first" | "last")
                    && call.args.is_empty()
                    && self.vec_method_is_std(&name) =>
            {
                Value::Optional(Box::new(Value::Tensor(each)))
            }
            // `(d as f64).sqrt()`: a float's own methods give a float.
            Value::Float if FLOAT_METHODS.contains(&name.as_str()) => Value::Float,
            // `n.min(t)`, `t.saturating_sub(n)`: std's integer methods (inherent: no trait's of
            // the name comes first) give an integer; of two numbers, `min` and `max` theirs.
            Value::Int(a) if INT_METHODS.contains(&name.as_str()) => {
                match (name.as_str(), args.as_slice()) {
                    ("min" | "max", [Value::Int(b)]) => match (a.as_literal(), b.as_literal()) {
                        (Some(a), Some(b)) if name == "min" => Value::Int(Dim::lit(a.min(b))),
                        (Some(a), Some(b)) => Value::Int(Dim::lit(a.max(b))),
                        _ => Value::Int(Dim::Unknown),
                    },
                    _ => Value::Int(Dim::Unknown),
                }
            }
            // `qkv.as_slice()`, `parts.try_into().unwrap()` (a `Result` of an array of the same
            // parts, kept by `unwrap`): the same tensors.
            list @ (Value::Tensors(_) | Value::TensorsEach(..))
                if ((LIST_VIEWS.contains(&name.as_str()) && call.args.is_empty())
                    || (KEEP_OK.contains(&name.as_str()) && name != "map_err"))
                    && self.vec_method_is_std(&name) =>
            {
                list
            }
            // `position_ids.as_slice()`, `.clone()`: the same numbers; `len()`, how many.
            list @ Value::Numbers(..)
                if LIST_VIEWS.contains(&name.as_str())
                    && name != "try_into"
                    && call.args.is_empty()
                    && self.vec_method_is_std(&name) =>
            {
                list
            }
            Value::Numbers(_, count)
                if name == "len" && call.args.is_empty() && self.vec_method_is_std(&name) =>
            {
                Value::Int(count)
            }
            // `Model::new(&cfg, vb).unwrap()`: the value of a constructor's `Result` taken
            // as `?` takes it, where the type has no method of the name.
            Value::Instance(key, access)
                if matches!(name.as_str(), "unwrap" | "expect")
                    && call.args.len() <= 1
                    && self.index.methods(&key, &name).is_empty()
                    && self.index.trait_impl_methods(&key, &name).is_empty()
                    && !self.index.may_be_any_types_method(&name) =>
            {
                Value::Instance(key, access)
            }
            Value::Instance(key, access) => {
                let ids = self.index.methods(&key, &name);
                let (value, shared) = match ids {
                    // A method of the type, reached first for how the value is held: its
                    // contract, or its signature.
                    [id] if self.reaches(*id, access, &name) && self.reachable(*id) => {
                        let shared = takes_shared_self(self.index.fns[*id].sig);
                        (
                            self.call_fn(*id, Some(&call.receiver), &args, arg_exprs),
                            shared,
                        )
                    }
                    _ => (Value::Other, false),
                };
                // A method of the crate may change what its receiver holds (a cell's content
                // behind `&self` too), once it has run; one taking `&self` changes behind
                // `&mut self` only what it could behind `&self`.
                match shared {
                    true => self.touched_shared(&call.receiver),
                    false => self.touched(&call.receiver),
                }
                value
            }
            // `let mut xs = xs.chunk(2, D::Minus1)?; let gate = xs.remove(1);`: the part, and
            // the list without it, on a local name.
            Value::Tensors(mut parts)
                if matches!(name.as_str(), "remove" | "pop" | "len")
                    && self.vec_method_is_std(&name)
                    && let Some(local) = self.local_receiver(&call.receiver) =>
            {
                let at = match (name.as_str(), args.as_slice()) {
                    ("remove", [Value::Int(at)]) => at.as_literal().map(|at| at as usize),
                    ("pop", []) => parts.len().checked_sub(1),
                    ("len", []) => return Value::Int(Dim::lit(parts.len() as u64)),
                    _ => None,
                };
                match at.filter(|&at| at < parts.len()) {
                    Some(at) => {
                        let part = parts.remove(at);
                        self.set(&local, Value::Tensors(parts), None);
                        match name.as_str() {
                            "pop" => Value::Optional(Box::new(Value::Tensor(part))),
                            _ => Value::Tensor(part),
                        }
                    }
                    // Past the end, `remove` panics: nothing follows; `pop` gives `None`.
                    None => {
                        self.touched(&call.receiver);
                        Value::Other
                    }
                }
            }
            // `hidden_states.push(xs.clone())` on a local `Vec` of tensors: one more element,
            // where this runs (a loop's passes join the lengths into `TensorsEach`).
            list @ (Value::EmptyVec | Value::Tensors(_) | Value::TensorsEach(..))
                if name == "push"
                    && self.vec_method_is_std(&name)
                    && let [Value::Tensor(item)] = args.as_slice()
                    && let Some(local) = self.local_receiver(&call.receiver) =>
            {
                let filled = match list {
                    Value::Tensors(mut parts) if parts.len() < MAX_LISTED => {
                        parts.push(item.clone());
                        Value::Tensors(parts)
                    }
                    Value::Tensors(parts) => Value::TensorsEach(
                        each_of(parts.iter().chain([item])),
                        Dim::from(parts.len() + 1),
                    ),
                    Value::TensorsEach(each, count) => Value::TensorsEach(
                        each_of([&each, item].into_iter()),
                        count.add(Dim::lit(1)),
                    ),
                    _ => Value::Tensors(vec![item.clone()]),
                };
                self.set(&local, filled, None);
                Value::Other
            }
            // `blocks.push(block(cfg, vb.pp(i))?)` of a `Func` the walk built: a list of them,
            // where every push gives the same one.
            list @ (Value::EmptyVec | Value::Funcs(_))
                if name == "push"
                    && self.vec_method_is_std(&name)
                    && let [Value::Func(func)] = args.as_slice()
                    && let Some(local) = self.local_receiver(&call.receiver) =>
            {
                let filled = match list {
                    Value::Funcs(held) if held != *func => Value::Other,
                    _ => Value::Funcs(func.clone()),
                };
                self.set(&local, filled, None);
                Value::Other
            }
            // `let mut dims = Vec::new(); dims.push(b);`: a list of sizes.
            Value::EmptyVec
                if name == "push"
                    && self.vec_method_is_std(&name)
                    && let [Value::Int(size)] = args.as_slice()
                    && let Some(local) = self.local_receiver(&call.receiver) =>
            {
                self.set(&local, Value::Tuple(vec![Value::Int(size.clone())]), None);
                Value::Other
            }
            Value::EmptyVec
                if name == "len" && args.is_empty() && self.vec_method_is_std(&name) =>
            {
                Value::Int(Dim::lit(0))
            }
            // `shape.dims()`, `shape.clone()`: the same shape.
            Value::Shape(shape) if matches!(name.as_str(), "dims" | "clone") && args.is_empty() => {
                Value::Shape(shape)
            }
            // A list of sizes (`qkv.dims().to_vec()`): see `size_list_method`.
            Value::Tuple(items)
                if items.iter().all(|v| matches!(v, Value::Int(_)))
                    && (!matches!(name.as_str(), "push" | "pop")
                        || self.vec_method_is_std(&name)) =>
            {
                self.size_list_method(call, &name, items, &args)
            }
            _ => {
                // `shape.copy_from_slice(..)`, `n.add_assign(4)`, `cell.replace(..)`.
                self.touched(&call.receiver);
                Value::Other
            }
        }
    }

    /// Whether `list.name(..)` on a local `Vec` (or slice, array) is std's own method: no
    /// trait `impl` of the crate for a type not its own (`impl Note for Vec<Tensor>`), nor one
    /// the index cannot place, has a method of that name, and every trait in scope is in
    /// sight (a `&self` method of a trait is found before `Vec::push`'s `&mut self`).
    fn vec_method_is_std(&self, name: &str) -> bool {
        !self.index.may_be_foreign_method(name)
            && !self.index.may_be_any_types_method(name)
            && self.traits_in_sight()
    }

    /// The local name a method is called on (`dims` in `dims.push(4)`), not `self`.
    fn local_receiver(&self, receiver: &syn::Expr) -> Option<String> {
        match strip_refs(receiver) {
            syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(name_of),
            _ => None,
        }
        .filter(|local| local != "self" && self.lookup(local).is_some())
    }

    /// A method of a list of sizes (`x.dims()`, `[b, t, e]`, `let mut dims = ..to_vec()`):
    /// `to_vec`, `as_slice` and `dims` keep it, `len` counts it, `push` and `pop` on a local name change
    /// it where they run (a loop or a `&mut` elsewhere forgets the name, as for any value);
    /// any other method may change it.
    fn size_list_method(
        &mut self,
        call: &syn::ExprMethodCall,
        name: &str,
        mut items: Vec<Value>,
        args: &[Value],
    ) -> Value {
        let local = self.local_receiver(&call.receiver);
        match (name, args, local) {
            // (`as_slice` of a `Vec` or an array is their own inherent method.)
            ("to_vec" | "dims" | "to_owned" | "clone" | "as_slice", [], _) => Value::Tuple(items),
            ("len", [], _) => Value::Int(Dim::lit(items.len() as u64)),
            ("is_empty", [], _) => Value::Bool(items.is_empty()),
            ("push", [Value::Int(size)], Some(local)) => {
                items.push(Value::Int(size.clone()));
                self.set(&local, Value::Tuple(items), None);
                Value::Other
            }
            ("pop", [], Some(local)) => {
                let last = items.pop();
                self.set(&local, Value::Tuple(items), None);
                last.map_or(Value::Other, |last| Value::Optional(Box::new(last)))
            }
            _ => {
                self.touched(&call.receiver);
                Value::Other
            }
        }
    }

    /// What a `for` loop over `iterable` binds each time: an element of the crate's values
    /// (`for layer in &self.layers`, `self.layers.iter()`, `.iter().enumerate()`); an unknown
    /// value otherwise. Walks `iterable`.
    fn loop_element(&mut self, iterable: &syn::Expr) -> Value {
        // `states.iter().zip(&self.linear_c)`: a pair of the two elements, as std's `zip`
        // gives them (where no trait in sight may name a `zip` of its own).
        if let syn::Expr::MethodCall(m) = unparen(iterable)
            && m.method == "zip"
            && m.args.len() == 1
            && m.turbofish.is_none()
            && self.vec_method_is_std("zip")
        {
            let left = self.loop_element(&m.receiver);
            let right = self.loop_element(&m.args[0]);
            // Only on an iterator the walk knows (std's, whose `zip` is `Iterator::zip`): a
            // type of the crate's may have a `zip` of its own.
            return match left {
                Value::Other => Value::Other,
                left => Value::Tuple(vec![left, right]),
            };
        }
        let mut base = iterable;
        let mut enumerate = false;
        if let syn::Expr::MethodCall(m) = base
            && m.method == "enumerate"
            && m.args.is_empty()
        {
            enumerate = true;
            base = &m.receiver;
        }
        let access = match base {
            syn::Expr::Reference(r) => {
                base = &r.expr;
                Some(match r.mutability {
                    Some(_) => Access::Mut,
                    None => Access::Ref,
                })
            }
            // A trait in scope may give the list an `iter` of its own, tried before the
            // slice's: only where every trait in scope is in sight.
            syn::Expr::MethodCall(m)
                if (m.method == "iter" || m.method == "iter_mut")
                    && m.args.is_empty()
                    && !self.index.may_be_foreign_method(&name_of(&m.method))
                    && self.traits_in_sight() =>
            {
                base = &m.receiver;
                Some(match m.method == "iter" {
                    true => Access::Ref,
                    false => Access::Mut,
                })
            }
            _ => None,
        };
        let value = match (access, enumerate) {
            // Only a view of the list was taken: walk the list itself.
            (Some(_), _) | (None, true) => self.expr(base),
            (None, false) => self.expr(iterable),
        };
        // `for kv in &mut self.kv_cache`, `.iter_mut()`: the body may write any element.
        if access == Some(Access::Mut) {
            self.forget_in(|c| c.write_to(base));
        }
        let element = match (value, access) {
            (Value::Each(element), Some(access)) => match *element {
                Value::Instance(key, _) => Value::Instance(key, access),
                _ => Value::Other,
            },
            // `for state in states.iter()` of a list of tensors: a `&Tensor` of its type.
            (Value::TensorsEach(each, _), Some(Access::Ref)) => Value::Tensor(each),
            // `for block in blocks.iter()` of a list of `Func`s.
            (Value::Funcs(func), Some(Access::Ref) | None) => Value::Func(func),
            (Value::Tensors(parts), Some(Access::Ref)) if !parts.is_empty() => {
                Value::Tensor(each_of(parts.iter()))
            }
            // `for i in 0..n`: an index (`others[i]` is an element).
            (Value::Range(Some(start), end), None) if !enumerate => {
                self.loop_range = Some((start, end));
                Value::Int(Dim::Unknown)
            }
            _ => Value::Other,
        };
        match (enumerate, element) {
            // `for (i, &id) in ids.to_vec1::<u32>()?.iter().enumerate()`: a `Vec`'s iterator,
            // so std's `enumerate` and an index, where nothing of the crate's is named so.
            (true, Value::Other) if self.enumerates_host_values(iterable) => {
                Value::Tuple(vec![Value::Int(Dim::Unknown), Value::Other])
            }
            (_, Value::Other) => Value::Other,
            (true, element) => Value::Tuple(vec![Value::Int(Dim::Unknown), element]),
            (false, element) => element,
        }
    }

    /// Whether a parameter of type `ty` may be a `&mut`: one written so (in parentheses too), or
    /// a type alias of the crate's (`type CfgMut<'a> = &'a mut Cfg`).
    fn may_be_mut_ref(&self, ty: &syn::Type) -> bool {
        match ty {
            syn::Type::Reference(r) => r.mutability.is_some(),
            syn::Type::Paren(p) => self.may_be_mut_ref(&p.elem),
            syn::Type::Group(g) => self.may_be_mut_ref(&g.elem),
            syn::Type::Path(p) if p.qself.is_none() => {
                let segments: Vec<String> =
                    p.path.segments.iter().map(|s| name_of(&s.ident)).collect();
                matches!(self.resolve(&segments), Resolved::Type(key) if self.index.is_alias(&key))
            }
            _ => false,
        }
    }

    /// Whether `iterable` is `x.to_vecN()?.iter().enumerate()` (or `into_iter`, `unwrap`):
    /// candle's `Vec` of host values, whose iterator's `enumerate` is std's, where no method of
    /// the crates read, and no trait out of sight, may be one of those names.
    fn enumerates_host_values(&self, iterable: &syn::Expr) -> bool {
        let syn::Expr::MethodCall(enumerate) = unparen(iterable) else {
            return false;
        };
        let syn::Expr::MethodCall(iter) = unparen(&enumerate.receiver) else {
            return false;
        };
        let Some(syn::Expr::MethodCall(to_vec)) = crate::construct::success_of(&iter.receiver)
        else {
            return false;
        };
        // Of a tensor (another crate's `to_vec1` may give its own type).
        let of_tensor = match unparen(&to_vec.receiver) {
            syn::Expr::Path(p) if p.qself.is_none() => p
                .path
                .get_ident()
                .and_then(|ident| self.lookup(&name_of(ident)))
                .is_some_and(|binding| matches!(binding.value, Value::Tensor(_))),
            _ => false,
        };
        if !of_tensor {
            return false;
        }
        let names = [
            "enumerate".to_string(),
            name_of(&iter.method),
            name_of(&to_vec.method),
        ];
        matches!(names[1].as_str(), "iter" | "into_iter")
            && matches!(names[2].as_str(), "to_vec1" | "to_vec2" | "to_vec3")
            && iter.args.is_empty()
            && names.iter().all(|name| {
                !self.index.may_be_any_types_method(name)
                    && !self.index.may_be_foreign_method(name)
                    && !self.index.fns.iter().any(|f| f.sig.ident == name.as_str())
            })
            && self.traits_in_sight()
    }

    /// Whether every trait that may be in scope here is one the index holds or std's or
    /// candle's: no `use` (nor glob) of the function's module, nor of its body, names
    /// something out of sight.
    fn traits_in_sight(&self) -> bool {
        const KNOWN: &[&str] = crate::index::KNOWN_CRATES;
        if self.local_paths.iter().any(|frame| !frame.is_empty()) {
            return false;
        }
        let module = &self.index.modules[self.module()];
        if !module.globs.is_empty() || module.opaque {
            return false;
        }
        // `use crate::ext::Consume as _;`: a trait in scope by no name.
        if !module.anonymous_uses.iter().all(|path| {
            path.first()
                .is_some_and(|first| KNOWN.contains(&first.as_str()))
        }) {
            return false;
        }
        // A named `use`, resolved (a dependency renamed `serde` is no serde).
        module.uses.keys().all(|name| {
            self.index.use_known(self.module(), name, &|path| {
                crate::index::trait_path_known(path)
            })
        })
    }

    /// `for i in 0..n` (a plain immutable name, in the function's own walk): the index is a
    /// size of its own (`{i}`) for one pass of the body, so `i * s..(i + 1) * s` is `s` long.
    /// Each pass has another index, so it never leaves the body (see
    /// [`Walker::forget_size`]). None where the name already is a size of the walk's (a
    /// parameter, a `let` of a size, a braced name of the contract's).
    fn loop_index(&mut self, pat: &syn::Pat, element: &Value) -> Option<Dim> {
        let syn::Pat::Ident(ident) = pat else {
            return None;
        };
        if !matches!(element, Value::Int(Dim::Unknown))
            || ident.subpat.is_some()
            || ident.by_ref.is_some()
            || ident.mutability.is_some()
            || !self.inlined.is_empty()
            || self.closures > 0
            || self.loop_passes > 0
        {
            return None;
        }
        let name = name_of(&ident.ident);
        let param = self.scope.first().is_some_and(|f| f.contains_key(&name));
        if param || self.fresh_sizes.contains(&name) {
            return None;
        }
        let size = Dim::braced(&name);
        let index = Factor::Braced(name.clone());
        let mut named = false;
        // A dim naming the index is unknown without it.
        let mut find = |dim: &Dim| named |= dim.replace_factor(&index, &Dim::Unknown) != *dim;
        for clause in &self.contract.clauses {
            clause.spec.shape.map_dims(&mut |d| {
                find(d);
                Dim::Unknown
            });
        }
        for relation in &self.contract.relations {
            find(&relation.lhs);
            find(&relation.rhs);
        }
        for (_, dim) in &self.contract.facts {
            find(dim);
        }
        let mut in_values = |value: &Value| {
            value.map_dims(&mut |d| {
                find(d);
                Dim::Unknown
            });
        };
        for frame in &self.scope {
            for binding in frame.values() {
                in_values(&binding.value);
            }
        }
        for (held, _) in self.subjects.values() {
            in_values(held);
        }
        for dim in self.field_dims.values() {
            find(dim);
        }
        if named {
            return None;
        }
        // Once a loop's index, the name is no other size of this walk.
        self.fresh_sizes.insert(name);
        Some(size)
    }

    /// Forgets a loop's index (`{i}`) in everything the walk hands on past one pass of the
    /// body: the names bound outside it, `self`'s clauses, what it returns. A value made in
    /// one pass and met in another (or after the loop) would otherwise take two indices for
    /// one.
    fn forget_size(&mut self, size: &Dim) {
        let Some(index @ Factor::Braced(_)) = size.as_factor().cloned() else {
            return;
        };
        let mut forget = |d: &Dim| d.replace_factor(&index, &Dim::Unknown);
        for frame in &mut self.scope {
            for binding in frame.values_mut() {
                binding.value = binding.value.map_dims(&mut forget);
            }
        }
        for (held, _) in self.subjects.values_mut() {
            *held = held.map_dims(&mut forget);
        }
        for value in [
            &mut self.returned,
            &mut self.value_after_failure,
            &mut self.failed_value,
        ]
        .into_iter()
        .flatten()
        {
            *value = value.map_dims(&mut forget);
        }
        for (first, second) in self.join_sizes.values_mut() {
            *first = forget(first);
            *second = forget(second);
        }
        self.facts.map_alternatives(&mut forget);
    }

    /// A `for` loop whose body leaves its locals as it found them, up to a join (`xs =
    /// layer.forward(&xs)?` with `[B, T, E]` in and out): walked until the state at its head
    /// stops changing (the body may run any number of times, none included), and then left
    /// at that state. `false` (nothing done) where that takes too long or where the body has
    /// a `break` or `continue` (a state that skips the end of the body). Behind `&mut self`
    /// too: a body that forgets a clause on `self` never reaches that state.
    fn loop_invariant(
        &mut self,
        f: &syn::ExprForLoop,
        element: &Value,
        index: Option<&Dim>,
    ) -> bool {
        const PASSES: usize = 4;
        // A `break` or `continue`, or a macro that may expand to one (a `macro_rules!` of
        // the crate's `{ continue }`): std's expression and diverging macros do not.
        fn has_jump(tokens: TokenStream, may_jump: &dyn Fn(&str) -> bool) -> bool {
            let tokens: Vec<TokenTree> = tokens.into_iter().collect();
            tokens.iter().enumerate().any(|(i, token)| match token {
                TokenTree::Ident(ident) if ident == "break" || ident == "continue" => true,
                TokenTree::Ident(ident) => {
                    let bang = matches!(tokens.get(i + 1),
                        Some(TokenTree::Punct(p)) if p.as_char() == '!'
                            && p.spacing() == proc_macro2::Spacing::Alone);
                    let called = bang && matches!(tokens.get(i + 2), Some(TokenTree::Group(_)));
                    called && may_jump(&ident.to_string())
                }
                TokenTree::Group(group) => has_jump(group.stream(), may_jump),
                _ => false,
            })
        }
        let may_jump = |name: &str| {
            let std_macro = EXPRESSION_MACROS.contains(&name)
                || DIVERGING_MACROS.contains(&name)
                || name == "matches";
            !std_macro || self.index.defines_macro(name)
        };
        if has_jump(f.body.to_token_stream(), &may_jump) {
            return false;
        }
        let (scope, subjects) = (self.scope.clone(), self.subjects.clone());
        let (hints, returned) = (self.hints.len(), self.returned.clone());
        let mut head = scope.clone();
        for pass in 0..PASSES {
            self.failed_call = None;
            self.scope = head.clone();
            self.subjects = subjects.clone();
            self.hints.truncate(hints);
            self.scope.push(BTreeMap::new());
            self.bind_pattern(&f.pat, element.clone());
            self.quiet += 1;
            self.loop_passes += 1;
            let first_run = self.block(&f.body);
            self.loop_passes -= 1;
            self.quiet -= 1;
            self.scope.pop();
            // A first run that certainly leaves the function (a failure under `?`, a
            // `return`; no `break` or `continue` here): code after the loop runs only where
            // it ran no time, with what came before it (helium's rank-4 `xs` into the layers).
            if pass == 0 && first_run == Value::Never {
                self.failed_call = None;
                self.scope = scope;
                self.subjects = subjects;
                self.first_run_leaves = true;
                return true;
            }
            // The next pass has another index: what this one hands on knows nothing of it.
            if let Some(size) = index {
                self.forget_size(size);
            }
            let next = merge(&head, &self.scope);
            let subjects_kept = self.subjects.len() == subjects.len()
                && self.subjects.iter().all(|(subject, (value, _))| {
                    subjects.get(subject).is_some_and(|(v, _)| v == value)
                });
            if same_values(&next, &head) && subjects_kept {
                self.scope = head;
                return true;
            }
            head = next;
        }
        self.scope = scope;
        self.subjects = subjects;
        self.hints.truncate(hints);
        self.returned = returned;
        false
    }

    /// The crate's `forward` of `impl candle_core::Module for key` (`forward_t` of `ModuleT`
    /// where `train`), if the index holds it.
    fn module_forward(&self, key: &str, train: bool) -> Option<FnId> {
        let (method, trait_name) = if train {
            ("forward_t", "ModuleT")
        } else {
            ("forward", "Module")
        };
        let ids = self.index.trait_impl_methods(key, method);
        ids.iter().copied().find(|id| {
            matches!(&self.index.fns[*id].trait_of, Some(Resolved::External(path))
                if path.last().is_some_and(|last| last == trait_name)
                    && matches!(path.first().map(String::as_str), Some("candle_core" | "candle_nn" | "candle")))
        })
    }

    /// After a method the walk does not know is called on `receiver`: a `mut` binding it
    /// belongs to may have changed, and what a clause says of a method's value on its root
    /// (`c.weight()`) may no longer hold (a cell behind `&`). Fields of `self` keep their
    /// clauses: they change only behind `&mut self`, which clauses do not trust.
    fn touched(&mut self, receiver: &syn::Expr) {
        self.touched_as(receiver, false);
    }

    /// After a method known to take `&self` ran on `receiver`: as [`Walker::touched`], but
    /// behind `&mut self` too, `self`'s fields keep their clauses as they do behind `&self`.
    fn touched_shared(&mut self, receiver: &syn::Expr) {
        self.touched_as(receiver, true);
    }

    fn touched_as(&mut self, receiver: &syn::Expr, shared: bool) {
        // A place (`shape`, `self.cache.k`); a value a call returned is the call's own (its
        // receiver was touched where that call was walked).
        let Some(root) = place_root(receiver) else {
            return;
        };
        if root != "self" {
            self.forget_in(|c| {
                c.kept.insert(root.clone());
            });
        } else if self.self_mut && !shared {
            // Behind `&mut self`, the method may change the place it is called on, and all
            // below it (`self.cache.append(..)` changes `self.cache.k`, not `self.q_proj`).
            match subject_text(strip_refs(receiver)).filter(|place| place != "self") {
                Some(place) => self
                    .subjects
                    .retain(|subject, _| settled(subject) || !may_read(subject, &place)),
                None => self.subjects.clear(),
            }
            return;
        }
        // A candle-nn layer's tensor (`self.x_proj.weight()`, which `stable_path` admitted)
        // is a field of a layer held in `self`'s fields: as fixed as they are.
        let layer_tensors: BTreeSet<String> = self
            .subjects
            .keys()
            .filter(|subject| subject.contains("()") && self.stable_path(subject))
            .cloned()
            .collect();
        self.subjects.retain(|subject, _| {
            subject.split(['.', '(']).next() != Some(root.as_str())
                || !subject.contains("()")
                || layer_tensors.contains(subject)
        });
    }

    /// After `self` itself is passed on behind `&mut self` (`helper(self)`): anything may
    /// have changed.
    fn passes_self(&mut self, args: &[&syn::Expr]) {
        if self.self_mut && args.iter().any(|arg| is_self_path(strip_refs(arg))) {
            self.subjects.clear();
        }
        self.reborrows(args.iter().copied());
    }

    /// `set(self.cfg)`, `let c: &mut Cfg = self.cfg;`: a field passed on by value behind
    /// `&mut self` may be a `&mut` (reborrowed, not moved): what is known below it is
    /// forgotten (the field itself, a size or a flag, keeps its value).
    fn reborrows<'e>(&mut self, exprs: impl Iterator<Item = &'e syn::Expr>) {
        if !self.self_mut {
            return;
        }
        for expr in exprs {
            let place = match unparen(expr) {
                syn::Expr::Reference(r) if r.mutability.is_none() => continue,
                other => strip_refs(other),
            };
            if let Some(text) = subject_text(place)
                && text.starts_with("self.")
            {
                // (`self.n_head.(size)` is the field's own value, a copy; a field's tensors, or
                // a list of them, may be a `&mut` the callee writes through.)
                let own_size = format!("{text}.(size)");
                self.subjects.retain(|subject, (value, _)| {
                    let copied = subject == &text
                        && !matches!(
                            value,
                            Value::Tensor(_) | Value::Tensors(_) | Value::TensorsEach(..)
                        );
                    copied || subject == &own_size || !may_read(subject, &text)
                });
            }
        }
    }

    /// Whether the body's own items may bring a trait into scope the index does not know: a
    /// `use` of something that is not the crates' read or std's or candle's, or a macro that
    /// may define items.
    fn body_may_import_traits(&self) -> bool {
        self.local_paths
            .iter()
            .flatten()
            .any(|(name, path)| match path {
                None => name.is_empty(),
                Some(path) => !path.first().is_some_and(|first| {
                    crate::index::KNOWN_CRATES.contains(&first.as_str())
                        || matches!(first.as_str(), "crate" | "self" | "super")
                }),
            })
    }

    /// Whether a method call on a value held as `access` reaches the method `id` named `name`:
    /// where its receiver is the first step Rust tries; over a whole crate also a later step,
    /// since every trait method of the crate's types is then in the index (the one candidate
    /// of that name), unless a blanket trait of std or candle has a method of that name.
    fn reaches(&self, id: FnId, access: Access, name: &str) -> bool {
        const BLANKET: &[&str] = &[
            "into",
            "try_into",
            "into_iter",
            "from",
            "try_from",
            "borrow",
            "borrow_mut",
            "to_owned",
            "clone_into",
            "type_id",
            "forward_t",
        ];
        /// Methods of `Arc<T>` and `Rc<T>` themselves (their traits'), tried before `T`'s.
        const POINTER_OWN: &[&str] = &[
            "clone",
            "clone_from",
            "deref",
            "as_ref",
            "borrow",
            "fmt",
            "eq",
            "ne",
            "partial_cmp",
            "lt",
            "le",
            "gt",
            "ge",
            "cmp",
            "max",
            "min",
            "clamp",
            "hash",
            "to_string",
            "source",
            "description",
            "cause",
            "provide",
            "type_id",
            "into",
            "try_into",
            "to_owned",
            "clone_into",
        ];
        let f = &self.index.fns[id];
        // A later step is reached only where no trait method can come first: the crate all
        // in sight, every trait in scope here known, no hidden `impl` (a macro's, one in a
        // `const _` block, a blanket one) with a method of that name.
        let later_step = || {
            self.index.whole_crate(f.module)
                && self.index.later_steps_in_sight(self.module(), f.module)
                && !self.body_may_import_traits()
                && !BLANKET.contains(&name)
                && !self.index.may_be_foreign_method(name)
                && !self.index.may_be_any_types_method(name)
                && !self.index.is_provided_method(name)
                && f.owner
                    .as_deref()
                    .is_none_or(|key| !self.index.is_derived(key))
        };
        if access == Access::Shared {
            return receiver_access(f.sig) == Some(Access::Ref)
                && !POINTER_OWN.contains(&name)
                && later_step();
        }
        match receiver_access(f.sig) {
            Some(method) if method == access => true,
            Some(_) => later_step(),
            None => false,
        }
    }

    /// Whether a call here reaches the function `id` of an `impl`: a trait's method only where
    /// the trait is in scope (by its own name, through the module or the body), since another
    /// trait of the same method may be in scope instead.
    fn reachable(&self, id: FnId) -> bool {
        // A private inherent method outside its module: rustc looks past it.
        if let Some(home) = self.index.fns[id].private_to
            && !self.index.within(self.module(), home)
        {
            return false;
        }
        match &self.index.fns[id].trait_of {
            None => true,
            Some(Resolved::Type(key)) => {
                let name = key.rsplit("::").next().unwrap_or_default().to_string();
                matches!(self.resolve(&[name]), Resolved::Type(k) if k == *key)
            }
            Some(Resolved::External(path)) => {
                let name = path.last().cloned().unwrap_or_default();
                matches!(self.resolve(&[name]),
                    Resolved::External(p) if canonical_trait(&p) == canonical_trait(path))
            }
            Some(_) => false,
        }
    }

    /// A method of another crate's type: `forward` of candle-nn's layers (their rules, with
    /// the weight a clause states for the receiver: `self.q_proj.weight()`), and
    /// `candle_contracts::nn::Embedding::forward`, the guarded lookup of its table (the
    /// receiver's `embeddings()`, where a clause names it).
    fn external_method(
        &mut self,
        path: &str,
        name: &str,
        args: &[Value],
        call: &syn::ExprMethodCall,
        arg_exprs: &[&syn::Expr],
    ) -> Value {
        // The crate's own trait may give the type a method of that name.
        if self.index.has_external_method_in(path, name, self.module()) {
            return Value::Other;
        }
        if let Some(layer) = Layer::from_path(path) {
            // A layer's `forward` is `Module`'s (`forward_t`, `ModuleT`'s): by method syntax
            // only with that trait in scope, or another trait's method of the name is called.
            let candle_trait = |name: &str| {
                matches!(self.resolve(&[name.to_string()]), Resolved::External(p)
                    if p.last().is_some_and(|last| last == name)
                        && matches!(p.first().map(String::as_str), Some("candle_core" | "candle_nn")))
            };
            return match (name, args) {
                ("forward", [_]) if !candle_trait("Module") => Value::Other,
                ("forward_t", [_, _]) if !candle_trait("ModuleT") => Value::Other,
                ("forward", [xs]) | ("forward_t", [xs, _]) => {
                    let xs = match xs {
                        Value::Tensor(xs) => xs.clone(),
                        _ => TensorType::unknown(),
                    };
                    self.layer_forward(layer, &call.receiver, &xs, arg_exprs.first().copied())
                }
                ("eps" | "momentum", []) if is_batch_norm(path) => Value::Float,
                // A `BatchNorm`'s weight and bias have its running statistics' `[C]` (its
                // constructors and `batch_norm`'s `VarBuilder` take all four of
                // `num_features`), their dtype not known.
                ("weight_and_bias", []) if is_batch_norm(path) => {
                    let stats = subject_text(strip_refs(&call.receiver)).and_then(|place| {
                        ["running_mean()", "running_var()"].iter().find_map(|stat| {
                            match self.subject_value_of(&format!("{place}.{stat}")) {
                                Some(Value::Tensor(t)) => match t.shape.dims() {
                                    Some([c]) if !c.is_unknown() => Some(c.clone()),
                                    _ => None,
                                },
                                _ => None,
                            }
                        })
                    });
                    match stats {
                        Some(c) => {
                            let part = Value::Tensor(TensorType::new(
                                candle_contracts_shapes::dtype::DTypeSet::ANY,
                                Shape::new(vec![c]),
                            ));
                            Value::Optional(Box::new(Value::Tuple(vec![part.clone(), part])))
                        }
                        None => Value::Other,
                    }
                }
                _ => Value::Other,
            };
        }
        // candle-nn's kv caches: `append(&k, &v)` gives all the steps so far, each of its
        // input's rank and dtype (the cache's buffer or `cat` takes no other). Where the
        // constructors in sight give the dim it grows on (`ConcatKvCache::new(2)`), every other
        // dim is the input's (`slice_set` and `cat` require them equal); how long it grew is
        // not followed.
        if KV_CACHES.contains(&path) && name == "append" {
            // A name a `match` bound to an enum's variant (`KvCache::Normal(cache)`) is that
            // variant's place (`self.kv_cache@Normal`).
            let grows = subject_text(strip_refs(&call.receiver))
                .map(
                    |text| match self.lookup(&text).and_then(|b| b.place.clone()) {
                        Some(place) if !text.contains('.') => place,
                        _ => text,
                    },
                )
                .and_then(|place| self.subjects.get(&kv_cache_dim(&place)))
                .and_then(|(value, _)| match value {
                    Value::Int(dim) => dim.as_literal(),
                    _ => None,
                });
            let so_far = |t: &TensorType| match t.shape.dims() {
                Some(dims) => {
                    let kept = match grows {
                        Some(grows) if (grows as usize) < dims.len() => {
                            let mut kept = dims.to_vec();
                            kept[grows as usize] = Dim::Unknown;
                            kept
                        }
                        _ => vec![Dim::Unknown; dims.len()],
                    };
                    Value::Tensor(t.with_shape(Shape::new(kept)))
                }
                None => Value::Tensor(TensorType::new(t.dtypes, Shape::unknown())),
            };
            // `self.kv_cache.current_seq_len() = P` in the contract: the keys hold those `P`
            // steps and this one's (the values may have been appended apart, through
            // `v_cache_mut()` or with other lengths, so not theirs).
            let held = subject_text(strip_refs(&call.receiver))
                .filter(|_| GROWING_KV_CACHES.contains(&path))
                .and_then(|place| self.subject_value_of(&format!("{place}.current_seq_len()")))
                .and_then(|value| match value {
                    Value::Int(held) if !held.is_unknown() => Some(held),
                    _ => None,
                });
            // `self.kv_cache.v()?: f32[B, KVH, P, HD] else P = 0` of a `ConcatKvCache`: the
            // values hold `P` steps (none where the cache is empty) and this one's.
            let held_values = subject_text(strip_refs(&call.receiver))
                .filter(|_| path == CONCAT_KV_CACHE)
                .and_then(|place| {
                    let optional = format!("{place}.v()?");
                    let (Value::Optional(inner), Some(Origin::Clause(origin))) =
                        self.subjects.get(&format!("{place}.v()"))?
                    else {
                        return None;
                    };
                    let Value::Tensor(before) = &**inner else {
                        return None;
                    };
                    let grows = grows? as usize;
                    let steps = before.shape.dims()?.get(grows)?.clone();
                    // The clause as written names the dim its `else` gives.
                    let stated = [self.f.contract, &self.contract].iter().any(|contract| {
                        let written = contract.clauses.iter().find(|clause| {
                            clause.subject.split_whitespace().collect::<String>() == optional
                        });
                        let name = written
                            .and_then(|clause| clause.spec.shape.dims()?.get(grows)?.as_symbol());
                        contract.absent_zero.iter().any(|(subject, dim)| {
                            subject.split_whitespace().collect::<String>() == optional
                                && Some(dim.as_str()) == name
                        })
                    });
                    (*origin == optional && stated).then_some(steps)
                });
            let keys = |k: &TensorType, held: &Option<Dim>| match (so_far(k), grows, held) {
                (Value::Tensor(out), Some(grows), Some(held)) => {
                    match k.shape.dims().and_then(|dims| dims.get(grows as usize)) {
                        Some(step) if !step.is_unknown() => {
                            Value::Tensor(out.with_shape(out.shape.clone().with_dim(
                                Axis::Front(grows as usize),
                                held.clone().add(step.clone()),
                            )))
                        }
                        _ => Value::Tensor(out),
                    }
                }
                (out, _, _) => out,
            };
            return match args {
                [Value::Tensor(k), Value::Tensor(v)] => {
                    Value::Tuple(vec![keys(k, &held), keys(v, &held_values)])
                }
                _ => Value::Other,
            };
        }
        if path != "candle_contracts::nn::Embedding" || name != "forward" {
            return Value::Other;
        }
        let table_text =
            subject_text(strip_refs(&call.receiver)).map(|r| format!("{r}.embeddings()"));
        let table = table_text
            .as_deref()
            .and_then(|text| self.subject_value_of(text))
            .unwrap_or_else(Value::tensor_unknown);
        let rule_args = [args.first().map_or(Arg::Unknown, Value::arg), table.arg()];
        match function_under(&self.facts, "candle_contracts::nn::embedding", &rule_args) {
            Ok(t) => Value::Tensor(t),
            Err(mismatch) => {
                let mismatch = Mismatch {
                    op: "nn::Embedding::forward".to_string(),
                    ..*mismatch
                };
                match (mismatch.argument, table_text) {
                    (Argument::Position(1), Some(text)) => {
                        let origin = self
                            .subjects
                            .get(&text)
                            .and_then(|(_, place)| place.clone())
                            .map(|place| {
                                (
                                    place,
                                    format!("`{text}` is declared `{}` here", mismatch.found),
                                )
                            });
                        self.record(
                            &mismatch,
                            Site::of(&call.receiver),
                            &text,
                            origin,
                            FixSite::default(),
                        );
                    }
                    _ => self.report(&mismatch, &call.receiver, arg_exprs, call.to_token_stream()),
                }
                Value::tensor_unknown()
            }
        }
    }

    /// `layer.forward(xs)` of a candle-nn layer `layer` (the code of the receiver), with the
    /// weight its clause states (`self.q_proj.weight(): f32[O, I]`); `input` is the code of
    /// `xs`, where a mismatch is reported.
    fn layer_forward(
        &mut self,
        layer: Layer,
        receiver: &syn::Expr,
        xs: &TensorType,
        input: Option<&syn::Expr>,
    ) -> Value {
        let weight_text = layer.weight_key().and_then(|accessor| {
            let text = self.layer_place(receiver)?;
            Some(format!("{text}.{accessor}"))
        });
        let weight = weight_text
            .as_deref()
            .and_then(|text| self.subject_value_of(text))
            .and_then(|value| match value {
                Value::Tensor(weight) => Some(weight),
                _ => None,
            })
            .unwrap_or_else(TensorType::unknown);
        // An `Embedding` its constructor built with `embedding(V, E, vb)` gives rows of `E`
        // (its `hidden_size` is the table's width), also where a clause states the table;
        // one only a clause states may have been built by `Embedding::new(table,
        // hidden_size)` with any other size.
        let constructed = weight_text.as_deref().is_some_and(|text| {
            self.subjects
                .get(text)
                .is_some_and(|(_, origin)| origin.is_none() || self.built_tables.contains(text))
        });
        // A layer clause `Embedding[V, E]` states `hidden_size() = E` too (the guard checks it).
        let stated = self
            .layer_place(receiver)
            .and_then(|text| self.subject_value_of(&format!("{text}.hidden_size()")))
            .and_then(|value| match value {
                Value::Int(size) if layer == Layer::Embedding && !size.is_unknown() => Some(size),
                _ => None,
            });
        let hidden_size = match weight.shape.dims() {
            _ if stated.is_some() => stated,
            Some([_, hidden_size]) if layer == Layer::Embedding && constructed => {
                Some(hidden_size.clone())
            }
            _ => None,
        };
        let built_as = |subject: fn(&str) -> String| {
            layer == Layer::Activation
                && subject_text(strip_refs(receiver))
                    .is_some_and(|text| self.subjects.contains_key(&subject(&text)))
        };
        if built_as(shape_keeping) {
            return Value::Tensor(xs.clone());
        }
        // Every variant of candle-nn 0.11 keeps the shape but `Swiglu`, which halves the last
        // dim (`chunk(2, D::Minus1)` of an even dim: an odd one fails). A variant not known
        // here (`cfg.hidden_act`) gives one or the other, a size of its own (`?1`).
        if layer == Layer::Activation
            && let Some(last) = xs.shape.from_end(1).filter(|last| !last.is_unknown())
        {
            let halved = xs.with_shape(
                xs.shape
                    .clone()
                    .with_dim(Axis::Back(1), last.clone().div(Dim::lit(2))),
            );
            if built_as(last_dim_halving) {
                return Value::Tensor(halved);
            }
            let mut joiner = self.joiner();
            let before = joiner.count;
            let value = Value::Tensor(xs.clone()).join_with(&Value::Tensor(halved), &mut joiner);
            if let (Some(before), Some(after)) = (before, joiner.count) {
                self.activation_joins
                    .extend((before + 1..=after).map(|n| format!("?{n}")));
            }
            self.joined(joiner);
            return value;
        }
        let place = self.layer_place(receiver);
        let built = match place
            .as_ref()
            .and_then(|text| self.subjects.get(&conv_geometry(text)))
        {
            Some((Value::Tuple(parts), _)) => match parts.as_slice() {
                [
                    Value::Int(padding),
                    Value::Int(stride),
                    Value::Int(dilation),
                    Value::Int(groups),
                ] => ConvGeometry {
                    padding: padding.clone(),
                    stride: stride.clone(),
                    dilation: dilation.clone(),
                    groups: groups.clone(),
                },
                _ => ConvGeometry::default(),
            },
            _ => ConvGeometry::default(),
        };
        // `self.conv: Conv2d[..] with stride = S, padding = PAD`: a setting the guard checked,
        // in the contract's names (a return clause's `(H + 2 * PAD - K) / S + 1` is then
        // compared in them), before what a constructor seen gives (`padding: k / 2`).
        let setting = |built: Dim, name: &str| match &place {
            Some(text) => match self.subject_value_of(&format!("{text}.config().{name}")) {
                Some(Value::Int(d)) if !d.is_unknown() => d,
                _ => built,
            },
            None => built,
        };
        let geometry = ConvGeometry {
            padding: setting(built.padding, "padding"),
            stride: setting(built.stride, "stride"),
            dilation: setting(built.dilation, "dilation"),
            groups: setting(built.groups, "groups"),
        };
        match self
            .facts
            .under(|| layer::forward_with(layer, xs, &weight, &geometry))
        {
            Ok(t) => match hidden_size {
                Some(hidden_size) if t.shape.from_end(1).is_some() => Value::Tensor(
                    t.with_shape(t.shape.clone().with_dim(Axis::Back(1), hidden_size)),
                ),
                _ => Value::Tensor(t),
            },
            Err(mismatch) => {
                if let Some(input) = input {
                    self.report(&mismatch, input, &[input], input.to_token_stream());
                }
                Value::tensor_unknown()
            }
        }
    }

    /// `receiver.name(args)` of a candle tensor `t`; `call` is the whole call, quoted in a
    /// report (a method call, or `Tensor::name(&receiver, ..)`).
    fn tensor_method(
        &mut self,
        t: &TensorType,
        name: &str,
        args: &[Value],
        receiver: &syn::Expr,
        call: &dyn ToTokens,
        arg_exprs: &[&syn::Expr],
    ) -> Value {
        if let Err(mismatch) = check_read_rank(name, t) {
            self.report(&mismatch, receiver, arg_exprs, call.to_token_stream());
            return Value::Other;
        }
        // `let shape = q.shape();` then `.reshape(shape)`: its dims, where its rank is known.
        if matches!(name, "shape" | "dims") && args.is_empty() {
            return match t.shape.dims() {
                Some(dims) => Value::Tuple(dims.iter().cloned().map(Value::Int).collect()),
                None if !t.shape.is_unknown() => Value::Shape(t.shape.clone()),
                None => Value::Other,
            };
        }
        // `let dtype = xs.dtype();` then `.to_dtype(dtype)`: the one dtype it can be.
        if name == "dtype" && args.is_empty() {
            return t.dtypes.single().map_or(Value::Other, Value::DType);
        }
        if name == "dims1" {
            return Value::Int(match t.shape.dims() {
                Some([n]) => n.clone(),
                _ => Dim::Unknown,
            });
        }
        if let Some(n) = dims_count(name) {
            let (front, back) = (t.shape.front(), t.shape.back());
            return Value::Tuple(match t.shape.dims() {
                Some(dims) if dims.len() == n => dims.iter().cloned().map(Value::Int).collect(),
                // `[B, .., E]` read as three dims: `B`, one unknown, `E`.
                None if front.len() + back.len() <= n => {
                    let middle = n - front.len() - back.len();
                    front
                        .iter()
                        .cloned()
                        .chain(std::iter::repeat_n(Dim::Unknown, middle))
                        .chain(back.iter().cloned())
                        .map(Value::Int)
                        .collect()
                }
                _ => vec![Value::Int(Dim::Unknown); n],
            });
        }
        match name {
            "dim" => {
                let index = args.first().map(Value::arg).and_then(|a| a.dim_index());
                let dim = index.map_or(Dim::Unknown, |index| match t.shape.resolve(index) {
                    candle_contracts_shapes::shape::Resolved::At(axis) => t.shape.get(axis),
                    _ => Dim::Unknown,
                });
                Value::Int(dim)
            }
            "elem_count" => Value::Int(t.shape.elem_count()),
            "rank" if args.is_empty() => Value::Int(match t.shape.rank() {
                candle_contracts_shapes::Rank::Exactly(rank) => Dim::lit(rank as u64),
                _ => Dim::Unknown,
            }),
            _ if KEEP_OK.contains(&name) => Value::Tensor(t.clone()),
            _ if let Some(outcome) = parts_under(
                &self.facts,
                name,
                t,
                &args.iter().map(Value::arg).collect::<Vec<_>>(),
            ) =>
            {
                match outcome {
                    Ok(Parts::Each(ts)) => Value::Tensors(ts),
                    Ok(Parts::All(part)) => Value::TensorsEach(part, Dim::Unknown),
                    Err(mismatch) => {
                        self.report(&mismatch, receiver, arg_exprs, call.to_token_stream());
                        Value::Other
                    }
                }
            }
            _ if has_method_rule(name) || UNKNOWN_TENSOR_METHODS.contains(&name) => {
                let args: Vec<Arg> = args.iter().map(Value::arg).collect();
                match method_under(&self.facts, name, t, &args) {
                    Ok(result) => Value::Tensor(result),
                    Err(mismatch) => {
                        self.report(&mismatch, receiver, arg_exprs, call.to_token_stream());
                        Value::tensor_unknown()
                    }
                }
            }
            _ => Value::Other,
        }
    }

    fn call(&mut self, call: &syn::ExprCall) -> Value {
        let layer_body = self.builds_func(call);
        let args: Vec<Value> = call
            .args
            .iter()
            .map(|a| {
                self.next_is_layer_body = layer_body && matches!(unparen(a), syn::Expr::Closure(_));
                let value = self.operand(a);
                self.next_is_layer_body = false;
                value
            })
            .collect();
        if layer_body && let Some(syn::Expr::Closure(closure)) = call.args.first().map(unparen) {
            return self.func_of(closure).map_or(Value::Other, Value::Func);
        }
        self.passes_self(&call.args.iter().collect::<Vec<_>>());
        let arg_exprs: Vec<&syn::Expr> = call.args.iter().collect();
        // A failure of this call's own rule (its arguments walked already).
        let before = self.failures;
        let why = (self.why_wanted && self.let_why.is_none()).then(|| call_why(call, &args));
        let value = self.call_with(call, args, arg_exprs);
        self.failed_call = (self.failures > before).then(|| expr_id(call));
        // std's numbers' functions (`u32::min`) give no tensor.
        let of_number = matches!(unparen(&call.func), syn::Expr::Path(p)
            if p.path.segments.first().is_some_and(|s| self.is_primitive(&name_of(&s.ident))));
        if let Some(why) = why
            && !of_number
        {
            self.note_why(&value, || why);
        }
        value
    }

    /// The `Func` of `closure`, with what it captures here; `None` where the function
    /// walked is not one the index holds alone (see [`Walker::read_let_layers`]).
    fn func_of(&self, closure: &syn::ExprClosure) -> Option<FuncRef> {
        let owner = match self.inlined.last() {
            Some(&id) => id,
            None => self.own_id?,
        };
        let mut closures = Closures::default();
        closures.visit_block(self.f.block);
        let nth = closures.0.iter().position(|c| std::ptr::eq(*c, closure))?;
        Some(FuncRef(std::rc::Rc::new(FuncBody {
            owner,
            nth,
            scope: self.scope.clone(),
            local_paths: self.local_paths.clone(),
            subjects: self.subjects.clone(),
            field_dims: self.field_dims.clone(),
            built_tables: self.built_tables.clone(),
            facts: self.facts.clone(),
        })))
    }

    /// `xs.apply(&block)` of a `Func` the walk built: its closure walked with `xs`, in what it
    /// captured, quietly (a failure there is reported where the closure stands, for any
    /// input, or not at all), and what it gives; unknown where that is not a tensor (a
    /// failure), or the closure may `return` early.
    fn apply_func(&self, func: &FuncRef, xs: &TensorType) -> Value {
        self.apply_func_failing(func, xs).0
    }

    /// [`Walker::apply_func`], and the closure's certain failure for `xs` (see
    /// [`Walker::func_failure`]).
    fn apply_func_failing(
        &self,
        func: &FuncRef,
        xs: &TensorType,
    ) -> (Value, Option<(String, String)>) {
        let body = &func.0;
        let def = &self.index.fns[body.owner];
        let mut closures = Closures::default();
        closures.visit_block(def.block);
        let Some(closure) = closures.0.get(body.nth).copied() else {
            return (Value::tensor_unknown(), None);
        };
        if self.func_depth >= FUNC_DEPTH || crate::construct::closure_returns(&closure.body) {
            return (Value::tensor_unknown(), None);
        }
        let _file_tokens = crate::index::FileTokens::enter(self.index);
        let mut nested = Walker::new(self.index, self.source, Function::of(def, &NO_CLAUSES));
        nested.whys_off = true;
        nested.quiet = 1;
        nested.inlined = self.inlined.iter().copied().chain([body.owner]).collect();
        nested.func_depth = self.func_depth + 1;
        nested.scope = body.scope.clone();
        nested.local_paths = body.local_paths.clone();
        nested.subjects = body.subjects.clone();
        nested.field_dims = body.field_dims.clone();
        nested.built_tables = body.built_tables.clone();
        nested.facts = body.facts.clone();
        nested.closures = 1;
        nested.layer_bodies = 1;
        nested.taken = true;
        nested.scope.push(BTreeMap::new());
        for (position, input) in closure.inputs.iter().enumerate() {
            let pat = match input {
                syn::Pat::Type(typed) => &*typed.pat,
                pat => pat,
            };
            match pat {
                syn::Pat::Ident(ident)
                    if position == 0 && ident.by_ref.is_none() && ident.subpat.is_none() =>
                {
                    nested.bind_let(&ident.ident, Value::Tensor(xs.clone()))
                }
                pat => nested.bind_unknown(pat),
            }
        }
        let value = match nested.expr(&closure.body) {
            Value::Tensor(t) => Value::Tensor(t),
            _ => Value::tensor_unknown(),
        };
        (value, nested.func_failure)
    }

    /// `xs.apply(&block)` of a `Func` whose closure certainly fails for `xs` (see
    /// [`Walker::func_failure`]): a failure of this call, said here with the closure's own
    /// mismatch (where this code is reported in at all).
    fn report_func_failure(
        &mut self,
        call: &syn::ExprMethodCall,
        func: &FuncRef,
        xs: &TensorType,
        (inner, note): (String, String),
    ) {
        self.failures += 1;
        let builder = &self.index.fns[func.0.owner].display;
        let layer = call
            .args
            .first()
            .map(|arg| one_line(&self.text(strip_refs(arg))))
            .unwrap_or_default();
        let message = format!(
            "`Func` `{layer}` certainly fails on `{xs}`: in its closure (built in \
             `{builder}`), {inner}"
        );
        // Applied inside another `Func`'s closure followed so: that one's failure too.
        if self.func_depth > 0
            && self.quiet == 1
            && self.taken
            && self.closures == 1
            && self.func_failure.is_none()
        {
            self.func_failure = Some((message.clone(), note.clone()));
        }
        if !self.taken || self.closures > self.layer_bodies || self.quiet > 0 {
            return;
        }
        self.findings.push(Finding {
            site: Site::of(call),
            message,
            note,
            help: None,
            replacement: None,
            origin: None,
        });
    }

    /// Whether `call` builds a candle-nn `Func` or `FuncT` of the closure it is given
    /// (`Func::new(move |xs| ..)`, `candle_nn::func(|xs| ..)`): that closure is the layer's
    /// `forward`, run with a `&Tensor` where the layer is applied.
    fn builds_func(&self, call: &syn::ExprCall) -> bool {
        let syn::Expr::Path(path) = unparen(&call.func) else {
            return false;
        };
        if path.qself.is_some() || call.args.len() != 1 {
            return false;
        }
        let segments = path_segments(&path.path);
        if segments.len() == 1 && self.lookup(&segments[0]).is_some() {
            return false;
        }
        let Resolved::External(full) = self.resolve(&segments) else {
            return false;
        };
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        matches!(
            full.as_slice(),
            ["candle_nn", "Func" | "FuncT", "new"]
                | ["candle_nn", "func", "Func" | "FuncT", "new"]
                | ["candle_nn", "func" | "func_t"]
                | ["candle_nn", "func", "func" | "func_t"]
        )
    }

    /// Keeps `why` as the reason a `let`'s shape is not known, where `value` is the first
    /// that lost it (see `let_why`).
    fn note_why(&mut self, value: &Value, why: impl FnOnce() -> String) {
        self.note_cause(value, || {
            let why = why();
            (why.clone(), why)
        });
    }

    /// [`Walker::note_why`], with what `shapes` shows and the first cause apart.
    fn note_cause(&mut self, value: &Value, why: impl FnOnce() -> (String, String)) {
        if self.why_wanted && self.let_why.is_none() && vague(value) {
            self.let_why = Some(why());
        }
    }

    fn call_with(
        &mut self,
        call: &syn::ExprCall,
        args: Vec<Value>,
        arg_exprs: Vec<&syn::Expr>,
    ) -> Value {
        let syn::Expr::Path(path) = &*call.func else {
            self.expr(&call.func);
            return Value::Other;
        };
        if path.qself.is_some() {
            return Value::Other;
        }
        let segments = path_segments(&path.path);
        if let [name] = segments.as_slice() {
            if self.lookup(name).is_some() {
                return Value::Other;
            }
            if name == "Ok" {
                return args.into_iter().next().unwrap_or(Value::Other);
            }
            // std's `Some(x)`: an `Option` of `x`.
            if name == "Some" && args.len() == 1 && self.is_primitive(name) {
                return Value::Optional(Box::new(args.into_iter().next().unwrap_or(Value::Other)));
            }
        }
        // `f64::sqrt(x)`, `f32::max(a, b)`: a float's own functions give a float.
        if let [float, name] = segments.as_slice()
            && (float == "f64" || float == "f32")
            && FLOAT_METHODS.contains(&name.as_str())
            && self.lookup(float).is_none()
            && matches!(self.resolve(std::slice::from_ref(float)), Resolved::Unknown)
        {
            return Value::Float;
        }
        // `Vec::new()`, `Vec::with_capacity(n)`: std's, where the crate names nothing `Vec`.
        if let [vec, name] = segments.as_slice()
            && vec == "Vec"
            && (name == "new" && args.is_empty() || name == "with_capacity" && args.len() == 1)
            && self.lookup(vec).is_none()
            && self.is_primitive(vec)
        {
            return Value::EmptyVec;
        }
        if let [.., d, minus] = segments.as_slice()
            && d == "D"
            && minus == "Minus"
            && let Some(Value::Int(k)) = args.first()
            && let Some(k) = k.as_literal().and_then(|k| usize::try_from(k).ok())
        {
            return Value::DimIndex(DimIndex::FromEnd(k));
        }
        match self.resolve(&segments) {
            Resolved::Fn(id) => self.call_fn(id, None, &args, &arg_exprs),
            Resolved::Assoc(key, name) => match self.index.methods(&key, &name) {
                [id] if self.reachable(*id) => {
                    let id = *id;
                    if self.index.fns[id].sig.receiver().is_some() {
                        // `Model::forward(&model, &xs)`: the receiver comes first.
                        let receiver = arg_exprs.first().copied();
                        match (args.get(1..), arg_exprs.get(1..)) {
                            (Some(args), Some(exprs)) => self.call_fn(id, receiver, args, exprs),
                            _ => Value::Other,
                        }
                    } else {
                        self.call_fn(id, None, &args, &arg_exprs)
                    }
                }
                _ => Value::Other,
            },
            // `Module::forward(&self.q_proj, &xs)`: the layer's `forward`.
            Resolved::External(path)
                if matches!(
                    path.iter()
                        .rev()
                        .take(2)
                        .map(String::as_str)
                        .collect::<Vec<_>>()[..],
                    ["forward", "Module"] | ["forward_t", "ModuleT"]
                ) && matches!(
                    path.first().map(String::as_str),
                    Some("candle_core" | "candle_nn")
                ) =>
            {
                match (args.first(), args.get(1), arg_exprs.first()) {
                    (Some(Value::External(layer_path)), Some(xs), Some(layer_expr))
                        if !self.index.has_external_method_in(
                            layer_path,
                            "forward",
                            self.module(),
                        ) =>
                    {
                        match Layer::from_path(layer_path) {
                            Some(layer) => {
                                let xs = match xs {
                                    Value::Tensor(xs) => xs.clone(),
                                    _ => TensorType::unknown(),
                                };
                                self.layer_forward(
                                    layer,
                                    strip_refs(layer_expr),
                                    &xs,
                                    arg_exprs.get(1).copied(),
                                )
                            }
                            None => Value::Other,
                        }
                    }
                    _ => Value::Other,
                }
            }
            // `std::process::exit(1)`: nothing after it runs.
            Resolved::External(path)
                if matches!(
                    path.iter().map(String::as_str).collect::<Vec<_>>()[..],
                    ["std", "process", "exit" | "abort"]
                ) =>
            {
                Value::Never
            }
            Resolved::External(path) => self.external_call(&path, &args, &arg_exprs, call),
            // candle's `flash_attn` with its feature and without: whichever is compiled in
            // gives the value, so what both give is certain.
            Resolved::Unknown
                if let [name] = segments.as_slice()
                    && self.lookup(name).is_none()
                    // A function or `use` of the name in the body hides the module's.
                    && !self
                        .local_paths
                        .iter()
                        .any(|frame| frame.contains_key(name) || frame.contains_key(""))
                    && let Some(twins) = self.index.twin_fns(self.module(), name)
                    && twins.iter().all(|&id| {
                        matches!(self.return_kind(&self.index.fns[id]), Kind::Tensor)
                    }) =>
            {
                // Each followed with these arguments (one that panics at once gives
                // nothing), their values joined.
                let mut joined = Value::Never;
                let mut failure = None;
                let mut completes = false;
                for &id in twins {
                    // A twin that names a crate the package does not declare never compiles.
                    if self.index.names_an_undeclared_crate(id) {
                        continue;
                    }
                    let (value, failed) = match self.inline_twin(id, &args) {
                        Some((value, failed)) => (value, failed),
                        None => (Value::tensor_unknown(), None),
                    };
                    completes |= failed.is_none() && value != Value::Never;
                    if failure.is_none() {
                        failure = failed.map(|failed| (id, failed));
                    }
                    let value = match value {
                        Value::Tensor(t) => Value::Tensor(t),
                        Value::Never => Value::Never,
                        _ => Value::tensor_unknown(),
                    };
                    joined = joined.join(&value);
                }
                // One twin certainly fails and the other never returns (candle-flash-attn's
                // kernel given `k` of another dtype, and the stub without the feature): the
                // call never succeeds, and the failure is said at the argument it is of.
                let failed = failure.is_some();
                if !completes && let Some((id, (mismatch, given))) = failure {
                    self.report_helper_failure(id, &mismatch, &given, &args, &arg_exprs);
                }
                match joined {
                    // Each twin compiled in never returns (the stub of a package without
                    // candle-flash-attn): nor does the call.
                    Value::Never
                        if !failed
                            && twins
                                .iter()
                                .any(|&id| self.index.names_an_undeclared_crate(id)) =>
                    {
                        Value::Never
                    }
                    Value::Never => Value::tensor_unknown(),
                    value => value,
                }
            }
            _ => Value::Other,
        }
    }

    /// A call into candle, candle-nn or `candle_contracts::nn`, through the engine's rules.
    fn external_call(
        &mut self,
        path: &[String],
        args: &[Value],
        arg_exprs: &[&syn::Expr],
        call: &syn::ExprCall,
    ) -> Value {
        // `conv2d(cin, cout, 3, config, vb.pp("conv"))?`: a candle-nn layer of that type.
        if let Some(layer) = layer_built_by(path) {
            return Value::External(layer);
        }
        let mut path: Vec<&str> = path.iter().map(String::as_str).collect();
        // `candle_core::tensor::Tensor::cat` is `candle_core::Tensor::cat`.
        if path.first() == Some(&"candle_core")
            && path.len() > 3
            && path[path.len() - 2] == "Tensor"
        {
            path = vec!["candle_core", "Tensor", path[path.len() - 1]];
        }
        let full = path.join("::");
        let returns_tensor = match path.as_slice() {
            ["candle_core", "Tensor", name] => matches!(
                *name,
                "cat"
                    | "stack"
                    | "new"
                    | "zeros"
                    | "ones"
                    | "zeros_like"
                    | "ones_like"
                    | "arange"
                    | "arange_step"
                    | "from_vec"
                    | "from_slice"
                    | "rand"
                    | "randn"
                    | "full"
                    | "eye"
                    | "tril2"
                    | "triu2"
            ),
            ["candle_nn", "ops" | "loss", _] => true,
            ["candle_nn", "rotary_emb", name] => matches!(*name, "rope" | "rope_i" | "rope_thd"),
            ["candle_flash_attn", "flash_attn"] => true,
            _ => contract_ops().iter().any(|op| op.path == full),
        };
        // `Tensor::clamp(&xs, lo, hi)`: the method, called on its first argument.
        if let (["candle_core", "Tensor", name], false, Some(Value::Tensor(t)), Some(receiver)) = (
            path.as_slice(),
            returns_tensor,
            args.first(),
            arg_exprs.first(),
        ) && (has_method_rule(name) || *name == "chunk")
        {
            let t = t.clone();
            return self.tensor_method(
                &t,
                name,
                &args[1..],
                strip_refs(receiver),
                call,
                &arg_exprs[1..],
            );
        }
        if !returns_tensor {
            return Value::Other;
        }
        let rule_args: Vec<Arg> = args.iter().map(Value::arg).collect();
        // `Tensor::new(&[3u32], ..)`, `arange(0u32, n as u32, ..)`: the Rust type of the
        // values is the dtype.
        // A cast's type is std's only where the crate names nothing so (`type u32 = f32;`).
        let primitive = |name: &str| self.is_primitive(name);
        let written = match full.as_str() {
            "candle_core::Tensor::new" => arg_exprs
                .first()
                .and_then(|e| literal_dtype(e, &primitive).or_else(|| self.scalar_param_dtype(e))),
            "candle_core::Tensor::arange" | "candle_core::Tensor::arange_step" => arg_exprs
                .iter()
                .take(2)
                .find_map(|e| literal_dtype(e, &primitive)),
            // `Tensor::from_slice(&mask, (t, t), dev)` of a `Vec<f32>`.
            "candle_core::Tensor::from_slice" | "candle_core::Tensor::from_vec" => {
                match args.first() {
                    Some(Value::Numbers(dtype, _)) => Some(*dtype),
                    // `from_slice(&[1f32, 2., 3., 4.], (2, 2), dev)`.
                    _ => arg_exprs.first().and_then(|e| literal_dtype(e, &primitive)),
                }
            }
            _ => None,
        };
        // `Tensor::new(&position_ids[..], dev)` of a `Vec` of host numbers: one dim, as long
        // as the list.
        if full == "candle_core::Tensor::new"
            && let Some(Value::Numbers(dtype, count)) = args.first()
        {
            return Value::Tensor(TensorType::new(
                candle_contracts_shapes::DTypeSet::only(*dtype),
                Shape::new(vec![count.clone()]),
            ));
        }
        match function_under(&self.facts, &full, &rule_args) {
            Ok(t) if let Some(dtype) = written => Value::Tensor(TensorType::new(
                candle_contracts_shapes::DTypeSet::only(dtype),
                t.shape,
            )),
            Ok(t) => Value::Tensor(t),
            Err(mismatch) => {
                let receiver = arg_exprs.first().copied().unwrap_or(&call.func);
                self.report(&mismatch, receiver, arg_exprs, call.to_token_stream());
                Value::tensor_unknown()
            }
        }
    }

    /// A call of a function of the crates read: its arguments against its contract (and its
    /// `self.*` clauses against the caller's clauses on the receiver), and its result from
    /// its `return` clause (or its signature).
    fn call_fn(
        &mut self,
        id: FnId,
        receiver: Option<&syn::Expr>,
        args: &[Value],
        arg_exprs: &[&syn::Expr],
    ) -> Value {
        let callee = &self.index.fns[id];
        let kind = self.return_kind(callee);
        let returns_tensor = matches!(kind, Kind::Tensor);
        let returns_func = matches!(&kind, Kind::External(path) if is_func_type(path));
        let unknown_result = kind.unknown_value();
        // `#[cfg(..)]` on a parameter: the arguments may line up with other parameters.
        if attributed_parameters(callee.sig) {
            return unknown_result;
        }
        // A helper followed at its call: what its body gives for these arguments.
        let on_self = receiver.is_some_and(|r| is_self_path(strip_refs(r)));
        // A field of `self` (`self.patch_embeddings`), by its path.
        let place = receiver
            .filter(|r| !is_self_path(strip_refs(r)))
            .and_then(|r| subject_text(strip_refs(r)))
            .filter(|text| {
                text.starts_with("self.") && !text.contains(['(', '[', '?', '{']) && {
                    let root_is_self = self.is_param("self");
                    root_is_self && !through_interior_mutability(text)
                }
            });
        // A helper whose body is one `unimplemented!()` (candle's `flash_attn` without its
        // feature) never returns: a branch calling it gives nothing to join.
        let panics = callee.contract.is_none()
            && !callee.conditional
            && callee.sig.asyncness.is_none()
            && callee.attrs.iter().all(crate::index::is_inert_attribute)
            && !self.index.is_wrapped(id)
            && panics_at_once(callee.block, &|name| {
                !self.index.std_macro_in_scope(callee.module, name)
            });
        // A helper that never returns `Ok` (`fn unsupported(&self) -> Result<()> { bail!(..)
        // }`), its success taken (`self.unsupported()?`): nothing after it runs, so nothing
        // after it is reported. (Its value is not `Never`: where an `if` branch calls it, the
        // other branch does not decide the `if`, as a caller may handle the error.)
        let returns_never = matches!(&callee.sig.output,
            syn::ReturnType::Type(_, ty) if matches!(**ty, syn::Type::Never(_)));
        if (self.taken || returns_never)
            && callee.contract.is_none()
            && !callee.conditional
            && callee.sig.asyncness.is_none()
            && callee.attrs.iter().all(crate::index::is_inert_attribute)
            && !self.index.is_wrapped(id)
            && never_ok(callee.sig, callee.block)
        {
            self.quiet += 1;
        }
        let mut failure = None;
        let mut followed = |walker: &Self| match (
            walker
                .inline(id, args, on_self, place.as_deref())
                .map(|(value, failed)| {
                    failure = failed;
                    value
                }),
            walker.tuple_kinds(callee),
        ) {
            _ if panics => Value::Never,
            (Some(Value::Tensor(t)), _) if returns_tensor => Value::Tensor(t),
            // A builder of a `Func` (`fn block(c, vb) -> Result<Func<'static>>`): the one its
            // body builds.
            (Some(func @ Value::Func(_)), _) => func,
            // A tuple: its tensors as the body gives them.
            (Some(Value::Tuple(items)), Some(kinds)) if items.len() == kinds.len() => Value::Tuple(
                items
                    .into_iter()
                    .zip(kinds)
                    .map(|(item, kind)| match (item, kind) {
                        (Value::Tensor(t), Kind::Tensor) => Value::Tensor(t),
                        // gemma3's `(Option<Tensor>, Option<Tensor>)` of two masks.
                        (Value::Optional(held), Kind::Optional(inner))
                            if matches!(*inner, Kind::Tensor)
                                && matches!(*held, Value::Tensor(_)) =>
                        {
                            Value::Optional(held)
                        }
                        (_, kind) => kind.unknown_value(),
                    })
                    .collect(),
            ),
            _ => kind_unknown(&walker.return_kind(callee)),
        };
        let Some(contract) = callee.contract.as_ref().and_then(|c| c.parsed.as_ref()) else {
            let value = followed(self);
            if callee.contract.is_none()
                && let Some((mismatch, given)) = failure
            {
                self.report_helper_failure(id, &mismatch, &given, args, arg_exprs);
            }
            return value;
        };
        let callee_generics: Vec<String> = callee
            .impl_generics
            .iter()
            .cloned()
            .chain(crate::index::generic_names(&callee.sig.generics))
            .collect();
        let contract = &with_constants(self.index, contract, callee.module, &callee_generics);
        let params: Vec<Option<String>> = callee
            .sig
            .inputs
            .iter()
            .filter_map(|input| match input {
                syn::FnArg::Receiver(_) => None,
                syn::FnArg::Typed(t) => Some(match &*t.pat {
                    syn::Pat::Ident(i) => Some(name_of(&i.ident)),
                    _ => None,
                }),
            })
            .collect();
        let receiver_text = receiver.and_then(|r| subject_text(strip_refs(r)));
        // (the argument's position, or `None` for a path from the receiver; its clause; its
        // type; the caller's text of a path from the receiver)
        let mut given = Vec::new();
        for clause in &contract.clauses {
            let subject: String = clause.subject.split_whitespace().collect();
            if let Some(rest) = subject.strip_prefix("self.")
                && let Some(text) = &receiver_text
            {
                let theirs = format!("{text}.{rest}");
                if let Some(Value::Tensor(t)) = self.subject_value_of(&theirs) {
                    given.push((None, clause, t, Some(theirs)));
                }
                continue;
            }
            let Some(position) = params
                .iter()
                .position(|p| p.as_deref() == Some(subject.as_str()))
            else {
                continue;
            };
            match args.get(position) {
                Some(Value::Tensor(t)) => given.push((Some(position), clause, t.clone(), None)),
                // `Some(&mask)` written at the call: the guard checks what it holds.
                Some(Value::Optional(inner))
                    if let Value::Tensor(t) = &**inner
                        && arg_exprs
                            .get(position)
                            .is_some_and(|expr| self.is_some_call(expr)) =>
                {
                    given.push((Some(position), clause, t.clone(), None));
                }
                _ => {}
            }
        }
        let pairs: Vec<(&TensorType, &TensorType)> =
            given.iter().map(|(_, c, t, _)| (&c.spec, t)).collect();
        let mut bindings = Bindings::new();
        // `{n_rep}` of an integer parameter the call gives a size (`repeat_kv(xs, n_rep)`):
        // that size, as the guard reads the parameter (one it cannot change: no `mut`).
        let typed_inputs = callee.sig.inputs.iter().filter_map(|input| match input {
            syn::FnArg::Typed(t) => Some(t),
            syn::FnArg::Receiver(_) => None,
        });
        for (typed, arg) in typed_inputs.zip(args) {
            if let syn::Pat::Ident(ident) = &*typed.pat
                && ident.mutability.is_none()
                && ident.by_ref.is_none()
                && ident.subpat.is_none()
                && let Value::Int(size) = arg
                && !size.is_unknown()
            {
                bindings.bind_braced(&name_of(&ident.ident), size.clone());
            }
        }
        // The callee's integer fields it names as dims (`self.num_attention_heads = H`) where
        // the receiver's field has a size here: the guard binds the dim from that field.
        if let Some(receiver) = receiver {
            for (path, dim) in &contract.fields {
                if let Some(field) = path.strip_prefix("self.")
                    && let Some(size) = self.receiver_field_size(receiver, field)
                {
                    bindings.bind_dim(dim.clone(), size);
                }
            }
        }
        if let Err((i, reason)) = bindings.match_all(&pairs) {
            let (position, clause, found, theirs) = &given[i];
            let mismatch = Mismatch {
                op: callee.display.clone(),
                argument: position.map_or(Argument::Receiver, Argument::Position),
                expected: clause.signature(),
                found: found.to_string(),
                help: suggest(found, &clause.spec, &reason),
                reason,
            };
            match (position, theirs, receiver) {
                (Some(position), _, _) => {
                    if let Some(expr) = arg_exprs.get(*position) {
                        // `Some(&m)`: the tensor is `&m`, and a fix goes there.
                        let mut exprs = arg_exprs.to_vec();
                        if let syn::Expr::Call(call) = unparen(expr)
                            && self.is_some_call(expr)
                        {
                            exprs[*position] = &call.args[0];
                        }
                        self.report(&mismatch, expr, &exprs, expr.to_token_stream());
                    }
                }
                (None, Some(theirs), Some(receiver)) => {
                    let origin = self
                        .subjects
                        .get(theirs)
                        .and_then(|(_, place)| place.clone())
                        .map(|place| (place, format!("`{theirs}` is declared `{found}` here")));
                    self.record(
                        &mismatch,
                        Site::of(receiver),
                        theirs,
                        origin,
                        FixSite::default(),
                    );
                }
                _ => {}
            }
            return unknown_result;
        }
        if self.breaks_relation(callee, contract, &bindings, &given, arg_exprs) {
            return unknown_result;
        }
        if callee.sig.asyncness.is_some() {
            return Value::Other;
        }
        match (returns_tensor, contract.clause("return")) {
            (true, Some(clause)) => {
                let stated = self
                    .facts
                    .simplify_type(&bindings.instantiate(&clause.spec));
                // Dims the clause leaves free (`return: f32[B, H, T, HD]` with `H` bound by
                // nothing given): what the body gives for these arguments, if it says, and if
                // the body is read at all (not under `static = false`).
                let read = !callee.contract.as_ref().is_some_and(|c| c.analysis_off);
                match read.then(|| followed(self)) {
                    Some(Value::Tensor(body)) if !stated.shape.is_fully_known() => {
                        Value::Tensor(fill_unknown(stated, &body))
                    }
                    _ => Value::Tensor(stated),
                }
            }
            (true, None) => followed(self),
            // `return: [f32[B, _]; N]` of a `Vec<Tensor>`: each element of that type.
            (false, _)
                if self.returns_tensor_vec(callee)
                    && let Some(clause) = contract.sequence("return") =>
            {
                Value::TensorsEach(
                    self.facts
                        .simplify_type(&bindings.instantiate(&clause.spec)),
                    Dim::Unknown,
                )
            }
            // A tuple: each tensor from its `return.N` clause, the others unknown.
            (false, _) if let Some(kinds) = self.tuple_kinds(callee) => {
                let elements: Vec<Value> = kinds
                    .into_iter()
                    .enumerate()
                    .map(
                        |(i, kind)| match (&kind, contract.clause(&format!("return.{i}"))) {
                            (Kind::Tensor, Some(clause)) => {
                                Value::Tensor(bindings.instantiate(&clause.spec))
                            }
                            _ => kind.unknown_value(),
                        },
                    )
                    .collect();
                if elements
                    .iter()
                    .any(|e| matches!(e, Value::Tensor(t) if !t.is_unknown()))
                {
                    Value::Tuple(elements)
                } else {
                    followed(self)
                }
            }
            // A contracted builder of a `Func` (no `return` clause can state one): the one
            // its body builds, where the body is read.
            (false, None)
                if returns_func && !callee.contract.as_ref().is_some_and(|c| c.analysis_off) =>
            {
                match followed(self) {
                    func @ Value::Func(_) => func,
                    _ => unknown_result,
                }
            }
            _ => unknown_result,
        }
    }

    /// Whether a relation of the callee's contract (`T <= P`, `D % 2 == 0`), its names bound at
    /// this call, certainly fails under the caller's facts; if so, it is reported on the last
    /// argument whose clause names one of the relation's names. Relations with a name the
    /// call does not bind are not checked.
    fn breaks_relation(
        &mut self,
        callee: &FnDef,
        contract: &Contract,
        bindings: &Bindings,
        given: &[(
            Option<usize>,
            &candle_contracts_shapes::Clause,
            TensorType,
            Option<String>,
        )],
        arg_exprs: &[&syn::Expr],
    ) -> bool {
        for relation in &contract.relations {
            let here = relation.map(|d| bindings.instantiate_dim(d));
            if self.facts.decide(&here) != Some(false) {
                continue;
            }
            let mut names: Vec<String> = Vec::new();
            for name in relation
                .lhs
                .symbols()
                .into_iter()
                .chain(relation.rhs.symbols())
            {
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
            }
            let Some((Some(position), clause, found, _)) =
                given.iter().rev().find(|(_, c, _, _)| {
                    c.spec
                        .shape
                        .front()
                        .iter()
                        .chain(c.spec.shape.back())
                        .any(|d| d.symbols().iter().any(|s| names.iter().any(|n| n == s)))
                })
            else {
                // Broken, but not by an argument the caller wrote: silent.
                return true;
            };
            // The sizes the call gives the names, where they are not the caller's own names.
            let values: Vec<String> = names
                .iter()
                .map(|name| (name, bindings.dim(name).to_string()))
                .filter(|(name, size)| name != &size)
                .map(|(name, size)| format!("{name} is {size}"))
                .collect();
            let why = match values.is_empty() {
                true => "for every size the facts here allow".to_string(),
                false => values.join(", "),
            };
            let mismatch = Mismatch {
                op: callee.display.clone(),
                argument: Argument::Position(*position),
                expected: format!("{} (where `{relation}`)", clause.signature()),
                found: found.to_string(),
                reason: Reason::Other(format!("`{relation}` fails here: {why}")),
                help: None,
            };
            if let Some(expr) = arg_exprs.get(*position) {
                self.report(&mismatch, expr, arg_exprs, expr.to_token_stream());
            }
            return true;
        }
        false
    }

    /// Whether `mac` is a macro known to define no items: std's formatting, assertion and
    /// panicking macros, and `candle_contracts`' `check!`.
    fn known_macro(&self, mac: &syn::Macro) -> bool {
        self.std_macro(mac).is_some() || self.is_check_macro(mac)
    }

    /// The name of a call of one of std's macros the walk knows (`println!`, `panic!`):
    /// written as a bare name that no `macro_rules!` of the body or the crate, and no `use`
    /// or item in sight, gives another meaning.
    fn std_macro(&self, mac: &syn::Macro) -> Option<String> {
        let name = match mac.path.segments.iter().collect::<Vec<_>>().as_slice() {
            [segment] if mac.path.leading_colon.is_none() => name_of(&segment.ident),
            // `candle_core::bail!` and `anyhow::bail!` return an error, as `bail!` does.
            [krate, segment]
                if ["std", "core", "candle_core", "candle", "anyhow"]
                    .iter()
                    .any(|k| krate.ident == k)
                    && (krate.ident == "std"
                        || krate.ident == "core"
                        || segment.ident == "bail") =>
            {
                name_of(&segment.ident)
            }
            _ => return None,
        };
        let known =
            EXPRESSION_MACROS.contains(&name.as_str()) || DIVERGING_MACROS.contains(&name.as_str());
        // `use anyhow::bail;` is the one `bail!` the walk knows.
        let imported_as_known = |path: &[String]| {
            matches!(
                path.first().map(String::as_str),
                Some("std" | "core" | "alloc" | "anyhow")
            ) && path.last() == Some(&name)
        };
        let shadowed = self.body_macros.contains_key(&name)
            || self.index.defines_macro(&name)
            || match self.resolve(std::slice::from_ref(&name)) {
                Resolved::Unknown => false,
                Resolved::External(path) => !imported_as_known(&path),
                _ => true,
            };
        (known && !shadowed).then_some(name)
    }

    fn is_check_macro(&self, mac: &syn::Macro) -> bool {
        let segments: Vec<String> = mac
            .path
            .segments
            .iter()
            .map(|s| name_of(&s.ident))
            .collect();
        segments.last().is_some_and(|name| name == "check")
            && matches!(self.index.resolve(self.module(), &segments),
                Resolved::External(p) if p.first().is_some_and(|c| c == "candle_contracts"))
    }

    fn mac(&mut self, mac: &syn::Macro) -> Value {
        // A macro given a `&mut` parameter's name may do anything with it.
        let touched: Vec<String> = self
            .mut_roots
            .iter()
            .filter(|root| mentions_ident(mac.tokens.clone(), root))
            .cloned()
            .collect();
        if !touched.is_empty() {
            self.forget_in(|c| c.kept.extend(touched));
        }
        let std = self.std_macro(mac);
        let name = std.clone().unwrap_or_default();
        let parsed = std
            .is_some()
            .then(|| {
                mac.parse_body_with(
                    syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
                )
                .ok()
            })
            .flatten();
        let guard_macro = self.is_check_macro(mac);
        // `vec![&xs; n_rep]`: `n_rep` copies of one tensor.
        if name == "vec"
            && parsed.is_none()
            && let Ok((item, count)) = mac.parse_body_with(|input: syn::parse::ParseStream<'_>| {
                let item: syn::Expr = input.parse()?;
                input.parse::<syn::Token![;]>()?;
                let count: syn::Expr = input.parse()?;
                Ok((item, count))
            })
        {
            self.forget_in(|c| {
                c.visit_expr(&item);
                c.visit_expr(&count);
            });
            let primitive = |name: &str| self.is_primitive(name);
            let dtype = literal_dtype(&item, &primitive);
            return match (self.operand(&item), self.operand(&count)) {
                // `vec![0f32; n]`: `n` numbers of the literal's type.
                (Value::Int(_) | Value::Float, Value::Int(n)) if let Some(dtype) = dtype => {
                    Value::Numbers(dtype, n)
                }
                (Value::Tensor(t), Value::Int(n)) if n.as_literal().is_some_and(|n| n <= 64) => {
                    let n = n.as_literal().and_then(|n| usize::try_from(n).ok());
                    Value::Tensors(vec![t; n.unwrap_or(0)])
                }
                (Value::Tensor(t), Value::Int(n)) => Value::TensorsEach(t, n),
                (Value::Tensor(t), _) => Value::TensorsEach(t, Dim::Unknown),
                _ => Value::Other,
            };
        }
        match &parsed {
            Some(exprs) => self.forget_in(|c| {
                for e in exprs {
                    c.visit_expr(e);
                }
            }),
            // `check!` reads its tensors (a braced dim or bound is code that may change
            // anything); anything else may bind or assign the names it holds.
            None if guard_macro && !has_brace_group(mac.tokens.clone()) => {}
            None => self.forget_in(|c| c.visit_macro(mac)),
        }
        if std.is_some() && DIVERGING_MACROS.contains(&name.as_str()) {
            return Value::Never;
        }
        // `vec![]`: nothing in it yet.
        if let (Some(exprs), "vec") = (&parsed, name.as_str())
            && exprs.is_empty()
        {
            return Value::EmptyVec;
        }
        // `vec![a.clone(), b]`: a `Vec` of those tensors.
        if let (Some(exprs), "vec") = (&parsed, name.as_str()) {
            let items: Vec<Value> = exprs.iter().map(|e| self.operand(e)).collect();
            if items.iter().all(|v| matches!(v, Value::Tensor(_))) {
                return array_value(items);
            }
            // `vec![1f32, 2., 3.]`: numbers of the type one of them is written in (one
            // Rust type for all), as many as written.
            let primitive = |name: &str| self.is_primitive(name);
            if items
                .iter()
                .all(|v| matches!(v, Value::Int(_) | Value::Float))
                && let Some(dtype) = exprs.iter().find_map(|e| literal_dtype(e, &primitive))
            {
                return Value::Numbers(dtype, Dim::from(items.len()));
            }
        }
        Value::Other
    }

    // ----- findings -----

    fn check_return(&mut self, expr: &syn::Expr, value: &Value) {
        if self.closures > 0 {
            return;
        }
        // The `return` clause is the tensor's only where the value is one (`Tensor`,
        // `Result<Tensor>`), not an `Option` or a tuple of it.
        let Value::Tensor(t) = value else {
            return;
        };
        if !returns_tensor(self.f.sig) {
            return;
        }
        // Under the contract's facts (`T >= 1`: `2 * T` is no `T`), as the ops' rules are.
        if let Err(mut mismatch) = self.facts.under(|| self.env.check_return(t)) {
            // The clause as written (`return: f32[B, T, E]`), not as a fact (`E == H * HD`)
            // rewrote it for the comparison.
            if let Some(written) = self.f.contract.clause("return") {
                mismatch.expected = format!("return: {}", written.spec);
            }
            let inner = ok_inner(expr);
            // Any value but `Ok(..)` of a function that returns a `Result` is one: its fix
            // starts with `?`.
            self.fix_result = std::ptr::eq(inner, expr) && returns_result(self.f.sig);
            self.report(&mismatch, inner, &[], inner.to_token_stream());
            self.fix_result = false;
        }
    }

    /// A certain failure inside the helper `id` followed at this call, where the tensor it
    /// names is one of the helper's tensor parameters, of the type the argument given for it
    /// has here: that argument is the one reported (candle-transformers'
    /// `with_tracing::Linear` passes `xs` on to candle-nn's `Linear::forward`). Any other
    /// stays silent.
    fn report_helper_failure(
        &mut self,
        id: FnId,
        mismatch: &Mismatch,
        given: &str,
        args: &[Value],
        arg_exprs: &[&syn::Expr],
    ) {
        let callee = &self.index.fns[id];
        // An earlier `return` (or `break` out of a block) may leave before the failing op:
        // the walk does not know which branch the arguments take.
        struct Exits(bool);
        impl<'ast> Visit<'ast> for Exits {
            fn visit_expr_return(&mut self, _: &'ast syn::ExprReturn) {
                self.0 = true;
            }
            fn visit_expr_break(&mut self, _: &'ast syn::ExprBreak) {
                self.0 = true;
            }
            fn visit_macro(&mut self, _: &'ast syn::Macro) {
                // A macro's tokens may hold a `return`.
                self.0 = true;
            }
        }
        let mut exits = Exits(false);
        exits.visit_block(callee.block);
        if exits.0 {
            return;
        }
        let Some(position) = callee
            .sig
            .inputs
            .iter()
            .filter_map(|input| match input {
                syn::FnArg::Typed(typed) => Some(typed),
                syn::FnArg::Receiver(_) => None,
            })
            .position(|typed| {
                matches!(&*typed.pat, syn::Pat::Ident(ident)
                    if ident.subpat.is_none() && name_of(&ident.ident) == given)
            })
        else {
            return;
        };
        // `xs = xs.t()?;` in the helper: what fails is no longer the argument's value.
        let (Some(Value::Tensor(arg)), Some(&expr)) = (args.get(position), arg_exprs.get(position))
        else {
            return;
        };
        if arg.to_string() != mismatch.found {
            return;
        }
        let site = strip_refs(expr);
        let text = self.text(site);
        let fix = FixSite {
            parens: !postfix_safe(site),
            borrowed: matches!(expr, syn::Expr::Reference(_)),
        };
        self.record(mismatch, Site::of(site), &text, None, fix);
    }

    /// Records a mismatch, naming the argument by its text.
    fn report(
        &mut self,
        mismatch: &Mismatch,
        receiver: &syn::Expr,
        args: &[&syn::Expr],
        call: TokenStream,
    ) {
        let wrong = match mismatch.argument {
            Argument::Receiver | Argument::Return => Some(receiver),
            Argument::Position(i) => args.get(i).copied(),
            // `tensors[1]` of `&[a, b]`: `b`, where the list is written out.
            Argument::Element(i, at) => args.get(i).copied().map(|list| match strip_refs(list) {
                syn::Expr::Array(array) => array.elems.iter().nth(at).unwrap_or(list),
                _ => list,
            }),
        };
        let (span, given) = match wrong {
            Some(expr) => {
                let expr = strip_refs(expr);
                let text = self.text(expr);
                // An element of a list not written out (`&parts`, `&vec![a, b]`): `parts[1]`.
                let text = match mismatch.argument {
                    Argument::Element(_, at)
                        if !matches!(expr, syn::Expr::Array(_))
                            && args.iter().any(|arg| std::ptr::eq(strip_refs(arg), expr)) =>
                    {
                        format!("{text}[{at}]")
                    }
                    _ => text,
                };
                (Site::of(expr), text)
            }
            None => (Site::of(&call), self.text(&call)),
        };
        let origin = wrong.and_then(|expr| {
            let place = self.subject_origin(expr)?;
            let name = subject_text(strip_refs(expr))?;
            let declared = name.contains('.') || self.is_param(&name);
            Some((
                place,
                match declared {
                    true => format!("`{name}` is declared `{}` here", mismatch.found),
                    false => format!("`{name}` is bound here"),
                },
            ))
        });
        // The fix as code that compiles in place of the site: `(*k).t()?` for `*k`; the site
        // of `&target` is `target`, where the source already borrows.
        let fix = FixSite {
            parens: wrong.is_some_and(|expr| !postfix_safe(strip_refs(expr))),
            borrowed: wrong.is_some_and(|expr| matches!(expr, syn::Expr::Reference(_))),
        };
        self.record(mismatch, span, &given, origin, fix);
    }

    /// The path that names candle's `DType` here: `DType` where it is in scope, else
    /// `candle_core::DType` (or the crate's own name for candle-core); `None` where neither.
    fn dtype_path(&self) -> Option<String> {
        let candle = |path: &[String]| {
            matches!(
                path.first().map(String::as_str),
                Some("candle_core" | "candle")
            )
        };
        if let Resolved::External(path) = self.resolve(&["DType".to_string()])
            && candle(&path)
            && path.last().is_some_and(|last| last == "DType")
        {
            return Some("DType".to_string());
        }
        ["candle_core", "candle"].into_iter().find_map(|name| {
            match self.resolve(&[name.to_string()]) {
                Resolved::External(path) if candle(&path) && path.len() == 1 => {
                    Some(format!("{name}::DType"))
                }
                _ => None,
            }
        })
    }

    /// Records a mismatch at `span`, naming the wrong value `given`.
    fn record(
        &mut self,
        mismatch: &Mismatch,
        site: Site,
        given: &str,
        origin: Option<(Origin, String)>,
        fix: FixSite,
    ) {
        // Certain, whether or not it is reported here.
        self.failures += 1;
        // A helper's own: reached on every path of its body (`quiet` is the helper's 1), and
        // its `Err` is the helper's (or a panic).
        if !self.inlined.is_empty()
            && self.quiet == 1
            && self.taken
            && self.closures == 0
            && self.helper_failure.is_none()
            && self.is_param(given)
        {
            self.helper_failure = Some((mismatch.clone(), given.to_string()));
        }
        // A `Func`'s closure followed where it is applied: on the closure's own path.
        if self.func_depth > 0
            && self.quiet == 1
            && self.taken
            && self.closures == 1
            && self.func_failure.is_none()
        {
            self.func_failure = Some((mismatch.message(&one_line(given)), mismatch.note()));
        }
        // Glue code may expect a failure it does not take: in a closure (`catch_unwind`, a
        // thread, a `Result` inspected after) or where it never looks at the `Result`.
        // A closure's body runs where it is called, maybe never.
        // The body of a candle-nn `Func` is a layer's `forward`: what certainly fails there
        // fails wherever the layer runs (a closure in it is again any closure).
        if !self.taken || self.closures > self.layer_bodies || self.quiet > 0 {
            return;
        }
        let normalized = one_line(given);
        let wrap = |text: &str| match fix.parens {
            true => format!("({text})"),
            false => text.to_string(),
        };
        let help_of = |text: &str| match self.fix_result {
            true => mismatch.help_for_result(text),
            false => mismatch.help(text),
        };
        // `DType` by a path that names it here.
        let dtype = self.dtype_path();
        let qualify = |text: String| match &dtype {
            Some(path) if path != "DType" => qualify_dtype(&text, path),
            _ => text,
        };
        let help = help_of(&wrap(&normalized)).map(qualify);
        // Every help ends with the fixed code in backticks (`squeeze the last dim:
        // `x.squeeze(1)?``); the replacement is built on the site's own text (its comments, a
        // string's spaces kept).
        let replacement = help_of(&wrap(given))
            .and_then(|help| {
                let (_, code) = help.rsplit_once(": `")?;
                let code = qualify(code.strip_suffix('`')?.to_string());
                Some(match fix.borrowed {
                    true => code.strip_prefix('&').unwrap_or(&code).to_string(),
                    false => code,
                })
            })
            // A fix naming `DType` where nothing names candle's: no replacement to apply.
            .filter(|code| !code.contains("DType::") || dtype.is_some());
        let message = mismatch.message(&normalized);
        let mut note = mismatch.note();
        // A size two branches give differently (`?1`): what it stands for, as `shapes` says.
        let joins = self.joins_in(&format!("{message} {note}"));
        if !joins.is_empty() {
            let said: Vec<String> = joins
                .iter()
                .map(|join| {
                    format!(
                        "{} is {} or {}, by {}",
                        join.name, join.first, join.second, join.by
                    )
                })
                .collect();
            note = format!("{note} ({})", said.join("; "));
        }
        self.findings.push(Finding {
            site,
            message,
            note,
            help,
            replacement,
            origin,
        });
    }
}

/// `text` with each bare `DType::` (the fix's own, not one the user's code already writes by a
/// path: `candle_core::DType::F32`) written by `path`.
fn qualify_dtype(text: &str, path: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("DType::") {
        let before = &rest[..at];
        let bare = !before.ends_with("::")
            && !before
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_');
        out.push_str(before);
        if bare {
            out.push_str(path);
            out.push_str("::");
        } else {
            out.push_str("DType::");
        }
        rest = &rest[at + "DType::".len()..];
    }
    out.push_str(rest);
    out
}

/// How a finding's site stands in its source, for the fix built on it.
#[derive(Clone, Copy, Default)]
struct FixSite {
    /// The site is an operand a method call cannot follow as written (`*k`): the fix
    /// parenthesises it.
    parens: bool,
    /// The source borrows the site (`&target`, the site `target`): the fix's own `&` is left
    /// out of the replacement.
    borrowed: bool,
}

/// Whether a method call may follow `expr` as written (`x.t()`, `f(x)?.t()`): not after a
/// unary, binary, cast or range expression, whose operator would take the call's result.
fn postfix_safe(expr: &syn::Expr) -> bool {
    matches!(
        expr,
        syn::Expr::Path(_)
            | syn::Expr::MethodCall(_)
            | syn::Expr::Call(_)
            | syn::Expr::Field(_)
            | syn::Expr::Index(_)
            | syn::Expr::Try(_)
            | syn::Expr::Paren(_)
            | syn::Expr::Lit(_)
            | syn::Expr::Macro(_)
            | syn::Expr::Tuple(_)
            | syn::Expr::Array(_)
    )
}

/// Whether a method's receiver is `&self` (`self: &Self` too): it changes nothing of its
/// receiver but through a cell.
fn takes_shared_self(sig: &syn::Signature) -> bool {
    match sig.receiver() {
        Some(receiver) if receiver.colon_token.is_none() => {
            receiver.reference.is_some() && receiver.mutability.is_none()
        }
        Some(receiver) => {
            matches!(&*receiver.ty, syn::Type::Reference(r) if r.mutability.is_none() && matches!(&*r.elem, syn::Type::Path(p) if p.path.is_ident("Self")))
        }
        None => false,
    }
}

/// The dim `name` is within the body: the expression a fact equates it to (`E == H * D`), or
/// itself.
fn with_facts_dim(contract: &Contract, name: &str) -> Dim {
    contract
        .facts
        .iter()
        .find(|(fact, _)| fact == name)
        .map_or_else(|| Dim::symbol(name), |(_, dim)| dim.clone())
}

/// `contract` with each dim name its facts equate to an expression (`E == H * D`) replaced by
/// that expression, so that `E` and `H * D` compare as the same.
fn with_facts(contract: &Contract) -> Contract {
    let mut lookup = |factor: &Factor| match factor {
        Factor::Symbol(name) => Some(
            contract
                .facts
                .iter()
                .find(|(fact, _)| fact == name)
                .map_or_else(|| Dim::symbol(name.clone()), |(_, dim)| dim.clone()),
        ),
        Factor::Braced(text) => Some(Dim::braced(text)),
        Factor::Div(..) | Factor::Rem(..) => None,
    };
    let mut contract = contract.clone();
    for clause in contract.clauses.iter_mut().chain(&mut contract.sequences) {
        clause.spec.shape = map_dims(&clause.spec.shape, &mut lookup);
    }
    for relation in &mut contract.relations {
        *relation = relation.map(|d| d.substitute(&mut lookup));
    }
    contract
}

/// `contract` without the relations (and equalities) that name a dim the guard may leave
/// unbound, which it then does not check: one bound only by an `Option` parameter, a path
/// through `?` or `[..]`, or the `return` clause. Within the body, only the others are facts.
fn surely_bound(
    contract: &Contract,
    sig: &syn::Signature,
    may_be_option: &dyn Fn(&syn::Type) -> bool,
) -> Contract {
    let optional: BTreeSet<String> = sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            syn::FnArg::Typed(typed) => match &*typed.pat {
                syn::Pat::Ident(ident) if may_be_option(&typed.ty) => Some(name_of(&ident.ident)),
                _ => None,
            },
            syn::FnArg::Receiver(_) => None,
        })
        .collect();
    let mut bound: BTreeSet<String> = contract.fields.iter().map(|(_, dim)| dim.clone()).collect();
    for clause in &contract.clauses {
        let subject: String = clause.subject.split_whitespace().collect();
        let root = subject.split(['.', '(', '[', '?']).next().unwrap_or("");
        if root == "return" || optional.contains(root) || subject.contains(['?', '[']) {
            continue;
        }
        let shape = &clause.spec.shape;
        for dim in shape.front().iter().chain(shape.back()) {
            bound.extend(dim.symbols().into_iter().map(str::to_string));
        }
    }
    // `{n}` of an `n: Option<usize>`: the guard skips a relation naming it where it is `None`.
    let braced_optional = |dim: &Dim| {
        let mut optional_root = false;
        dim.substitute(&mut |factor| {
            if let Factor::Braced(text) = factor {
                let root = text
                    .split(['.', '(', '[', '?', '*', '&'])
                    .find(|s| !s.is_empty());
                optional_root |= root.is_some_and(|root| optional.contains(root));
            }
            Some(match factor {
                Factor::Braced(text) => Dim::braced(text),
                Factor::Symbol(name) => Dim::symbol(name.clone()),
                _ => Dim::Unknown,
            })
        });
        optional_root
    };
    let all_bound =
        |dim: &Dim| dim.symbols().iter().all(|name| bound.contains(*name)) && !braced_optional(dim);
    let mut contract = contract.clone();
    contract
        .relations
        .retain(|relation| all_bound(&relation.lhs) && all_bound(&relation.rhs));
    contract
        .facts
        .retain(|(name, dim)| bound.contains(name) && all_bound(dim));
    contract
}

/// `shape` with each dim's factors replaced by `lookup`'s answer.
fn map_dims(shape: &Shape, lookup: &mut dyn FnMut(&Factor) -> Option<Dim>) -> Shape {
    let mut map =
        |dims: &[Dim]| -> Vec<Dim> { dims.iter().map(|d| d.substitute(lookup)).collect() };
    let (front, back) = (map(shape.front()), map(shape.back()));
    match shape.run() {
        Some(run) => Shape::with_run(front, run.clone(), back),
        None => Shape::new(front),
    }
}

/// `contract` with each dim name that is an integer constant in sight of `module` (a `const`
/// whose value the index reads, directly or through a `use`) replaced by its value, as the guard
/// binds it at run time; a generic parameter of the function (`hidden`) hides a constant.
fn with_constants(
    index: &Index,
    contract: &Contract,
    module: ModId,
    hidden: &[String],
) -> Contract {
    let mut lookup = |factor: &Factor| match factor {
        Factor::Symbol(name) => Some(match index.resolve(module, std::slice::from_ref(name)) {
            Resolved::Const(Some(value)) if !hidden.contains(name) => Dim::lit(value),
            _ => Dim::symbol(name.clone()),
        }),
        Factor::Braced(text) => Some(Dim::braced(text)),
        // `substitute` itself takes divisions and remainders apart.
        Factor::Div(..) | Factor::Rem(..) => None,
    };
    let mut contract = contract.clone();
    for clause in contract.clauses.iter_mut().chain(&mut contract.sequences) {
        let shape = &clause.spec.shape;
        let mut map =
            |dims: &[Dim]| -> Vec<Dim> { dims.iter().map(|d| d.substitute(&mut lookup)).collect() };
        let (front, back) = (map(shape.front()), map(shape.back()));
        clause.spec.shape = match shape.run() {
            Some(run) => Shape::with_run(front, run.clone(), back),
            None => Shape::new(front),
        };
    }
    for relation in &mut contract.relations {
        *relation = relation.map(|d| d.substitute(&mut lookup));
    }
    contract
}

/// Names a piece of code may assign (`kept`: the type stays, the value may change) or bind
/// anew (`rebound`, from a macro).
#[derive(Default)]
struct Changed {
    kept: BTreeSet<String>,
    rebound: BTreeSet<String>,
    /// A method the walk does not know is called on a path from `self`, or `self` is passed
    /// on: behind `&mut self`, anything below it may change.
    self_touched: bool,
    /// The body's `macro_rules!`: a call of one may assign the names its definition holds.
    macros: BodyMacros,
    /// Fields of `self` written to (`self.kv_cache = ..`, `&mut self.cache`): behind
    /// `&mut self`, only what is below each may change; otherwise `self` as a whole.
    self_places: BTreeSet<String>,
    /// Fields of `self` a method is called on (`self.blocks.iter_mut()`): behind `&mut self`,
    /// what is below each may change (behind `&self`, a field's clauses hold through it).
    method_places: BTreeSet<String>,
}

impl Changed {
    /// What an assignment to `place` (or a `&mut` of it) may change.
    fn write_to(&mut self, place: &syn::Expr) {
        match place {
            syn::Expr::Tuple(t) => t.elems.iter().for_each(|e| self.write_to(e)),
            syn::Expr::Array(a) => a.elems.iter().for_each(|e| self.write_to(e)),
            syn::Expr::Call(c) => c.args.iter().for_each(|e| self.write_to(e)),
            syn::Expr::Struct(s) => s.fields.iter().for_each(|f| self.write_to(&f.expr)),
            syn::Expr::Paren(p) => self.write_to(&p.expr),
            other => match self_field_place(other) {
                Some(place) => {
                    self.self_places.insert(place);
                }
                None => self.kept.extend(root(other)),
            },
        }
    }
}

/// `self.a.b` (fields only, no index, call or deref): the place's text.
fn self_field_place(expr: &syn::Expr) -> Option<String> {
    fn fields_of_self(expr: &syn::Expr) -> bool {
        match expr {
            syn::Expr::Field(f) => is_self_path(&f.base) || fields_of_self(&f.base),
            syn::Expr::Paren(p) => fields_of_self(&p.expr),
            _ => false,
        }
    }
    let expr = match expr {
        syn::Expr::Paren(p) => &*p.expr,
        syn::Expr::Group(g) => &*g.expr,
        other => other,
    };
    if fields_of_self(expr) {
        subject_text(expr)
    } else {
        None
    }
}

/// The `macro_rules!` a body defines, by name, with the identifiers of each definition.
type BodyMacros = std::rc::Rc<BTreeMap<String, BTreeSet<String>>>;

/// The `macro_rules!` defined anywhere in `block`.
fn body_macros(block: &syn::Block) -> BodyMacros {
    #[derive(Default)]
    struct Defined(BTreeMap<String, BTreeSet<String>>);
    impl<'ast> Visit<'ast> for Defined {
        fn visit_item_macro(&mut self, item: &'ast syn::ItemMacro) {
            if let Some(name) = &item.ident {
                let names = self.0.entry(name_of(name)).or_default();
                idents(&item.mac.tokens, names);
            }
        }
    }
    let mut defined = Defined::default();
    defined.visit_block(block);
    std::rc::Rc::new(defined.0)
}

impl<'ast> Visit<'ast> for Changed {
    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        self.write_to(&a.left);
        syn::visit::visit_expr_assign(self, a);
    }

    fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
        use syn::BinOp;
        if matches!(
            b.op,
            BinOp::AddAssign(_)
                | BinOp::SubAssign(_)
                | BinOp::MulAssign(_)
                | BinOp::DivAssign(_)
                | BinOp::RemAssign(_)
                | BinOp::BitXorAssign(_)
                | BinOp::BitAndAssign(_)
                | BinOp::BitOrAssign(_)
                | BinOp::ShlAssign(_)
                | BinOp::ShrAssign(_)
        ) {
            self.write_to(&b.left);
        }
        syn::visit::visit_expr_binary(self, b);
    }

    fn visit_expr_raw_addr(&mut self, r: &'ast syn::ExprRawAddr) {
        self.kept.extend(root(&r.expr));
        syn::visit::visit_expr_raw_addr(self, r);
    }

    fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
        if r.mutability.is_some() {
            self.write_to(&r.expr);
        }
        syn::visit::visit_expr_reference(self, r);
    }

    /// A method no candle tensor has may take `&mut self` (`clone_from`, an extension
    /// trait's `reset_to`). (Paths from `self` keep their clauses only where `self` cannot
    /// change, so a method of `self.head` changes nothing the walk knows.)
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let name = name_of(&m.method);
        let candles = has_method_rule(&name)
            || READ_ONLY.contains(&name.as_str())
            || UNKNOWN_TENSOR_METHODS.contains(&name.as_str())
            || KEEP_OK.contains(&name.as_str());
        if !candles {
            self.kept
                .extend(root(&m.receiver).filter(|receiver| receiver != "self"));
        }
        // A method named like candle's may be a type's own `&mut self` one; on a field of
        // `self` (`self.blocks.iter_mut()`, `self.cache.append(..)`), it reaches only below it.
        if root(&m.receiver).is_some_and(|receiver| receiver == "self") {
            match self_field_place(&m.receiver) {
                Some(place) => {
                    self.method_places.insert(place);
                }
                None => self.self_touched = true,
            }
        }
        self.self_touched |= m.args.iter().any(|arg| is_self_path(strip_refs(arg)));
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        self.self_touched |= c.args.iter().any(|arg| is_self_path(strip_refs(arg)));
        syn::visit::visit_expr_call(self, c);
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        if let Some(init) = &local.init
            && has_ref_mut(&local.pat)
        {
            self.write_to(&init.expr);
        }
        syn::visit::visit_local(self, local);
    }

    fn visit_expr_let(&mut self, l: &'ast syn::ExprLet) {
        if has_ref_mut(&l.pat) {
            self.kept.extend(root(&l.expr));
        }
        syn::visit::visit_expr_let(self, l);
    }

    fn visit_expr_match(&mut self, m: &'ast syn::ExprMatch) {
        if m.arms.iter().any(|arm| has_ref_mut(&arm.pat)) {
            self.kept.extend(root(&m.expr));
        }
        syn::visit::visit_expr_match(self, m);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        idents(&mac.tokens, &mut self.rebound);
        if let Some(name) = mac.path.segments.last()
            && let Some(names) = self.macros.get(&name_of(&name.ident))
        {
            self.kept.extend(names.iter().cloned());
        }
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// Whether a `let` binds only numbers the walk knows: a size or `bool` (`let r = x.rank()` of a
/// known rank), or a tuple pattern of sizes (`let (b, h) = x.dims2()?`). A `let d = x.dims()`
/// binds a list, whose methods (`get`, `len`) the walk does not follow.
fn known_numbers(value: &Value, pat: &syn::Pat) -> bool {
    let pat = match pat {
        syn::Pat::Type(typed) => &*typed.pat,
        pat => pat,
    };
    let known = |value: &Value| match value {
        Value::Int(size) => !size.is_unknown(),
        Value::Bool(_) => true,
        _ => false,
    };
    match (value, pat) {
        (Value::Tuple(items), syn::Pat::Tuple(_)) => items.iter().all(known),
        (Value::Tuple(_), _) => false,
        (value, _) => known(value),
    }
}

/// `self.w`, `self.cfg.w`: a field of `self`.
fn is_self_field(field: &syn::ExprField) -> bool {
    match unparen(&field.base) {
        syn::Expr::Path(p) => p.path.is_ident("self"),
        syn::Expr::Field(inner) => is_self_field(inner),
        _ => false,
    }
}

/// Every identifier a pattern binds.
#[derive(Default)]
struct PatNames(Vec<syn::Ident>);

impl<'ast> Visit<'ast> for PatNames {
    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        self.0.push(p.ident.clone());
        syn::visit::visit_pat_ident(self, p);
    }

    /// A pattern macro may bind any name it is given.
    fn visit_pat(&mut self, p: &'ast syn::Pat) {
        fn idents(tokens: &TokenStream, into: &mut Vec<syn::Ident>) {
            for token in tokens.clone() {
                match token {
                    TokenTree::Ident(ident) => into.push(ident),
                    TokenTree::Group(group) => idents(&group.stream(), into),
                    _ => {}
                }
            }
        }
        match p {
            syn::Pat::Macro(m) => idents(&m.mac.tokens, &mut self.0),
            _ => syn::visit::visit_pat(self, p),
        }
    }

    fn visit_expr(&mut self, _: &'ast syn::Expr) {}
}

/// The local a place expression (`x`, `x.field`, `x[i]`, `*x`) belongs to.
fn root(expr: &syn::Expr) -> Option<String> {
    match expr {
        syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(name_of),
        syn::Expr::Field(f) => root(&f.base),
        syn::Expr::Index(i) => root(&i.expr),
        syn::Expr::Paren(p) => root(&p.expr),
        syn::Expr::Group(g) => root(&g.expr),
        syn::Expr::Unary(u) => root(&u.expr),
        syn::Expr::MethodCall(m) => root(&m.receiver),
        syn::Expr::Reference(r) => root(&r.expr),
        _ => None,
    }
}

/// Whether a statement stands under `#[cfg(..)]` or `#[cfg_attr(..)]`.
fn is_conditional_stmt(stmt: &syn::Stmt) -> bool {
    let tokens: Vec<TokenTree> = stmt.to_token_stream().into_iter().collect();
    // The statement's outer attributes: `#` and a bracket group each, at its start.
    tokens
        .chunks(2)
        .take_while(|pair| {
            matches!(pair, [TokenTree::Punct(hash), TokenTree::Group(g)]
                if hash.as_char() == '#' && g.delimiter() == proc_macro2::Delimiter::Bracket)
        })
        .any(|pair| match &pair[1] {
            TokenTree::Group(attr) => attr.stream().into_iter().next().is_some_and(
                |first| matches!(first, TokenTree::Ident(i) if i == "cfg" || i == "cfg_attr"),
            ),
            _ => false,
        })
}

/// Whether every `self` in `tokens` is the start of a path (`self.q`): not passed on whole
/// (`let me = self`, `match self`, `f(self)`, `*self = ..`).
fn self_only_in_paths(tokens: TokenStream) -> bool {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    trees.iter().enumerate().all(|(i, tree)| match tree {
        TokenTree::Ident(ident) if ident == "self" => {
            matches!(trees.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '.')
                && !matches!(trees.get(i + 2), Some(TokenTree::Punct(p)) if p.as_char() == '.')
        }
        TokenTree::Group(group) => self_only_in_paths(group.stream()),
        _ => true,
    })
}

/// candle-nn's `ConcatKvCache`, whose `k()` and `v()` a contract may state.
const CONCAT_KV_CACHE: &str = "candle_nn::kv_cache::ConcatKvCache";

/// The kv caches of candle-nn whose `append` gives every step so far, as many as its
/// `current_seq_len()` was before and the new ones (not the rotating one, which keeps a window).
const GROWING_KV_CACHES: &[&str] = &[
    "candle_nn::kv_cache::KvCache",
    "candle_nn::kv_cache::ConcatKvCache",
];

/// A type without its parentheses and invisible groups.
fn strip_type_parens(mut ty: &syn::Type) -> &syn::Type {
    while let syn::Type::Paren(syn::TypeParen { elem, .. })
    | syn::Type::Group(syn::TypeGroup { elem, .. }) = ty
    {
        ty = elem;
    }
    ty
}

/// Whether `tokens` name `name` anywhere (in a group too).
fn mentions_ident(tokens: TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|tree| match tree {
        TokenTree::Ident(ident) => name_of(&ident) == name,
        TokenTree::Group(group) => mentions_ident(group.stream(), name),
        _ => false,
    })
}

/// Whether a `for` loop over `iterable` certainly runs its body: an array of some elements
/// (`[a]`, `&[a, b]`, `.iter()` of one), a range of two numbers, the first below the end.
fn runs_at_least_once(iterable: &syn::Expr) -> bool {
    match unparen(iterable) {
        syn::Expr::Reference(r) => runs_at_least_once(&r.expr),
        syn::Expr::MethodCall(m)
            if (m.method == "iter" || m.method == "into_iter") && m.args.is_empty() =>
        {
            matches!(
                unparen(&m.receiver),
                syn::Expr::Array(_) | syn::Expr::Reference(_)
            ) && runs_at_least_once(&m.receiver)
        }
        syn::Expr::Array(a) => !a.elems.is_empty(),
        syn::Expr::Range(r) => {
            let number =
                |e: &Option<Box<syn::Expr>>| e.as_deref().and_then(crate::index::int_literal);
            match (number(&r.start), number(&r.end), &r.limits) {
                (Some(start), Some(end), syn::RangeLimits::HalfOpen(_)) => start < end,
                (Some(start), Some(end), syn::RangeLimits::Closed(_)) => start <= end,
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether `path` is candle-nn's `BatchNorm` (a layer of the rules' whose type is so named).
fn is_batch_norm(path: &str) -> bool {
    Layer::from_path(path).is_some() && path.rsplit("::").next() == Some("BatchNorm")
}

/// Whether `tokens` name an integer type narrower than `usize`, or of another sign, by a cast
/// or a literal's suffix (`n as u8`, `4i32`): arithmetic in it may wrap in a release build.
fn narrow_integer(tokens: TokenStream) -> bool {
    const NARROW: &[&str] = &[
        "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32", "i64", "i128", "isize",
    ];
    tokens.into_iter().any(|token| match token {
        TokenTree::Ident(ident) => NARROW.iter().any(|ty| ident == ty),
        TokenTree::Literal(literal) => {
            let text = literal.to_string();
            NARROW.iter().any(|ty| text.ends_with(ty))
        }
        TokenTree::Group(group) => narrow_integer(group.stream()),
        TokenTree::Punct(_) => false,
    })
}

/// Whether a condition holds a `let` (a chain `if let Some(x) = a && b`).
fn has_let(cond: &syn::Expr) -> bool {
    match unparen(cond) {
        syn::Expr::Let(_) => true,
        syn::Expr::Binary(b) => has_let(&b.left) || has_let(&b.right),
        _ => false,
    }
}

/// Whether a type's path is candle-nn's `Func` or `FuncT`.
fn is_func_type(path: &str) -> bool {
    matches!(
        path,
        "candle_nn::Func" | "candle_nn::FuncT" | "candle_nn::func::Func" | "candle_nn::func::FuncT"
    )
}

/// What the place of a layer a `let` of the function builds has after the `let`'s name
/// (`conv@let1`): no expression's text holds it, so only that binding reaches the layer's
/// subjects.
const LOCAL_LAYER: &str = "@let";

/// The candle-nn layer type (its path) a candle-nn function or constructor builds:
/// `candle_nn::conv2d(..)` and `candle_nn::conv::conv2d_no_bias(..)` a `Conv2d` (see
/// [`crate::construct::LAYER_FUNCTIONS`]), `candle_nn::Linear::new(..)` a `Linear`.
fn layer_built_by(path: &[String]) -> Option<String> {
    // `candle_nn::Linear::new(weight, bias)`, `candle_nn::conv::Conv2d::new(..)`: the type's
    // own constructor.
    let (module, ty) = match path {
        [first, ty, new] if first == "candle_nn" && new == "new" => (None, ty),
        [first, module, ty, new] if first == "candle_nn" && new == "new" => (Some(module), ty),
        _ => {
            let function = crate::construct::layer_function(path)?;
            return Some(format!("candle_nn::{}::{}", function.home, function.ty));
        }
    };
    let function = crate::construct::LAYER_FUNCTIONS
        .iter()
        .find(|f| f.ty == ty && module.is_none_or(|m| m == f.home))?;
    let full = format!("candle_nn::{}::{ty}", function.home);
    Layer::from_path(&full).map(|_| full)
}

/// The subject that holds a convolution field's padding, stride and dilation, as every
/// constructor builds it (`self.conv1.(geometry)`): forgotten with the clauses on `self` and
/// on that field, never read as a tensor (no expression's text has that form).
fn conv_geometry(place: &str) -> String {
    format!("{place}.(geometry)")
}

/// The subject that holds the dim a candle-nn kv cache field grows on, as every constructor
/// builds it (`self.kv_cache.(grows on)`): forgotten with the clauses on `self` and on that
/// field, never read as a tensor (no expression's text has that form).
fn kv_cache_dim(place: &str) -> String {
    format!("{place}.(grows on)")
}

/// Whether a subject holds through writes below its field: the dim a kv cache grows on,
/// known only where no code in sight replaces the cache (its appends and resets, through
/// `&mut` too, keep it; see `construct::constructed_fields`).
fn settled(subject: &str) -> bool {
    subject.ends_with(".(grows on)")
}

/// The subject that stands for an `Activation` field every constructor builds with a variant
/// that keeps the shape (`self.act.(keeps shape)`): forgotten with the clauses on `self` and
/// on that field, never read as a tensor (no expression's text has that form).
fn shape_keeping(place: &str) -> String {
    format!("{place}.(keeps shape)")
}

/// The dtype candle's `DType::F32` (by its variant's exact name: `DType::f32` may be a
/// constant of a trait of the crate's) names.
fn dtype_variant(name: &str) -> Option<DType> {
    DType::ALL
        .into_iter()
        .find(|dtype| format!("{dtype:?}") == name)
}

/// The subject that stands for an `Activation` field every constructor builds as `Swiglu`,
/// which halves the last dim (`self.act.(halves last dim)`), as [`shape_keeping`]'s.
fn last_dim_halving(place: &str) -> String {
    format!("{place}.(halves last dim)")
}

/// The subject that stands for a `bool` field every constructor sets from a config's
/// (`self.use_flash_attn.(either value)`): each value is some construction's. Forgotten with
/// the clauses on `self` and on that field, never read as a value.
fn either_value(place: &str) -> String {
    format!("{place}.(either value)")
}

/// The subject that stands for a size of `self`'s field behind `&mut self`
/// (`self.n_head.(size)`): forgotten with the clauses on `self` and on that field, never read
/// as a tensor (no expression's text has that form).
fn size_subject(field: &str) -> String {
    format!("self.{field}.(size)")
}

/// Whether an expression is `self` itself.
fn is_self_path(expr: &syn::Expr) -> bool {
    matches!(expr, syn::Expr::Path(p) if p.qself.is_none() && p.path.is_ident("self"))
}

/// Whether the subject `subject` (`self.cache.k`) is the place `place` or below it.
/// Whether a parameter of `sig` has an attribute (`#[cfg(feature = "scale")] scale: usize`):
/// a call's arguments may then line up with other parameters than the ones written.
fn attributed_parameters(sig: &syn::Signature) -> bool {
    sig.inputs.iter().any(|input| match input {
        syn::FnArg::Typed(typed) => !typed.attrs.is_empty(),
        syn::FnArg::Receiver(receiver) => !receiver.attrs.is_empty(),
    })
}

/// Whether what `subject` names may change where `place` is written: it is below the place,
/// or it calls a method on the place or on a path above it, which may read the place
/// (`self.wte.embeddings()`, with_tracing's accessor of `self.wte.inner`).
fn may_read(subject: &str, place: &str) -> bool {
    below(subject, place)
        || subject.match_indices('(').any(|(at, _)| {
            subject[..at]
                .rsplit_once('.')
                .is_some_and(|(receiver, _)| below(place, receiver))
        })
}

fn below(subject: &str, place: &str) -> bool {
    // `self.proj?.weight()` (what an `Option` field holds) and `self.layers[_]` are below
    // `self.proj` and `self.layers` too.
    subject
        .strip_prefix(place)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '(', '?', '[', '@']))
}

/// The local a place (`x`, `x.field`, `x[i]`, `*x`, `&x`) belongs to; none for a value
/// computed by a call.
fn place_root(expr: &syn::Expr) -> Option<String> {
    match expr {
        syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(name_of),
        syn::Expr::Field(f) => place_root(&f.base),
        syn::Expr::Index(i) => place_root(&i.expr),
        syn::Expr::Paren(p) => place_root(&p.expr),
        syn::Expr::Group(g) => place_root(&g.expr),
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => place_root(&u.expr),
        syn::Expr::Reference(r) => place_root(&r.expr),
        _ => None,
    }
}

/// The local an assignment replaces whole (`x = ...`, `*x = ...`).
fn place_local(expr: &syn::Expr) -> Option<String> {
    match expr {
        syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(name_of),
        syn::Expr::Paren(p) => place_local(&p.expr),
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => place_local(&u.expr),
        _ => None,
    }
}

/// Whether a clause's subject is the weight of a layer an `Option` field holds
/// (`self.proj?.weight()`, one `?` before one accessor): read where a name holds that layer
/// (see `Walker::layer_place`).
fn is_optional_layer_weight(subject: &str) -> bool {
    let Some((base, rest)) = subject.split_once('?') else {
        return false;
    };
    !base.contains(['(', '[', '{', '?'])
        && rest
            .strip_prefix('.')
            .and_then(|call| call.strip_suffix("()"))
            .is_some_and(|accessor| LAYER_ACCESSORS.contains(&accessor))
}

/// The methods of candle-nn's layers a clause may read (`self.proj.weight()`).
const LAYER_ACCESSORS: &[&str] = &["weight", "bias", "embeddings", "hidden_size"];

/// Code quoted on one line: each run of whitespace one space, and none where a line break
/// comes before a method call or `?` (`mask.expand(..)?` then `.to_dtype(..)` on the next
/// line reads `mask.expand(..)?.to_dtype(..)`).
fn one_line(code: &str) -> String {
    // Comments are left out only where every line reads plainly (no block comment, raw
    // string or string running on to the next line, where a `//` may be no comment).
    let plain: Option<Vec<&str>> = code.lines().map(without_line_comment).collect();
    let code = match plain {
        Some(lines) => lines.join("\n"),
        None => code.to_string(),
    };
    let mut out = String::with_capacity(code.len());
    let mut chars = code.trim().chars().peekable();
    while let Some(c) = chars.next() {
        if !c.is_whitespace() {
            out.push(c);
            continue;
        }
        let mut line_break = c == '\n';
        while let Some(&next) = chars.peek().filter(|next| next.is_whitespace()) {
            line_break |= next == '\n';
            chars.next();
        }
        let mut rest = chars.clone();
        let chained = match (rest.next(), rest.next()) {
            (Some('?'), _) => true,
            (Some('.'), next) => next != Some('.'),
            _ => false,
        };
        // `1.` before `.max(..)` stays apart (`1..max` would read as a range).
        if !(line_break && chained) || out.ends_with('.') {
            out.push(' ');
        }
    }
    out
}

/// A line of code without its `//` comment (one outside a string or char literal); `None`
/// where the line is not plain enough to tell: a block comment, a raw string, or a string
/// still open at its end.
fn without_line_comment(line: &str) -> Option<&str> {
    if line.contains("/*") || line.contains("*/") || line.contains("r\"") || line.contains("r#") {
        return None;
    }
    let bytes = line.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        match (quote, bytes[i]) {
            (Some(_), b'\\') => i += 1,
            (Some(q), b) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"') => quote = Some(b'"'),
            // A char literal (`'a'`, `'\n'`), not a lifetime (`'a`).
            (None, b'\'')
                if bytes.get(i + 2) == Some(&b'\'') || bytes.get(i + 1) == Some(&b'\\') =>
            {
                quote = Some(b'\'')
            }
            (None, b'/') if bytes.get(i + 1) == Some(&b'/') => return Some(line[..i].trim_end()),
            _ => {}
        }
        i += 1;
    }
    quote.is_none().then_some(line)
}

/// The `Option` field of `self` a `match` or `if let` reads (`&self.proj`, `self.proj.as_ref()`),
/// by its text.
fn option_place(expr: &syn::Expr) -> Option<String> {
    subject_text(option_view(expr))
        .filter(|text| text.starts_with("self.") && !text.contains(['(', '?']))
}

/// The `Option` an expression reads as it is (`opt`, `&opt`, `opt.as_ref()`), without those
/// views of it.
fn option_view(expr: &syn::Expr) -> &syn::Expr {
    let mut expr = expr;
    loop {
        expr = match expr {
            syn::Expr::Paren(p) => &p.expr,
            syn::Expr::Group(g) => &g.expr,
            syn::Expr::Reference(r) if r.mutability.is_none() => &r.expr,
            syn::Expr::MethodCall(m) if m.method == "as_ref" && m.args.is_empty() => &m.receiver,
            _ => return expr,
        };
    }
}

/// `self.head.weight()` as a contract writes a subject, without spaces.
fn subject_text(expr: &syn::Expr) -> Option<String> {
    match expr {
        syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(name_of),
        syn::Expr::Field(f) => {
            let member = match &f.member {
                syn::Member::Named(name) => name_of(name),
                syn::Member::Unnamed(i) => i.index.to_string(),
            };
            Some(format!("{}.{member}", subject_text(&f.base)?))
        }
        syn::Expr::MethodCall(m) if m.args.is_empty() && m.turbofish.is_none() => Some(format!(
            "{}.{}()",
            subject_text(&m.receiver)?,
            name_of(&m.method)
        )),
        syn::Expr::Paren(p) => subject_text(&p.expr),
        _ => None,
    }
}

/// What a tensor's shape is asked by (see [`Walker::reads_shape`]).
const SHAPE_QUERIES: &[&str] = &[
    "rank",
    "dims",
    "dim",
    "dims0",
    "dims1",
    "dims2",
    "dims3",
    "dims4",
    "dims5",
    "shape",
    "elem_count",
    "layout",
];

/// Finds a question on a tensor's shape, or on whether a call on a tensor succeeds, in an
/// expression (see [`Walker::reads_shape`]).
struct ShapeReads<'a> {
    found: bool,
    /// Whether a name holds a tensor.
    is_tensor: &'a dyn Fn(&str) -> bool,
    /// Whether a name holds a value that may follow from a shape (see
    /// [`Walker::shape_derived`]).
    is_derived: &'a dyn Fn(&str) -> bool,
}

impl ShapeReads<'_> {
    /// `x.rank()`, `x.dims2()`, `xs.apply(&conv)`: a call on a name that holds a tensor.
    fn on_tensor(&self, call: &syn::ExprMethodCall) -> bool {
        match unparen(strip_refs(&call.receiver)) {
            syn::Expr::Path(p) => p
                .path
                .get_ident()
                .is_some_and(|ident| (self.is_tensor)(&name_of(ident))),
            // `self.w.rank()`: a field's shape asked (the walk holds no field by name here).
            syn::Expr::Field(_) => SHAPE_QUERIES.iter().any(|name| call.method == name),
            _ => false,
        }
    }

    /// A call on a tensor, or one under `?`, whose success `is_ok` or `let Ok(..)` tests.
    fn succeeds(&self, expr: &syn::Expr) -> bool {
        match unparen(expr) {
            syn::Expr::MethodCall(call) => self.on_tensor(call),
            syn::Expr::Try(t) => matches!(unparen(&t.expr), syn::Expr::MethodCall(call)
                if self.on_tensor(call)),
            // `let r = x.reshape(..); if r.is_err()`: a local that holds a call's `Result`.
            syn::Expr::Path(p) => p
                .path
                .get_ident()
                .is_some_and(|ident| (self.is_tensor)(&name_of(ident))),
            _ => false,
        }
    }

    /// `x.rank()` in a macro's tokens, `x` a name that holds a tensor.
    fn in_tokens(&self, tokens: TokenStream) -> bool {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        tokens.iter().enumerate().any(|(i, token)| match token {
            TokenTree::Ident(ident) => {
                i >= 2
                    && SHAPE_QUERIES.iter().any(|name| ident == name)
                    && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '.')
                    && matches!(&tokens[i - 2], TokenTree::Ident(x) if (self.is_tensor)(&x.to_string()))
                    || (self.is_derived)(&ident.to_string())
            }
            TokenTree::Group(group) => self.in_tokens(group.stream()),
            _ => false,
        })
    }
}

impl ShapeReads<'_> {
    /// A name that holds a tensor, given as an argument (`is_vec(&x)`), or a field of `self`
    /// (`is_vec(&self.w)`: the walk holds no field by name here, so any).
    fn tensor_argument(&self, arg: &syn::Expr) -> bool {
        match unparen(strip_refs(arg)) {
            syn::Expr::Path(p) => p
                .path
                .get_ident()
                .is_some_and(|ident| (self.is_tensor)(&name_of(ident))),
            syn::Expr::Field(field) => is_self_field(field),
            _ => false,
        }
    }
}

impl<'v> Visit<'v> for ShapeReads<'_> {
    fn visit_expr_method_call(&mut self, call: &'v syn::ExprMethodCall) {
        let method = call.method.to_string();
        self.found |= (SHAPE_QUERIES.contains(&method.as_str()) && self.on_tensor(call))
            || ((method == "is_ok" || method == "is_err") && self.succeeds(&call.receiver))
            || call.args.iter().any(|arg| self.tensor_argument(arg));
        syn::visit::visit_expr_method_call(self, call);
    }
    // A function asked about a tensor (`if is_vec(&x) { return .. }`).
    fn visit_expr_call(&mut self, call: &'v syn::ExprCall) {
        self.found |= call.args.iter().any(|arg| self.tensor_argument(arg));
        syn::visit::visit_expr_call(self, call);
    }
    // A local whose value may follow from a shape (`if r < 2` after `let r = rank_of(x)`).
    fn visit_expr_path(&mut self, p: &'v syn::ExprPath) {
        self.found |= p.qself.is_none()
            && p.path
                .get_ident()
                .is_some_and(|ident| (self.is_derived)(&name_of(ident)));
    }
    fn visit_expr_let(&mut self, l: &'v syn::ExprLet) {
        self.found |= matches!(&*l.pat, syn::Pat::TupleStruct(ts)
            if ts.path.is_ident("Ok") || ts.path.is_ident("Err"))
            && self.succeeds(&l.expr);
        syn::visit::visit_expr_let(self, l);
    }
    fn visit_macro(&mut self, mac: &'v syn::Macro) {
        self.found |= self.in_tokens(mac.tokens.clone());
    }
    fn visit_expr_closure(&mut self, _: &'v syn::ExprClosure) {}
}

/// Finds what may leave the function (a `return`, std's and candle's diverging macros, outside
/// closures) and, with `jumps`, its loop's pass too (a `break`, a `continue`, one of the three
/// in a macro's tokens).
struct Leaves {
    found: bool,
    jumps: bool,
}

impl<'a> Visit<'a> for Leaves {
    fn visit_expr_return(&mut self, _: &'a syn::ExprReturn) {
        self.found = true;
    }
    fn visit_expr_break(&mut self, b: &'a syn::ExprBreak) {
        self.found |= self.jumps;
        syn::visit::visit_expr_break(self, b);
    }
    fn visit_expr_continue(&mut self, _: &'a syn::ExprContinue) {
        self.found |= self.jumps;
    }
    fn visit_macro(&mut self, mac: &'a syn::Macro) {
        let name = mac.path.segments.last().map(|s| s.ident.to_string());
        self.found |= name
            .as_deref()
            .is_some_and(|name| DIVERGING_MACROS.contains(&name));
        if self.jumps {
            let mut names = BTreeSet::new();
            idents(&mac.tokens, &mut names);
            self.found |= ["return", "break", "continue"]
                .iter()
                .any(|word| names.contains(*word));
        }
    }
    fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
    fn visit_expr_async(&mut self, _: &'a syn::ExprAsync) {}
}

/// Whether an arm's body may leave the function: a `return` (outside closures), or std's and
/// candle's diverging macros (`bail!`, `panic!`).
fn may_leave(expr: &syn::Expr) -> bool {
    let mut leaves = Leaves {
        found: false,
        jumps: false,
    };
    leaves.visit_expr(expr);
    leaves.found
}

/// The call of a statement that keeps only its error: `check(x)?;`, `let _ = check(x)?;`,
/// `check(x).map_err(..)?;`.
fn discarded_try(stmt: &syn::Stmt) -> Option<&syn::Expr> {
    let tried = match stmt {
        syn::Stmt::Expr(syn::Expr::Try(t), Some(_)) => &t.expr,
        syn::Stmt::Local(local) if matches!(local.pat, syn::Pat::Wild(_)) => {
            match local
                .init
                .as_ref()
                .map(|init| (unparen(&init.expr), &init.diverge))
            {
                Some((syn::Expr::Try(t), None)) => &t.expr,
                _ => return None,
            }
        }
        _ => return None,
    };
    match unparen(tried) {
        syn::Expr::MethodCall(m)
            if matches!(
                m.method.to_string().as_str(),
                "map_err" | "context" | "with_context"
            ) =>
        {
            Some(&m.receiver)
        }
        call => Some(call),
    }
}

/// Macros of other crates that never expand to a `break` or `continue` of the loop they stand
/// in, beside `tracing`'s ([`TRACING_MACROS`]): `log`'s, std's compile-time ones, `anyhow`'s
/// `ensure!` (a `return`).
const QUIET_MACROS: &[&str] = &[
    "log",
    "ensure",
    "cfg",
    "env",
    "option_env",
    "concat",
    "stringify",
    "include_str",
    "include_bytes",
    "line",
    "column",
    "file",
    "module_path",
];

/// Whether a statement may `break` or `continue` a loop around it: one outside the loops and
/// closures inside the statement, a labelled one, or one in a macro's tokens.
fn stmt_jumps(stmt: &syn::Stmt) -> (bool, bool) {
    #[derive(Default)]
    struct Jumps {
        breaks: bool,
        continues: bool,
        depth: usize,
    }
    impl<'a> Visit<'a> for Jumps {
        fn visit_expr_break(&mut self, b: &'a syn::ExprBreak) {
            self.breaks |= self.depth == 0 || b.label.is_some();
            syn::visit::visit_expr_break(self, b);
        }
        fn visit_expr_continue(&mut self, c: &'a syn::ExprContinue) {
            self.continues |= self.depth == 0 || c.label.is_some();
        }
        fn visit_expr_for_loop(&mut self, f: &'a syn::ExprForLoop) {
            self.visit_expr(&f.expr);
            self.depth += 1;
            self.visit_block(&f.body);
            self.depth -= 1;
        }
        fn visit_expr_while(&mut self, w: &'a syn::ExprWhile) {
            self.depth += 1;
            syn::visit::visit_expr_while(self, w);
            self.depth -= 1;
        }
        fn visit_expr_loop(&mut self, l: &'a syn::ExprLoop) {
            self.depth += 1;
            syn::visit::visit_expr_loop(self, l);
            self.depth -= 1;
        }
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        fn visit_expr_async(&mut self, _: &'a syn::ExprAsync) {}
        fn visit_macro(&mut self, mac: &'a syn::Macro) {
            let mut names = BTreeSet::new();
            idents(&mac.tokens, &mut names);
            self.breaks |= names.contains("break");
            self.continues |= names.contains("continue");
        }
    }
    let mut jumps = Jumps::default();
    jumps.visit_stmt(stmt);
    (jumps.breaks, jumps.continues)
}

/// Whether a statement may leave the function or its loop's pass: a `return`, a `break` or
/// `continue`, std's and candle's diverging macros (outside closures). Not a `?`: a debug
/// build's check (`#[cfg(debug_assertions)] { x.sum_all()?.to_scalar::<f32>()?; }`) leaves
/// only where it fails.
fn stmt_may_leave(stmt: &syn::Stmt) -> bool {
    let mut leaves = Leaves {
        found: false,
        jumps: true,
    };
    leaves.visit_stmt(stmt);
    leaves.found
}

/// Whether a `break` stands anywhere in a block (an inner loop's too, a macro's tokens too).
fn may_break(block: &syn::Block) -> bool {
    struct Breaks(bool);
    impl<'a> Visit<'a> for Breaks {
        fn visit_expr_break(&mut self, _: &'a syn::ExprBreak) {
            self.0 = true;
        }
        fn visit_macro(&mut self, mac: &'a syn::Macro) {
            let mut names = BTreeSet::new();
            idents(&mac.tokens, &mut names);
            self.0 |= names.contains("break");
        }
    }
    let mut breaks = Breaks(false);
    breaks.visit_block(block);
    breaks.0
}

/// Whether nothing before `field` (an `ExprField` of the body, `self.kv_cache`) in the body's
/// text could have changed its path or tested it: every mention of the path before it only
/// reads it, where `reads` allows that (`&self.kv_cache`, `self.kv_cache.as_ref()`,
/// `.is_some()`, `.is_none()`: an `Option` of tensors has no shape to change behind a shared
/// reference), its root is used only through other fields (no `self.reset()`,
/// `helper(self)`), and no macro's tokens name the root or the field.
fn first_use_of_field(block: &syn::Block, field: &syn::ExprField, reads: bool) -> bool {
    first_use_of_field_with(block, field, reads, &|_| false)
}

/// The name of the last step of a field path (`use_flash_attn` of `self.use_flash_attn`).
fn field_name(field: &syn::ExprField) -> String {
    match &field.member {
        syn::Member::Named(name) => name_of(name),
        syn::Member::Unnamed(index) => index.index.to_string(),
    }
}

/// In a method's body: `false` where it names `field` of `self` or uses `self` other than as
/// `self.other_field` or `self.method(..)` (a macro naming `self` or the field counts as such
/// a use); else `true`, with each such method's name in `methods`.
fn self_uses(block: &syn::Block, field: &str, methods: &mut Vec<String>) -> bool {
    struct Uses<'f, 'm> {
        field: &'f str,
        methods: &'m mut Vec<String>,
        clean: bool,
    }
    impl<'a> Visit<'a> for Uses<'_, '_> {
        fn visit_expr_field(&mut self, f: &'a syn::ExprField) {
            // Any field of the name (`self.cfg.use_flash_attn` too) may be the flag's value.
            if field_name(f) == self.field {
                self.clean = false;
            }
            if is_self_path(unparen(&f.base)) {
                return;
            }
            syn::visit::visit_expr_field(self, f);
        }
        fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
            if is_self_path(unparen(&m.receiver)) && m.turbofish.is_none() {
                self.methods.push(name_of(&m.method));
                for arg in &m.args {
                    self.visit_expr(arg);
                }
                return;
            }
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
            if p.path.segments.iter().any(|s| s.ident == "self") {
                self.clean = false;
            }
        }
        fn visit_macro(&mut self, mac: &'a syn::Macro) {
            let mut names = BTreeSet::new();
            idents(&mac.tokens, &mut names);
            if names.contains("self") || names.contains(self.field) {
                self.clean = false;
            }
        }
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut uses = Uses {
        field,
        methods,
        clean: true,
    };
    uses.visit_block(block);
    uses.clean
}

/// [`first_use_of_field`], where a call `self.name(..)` for which `quiet(name)` holds is no
/// use of the field (its arguments still are looked at).
fn first_use_of_field_with(
    block: &syn::Block,
    field: &syn::ExprField,
    reads: bool,
    quiet: &dyn Fn(&str) -> bool,
) -> bool {
    struct FirstUse<'a, 'q> {
        root: String,
        first_step: String,
        field: &'a syn::ExprField,
        reads: bool,
        quiet: &'q dyn Fn(&str) -> bool,
        found: Option<bool>,
    }
    impl FirstUse<'_, '_> {
        /// `Some(first step)` of a path of fields from the root (`q_proj` of `self.q_proj.w`).
        fn first_step(&self, f: &syn::ExprField) -> Option<String> {
            let mut member = &f.member;
            let mut base = &*f.base;
            while let syn::Expr::Field(inner) = base {
                member = &inner.member;
                base = &inner.base;
            }
            let from_root = matches!(base, syn::Expr::Path(p)
                if p.qself.is_none()
                    && p.path.get_ident().is_some_and(|ident| name_of(ident) == self.root));
            from_root.then(|| match member {
                syn::Member::Named(name) => name_of(name),
                syn::Member::Unnamed(index) => index.index.to_string(),
            })
        }
        /// Whether `expr` is the path itself (`self.kv_cache`), not the one `field` is.
        fn is_other_use(&self, expr: &syn::Expr) -> bool {
            match unparen(expr) {
                syn::Expr::Field(f) => {
                    !std::ptr::eq(f, self.field)
                        && matches!(&*f.base, syn::Expr::Path(_))
                        && self
                            .first_step(f)
                            .is_some_and(|first| first == self.first_step)
                }
                _ => false,
            }
        }
    }
    impl<'a> Visit<'a> for FirstUse<'a, '_> {
        fn visit_expr_field(&mut self, f: &'a syn::ExprField) {
            if self.found.is_some() {
                return;
            }
            if std::ptr::eq(f, self.field) {
                self.found = Some(true);
                return;
            }
            match self.first_step(f) {
                Some(first) if first == self.first_step => self.found = Some(false),
                Some(_) => {}
                None => syn::visit::visit_expr_field(self, f),
            }
        }
        fn visit_expr_reference(&mut self, r: &'a syn::ExprReference) {
            if self.reads && r.mutability.is_none() && self.is_other_use(&r.expr) {
                return;
            }
            syn::visit::visit_expr_reference(self, r);
        }
        fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
            let read = matches!(
                m.method.to_string().as_str(),
                "as_ref" | "is_some" | "is_none"
            );
            if self.reads && read && m.args.is_empty() && self.is_other_use(&m.receiver) {
                return;
            }
            let on_root = matches!(unparen(&m.receiver), syn::Expr::Path(p)
                if p.qself.is_none()
                    && p.path.get_ident().is_some_and(|ident| name_of(ident) == self.root));
            if on_root && m.turbofish.is_none() && (self.quiet)(&name_of(&m.method)) {
                for arg in &m.args {
                    self.visit_expr(arg);
                }
                return;
            }
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
            if self.found.is_none()
                && p.path
                    .segments
                    .iter()
                    .any(|segment| name_of(&segment.ident) == self.root)
            {
                self.found = Some(false);
            }
        }
        fn visit_macro(&mut self, mac: &'a syn::Macro) {
            let mut names = BTreeSet::new();
            idents(&mac.tokens, &mut names);
            if self.found.is_none()
                && (names.contains(&self.root) || names.contains(&self.first_step))
            {
                self.found = Some(false);
            }
        }
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let Some(path) = subject_text(&syn::Expr::Field(field.clone())) else {
        return false;
    };
    let (root, first_step) = match path.split('.').collect::<Vec<_>>().as_slice() {
        // The field itself, one step from a parameter: `self.kv_cache`.
        [root, first_step] => (root.to_string(), first_step.to_string()),
        _ => return false,
    };
    let mut first = FirstUse {
        root,
        first_step,
        field,
        reads,
        quiet,
        found: None,
    };
    first.visit_block(block);
    first.found == Some(true)
}

/// The first mention of the name `name` in a body, in the order of its text, where it is a
/// path of one name (`t` of `match t`): `None` where the first is anything else (an item, a
/// macro's tokens) or there is none. Method and field names, and the names patterns bind,
/// are no mentions.
fn first_mention<'a>(block: &'a syn::Block, name: &str) -> Option<&'a syn::ExprPath> {
    struct First<'a, 'n> {
        name: &'n str,
        found: Option<Option<&'a syn::ExprPath>>,
    }
    impl<'a> Visit<'a> for First<'a, '_> {
        fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
            if self.found.is_none()
                && p.qself.is_none()
                && p.path
                    .get_ident()
                    .is_some_and(|ident| name_of(ident) == self.name)
            {
                self.found = Some(Some(p));
            }
            syn::visit::visit_expr_path(self, p);
        }
        fn visit_ident(&mut self, ident: &'a proc_macro2::Ident) {
            if self.found.is_none() && name_of(ident) == self.name {
                self.found = Some(None);
            }
        }
        fn visit_macro(&mut self, mac: &'a syn::Macro) {
            syn::visit::visit_path(self, &mac.path);
            let mut names = BTreeSet::new();
            idents(&mac.tokens, &mut names);
            if self.found.is_none() && names.contains(self.name) {
                self.found = Some(None);
            }
        }
        fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
            self.visit_expr(&m.receiver);
            if let Some(turbofish) = &m.turbofish {
                self.visit_angle_bracketed_generic_arguments(turbofish);
            }
            for arg in &m.args {
                self.visit_expr(arg);
            }
        }
        fn visit_member(&mut self, _: &'a syn::Member) {}
        // `place = value` runs `value` first (the Rust reference's order).
        fn visit_expr_assign(&mut self, a: &'a syn::ExprAssign) {
            for attr in &a.attrs {
                self.visit_attribute(attr);
            }
            self.visit_expr(&a.right);
            self.visit_expr(&a.left);
        }
        // `place += value` runs `value` first on primitives and `place` first through an
        // operator trait: where both name it, neither is surely first.
        fn visit_expr_binary(&mut self, b: &'a syn::ExprBinary) {
            if crate::construct::is_compound_assignment(&b.op) && self.found.is_none() {
                let mentions = |e: &'a syn::Expr| {
                    let mut side = First {
                        name: self.name,
                        found: None,
                    };
                    side.visit_expr(e);
                    side.found.is_some()
                };
                if mentions(&b.left) && mentions(&b.right) {
                    self.found = Some(None);
                    return;
                }
            }
            syn::visit::visit_expr_binary(self, b);
        }
        // A pattern binds a new name (`Some(t)` of `if let Some(t) = t`): no mention of the
        // argument. Which value a later `t` names, the walk's binding says.
        fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
            if let Some((_, sub)) = &p.subpat {
                self.visit_pat(sub);
            }
        }
    }
    let mut first = First { name, found: None };
    first.visit_block(block);
    first.found.flatten()
}

/// Whether a subject's path goes through a cell or a lock (`self.cache.borrow().kv`), where
/// what it names may change behind `&self`.
fn through_interior_mutability(subject: &str) -> bool {
    const CELLS: &[&str] = &[
        "borrow",
        "borrow_mut",
        "try_borrow",
        "lock",
        "try_lock",
        "read",
        "write",
        "get",
        "get_mut",
        "take",
        "replace",
        "load",
        "upgrade",
    ];
    subject
        .split('.')
        .filter_map(|step| step.strip_suffix("()"))
        .any(|method| CELLS.contains(&method))
}

/// The candle dtype of the Rust values `expr` writes, where its syntax says it: a literal's
/// suffix (`3u32`, `[[1f32, 2.], ..]`) or a cast (`n as u32`, where `primitive` says the name
/// is std's type), through `&`, arrays and `-`.
/// The dtype of the value of a closure's body that yields one number: a literal of a type, a
/// cast, a constant such as `f32::MIN`, `u8::from(..)`, or an `if` / `match` / block one of
/// whose values is one (every branch of one has one Rust type). Not an array or a reference.
fn value_dtype(expr: &syn::Expr, primitive: &dyn Fn(&str) -> bool) -> Option<DType> {
    match unparen(expr) {
        syn::Expr::Array(_) | syn::Expr::Reference(_) => None,
        syn::Expr::Block(b) => match b.block.stmts.last() {
            Some(syn::Stmt::Expr(tail, None)) => value_dtype(tail, primitive),
            _ => None,
        },
        syn::Expr::If(i) => {
            let then = match i.then_branch.stmts.last() {
                Some(syn::Stmt::Expr(tail, None)) => value_dtype(tail, primitive),
                _ => None,
            };
            then.or_else(|| {
                i.else_branch
                    .as_ref()
                    .and_then(|(_, e)| value_dtype(e, primitive))
            })
        }
        syn::Expr::Match(m) => m
            .arms
            .iter()
            .find_map(|arm| value_dtype(&arm.body, primitive)),
        // `u8::from(j <= i)`: `From` gives `Self`.
        syn::Expr::Call(c) => match unparen(&c.func) {
            syn::Expr::Path(p)
                if p.qself.is_none()
                    && p.path.segments.len() == 2
                    && p.path.segments[1].ident == "from"
                    && p.path.segments[1].arguments.is_none()
                    && p.path.segments[0].arguments.is_none() =>
            {
                let ty = p.path.segments[0].ident.to_string();
                primitive(&ty).then(|| dtype_of_name(&ty)).flatten()
            }
            _ => None,
        },
        other => literal_dtype(other, primitive),
    }
}

/// `Vec<u8>` (and the other element types candle has a dtype for): that dtype.
fn vec_element_dtype(ty: &syn::Type, primitive: &dyn Fn(&str) -> bool) -> Option<DType> {
    let syn::Type::Path(p) = ty else {
        return None;
    };
    if p.qself.is_some() || p.path.segments.len() != 1 {
        return None;
    }
    let segment = &p.path.segments[0];
    let syn::PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    if segment.ident != "Vec" || !primitive("Vec") || args.args.len() != 1 {
        return None;
    }
    let Some(syn::GenericArgument::Type(syn::Type::Path(element))) = args.args.first() else {
        return None;
    };
    let name = element.path.get_ident()?.to_string();
    (element.qself.is_none() && primitive(&name))
        .then(|| dtype_of_name(&name))
        .flatten()
}

/// Whether a type is written `Vec<..>` (std's, where the crate names nothing so).
fn is_vec_type(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.segments.len() == 1
        && p.path.segments[0].ident == "Vec")
}

/// The dtype of a Rust primitive number type's name (candle's other dtypes are `half`'s and
/// `float8`'s types, no primitives).
fn dtype_of_name(name: &str) -> Option<DType> {
    DType::from_name(name).filter(|dtype| {
        matches!(
            dtype,
            DType::U8 | DType::U32 | DType::I16 | DType::I32 | DType::I64 | DType::F32 | DType::F64
        )
    })
}

fn literal_dtype(expr: &syn::Expr, primitive: &dyn Fn(&str) -> bool) -> Option<DType> {
    let of_name = dtype_of_name;
    match unparen(expr) {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(int),
            ..
        }) => of_name(int.suffix()),
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Float(float),
            ..
        }) => of_name(float.suffix()),
        syn::Expr::Cast(cast) => match &*cast.ty {
            syn::Type::Path(p) if p.qself.is_none() => p
                .path
                .get_ident()
                .map(|ident| ident.to_string())
                .filter(|name| primitive(name))
                .and_then(|name| of_name(&name)),
            _ => None,
        },
        syn::Expr::Reference(r) => literal_dtype(&r.expr, primitive),
        // `f32::NEG_INFINITY`, `u32::MAX`: a constant of the primitive type it is read from
        // (not `u8::BITS`, a `u32`).
        syn::Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 2 => {
            let (ty, constant) = (&p.path.segments[0].ident, &p.path.segments[1].ident);
            let ty = ty.to_string();
            let float = matches!(ty.as_str(), "f32" | "f64");
            let typed = matches!(constant.to_string().as_str(), "MAX" | "MIN")
                || (float
                    && matches!(
                        constant.to_string().as_str(),
                        "INFINITY" | "NEG_INFINITY" | "NAN" | "MIN_POSITIVE" | "EPSILON"
                    ));
            if typed && primitive(&ty) {
                of_name(&ty)
            } else {
                None
            }
        }
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => {
            literal_dtype(&u.expr, primitive)
        }
        // One element's type is every element's.
        syn::Expr::Array(array) => array.elems.iter().find_map(|e| literal_dtype(e, primitive)),
        syn::Expr::Repeat(repeat) => literal_dtype(&repeat.expr, primitive),
        _ => None,
    }
}

/// The most numbers a `[x; n]` the walk spells out item by item holds (`[[0f32; 16]; 16]`).
const MAX_REPEATED: usize = 256;

/// The most values a tuple or array the walk keeps spells out (`(a, a)` of an `a` of 256
/// numbers, again and again, would grow without end).
const MAX_SPELLED: usize = 4096;

/// `value`, or nothing the walk follows where it spells out more than [`MAX_SPELLED`] values.
fn spelled_within_bounds(value: Value) -> Value {
    match spelled_items(&value) <= MAX_SPELLED {
        true => value,
        false => Value::Other,
    }
}

/// How many numbers a value spelled out as (nested) tuples holds.
fn spelled_items(value: &Value) -> usize {
    match value {
        Value::Tuple(items) => items.iter().map(spelled_items).sum(),
        _ => 1,
    }
}

/// How many sizes `dims2` to `dims5` read.
fn dims_count(method: &str) -> Option<usize> {
    match method {
        "dims2" => Some(2),
        "dims3" => Some(3),
        "dims4" => Some(4),
        "dims5" => Some(5),
        _ => None,
    }
}

/// `expr` without parentheses and invisible groups.
fn unparen(expr: &syn::Expr) -> &syn::Expr {
    match expr {
        syn::Expr::Paren(p) => unparen(&p.expr),
        syn::Expr::Group(g) => unparen(&g.expr),
        expr => expr,
    }
}

fn strip_refs(expr: &syn::Expr) -> &syn::Expr {
    match expr {
        syn::Expr::Reference(r) => strip_refs(&r.expr),
        syn::Expr::Paren(p) => strip_refs(&p.expr),
        _ => expr,
    }
}

/// The type a function returns, inside a `Result` (`Result<(Tensor, Tensor)>` gives the
/// tuple); `None` for `()` or a `Result` without a type argument.
fn ok_type(sig: &syn::Signature) -> Option<&syn::Type> {
    let syn::ReturnType::Type(_, ty) = &sig.output else {
        return None;
    };
    match &**ty {
        syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Result") => {
            match p.path.segments.last().map(|s| &s.arguments) {
                Some(syn::PathArguments::AngleBracketed(a)) => match a.args.first() {
                    Some(syn::GenericArgument::Type(t)) => Some(t),
                    _ => None,
                },
                _ => None,
            }
        }
        ty => Some(ty),
    }
}

/// `x` of a tail `Ok(x)`.
/// Whether `sig` returns a `Result` (`Result<Tensor>`, `anyhow::Result<_>`).
fn returns_result(sig: &syn::Signature) -> bool {
    match &sig.output {
        syn::ReturnType::Type(_, ty) => matches!(&**ty, syn::Type::Path(path)
            if path.path.segments.last().is_some_and(|segment| segment.ident == "Result")),
        syn::ReturnType::Default => false,
    }
}

/// Whether `sig` returns a `Tensor` or a `Result` whose value is one.
fn returns_tensor(sig: &syn::Signature) -> bool {
    let syn::ReturnType::Type(_, ty) = &sig.output else {
        return false;
    };
    let syn::Type::Path(path) = &**ty else {
        return false;
    };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    match &last.arguments {
        syn::PathArguments::None => last.ident == "Tensor",
        syn::PathArguments::AngleBracketed(args) => {
            last.ident == "Result"
                && matches!(args.args.first(), Some(syn::GenericArgument::Type(syn::Type::Path(p)))
                if p.qself.is_none() && p.path.segments.last().is_some_and(|s| {
                    s.ident == "Tensor" && matches!(s.arguments, syn::PathArguments::None)
                }))
        }
        syn::PathArguments::Parenthesized(_) => false,
    }
}

fn ok_inner(expr: &syn::Expr) -> &syn::Expr {
    if let syn::Expr::Call(call) = expr
        && let syn::Expr::Path(p) = &*call.func
        && p.path.is_ident("Ok")
        && call.args.len() == 1
        && let Some(inner) = call.args.first()
    {
        return inner;
    }
    expr
}

fn tail_expr(block: &syn::Block) -> Option<&syn::Expr> {
    match block.stmts.last()? {
        syn::Stmt::Expr(expr, None) => Some(expr),
        _ => None,
    }
}

/// The op that gives a `let` its value, as `shapes` names it: a method (`matmul`), a function
/// by its last two segments (`Tensor::zeros`, `ops::softmax`), an operator (`/`); through `?`,
/// `&` and parentheses; empty for anything else.
fn op_of(expr: &syn::Expr) -> String {
    match expr {
        syn::Expr::Try(t) => op_of(&t.expr),
        syn::Expr::Paren(p) => op_of(&p.expr),
        syn::Expr::Reference(r) => op_of(&r.expr),
        syn::Expr::Await(a) => op_of(&a.base),
        syn::Expr::MethodCall(m) if KEEP_OK.contains(&name_of(&m.method).as_str()) => {
            op_of(&m.receiver)
        }
        syn::Expr::MethodCall(m) => name_of(&m.method),
        syn::Expr::Call(c) => match &*c.func {
            syn::Expr::Path(p) => {
                let segments = path_segments(&p.path);
                let tail = segments.len().saturating_sub(2);
                segments[tail..].join("::")
            }
            _ => String::new(),
        },
        syn::Expr::Binary(b) => b.op.to_token_stream().to_string(),
        syn::Expr::Macro(m) => m
            .mac
            .path
            .segments
            .last()
            .map(|s| format!("{}!", name_of(&s.ident)))
            .unwrap_or_default(),
        syn::Expr::If(_) => "if".to_string(),
        syn::Expr::Match(_) => "match".to_string(),
        syn::Expr::Block(_) => "block".to_string(),
        syn::Expr::Path(p) => path_segments(&p.path).join("::"),
        _ => String::new(),
    }
}

/// A path's segments as names, `::` first for a path from the crate root of crates
/// (`::candle_nn::ops::softmax`).
fn path_segments(path: &syn::Path) -> Vec<String> {
    let leading = path.leading_colon.map(|_| "::".to_string());
    leading
        .into_iter()
        .chain(path.segments.iter().map(|s| name_of(&s.ident)))
        .collect()
}

/// Whether an integer type holds any size a tensor can have (`usize`, `u64`, `i64`, ...).
fn holds_any_size(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.path.get_ident().is_some_and(|i| {
        matches!(i.to_string().as_str(), "usize" | "u64" | "u128" | "isize" | "i64" | "i128")
    }))
}

/// `2^bits` of a narrow unsigned integer type (`u8`, `u16`, `u32`): a cast to it keeps a size
/// modulo this.
fn unsigned_modulus(ty: &syn::Type) -> Option<u64> {
    match ty {
        syn::Type::Path(p) => match p.path.get_ident().map(|i| i.to_string()).as_deref() {
            Some("u8") => Some(1 << 8),
            Some("u16") => Some(1 << 16),
            Some("u32") => Some(1 << 32),
            _ => None,
        },
        _ => None,
    }
}

/// Whether the number `n` fits the integer type `ty` (a narrow one: `u8`, `i32`).
fn fits(n: u64, ty: &syn::Type) -> bool {
    let max = match ty {
        syn::Type::Path(p) => match p.path.get_ident().map(|i| i.to_string()).as_deref() {
            Some("u8") => u64::from(u8::MAX),
            Some("u16") => u64::from(u16::MAX),
            Some("u32") => u64::from(u32::MAX),
            Some("i8") => 127,
            Some("i16") => 32_767,
            Some("i32") => 2_147_483_647,
            _ => return false,
        },
        _ => return false,
    };
    n <= max
}

/// Which of std's `Option`, `Vec`, `Box`, `Rc` and `Arc` the type path `segments` names, as
/// resolved: by its own name where nothing of the crate's has it, or by a std path.
fn std_wrapper(segments: &[String], resolved: &Resolved) -> Option<&'static str> {
    const WRAPPERS: &[&str] = &["Option", "Vec", "Box", "Rc", "Arc"];
    let name = match (segments, resolved) {
        ([only], Resolved::Unknown) => only.as_str(),
        (_, Resolved::External(path))
            if matches!(
                path.first().map(String::as_str),
                Some("std" | "core" | "alloc")
            ) =>
        {
            path.last().map_or("", String::as_str)
        }
        _ => return None,
    };
    WRAPPERS.iter().copied().find(|wrapper| *wrapper == name)
}

/// `stated`, its unknown dims taken from `body` where both have the same rank (both hold of
/// one value: a return clause and what the body gives).
fn fill_unknown(stated: TensorType, body: &TensorType) -> TensorType {
    let dtypes = match stated.dtypes.intersection(body.dtypes) {
        both if both.is_empty() => stated.dtypes,
        both => both,
    };
    let shape = match (stated.shape.dims(), body.shape.dims()) {
        (Some(a), Some(b)) if a.len() == b.len() => Shape::new(
            a.iter()
                .zip(b)
                .map(|(a, b)| if a.is_unknown() { b.clone() } else { a.clone() })
                .collect(),
        ),
        (None, Some(_)) if stated.shape == Shape::unknown() => body.shape.clone(),
        _ => stated.shape.clone(),
    };
    TensorType::new(dtypes, shape)
}

/// A value of `kind` nothing more is known of.
/// Whether a body is one std macro that panics (`unimplemented!(..)`, `todo!()`, `panic!(..)`,
/// `unreachable!()`), and nothing else: a call of it never returns. `bail!` returns an
/// error, which the caller may handle, so it is not one. `shadowed(name)`: whether a macro of
/// that name other than std's may be in scope there.
/// Whether a function never gives a value its caller's `?` lets through: it returns `!`, or
/// its body ends in `Err(..)` or `bail!(..)` (or `return Err(..)`) and names no `Ok` and no
/// other `return`.
fn never_ok(sig: &syn::Signature, block: &syn::Block) -> bool {
    if matches!(&sig.output, syn::ReturnType::Type(_, ty) if matches!(**ty, syn::Type::Never(_))) {
        return true;
    }
    fn is_bail(mac: &syn::Macro) -> bool {
        mac.path.segments.last().is_some_and(|s| s.ident == "bail")
    }
    fn is_err(expr: &syn::Expr) -> bool {
        match unparen(expr) {
            syn::Expr::Call(call) => matches!(unparen(&call.func), syn::Expr::Path(p)
                if p.qself.is_none() && p.path.is_ident("Err")),
            syn::Expr::Macro(m) => is_bail(&m.mac),
            syn::Expr::Return(r) => r.expr.as_deref().is_some_and(is_err),
            _ => false,
        }
    }
    let tail_fails = match block.stmts.last() {
        Some(syn::Stmt::Expr(expr, _)) => is_err(expr),
        Some(syn::Stmt::Macro(m)) => is_bail(&m.mac),
        _ => false,
    };
    struct Exits {
        other: bool,
    }
    impl<'a> Visit<'a> for Exits {
        fn visit_expr_return(&mut self, r: &'a syn::ExprReturn) {
            if !r.expr.as_deref().is_some_and(is_err) {
                self.other = true;
            }
            syn::visit::visit_expr_return(self, r);
        }
        fn visit_ident(&mut self, ident: &'a proc_macro2::Ident) {
            if ident == "Ok" {
                self.other = true;
            }
        }
        fn visit_macro(&mut self, mac: &'a syn::Macro) {
            let mut names = BTreeSet::new();
            idents(&mac.tokens, &mut names);
            if names.contains("Ok") || names.contains("return") {
                self.other = true;
            }
        }
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut exits = Exits { other: false };
    exits.visit_block(block);
    tail_fails && !exits.other
}

fn panics_at_once(block: &syn::Block, shadowed: &dyn Fn(&str) -> bool) -> bool {
    let [stmt] = block.stmts.as_slice() else {
        return false;
    };
    // A `#[cfg]` (or any attribute) on it may leave nothing.
    let mac = match stmt {
        syn::Stmt::Macro(m) if m.attrs.is_empty() => &m.mac,
        syn::Stmt::Expr(syn::Expr::Macro(m), _) if m.attrs.is_empty() => &m.mac,
        _ => return false,
    };
    // A bare name only: `std::todo!` may be a module of the crate's named `std`.
    let Some(name) = mac.path.get_ident().map(|i| i.to_string()) else {
        return false;
    };
    let std_path = !shadowed(&name);
    std_path
        && matches!(
            name.as_str(),
            "panic" | "todo" | "unimplemented" | "unreachable"
        )
}

fn kind_unknown(kind: &Kind) -> Value {
    kind.clone().unknown_value()
}

/// How a method takes its receiver, for a plain one (`self`, `&self`, `&mut self`).
fn receiver_access(sig: &syn::Signature) -> Option<Access> {
    let receiver = sig.receiver()?;
    if receiver.colon_token.is_some() {
        return None;
    }
    Some(match (&receiver.reference, receiver.mutability) {
        (Some(_), Some(_)) => Access::Mut,
        (Some(_), None) => Access::Ref,
        (None, _) => Access::Owned,
    })
}

/// A trait's path with candle-nn's re-exports of candle-core's traits (`candle_nn::Module`,
/// `candle_nn::ModuleT`) read as candle-core's: `use candle_nn::Module;` brings into scope
/// the trait `impl candle::Module for Linear` implements.
fn canonical_trait(path: &[String]) -> Vec<String> {
    match path {
        [krate, name] if krate == "candle_nn" && (name == "Module" || name == "ModuleT") => {
            vec!["candle_core".to_string(), name.clone()]
        }
        _ => path.to_vec(),
    }
}

fn is_candle_tensor(path: &[String]) -> bool {
    matches!(
        path.first().map(String::as_str),
        Some("candle_core" | "candle")
    ) && path.last().is_some_and(|last| last == "Tensor")
}

/// `base[index]` of a list of tensors or sizes: the part at an integer (unknown past a list,
/// where Rust panics), the same parts for `..`, the parts of a range of numbers.
fn index_value(base: Value, index: Value) -> Value {
    match (base, index) {
        (Value::Tensors(ts), Value::Int(i)) => Value::Tensor(
            i.as_literal()
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| ts.get(i).cloned())
                .unwrap_or_else(TensorType::unknown),
        ),
        (Value::TensorsEach(t, _), Value::Int(_)) => Value::Tensor(t),
        (Value::Funcs(func), Value::Int(_)) => Value::Func(func),
        // `&position_ids[..]`: the whole list; a part of it, as many numbers as the walk can
        // tell (none).
        (Value::Numbers(dtype, count), Value::Range(None, None)) => Value::Numbers(dtype, count),
        (Value::Numbers(dtype, _), Value::Range(..)) => Value::Numbers(dtype, Dim::Unknown),
        // `x.dims()[1]`, `dims[2]` of a list of sizes (a Rust tuple has no `[]`): the size at
        // a number (past the list, Rust panics).
        (Value::Tuple(items), Value::Int(i)) => i
            .as_literal()
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| items.get(i).cloned())
            .unwrap_or(Value::Other),
        // `self.layers[0]`: a place of the element type; `self.layers[1..]`, the same list.
        (Value::Each(element), Value::Int(_)) => *element,
        (each @ Value::Each(_), Value::Range(..)) => each,
        (list @ (Value::Tensors(_) | Value::TensorsEach(..)), Value::Range(None, None)) => list,
        (Value::TensorsEach(t, _), Value::Range(..)) => Value::TensorsEach(t, Dim::Unknown),
        (Value::Tensors(ts), Value::Range(start, end)) => {
            let at = |d: Option<Dim>, default: usize| match d {
                None => Some(default),
                Some(d) => d.as_literal().and_then(|n| usize::try_from(n).ok()),
            };
            match (at(start, 0), at(end, ts.len())) {
                (Some(start), Some(end)) if start <= end && end <= ts.len() => {
                    Value::Tensors(ts[start..end].to_vec())
                }
                _ => Value::Other,
            }
        }
        _ => Value::Other,
    }
}

/// An array's value: the tensors of `&[&a, &b]`, or the sizes of `[b, 1, d]`.
/// Whether tokens hold a `{ .. }` group at any depth.
fn has_brace_group(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|tree| match tree {
        TokenTree::Group(group) => {
            group.delimiter() == proc_macro2::Delimiter::Brace || has_brace_group(group.stream())
        }
        _ => false,
    })
}

/// One type every one of `types` has: their join, unnamed.
fn each_of<'t>(types: impl Iterator<Item = &'t TensorType>) -> TensorType {
    let mut unknown = |_: &Dim, _: &Dim| Dim::Unknown;
    types
        .cloned()
        .reduce(|a, b| a.join_by(&b, &mut unknown))
        .unwrap_or_else(TensorType::unknown)
}

fn array_value(items: Vec<Value>) -> Value {
    if items.is_empty() {
        return Value::Other;
    }
    // An array's items have one Rust type: with one a tensor, all are (`[prev_k, &k]` with
    // `prev_k` out of a cache the walk cannot see into).
    if items.iter().any(|v| matches!(v, Value::Tensor(_)))
        && items
            .iter()
            .all(|v| matches!(v, Value::Tensor(_) | Value::Other | Value::Never))
    {
        return Value::Tensors(
            items
                .into_iter()
                .map(|v| match v {
                    Value::Tensor(t) => t,
                    _ => TensorType::unknown(),
                })
                .collect(),
        );
    }
    // The sizes of `[b, 1, d]`; the values of `&[0.5f32, 1.0]` and the rows of `&[[1, 2], [3, 4]]`
    // (for `Tensor::new`).
    if items.iter().all(|v| matches!(v, Value::Int(_)))
        || items.iter().all(|v| matches!(v, Value::Float))
        || items.iter().all(|v| matches!(v, Value::Tuple(_)))
    {
        return Value::Tuple(items);
    }
    Value::Other
}

/// Names a block's own items bring into scope: `use`s with their paths, other items as
/// names the walk does not follow.
fn local_item(item: &syn::Item, into: &mut BTreeMap<String, Option<Vec<String>>>) {
    let ident = match item {
        // Under `cfg` it may be compiled out, leaving the name to a glob or the prelude.
        syn::Item::Use(u) if is_conditional(&u.attrs) => {
            let mut names = BTreeMap::new();
            use_names(&u.tree, Vec::new(), &mut names);
            into.extend(names.into_keys().map(|name| (name, None)));
            return;
        }
        syn::Item::Use(u) => return use_names(&u.tree, Vec::new(), into),
        syn::Item::Fn(f) => &f.sig.ident,
        syn::Item::Struct(s) => &s.ident,
        syn::Item::Enum(e) => &e.ident,
        syn::Item::Const(c) => &c.ident,
        syn::Item::Static(s) => &s.ident,
        syn::Item::Mod(m) => &m.ident,
        syn::Item::Trait(t) => &t.ident,
        syn::Item::Type(t) => &t.ident,
        syn::Item::Union(u) => &u.ident,
        _ => return,
    };
    into.insert(name_of(ident), None);
}

/// Two branches' scopes, frame by frame: what both agree on.
/// An expression's identity in the body being walked (its address), for
/// [`Walker::failed_call`].
fn expr_id<T>(expr: &T) -> usize {
    std::ptr::from_ref(expr) as usize
}

/// The [`expr_id`] of `expr`, parentheses taken off, as a method call or call it is.
fn call_id(expr: &syn::Expr) -> usize {
    match expr {
        syn::Expr::Paren(p) => call_id(&p.expr),
        syn::Expr::Group(g) => call_id(&g.expr),
        syn::Expr::MethodCall(m) => expr_id(m),
        syn::Expr::Call(c) => expr_id(c),
        other => expr_id(other),
    }
}

/// Whether two scopes hold the same values, name by name.
fn same_values(a: &[BTreeMap<String, Binding>], b: &[BTreeMap<String, Binding>]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(fa, fb)| {
            fa.len() == fb.len()
                && fa
                    .iter()
                    .all(|(name, x)| fb.get(name).is_some_and(|y| x.value == y.value))
        })
}

fn merge(
    a: &[BTreeMap<String, Binding>],
    b: &[BTreeMap<String, Binding>],
) -> Vec<BTreeMap<String, Binding>> {
    merge_with(a, b, &mut Joiner::unnamed())
}

/// [`merge`], the sizes the two disagree on named by `joiner`.
fn merge_with(
    a: &[BTreeMap<String, Binding>],
    b: &[BTreeMap<String, Binding>],
    joiner: &mut Joiner,
) -> Vec<BTreeMap<String, Binding>> {
    a.iter()
        .zip(b)
        .map(|(fa, fb)| {
            fa.iter()
                .map(|(name, x)| {
                    let binding = match fb.get(name) {
                        Some(y) => Binding {
                            value: x.value.join_with(&y.value, joiner),
                            origin: if x.value == y.value {
                                x.origin.clone()
                            } else {
                                None
                            },
                            place: if x.place == y.place {
                                x.place.clone()
                            } else {
                                None
                            },
                        },
                        None => Binding::new(Value::Other, None),
                    };
                    (name.clone(), binding)
                })
                .collect()
        })
        .collect()
}

/// Whether a value is a tensor whose shape is not fully known (`f32[B, _]`, `f32[..]`), or
/// anything not known at all (`?`); a size two branches give (`?1`) is known.
fn vague(value: &Value) -> bool {
    match value {
        // The shape's, not the dtype's (`_[B, T, E]` of a `VarBuilder`'s dtype is known).
        Value::Tensor(_) => {
            let hint = value.hint();
            let shape = hint.split_once('[').map_or("", |(_, shape)| shape);
            hint == "?"
                || shape.contains("..")
                || shape.split([']', ',', ' ']).any(|token| token == "_")
        }
        Value::Other => true,
        Value::Tuple(items) => items.iter().any(vague),
        _ => false,
    }
}

/// Whether a tensor's method of this name gives something other than a tensor (its device,
/// dims, dtype, values on the host).
fn reads_no_tensor(name: &str) -> bool {
    matches!(
        name,
        "device"
            | "dtype"
            | "shape"
            | "dims"
            | "dim"
            | "rank"
            | "elem_count"
            | "layout"
            | "stride"
            | "id"
            | "is_contiguous"
            | "is_variable"
            | "to_scalar"
            | "to_string"
    ) || name.starts_with("dims")
        || name.starts_with("to_vec")
}

/// Code as a message quotes it, on one line and short.
fn quoted(tokens: &impl ToTokens) -> String {
    let text: String = tokens
        .to_token_stream()
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" . ", ".")
        .replace(" :: ", "::")
        .replace(" [", "[")
        .replace("( ", "(")
        .replace(" )", ")")
        .replace("& ", "&")
        .replace(" ,", ",")
        .replace(" ?", "?");
    // `f (x)` is a call, `f(x)`; `let (a, b) =`, `= (x)`, `, (x)` keep their space.
    let mut joined = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(" (") {
        let before = &rest[..at];
        let word = before
            .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("");
        let last = before.chars().last();
        let call = last
            .is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | ')' | '>' | ']' | '!'))
            && !matches!(
                word,
                "let" | "if" | "in" | "match" | "return" | "while" | "for" | "as" | "mut" | "move"
            );
        joined.push_str(before);
        joined.push_str(if call { "(" } else { " (" });
        rest = &rest[at + 2..];
    }
    joined.push_str(rest);
    let text = joined;
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}..", &text[..at]),
        None => text,
    }
}

/// Why a method call may give a shape the check does not know (said only where it does).
fn method_why(call: &syn::ExprMethodCall, name: &str, receiver: &Value, args: &[Value]) -> String {
    // A closure (`map(|t| t)`) is no value of the op's.
    let unknown_size = call.args.iter().zip(args).find(|(arg, value)| {
        !matches!(unparen(arg), syn::Expr::Closure(_))
            && (matches!(value, Value::Int(d) if d.is_unknown()) || **value == Value::Other)
    });
    // A dim's place given by a size the check cannot count (`transpose(k, 2)` of a `k`).
    let symbolic = call.args.iter().zip(args).find(
        |(_, value)| matches!(value, Value::Int(d) if !d.is_unknown() && d.as_literal().is_none()),
    );
    match receiver {
        // `xs.apply(&block)` of a `Func` the walk built: its closure was followed.
        Value::Tensor(t)
            if matches!(name, "apply" | "apply_t")
                && matches!(args.first(), Some(Value::Func(_))) =>
        {
            format!(
                "the closure of the `Func` `{}` gives a size the check cannot name for `{t}`",
                quoted(&call.args[0])
            )
        }
        // `xs.apply(&self.layer1)`: the layer is the argument.
        Value::Tensor(t) if matches!(name, "apply" | "apply_t") && !call.args.is_empty() => {
            layer_why(&quoted(&call.args[0]), &t.to_string())
        }
        Value::Tensor(t) => match unknown_size {
            Some((arg, _)) => format!("`{}` is a value the check does not know", quoted(arg)),
            None if let Some((arg, Value::Int(d))) = symbolic
                && has_method_rule(name) =>
            {
                let arg = quoted(arg);
                let is = match arg == d.to_string() {
                    true => String::new(),
                    false => format!(" (`{d}`)"),
                };
                format!(
                    "`{arg}`{is} is no number the check knows: `{name}` on `{t}` gives a size it \
                     cannot name"
                )
            }
            None if has_method_rule(name) => {
                let operands: Vec<String> = args
                    .iter()
                    .filter(|value| matches!(value, Value::Tensor(_)))
                    .map(|value| format!("`{}`", value.hint()))
                    .collect();
                match operands.as_slice() {
                    [] => format!("`{name}` on `{t}` gives a size the check cannot name"),
                    _ => format!(
                        "`{name}` of `{t}` and {} gives a size the check cannot name",
                        operands.join(", ")
                    ),
                }
            }
            None => format!("the check has no rule for `Tensor::{name}`"),
        },
        _ if matches!(name, "forward" | "forward_t") => {
            let input = args.first().map_or("?".to_string(), Value::hint);
            layer_why(&quoted(&call.receiver), &input)
        }
        // candle-nn's kv cache: every dim but the one it grows on is its input's.
        Value::External(path) if name == "append" && KV_CACHES.contains(&path.as_str()) => {
            format!(
                "`{}.append(..)` holds every step so far: how many is followed only where the \
                 contract states `current_seq_len() = P` (for a `ConcatKvCache`'s values, \
                 `v()?: .. else P = 0` too) and a constructor in sight gives the dim it grows on \
                 (`ConcatKvCache::new(2)` for a field no other code may build)",
                quoted(&call.receiver)
            )
        }
        _ => format!("`{}.{name}(..)` is not followed", quoted(&call.receiver)),
    }
}

/// Why a layer's output may not be known: its sizes are not known, or do not decide the
/// output for this input (a norm's weight `[cfg.hidden_size]` on `[B, T, E]` broadcasts to
/// either where one is 1).
fn layer_why(layer: &str, input: &str) -> String {
    format!(
        "`{layer}` gives no shape the check can name for `{input}`: state its sizes in the \
         contract's names (a layer clause for candle-nn's layer, or a contract on the \
         `forward` of a type of yours that wraps one)"
    )
}

/// Why a function call may give a shape the check does not know.
fn call_why(call: &syn::ExprCall, args: &[Value]) -> String {
    let unknown_operand = call.args.iter().zip(args).find(|(_, value)| match value {
        Value::Tensor(_) => vague(value),
        Value::Tensors(ts) => ts.iter().any(|t| vague(&Value::Tensor(t.clone()))),
        Value::TensorsEach(t, _) => vague(&Value::Tensor(t.clone())),
        _ => false,
    });
    match unknown_operand {
        Some((arg, value)) => format!(
            "`{}(..)` is given `{}`, which is `{}`",
            quoted(&call.func),
            quoted(arg),
            value.hint()
        ),
        None => {
            let func = quoted(&call.func);
            match func.starts_with("Tensor::") || func.starts_with("candle") {
                true => format!("`{func}(..)` cannot tell the shape from these arguments"),
                false => format!(
                    "`{func}(..)` gives no shape the check knows for these arguments (no \
                     contract, and a body out of sight or of no one shape)"
                ),
            }
        }
    }
}

/// Whether a block names `name` anywhere: an identifier, in a macro too.
fn block_names(block: &syn::Block, name: &str) -> bool {
    let mut names = BTreeSet::new();
    idents(&block.to_token_stream(), &mut names);
    names.contains(name)
}

/// Whether a block may call a method `name`: by method syntax on any receiver, by a path
/// ending in it (`Self::name(self, ..)`, `Attention::name(&a)`), or in a macro naming it
/// (names compared as text: the block may be the macro's cached file's).
fn calls_method(block: &syn::Block, name: &str) -> bool {
    struct Calls<'n>(&'n str, bool);
    impl<'a> Visit<'a> for Calls<'_> {
        fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
            self.1 |= name_of(&m.method) == self.0;
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
            self.1 |= p.path.segments.len() > 1
                && p.path
                    .segments
                    .last()
                    .is_some_and(|s| name_of(&s.ident) == self.0);
            syn::visit::visit_expr_path(self, p);
        }
        fn visit_macro(&mut self, mac: &'a syn::Macro) {
            let mut names = BTreeSet::new();
            idents(&mac.tokens, &mut names);
            self.1 |= names.contains(self.0);
        }
    }
    let mut calls = Calls(name, false);
    calls.visit_block(block);
    calls.1
}

/// Whether a branch of an `if` calls anything (an op, a helper): one that only picks a number
/// (`if i < j { 0.0 } else { f32::NEG_INFINITY }`) has nothing to check.
fn branches_call(i: &syn::ExprIf) -> bool {
    struct Calls(bool);
    impl<'a> Visit<'a> for Calls {
        fn visit_expr_call(&mut self, _: &'a syn::ExprCall) {
            self.0 = true;
        }
        fn visit_expr_method_call(&mut self, _: &'a syn::ExprMethodCall) {
            self.0 = true;
        }
        fn visit_macro(&mut self, _: &'a syn::Macro) {
            self.0 = true;
        }
    }
    let mut calls = Calls(false);
    calls.visit_block(&i.then_branch);
    if let Some((_, e)) = &i.else_branch {
        calls.visit_expr(e);
    }
    calls.0
}

/// The largest value of the unsigned integer parameter `name` of `sig` (a plain name, not
/// `mut`): `u8` 255 up to `u64` and `usize`; `None` for anything else.
fn unsigned_parameter(
    sig: &syn::Signature,
    name: &str,
    primitive: &dyn Fn(&str) -> bool,
) -> Option<u64> {
    sig.inputs.iter().find_map(|input| match input {
        syn::FnArg::Typed(typed) => {
            let plain = matches!(&*typed.pat, syn::Pat::Ident(p)
                if name_of(&p.ident) == name && p.mutability.is_none() && p.by_ref.is_none()
                    && p.subpat.is_none());
            let syn::Type::Path(t) = &*typed.ty else {
                return None;
            };
            let ident = t.path.get_ident().map(name_of)?;
            let max = match ident.as_str() {
                "u8" => u64::from(u8::MAX),
                "u16" => u64::from(u16::MAX),
                "u32" => u64::from(u32::MAX),
                "u64" | "usize" => u64::MAX,
                _ => return None,
            };
            (plain && t.qself.is_none() && primitive(&ident)).then_some(max)
        }
        syn::FnArg::Receiver(_) => None,
    })
}

/// Whether no value has type `ty`: `!`, std's `Infallible`, or a tuple, array or reference
/// holding one (a user's own type named `Infallible` too: the walk then says nothing).
fn uninhabited(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Never(_) => true,
        syn::Type::Paren(p) => uninhabited(&p.elem),
        syn::Type::Group(g) => uninhabited(&g.elem),
        syn::Type::Reference(r) => uninhabited(&r.elem),
        syn::Type::Array(a) => {
            // `[!; 0]` has one value.
            let empty = matches!(&a.len, syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. })
                if n.base10_parse::<u64>().is_ok_and(|n| n == 0));
            !empty && matches!(&a.len, syn::Expr::Lit(_)) && uninhabited(&a.elem)
        }
        syn::Type::Tuple(t) => t.elems.iter().any(uninhabited),
        syn::Type::Path(p) => {
            p.qself.is_none()
                && p.path
                    .segments
                    .last()
                    .is_some_and(|last| last.ident == "Infallible" && last.arguments.is_none())
        }
        _ => false,
    }
}

/// Whether `name` is free in `block` up to `path`, its mention there: `path` its first
/// mention, the name never rebound, and no macro naming it (`format!("{x}")` reads it where
/// the walk does not look).
fn free_up_to(block: &syn::Block, name: &str, path: &syn::ExprPath) -> bool {
    struct Macros<'n> {
        name: &'n str,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Macros<'_> {
        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            self.found |= mac.tokens.to_string().contains(self.name);
        }
    }
    let mut macros = Macros { name, found: false };
    macros.visit_block(block);
    !macros.found
        && !binds_anywhere(block, name)
        && first_mention(block, name).is_some_and(|first| std::ptr::eq(first, path))
}

/// Whether `contract` names `name` anywhere but in its `return` clause: an argument's clause
/// (`past: f32[{seqlen_offset}]`), a relation, a fact, a field or a value bound.
fn names_outside_return(contract: &Contract, name: &str) -> bool {
    let names_it = |text: &str| {
        text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|word| word == name)
    };
    // (By the dim as written: `{seqlen_offset}` is a value of the body, no symbol.)
    let dim_names = |dim: &Dim| names_it(&dim.to_string());
    let in_clauses = contract.clauses.iter().any(|clause| {
        let subject: String = clause.subject.split_whitespace().collect();
        subject != "return"
            && (names_it(&subject)
                || clause
                    .spec
                    .shape
                    .front()
                    .iter()
                    .chain(clause.spec.shape.back())
                    .any(dim_names))
    });
    let in_relations = contract
        .relations
        .iter()
        .any(|r| dim_names(&r.lhs) || dim_names(&r.rhs));
    let in_facts = contract
        .facts
        .iter()
        .any(|(n, value)| names_it(n) || dim_names(value));
    let elsewhere = contract.named_elsewhere.iter().any(|n| names_it(n))
        || contract
            .fields
            .iter()
            .any(|(path, dim)| names_it(path) || names_it(dim));
    in_clauses || in_relations || in_facts || elsewhere
}

#[cfg(test)]
mod tests {
    use super::{qualify_dtype, quoted};

    /// A fix's own `DType::U32` takes the path that names it; the user's
    /// `candle_core::DType::F32` stays as written (a new user's help read
    /// `candle_core::candle_core::DType::F32`).
    #[test]
    fn a_fixs_dtype_is_qualified_once() {
        assert_eq!(
            qualify_dtype(
                "`&mask.to_dtype(candle_core::DType::F32)?.to_dtype(DType::U32)?`",
                "candle_core::DType"
            ),
            "`&mask.to_dtype(candle_core::DType::F32)?.to_dtype(candle_core::DType::U32)?`"
        );
        assert_eq!(
            qualify_dtype("x.to_dtype(MyDType::F32)", "candle::DType"),
            "x.to_dtype(MyDType::F32)"
        );
    }

    /// A call's parentheses close up to its name; a pattern's or a value's keep their space
    /// (a new user read `if let(Some(sr), ..) =(&self.sr` in a `shapes` line).
    #[test]
    fn quoted_code_reads_as_written() {
        let cond: syn::Expr =
            syn::parse_str("if let (Some(sr), Some(ln)) = (&self.sr, &self.ln) { 1 } else { 2 }")
                .unwrap();
        let syn::Expr::If(i) = cond else { panic!() };
        assert_eq!(
            quoted(&i.cond),
            "let (Some(sr), Some(ln)) = (&self.sr, &self.ln)"
        );
        let call: syn::Expr = syn::parse_str("x.narrow(1, (t - 1), 1)?.f(a, b)").unwrap();
        assert_eq!(quoted(&call), "x.narrow(1, (t - 1), 1)?.f(a, b)");
        let scaled: syn::Expr = syn::parse_str("(q.matmul(&k)? * (d as f64))").unwrap();
        assert_eq!(quoted(&scaled), "(q.matmul(&k)? * (d as f64))");
    }
}
