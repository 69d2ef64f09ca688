//! Every rule against candle itself: each case states a call on symbolic types, the rule's
//! answer is pinned, and then the call runs in candle on many random sizes for the symbols.
//! A rule that says "certain mismatch" must see candle fail for every size; a rule that gives
//! a type must agree with candle's dtype and dims wherever candle succeeds.

use std::collections::BTreeMap;

use candle_contracts::nn::LossOptions;
use candle_contracts_shapes::dim::{Dim, Factor};
use candle_contracts_shapes::dtype::DType;
use candle_contracts_shapes::facts::{Cmp, Facts, Relation};
use candle_contracts_shapes::parse::{parse_dim, parse_tensor_type};
use candle_contracts_shapes::rules::{self, Arg, Outcome};
use candle_contracts_shapes::shape::{Shape, TensorType};
use candle_contracts_shapes::verdict::DimIndex;
use candle_core::{D, DType as CandleDType, Device, Tensor};

/// An argument as the test writes it.
#[derive(Clone, Debug)]
enum Spec {
    /// A tensor of this type.
    T(&'static str),
    /// A slice of tensors.
    Ts(Vec<&'static str>),
    /// An integer, an expression over the symbols.
    Size(&'static str),
    /// `D::Minus(k)`.
    Minus(usize),
    Tuple(Vec<Spec>),
    /// `()` in a reshape.
    Hole,
    DType(DType),
    /// A Rust value the checker does not see (loss options).
    Opaque,
    /// A tensor of this type that the checker does not see (`Arg::Unknown`): a value of a
    /// type it cannot name, passed where candle takes a tensor.
    Hidden(&'static str),
    /// A float scalar (candle gets 0.5).
    Float,
    /// A range of indices, its bounds as expressions over the symbols.
    Range(Option<&'static str>, Option<&'static str>),
}

/// An argument as candle gets it.
#[derive(Clone, Debug)]
enum Value {
    T(Tensor),
    Ts(Vec<Tensor>),
    U(usize),
    M(usize),
    Tup(Vec<Value>),
    Hole,
    DType(CandleDType),
    Opaque,
    Range(Option<usize>, Option<usize>),
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Sizes for the symbols and named runs of one trial, drawn on first use.
struct Sizes {
    rng: Rng,
    dims: BTreeMap<String, usize>,
    runs: BTreeMap<String, Vec<usize>>,
}

impl Sizes {
    fn new(seed: u64) -> Sizes {
        Sizes {
            rng: Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
            dims: BTreeMap::new(),
            runs: BTreeMap::new(),
        }
    }

    fn size(&mut self) -> usize {
        1 + self.rng.below(4) as usize
    }

    fn run_dims(&mut self) -> Vec<usize> {
        let len = self.rng.below(3) as usize;
        (0..len).map(|_| self.size()).collect()
    }

    /// A dim's value, drawing its symbols; `None` if it is not a non-negative integer.
    fn eval(&mut self, dim: &Dim) -> Option<usize> {
        for name in dim.symbols() {
            if !self.dims.contains_key(name) {
                let size = self.size();
                self.dims.insert(name.to_string(), size);
            }
        }
        let dims = &self.dims;
        let value = dim.substitute(&mut |factor| match factor {
            Factor::Symbol(name) => dims.get(name).map(|&n| Dim::from(n)),
            _ => None,
        });
        value.as_literal().map(|n| n as usize)
    }

    /// A dim's value; `_` gets a fresh size.
    fn concrete_dim(&mut self, dim: &Dim) -> Option<usize> {
        if dim.is_unknown() {
            return Some(self.size());
        }
        self.eval(dim)
    }

    fn concrete(&mut self, shape: &Shape) -> Option<Vec<usize>> {
        let mut dims = Vec::new();
        for dim in shape.front() {
            dims.push(self.concrete_dim(dim)?);
        }
        if let Some(run) = shape.run() {
            match &run.name {
                Some(name) => {
                    if !self.runs.contains_key(name) {
                        let run_dims = self.run_dims();
                        self.runs.insert(name.clone(), run_dims);
                    }
                    dims.extend(self.runs[name].clone());
                }
                None => dims.extend(self.run_dims()),
            }
            for dim in shape.back() {
                dims.push(self.concrete_dim(dim)?);
            }
        }
        Some(dims)
    }

    /// The rule's shape with this trial's sizes put in: what candle must give.
    fn instantiate(&self, shape: &Shape) -> Shape {
        let dims = &self.dims;
        let put = |dim: &Dim| {
            dim.substitute(&mut |factor| match factor {
                Factor::Symbol(name) => dims.get(name).map(|&n| Dim::from(n)),
                _ => None,
            })
        };
        let front = shape.front().iter().map(put).collect();
        match shape.run() {
            None => Shape::new(front),
            Some(run) => {
                let middle = match run.name.as_ref().and_then(|name| self.runs.get(name)) {
                    Some(dims) => Shape::literal(dims),
                    None => Shape::unknown(),
                };
                Shape::join(front, middle, shape.back().iter().map(put).collect())
            }
        }
    }
}

fn tensor_type(text: &str) -> TensorType {
    parse_tensor_type(text).unwrap_or_else(|e| panic!("`{text}`: {e}"))
}

fn candle_dtype(dtype: DType) -> CandleDType {
    dtype.name().parse().unwrap()
}

fn arg(spec: &Spec) -> Arg {
    match spec {
        Spec::T(text) => Arg::Tensor(tensor_type(text)),
        Spec::Ts(texts) => Arg::Tensors(texts.iter().map(|t| tensor_type(t)).collect()),
        Spec::Size(text) => Arg::Int(parse_dim(text).unwrap()),
        Spec::Minus(k) => Arg::Dim(DimIndex::FromEnd(*k)),
        Spec::Tuple(items) => Arg::Tuple(items.iter().map(arg).collect()),
        Spec::Hole => Arg::Tuple(Vec::new()),
        Spec::DType(dtype) => Arg::DType(*dtype),
        Spec::Opaque | Spec::Hidden(_) => Arg::Unknown,
        Spec::Float => Arg::Float,
        Spec::Range(start, end) => Arg::Range(
            start.map(|s| parse_dim(s).unwrap()),
            end.map(|e| parse_dim(e).unwrap()),
        ),
    }
}

fn make_tensor(text: &str, sizes: &mut Sizes) -> Option<Tensor> {
    let tensor = tensor_type(text);
    let dtype = tensor
        .dtypes
        .single()
        .or_else(|| {
            [DType::F32, DType::U32]
                .into_iter()
                .find(|d| tensor.dtypes.contains(*d))
        })
        .unwrap_or(DType::F32);
    let dims = sizes.concrete(&tensor.shape)?;
    Some(Tensor::zeros(dims, candle_dtype(dtype), &Device::Cpu).unwrap())
}

fn value(spec: &Spec, sizes: &mut Sizes) -> Option<Value> {
    Some(match spec {
        Spec::T(text) | Spec::Hidden(text) => Value::T(make_tensor(text, sizes)?),
        Spec::Ts(texts) => Value::Ts(
            texts
                .iter()
                .map(|t| make_tensor(t, sizes))
                .collect::<Option<_>>()?,
        ),
        Spec::Size(text) => Value::U(sizes.eval(&parse_dim(text).unwrap())?),
        Spec::Minus(k) => Value::M(*k),
        Spec::Tuple(items) => Value::Tup(
            items
                .iter()
                .map(|i| value(i, sizes))
                .collect::<Option<_>>()?,
        ),
        Spec::Hole => Value::Hole,
        Spec::DType(dtype) => Value::DType(candle_dtype(*dtype)),
        Spec::Opaque | Spec::Float => Value::Opaque,
        Spec::Range(start, end) => {
            let mut bound = |b: &Option<&str>| match b {
                Some(text) => sizes.eval(&parse_dim(text).unwrap()).map(Some),
                None => Some(None),
            };
            Value::Range(bound(start)?, bound(end)?)
        }
    })
}

macro_rules! with_dim {
    ($value:expr, $d:ident => $body:expr) => {
        match $value {
            Value::U(i) => {
                let $d = *i;
                $body
            }
            Value::M(k) => {
                let $d = D::Minus(*k);
                $body
            }
            other => panic!("not a dim: {other:?}"),
        }
    };
}

fn usizes(value: &Value) -> Vec<usize> {
    match value {
        Value::Tup(items) => items
            .iter()
            .map(|i| match i {
                Value::U(n) => *n,
                other => panic!("not a usize: {other:?}"),
            })
            .collect(),
        Value::U(n) => vec![*n],
        other => panic!("not a shape: {other:?}"),
    }
}

fn tensor(value: &Value) -> &Tensor {
    match value {
        Value::T(t) => t,
        other => panic!("not a tensor: {other:?}"),
    }
}

fn reshape(t: &Tensor, shape: &Value) -> candle_core::Result<Tensor> {
    let Value::Tup(items) = shape else {
        return t.reshape(usizes(shape));
    };
    let n = |v: &Value| match v {
        Value::U(n) => *n,
        _ => 0,
    };
    match items.as_slice() {
        [Value::Hole, b] => t.reshape(((), n(b))),
        [a, Value::Hole] => t.reshape((n(a), ())),
        [a, b, Value::Hole] => t.reshape((n(a), n(b), ())),
        [Value::Hole, b, c] => t.reshape(((), n(b), n(c))),
        _ => t.reshape(usizes(shape)),
    }
}

/// The call in candle.
fn run(name: &str, receiver: Option<&Tensor>, args: &[Value]) -> candle_core::Result<Tensor> {
    let a = |i: usize| &args[i];
    let t = |i: usize| tensor(&args[i]);
    if let Some(r) = receiver {
        return match name {
            "relu" => r.relu(),
            "exp" => r.exp(),
            "neg" => r.neg(),
            "sqrt" => r.sqrt(),
            "contiguous" => r.contiguous(),
            "affine" => r.affine(2.0, 1.0),
            "add" => r.add(t(0)),
            "sub" => r.sub(t(0)),
            "mul" => r.mul(t(0)),
            "div" => r.div(t(0)),
            "maximum" => r.maximum(t(0)),
            "minimum" => r.minimum(t(0)),
            "ge" => r.ge(t(0)),
            "broadcast_add" => r.broadcast_add(t(0)),
            "broadcast_mul" => r.broadcast_mul(t(0)),
            "broadcast_sub" => r.broadcast_sub(t(0)),
            "broadcast_div" => r.broadcast_div(t(0)),
            "broadcast_lt" => r.broadcast_lt(t(0)),
            "matmul" => r.matmul(t(0)),
            "broadcast_matmul" => r.broadcast_matmul(t(0)),
            "t" => r.t(),
            "transpose" => with_dim!(a(0), d0 => with_dim!(a(1), d1 => r.transpose(d0, d1))),
            "permute" => r.permute(usizes(a(0))),
            "reshape" => reshape(r, a(0)),
            "flatten_all" => r.flatten_all(),
            "flatten_from" => with_dim!(a(0), d => r.flatten_from(d)),
            "flatten_to" => with_dim!(a(0), d => r.flatten_to(d)),
            "flatten" => with_dim!(a(0), d0 => with_dim!(a(1), d1 => r.flatten(d0, d1))),
            "squeeze" => with_dim!(a(0), d => r.squeeze(d)),
            "unsqueeze" => with_dim!(a(0), d => r.unsqueeze(d)),
            "narrow" => with_dim!(a(0), d => r.narrow(d, usizes(a(1))[0], usizes(a(2))[0])),
            "get" => r.get(usizes(a(0))[0]),
            "sum_keepdim" | "sum" | "mean" | "mean_keepdim" => {
                let several = matches!(a(0), Value::Tup(_));
                match (name, several) {
                    ("sum_keepdim", true) => r.sum_keepdim(usizes(a(0))),
                    ("sum", true) => r.sum(usizes(a(0))),
                    ("mean", true) => r.mean(usizes(a(0))),
                    ("mean_keepdim", true) => r.mean_keepdim(usizes(a(0))),
                    ("sum_keepdim", false) => with_dim!(a(0), d => r.sum_keepdim(d)),
                    ("sum", false) => with_dim!(a(0), d => r.sum(d)),
                    ("mean", false) => with_dim!(a(0), d => r.mean(d)),
                    _ => with_dim!(a(0), d => r.mean_keepdim(d)),
                }
            }
            "max" => with_dim!(a(0), d => r.max(d)),
            "max_keepdim" => with_dim!(a(0), d => r.max_keepdim(d)),
            "min" => with_dim!(a(0), d => r.min(d)),
            "argmax" => with_dim!(a(0), d => r.argmax(d)),
            "argmin_keepdim" => with_dim!(a(0), d => r.argmin_keepdim(d)),
            "sum_all" => r.sum_all(),
            "mean_all" => r.mean_all(),
            "max_all" => r.max_all(),
            "to_dtype" => match a(0) {
                Value::DType(dtype) => r.to_dtype(*dtype),
                other => panic!("not a dtype: {other:?}"),
            },
            "broadcast_as" => r.broadcast_as(usizes(a(0))),
            "broadcast_left" => r.broadcast_left(usizes(a(0))),
            "where_cond" => r.where_cond(t(0), t(1)),
            "zeros_like" => r.zeros_like(),
            "clamp" => r.clamp(0.5f32, 1f32),
            "pad_with_zeros" => {
                with_dim!(a(0), d => r.pad_with_zeros(d, usizes(a(1))[0], usizes(a(2))[0]))
            }
            "index_select" => with_dim!(a(1), d => r.index_select(t(0), d)),
            "gather" => with_dim!(a(1), d => r.gather(t(0), d)),
            "embedding" => r.embedding(t(0)),
            "repeat" => r.repeat(usizes(a(0))),
            "avg_pool2d" => r.avg_pool2d(usizes(a(0))[0]),
            "max_pool2d" => r.max_pool2d(usizes(a(0))[0]),
            "avg_pool2d_with_stride" => r.avg_pool2d_with_stride(usizes(a(0))[0], usizes(a(1))[0]),
            "max_pool2d_with_stride" => r.max_pool2d_with_stride(usizes(a(0))[0], usizes(a(1))[0]),
            "interpolate1d" => r.interpolate1d(usizes(a(0))[0]),
            "upsample_nearest1d" => r.upsample_nearest1d(usizes(a(0))[0]),
            "interpolate2d" => r.interpolate2d(usizes(a(0))[0], usizes(a(1))[0]),
            "upsample_nearest2d" => r.upsample_nearest2d(usizes(a(0))[0], usizes(a(1))[0]),
            "upsample_bilinear2d" => r.upsample_bilinear2d(usizes(a(0))[0], usizes(a(1))[0], false),
            "conv1d" => {
                let n = |i: usize| usizes(a(i))[0];
                r.conv1d(t(0), n(1), n(2), n(3), n(4))
            }
            "conv2d" => {
                let n = |i: usize| usizes(a(i))[0];
                r.conv2d(t(0), n(1), n(2), n(3), n(4))
            }
            "dims2" => r.dims2().map(|_| r.clone()),
            "to_scalar" => r.to_scalar::<f32>().map(|_| r.clone()),
            "i" => {
                use candle_core::{IndexOp, TensorIndexer};
                use std::ops::Bound;
                let indexer = |v: &Value| match v {
                    Value::U(n) => TensorIndexer::Select(*n),
                    Value::Range(start, end) => TensorIndexer::Narrow(
                        start.map_or(Bound::Unbounded, Bound::Included),
                        end.map_or(Bound::Unbounded, Bound::Excluded),
                    ),
                    other => panic!("not an index: {other:?}"),
                };
                match a(0) {
                    Value::Tup(items) => match items.as_slice() {
                        [x, y] => r.i((indexer(x), indexer(y))),
                        [x, y, z] => r.i((indexer(x), indexer(y), indexer(z))),
                        other => panic!("{other:?}"),
                    },
                    one => r.i(indexer(one)),
                }
            }
            other => panic!("no candle call for `{other}`"),
        };
    }
    let ts = |i: usize| match &args[i] {
        Value::Ts(ts) => ts.clone(),
        other => panic!("not tensors: {other:?}"),
    };
    let u = |i: usize| usizes(&args[i])[0];
    let name = match name.strip_prefix("candle_contracts::") {
        Some(short) => short.to_string(),
        None if name.starts_with("ops::") || name.starts_with("loss::") => {
            format!("candle_nn::{name}")
        }
        None => name.to_string(),
    };
    match name.as_str() {
        "Tensor::cat" => with_dim!(a(1), d => Tensor::cat(&ts(0), d)),
        "Tensor::stack" => with_dim!(a(1), d => Tensor::stack(&ts(0), d)),
        "candle_nn::ops::softmax" => with_dim!(a(1), d => candle_nn::ops::softmax(t(0), d)),
        "candle_nn::ops::log_softmax" => with_dim!(a(1), d => candle_nn::ops::log_softmax(t(0), d)),
        "candle_nn::ops::softmax_last_dim" => candle_nn::ops::softmax_last_dim(t(0)),
        "candle_nn::ops::sigmoid" => candle_nn::ops::sigmoid(t(0)),
        "candle_nn::loss::cross_entropy" => candle_nn::loss::cross_entropy(t(0), t(1)),
        "candle_nn::loss::nll" => candle_nn::loss::nll(t(0), t(1)),
        "candle_nn::loss::mse" => candle_nn::loss::mse(t(0), t(1)),
        "candle_nn::loss::binary_cross_entropy_with_logit" => {
            candle_nn::loss::binary_cross_entropy_with_logit(t(0), t(1))
        }
        "nn::cross_entropy" => candle_contracts::nn::cross_entropy(t(0), t(1)),
        "nn::nll" => candle_contracts::nn::nll(t(0), t(1)),
        "nn::cross_entropy_with" => {
            candle_contracts::nn::cross_entropy_with(t(0), t(1), LossOptions::default())
        }
        "nn::nll_with" => candle_contracts::nn::nll_with(t(0), t(1), LossOptions::default()),
        "nn::binary_cross_entropy" => candle_contracts::nn::binary_cross_entropy(t(0), t(1)),
        "nn::binary_cross_entropy_with_logit" => {
            candle_contracts::nn::binary_cross_entropy_with_logit(t(0), t(1))
        }
        "nn::embedding" => candle_contracts::nn::embedding(t(0), t(1)),
        "nn::index_select" => candle_contracts::nn::index_select(t(0), t(1), u(2)),
        "nn::gather" => candle_contracts::nn::gather(t(0), t(1), u(2)),
        "nn::scatter_add" => candle_contracts::nn::scatter_add(t(0), t(1), t(2), u(3)),
        "nn::index_add" => candle_contracts::nn::index_add(t(0), t(1), t(2), u(3)),
        "nn::one_hot" => candle_contracts::nn::one_hot(t(0).clone(), u(1), 1f32, 0f32),
        "Tensor::zeros" => match a(1) {
            Value::DType(dtype) => Tensor::zeros(usizes(a(0)), *dtype, &Device::Cpu),
            other => panic!("not a dtype: {other:?}"),
        },
        "Tensor::arange" => match (a(0), a(1)) {
            (Value::Opaque, Value::Opaque) => Tensor::arange(0f32, 5f32, &Device::Cpu),
            _ => Tensor::arange(u(0) as u32, u(1) as u32, &Device::Cpu),
        },
        "Tensor::eye" => match a(1) {
            Value::DType(dtype) => Tensor::eye(u(0), *dtype, &Device::Cpu),
            other => panic!("not a dtype: {other:?}"),
        },
        "Tensor::randn" => Tensor::randn(0f32, 1f32, usizes(a(2)), &Device::Cpu),
        "candle_nn::ops::silu" => candle_nn::ops::silu(t(0)),
        other => panic!("no candle call for `{other}`"),
    }
}

/// What the rule says, as text: the type, or `error: ` and the note.
fn describe(outcome: &Outcome) -> String {
    match outcome {
        Ok(tensor) => tensor.to_string(),
        Err(mismatch) => format!("error: {}", mismatch.note()),
    }
}

/// Pins the rule's answer for `name` on `receiver` (a method) or as a function, then runs it
/// in candle for 40 random sizes of the symbols.
fn case(receiver: Option<&'static str>, name: &str, specs: &[Spec], expected: &str) {
    case_under(&[], receiver, name, specs, expected);
}

/// A contract's relation written as text (`D % 2 == 0`, `T <= P`).
fn relation(text: &str) -> Relation {
    for (token, op) in [
        ("<=", Cmp::Le),
        (">=", Cmp::Ge),
        ("==", Cmp::Eq),
        ("!=", Cmp::Ne),
        ("<", Cmp::Lt),
        (">", Cmp::Gt),
    ] {
        if let Some((lhs, rhs)) = text.split_once(token) {
            return Relation::new(parse_dim(lhs).unwrap(), op, parse_dim(rhs).unwrap());
        }
    }
    panic!("no relation: `{text}`")
}

/// Whether `relation` holds for this trial's sizes (its names drawn where new).
fn holds(relation: &Relation, sizes: &mut Sizes) -> bool {
    let (Some(a), Some(b)) = (sizes.eval(&relation.lhs), sizes.eval(&relation.rhs)) else {
        return false;
    };
    match relation.op {
        Cmp::Eq => a == b,
        Cmp::Ne => a != b,
        Cmp::Lt => a < b,
        Cmp::Le => a <= b,
        Cmp::Gt => a > b,
        Cmp::Ge => a >= b,
    }
}

/// [`case`] where a contract's relations hold: the rule runs under them as facts, and candle
/// runs only on sizes that satisfy them (40 such trials).
fn case_under(
    facts: &[&str],
    receiver: Option<&'static str>,
    name: &str,
    specs: &[Spec],
    expected: &str,
) {
    let relations: Vec<Relation> = facts.iter().map(|f| relation(f)).collect();
    let under = Facts::new(&relations);
    assert_eq!(under.is_empty(), relations.is_empty(), "{facts:?} are used");
    let args: Vec<Arg> = specs.iter().map(arg).collect();
    let outcome = match receiver {
        // A method reading values: its rank check, and the receiver as candle's side runs it.
        Some(r) if matches!(name, "dims2" | "to_scalar") => {
            rules::check_read_rank(name, &tensor_type(r)).map(|()| tensor_type(r))
        }
        Some(r) => rules::method_under(&under, name, &tensor_type(r), &args),
        None => rules::function_under(&under, name, &args),
    };
    let call = format!(
        "{}{name}({specs:?})",
        receiver.map(|r| format!("{r}.")).unwrap_or_default()
    );
    assert_eq!(describe(&outcome), expected, "the rule for {call}");
    let mut candle_failures = 0;
    let mut trials = 0;
    for seed in 1..=400u64 {
        if trials == 40 {
            break;
        }
        let mut sizes = Sizes::new(seed);
        if !relations.iter().all(|r| holds(r, &mut sizes)) {
            continue;
        }
        let receiver_value = match receiver {
            Some(r) => match make_tensor(r, &mut sizes) {
                Some(t) => Some(t),
                None => continue,
            },
            None => None,
        };
        let Some(values) = specs
            .iter()
            .map(|s| value(s, &mut sizes))
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        trials += 1;
        let real = run(name, receiver_value.as_ref(), &values);
        match (&outcome, real) {
            (Err(mismatch), Ok(real)) => panic!(
                "false positive for {call} with {:?} {:?}: the rule says {mismatch}, candle gives {:?}",
                sizes.dims,
                sizes.runs,
                real.dims()
            ),
            (Ok(predicted), Ok(real)) => {
                let dtype = DType::from_name(real.dtype().as_str()).unwrap();
                assert!(
                    predicted.dtypes.contains(dtype),
                    "{call}: dtype {dtype} not in {}",
                    predicted.dtypes
                );
                let expected = sizes.instantiate(&predicted.shape);
                let verdict = Shape::literal(real.dims()).compare(&expected);
                assert!(
                    !verdict.is_different(),
                    "{call} with {:?} {:?}: candle gives {:?}, the rule {expected} ({verdict:?})",
                    sizes.dims,
                    sizes.runs,
                    real.dims()
                );
            }
            (_, Err(_)) => candle_failures += 1,
        }
    }
    assert!(trials >= 20, "{call}: only {trials} trials ran");
    if outcome.is_err() {
        assert_eq!(
            candle_failures, trials,
            "{call}: a certain mismatch must fail for every size"
        );
    }
}

fn method(receiver: &'static str, name: &str, specs: &[Spec], expected: &str) {
    case(Some(receiver), name, specs, expected);
}

fn function(name: &str, specs: &[Spec], expected: &str) {
    case(None, name, specs, expected);
}

use Spec::{Hidden, Hole, Minus, Opaque, Range, Size, T, Ts, Tuple};

#[test]
fn unary_ops_keep_dtype_and_shape() {
    for name in ["relu", "exp", "neg", "sqrt", "contiguous", "affine"] {
        method("f32[N, C]", name, &[], "f32[N, C]");
        method("f32[*B, D]", name, &[], "f32[*B, D]");
    }
}

#[test]
fn element_wise_ops_take_equal_shapes_and_dtypes() {
    for name in ["add", "sub", "mul", "div", "maximum", "minimum"] {
        method("f32[N, C]", name, &[T("f32[N, C]")], "f32[N, C]");
        method("f32[N, C]", name, &[T("f32[_, C]")], "f32[N, C]");
        // C may be 1 or not: candle may fail, the rule must not say so.
        method("f32[N, C]", name, &[T("f32[N, 1]")], "f32[N, C]");
        method(
            "f32[N, 3]",
            name,
            &[T("f32[N, 4]")],
            "error: dim 1: 4 given, 3 expected",
        );
        method(
            "f32[N]",
            name,
            &[T("f32[N, 1]")],
            "error: rank 2 given, rank 1 expected",
        );
        method(
            "f32[N]",
            name,
            &[T("f32[N + 1]")],
            "error: dim 0: N + 1 given, N expected",
        );
        method(
            "f32[N]",
            name,
            &[T("f64[N]")],
            "error: dtype f64 given, f32 expected",
        );
        method("f32[*B, D]", name, &[T("f32[*B, D]")], "f32[*B, D]");
        method(
            "f32[.., 3]",
            name,
            &[T("f32[.., 4]")],
            "error: dim -1: 4 given, 3 expected",
        );
    }
    method("f32[N, C]", "ge", &[T("f32[N, C]")], "u8[N, C]");
    method(
        "f32[N, C]",
        "ge",
        &[T("f64[N, C]")],
        "error: dtype f64 given, f32 expected",
    );
    method(
        "u8[N, C]",
        "where_cond",
        &[T("f32[N, C]"), T("f32[N, C]")],
        "f32[N, C]",
    );
    method(
        "u8[N, C]",
        "where_cond",
        &[T("f32[N, C]"), T("f64[N, C]")],
        "error: dtype f64 given, f32 expected",
    );
    method(
        "u8[N, 2]",
        "where_cond",
        &[T("f32[N, 3]"), T("f32[N, 3]")],
        "error: dim 1: 3 given, 2 expected",
    );
}

/// An argument the caller does not know is still a tensor (or a scalar) where candle takes
/// one: the result keeps what the receiver fixes.
#[test]
fn unknown_arguments_keep_what_the_receiver_fixes() {
    for name in ["add", "sub", "mul", "div", "maximum", "minimum"] {
        method("f32[N, C]", name, &[Hidden("f32[N, C]")], "f32[N, C]");
        method("f32[N, C]", name, &[Hidden("f32[..]")], "f32[N, C]");
    }
    method("f32[N, C]", "ge", &[Hidden("f32[..]")], "u8[N, C]");
    for name in [
        "broadcast_add",
        "broadcast_mul",
        "broadcast_sub",
        "broadcast_div",
    ] {
        method("f32[N, C]", name, &[Hidden("f32[..]")], "f32[.., _, _]");
        method("f32[2, 3]", name, &[Hidden("f32[.., _]")], "f32[.., 2, 3]");
        method("f32[B, 1]", name, &[Hidden("f32[B, 1]")], "f32[.., _, _]");
    }
    method(
        "f32[2, 3]",
        "broadcast_lt",
        &[Hidden("f32[..]")],
        "u8[.., 2, 3]",
    );
}

#[test]
fn broadcast_ops_align_from_the_right() {
    for name in [
        "broadcast_add",
        "broadcast_mul",
        "broadcast_sub",
        "broadcast_div",
    ] {
        method("f32[N, C]", name, &[T("f32[C]")], "f32[N, C]");
        method("f32[N, 1]", name, &[T("f32[M]")], "f32[N, M]");
        method("f32[N, C]", name, &[T("f32[N, 1]")], "f32[N, C]");
        method("f32[N, C]", name, &[T("f32[M, 1, 1]")], "f32[M, N, C]");
        method(
            "f32[N, 3]",
            name,
            &[T("f32[4]")],
            "error: dim -1: 4 does not broadcast with 3 (sizes must be equal or 1)",
        );
        method("f32[N, C]", name, &[T("f32[N, C + 1]")], "f32[N, _]");
        method("f32[*B, D]", name, &[T("f32[D]")], "f32[*B, D]");
        method("f32[.., D]", name, &[T("f32[A, B, D]")], "f32[.., _, _, D]");
        method("f32[.., D]", name, &[T("f32[5, 1, D]")], "f32[.., 5, _, D]");
        method("f32[..]", name, &[T("f32[3]")], "f32[.., 3]");
        method(
            "f32[N]",
            name,
            &[T("f64[N]")],
            "error: dtype f64 given, f32 expected",
        );
    }
    method("f32[N, C]", "broadcast_lt", &[T("f32[C]")], "u8[N, C]");
    method(
        "f32[N, C]",
        "broadcast_lt",
        &[T("u32[C]")],
        "error: dtype u32 given, f32 expected",
    );
}

/// A size of at least 1 against one at least as large (`T` against a mask's `P + T`, where
/// `T >= 1`) broadcasts to the larger; without `T >= 1` it is not known. candle agrees for
/// every `T` of 1 to 3 and `P` of 0 to 3 where it runs, and gives 0 for `T` of 0 and `P` of 1.
#[test]
fn a_positive_size_broadcasts_to_one_at_least_as_large() {
    let scores = parse_tensor_type("f32[B, H, T, T]").unwrap();
    let mask = parse_tensor_type("f32[B, 1, T, P + T]").unwrap();
    let out = |facts: &Facts| {
        let args = [Arg::Tensor(mask.clone())];
        facts.under(|| rules::method("broadcast_add", &scores, &args))
    };
    let positive = Facts::new(&[Relation::new(Dim::symbol("T"), Cmp::Ge, Dim::lit(1))]);
    assert_eq!(out(&positive).unwrap().to_string(), "f32[B, H, T, P + T]");
    assert_eq!(out(&Facts::none()).unwrap().to_string(), "f32[B, H, T, _]");
    let dev = Device::Cpu;
    for t in 1..=3 {
        for p in 0..=3 {
            let scores = Tensor::zeros((2, 4, t, t), CandleDType::F32, &dev).unwrap();
            let mask = Tensor::zeros((2, 1, t, p + t), CandleDType::F32, &dev).unwrap();
            if let Ok(sum) = scores.broadcast_add(&mask) {
                assert_eq!(sum.dims(), &[2, 4, t, p + t]);
            }
        }
    }
    let empty = Tensor::zeros((2, 4, 0, 0), CandleDType::F32, &dev).unwrap();
    let one = Tensor::zeros((2, 1, 0, 1), CandleDType::F32, &dev).unwrap();
    assert_eq!(empty.broadcast_add(&one).unwrap().dims(), &[2, 4, 0, 0]);
}

/// A size against its own remainder by a number (`T as u32` is `T % 2^32`: BERT's position ids
/// against its `T` positions) broadcasts to the size itself wherever it runs. candle agrees for
/// every `T` of 0 to 600 against `T % 256`, and fails for 256 (a remainder of 0) and 300.
#[test]
fn a_size_broadcasts_over_its_own_remainder() {
    let embeddings = parse_tensor_type("f32[B, T, E]").unwrap();
    let positions = parse_tensor_type("f32[T % 256, E]").unwrap();
    let args = [Arg::Tensor(positions)];
    let out = Facts::none().under(|| rules::method("broadcast_add", &embeddings, &args));
    assert_eq!(out.unwrap().to_string(), "f32[B, T, E]");
    let dev = Device::Cpu;
    let mut ran = 0;
    for t in 0..=600 {
        let embeddings = Tensor::zeros((2, t, 3), CandleDType::F32, &dev).unwrap();
        let positions = Tensor::zeros((t % 256, 3), CandleDType::F32, &dev).unwrap();
        match embeddings.broadcast_add(&positions) {
            Ok(sum) => {
                assert_eq!(sum.dims(), &[2, t, 3]);
                ran += 1;
            }
            Err(_) => assert!(t >= 256 && t % 256 != 1, "{t}"),
        }
    }
    // 0 to 255, 257 and 513.
    assert_eq!(ran, 258);
}

/// A size against a divisor of it (Phi's queries `[B, T, H * HD]` under a norm's weight `[HD]`)
/// broadcasts to the size wherever it runs: candle runs it for `H` or `HD` of 1 only, for
/// every `H` and `HD` of 0 to 3, and gives `H * HD` each time.
#[test]
fn a_size_broadcasts_over_a_divisor() {
    let queries = parse_tensor_type("f32[B, T, H * HD]").unwrap();
    let weight = parse_tensor_type("f32[HD]").unwrap();
    let args = [Arg::Tensor(weight)];
    let out = Facts::none().under(|| rules::method("broadcast_mul", &queries, &args));
    assert_eq!(out.unwrap().to_string(), "f32[B, T, H * HD]");
    let dev = Device::Cpu;
    for h in 0..=3 {
        for hd in 0..=3 {
            let queries = Tensor::zeros((2, 3, h * hd), CandleDType::F32, &dev).unwrap();
            let weight = Tensor::zeros(hd, CandleDType::F32, &dev).unwrap();
            match queries.broadcast_mul(&weight) {
                Ok(product) => assert_eq!(product.dims(), &[2, 3, h * hd]),
                Err(_) => assert!(h * hd != hd && hd != 1 && h * hd != 1, "{h} {hd}"),
            }
        }
    }
}

#[test]
fn matmul_takes_matching_inner_dims() {
    method(
        "f32[B, 784]",
        "matmul",
        &[T("f32[784, 128]")],
        "f32[B, 128]",
    );
    method("f32[B, K]", "matmul", &[T("f32[K, N]")], "f32[B, N]");
    method(
        "f32[A, M, K]",
        "matmul",
        &[T("f32[A, K, N]")],
        "f32[A, M, N]",
    );
    method(
        "f32[B, 128]",
        "matmul",
        &[T("f32[64, 10]")],
        "error: dim -2: 64 given, 128 expected",
    );
    method(
        "f32[B, K]",
        "matmul",
        &[T("f32[K + 1, N]")],
        "error: dim -2: K + 1 given, K expected",
    );
    method("f32[B, K]", "matmul", &[T("f32[J, N]")], "f32[B, N]");
    // The run may be empty: `[M, K, ..]` is `[M, K]` then, and the product `[M, N]`.
    method(
        "f32[M, K, ..]",
        "matmul",
        &[T("f32[K, N]")],
        "f32[M, .., N]",
    );
    method(
        "f32[N]",
        "matmul",
        &[T("f32[N, M]")],
        "error: rank 1 given, rank 2 or more expected",
    );
    method(
        "f32[A, M, K]",
        "matmul",
        &[T("f32[K, N]")],
        "error: rank 2 given, rank 3 expected",
    );
    method(
        "f32[2, M, K]",
        "matmul",
        &[T("f32[3, K, N]")],
        "error: batch dims of 3 elements given, 2 expected",
    );
    method(
        "f32[M, K]",
        "matmul",
        &[T("f64[K, N]")],
        "error: dtype f64 given, f32 expected",
    );
    method(
        "f32[.., M, K]",
        "matmul",
        &[T("f32[.., K, N]")],
        "f32[.., M, N]",
    );
    method(
        "f32[A, 1, M, K]",
        "broadcast_matmul",
        &[T("f32[B, K, N]")],
        "f32[A, B, M, N]",
    );
    method(
        "f32[B, M, K]",
        "broadcast_matmul",
        &[T("f32[K, N]")],
        "f32[B, M, N]",
    );
    method(
        "f32[2, M, K]",
        "broadcast_matmul",
        &[T("f32[3, K, N]")],
        "error: dim -1: 3 does not broadcast with 2 (sizes must be equal or 1)",
    );
    method(
        "f32[M, 3]",
        "broadcast_matmul",
        &[T("f32[4, N]")],
        "error: dim -2: 4 given, 3 expected",
    );
}

#[test]
fn transposes_and_permutes_move_dims() {
    method("f32[N, C]", "t", &[], "f32[C, N]");
    method("f32[*B, M, N]", "t", &[], "f32[*B, N, M]");
    method(
        "f32[N]",
        "t",
        &[],
        "error: rank 1 given, rank 2 or more expected",
    );
    method(
        "f32[A, B, C]",
        "transpose",
        &[Size("0"), Size("2")],
        "f32[C, B, A]",
    );
    method(
        "f32[A, B, C]",
        "transpose",
        &[Minus(1), Size("0")],
        "f32[C, B, A]",
    );
    method(
        "f32[A, B, C]",
        "transpose",
        &[Size("1"), Size("1")],
        "f32[A, B, C]",
    );
    method(
        "f32[A, B, C]",
        "transpose",
        &[Size("0"), Size("3")],
        "error: dim 3 is past rank 3",
    );
    method(
        "f32[A, B, C]",
        "transpose",
        &[Minus(4), Size("0")],
        "error: dim D::Minus(4) is past rank 3",
    );
    method(
        "f32[A, B, C]",
        "permute",
        &[Tuple(vec![Size("2"), Size("0"), Size("1")])],
        "f32[C, A, B]",
    );
    method(
        "f32[A, B, C]",
        "permute",
        &[Tuple(vec![Size("2"), Size("0")])],
        "error: [2, 0] is not a permutation of the 3 dims",
    );
    method(
        "f32[A, B, C]",
        "permute",
        &[Tuple(vec![Size("0"), Size("0"), Size("1")])],
        "error: [0, 0, 1] is not a permutation of the 3 dims",
    );
}

#[test]
fn reshapes_keep_the_element_count() {
    method(
        "f32[N, C]",
        "reshape",
        &[Tuple(vec![Size("N * C")])],
        "f32[C * N]",
    );
    method(
        "f32[B, T, D]",
        "reshape",
        &[Tuple(vec![Size("B * T"), Size("D")])],
        "f32[B * T, D]",
    );
    method(
        "f32[B, T, D]",
        "reshape",
        &[Tuple(vec![Size("B * T"), Hole])],
        "f32[B * T, D]",
    );
    method(
        "f32[B, 6]",
        "reshape",
        &[Tuple(vec![Size("B"), Size("2"), Hole])],
        "f32[B, 2, 3]",
    );
    method(
        "f32[4, 6]",
        "reshape",
        &[Tuple(vec![Hole, Size("8")])],
        "f32[3, 8]",
    );
    method(
        "f32[4, 6]",
        "reshape",
        &[Tuple(vec![Hole, Size("5")])],
        "error: the tensor's 24 elements do not divide into rows of 5",
    );
    method(
        "f32[N, C]",
        "reshape",
        &[Tuple(vec![Size("N * C + 1")])],
        "error: the tensor has C * N elements, the shape asked for has C * N + 1",
    );
    method(
        "f32[3, 4]",
        "reshape",
        &[Tuple(vec![Size("2"), Size("5")])],
        "error: the tensor has 12 elements, the shape asked for has 10",
    );
    method(
        "f32[N, C]",
        "reshape",
        &[Tuple(vec![Size("M"), Size("C")])],
        "f32[M, C]",
    );
    method("f32[N, C]", "flatten_all", &[], "f32[C * N]");
    method("f32[]", "flatten_all", &[], "f32[1]");
    method(
        "f32[A, B, C]",
        "flatten_from",
        &[Size("1")],
        "f32[A, B * C]",
    );
    method("f32[A, B, C]", "flatten_to", &[Size("1")], "f32[A * B, C]");
    method(
        "f32[A, B, C]",
        "flatten",
        &[Size("0"), Minus(1)],
        "f32[A * B * C]",
    );
    method(
        "f32[A, B, C]",
        "flatten_from",
        &[Size("3")],
        "error: dim 3 is past rank 3",
    );
}

#[test]
fn squeeze_unsqueeze_narrow_and_get() {
    method("u32[N, 1]", "squeeze", &[Size("1")], "u32[N]");
    method("u32[N, 1]", "squeeze", &[Minus(1)], "u32[N]");
    method("u32[N, 3]", "squeeze", &[Size("1")], "u32[N, 3]");
    method("u32[N, C]", "squeeze", &[Size("1")], "u32[..]");
    method(
        "u32[N, C]",
        "squeeze",
        &[Size("2")],
        "error: dim 2 is past rank 2",
    );
    method("f32[N, C]", "unsqueeze", &[Size("0")], "f32[1, N, C]");
    method("f32[N, C]", "unsqueeze", &[Size("2")], "f32[N, C, 1]");
    method("f32[N, C]", "unsqueeze", &[Minus(1)], "f32[N, C, 1]");
    method("f32[*B, C]", "unsqueeze", &[Minus(1)], "f32[*B, C, 1]");
    method(
        "f32[N, C]",
        "unsqueeze",
        &[Size("3")],
        "error: dim 3 is past rank 2",
    );
    method(
        "f32[N, 5]",
        "narrow",
        &[Size("1"), Size("0"), Size("2")],
        "f32[N, 2]",
    );
    method(
        "f32[N, C]",
        "narrow",
        &[Size("0"), Size("1"), Size("N - 1")],
        "f32[N - 1, C]",
    );
    method(
        "f32[N, 5]",
        "narrow",
        &[Size("1"), Size("2"), Size("4")],
        "error: the slice ends at 6, past dim 1 of size 5",
    );
    method(
        "f32[N, C]",
        "narrow",
        &[Size("1"), Size("1"), Size("C")],
        "error: the slice ends at C + 1, past dim 1 of size C",
    );
    method("f32[N, C]", "get", &[Size("0")], "f32[C]");
    method(
        "f32[3, C]",
        "get",
        &[Size("3")],
        "error: the slice ends at 4, past dim 0 of size 3",
    );
}

#[test]
fn reductions_remove_or_keep_their_dims() {
    method("f32[B, D]", "sum_keepdim", &[Size("1")], "f32[B, 1]");
    method("f32[B, D]", "sum", &[Size("1")], "f32[B]");
    method(
        "f32[A, B, C]",
        "sum",
        &[Tuple(vec![Size("0"), Size("2")])],
        "f32[B]",
    );
    method(
        "f32[A, B, C]",
        "sum_keepdim",
        &[Tuple(vec![Size("0"), Size("2")])],
        "f32[1, B, 1]",
    );
    method(
        "f32[A, B, C]",
        "sum",
        &[Tuple(vec![Size("1"), Size("1")])],
        "error: dim 1 is named twice (candle's `DuplicateDimIndex`)",
    );
    method("f32[A, B, C]", "mean", &[Minus(1)], "f32[A, B]");
    method("f32[A, B, C]", "mean_keepdim", &[Size("0")], "f32[1, B, C]");
    method("f32[B, D]", "max_keepdim", &[Size("0")], "f32[1, D]");
    method("f32[B, D]", "max", &[Size("1")], "f32[B]");
    method("f32[B, D]", "min", &[Size("0")], "f32[D]");
    method("f32[B, C]", "argmax", &[Size("1")], "u32[B]");
    method("f32[B, C]", "argmin_keepdim", &[Minus(1)], "u32[B, 1]");
    method(
        "f32[B, C]",
        "argmax",
        &[Size("2")],
        "error: dim 2 is past rank 2",
    );
    method("f32[*S, C]", "argmax", &[Minus(1)], "u32[*S]");
    for name in ["sum_all", "mean_all", "max_all"] {
        method("f32[B, C]", name, &[], "f32[]");
    }
}

#[test]
fn dtype_conversion_and_broadcast_as() {
    method("u32[N]", "to_dtype", &[Spec::DType(DType::F32)], "f32[N]");
    method("f32[*B]", "to_dtype", &[Spec::DType(DType::I64)], "i64[*B]");
    method(
        "f32[1, C]",
        "broadcast_as",
        &[Tuple(vec![Size("N"), Size("C")])],
        "f32[N, C]",
    );
    method(
        "f32[C]",
        "broadcast_as",
        &[Tuple(vec![Size("N"), Size("T"), Size("C")])],
        "f32[N, T, C]",
    );
    method(
        "f32[3]",
        "broadcast_as",
        &[Tuple(vec![Size("N"), Size("4")])],
        "error: dim -1: 4 does not broadcast with 3 (sizes must be equal or 1)",
    );
    method(
        "f32[N, C]",
        "broadcast_as",
        &[Tuple(vec![Size("C")])],
        "error: rank 2 does not broadcast to rank 1",
    );
    method(
        "f32[N, C]",
        "broadcast_left",
        &[Tuple(vec![Size("B")])],
        "f32[B, N, C]",
    );
}

#[test]
fn cat_and_stack() {
    function(
        "Tensor::cat",
        &[Ts(vec!["f32[N, C]", "f32[M, C]"]), Size("0")],
        "f32[M + N, C]",
    );
    function(
        "Tensor::cat",
        &[Ts(vec!["f32[N, C]", "f32[N, C]"]), Minus(1)],
        "f32[N, 2 * C]",
    );
    function(
        "Tensor::cat",
        &[Ts(vec!["f32[N, 3]", "f32[N, 4]"]), Size("0")],
        "error: dim 1: 4 given, 3 expected",
    );
    function(
        "Tensor::cat",
        &[Ts(vec!["f32[N, C]", "f32[N]"]), Size("0")],
        "error: rank 1 given, rank 2 expected",
    );
    function(
        "Tensor::cat",
        &[Ts(vec!["f32[N, C]", "f64[N, C]"]), Size("0")],
        "error: dtype f64 given, f32 expected",
    );
    // One tensor is returned as it is, before candle looks at `dim`.
    function(
        "Tensor::cat",
        &[Ts(vec!["f32[N, C]"]), Size("2")],
        "f32[N, C]",
    );
    function(
        "Tensor::cat",
        &[Ts(vec!["f32[N, C]", "f32[N, C]"]), Size("2")],
        "error: dim 2 is past rank 2",
    );
    function(
        "Tensor::stack",
        &[Ts(vec!["f32[N]", "f32[N]", "f32[N]"]), Size("0")],
        "f32[3, N]",
    );
    function(
        "Tensor::stack",
        &[Ts(vec!["f32[N, C]", "f32[N, C]"]), Minus(1)],
        "f32[N, C, 2]",
    );
    function(
        "Tensor::stack",
        &[Ts(vec!["f32[N]", "f32[N + 1]"]), Size("0")],
        "error: dim 0: N + 1 given, N expected",
    );
    function(
        "Tensor::stack",
        &[Ts(vec!["f32[N]", "f32[N]"]), Size("2")],
        "error: dim 2 is past rank 1",
    );
}

#[test]
fn candle_nn_ops_and_losses() {
    function(
        "candle_nn::ops::softmax",
        &[T("f32[N, C]"), Minus(1)],
        "f32[N, C]",
    );
    function(
        "candle_nn::ops::softmax",
        &[T("f32[N, C]"), Size("2")],
        "error: dim 2 is past rank 2",
    );
    function(
        "ops::log_softmax",
        &[T("f32[N, C]"), Size("1")],
        "f32[N, C]",
    );
    function(
        "candle_nn::ops::softmax_last_dim",
        &[T("f32[B, T, C]")],
        "f32[B, T, C]",
    );
    function("candle_nn::ops::sigmoid", &[T("f32[*B]")], "f32[*B]");
    function(
        "candle_nn::loss::cross_entropy",
        &[T("f32[N, C]"), T("u32[N]")],
        "f32[]",
    );
    function(
        "loss::cross_entropy",
        &[T("f32[N, C]"), T("u32[N, 1]")],
        "error: rank 2 given, rank 1 expected",
    );
    function(
        "loss::cross_entropy",
        &[T("f32[N, C]"), T("u32[N + 1]")],
        "error: dim 0: N + 1 given, N expected",
    );
    function(
        "loss::cross_entropy",
        &[T("f32[N, C, H]"), T("u32[N]")],
        "error: rank 3 given, rank 2 expected",
    );
    function(
        "loss::cross_entropy",
        &[T("f32[N, C]"), T("f32[N]")],
        "error: dtype f32 given, u8 | u32 | i64 expected",
    );
    function(
        "candle_nn::loss::nll",
        &[T("f32[N, C]"), T("i64[N]")],
        "f32[]",
    );
    function("loss::mse", &[T("f32[N, 1]"), T("f32[N, 1]")], "f32[]");
    function(
        "loss::mse",
        &[T("f32[N, 1]"), T("f32[N]")],
        "error: `*S` is [N] here, [N, 1] where it was bound",
    );
    function(
        "loss::mse",
        &[T("f32[N]"), T("f64[N]")],
        "error: dtype f64 given, f32 expected",
    );
    function(
        "loss::binary_cross_entropy_with_logit",
        &[T("f32[N, 1]"), T("f32[N]")],
        "error: `*S` is [N] here, [N, 1] where it was bound",
    );
    function(
        "loss::binary_cross_entropy_with_logit",
        &[T("f32[N]"), T("f32[N]")],
        "f32[]",
    );
}

#[test]
fn guarded_ops_follow_their_contracts() {
    function("nn::cross_entropy", &[T("f32[N, C]"), T("u32[N]")], "f32[]");
    function(
        "nn::cross_entropy",
        &[T("f32[N, C]"), T("u32[N, 1]")],
        "error: rank 2 given, rank 1 expected",
    );
    function(
        "nn::cross_entropy",
        &[T("u32[N, C]"), T("u32[N]")],
        "error: dtype u32 given, float expected",
    );
    function(
        "candle_contracts::nn::nll",
        &[T("f32[N, C]"), T("i64[M]")],
        "f32[]",
    );
    function(
        "nn::nll",
        &[T("f32[4, C]"), T("u8[5]")],
        "error: dim 0: 5 given, 4 expected",
    );
    function(
        "nn::cross_entropy_with",
        &[T("f32[N, C]"), T("u32[N]"), Opaque],
        "f32[..]",
    );
    function(
        "nn::nll_with",
        &[T("f32[N, C]"), T("u32[N, 1]"), Opaque],
        "error: rank 2 given, rank 1 expected",
    );
    function(
        "nn::binary_cross_entropy",
        &[T("f32[N, 1]"), T("f32[N, 1]")],
        "f32[]",
    );
    function(
        "nn::binary_cross_entropy",
        &[T("f32[N, 1]"), T("f32[N]")],
        "error: `*S` is [N] here, [N, 1] where it was bound",
    );
    function(
        "nn::binary_cross_entropy_with_logit",
        &[T("f32[*B]"), T("f32[*B]")],
        "f32[]",
    );
    function(
        "nn::binary_cross_entropy_with_logit",
        &[T("f32[N, 1]"), T("f32[N]")],
        "error: `*S` is [N] here, [N, 1] where it was bound",
    );
    function(
        "nn::embedding",
        &[T("u32[B, T]"), T("f32[V, 16]")],
        "f32[B, T, 16]",
    );
    function(
        "nn::embedding",
        &[T("f32[B, T]"), T("f32[V, D]")],
        "error: dtype f32 given, u8 | u32 | i64 expected",
    );
    function(
        "nn::embedding",
        &[T("u32[B]"), T("f32[V]")],
        "error: rank 1 given, rank 2 expected",
    );
    function(
        "nn::index_select",
        &[T("f32[A, B]"), T("u32[I]"), Size("1")],
        "f32[A, I]",
    );
    function(
        "nn::index_select",
        &[T("f32[A, B]"), T("u32[I, 1]"), Size("0")],
        "error: rank 2 given, rank 1 expected",
    );
    function(
        "nn::index_select",
        &[T("f32[A, B]"), T("u32[I]"), Size("2")],
        "error: dim 2 is past rank 2",
    );
    function(
        "nn::gather",
        &[T("f32[A, B]"), T("u32[A, 1]"), Size("1")],
        "f32[A, 1]",
    );
    function(
        "nn::scatter_add",
        &[T("f32[A, B]"), T("u32[A, 1]"), T("f32[A, 1]"), Size("1")],
        "f32[A, B]",
    );
    function(
        "nn::scatter_add",
        // Its contract leaves ids' and source's shapes to the body (PyTorch's rule: same rank,
        // ids no larger than source), so the rank difference is the run-time guard's.
        &[T("f32[A, B]"), T("u32[A, 1]"), T("f32[A]"), Size("1")],
        "f32[A, B]",
    );
    function(
        "nn::index_add",
        &[T("f32[A, B]"), T("u32[I]"), T("f32[I, B]"), Size("0")],
        "f32[A, B]",
    );
    function("nn::one_hot", &[T("u32[B, T]"), Size("7")], "_[B, T, 7]");
    function(
        "nn::one_hot",
        &[T("f32[B]"), Size("7")],
        "error: dtype f32 given, u8 | u32 | i64 expected",
    );
}

#[test]
fn constructors_give_the_shape_and_dtype_asked_for() {
    function(
        "Tensor::zeros",
        &[Tuple(vec![Size("N"), Size("3")]), Spec::DType(DType::F32)],
        "f32[N, 3]",
    );
    function(
        "Tensor::zeros",
        &[Size("N"), Spec::DType(DType::U32)],
        "u32[N]",
    );
    function("Tensor::arange", &[Size("0"), Size("N")], "_[N]");
    function("Tensor::arange", &[Size("2"), Size("5")], "_[3]");
    function("Tensor::arange", &[Size("M"), Size("N")], "_[_]");
    // Float bounds (`arange(0f32, t as f32, ..)`) make a float tensor.
    function("Tensor::arange", &[Spec::Float, Spec::Float], "float[_]");
    function(
        "Tensor::eye",
        &[Size("N"), Spec::DType(DType::F64)],
        "f64[N, N]",
    );
    function(
        "Tensor::randn",
        &[Spec::Float, Spec::Float, Tuple(vec![Size("B"), Size("4")])],
        "float[B, 4]",
    );
    function("candle_nn::ops::silu", &[T("f32[B, T, E]")], "f32[B, T, E]");
}

#[test]
fn indexing_padding_and_gathering() {
    method("f32[B, T, E]", "i", &[Size("0")], "f32[T, E]");
    method(
        "f32[B, T, E]",
        "i",
        &[Tuple(vec![Range(None, None), Range(Some("1"), None)])],
        "f32[B, T - 1, E]",
    );
    method(
        "f32[B, T, E]",
        "i",
        &[Tuple(vec![
            Size("0"),
            Range(None, Some("1")),
            Range(Some("0"), Some("1")),
        ])],
        "f32[1, 1]",
    );
    method(
        "f32[N, 6]",
        "i",
        &[Tuple(vec![Range(None, None), Range(Some("2"), Some("5"))])],
        "f32[N, 3]",
    );
    // More items than dims: candle narrows a dim past the rank (a new user's
    // `mask.i((0..n, 0..n, 0..n))` on a rank-2 mask was silent).
    method(
        "f32[M, M]",
        "i",
        &[Tuple(vec![Size("0"), Size("0"), Size("0")])],
        "error: rank 2 given, rank 3 or more expected",
    );
    method(
        "f32[B, C, L]",
        "pad_with_zeros",
        &[Size("2"), Size("1"), Size("2")],
        "f32[B, C, L + 3]",
    );
    // candle gives the tensor back, before it reads `dim`, where both pads are 0 (a breaker
    // found `pad_with_zeros(5, 0, 0)` reported); a `dim` past the rank fails with a pad.
    method(
        "f32[N, 4]",
        "pad_with_zeros",
        &[Size("5"), Size("0"), Size("0")],
        "f32[N, 4]",
    );
    method(
        "f32[N, 4]",
        "pad_with_zeros",
        &[Size("5"), Size("0"), Size("1")],
        "error: dim 5 is past rank 2",
    );
    method(
        "f32[V, E]",
        "index_select",
        &[T("u32[N]"), Size("0")],
        "f32[N, E]",
    );
    method(
        "f32[B, C]",
        "gather",
        &[T("u32[B, K]"), Size("1")],
        "f32[B, K]",
    );
    method("f32[V, E]", "embedding", &[T("u32[N]")], "f32[N, E]");
    method(
        "f32[N, 2]",
        "repeat",
        &[Tuple(vec![Size("2"), Size("3")])],
        "f32[2 * N, 6]",
    );
    method(
        "f32[2]",
        "repeat",
        &[Tuple(vec![Size("3"), Size("2")])],
        "f32[3, 4]",
    );
    method("f32[N, E]", "zeros_like", &[], "f32[N, E]");
    method(
        "f32[N, E]",
        "clamp",
        &[Spec::Float, Spec::Float],
        "f32[N, E]",
    );
}

#[test]
fn resizes_keep_batch_and_channels() {
    for name in ["interpolate2d", "upsample_nearest2d"] {
        method(
            "f32[B, C, H, W]",
            name,
            &[Size("2 * H"), Size("2 * W")],
            "f32[B, C, 2 * H, 2 * W]",
        );
        method(
            "f32[B, C, 3, 5]",
            name,
            &[Size("7"), Size("1")],
            "f32[B, C, 7, 1]",
        );
        method(
            "f32[C, H, W]",
            name,
            &[Size("4"), Size("4")],
            "error: rank 3 given, rank 4 expected",
        );
    }
    method(
        "f32[B, C, H, W]",
        "upsample_bilinear2d",
        &[Size("H + 1"), Size("3"), Opaque],
        "f32[B, C, H + 1, 3]",
    );
    for name in ["interpolate1d", "upsample_nearest1d"] {
        method("f32[B, C, L]", name, &[Size("2 * L")], "f32[B, C, 2 * L]");
        method(
            "f32[B, C, L, 1]",
            name,
            &[Size("3")],
            "error: rank 4 given, rank 3 expected",
        );
    }
}

#[test]
fn pools_and_convolutions_keep_batch_and_channels() {
    method(
        "f32[B, C, 8, 6]",
        "avg_pool2d",
        &[Size("2")],
        "f32[B, C, 4, 3]",
    );
    method(
        "f32[B, C, 7, 7]",
        "max_pool2d",
        &[Size("2")],
        "f32[B, C, 3, 3]",
    );
    // candle's `(H - k) / s + 1`, rounded down, for sizes as symbols too.
    method(
        "f32[B, C, H, W]",
        "max_pool2d",
        &[Size("2")],
        "f32[B, C, (H - 2) / 2 + 1, (W - 2) / 2 + 1]",
    );
    // ResNet's stem: a 3 by 3 window every 2.
    method(
        "f32[B, C, 9, 8]",
        "max_pool2d_with_stride",
        &[Size("3"), Size("2")],
        "f32[B, C, 4, 3]",
    );
    method(
        "f32[B, C, 10, 10]",
        "avg_pool2d_with_stride",
        &[Size("2"), Size("3")],
        "f32[B, C, 3, 3]",
    );
    method(
        "f32[B, C, H, W]",
        "max_pool2d_with_stride",
        &[Size("3"), Size("2")],
        "f32[B, C, (H - 3) / 2 + 1, (W - 3) / 2 + 1]",
    );
    let one_group = |kernel| vec![T(kernel), Size("0"), Size("1"), Size("1"), Size("1")];
    method(
        "f32[B, 3, 9, 9]",
        "conv2d",
        &one_group("f32[8, 3, 3, 3]"),
        "f32[B, 8, _, _]",
    );
    method(
        "f32[B, 3, 9]",
        "conv1d",
        &one_group("f32[8, 3, 3]"),
        "f32[B, 8, _]",
    );
    // Two groups: `COUT / G` channels each, 4 for a kernel of 5.
    method(
        "f32[B, 2, 8]",
        "conv1d",
        &[
            T("f32[5, 1, 3]"),
            Size("0"),
            Size("1"),
            Size("1"),
            Size("2"),
        ],
        "f32[B, _, _]",
    );
}

#[test]
fn reading_values_takes_the_rank_the_method_names() {
    method("f32[N, E]", "dims2", &[], "f32[N, E]");
    method(
        "f32[N]",
        "dims2",
        &[],
        "error: rank 1 given, rank 2 expected",
    );
    method(
        "f32[N, E, 1]",
        "to_scalar",
        &[],
        "error: rank 3 given, rank 0 expected",
    );
}

/// Ids of every dtype candle can build, for `index_select`, `gather`, `embedding` and
/// candle-nn's `Embedding::forward`: the rule reports a mismatch exactly where candle fails.
#[test]
fn indexing_ops_take_u8_u32_or_i64_ids() {
    use candle_contracts_shapes::rules::layer::{self, Layer};
    use candle_nn::Module;

    let table = Tensor::zeros((5, 3), CandleDType::F32, &Device::Cpu).unwrap();
    let embedding = candle_nn::Embedding::new(table.clone(), 3);
    let mut built = 0;
    for dtype in DType::ALL {
        let Ok(ids) = Tensor::zeros(4, candle_dtype(dtype), &Device::Cpu) else {
            continue; // a dtype candle cannot fill
        };
        built += 1;
        let ids_type = tensor_type(&format!("{}[4]", dtype.name()));
        let table_type = tensor_type("f32[5, 3]");
        let ids_2d = ids.reshape((4, 1)).unwrap();
        let calls = [
            (
                "index_select",
                rules::method(
                    "index_select",
                    &table_type,
                    &[Arg::Tensor(ids_type.clone()), Arg::Int(Dim::lit(0))],
                )
                .is_err(),
                table.index_select(&ids, 0).is_err(),
            ),
            (
                "gather",
                rules::method(
                    "gather",
                    &tensor_type("f32[4, 3]"),
                    &[
                        Arg::Tensor(tensor_type(&format!("{}[4, 1]", dtype.name()))),
                        Arg::Int(Dim::lit(1)),
                    ],
                )
                .is_err(),
                Tensor::zeros((4, 3), CandleDType::F32, &Device::Cpu)
                    .unwrap()
                    .gather(&ids_2d, 1)
                    .is_err(),
            ),
            (
                "embedding",
                rules::method("embedding", &table_type, &[Arg::Tensor(ids_type.clone())]).is_err(),
                table.embedding(&ids).is_err(),
            ),
            (
                "Embedding::forward",
                layer::forward(Layer::Embedding, &ids_type, &table_type).is_err(),
                embedding.forward(&ids).is_err(),
            ),
        ];
        for (op, rule_fails, candle_fails) in calls {
            assert_eq!(rule_fails, candle_fails, "{op} with {dtype} ids");
        }
    }
    assert!(built >= 9, "only {built} dtypes built");
}

#[test]
fn facts_decide_what_the_normal_form_alone_does_not() {
    // Rotary embeddings: the two halves of an even last dim, put back together, are the dim.
    let halves = || Ts(vec!["f32[B, D / 2]", "f32[B, D / 2]"]);
    case_under(
        &["D % 2 == 0"],
        None,
        "Tensor::cat",
        &[halves(), Minus(1)],
        "f32[B, D]",
    );
    // Without the fact, an odd `D` loses one: undecided.
    function("Tensor::cat", &[halves(), Minus(1)], "f32[B, 2 * (D / 2)]");
    case_under(
        &["D % 2 == 0"],
        Some("f32[B, D]"),
        "narrow",
        &[Minus(1), Size("D / 2"), Size("D / 2")],
        "f32[B, D / 2]",
    );
    // A slice of `T` from a dim of `P < T` fails for every size the facts allow.
    case_under(
        &["T > P"],
        Some("f32[B, P]"),
        "narrow",
        &[Size("1"), Size("0"), Size("T")],
        "error: the slice ends at T, past dim 1 of size P",
    );
    method(
        "f32[B, P]",
        "narrow",
        &[Size("1"), Size("0"), Size("T")],
        "f32[B, T]",
    );
    case_under(
        &["T <= P"],
        Some("f32[B, P]"),
        "narrow",
        &[Size("1"), Size("0"), Size("T")],
        "f32[B, T]",
    );
    // `i(s..e)` is `e - s` long where `s <= e`; candle gives 0 where the start is past the end.
    let window = || Tuple(vec![Range(None, None), Range(Some("S"), Some("E"))]);
    case_under(
        &["S <= E"],
        Some("f32[N, C]"),
        "i",
        &[window()],
        "f32[N, E - S]",
    );
    method("f32[N, C]", "i", &[window()], "f32[N, _]");
}

/// Pins the parts `chunk(specs..)` gives on `receiver` (their text, or `error: ` and the
/// note), then runs candle's `chunk` for 40 random sizes: a listed result must match candle's
/// number of parts and each part's dims, any number of parts each of one type must agree with
/// every part, and a failure must be candle's for every size.
fn chunk_case(receiver: &'static str, specs: &[Spec], expected: &str) {
    let args: Vec<Arg> = specs.iter().map(arg).collect();
    let outcome = rules::parts("chunk", &tensor_type(receiver), &args).expect("a rule for chunk");
    let call = format!("{receiver}.chunk({specs:?})");
    let text = match &outcome {
        Ok(parts) => parts.to_string(),
        Err(mismatch) => format!("error: {}", mismatch.note()),
    };
    assert_eq!(text, expected, "the rule for {call}");
    let mut trials = 0;
    for seed in 1..=40u64 {
        let mut sizes = Sizes::new(seed);
        let Some(r) = make_tensor(receiver, &mut sizes) else {
            continue;
        };
        let Some(values) = specs
            .iter()
            .map(|s| value(s, &mut sizes))
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        trials += 1;
        let chunks = usizes(&values[0])[0];
        let real = with_dim!(&values[1], d => r.chunk(chunks, d));
        let (parts, real) = match (&outcome, real) {
            (Err(mismatch), Ok(real)) => panic!(
                "false positive for {call} with {:?}: the rule says {mismatch}, candle gives {} parts",
                sizes.dims,
                real.len()
            ),
            (Err(_), Err(_)) => continue,
            (Ok(_), Err(e)) => panic!("{call} with {:?}: candle fails: {e}", sizes.dims),
            (Ok(parts), Ok(real)) => (parts, real),
        };
        if let rules::Parts::Each(listed) = parts {
            // A size 0 gives no part at all; the sizes drawn are never 0.
            assert_eq!(listed.len(), real.len(), "{call} with {:?}", sizes.dims);
        }
        for (i, part) in real.iter().enumerate() {
            let predicted = parts.get(i);
            let expected = sizes.instantiate(&predicted.shape);
            let verdict = Shape::literal(part.dims()).compare(&expected);
            assert!(
                !verdict.is_different(),
                "{call} part {i} with {:?}: candle gives {:?}, the rule {expected}",
                sizes.dims,
                part.dims()
            );
        }
    }
    assert!(trials >= 20, "{call}: only {trials} trials ran");
}

#[test]
fn chunk_gives_candle_s_parts() {
    // A multiple of the number of parts for every size: equal parts.
    chunk_case(
        "f32[B, T, 3 * E]",
        &[Size("3"), Minus(1)],
        "[f32[B, T, E]; 3]",
    );
    chunk_case("f32[B, 2 * H]", &[Size("2"), Size("1")], "[f32[B, H]; 2]");
    chunk_case(
        "f32[B, 4 * H + 8]",
        &[Size("4"), Minus(1)],
        "[f32[B, H + 2]; 4]",
    );
    // Numbers: the first `size % chunks` parts are one longer.
    chunk_case(
        "f32[7, B]",
        &[Size("3"), Size("0")],
        "[f32[3, B], f32[2, B], f32[2, B]]",
    );
    chunk_case("u32[B, 6]", &[Size("3"), Minus(1)], "[u32[B, 2]; 3]");
    // Fewer elements than parts: one part of 1 each.
    chunk_case("f32[2, B]", &[Size("3"), Size("0")], "[f32[1, B]; 2]");
    chunk_case("f32[1, B]", &[Size("4"), Size("0")], "[f32[1, B]]");
    // A size that is not a known multiple: the cut dim unknown, how many parts too.
    chunk_case("f32[B, E]", &[Size("2"), Minus(1)], "[f32[B, _]; _]");
    chunk_case(
        "f32[B, 3 * E + 1]",
        &[Size("3"), Minus(1)],
        "[f32[B, _]; _]",
    );
    chunk_case("f32[B, 6]", &[Size("N"), Minus(1)], "[f32[B, _]; _]");
    // A dim past the rank: candle's `DimOutOfRange`.
    chunk_case(
        "f32[B, E]",
        &[Size("2"), Size("2")],
        "error: dim 2 is past rank 2",
    );
    chunk_case(
        "f32[B, E]",
        &[Size("2"), Minus(3)],
        "error: dim D::Minus(3) is past rank 2",
    );
}

/// `Tensor::cat(&[prev_k, &k], 2)` with a cached `prev_k` the analysis cannot see into, and
/// `vec![&k; n_rep]` (how many unknown): the dims off `dim` are the known tensor's, as candle
/// requires of every input; `dim`'s size is unknown.
#[test]
fn cat_and_stack_keep_the_dims_an_unknown_input_must_share() {
    let k = || parse_tensor_type("f32[B, H, T, D]").unwrap();
    let cached = [Arg::Tensors(vec![TensorType::unknown(), k()]), Arg::int(2)];
    let out = rules::function("Tensor::cat", &cached).unwrap();
    assert_eq!(out.to_string(), "f32[B, H, _, D]");
    let repeated = [
        Arg::TensorsEach(k(), Dim::Unknown),
        Arg::Dim(DimIndex::FromEnd(2)),
    ];
    let out = rules::function("Tensor::cat", &repeated).unwrap();
    assert_eq!(out.to_string(), "f32[B, H, _, D]");
    let stacked = [Arg::TensorsEach(k(), Dim::Unknown), Arg::int(1)];
    let out = rules::function("Tensor::stack", &stacked).unwrap();
    assert_eq!(out.to_string(), "f32[B, _, H, T, D]");
    // candle agrees: a cache of 3 positions, then 1, 2 and 3 copies along dim 2.
    let dev = Device::Cpu;
    let prev = Tensor::zeros((2, 4, 3, 8), CandleDType::F32, &dev).unwrap();
    let new = Tensor::zeros((2, 4, 1, 8), CandleDType::F32, &dev).unwrap();
    assert_eq!(
        Tensor::cat(&[&prev, &new], 2).unwrap().dims(),
        &[2, 4, 4, 8]
    );
    for n in 1..=3 {
        let out = Tensor::cat(&vec![&new; n], D::Minus2).unwrap();
        assert_eq!(out.dims(), &[2, 4, n, 8]);
        let out = Tensor::stack(&vec![&new; n], 1).unwrap();
        assert_eq!(out.dims(), &[2, n, 4, 1, 8]);
    }
}

/// `n` parts of one type (`vec![&k; n_rep]`, a `Vec` a loop over `0..n` pushes one to per
/// pass): `cat` multiplies the part's size along `dim` by `n`, `stack` inserts a dim of `n`;
/// one part is itself; none fails. candle agrees for 0 to 3 parts.
#[test]
fn cat_and_stack_of_a_counted_list_multiply_and_insert_the_count() {
    let k = || parse_tensor_type("f32[B, H, T, D]").unwrap();
    let n = || Dim::symbol("N");
    let cat = |count: Dim| {
        let args = [Arg::TensorsEach(k(), count), Arg::int(2)];
        rules::function("Tensor::cat", &args).unwrap().to_string()
    };
    assert_eq!(cat(n()), "f32[B, H, N * T, D]");
    assert_eq!(cat(Dim::lit(1)), "f32[B, H, T, D]");
    assert_eq!(cat(Dim::lit(3)), "f32[B, H, 3 * T, D]");
    let stacked = [Arg::TensorsEach(k(), n()), Arg::Dim(DimIndex::FromEnd(1))];
    let out = rules::function("Tensor::stack", &stacked).unwrap();
    assert_eq!(out.to_string(), "f32[B, H, T, D, N]");
    // None: candle fails, and nothing is said of a result.
    for op in ["Tensor::cat", "Tensor::stack"] {
        let args = [Arg::TensorsEach(k(), Dim::lit(0)), Arg::int(2)];
        assert!(rules::function(op, &args).unwrap().is_unknown(), "{op}");
    }
    let none: Vec<Tensor> = Vec::new();
    assert!(Tensor::cat(&none, 2).is_err());
    assert!(Tensor::stack(&none, 2).is_err());
    let dev = Device::Cpu;
    let part = Tensor::zeros((2, 4, 3, 8), CandleDType::F32, &dev).unwrap();
    for count in 1..=3 {
        let parts: Vec<Tensor> = (0..count).map(|_| part.clone()).collect();
        assert_eq!(
            Tensor::cat(&parts, 2).unwrap().dims(),
            &[2, 4, count * 3, 8]
        );
        assert_eq!(
            Tensor::stack(&parts, D::Minus1).unwrap().dims(),
            &[2, 4, 3, 8, count]
        );
    }
}

/// candle-nn's `Conv1d`/`Conv2d` layers with groups, against the layer rule: where the rule
/// says a mismatch is certain, candle fails; where it gives a type, candle's dims agree with
/// every size it knows.
#[test]
fn grouped_convolution_layers_agree_with_candle() {
    use candle_contracts_shapes::rules::layer::{self, ConvGeometry, Layer};
    use candle_core::Module;
    /// Input dims, weight dims, groups, padding, stride.
    type Case = (&'static [usize], &'static [usize], usize, usize, usize);
    let cases: &[Case] = &[
        (&[2, 6, 9, 9], &[6, 1, 3, 3], 6, 1, 1),
        (&[2, 16, 9, 9], &[32, 4, 3, 3], 4, 0, 2),
        (&[2, 8, 9, 9], &[32, 4, 3, 3], 4, 0, 1),
        (&[2, 20, 9, 9], &[32, 4, 3, 3], 5, 0, 1),
        (&[2, 4, 9], &[8, 2, 3], 2, 1, 1),
        (&[2, 4, 9], &[8, 4, 3, 3], 1, 1, 1),
        (&[4, 9, 9], &[8, 4, 3, 3], 1, 1, 1),
        (&[2, 3, 9, 9], &[8, 3, 3, 3], 1, 0, 1),
        (&[2, 4, 9, 9], &[8, 3, 3, 3], 1, 0, 1),
    ];
    for &(x_dims, w_dims, groups, padding, stride) in cases {
        let x = Tensor::ones(x_dims, CandleDType::F32, &Device::Cpu).unwrap();
        let w = Tensor::ones(w_dims, CandleDType::F32, &Device::Cpu).unwrap();
        let (rule_layer, candle) = if w_dims.len() == 3 {
            let cfg = candle_nn::Conv1dConfig {
                padding,
                stride,
                dilation: 1,
                groups,
                cudnn_fwd_algo: None,
            };
            (
                Layer::Conv1d,
                candle_nn::Conv1d::new(w.clone(), None, cfg).forward(&x),
            )
        } else {
            let cfg = candle_nn::Conv2dConfig {
                padding,
                stride,
                dilation: 1,
                groups,
                cudnn_fwd_algo: None,
            };
            (
                Layer::Conv2d,
                candle_nn::Conv2d::new(w.clone(), None, cfg).forward(&x),
            )
        };
        let text = |dims: &[usize]| {
            let dims: Vec<String> = dims.iter().map(ToString::to_string).collect();
            tensor_type(&format!("f32[{}]", dims.join(", ")))
        };
        let geometry = ConvGeometry {
            padding: Dim::lit(padding as u64),
            stride: Dim::lit(stride as u64),
            dilation: Dim::lit(1),
            groups: Dim::lit(groups as u64),
        };
        let rule = layer::forward_with(rule_layer, &text(x_dims), &text(w_dims), &geometry);
        match (&rule, &candle) {
            (Err(_), Err(_)) => {}
            (Ok(t), Ok(y)) => {
                let dims = t.shape.dims().expect("a rank");
                assert_eq!(dims.len(), y.rank(), "{x_dims:?} {w_dims:?} g{groups}");
                for (dim, size) in dims.iter().zip(y.dims()) {
                    if let Some(n) = dim.as_literal() {
                        assert_eq!(n as usize, *size, "{x_dims:?} {w_dims:?} g{groups}: {t}");
                    }
                }
            }
            (Err(m), Ok(y)) => panic!("{x_dims:?} {w_dims:?} g{groups}: rule {m:?}, candle {y:?}"),
            (Ok(t), Err(e)) => {
                // A rule that gives a type where candle fails says nothing wrong only where it
                // knows less than a full shape.
                assert!(
                    t.shape.dims().is_none_or(|d| d.iter().any(Dim::is_unknown)),
                    "{x_dims:?} {w_dims:?} g{groups}: rule {t}, candle {e}"
                );
            }
        }
    }
    // The depthwise case is known in full, and the mismatches are the rule's too.
    let geometry = |groups: u64| ConvGeometry {
        groups: Dim::lit(groups),
        ..ConvGeometry::default_config()
    };
    let t = layer::forward_with(
        Layer::Conv2d,
        &tensor_type("f32[2, 6, 9, 9]"),
        &tensor_type("f32[6, 1, 3, 3]"),
        &geometry(6),
    )
    .unwrap();
    assert_eq!(t.to_string(), "f32[2, 6, 7, 7]");
    assert!(
        layer::forward_with(
            Layer::Conv2d,
            &tensor_type("f32[2, 8, 9, 9]"),
            &tensor_type("f32[32, 4, 3, 3]"),
            &geometry(4),
        )
        .is_err()
    );
}

/// candle-nn's `Linear` against the layer rule, every rank from 0 to 6, with and without a
/// bias, contiguous or not: where the rule says a mismatch is certain, candle fails; where it
/// gives a type, candle gives those dims.
#[test]
fn linear_layers_agree_with_candle_on_every_rank() {
    use candle_contracts_shapes::rules::layer::{self, Layer};
    use candle_core::Module;
    let weight = Tensor::ones((3, 4), CandleDType::F32, &Device::Cpu).unwrap();
    let bias = Tensor::ones(3, CandleDType::F32, &Device::Cpu).unwrap();
    for rank in 0..=6usize {
        let mut dims = vec![2usize; rank];
        if let Some(last) = dims.last_mut() {
            *last = 4;
        }
        let x = Tensor::ones(dims.as_slice(), CandleDType::F32, &Device::Cpu).unwrap();
        // The same dims, not contiguous: candle-nn takes another path for it.
        let strided = (rank >= 2).then(|| {
            let mut swapped = dims.clone();
            swapped.swap(0, 1);
            Tensor::ones(swapped.as_slice(), CandleDType::F32, &Device::Cpu)
                .unwrap()
                .transpose(0, 1)
                .unwrap()
        });
        let text: Vec<String> = dims.iter().map(ToString::to_string).collect();
        let rule = layer::forward(
            Layer::Linear,
            &tensor_type(&format!("f32[{}]", text.join(", "))),
            &tensor_type("f32[3, 4]"),
        );
        for with_bias in [None, Some(bias.clone())] {
            let linear = candle_nn::Linear::new(weight.clone(), with_bias);
            for input in [Some(&x), strided.as_ref()].into_iter().flatten() {
                match (&rule, linear.forward(input)) {
                    (Err(_), Err(_)) => {}
                    (Ok(t), Ok(y)) => {
                        let expected: Vec<u64> = t
                            .shape
                            .dims()
                            .expect("a rank")
                            .iter()
                            .map(|d| d.as_literal().expect("a size"))
                            .collect();
                        let found: Vec<u64> = y.dims().iter().map(|&d| d as u64).collect();
                        assert_eq!(expected, found, "rank {rank}");
                    }
                    // A layout candle's matmul does not take (a batch of strided rows) is no
                    // shape's.
                    (Ok(_), Err(e)) if format!("{e:?}").contains("MatMulUnexpectedStriding") => {}
                    (rule, candle) => panic!("rank {rank}: rule {rule:?}, candle {candle:?}"),
                }
            }
        }
    }
}
