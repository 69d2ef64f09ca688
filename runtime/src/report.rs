//! Every `Violation` and its text: what was expected, what was found, the detail lines, the
//! values a rule used and the help line. The layers below hand over facts (a dim that differs,
//! a scan's statistics); this module words them.

use candle_core::{Device, Tensor};

use crate::dims::ArithmeticError;
use crate::error::{
    Counts, DimBinding, DimSource, Rule, Value, Violation, format_dims, format_run, join_elided,
};
use crate::help;
use crate::rule::{Details, Ignore, Num, Resolved, Used};
use crate::spec::{ClauseSpec, CmpOp, ContractSpec, DimSpec, RelationSpec, Subject, ValueSpec};

/// `cpu`, `cuda:0`, `metal:0`.
pub(crate) fn device_name(device: &Device) -> String {
    match device.location() {
        candle_core::DeviceLocation::Cpu => "cpu".to_string(),
        candle_core::DeviceLocation::Cuda { gpu_id } => format!("cuda:{gpu_id}"),
        candle_core::DeviceLocation::Metal { gpu_id } => format!("metal:{gpu_id}"),
    }
}

/// ` with N = 4 (bound by `x` dim 0), ...`, or nothing.
fn with_names(names: &[DimBinding]) -> String {
    if names.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = names.iter().map(ToString::to_string).collect();
    format!(" with {}", parts.join(", "))
}

fn of_clause(clause: &ClauseSpec, rule: Rule, expected: String, found: String) -> Violation {
    let mut violation = Violation::new(clause.subject, rule, expected, found);
    violation.note = clause.note;
    violation
}

/// A `self` field that is `None`, or an index past the end of its sequence.
pub(crate) fn missing(spec: &ContractSpec, clause: &ClauseSpec, past_the_end: bool) -> Violation {
    let found = if past_the_end {
        "past the end of its sequence"
    } else {
        "None"
    };
    of_clause(
        clause,
        Rule::Missing,
        format!(
            "{}{}",
            spec.text_of(clause.dtypes_span),
            spec.text_of(clause.shape_span)
        ),
        found.to_string(),
    )
}

/// A sequence with another number of elements than its count.
pub(crate) fn count(
    clause: &ClauseSpec,
    expected: usize,
    len: usize,
    bound: Vec<DimBinding>,
) -> Violation {
    let mut violation = of_clause(clause, Rule::Count, expected.to_string(), len.to_string());
    violation.bound_dims = bound;
    violation
}

/// A dtype the clause does not allow.
pub(crate) fn dtype(spec: &ContractSpec, clause: &ClauseSpec, tensor: &Tensor) -> Violation {
    let mut violation = of_clause(
        clause,
        Rule::DType,
        spec.text_of(clause.dtypes_span).to_string(),
        tensor.dtype().as_str().to_string(),
    );
    violation.help = help::for_dtype(clause, tensor);
    violation
}

/// What a dim of a shape stands for at this call, for the expected shape in a message.
pub(crate) enum Known<'a> {
    /// A named dim or expression with its value.
    Size(u64),
    /// A bound `*B` run.
    Run(&'a [usize]),
    /// Not bound (or not computable).
    Unknown,
}

/// The shape as written, followed by its bound values when it names any: `[B, P] = [4, 6]`.
pub(crate) fn expected_shape<'a>(
    spec: &ContractSpec,
    clause: &ClauseSpec,
    known: impl Fn(&DimSpec) -> Known<'a>,
) -> String {
    let literal_only = clause
        .shape
        .iter()
        .all(|d| matches!(d, DimSpec::Fixed(_) | DimSpec::Any | DimSpec::Rest));
    if literal_only {
        return spec.text_of(clause.shape_span).to_string();
    }
    let mut any_bound = false;
    let parts: Vec<String> = clause
        .shape
        .iter()
        .map(|dim| match (*dim, known(dim)) {
            (DimSpec::Fixed(n), _) => n.to_string(),
            (DimSpec::Any, _) => "_".to_string(),
            (DimSpec::Rest, _) => "..".to_string(),
            (_, Known::Size(value)) => {
                any_bound = true;
                value.to_string()
            }
            (_, Known::Run(dims)) => {
                any_bound = true;
                join_elided(dims)
            }
            (DimSpec::Named(id), Known::Unknown) => spec.dims[usize::from(id)].to_string(),
            (DimSpec::Run(id), Known::Unknown) => format!("*{}", spec.runs[usize::from(id)]),
            (DimSpec::Expr(expr), Known::Unknown) => spec.text_of(expr.text).to_string(),
        })
        .filter(|part| !part.is_empty())
        .collect();
    if any_bound {
        format!(
            "{} = [{}]",
            spec.text_of(clause.shape_span),
            join_elided(&parts)
        )
    } else {
        spec.text_of(clause.shape_span).to_string()
    }
}

/// Another number of dims than the shape has.
/// `fixed(id, size)`: whether a named dim of `size` agrees with its binding or constant, for
/// the help line (see `help::for_rank`).
pub(crate) fn rank(
    clause: &ClauseSpec,
    expected_shape: String,
    dims: &[usize],
    fixed: impl Fn(u16, usize) -> Option<bool>,
) -> Violation {
    let expected_rank = clause
        .shape
        .iter()
        .filter(|d| !matches!(d, DimSpec::Rest | DimSpec::Run(_)))
        .count();
    let variadic = expected_rank != clause.shape.len();
    let mut violation = of_clause(clause, Rule::Rank, expected_shape, format_dims(dims));
    violation.expected.push_str(&format!(
        " (rank {}, expected rank {}{})",
        dims.len(),
        if variadic { "at least " } else { "" },
        expected_rank
    ));
    violation.help = help::for_rank(clause, dims, fixed);
    violation
}

/// One dim (or run of dims) of a tensor that differs from its spec.
pub(crate) enum Mismatch {
    /// A literal size.
    Fixed {
        axis: usize,
        actual: usize,
        expected: usize,
    },
    /// A named dim bound elsewhere.
    Named {
        axis: usize,
        actual: usize,
        binding: DimBinding,
    },
    /// A `*B` run bound elsewhere.
    Run {
        from: usize,
        actual: Vec<usize>,
        name: &'static str,
        bound: Vec<usize>,
        bound_by: &'static str,
        bound_at: usize,
    },
    /// A dim expression with its value.
    Expr {
        axis: usize,
        actual: usize,
        text: &'static str,
        expected: u64,
        names: Vec<DimBinding>,
    },
}

/// A shape whose rank fits but whose dims differ.
pub(crate) fn shape(
    clause: &ClauseSpec,
    expected_shape: String,
    dims: &[usize],
    mismatches: Vec<Mismatch>,
    expected_sizes: Option<Vec<usize>>,
) -> Violation {
    let mut details = Vec::with_capacity(mismatches.len());
    let mut bound_dims = Vec::new();
    for mismatch in mismatches {
        match mismatch {
            Mismatch::Fixed {
                axis,
                actual,
                expected,
            } => details.push(format!("dim {axis} is {actual}, expected {expected}")),
            Mismatch::Named {
                axis,
                actual,
                binding,
            } => {
                details.push(format!("dim {axis} is {actual} but {binding}"));
                bound_dims.push(binding);
            }
            Mismatch::Run {
                from,
                actual,
                name,
                bound,
                bound_by,
                bound_at,
            } => {
                let end = from + actual.len();
                let mut detail = format!(
                    "dims {from}..{end} are {} but *{name} = {} (bound by `{bound_by}` dims \
                     {bound_at}..{})",
                    format_run(&actual),
                    format_run(&bound),
                    bound_at + bound.len(),
                );
                // A long run is elided: name the first dim that differs.
                if let Some(i) = actual.iter().zip(&bound).position(|(a, b)| a != b)
                    && actual.len().max(bound.len()) > 12
                {
                    detail.push_str(&format!(
                        "; dim {} is {}, expected {}",
                        from + i,
                        actual[i],
                        bound[i]
                    ));
                }
                details.push(detail);
            }
            Mismatch::Expr {
                axis,
                actual,
                text,
                expected,
                names,
            } => {
                // `{cfg.hidden} = 4` already says what a lone value is.
                let shown: Vec<DimBinding> =
                    names.iter().filter(|b| b.name != text).cloned().collect();
                details.push(format!(
                    "dim {axis} is {actual} but {text} = {expected}{}",
                    with_names(&shown)
                ));
                bound_dims.extend(names);
            }
        }
    }
    let mut violation = of_clause(clause, Rule::Shape, expected_shape, format_dims(dims));
    violation.help = help::for_shape(clause, dims, expected_sizes.as_deref(), &bound_dims);
    violation.details = details;
    violation.bound_dims = bound_dims;
    violation
}

/// A dim expression of a shape or count that has no value at this call (`N - 1` with `N = 0`).
pub(crate) fn dim_arithmetic(
    spec: &ContractSpec,
    clause: &ClauseSpec,
    axis: Option<usize>,
    text: &'static str,
    problem: ArithmeticError,
    names: Vec<DimBinding>,
) -> Violation {
    let place = match axis {
        Some(axis) => format!("dim {axis} of {}", spec.text_of(clause.shape_span)),
        None => "the count".to_string(),
    };
    let mut violation = of_clause(
        clause,
        Rule::DimArithmetic,
        format!("`{text}`"),
        format!("{place}: `{text}` {}", problem.text()),
    );
    if problem == ArithmeticError::BelowZero {
        violation.help = Some(format!(
            "`{text}` is a size, so it cannot be negative: the dims it uses are too small for \
             this call (an empty batch or sequence, or a dim smaller than the expression \
             assumes)"
        ));
    }
    violation.bound_dims = names;
    violation
}

/// The field of a flag's text (`self.multi_query` of `self.multi_query = true`); `None` for
/// a relation or a field naming a dim (`self.n_head = H`).
fn flag_field(text: &str) -> Option<&str> {
    let field = text
        .strip_suffix(" = true")
        .or_else(|| text.strip_suffix(" = false"))?;
    (!field.contains(['=', '<', '>'])).then_some(field)
}

/// A strided view where the clause says `contiguous`.
pub(crate) fn contiguous(clause: &ClauseSpec, tensor: &Tensor) -> Violation {
    let mut violation = of_clause(
        clause,
        Rule::Contiguous,
        "a contiguous layout".to_string(),
        format!(
            "stride {} for shape {}",
            format_dims(tensor.stride()),
            format_dims(tensor.dims())
        ),
    );
    violation.help = Some(
        "a transpose, narrow or broadcast made a strided view; call `.contiguous()?` before \
         passing it"
            .to_string(),
    );
    violation
}

/// A tensor on another device than the first checked tensor (`owner`).
pub(crate) fn device(
    clause: &ClauseSpec,
    tensor: &Tensor,
    expected: &Device,
    owner: &str,
) -> Violation {
    let mut violation = Violation::new(
        clause.subject,
        Rule::Device,
        format!("{} like `{owner}`", device_name(expected)),
        device_name(tensor.device()),
    );
    violation.help = Some(
        "move the tensors to one device first (`.to_device(&device)?`), or state \
         `same_device = false` in the contract"
            .to_string(),
    );
    violation
}

/// What is wrong with a `where` mask, so that its clause's value rules cannot be read under it.
pub(crate) enum MaskProblem<'a> {
    /// On another device than its subject.
    Device {
        mask: &'a Tensor,
        subject: &'a Tensor,
    },
    /// A packed dtype (`f4`, `f6`) whose values candle cannot read.
    Unreadable(&'a Tensor),
    /// Dims that do not broadcast to the subject's.
    Shape {
        mask: &'a [usize],
        dims: &'a [usize],
    },
}

/// A `where` mask that cannot be read under its clause's value rules.
pub(crate) fn mask(
    clause: &ClauseSpec,
    element: Option<usize>,
    mask_text: &'static str,
    problem: MaskProblem<'_>,
) -> Violation {
    let (expected, found, help) = match problem {
        MaskProblem::Device { mask, subject } => (
            format!("a mask on {}", device_name(subject.device())),
            format!(
                "mask `{mask_text}` is on {}, the tensor on {}",
                device_name(mask.device()),
                device_name(subject.device())
            ),
            "compute the mask on the tensor's device",
        ),
        MaskProblem::Unreadable(mask) => (
            "a mask of a readable dtype".to_string(),
            format!(
                "mask `{mask_text}` is {}, whose values candle cannot read",
                mask.dtype().as_str()
            ),
            "give the mask as u8 (0 and 1), an integer or a float dtype",
        ),
        MaskProblem::Shape { mask, dims } => (
            format!("a mask that broadcasts to {}", format_dims(dims)),
            format!(
                "mask `{mask_text}` of shape {} does not broadcast to the tensor's shape {}",
                format_dims(mask),
                format_dims(dims)
            ),
            "a mask has the tensor's shape, or dims of size 1 (or fewer leading dims) where it \
             broadcasts; an attention mask of [B, T] masks ids of [B, T]",
        ),
    };
    let mut violation = of_clause(clause, Rule::Mask, expected, found);
    violation.element = element;
    violation.mask = Some(mask_text);
    violation.help = Some(help.to_string());
    violation
}

/// Why a relation does not hold.
pub(crate) enum RelationFound {
    /// Both sides evaluated, and the comparison is false.
    Sides(i128, i128),
    /// A side could not be evaluated.
    Problem(ArithmeticError),
}

/// A relation between dims that does not hold.
pub(crate) fn relation(
    spec: &ContractSpec,
    relation: &'static RelationSpec,
    found: RelationFound,
    names: Vec<DimBinding>,
) -> Violation {
    let text = spec.text_of(relation.text);
    // `self.act_fn != Swiglu`, planned as `{is Swiglu} == 0` (a relation written `!=` is a
    // user's, between numbers).
    let activation = (relation.op == CmpOp::Eq)
        .then(|| text.strip_suffix(" != Swiglu"))
        .flatten();
    // `self.kv_cache?.0: .. else P = 0`, planned as `P == {0 where None}`.
    let absent = relation
        .binds
        .then(|| text.strip_suffix(" = 0")?.split_once(" else "))
        .flatten();
    let found = match found {
        // A field binding (`self.n = N`) is planned as `N == {self.n}`: told as written.
        RelationFound::Sides(lhs, rhs) if relation.binds && absent.is_none() => {
            format!("left side is {rhs}, right side is {lhs}")
        }
        RelationFound::Sides(lhs, rhs) => {
            let simple = |ops: &[crate::spec::ExprOp]| {
                matches!(
                    ops,
                    [crate::spec::ExprOp::Dim(_)] | [crate::spec::ExprOp::Lit(_)]
                )
            };
            // `self.multi_query = true`: a `bool` field, read as 0 or 1.
            if let Some(field) = flag_field(spec.text_of(relation.text)) {
                format!("`{field}` is {}", lhs != 0)
            } else if let Some(field) = activation {
                format!("`{field}` is `Swiglu`, which halves the last dim")
            } else if let Some((path, dim)) = absent {
                format!("`{path}` is `None`, and `{dim}` is {lhs}")
            } else if simple(relation.lhs) && simple(relation.rhs) {
                String::new()
            } else {
                format!("left side is {lhs}, right side is {rhs}")
            }
        }
        RelationFound::Problem(problem) => format!("cannot evaluate: {}", problem.text()),
    };
    let mut violation = Violation::new(
        Subject::Relation(spec.text_of(relation.text)),
        Rule::Relation,
        spec.text_of(relation.text).to_string(),
        found,
    );
    // A flag's or an activation's own value is the message; it binds no dim. An absent path's
    // 0 is said in the message, not as a value from scope.
    if flag_field(text).is_none() && activation.is_none() {
        violation.bound_dims = match absent {
            Some(_) => names
                .into_iter()
                .filter(|name| name.source != DimSource::Scope)
                .collect(),
            None => names,
        };
    }
    violation
}

/// A bound of an `in` pattern that could not be evaluated.
pub(crate) fn bound(
    clause: &ClauseSpec,
    element: Option<usize>,
    text: &str,
    reason: String,
) -> Violation {
    let mut violation = of_clause(clause, Rule::Bound, format!("`{text}`"), reason);
    violation.element = element;
    violation
}

/// A tensor whose values cannot be read: a packed dtype (`error` is `None`), or a device
/// that failed.
pub(crate) fn unreadable(
    spec: &ContractSpec,
    clause: &ClauseSpec,
    values: &ValueSpec,
    element: Option<usize>,
    tensor: &Tensor,
    error: Option<&candle_core::Error>,
) -> Violation {
    let found = match error {
        None => format!(
            "values of dtype {} cannot be read: candle stores it as packed bytes with no \
             element access",
            tensor.dtype().as_str()
        ),
        Some(error) => format!(
            "values could not be checked on {}: {error}",
            device_name(tensor.device())
        ),
    };
    let mut violation = of_clause(clause, Rule::Unreadable, expected_text(spec, values), found);
    violation.element = element;
    violation
}

/// The ignored values as written, with what they were at this call when written as
/// expressions: `-100`, or `{options.ignore_index} = -100`.
fn ignored_text(written: &str, resolved: &[Ignore]) -> String {
    let values: Vec<String> = resolved
        .iter()
        .map(|ignore| match ignore {
            Ignore::Value(Num::Int(v)) => v.to_string(),
            Ignore::Value(Num::Float(v) | Num::Inexact(v, _)) => v.to_string(),
            Ignore::Max => "MAX".to_string(),
        })
        .collect();
    let values = values.join(" | ");
    if values == written {
        values
    } else {
        format!("{written} = {values}")
    }
}

/// The rule as written: `0..C`, `0..=1 and finite`, `finite values`, with ignored values.
pub(crate) fn expected_text(spec: &ContractSpec, values: &ValueSpec) -> String {
    let ranges = spec.text_of(values.ranges_span);
    let mut text = match (values.ranges.is_empty(), values.finite, values.integral) {
        (false, false, false) => ranges.to_string(),
        (false, true, false) => format!("{ranges} and finite"),
        (false, _, true) => format!("whole numbers in {ranges}"),
        (true, _, true) => "whole numbers".to_string(),
        (true, true, false) => "finite values".to_string(),
        (true, false, false) => "any value".to_string(),
    };
    if !values.ignore.is_empty() {
        text.push_str(&format!(" (ignoring {})", spec.text_of(values.ignore_span)));
    }
    text
}

/// A value clause whose scan failed, with what it resolved its rule to.
pub(crate) struct ValueFailure<'a> {
    pub spec: &'a ContractSpec,
    pub clause: &'a ClauseSpec,
    pub values: &'a ValueSpec,
    pub element: Option<usize>,
    pub tensor: &'a Tensor,
    /// The clause's `where` mask, when one was given (`None` also for an absent `Option`).
    pub mask: Option<&'a Tensor>,
    pub rule: &'a Resolved,
    pub used: &'a Used,
    /// Whether a tensor with no usable element breaks the rule.
    pub needs_usable: bool,
}

/// The violations a failed scan stands for: out-of-range elements, all elements ignored, or both.
pub(crate) fn values(failure: &ValueFailure<'_>, details: &Details) -> Vec<Violation> {
    let ValueFailure {
        spec,
        clause,
        values,
        ..
    } = *failure;
    let counts = details.counts;
    // An absent mask (`None`) exempted nothing: the message says nothing of it.
    let mask = failure.mask.and(clause.mask).map(|m| spec.text_of(m.text));
    let mut out = Vec::new();
    if counts.violating > 0 {
        // A finite float that is in range but not whole broke `integral`.
        let fractional = matches!(
            details.first_value,
            Some(Value::Float(v, _))
                if v.is_finite() && v.fract() != 0.0 && failure.rule.in_ranges(v)
        );
        // NaN and ±inf break `finite` when the clause says it, else the range, else `integral`.
        let rule = if values.integral && fractional {
            Rule::Integral
        } else if values.ranges.is_empty() && values.finite {
            Rule::Finite
        } else if values.ranges.is_empty() {
            Rule::Integral
        } else {
            Rule::Range
        };
        let mut violation = of_clause(
            clause,
            rule,
            expected_text(spec, values),
            details
                .first_value
                .map(|v| v.to_string())
                .unwrap_or_default(),
        );
        violation.index = details.first_index.clone();
        violation.value = details.first_value;
        violation.counts = Some(counts);
        violation.observed = details.observed;
        violation.offending = details.offending.clone();
        violation.offending_complete = details.offending_complete;
        violation.bound_dims = failure.used.dims.clone();
        violation.bound_values = failure.used.values.clone();
        violation.mask = mask;
        violation.help = if rule == Rule::Integral && fractional {
            Some(help::for_fractions(clause))
        } else {
            help::for_values(
                clause,
                failure.rule,
                failure.tensor.dtype(),
                details,
                failure.used,
                mask.zip(failure.mask.map(Tensor::dtype)),
            )
        };
        out.push(violation);
    }
    let checked = counts.total.saturating_sub(counts.exempt);
    if failure.needs_usable && counts.ignored == checked {
        let found = match mask {
            _ if counts.total == 0 => "no elements at all; a mean over them is 0/0".to_string(),
            Some(mask) if checked == 0 => format!(
                "no checked elements: all {} are exempt where `{mask}` is 0; a mean over them \
                 is 0/0",
                counts.total
            ),
            Some(mask) => format!(
                "all {checked} checked elements are ignored values ({}; {} exempt where `{mask}` \
                 is 0); a mean over them is 0/0",
                ignored_text(spec.text_of(values.ignore_span), &failure.rule.ignore),
                counts.exempt
            ),
            None => format!(
                "all {} elements are ignored values ({}); a mean over them is 0/0",
                counts.total,
                ignored_text(spec.text_of(values.ignore_span), &failure.rule.ignore)
            ),
        };
        let mut violation = of_clause(clause, Rule::AllIgnored, expected_text(spec, values), found);
        violation.counts = Some(Counts {
            violating: checked,
            total: counts.total,
            nan: 0,
            ignored: counts.ignored,
            exempt: counts.exempt,
        });
        violation.mask = mask;
        violation.help = Some(format!(
            "skip batches with no usable `{}` before this call; a contract that expects \
             all-ignored batches says so with `allow_all`",
            clause.subject.name(),
        ));
        out.push(violation);
    }
    for violation in &mut out {
        violation.element = failure.element;
    }
    out
}
