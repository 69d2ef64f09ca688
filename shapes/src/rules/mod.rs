//! Transfer rules: what a call does to the dtypes and shapes of its tensors, and the calls that
//! are certain to fail.
//!
//! [`method`] covers candle's `Tensor` methods, [`function`] the associated functions
//! (`Tensor::cat`, `Tensor::stack`), candle-nn's functions and `candle_contracts::nn`'s guarded
//! ops (the last from their own contracts, see [`contract_ops`]). A call the rules do not know
//! yields [`TensorType::unknown`]: silence, never an error.
//!
//! | calls | result | certain failures (as candle 0.11 checks them) |
//! |---|---|---|
//! | `clone`, `contiguous`, `detach`, `copy`, `to_device`, `relu`, `exp`, `log`, `sqrt`, `sqr`, `neg`, `abs`, `tanh`, `sin`, `cos`, `gelu`, `gelu_erf`, `erf`, `silu`, `recip`, `ceil`, `floor`, `round`, `sign`, `affine`, `powf`, `elu`, `zeros_like`, `ones_like`, `rand_like`, `randn_like`, `clamp` (scalar bounds) | the receiver's type | none |
//! | `add`, `sub`, `mul`, `div`, `maximum`, `minimum`; `eq`, `ne`, `lt`, `le`, `gt`, `ge` (u8) | the shape both have | shapes that differ, disjoint dtypes |
//! | `broadcast_add` and the other `broadcast_*` | the broadcast shape | two literals, neither 1, at one place from the end; disjoint dtypes |
//! | `matmul`, `broadcast_matmul` | `[.., M, N]` | rank below 2, `K` against `K'`, ranks or batch element counts (`matmul`), batch dims (`broadcast_matmul`), dtypes |
//! | `t`, `transpose`, `permute` | dims moved | rank below 2, a dim past the rank, not a permutation |
//! | `reshape`, `flatten_all`, `flatten`, `flatten_from`, `flatten_to` | the new dims (a `()` hole divided out) | another element count, a hole that does not divide |
//! | `squeeze`, `unsqueeze`, `narrow`, `get` | dims removed, inserted, narrowed | a dim past the rank, a slice past the end |
//! | `sum`, `mean` (one dim or a tuple), `max`, `min`, `argmax`, `argmin` (u32), their `_keepdim` forms, `sum_all`, `mean_all`, `max_all`, `min_all` | dims removed or set to 1 | a dim past the rank, a dim named twice |
//! | `to_dtype`, `broadcast_as`, `expand`, `broadcast_left`, `where_cond` | as candle | a dim that is not 1 and not the target's, too many dims, branch shapes or dtypes |
//! | `Tensor::cat`, `Tensor::stack` | dims added up, a new dim | ranks, dims off `dim`, dtypes |
//! | `Tensor::{zeros, ones, full, from_vec, from_slice, rand, randn, new, arange, eye, tril2, triu2}` | the shape and dtype asked for | none |
//! | `i(..)` (integers and ranges), `pad_with_zeros`, `index_select`, `gather`, `embedding`, `repeat`, `avg_pool2d`, `max_pool2d` (and `_with_stride`), `conv1d`, `conv2d` | dims removed, narrowed, padded, selected, repeated, pooled | none |
//! | `to_scalar`, `to_vec0`..`to_vec3`, `dims0`..`dims5` ([`check_read_rank`]) | Rust values | a rank certainly not the one they read |
//! | candle-nn's layers' `forward` ([`layer::forward`]) | `Linear` maps the last dim, norms keep it, convolutions keep batch and channels | a last dim that is not the weight's |
//! | `candle_nn::ops::{softmax, log_softmax, softmax_last_dim, sigmoid}` | the input's type | a dim past the rank |
//! | `candle_nn::loss::{cross_entropy, nll, mse, binary_cross_entropy_with_logit}`, `candle_contracts::nn::*` | `[]` (the `_with` forms: unknown shape), embeddings, gathered rows | their contracts ([`contract_ops`]) |
//!
//! `chunk` gives several tensors ([`parts`]): listed where candle's arithmetic is certain (a
//! literal size, or `3 * E` in 3 parts of `E`), otherwise each of the receiver's dims but
//! the one cut; a dim past the rank is a certain failure.
//!
//! Left unknown on purpose: indexing with a tensor, shapes computed from values
//! (`reshape((n, ()))` with `n` not a literal or a named size), `squeeze` of a dim that may or
//! may not be 1, a layer's output size where no clause states its weight, a range between two
//! sizes that are not numbers (candle gives 0 where the start is past the end), the dtype of
//! `one_hot` (its `on_value`'s Rust type), and every call not in this table.
//!
//! ```
//! use candle_contracts_shapes::{Arg, DimIndex, function, method, parse_tensor_type};
//!
//! let logits = parse_tensor_type("f32[B, 10]")?;
//! let probs = function("candle_nn::ops::softmax", &[Arg::Tensor(logits.clone()), Arg::Dim(DimIndex::FromEnd(1))])?;
//! assert_eq!(probs.to_string(), "f32[B, 10]");
//! let classes = method("argmax", &probs, &[Arg::Dim(DimIndex::FromEnd(1))])?;
//! assert_eq!(classes.to_string(), "u32[B]");
//! // A column of class ids is certainly not what `nn::cross_entropy` takes.
//! let column = method("unsqueeze", &classes, &[Arg::int(1)])?;
//! let mismatch = function("nn::cross_entropy", &[Arg::Tensor(logits), Arg::Tensor(column)]).unwrap_err();
//! assert_eq!(mismatch.note(), "rank 2 given, rank 1 expected");
//! assert_eq!(mismatch.help("target").as_deref(), Some("squeeze the last dim: `&target.squeeze(1)?`"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The caller decides what a call is: [`method`] is for receivers known to be tensors (a
//! method of another type with the same name is not candle's), and [`function`] takes the
//! path as resolved through the caller's `use`s.

pub mod layer;
mod table;
mod tensor;

use std::fmt;

pub use table::{ContractOp, contract_ops};

use crate::contract::Bindings;
use crate::dim::Dim;
use crate::dtype::{DType, DTypeSet};
use crate::facts::Facts;
use crate::reason::Reason;
use crate::shape::{Shape, TensorType};
use crate::verdict::DimIndex;

/// What the macro sees as one argument of a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    /// A tensor (`&x`, `x`, `&w.t()?`).
    Tensor(TensorType),
    /// A slice or vector of tensors (`&[&a, &b]`), for `Tensor::cat` and `Tensor::stack`.
    Tensors(Vec<TensorType>),
    /// A slice or vector of tensors of one type, and how many (`&vec![&xs; n_rep]`: `n_rep`;
    /// `Dim::Unknown` where not known).
    TensorsEach(TensorType, Dim),
    /// An integer: a literal (`1`, `128usize`) or a size the macro can name (`n` bound from
    /// `x.dim(0)?` as a symbol); also a dim index written as an integer.
    Int(Dim),
    /// A dim index from the end: `D::Minus1` is `DimIndex::FromEnd(1)`.
    Dim(DimIndex),
    /// A tuple (`(b, 1, d)`, `(0, 2, 1)`); `()` inside a reshape's tuple is candle's hole.
    Tuple(Vec<Arg>),
    /// A whole shape with a run of unknown length (`mask.shape()` of a `u8[*S]`), where a
    /// tuple of sizes cannot say it.
    Shape(Shape),
    /// A dtype (`DType::F32`).
    DType(DType),
    /// A float scalar (`affine`'s `mul`, `maximum(0.0)`).
    Float,
    /// A range of indices (`2..`, `..t`, `a..=b`, `..`), for `i(..)`: its start and end where
    /// written (the end one past the last index).
    Range(Option<Dim>, Option<Dim>),
    /// Anything else.
    Unknown,
}

impl Arg {
    /// A tensor argument from a type written as text (`"f32[N, C]"`), for tests and tables.
    pub fn tensor(text: &str) -> Arg {
        crate::parse::parse_tensor_type(text).map_or(Arg::Unknown, Arg::Tensor)
    }

    /// An integer literal.
    pub fn int(n: u64) -> Arg {
        Arg::Int(Dim::lit(n))
    }

    /// The dim index this argument stands for, if it is a literal or a `D::Minus*`.
    pub fn dim_index(&self) -> Option<DimIndex> {
        match self {
            Arg::Int(dim) => dim
                .as_literal()
                .and_then(|n| usize::try_from(n).ok())
                .map(DimIndex::Index),
            Arg::Dim(index) => Some(*index),
            _ => None,
        }
    }

    /// The size this argument stands for; unknown if it is not an integer.
    pub fn size(&self) -> Dim {
        match self {
            Arg::Int(dim) => dim.clone(),
            _ => Dim::Unknown,
        }
    }

    /// The tensor type of a tensor argument; unknown otherwise.
    pub fn tensor_type(&self) -> TensorType {
        match self {
            Arg::Tensor(tensor) => tensor.clone(),
            _ => TensorType::unknown(),
        }
    }
}

/// Which argument of a call is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Argument {
    /// The receiver of a method (`self`).
    Receiver,
    /// The argument at this position (0-based, the receiver not counted).
    Position(usize),
    /// An element (0-based) of the list given at this position (`tensors[1]` of
    /// `Tensor::cat(&[a, b], 1)`): named by the element's text where the list is written out.
    Element(usize, usize),
    /// The function's return value (a `return` clause against the tail expression).
    Return,
}

/// A fix worth suggesting, written with the text of the argument by [`Mismatch::help`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Help {
    /// Remove a dim of size 1: `&target.squeeze(1)?`.
    Squeeze {
        /// The dim to remove.
        dim: usize,
        /// Whether it is the last dim.
        last: bool,
    },
    /// Add a dim of size 1: `target.unsqueeze(1)?`.
    Unsqueeze {
        /// Where.
        dim: usize,
    },
    /// Convert the dtype: `&target.to_dtype(DType::U32)?`.
    ToDType(DType),
    /// Convert floats to an integer dtype, right only where they hold whole numbers (ids,
    /// class indices): `&target.to_dtype(DType::U32)?` (the help says so).
    FloatsToDType(DType),
    /// Two tensors an op wants of one dtype: convert the argument to `dtype`, or the tensor
    /// named `other` to `other_dtype` (the argument's) where that is the side that went wrong
    /// (`attn_weights.to_dtype(F16)?.matmul(&v)`).
    SameDType {
        /// The dtype of `other`, for the argument.
        dtype: DType,
        /// The tensor whose dtype the op takes: `self`, `on_true`.
        other: String,
        /// The argument's dtype, for `other`.
        other_dtype: DType,
    },
    /// Swap the last two dims: `&w.t()?`.
    Transpose,
    /// `i(..)` with more items than the tensor has dims: one item per dim, at most.
    AtMostItems {
        /// The tensor's rank.
        rank: usize,
    },
    /// An index past its dim: the positions there (`0` to `T - 1`).
    LastIndex {
        /// The dim indexed.
        dim: usize,
        /// Its last position, as a size is written (`T - 1`).
        last: String,
    },
}

/// A call that is certain to fail at run time, with what a compile error needs to say why.
///
/// `message`, `note` and `help` word it; the text of the argument (`target`, `&w.t()?`) is
/// the caller's, which knows the source:
///
/// ```text
/// error: `nn::cross_entropy` takes `target: u8 | u32 | i64 [N]`, but `target` is `u32[N, 1]` here
///    = note: rank 2 given, rank 1 expected
///    = help: squeeze the last dim: `&target.squeeze(1)?`
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The op as a message names it: `nn::cross_entropy`, `Tensor::matmul`,
    /// `candle_nn::loss::nll`, or the contracted function for a return clause.
    pub op: String,
    /// Which argument is wrong.
    pub argument: Argument,
    /// What the op takes there, as a clause: `target: u8 | u32 | i64 [N]`, `rhs: f32[128, _]`.
    pub expected: String,
    /// What was given, as a type or value: `u32[N, 1]`, `3`.
    pub found: String,
    /// Why the call fails.
    pub reason: Reason,
    /// A fix, when one is likely.
    pub help: Option<Help>,
}

impl Mismatch {
    /// The error's message, naming the argument by the caller's text `given`.
    pub fn message(&self, given: &str) -> String {
        let verb = match self.argument {
            Argument::Return => "returns",
            _ => "takes",
        };
        let found = if given == self.found {
            "given".to_string()
        } else {
            format!("`{}`", self.found)
        };
        format!(
            "`{}` {verb} {}, but `{given}` is {found} here",
            self.op,
            quoted(&self.expected)
        )
    }

    /// The note: why, in the words of [`Reason`]'s display.
    pub fn note(&self) -> String {
        self.reason.to_string()
    }

    /// The help line, with the argument's text `given` in the suggested code; `given` is a
    /// tensor (`target`, `&x`, `x.t()?`).
    pub fn help(&self, given: &str) -> Option<String> {
        self.help_with(given, false)
    }

    /// The help line for `given` that is itself a `Result<Tensor>` kept as one, such as the
    /// tail `x.sum_keepdim(1)` of a function returning `Result`: the fix goes after a `?` and
    /// ends without one (`x.sum_keepdim(1)?.squeeze(1)`), so the tail stays a `Result`.
    pub fn help_for_result(&self, given: &str) -> Option<String> {
        self.help_with(given, true)
    }

    fn help_with(&self, given: &str, result: bool) -> Option<String> {
        // A tensor argument of a candle op is a `&Tensor`: the fixed value is borrowed again.
        let borrow = match self.argument {
            Argument::Position(_) | Argument::Element(..) if !given.starts_with('&') => "&",
            _ => "",
        };
        let fix = |call: String| match result {
            true => format!("`{borrow}{given}?.{call}`"),
            false => format!("`{borrow}{given}.{call}?`"),
        };
        // A value converted already (`xs.to_dtype(DType::F32)?`): that conversion's dtype is
        // the one to change, not one more conversion after it.
        let convert = |dtype: &DType| {
            let call = format!("to_dtype(DType::{dtype:?})");
            let value = given.strip_prefix('&').unwrap_or(given);
            let value = value.strip_suffix('?').unwrap_or(value);
            match value.rsplit_once(".to_dtype(") {
                Some((base, args))
                    if !base.is_empty()
                        && args.ends_with(')')
                        && !args[..args.len() - 1].contains(['(', ')']) =>
                {
                    match result {
                        true => format!("`{borrow}{base}.{call}`"),
                        false => format!("`{borrow}{base}.{call}?`"),
                    }
                }
                _ => fix(call),
            }
        };
        Some(match self.help.as_ref()? {
            Help::Squeeze { dim, last: true } => {
                format!("squeeze the last dim: {}", fix(format!("squeeze({dim})")))
            }
            Help::Squeeze { dim, last: false } => {
                format!("squeeze dim {dim}: {}", fix(format!("squeeze({dim})")))
            }
            Help::Unsqueeze { dim } => {
                format!("add a dim of size 1: {}", fix(format!("unsqueeze({dim})")))
            }
            Help::ToDType(dtype) => format!("convert it: {}", convert(dtype)),
            Help::FloatsToDType(dtype) => format!(
                "if it holds whole numbers (ids, class indices), convert it: {}",
                convert(dtype)
            ),
            // Floats converted to an integer dtype lose their fractions: the other side's
            // integers are converted instead (no code given for this one).
            Help::SameDType {
                dtype,
                other,
                other_dtype,
            } if dtype.is_int() && other_dtype.is_float() => {
                let other = match other.as_str() {
                    "self" => "the receiver".to_string(),
                    name => format!("`{name}`"),
                };
                format!(
                    "convert {other} to `DType::{other_dtype:?}` instead: this one's floats \
                     would lose their fractions as `DType::{dtype:?}`"
                )
            }
            Help::SameDType {
                dtype,
                other,
                other_dtype,
            } => format!(
                "convert it: {}, or `{other}` to `DType::{other_dtype:?}`",
                convert(dtype)
            ),
            Help::Transpose => format!("transpose it: {}", fix("t()".to_string())),
            Help::AtMostItems { rank } => format!(
                "`i(..)` takes one index or range per dim: at most {rank} for a tensor of rank \
                 {rank} (`..` keeps a dim whole)"
            ),
            Help::LastIndex { dim, last } => {
                format!("positions on dim {dim} run from 0 to `{last}`, the last one")
            }
        })
    }
}

/// The help that converts a tensor of the dtypes `given` to `dtype`: said to hold only for
/// whole numbers where floats would become integers.
pub(crate) fn to_dtype_help(given: DTypeSet, dtype: DType) -> Help {
    let floats = !given.is_empty() && given.iter().all(DType::is_float);
    match floats && dtype.is_int() {
        true => Help::FloatsToDType(dtype),
        false => Help::ToDType(dtype),
    }
}

/// The help for an argument whose dtype is not `want`'s (the dtype of `other`): convert the
/// argument, or `other` to the argument's dtype where each side has one dtype.
fn same_dtype_help(want: DTypeSet, other: &str, given: DTypeSet) -> Option<Help> {
    let dtype = want.single()?;
    Some(match given.single() {
        Some(other_dtype) => Help::SameDType {
            dtype,
            other: other.to_string(),
            other_dtype,
        },
        None => to_dtype_help(given, dtype),
    })
}

/// An expected clause in backticks, its words outside: `` `rhs: f32[2, 3]` (the shape of
/// `self`) ``, `` `dim`: a dim of `f32[N, 3]` `` (never backticks inside backticks).
fn quoted(expected: &str) -> String {
    // The prose after the code starts at a ` (` outside its brackets (not a dim's
    // `(M - 2) / 2`).
    let mut depth = 0i32;
    let prose_at = expected.char_indices().find_map(|(i, c)| {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            _ => {}
        }
        (depth == 1 && c == '(' && expected[..i].ends_with(' ')).then(|| i - 1)
    });
    if let Some(at) = prose_at
        && !expected[..at].contains('`')
    {
        let (code, prose) = (&expected[..at], &expected[at + 2..]);
        return format!("`{code}` ({prose}");
    }
    if !expected.contains('`') {
        return format!("`{expected}`");
    }
    match expected.split_once(": ") {
        Some((name, prose)) if !name.contains('`') => format!("`{name}`: {prose}"),
        _ => expected.to_string(),
    }
}

impl fmt::Display for Mismatch {
    /// The message with the argument named by its position, and the note.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let given = match self.argument {
            Argument::Receiver => "self".to_string(),
            Argument::Position(i) => format!("argument {i}"),
            Argument::Element(i, at) => format!("argument {i}[{at}]"),
            Argument::Return => "the result".to_string(),
        };
        write!(f, "{}; {}", self.message(&given), self.note())
    }
}

impl std::error::Error for Mismatch {}

/// The result of a call: its tensor type (parts of it possibly unknown), or a certain failure
/// (boxed: it is rare, and a compile error each).
pub type Outcome = Result<TensorType, Box<Mismatch>>;

/// The type of `receiver.name(args...)`: candle's `Tensor` methods (see the crate docs for the
/// list); any other name gives an unknown tensor.
pub fn method(name: &str, receiver: &TensorType, args: &[Arg]) -> Outcome {
    tensor::method(name, receiver, args, &Facts::none())
}

/// [`method`] where `facts` hold (a contract's `D % 2 == 0`, `T <= P`): they decide what the
/// normal form alone does not (a slice certainly past the end, the length of `i(s..e)` where
/// `s <= e`), and the result's dims are in their normal form under them.
pub fn method_under(facts: &Facts, name: &str, receiver: &TensorType, args: &[Arg]) -> Outcome {
    facts
        .under(|| tensor::method(name, receiver, args, facts))
        .map(|t| facts.simplify_type(&t))
}

/// [`function`] where `facts` hold: the result's dims are in their normal form under them
/// (`Tensor::cat` of two halves of an even `D` gives `D`).
pub fn function_under(facts: &Facts, path: &str, args: &[Arg]) -> Outcome {
    facts
        .under(|| function(path, args))
        .map(|t| facts.simplify_type(&t))
}

/// The tensors of a call that gives several (`chunk`'s `Vec<Tensor>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parts {
    /// Exactly these tensors, in order (where candle gives any at all: a size 0 gives none).
    Each(Vec<TensorType>),
    /// Any number of tensors, each of this type.
    All(TensorType),
}

impl Parts {
    /// The type of the part at `index`: its own where listed, unknown past the list (an index
    /// that panics in Rust).
    pub fn get(&self, index: usize) -> TensorType {
        match self {
            Parts::Each(parts) => parts
                .get(index)
                .cloned()
                .unwrap_or_else(TensorType::unknown),
            Parts::All(part) => part.clone(),
        }
    }

    /// A type every part has: the one of [`Parts::All`], or of a list of equal types.
    pub fn common(&self) -> Option<TensorType> {
        match self {
            Parts::All(part) => Some(part.clone()),
            Parts::Each(parts) => {
                let first = parts.first()?;
                parts.iter().all(|p| p == first).then(|| first.clone())
            }
        }
    }
}

impl fmt::Display for Parts {
    /// As an array type: `[f32[B, E]; 3]` for three of one type, `[f32[1], f32[1]]` for a
    /// list, `[f32[B, _]; _]` for any number.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Parts::All(part) => write!(f, "[{part}; _]"),
            Parts::Each(parts) => match (self.common(), parts.len()) {
                (Some(part), n) if n > 1 => write!(f, "[{part}; {n}]"),
                _ => {
                    let items: Vec<String> = parts.iter().map(ToString::to_string).collect();
                    write!(f, "[{}]", items.join(", "))
                }
            },
        }
    }
}

/// The tensors of `receiver.name(args...)` for a method that gives several
/// (`chunk(chunks, dim)`), or the certain failure; `None` for any other name.
///
/// ```
/// use candle_contracts_shapes::{Arg, DimIndex, parse_tensor_type, parts};
///
/// let qkv = parse_tensor_type("f32[B, T, 3 * E]")?;
/// let heads = parts("chunk", &qkv, &[Arg::int(3), Arg::Dim(DimIndex::FromEnd(1))]);
/// assert_eq!(heads.unwrap()?.to_string(), "[f32[B, T, E]; 3]");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parts(
    name: &str,
    receiver: &TensorType,
    args: &[Arg],
) -> Option<Result<Parts, Box<Mismatch>>> {
    match name {
        "chunk" => Some(tensor::chunk(receiver, args)),
        _ => None,
    }
}

/// [`parts`] where `facts` hold: a size they make a multiple (`P2` where `P2 % 2 == 0`) splits
/// into known parts, each in its normal form under them.
pub fn parts_under(
    facts: &Facts,
    name: &str,
    receiver: &TensorType,
    args: &[Arg],
) -> Option<Result<Parts, Box<Mismatch>>> {
    let outcome = facts.under(|| parts(name, receiver, args))?;
    Some(outcome.map(|parts| match parts {
        Parts::Each(each) => Parts::Each(each.iter().map(|t| facts.simplify_type(t)).collect()),
        Parts::All(part) => Parts::All(facts.simplify_type(&part)),
    }))
}

/// A certain failure of `receiver.name()` where `name` reads a tensor of one rank into Rust
/// values (`to_scalar`, `to_vec2`, `dims3`) and the receiver's rank is certainly another.
pub fn check_read_rank(name: &str, receiver: &TensorType) -> Result<(), Box<Mismatch>> {
    tensor::check_read_rank(name, receiver)
}

/// Whether [`method`] has a rule for `name`: a call of it on a candle `Tensor` yields a
/// `Tensor` (or a `Result` of one). Any other method may return anything.
pub fn has_method_rule(name: &str) -> bool {
    tensor::has_rule(name)
}

/// The type of `path(args...)`, `path` as resolved by the caller (`Tensor::cat`,
/// `candle_nn::ops::softmax`, `candle_contracts::nn::cross_entropy`). A path matches a rule
/// when it is the rule's full path or a suffix of it of at least two segments
/// (`loss::cross_entropy`, `nn::embedding`, `Tensor::cat`); anything else gives an unknown
/// tensor.
pub fn function(path: &str, args: &[Arg]) -> Outcome {
    let segments: Vec<&str> = path.split("::").map(str::trim).collect();
    let matches = |full: &str| {
        let rule: Vec<&str> = full.split("::").collect();
        segments.len() >= 2.min(rule.len()) && rule.ends_with(&segments)
    };
    if let Some(op) = contract_ops().iter().find(|op| matches(op.path)) {
        return op.apply(args);
    }
    match tensor::FUNCTIONS.iter().find(|(full, _)| matches(full)) {
        Some((_, rule)) => rule(args),
        None => Ok(TensorType::unknown()),
    }
}

/// The fix for a tensor of type `found` where `expected` is taken, if one is likely: a dim of
/// size 1 too many or too few, or a dtype to convert. `reason` is why the two differ; any
/// other reason has no fix. Used for the engine's own ops and by callers that check a call
/// against a contract of their own (the command-line checker).
pub fn suggest(found: &TensorType, expected: &TensorType, reason: &Reason) -> Option<Help> {
    match reason {
        Reason::DTypes {
            expected: wanted, ..
        } => {
            let dtype = wanted.single().or_else(|| {
                [DType::F32, DType::U32, DType::I64]
                    .into_iter()
                    .find(|d| wanted.contains(*d))
            })?;
            Some(to_dtype_help(found.dtypes, dtype))
        }
        Reason::Rank { .. } => {
            let (dims, pattern) = (found.shape.dims()?, expected.shape.dims()?);
            let wanted = TensorType::new(DTypeSet::ANY, expected.shape.clone());
            let fits = |dims: Vec<Dim>| {
                let candidate = TensorType::new(DTypeSet::ANY, Shape::new(dims));
                Bindings::new().match_all(&[(&wanted, &candidate)]).is_ok()
            };
            if dims.len() == pattern.len() + 1 {
                let at = (0..dims.len()).rev().find(|&i| {
                    let mut without = dims.to_vec();
                    without.remove(i);
                    dims[i].as_literal() == Some(1) && fits(without)
                })?;
                Some(Help::Squeeze {
                    dim: at,
                    last: at + 1 == dims.len(),
                })
            } else if dims.len() + 1 == pattern.len() {
                let at = (0..=dims.len()).rev().find(|&i| {
                    let mut with = dims.to_vec();
                    with.insert(i, Dim::lit(1));
                    pattern[i].as_literal() == Some(1) && fits(with)
                })?;
                Some(Help::Unsqueeze { dim: at })
            } else {
                None
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{Arg, has_method_rule, method};
    use crate::parse::parse_tensor_type;

    /// A dim written with parentheses stays inside the code's backticks; the prose after the
    /// code does not.
    #[test]
    fn the_expected_type_is_quoted_up_to_its_prose() {
        assert_eq!(
            super::quoted("return: f32[N, (M - 2) / 2 + 2]"),
            "`return: f32[N, (M - 2) / 2 + 2]`"
        );
        assert_eq!(
            super::quoted("rhs: f32[..] (the dtype of `self`)"),
            "`rhs: f32[..]` (the dtype of `self`)"
        );
    }

    /// ConvNeXt's `sum_keepdim(self.spatial_dim)`: which dims is not known, the rank is.
    #[test]
    fn a_keepdim_reduction_over_unknown_dims_keeps_the_rank() {
        let xs = parse_tensor_type("f32[B, C, H, W]").unwrap();
        for name in ["sum_keepdim", "mean_keepdim", "max_keepdim"] {
            let y = method(name, &xs, &[Arg::Unknown]).unwrap();
            assert_eq!(y.to_string(), "f32[_, _, _, _]", "{name}");
        }
        let y = method("sum", &xs, &[Arg::Unknown]).unwrap();
        assert_eq!(y.to_string(), "f32[..]");
    }

    /// A permutation of a tensor whose rank is not known has the permutation's rank where it
    /// passes (candle checks the length); one with a dim from the end says nothing.
    #[test]
    fn a_permutation_gives_its_rank_to_a_tensor_of_unknown_rank() {
        use crate::DimIndex;
        let unknown = parse_tensor_type("f32[..]").unwrap();
        let order = |dims: &[DimIndex]| Arg::Tuple(dims.iter().map(|d| Arg::Dim(*d)).collect());
        let four = order(&[0, 2, 3, 1].map(DimIndex::Index));
        let y = method("permute", &unknown, std::slice::from_ref(&four)).unwrap();
        assert_eq!(y.to_string(), "f32[_, _, _, _]");
        let from_end = order(&[DimIndex::Index(0), DimIndex::FromEnd(1)]);
        let y = method("permute", &unknown, &[from_end]).unwrap();
        assert_eq!(y.to_string(), "f32[..]");
        // At least rank 5: four dims certainly fail (not claimed here), nothing is known.
        let five = parse_tensor_type("f32[A, B, C, D, E, *S]").unwrap();
        let y = method("permute", &five, &[four]).unwrap();
        assert_eq!(y.to_string(), "f32[..]");
    }

    /// A GeGlu's `chunk(2, D::Minus1)` of a `P2` its contract makes even: two halves, not a
    /// part of unknown size; an odd or unstated `P2` splits unevenly.
    #[test]
    fn chunk_splits_a_size_the_facts_make_a_multiple() {
        use crate::DimIndex;
        use crate::facts::{Cmp, Facts, Relation};
        use crate::parse::parse_dim;
        let xs = parse_tensor_type("f32[B, T, P2]").unwrap();
        let args = [Arg::Int(crate::Dim::lit(2)), Arg::Dim(DimIndex::FromEnd(1))];
        let even = |rhs: &str| {
            Facts::new(&[Relation::new(
                parse_dim("P2 % 2").unwrap(),
                Cmp::Eq,
                parse_dim(rhs).unwrap(),
            )])
        };
        let split = |facts: &Facts| {
            super::parts_under(facts, "chunk", &xs, &args)
                .unwrap()
                .unwrap()
        };
        let halves = split(&even("0"));
        assert_eq!(halves.get(0).to_string(), "f32[B, T, P2 / 2]");
        assert_eq!(halves.get(1).to_string(), "f32[B, T, P2 / 2]");
        assert_eq!(halves.get(2).to_string(), "_[..]");
        for facts in [even("1"), Facts::none()] {
            assert_eq!(split(&facts).get(0).to_string(), "f32[B, T, _]");
        }
    }

    #[test]
    fn the_methods_with_rules_are_the_table_s() {
        for name in [
            "matmul",
            "t",
            "reshape",
            "sum_keepdim",
            "broadcast_add",
            "broadcast_eq",
            "relu",
            "i",
            "index_select",
        ] {
            assert!(has_method_rule(name), "{name}");
        }
        for name in [
            "arg_sort_last_dim",
            "dims",
            "to_vec1",
            "forward",
            "chunk",
            "broadcast_foo",
            "len",
        ] {
            assert!(!has_method_rule(name), "{name}");
        }
    }
}
