//! Rules for candle's `Tensor` methods and associated functions, and candle-nn's `ops`.
//! Each mirrors candle-core 0.11's own checks (named in the comments) and claims a failure
//! only where those checks certainly fail.

use crate::dim::Dim;
use crate::dtype::{DType, DTypeSet};
use crate::facts::{Cmp, Facts, Relation};
use crate::reason::Reason;
use crate::rules::{Arg, Argument, Help, Mismatch, Outcome, Parts, same_dtype_help};
use crate::shape::{Resolved, Run, Shape, TensorType, compare_dtypes};
use crate::verdict::{Axis, DimIndex, Rank, Verdict};

/// Methods that keep the receiver's dtype and shape.
const SAME_TYPE: &[&str] = &[
    "clone",
    "contiguous",
    "force_contiguous",
    "detach",
    "copy",
    "to_device",
    "relu",
    "exp",
    "log",
    "sqrt",
    "sqr",
    "neg",
    "abs",
    "tanh",
    "sin",
    "cos",
    "gelu",
    "gelu_erf",
    "erf",
    "silu",
    "recip",
    "ceil",
    "floor",
    "round",
    "sign",
    "affine",
    "powf",
    "elu",
    "zeros_like",
    "ones_like",
    "rand_like",
    "randn_like",
];

/// Element-wise binary methods that take a tensor of the receiver's shape (candle's
/// `same_shape_binary_op`), or a scalar where candle takes one.
const SAME_SHAPE: &[&str] = &["add", "sub", "mul", "div", "maximum", "minimum"];
/// Comparisons: the receiver's shape, dtype u8.
const COMPARE: &[&str] = &["eq", "ne", "lt", "le", "gt", "ge"];

/// Methods with an arm of their own in [`method`].
const OTHER: &[&str] = &[
    "to_dtype",
    "matmul",
    "broadcast_matmul",
    "t",
    "transpose",
    "permute",
    "reshape",
    "flatten_all",
    "flatten",
    "flatten_from",
    "flatten_to",
    "squeeze",
    "unsqueeze",
    "narrow",
    "get",
    "sum_keepdim",
    "mean_keepdim",
    "sum",
    "mean",
    "max_keepdim",
    "min_keepdim",
    "max",
    "min",
    "argmax_keepdim",
    "argmin_keepdim",
    "argmax",
    "argmin",
    "sum_all",
    "mean_all",
    "max_all",
    "min_all",
    "broadcast_as",
    "expand",
    "broadcast_left",
    "where_cond",
    "clamp",
    "pad_with_zeros",
    "pad_with_same",
    "index_select",
    "gather",
    "embedding",
    "repeat",
    "avg_pool2d",
    "max_pool2d",
    "avg_pool2d_with_stride",
    "max_pool2d_with_stride",
    "conv1d",
    "conv2d",
    "i",
    "interpolate1d",
    "upsample_nearest1d",
    "interpolate2d",
    "upsample_nearest2d",
    "upsample_bilinear2d",
];

/// Whether [`method`] has a rule for `name` (so a call of it on a tensor yields a tensor).
pub(crate) fn has_rule(name: &str) -> bool {
    SAME_TYPE.contains(&name)
        || SAME_SHAPE.contains(&name)
        || COMPARE.contains(&name)
        || OTHER.contains(&name)
        || name
            .strip_prefix("broadcast_")
            .is_some_and(|op| SAME_SHAPE.contains(&op) || COMPARE.contains(&op))
}

pub(crate) fn method(name: &str, receiver: &TensorType, args: &[Arg], facts: &Facts) -> Outcome {
    let call = Call {
        op: format!("Tensor::{name}"),
        receiver,
        args,
        facts,
    };
    match name {
        _ if SAME_TYPE.contains(&name) => Ok(receiver.clone()),
        _ if SAME_SHAPE.contains(&name) => call.same_shape(None),
        _ if COMPARE.contains(&name) => call.same_shape(Some(DType::U8.into())),
        _ if name
            .strip_prefix("broadcast_")
            .is_some_and(|op| SAME_SHAPE.contains(&op)) =>
        {
            call.broadcast(None)
        }
        _ if name
            .strip_prefix("broadcast_")
            .is_some_and(|op| COMPARE.contains(&op)) =>
        {
            call.broadcast(Some(DType::U8.into()))
        }
        "to_dtype" => Ok(TensorType::new(
            match args.first() {
                Some(Arg::DType(dtype)) => DTypeSet::only(*dtype),
                _ => DTypeSet::ANY,
            },
            receiver.shape.clone(),
        )),
        "matmul" => call.matmul(false),
        "broadcast_matmul" => call.matmul(true),
        "t" => call.t(),
        "transpose" => call.transpose(),
        "permute" => call.permute(),
        "reshape" => call.reshape(),
        "flatten_all" => Ok(receiver.with_shape(Shape::new(vec![receiver.shape.elem_count()]))),
        "flatten" => call.flatten(Some(0), Some(1)),
        "flatten_from" => call.flatten(Some(0), None),
        "flatten_to" => call.flatten(None, Some(0)),
        "squeeze" => call.squeeze(),
        "unsqueeze" => call.unsqueeze(),
        "narrow" => call.narrow(),
        "get" => call.get(),
        "sum_keepdim" | "mean_keepdim" => call.reduce(true, true, None),
        "sum" | "mean" => call.reduce(true, false, None),
        "max_keepdim" | "min_keepdim" => call.reduce(false, true, None),
        "max" | "min" => call.reduce(false, false, None),
        "argmax_keepdim" | "argmin_keepdim" => call.reduce(false, true, Some(DType::U32)),
        "argmax" | "argmin" => call.reduce(false, false, Some(DType::U32)),
        "sum_all" | "mean_all" | "max_all" | "min_all" => Ok(receiver.with_shape(Shape::scalar())),
        "broadcast_as" | "expand" => call.broadcast_as(),
        "broadcast_left" => Ok(match args.first().and_then(sizes) {
            Some(left) => {
                receiver.with_shape(Shape::join(left, receiver.shape.clone(), Vec::new()))
            }
            None => receiver.with_shape(Shape::unknown()),
        }),
        "where_cond" => call.where_cond(),
        // With scalar bounds, the receiver's type; tensor bounds broadcast.
        "clamp" if args.iter().all(|a| matches!(a, Arg::Float | Arg::Int(_))) => {
            Ok(receiver.clone())
        }
        "clamp" => call.unknown_shape(),
        "pad_with_zeros" | "pad_with_same" => call.pad(),
        "index_select" => {
            call.check_ids()?;
            call.index_select()
        }
        "gather" => {
            call.check_ids()?;
            Ok(match args.first() {
                Some(Arg::Tensor(ids)) => receiver.with_shape(ids.shape.clone()),
                _ => receiver.with_shape(Shape::unknown()),
            })
        }
        // `table.embedding(ids)`: a 2-D table's rows for 1-D ids.
        "embedding" => call
            .check_ids()
            .map(|()| match (receiver.shape.dims(), args.first()) {
                (Some([_, hidden]), Some(Arg::Tensor(ids))) => {
                    receiver.with_shape(ids.shape.clone().appended(hidden.clone()))
                }
                _ => receiver.with_shape(Shape::unknown()),
            }),
        "repeat" => call.repeat(),
        "i" => call.index(),
        "avg_pool2d" | "max_pool2d" => call.pool2d(false),
        "avg_pool2d_with_stride" | "max_pool2d_with_stride" => call.pool2d(true),
        "conv1d" => call.conv(3),
        "conv2d" => call.conv(4),
        "interpolate1d" | "upsample_nearest1d" => call.resize(1),
        "interpolate2d" | "upsample_nearest2d" | "upsample_bilinear2d" => call.resize(2),
        _ => Ok(TensorType::unknown()),
    }
}

/// `receiver.chunk(chunks, dim)` (candle's `Tensor::chunk`): `dim` must be in the rank
/// (`DimOutOfRange`). Along a dim of size `s`, candle gives `s` parts of 1 where `s < chunks`,
/// and otherwise `chunks` parts, the first `s % chunks` of them one longer than `s / chunks`.
/// So the parts are listed where `s` and `chunks` are numbers, or where `s` is a multiple of
/// `chunks` for every size of its symbols (`3 * E` in 3 parts of `E`; a size 0 gives no
/// part at all); otherwise every part has the receiver's dims but that one.
pub(crate) fn chunk(receiver: &TensorType, args: &[Arg]) -> Result<Parts, Box<Mismatch>> {
    let Some(axis) = resolve("Tensor::chunk", receiver, args, 1)? else {
        // Only the rank is kept where the place of `dim` is unknown.
        let dims = match args.get(1).and_then(Arg::dim_index) {
            Some(_) => rank_pattern(&receiver.shape),
            None => Shape::unknown(),
        };
        return Ok(Parts::All(receiver.with_shape(dims)));
    };
    let part = |size: Dim| receiver.with_shape(receiver.shape.clone().with_dim(axis, size));
    let size = receiver.shape.get(axis);
    let chunks = args.first().and_then(|a| a.size().as_literal());
    // Longer lists are not worth listing (and a size may be any `u64`).
    const MOST: u64 = 1024;
    match (size.as_literal(), chunks) {
        // `chunks` 0 divides by zero: candle panics.
        (_, Some(0) | None) => Ok(Parts::All(part(Dim::Unknown))),
        (_, Some(chunks)) if chunks > MOST => Ok(Parts::All(part(Dim::Unknown))),
        (Some(size), Some(chunks)) if size < chunks => {
            let count = usize::try_from(size).unwrap_or(0);
            Ok(Parts::Each(vec![part(Dim::lit(1)); count]))
        }
        (Some(size), Some(chunks)) => {
            let (each, longer) = (size / chunks, size % chunks);
            Ok(Parts::Each(
                (0..chunks)
                    .map(|i| part(Dim::lit(if i < longer { each + 1 } else { each })))
                    .collect(),
            ))
        }
        // A size 0 gives no part, so `chunks` parts of an exact quotient never say too many.
        (None, Some(chunks)) => match exact_part(&size, chunks) {
            Some(each) => Ok(Parts::Each(vec![part(each); chunks as usize])),
            None => Ok(Parts::All(part(Dim::Unknown))),
        },
    }
}

/// `size / chunks` where it divides exactly: by its terms (`2 * I` by 2), or by the facts in
/// force (`P2` by 2 where `P2 % 2 == 0`).
fn exact_part(size: &Dim, chunks: u64) -> Option<Dim> {
    if let Some(each) = size.divided_exactly(chunks) {
        return Some(each);
    }
    let each = size.clone().div(Dim::lit(chunks));
    let whole = each.clone().mul(Dim::lit(chunks));
    (whole.compare(size) == Verdict::Equal).then_some(each)
}

/// `ids` (the op's `argument`, named `name` in the message) where candle takes u8, u32 or i64
/// ids: a mismatch when its dtype is certainly none of them. An empty set of dtypes (nothing
/// known to reach here) says nothing.
pub(crate) fn check_ids(
    op: &str,
    argument: Argument,
    name: &str,
    ids: &TensorType,
) -> Result<(), Box<Mismatch>> {
    if ids.dtypes.is_empty() {
        return Ok(());
    }
    match compare_dtypes(ids.dtypes, DTypeSet::INDEX) {
        Verdict::Different(reason) => Err(Box::new(Mismatch {
            op: op.to_string(),
            argument,
            expected: format!("{name}: {} [..]", DTypeSet::INDEX),
            found: ids.to_string(),
            reason,
            help: Some(super::to_dtype_help(ids.dtypes, DType::U32)),
        })),
        _ => Ok(()),
    }
}

/// Methods that read a tensor of one rank into Rust values: `to_scalar` (rank 0),
/// `to_vec0` to `to_vec3`, `dims0` to `dims5` (their number). candle's check fails for any
/// other rank.
pub(crate) fn read_rank(name: &str) -> Option<usize> {
    match name {
        "to_scalar" => Some(0),
        _ => {
            let digit = name
                .strip_prefix("to_vec")
                .filter(|d| matches!(*d, "0" | "1" | "2" | "3"))
                .or_else(|| {
                    name.strip_prefix("dims")
                        .filter(|d| matches!(*d, "0" | "1" | "2" | "3" | "4" | "5"))
                })?;
            digit.parse().ok()
        }
    }
}

/// `receiver.name()` of a method of [`read_rank`]: a failure where the receiver's rank is
/// certainly another.
pub(crate) fn check_read_rank(name: &str, receiver: &TensorType) -> Result<(), Box<Mismatch>> {
    let Some(rank) = read_rank(name) else {
        return Ok(());
    };
    if !rank_differs(receiver.shape.rank(), rank) {
        return Ok(());
    }
    Err(Box::new(Mismatch {
        op: format!("Tensor::{name}"),
        argument: Argument::Receiver,
        expected: format!("self: a tensor of rank {rank}"),
        found: receiver.to_string(),
        reason: Reason::Rank {
            found: receiver.shape.rank(),
            expected: Rank::Exactly(rank),
        },
        help: None,
    }))
}

/// Associated functions and candle-nn's ops, by full path.
/// A rule for a function: the arguments to the outcome.
type FunctionRule = fn(&[Arg]) -> Outcome;

pub(crate) const FUNCTIONS: &[(&str, FunctionRule)] = &[
    ("candle_core::Tensor::cat", cat),
    ("candle_core::Tensor::stack", stack),
    ("candle_nn::ops::softmax", |args| {
        along_dim("candle_nn::ops::softmax", args)
    }),
    ("candle_nn::ops::log_softmax", |args| {
        along_dim("candle_nn::ops::log_softmax", args)
    }),
    ("candle_nn::ops::softmax_last_dim", same_as_first),
    ("candle_nn::ops::sigmoid", same_as_first),
    ("candle_nn::ops::silu", same_as_first),
    ("candle_flash_attn::flash_attn", flash_attn),
    ("candle_nn::ops::rms_norm", |args| {
        norm("candle_nn::ops::rms_norm", args, &["alpha"])
    }),
    ("candle_nn::ops::layer_norm", |args| {
        norm("candle_nn::ops::layer_norm", args, &["alpha", "beta"])
    }),
    ("candle_nn::rotary_emb::rope", |args| {
        rope("candle_nn::rotary_emb::rope", args, 2)
    }),
    ("candle_nn::rotary_emb::rope_i", |args| {
        rope("candle_nn::rotary_emb::rope_i", args, 2)
    }),
    ("candle_nn::rotary_emb::rope_thd", |args| {
        rope("candle_nn::rotary_emb::rope_thd", args, 1)
    }),
    // Constructors: `zeros(shape, dtype, device)` and the like.
    ("candle_core::Tensor::zeros", |args| {
        filled(args, 0, args.get(1))
    }),
    ("candle_core::Tensor::ones", |args| {
        filled(args, 0, args.get(1))
    }),
    ("candle_core::Tensor::full", |args| filled(args, 1, None)),
    ("candle_core::Tensor::from_vec", |args| {
        filled(args, 1, None)
    }),
    ("candle_core::Tensor::from_slice", |args| {
        filled(args, 1, None)
    }),
    ("candle_core::Tensor::rand", |args| {
        filled(args, 2, None).map(|t| TensorType::new(DTypeSet::FLOAT, t.shape))
    }),
    ("candle_core::Tensor::randn", |args| {
        filled(args, 2, None).map(|t| TensorType::new(DTypeSet::FLOAT, t.shape))
    }),
    ("candle_core::Tensor::new", new),
    ("candle_core::Tensor::arange", arange),
    ("candle_core::Tensor::arange_step", |_| {
        Ok(TensorType::new(
            DTypeSet::ANY,
            Shape::new(vec![Dim::Unknown]),
        ))
    }),
    ("candle_core::Tensor::eye", square),
    ("candle_core::Tensor::tril2", square),
    ("candle_core::Tensor::triu2", square),
];

/// A constructor's tensor: the shape its argument at `shape` gives (a tuple, an array, one
/// size), the dtype a `DType` argument names.
fn filled(args: &[Arg], shape: usize, dtype: Option<&Arg>) -> Outcome {
    let dtypes = match dtype {
        Some(Arg::DType(dtype)) => DTypeSet::only(*dtype),
        _ => DTypeSet::ANY,
    };
    let shape = match args.get(shape) {
        Some(Arg::Tuple(items)) if items.iter().all(|a| matches!(a, Arg::Int(_))) => {
            Shape::new(items.iter().map(Arg::size).collect())
        }
        Some(Arg::Int(n)) => Shape::new(vec![n.clone()]),
        _ => Shape::unknown(),
    };
    Ok(TensorType::new(dtypes, shape))
}

/// `Tensor::new(values, device)`: a scalar for one value, one dim per level of nested arrays.
fn new(args: &[Arg]) -> Outcome {
    fn shape_of(arg: &Arg) -> Option<Vec<Dim>> {
        match arg {
            Arg::Int(_) | Arg::Float => Some(Vec::new()),
            Arg::Tuple(items) if !items.is_empty() => {
                let inner = shape_of(&items[0])?;
                // Every row of the same shape, or candle's `new` does not take it.
                items
                    .iter()
                    .all(|item| shape_of(item).as_ref() == Some(&inner))
                    .then(|| {
                        let mut dims = vec![Dim::lit(items.len() as u64)];
                        dims.extend(inner);
                        dims
                    })
            }
            _ => None,
        }
    }
    let shape = args
        .first()
        .and_then(shape_of)
        .map_or_else(Shape::unknown, Shape::new);
    Ok(TensorType::new(DTypeSet::ANY, shape))
}

/// `Tensor::arange(start, end, device)`: `end - start` values for integers; a float tensor
/// where the bounds are Rust floats (`arange(0f32, t as f32, ..)`: its dtype is theirs).
fn arange(args: &[Arg]) -> Outcome {
    // No value where the start is not below the end: exact from 0, and between two numbers.
    let len = match (args.first(), args.get(1)) {
        (Some(Arg::Int(start)), Some(Arg::Int(end))) => {
            match (start.as_literal(), end.as_literal()) {
                (Some(0), _) => end.clone(),
                (Some(s), Some(e)) => Dim::lit(e.saturating_sub(s)),
                _ => Dim::Unknown,
            }
        }
        _ => Dim::Unknown,
    };
    let dtypes = match (args.first(), args.get(1)) {
        (Some(Arg::Float), Some(Arg::Float)) => DTypeSet::FLOAT,
        _ => DTypeSet::ANY,
    };
    Ok(TensorType::new(dtypes, Shape::new(vec![len])))
}

/// `eye(n, dtype, device)`, `tril2`, `triu2`: `[n, n]`.
fn square(args: &[Arg]) -> Outcome {
    let n = args.first().map_or(Dim::Unknown, Arg::size);
    let dtypes = match args.get(1) {
        Some(Arg::DType(dtype)) => DTypeSet::only(*dtype),
        _ => DTypeSet::ANY,
    };
    Ok(TensorType::new(dtypes, Shape::new(vec![n.clone(), n])))
}

fn same_as_first(args: &[Arg]) -> Outcome {
    Ok(args
        .first()
        .map_or_else(TensorType::unknown, Arg::tensor_type))
}

/// candle-flash-attn's `flash_attn(q, k, v, softmax_scale, causal)`: `q`'s type (`[B, T, H,
/// D]`; the kernel checks the sizes itself). `k` and `v` must be of `q`'s dtype: the kernel
/// reads all three as one element type, and fails on any other.
fn flash_attn(args: &[Arg]) -> Outcome {
    let op = "candle_flash_attn::flash_attn";
    let q = args
        .first()
        .map_or_else(TensorType::unknown, Arg::tensor_type);
    for (position, name) in [(1, "k"), (2, "v")] {
        let Some(Arg::Tensor(t)) = args.get(position) else {
            continue;
        };
        if let Verdict::Different(reason) = compare_dtypes(t.dtypes, q.dtypes) {
            return Err(Box::new(Mismatch {
                help: same_dtype_help(q.dtypes, "q", t.dtypes),
                ..*position_error(
                    op,
                    position,
                    format!("{name}: {}[..] (the dtype of `q`)", q.dtypes),
                    t.to_string(),
                    reason,
                )
            }));
        }
    }
    Ok(q)
}

/// `rope(xs, cos, sin)` and its `_i` and `_thd` layouts, as candle-nn 0.11 checks them: `xs`
/// of rank 4 (`[B, H, T, D]`, or `[B, T, H, D]` where the sequence is dim `seq` 1), `cos`
/// and `sin` `[TC, D / 2]` or `[B, TC, D / 2]` (twice their last dim `D`, `TC` at least `T`),
/// all three of one dtype among bf16, f16, f32 and f64 (the kernels' `unsupported dtype`).
/// The result is `xs`'s type.
fn rope(op: &str, args: &[Arg], seq: usize) -> Outcome {
    let kernels = [DType::BF16, DType::F16, DType::F32, DType::F64]
        .into_iter()
        .fold(DTypeSet::EMPTY, |set, dtype| {
            set.union(DTypeSet::only(dtype))
        });
    let layout = if seq == 1 {
        "[B, T, H, D]"
    } else {
        "[B, H, T, D]"
    };
    let xs = args
        .first()
        .map_or_else(TensorType::unknown, Arg::tensor_type);
    if let Verdict::Different(reason) = compare_dtypes(xs.dtypes, kernels) {
        return Err(position_error(
            op,
            0,
            format!("xs: bf16 | f16 | f32 | f64 {layout}"),
            xs.to_string(),
            reason,
        ));
    }
    if rank_differs(xs.shape.rank(), 4) {
        return Err(position_error(
            op,
            0,
            format!("xs: {}{layout}", xs.dtypes),
            xs.to_string(),
            Reason::Rank {
                found: xs.shape.rank(),
                expected: Rank::Exactly(4),
            },
        ));
    }
    let xs_dims = xs.shape.dims();
    for (position, name) in [(1, "cos"), (2, "sin")] {
        let Some(Arg::Tensor(table)) = args.get(position) else {
            continue;
        };
        let expected = format!("{name}: {}[TC, D / 2] or [B, TC, D / 2]", xs.dtypes);
        of_dtype_of_xs(op, position, name, &xs, table)?;
        let rank = table.shape.rank();
        let rank_fails = match rank {
            Rank::Exactly(r) => !(2..=3).contains(&r),
            Rank::AtLeast(r) => r > 3,
        };
        if rank_fails {
            return Err(position_error(
                op,
                position,
                expected,
                table.to_string(),
                Reason::Rank {
                    found: rank,
                    expected: Rank::Exactly(2),
                },
            ));
        }
        let (Some(dims), Some(xs_dims)) = (table.shape.dims(), xs_dims) else {
            continue;
        };
        let (rows, half) = (&dims[dims.len() - 2], &dims[dims.len() - 1]);
        let mismatch = |axis: Axis, found: &Dim, wanted: Dim| {
            position_error(
                op,
                position,
                expected.clone(),
                table.to_string(),
                Reason::Dim {
                    axis,
                    found: found.clone(),
                    expected: wanted,
                },
            )
        };
        // A batched table's first dim is `xs`'s batch, not broadcast.
        if dims.len() == 3 && dims[0].compare(&xs_dims[0]).is_different() {
            return Err(mismatch(Axis::Front(0), &dims[0], xs_dims[0].clone()));
        }
        if half
            .clone()
            .mul(Dim::lit(2))
            .compare(&xs_dims[3])
            .is_different()
        {
            let wanted = xs_dims[3].clone().div(Dim::lit(2));
            return Err(mismatch(Axis::Back(1), half, wanted));
        }
        // Fewer rows than `xs` has positions: `T - TC - 1` is no negative number.
        let short = xs_dims[seq]
            .clone()
            .sub(rows.clone().add(Dim::lit(1)))
            .certainly_nonnegative();
        if short {
            return Err(position_error(
                op,
                position,
                expected.clone(),
                table.to_string(),
                Reason::Other(format!(
                    "dim -2: {rows} rows given, at least {} expected (`xs`'s positions)",
                    xs_dims[seq]
                )),
            ));
        }
    }
    Ok(TensorType::new(xs.dtypes.intersection(kernels), xs.shape))
}

/// `ops::rms_norm(xs, alpha, eps)` and `ops::layer_norm(xs, alpha, beta, eps)`, as candle-nn
/// 0.11 checks them: `xs` of floats, each of `tables` (`alpha`, `beta`) `[D]` for `xs`'s last
/// dim `D` and of `xs`'s dtype (the kernels take one). The result is `xs`'s type.
fn norm(op: &str, args: &[Arg], tables: &[&str]) -> Outcome {
    let xs = args
        .first()
        .map_or_else(TensorType::unknown, Arg::tensor_type);
    if let Verdict::Different(reason) = compare_dtypes(xs.dtypes, DTypeSet::FLOAT) {
        return Err(position_error(
            op,
            0,
            "xs: float[.., D]".to_string(),
            xs.to_string(),
            reason,
        ));
    }
    let last = xs.shape.dims().and_then(<[Dim]>::last);
    for (i, name) in tables.iter().enumerate() {
        let position = i + 1;
        let Some(Arg::Tensor(table)) = args.get(position) else {
            continue;
        };
        of_dtype_of_xs(op, position, name, &xs, table)?;
        let expected = format!("{name}: {}[D] (`xs`'s last dim)", xs.dtypes);
        if rank_differs(table.shape.rank(), 1) {
            return Err(position_error(
                op,
                position,
                expected,
                table.to_string(),
                Reason::Rank {
                    found: table.shape.rank(),
                    expected: Rank::Exactly(1),
                },
            ));
        }
        if let (Some([size]), Some(last)) = (table.shape.dims(), last)
            && size.compare(last).is_different()
        {
            return Err(position_error(
                op,
                position,
                expected,
                table.to_string(),
                Reason::Dim {
                    axis: Axis::Front(0),
                    found: size.clone(),
                    expected: last.clone(),
                },
            ));
        }
    }
    Ok(TensorType::new(
        xs.dtypes.intersection(DTypeSet::FLOAT),
        xs.shape,
    ))
}

/// The table `name` at `position` of a candle-nn op whose kernels take one dtype: `xs`'s.
fn of_dtype_of_xs(
    op: &str,
    position: usize,
    name: &str,
    xs: &TensorType,
    table: &TensorType,
) -> Result<(), Box<Mismatch>> {
    match compare_dtypes(table.dtypes, xs.dtypes) {
        Verdict::Different(reason) => Err(Box::new(Mismatch {
            help: same_dtype_help(xs.dtypes, "xs", table.dtypes),
            ..*position_error(
                op,
                position,
                format!("{name}: {}[..] (the dtype of `xs`)", xs.dtypes),
                table.to_string(),
                reason,
            )
        })),
        _ => Ok(()),
    }
}

/// Whether a tensor of `rank` certainly has another rank than `wanted`.
fn rank_differs(rank: Rank, wanted: usize) -> bool {
    match rank {
        Rank::Exactly(r) => r != wanted,
        Rank::AtLeast(r) => r > wanted,
    }
}

/// `softmax(xs, dim)`, `log_softmax(xs, dim)`: `xs`'s type; `dim` must be in its rank.
fn along_dim(op: &str, args: &[Arg]) -> Outcome {
    let xs = args
        .first()
        .map_or_else(TensorType::unknown, Arg::tensor_type);
    resolve(op, &xs, args, 1)?;
    Ok(xs)
}

/// The sizes a shape argument (`(b, 1, d)`, `n`) stands for, unknown where not integers.
fn sizes(arg: &Arg) -> Option<Vec<Dim>> {
    match arg {
        Arg::Int(dim) => Some(vec![dim.clone()]),
        Arg::Tuple(items) => Some(items.iter().map(Arg::size).collect()),
        _ => None,
    }
}

fn position_error(
    op: &str,
    position: usize,
    expected: String,
    found: String,
    reason: Reason,
) -> Box<Mismatch> {
    Box::new(Mismatch {
        op: op.to_string(),
        argument: Argument::Position(position),
        expected,
        found,
        reason,
        help: None,
    })
}

/// Where `args[position]`, a dim index, lands in `tensor`: `None` when unknown; a mismatch
/// when candle's `to_index` certainly fails (`DimOutOfRange`).
fn resolve(
    op: &str,
    tensor: &TensorType,
    args: &[Arg],
    position: usize,
) -> Result<Option<Axis>, Box<Mismatch>> {
    let Some(index) = args.get(position).and_then(Arg::dim_index) else {
        return Ok(None);
    };
    match tensor.shape.resolve(index) {
        Resolved::At(axis) => Ok(Some(axis)),
        Resolved::Unknown => Ok(None),
        Resolved::OutOfRange { rank } => Err(position_error(
            op,
            position,
            format!("dim: a dim of `{tensor}`"),
            index.to_string(),
            Reason::DimIndex { index, rank },
        )),
    }
}

/// The shape with the dims at `a` and `b` swapped; unknown if either place is unknown.
fn swapped(shape: &Shape, a: Option<Axis>, b: Option<Axis>) -> Shape {
    match (a, b) {
        (Some(a), Some(b)) => {
            let (da, db) = (shape.get(a), shape.get(b));
            shape.clone().with_dim(a, db).with_dim(b, da)
        }
        _ => Shape::unknown(),
    }
}

/// The shape with the dims at `axes` removed, in an order that keeps the others' places.
fn without_axes(shape: &Shape, mut axes: Vec<Axis>) -> Shape {
    axes.sort_by_key(|axis| match axis {
        Axis::Front(i) => (0, usize::MAX - i),
        Axis::Back(k) => (1, usize::MAX - k),
    });
    let mut shape = shape.clone();
    for axis in axes {
        shape = shape.without_dim(axis);
    }
    shape
}

/// A shape, from what is known of two that must be equal.
fn merged(a: &Shape, b: &Shape) -> Shape {
    if a.is_fully_known() || !b.is_fully_known() {
        a.clone()
    } else {
        b.clone()
    }
}

struct Call<'a> {
    op: String,
    receiver: &'a TensorType,
    args: &'a [Arg],
    /// The facts in force where the call is (none for the engine's own tables).
    facts: &'a Facts,
}

impl Call<'_> {
    fn unknown_shape(&self) -> Outcome {
        Ok(self.receiver.with_shape(Shape::unknown()))
    }

    fn arg_error(
        &self,
        position: usize,
        expected: String,
        found: &TensorType,
        reason: Reason,
    ) -> Box<Mismatch> {
        position_error(&self.op, position, expected, found.to_string(), reason)
    }

    /// The ids (the first argument) of an indexing op: candle's `index_select`, `gather` and
    /// `embedding` take u8, u32 or i64 ids on every backend, and fail for any other dtype.
    fn check_ids(&self) -> Result<(), Box<Mismatch>> {
        match self.args.first() {
            Some(Arg::Tensor(ids)) => check_ids(&self.op, Argument::Position(0), "ids", ids),
            _ => Ok(()),
        }
    }

    fn resolve(&self, position: usize) -> Result<Option<Axis>, Box<Mismatch>> {
        resolve(&self.op, self.receiver, self.args, position)
    }

    /// A rank below `min` is candle's `UnexpectedNumberOfDims` or a shape mismatch.
    fn require_rank(
        &self,
        argument: Argument,
        tensor: &TensorType,
        min: usize,
        expected: &str,
    ) -> Result<(), Box<Mismatch>> {
        match tensor.shape.rank() {
            Rank::Exactly(rank) if rank < min => Err(Box::new(Mismatch {
                op: self.op.clone(),
                argument,
                expected: expected.to_string(),
                found: tensor.to_string(),
                reason: Reason::Rank {
                    found: Rank::Exactly(rank),
                    expected: Rank::AtLeast(min),
                },
                help: None,
            })),
            _ => Ok(()),
        }
    }

    fn dtypes_with(&self, position: usize, other: &TensorType) -> Result<DTypeSet, Box<Mismatch>> {
        match compare_dtypes(other.dtypes, self.receiver.dtypes) {
            Verdict::Different(reason) => Err(Box::new(Mismatch {
                help: same_dtype_help(self.receiver.dtypes, "self", other.dtypes),
                ..*self.arg_error(
                    position,
                    format!("rhs: {}[..] (the dtype of `self`)", self.receiver.dtypes),
                    other,
                    reason,
                )
            })),
            _ => Ok(self.receiver.dtypes.intersection(other.dtypes)),
        }
    }

    /// `add`, `sub`, `mul`, `div`, `maximum`, `minimum`, comparisons: candle's
    /// `same_shape_binary_op` and its dtype check.
    fn same_shape(&self, out: Option<DTypeSet>) -> Outcome {
        let rhs = match self.args.first() {
            Some(Arg::Tensor(rhs)) => rhs,
            // A scalar, or a value the caller does not know (which can only be a tensor or a
            // scalar): the result, where there is one, has the receiver's shape and dtype.
            _ => {
                return Ok(TensorType::new(
                    out.unwrap_or(self.receiver.dtypes),
                    self.receiver.shape.clone(),
                ));
            }
        };
        if let Verdict::Different(reason) = rhs.shape.compare(&self.receiver.shape) {
            return Err(self.arg_error(
                0,
                format!("rhs: {} (the shape of `self`)", self.receiver),
                rhs,
                reason,
            ));
        }
        let dtypes = self.dtypes_with(0, rhs)?;
        Ok(TensorType::new(
            out.unwrap_or(dtypes),
            merged(&self.receiver.shape, &rhs.shape),
        ))
    }

    /// `broadcast_add` and the other `broadcast_*` ops: candle's `broadcast_shape_binary_op`.
    /// A value the caller does not know is a tensor of any shape (the methods take
    /// `&Tensor`): the result has at least the receiver's rank, and its dtype.
    fn broadcast(&self, out: Option<DTypeSet>) -> Outcome {
        let unknown = TensorType::unknown();
        let rhs = match self.args.first() {
            Some(Arg::Tensor(rhs)) => rhs,
            _ => &unknown,
        };
        let shape = self
            .receiver
            .shape
            .broadcast(&rhs.shape)
            .map_err(|reason| {
                self.arg_error(
                    0,
                    format!(
                        "rhs: a shape that broadcasts with `{}`",
                        self.receiver.shape
                    ),
                    rhs,
                    reason,
                )
            })?;
        let dtypes = self.dtypes_with(0, rhs)?;
        Ok(TensorType::new(out.unwrap_or(dtypes), shape))
    }

    /// `matmul` (equal ranks, equal batch element counts) and `broadcast_matmul` (batch dims
    /// broadcast); both need rank 2 or more and `self`'s last dim equal to `rhs`'s second last.
    fn matmul(&self, broadcast: bool) -> Outcome {
        let Some(Arg::Tensor(rhs)) = self.args.first() else {
            return Ok(TensorType::unknown());
        };
        let lhs = self.receiver;
        self.require_rank(Argument::Receiver, lhs, 2, "self: _[.., M, K]")?;
        self.require_rank(Argument::Position(0), rhs, 2, "rhs: _[.., K, N]")?;
        if let (Rank::Exactly(a), Rank::Exactly(b), false) =
            (lhs.shape.rank(), rhs.shape.rank(), broadcast)
            && a != b
        {
            return Err(self.arg_error(
                0,
                format!("rhs: {}[..] of rank {a} (the rank of `self`)", lhs.dtypes),
                rhs,
                Reason::Rank {
                    found: Rank::Exactly(b),
                    expected: Rank::Exactly(a),
                },
            ));
        }
        let k = lhs.shape.from_end(1).unwrap_or_default();
        if let Some(k2) = rhs.shape.from_end(2)
            && k2.compare(&k).is_different()
        {
            let transposable = rhs
                .shape
                .from_end(1)
                .is_some_and(|n| n.compare(&k) == Verdict::Equal);
            return Err(Box::new(Mismatch {
                help: transposable.then_some(Help::Transpose),
                ..*self.arg_error(
                    0,
                    format!("rhs: {}[.., {k}, _]", lhs.dtypes),
                    rhs,
                    Reason::Dim {
                        axis: Axis::Back(2),
                        found: k2,
                        expected: k,
                    },
                )
            }));
        }
        let dtypes = self.dtypes_with(0, rhs)?;
        let n = rhs.shape.from_end(1).unwrap_or_default();
        let shape = if broadcast {
            let (a, b) = (lhs.shape.without_last(2), rhs.shape.without_last(2));
            let batch = a.broadcast(&b).map_err(|reason| {
                self.arg_error(
                    0,
                    format!("rhs: batch dims that broadcast with `{a}`"),
                    rhs,
                    reason,
                )
            })?;
            let m = lhs.shape.from_end(2).unwrap_or_default();
            batch.appended(m).appended(n)
        } else {
            if let (Some(a), Some(b)) = (lhs.shape.dims(), rhs.shape.dims()) {
                let batch = |dims: &[Dim]| Dim::product(&dims[..dims.len().saturating_sub(2)]);
                let (pa, pb) = (batch(a), batch(b));
                if pb.compare(&pa).is_different() {
                    return Err(self.arg_error(
                        0,
                        format!("rhs: batch dims of {pa} elements (those of `self`)"),
                        rhs,
                        Reason::Other(format!("batch dims of {pb} elements given, {pa} expected")),
                    ));
                }
            }
            match lhs.shape.from_end(1) {
                Some(_) => lhs.shape.clone().with_dim(Axis::Back(1), n),
                // `[a, b, ..]`: the run may be empty (then `b` is `K`, and the result `[a, n]`),
                // so only the dims before the last known one stay certain.
                None => {
                    let front = lhs.shape.front();
                    let kept = front[..front.len().saturating_sub(1)].to_vec();
                    Shape::with_run(kept, Run::anonymous(), vec![n])
                }
            }
        };
        Ok(TensorType::new(dtypes, shape))
    }

    /// `t()`: rank 2 or more (`UnexpectedNumberOfDims`), the last two dims swapped.
    fn t(&self) -> Outcome {
        self.require_rank(Argument::Receiver, self.receiver, 2, "self: _[.., M, N]")?;
        let shape = &self.receiver.shape;
        let known = |k| shape.from_end(k).map(|_| Axis::Back(k));
        Ok(self.receiver.with_shape(swapped(shape, known(1), known(2))))
    }

    fn transpose(&self) -> Outcome {
        let (a, b) = (self.resolve(0)?, self.resolve(1)?);
        if a.is_some() && a == b {
            return Ok(self.receiver.clone());
        }
        Ok(self
            .receiver
            .with_shape(swapped(&self.receiver.shape, a, b)))
    }

    /// `permute(dims)`: a permutation of `0..rank`, or candle bails.
    fn permute(&self) -> Outcome {
        let Some(Arg::Tuple(items)) = self.args.first() else {
            return self.unknown_shape();
        };
        let Some(dims) = self.receiver.shape.dims() else {
            // An input whose dims are not known that passes has the permutation's rank (candle
            // checks the permutation's length against the rank).
            let order: Option<Vec<usize>> = items
                .iter()
                .map(|item| match item.dim_index()? {
                    DimIndex::Index(i) => Some(i),
                    DimIndex::FromEnd(_) => None,
                })
                .collect();
            return match (order, self.receiver.shape.rank()) {
                (Some(order), Rank::AtLeast(least))
                    if least <= order.len() && (0..order.len()).all(|i| order.contains(&i)) =>
                {
                    Ok(self
                        .receiver
                        .with_shape(Shape::new(vec![Dim::Unknown; order.len()])))
                }
                _ => self.unknown_shape(),
            };
        };
        let mut order = Vec::new();
        for item in items {
            let Some(index) = item.dim_index() else {
                return self.unknown_shape();
            };
            match self.receiver.shape.resolve(index) {
                Resolved::At(Axis::Front(i)) => order.push(i),
                Resolved::OutOfRange { rank } => {
                    return Err(position_error(
                        &self.op,
                        0,
                        format!("dims: a permutation of the dims of `{}`", self.receiver),
                        index.to_string(),
                        Reason::DimIndex { index, rank },
                    ));
                }
                _ => return self.unknown_shape(),
            }
        }
        let is_permutation =
            order.len() == dims.len() && (0..dims.len()).all(|i| order.contains(&i));
        if !is_permutation {
            return Err(position_error(
                &self.op,
                0,
                format!("dims: a permutation of 0..{}", dims.len()),
                format!("{order:?}"),
                Reason::Other(format!(
                    "{order:?} is not a permutation of the {} dims",
                    dims.len()
                )),
            ));
        }
        Ok(self
            .receiver
            .with_shape(Shape::new(order.iter().map(|&i| dims[i].clone()).collect())))
    }

    /// `reshape(shape)`: the same element count (`ShapeMismatchBinaryOp`); a `()` hole is the
    /// element count divided by the other dims.
    fn reshape(&self) -> Outcome {
        let items = match self.args.first() {
            Some(Arg::Tuple(items)) => items.clone(),
            Some(arg @ Arg::Int(_)) => vec![arg.clone()],
            _ => return self.unknown_shape(),
        };
        let is_hole = |arg: &Arg| matches!(arg, Arg::Tuple(inner) if inner.is_empty());
        let holes = items.iter().filter(|arg| is_hole(arg)).count();
        if holes > 1 {
            return self.unknown_shape();
        }
        let count = self.receiver.shape.elem_count();
        let known: Vec<Dim> = items
            .iter()
            .filter(|arg| !is_hole(arg))
            .map(Arg::size)
            .collect();
        let asked = Dim::product(&known);
        let shape_text = || {
            let texts: Vec<String> = items
                .iter()
                .map(|arg| {
                    if is_hole(arg) {
                        "()".to_string()
                    } else {
                        arg.size().to_string()
                    }
                })
                .collect();
            format!("({})", texts.join(", "))
        };
        let count_error = |reason| {
            position_error(
                &self.op,
                0,
                format!("shape: {count} elements (those of `{}`)", self.receiver),
                shape_text(),
                reason,
            )
        };
        if holes == 0 {
            if asked.compare(&count).is_different() {
                return Err(count_error(Reason::ElementCount {
                    found: count.clone(),
                    expected: asked,
                }));
            }
            return Ok(self.receiver.with_shape(Shape::new(known)));
        }
        if let (Some(c), Some(a)) = (count.as_constant(), asked.as_constant())
            && (a == 0 || c % a != 0)
        {
            return Err(count_error(Reason::Other(format!(
                "the tensor's {c} elements do not divide into rows of {a}"
            ))));
        }
        let hole = count.div(asked);
        let dims = items
            .iter()
            .map(|arg| {
                if is_hole(arg) {
                    hole.clone()
                } else {
                    arg.size()
                }
            })
            .collect();
        Ok(self.receiver.with_shape(Shape::new(dims)))
    }

    /// `flatten(start, end)` and its forms: `start` and `end` are the positions of the
    /// arguments holding them, `None` for "the first" and "the last" dim.
    fn flatten(&self, start: Option<usize>, end: Option<usize>) -> Outcome {
        let Some(dims) = self.receiver.shape.dims() else {
            return self.unknown_shape();
        };
        if dims.is_empty() {
            return Ok(self.receiver.with_shape(Shape::literal(&[1])));
        }
        let index =
            |position: Option<usize>, default: usize| -> Result<Option<usize>, Box<Mismatch>> {
                match position {
                    None => Ok(Some(default)),
                    Some(position) => Ok(match self.resolve(position)? {
                        Some(Axis::Front(i)) => Some(i),
                        _ => None,
                    }),
                }
            };
        let (Some(start), Some(end)) = (index(start, 0)?, index(end, dims.len() - 1)?) else {
            return self.unknown_shape();
        };
        if start >= end {
            return Ok(self.receiver.clone());
        }
        let mut flat = dims[..start].to_vec();
        flat.push(Dim::product(&dims[start..=end]));
        flat.extend_from_slice(&dims[end + 1..]);
        Ok(self.receiver.with_shape(Shape::new(flat)))
    }

    /// `squeeze(dim)`: removes the dim if it is 1, else returns the tensor unchanged (PyTorch's
    /// semantics, which candle follows).
    fn squeeze(&self) -> Outcome {
        let Some(axis) = self.resolve(0)? else {
            return self.unknown_shape();
        };
        let shape = &self.receiver.shape;
        match shape.get(axis).compare_one() {
            Verdict::Equal => Ok(self.receiver.with_shape(shape.clone().without_dim(axis))),
            Verdict::Different(()) => Ok(self.receiver.clone()),
            Verdict::Possible => self.unknown_shape(),
        }
    }

    /// `unsqueeze(dim)`: `dim` may be the rank (candle's `to_index_plus_one`).
    fn unsqueeze(&self) -> Outcome {
        let Some(index) = self.args.first().and_then(Arg::dim_index) else {
            return self.unknown_shape();
        };
        match self.receiver.shape.clone().inserted(index, Dim::lit(1)) {
            Ok(shape) => Ok(self.receiver.with_shape(shape)),
            Err(rank) => Err(position_error(
                &self.op,
                0,
                format!("dim: a place in `{}`", self.receiver),
                index.to_string(),
                Reason::DimIndex { index, rank },
            )),
        }
    }

    /// `narrow(dim, start, len)`: `start + len` within the dim (`NarrowInvalidArgs`).
    fn narrow(&self) -> Outcome {
        let Some(axis) = self.resolve(0)? else {
            return self.unknown_shape();
        };
        let size = self.receiver.shape.get(axis);
        let (start, len) = (
            self.args.get(1).map_or(Dim::Unknown, Arg::size),
            self.args.get(2).map_or(Dim::Unknown, Arg::size),
        );
        let end = start.add(len.clone());
        // Past the end by the normal form (`N + 1` of `N`) or by the facts (`T` of `P` where
        // `T > P`).
        let within = Relation::new(end.clone(), Cmp::Le, size.clone());
        if self.facts.decide(&within) == Some(false) {
            return Err(position_error(
                &self.op,
                2,
                format!("len: at most {size} - start"),
                len.to_string(),
                Reason::Narrow { axis, end, size },
            ));
        }
        Ok(self
            .receiver
            .with_shape(self.receiver.shape.clone().with_dim(axis, len)))
    }

    /// `pad_with_zeros(dim, left, right)`: the dim grows by `left + right`. candle gives the
    /// tensor back as it is, before it reads `dim`, where both pads are 0: a `dim` past the
    /// rank fails only where the pads are certainly not both 0.
    fn pad(&self) -> Outcome {
        let (left, right) = (
            self.args.get(1).map_or(Dim::Unknown, Arg::size),
            self.args.get(2).map_or(Dim::Unknown, Arg::size),
        );
        let padding = left.clone().add(right.clone());
        let axis = match (padding.compare(&Dim::lit(0)), self.resolve(0)) {
            (Verdict::Equal, _) => return Ok(self.receiver.clone()),
            (_, Ok(Some(axis))) => axis,
            (_, Ok(None)) => return self.unknown_shape(),
            (Verdict::Different(()), Err(mismatch)) => return Err(mismatch),
            (Verdict::Possible, Err(_)) => return self.unknown_shape(),
        };
        let size = self.receiver.shape.get(axis).add(left).add(right);
        Ok(self
            .receiver
            .with_shape(self.receiver.shape.clone().with_dim(axis, size)))
    }

    /// `index_select(ids, dim)`: the dim becomes the number of ids (1-D).
    fn index_select(&self) -> Outcome {
        let Some(axis) = self.resolve(1)? else {
            return self.unknown_shape();
        };
        let count = match self.args.first() {
            Some(Arg::Tensor(ids)) => match ids.shape.dims() {
                Some([n]) => n.clone(),
                _ => Dim::Unknown,
            },
            _ => Dim::Unknown,
        };
        Ok(self
            .receiver
            .with_shape(self.receiver.shape.clone().with_dim(axis, count)))
    }

    /// `i(index)` of candle's `IndexOp`: from the first dim on, an integer removes its dim, a
    /// range narrows it (`..` keeps it); the dims past the index's items stay.
    fn index(&self) -> Outcome {
        let items = match self.args.first() {
            Some(Arg::Tuple(items)) => items.clone(),
            Some(item @ (Arg::Int(_) | Arg::Range(..))) => vec![item.clone()],
            _ => return self.unknown_shape(),
        };
        let shape = &self.receiver.shape;
        if items.len() > shape.front().len() {
            // More items than dims: candle narrows a dim past the rank (or reads its size),
            // and fails.
            if shape.run().is_none() {
                let dims = vec!["_"; items.len()].join(", ");
                let expected = format!("self: _[{dims}, ..]");
                self.require_rank(Argument::Receiver, self.receiver, items.len(), &expected)
                    .map_err(|mut mismatch| {
                        mismatch.help = Some(Help::AtMostItems {
                            rank: shape.front().len(),
                        });
                        mismatch
                    })?;
            }
            return self.unknown_shape();
        }
        let mut front = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let size = shape.front()[i].clone();
            match item {
                // candle narrows to `index..index + 1`: past the dim's end where `index` is at
                // least its size (`NarrowInvalidArgs`).
                Arg::Int(_) => {
                    let end = item.size().add(Dim::lit(1));
                    let within = Relation::new(end.clone(), Cmp::Le, size.clone());
                    if self.facts.decide(&within) == Some(false) {
                        let last = size.clone().sub(Dim::lit(1));
                        let mut mismatch = position_error(
                            &self.op,
                            0,
                            format!("index: below {size} on dim {i}"),
                            item.size().to_string(),
                            Reason::Narrow {
                                axis: Axis::Front(i),
                                end,
                                size,
                            },
                        );
                        mismatch.help = Some(Help::LastIndex {
                            dim: i,
                            last: last.to_string(),
                        });
                        return Err(mismatch);
                    }
                }
                // candle narrows `start..end` (`narrow(start, end - start)`): an end certainly
                // past the dim's size, where the start is certainly not past the end, fails.
                Arg::Range(start, Some(end))
                    if self
                        .facts
                        .decide(&Relation::new(end.clone(), Cmp::Le, size.clone()))
                        == Some(false)
                        && start.as_ref().is_none_or(|start| {
                            self.facts
                                .decide(&Relation::new(start.clone(), Cmp::Le, end.clone()))
                                == Some(true)
                        }) =>
                {
                    return Err(position_error(
                        &self.op,
                        0,
                        format!("index: a range within {size} on dim {i}"),
                        end.to_string(),
                        Reason::Narrow {
                            axis: Axis::Front(i),
                            end: end.clone(),
                            size,
                        },
                    ));
                }
                // candle narrows to `end - start` (0 where the start is past the end): exact
                // from the start of the dim or to its end, and between two numbers.
                Arg::Range(start, end) => front.push(match (start, end) {
                    (None, None) => size,
                    (None, Some(end)) => end.clone(),
                    (Some(start), None) => size.sub(start.clone()),
                    (Some(start), Some(end)) => match (start.as_literal(), end.as_literal()) {
                        (Some(s), Some(e)) => Dim::lit(e.saturating_sub(s)),
                        // `end - start` where the start is certainly not past the end.
                        _ if self.facts.decide(&Relation::new(
                            start.clone(),
                            Cmp::Le,
                            end.clone(),
                        )) == Some(true) =>
                        {
                            end.clone().sub(start.clone())
                        }
                        _ => Dim::Unknown,
                    },
                }),
                _ => return self.unknown_shape(),
            }
        }
        let rest = &shape.front()[items.len()..];
        front.extend(rest.iter().cloned());
        let shape = match shape.run() {
            Some(run) => Shape::with_run(front, run.clone(), shape.back().to_vec()),
            None => Shape::new(front),
        };
        Ok(self.receiver.with_shape(shape))
    }

    /// `repeat(shape)`: candle repeats the leading dims (after padding the rank with 1s to the
    /// number of repeats), each by its count.
    fn repeat(&self) -> Outcome {
        let (Some(dims), Some(counts)) = (
            self.receiver.shape.dims(),
            self.args.first().and_then(sizes),
        ) else {
            return self.unknown_shape();
        };
        let mut dims = dims.to_vec();
        while dims.len() < counts.len() {
            dims.insert(0, Dim::lit(1));
        }
        for (dim, count) in dims.iter_mut().zip(counts) {
            *dim = dim.clone().mul(count);
        }
        Ok(self.receiver.with_shape(Shape::new(dims)))
    }

    /// `avg_pool2d(k)`, `max_pool2d(k)` (stride `k`), and their `_with_stride(k, s)` on `[B, C,
    /// H, W]`: `[B, C, (H - k) / s + 1, (W - k) / s + 1]` rounded down (candle's sizes), where
    /// the kernel and the stride are numbers.
    fn pool2d(&self, with_stride: bool) -> Outcome {
        let Some([b, c, h, w]) = self.receiver.shape.dims() else {
            return Ok(self.receiver.with_shape(Shape::new(vec![Dim::Unknown; 4])));
        };
        let pair = |arg: Option<&Arg>| match arg {
            Some(Arg::Tuple(items)) if items.len() == 2 => (items[0].size(), items[1].size()),
            Some(arg) => (arg.size(), arg.size()),
            None => (Dim::Unknown, Dim::Unknown),
        };
        let (kh, kw) = pair(self.args.first());
        let (sh, sw) = if with_stride {
            pair(self.args.get(1))
        } else {
            (kh.clone(), kw.clone())
        };
        let pooled = |size: &Dim, k: Dim, stride: Dim| match (k.as_literal(), stride.as_literal()) {
            (Some(k), Some(stride)) if k > 0 && stride > 0 => match size.as_literal() {
                Some(size) if size >= k => Dim::lit((size - k) / stride + 1),
                Some(_) => Dim::Unknown,
                None => size
                    .clone()
                    .sub(Dim::lit(k))
                    .div(Dim::lit(stride))
                    .add(Dim::lit(1)),
            },
            _ => Dim::Unknown,
        };
        Ok(self.receiver.with_shape(Shape::new(vec![
            b.clone(),
            c.clone(),
            pooled(h, kh, sh),
            pooled(w, kw, sw),
        ])))
    }

    /// `interpolate1d(l)`, `upsample_nearest2d(h, w)`, `upsample_bilinear2d(h, w, ..)`:
    /// `[N, C, ..]` of the input (candle's `dims3`/`dims4`, a rank error otherwise) with the
    /// `spatial` sizes given.
    fn resize(&self, spatial: usize) -> Outcome {
        let rank = spatial + 2;
        let differs = match self.receiver.shape.rank() {
            Rank::Exactly(r) => r != rank,
            Rank::AtLeast(r) => r > rank,
        };
        if differs {
            return Err(Box::new(Mismatch {
                op: self.op.clone(),
                argument: Argument::Receiver,
                expected: format!("self: a tensor of rank {rank}"),
                found: self.receiver.to_string(),
                reason: Reason::Rank {
                    found: self.receiver.shape.rank(),
                    expected: Rank::Exactly(rank),
                },
                help: None,
            }));
        }
        let mut dims = match self.receiver.shape.dims() {
            Some(dims) => dims[..2].to_vec(),
            None => vec![Dim::Unknown; 2],
        };
        dims.extend((0..spatial).map(|at| self.args.get(at).map_or(Dim::Unknown, Arg::size)));
        Ok(self.receiver.with_shape(Shape::new(dims)))
    }

    /// `conv1d(kernel, ..)`, `conv2d(kernel, ..)`: `[B, COUT, ..]` of the input's batch and the
    /// kernel's out channels.
    fn conv(&self, rank: usize) -> Outcome {
        let batch = match self.receiver.shape.dims() {
            Some(dims) if dims.len() == rank => dims[0].clone(),
            _ => Dim::Unknown,
        };
        // The kernel's out channels where there is one group (the last argument is 1);
        // with groups, candle gives `COUT / G` per group.
        let one_group = self.args.get(4).and_then(|g| g.size().as_literal()) == Some(1);
        let channels = match self.args.first() {
            Some(Arg::Tensor(kernel)) if one_group => match kernel.shape.dims() {
                Some(dims) if dims.len() == rank => dims[0].clone(),
                _ => Dim::Unknown,
            },
            _ => Dim::Unknown,
        };
        let mut dims = vec![batch, channels];
        dims.resize(rank, Dim::Unknown);
        Ok(self.receiver.with_shape(Shape::new(dims)))
    }

    /// `get(i)`: the first dim removed (a scalar stays a scalar).
    fn get(&self) -> Outcome {
        let shape = &self.receiver.shape;
        if shape.rank() == Rank::Exactly(0) {
            return Ok(self.receiver.clone());
        }
        if shape.front().is_empty() {
            return self.unknown_shape();
        }
        let (size, i) = (
            shape.get(Axis::Front(0)),
            self.args.first().map_or(Dim::Unknown, Arg::size),
        );
        if size
            .clone()
            .sub(i.clone())
            .as_constant()
            .is_some_and(|room| room <= 0)
        {
            return Err(position_error(
                &self.op,
                0,
                format!("i: an index below {size}"),
                i.to_string(),
                Reason::Narrow {
                    axis: Axis::Front(0),
                    end: i.add(Dim::lit(1)),
                    size,
                },
            ));
        }
        Ok(self
            .receiver
            .with_shape(shape.clone().without_dim(Axis::Front(0))))
    }

    /// Reductions over one dim (`max`, `argmax`) or several (`sum`, `mean`, which take a
    /// tuple): `keepdim` sets them to 1, otherwise they are removed.
    fn reduce(&self, several: bool, keepdim: bool, out: Option<DType>) -> Outcome {
        let dtypes = out.map_or(self.receiver.dtypes, DTypeSet::only);
        let with = |shape| Ok(TensorType::new(dtypes, shape));
        // Dims not known: with `keepdim`, the rank stays (each dim itself or 1).
        let unknown_dims = || match keepdim {
            true => with(self.receiver.shape.map_dims(&mut |_| Dim::Unknown)),
            false => with(Shape::unknown()),
        };
        let positions: Vec<Arg> = match self.args.first() {
            Some(Arg::Tuple(items)) if several => items.clone(),
            Some(arg @ (Arg::Int(_) | Arg::Dim(_))) => vec![arg.clone()],
            _ => return unknown_dims(),
        };
        let mut axes = Vec::new();
        for (i, arg) in positions.iter().enumerate() {
            let Some(index) = arg.dim_index() else {
                return unknown_dims();
            };
            match self.receiver.shape.resolve(index) {
                Resolved::At(axis) => axes.push(axis),
                Resolved::Unknown => return unknown_dims(),
                Resolved::OutOfRange { rank } => {
                    return Err(position_error(
                        &self.op,
                        0,
                        format!("dims: dims of `{}`", self.receiver),
                        if several && positions.len() > 1 {
                            format!("{index} (item {i})")
                        } else {
                            index.to_string()
                        },
                        Reason::DimIndex { index, rank },
                    ));
                }
            }
        }
        if let Some(axis) = axes
            .iter()
            .enumerate()
            .find_map(|(i, a)| axes[..i].contains(a).then_some(*a))
        {
            return Err(position_error(
                &self.op,
                0,
                "dims: distinct dims".to_string(),
                axis.to_string(),
                Reason::Other(format!(
                    "{axis} is named twice (candle's `DuplicateDimIndex`)"
                )),
            ));
        }
        let shape = &self.receiver.shape;
        if keepdim {
            with(
                axes.into_iter()
                    .fold(shape.clone(), |s, axis| s.with_dim(axis, Dim::lit(1))),
            )
        } else {
            with(without_axes(shape, axes))
        }
    }

    /// `broadcast_as(shape)`: right-aligned, each dim of `self` equal to the target's or 1,
    /// no more dims than the target (candle's `Layout::broadcast_as`).
    fn broadcast_as(&self) -> Outcome {
        // Another tensor's whole shape (`mask.shape()` of a `[*S]`): what it gives, unchecked.
        if let Some(Arg::Shape(target)) = self.args.first() {
            return Ok(self.receiver.with_shape(target.clone()));
        }
        let Some(target) = self.args.first().and_then(sizes) else {
            return self.unknown_shape();
        };
        let shape = &self.receiver.shape;
        let target_text = Shape::new(target.clone()).to_string();
        let error = |reason| {
            position_error(
                &self.op,
                0,
                format!("shape: one `{}` broadcasts to", self.receiver),
                target_text.clone(),
                reason,
            )
        };
        let (Rank::Exactly(rank) | Rank::AtLeast(rank)) = shape.rank();
        if rank > target.len() {
            return Err(error(Reason::Other(format!(
                "{} does not broadcast to rank {}",
                shape.rank(),
                target.len()
            ))));
        }
        for k in 1..=target.len() {
            let Some(dim) = shape.from_end(k) else { break };
            let wanted = &target[target.len() - k];
            if dim.compare(wanted).is_different() && dim.compare_one().is_different() {
                return Err(error(Reason::Broadcast {
                    axis: Axis::Back(k),
                    found: wanted.clone(),
                    expected: dim,
                }));
            }
        }
        Ok(self.receiver.with_shape(Shape::new(target)))
    }

    /// `mask.where_cond(on_true, on_false)`: both of the mask's shape and of one dtype.
    fn where_cond(&self) -> Outcome {
        let (Some(Arg::Tensor(on_true)), Some(Arg::Tensor(on_false))) =
            (self.args.first(), self.args.get(1))
        else {
            return Ok(TensorType::unknown());
        };
        for (position, name, branch) in [(0, "on_true", on_true), (1, "on_false", on_false)] {
            if let Verdict::Different(reason) = branch.shape.compare(&self.receiver.shape) {
                return Err(self.arg_error(
                    position,
                    format!("{name}: _{} (the shape of the mask)", self.receiver.shape),
                    branch,
                    reason,
                ));
            }
        }
        if let Verdict::Different(reason) = compare_dtypes(on_false.dtypes, on_true.dtypes) {
            return Err(Box::new(Mismatch {
                help: same_dtype_help(on_true.dtypes, "on_true", on_false.dtypes),
                ..*self.arg_error(
                    1,
                    format!("on_false: {}[..] (the dtype of `on_true`)", on_true.dtypes),
                    on_false,
                    reason,
                )
            }));
        }
        Ok(TensorType::new(
            on_true.dtypes.intersection(on_false.dtypes),
            merged(&self.receiver.shape, &on_true.shape),
        ))
    }
}

/// `Tensor::cat(tensors, dim)`: one rank and dtype, equal dims except along `dim`, which adds
/// up (candle's `ShapeMismatchCat`, `DTypeMismatchBinaryOp`).
fn cat(args: &[Arg]) -> Outcome {
    const OP: &str = "Tensor::cat";
    let tensors = match args.first() {
        Some(Arg::Tensors(tensors)) => tensors,
        // `count` parts of one type: along `dim`, `count` times the part's size (unknown
        // where the count is); the other dims are the part's.
        // None at all: candle fails (`OpRequiresAtLeastOneTensor`), so nothing follows.
        Some(Arg::TensorsEach(_, count)) if count.as_literal() == Some(0) => {
            return Ok(TensorType::unknown());
        }
        Some(Arg::TensorsEach(part, count)) => {
            let shape = match resolve(OP, part, args, 1).ok().flatten() {
                Some(axis) if part.shape.dims().is_some() => {
                    let total = match count.as_literal() {
                        // candle returns a lone tensor as it is.
                        Some(1) => part.shape.get(axis),
                        _ => count.clone().mul(part.shape.get(axis)),
                    };
                    part.shape.clone().with_dim(axis, total)
                }
                _ => Shape::unknown(),
            };
            return Ok(TensorType::new(part.dtypes, shape));
        }
        _ => return Ok(TensorType::unknown()),
    };
    let first = match tensors.as_slice() {
        [] => return Ok(TensorType::unknown()),
        // candle returns a lone tensor before it looks at `dim`.
        [only] => return Ok(only.clone()),
        [first, ..] => first,
    };
    let axis = resolve(OP, first, args, 1)?;
    let mut dtypes = first.dtypes;
    for (i, tensor) in tensors.iter().enumerate().skip(1) {
        let pattern = match axis {
            Some(axis) => first.shape.clone().with_dim(axis, Dim::Unknown),
            None => first.shape.clone(),
        };
        let error = |reason| {
            let along = match axis {
                Some(_) => "the dims of `tensors[0]` but along `dim`",
                None => "the rank of `tensors[0]`",
            };
            let expected = match axis {
                Some(_) => TensorType::new(first.dtypes, pattern.clone()),
                None => TensorType::new(first.dtypes, rank_pattern(&pattern)),
            };
            Box::new(Mismatch {
                op: OP.to_string(),
                argument: Argument::Element(0, i),
                expected: format!("tensors[{i}]: {expected} ({along})"),
                found: tensor.to_string(),
                reason,
                help: None,
            })
        };
        let verdict = match axis {
            Some(_) => tensor.shape.compare(&pattern),
            // Only the rank can be compared when the place of `dim` is unknown.
            None => tensor.shape.compare(&rank_pattern(&pattern)),
        };
        if let Verdict::Different(reason) = verdict {
            return Err(error(reason));
        }
        if let Verdict::Different(reason) = compare_dtypes(tensor.dtypes, first.dtypes) {
            return Err(error(reason));
        }
        dtypes = dtypes.intersection(tensor.dtypes);
    }
    // Every tensor has the reference's rank and its dims off `dim` (candle checks both), so
    // one tensor of known rank gives them, whichever it is; `dim`'s size is the sum.
    let reference = tensors.iter().find(|t| t.shape.dims().is_some());
    let shape = match reference {
        Some(reference) => match resolve(OP, reference, args, 1).ok().flatten() {
            Some(axis) => {
                let total = tensors.iter().fold(Dim::lit(0), |sum, t| {
                    if t.shape.dims().is_some() {
                        sum.add(t.shape.get(axis))
                    } else {
                        Dim::Unknown
                    }
                });
                // A dim off `dim` one tensor leaves unknown is another's (`cat(&[prev_k, &k],
                // 2)` with a cache stated `[B, _, P, _]` keeps `k`'s heads and head size).
                let mut shape = reference.shape.clone();
                if let Some(dims) = reference.shape.dims() {
                    for (position, dim) in dims.iter().enumerate() {
                        let at = Axis::Front(position);
                        if !dim.is_unknown() || at == axis {
                            continue;
                        }
                        let known = tensors.iter().find_map(|t| {
                            let other = t.shape.dims()?.get(position)?;
                            (t.shape.dims()?.len() == dims.len() && !other.is_unknown())
                                .then(|| other.clone())
                        });
                        if let Some(known) = known {
                            shape = shape.with_dim(at, known);
                        }
                    }
                }
                shape.with_dim(axis, total)
            }
            None => Shape::unknown(),
        },
        None => Shape::unknown(),
    };
    Ok(TensorType::new(dtypes, shape))
}

/// A shape of the same rank with every dim unknown.
fn rank_pattern(shape: &Shape) -> Shape {
    let unknown = |dims: &[Dim]| vec![Dim::Unknown; dims.len()];
    match shape.run() {
        None => Shape::new(unknown(shape.front())),
        Some(_) => Shape::with_run(
            unknown(shape.front()),
            Run::anonymous(),
            unknown(shape.back()),
        ),
    }
}

/// `Tensor::stack(tensors, dim)`: tensors of one shape and dtype, a new dim of their count
/// inserted at `dim` (`to_index_plus_one`).
fn stack(args: &[Arg]) -> Outcome {
    const OP: &str = "Tensor::stack";
    let tensors = match args.first() {
        Some(Arg::Tensors(tensors)) => tensors,
        Some(Arg::TensorsEach(_, count)) if count.as_literal() == Some(0) => {
            return Ok(TensorType::unknown());
        }
        // `count` of them (unknown where not known): a new dim of that size.
        Some(Arg::TensorsEach(part, count)) => {
            let shape = args
                .get(1)
                .and_then(Arg::dim_index)
                .and_then(|index| part.shape.clone().inserted(index, count.clone()).ok())
                .unwrap_or_else(Shape::unknown);
            return Ok(TensorType::new(part.dtypes, shape));
        }
        _ => return Ok(TensorType::unknown()),
    };
    let Some(first) = tensors.first() else {
        return Ok(TensorType::unknown());
    };
    let mut dtypes = first.dtypes;
    for (i, tensor) in tensors.iter().enumerate().skip(1) {
        let verdict = tensor
            .shape
            .compare(&first.shape)
            .and(|| compare_dtypes(tensor.dtypes, first.dtypes));
        if let Verdict::Different(reason) = verdict {
            return Err(Box::new(Mismatch {
                op: OP.to_string(),
                argument: Argument::Element(0, i),
                expected: format!("tensors[{i}]: {first} (the type of `tensors[0]`)"),
                found: tensor.to_string(),
                reason,
                help: None,
            }));
        }
        dtypes = dtypes.intersection(tensor.dtypes);
    }
    let count = Dim::from(tensors.len());
    let shape = match args.get(1).and_then(Arg::dim_index) {
        Some(index) => first.shape.clone().inserted(index, count).map_err(|rank| {
            position_error(
                OP,
                1,
                format!("dim: a place in `{first}`"),
                index.to_string(),
                Reason::DimIndex { index, rank },
            )
        })?,
        None => Shape::unknown(),
    };
    Ok(TensorType::new(dtypes, shape))
}
