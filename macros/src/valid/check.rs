//! The rules that stand alone: options, subjects, returns, dim names, dtypes and literals, each
//! a `check_*` function that puts its errors into the accumulator. `lower.rs` calls them as it
//! meets the clauses.

use std::collections::HashSet;

use proc_macro2::Span;
use quote::quote;
use syn::ext::IdentExt;
use syn::{Ident, Type};

use super::{Context, Dims};
use crate::ctxt::Ctxt;
use crate::item::{Output, is_sequence_type, plainly_not_a_tensor};
use crate::parse::literal_vs_f64;
use crate::plan::Failure;
use crate::suggest::did_you_mean;
use crate::syntax::{
    self, DimExpr, FieldStep, OptionClause, SpanRange, Subject, TensorClause, TensorSpec,
    code_text, kw, quoted,
};
use candle_contracts_shapes::dtype::{DType, DTypeSet, Kind};

pub(super) fn check_options(
    cx_errors: &Ctxt,
    cx: &Context,
    options: &[&OptionClause],
) -> (Option<(Failure, Span)>, bool, bool) {
    let mut on_violation = None;
    let mut same_device = true;
    let mut static_checks = true;
    let mut seen: HashSet<String> = HashSet::new();
    for option in options {
        let name = option.name.to_string();
        let value = option.value.to_string();
        if !seen.insert(name.clone()) {
            cx_errors.error_at(
                option.name.span(),
                format!("option `{name}` is given twice"),
            );
            continue;
        }
        match name.as_str() {
            kw::ON_VIOLATION => {
                let failure = match value.as_str() {
                    kw::PANIC => Failure::Panic,
                    kw::ERROR => Failure::Error,
                    _ => {
                        cx_errors.error_at(
                            option.value.span(),
                            format!(
                                "`{}` is {}, not `{value}`",
                                kw::ON_VIOLATION,
                                quoted(&[kw::PANIC, kw::ERROR], "or")
                            ),
                        );
                        continue;
                    }
                };
                if cx.inline {
                    cx_errors.error_at(
                        option.name.span(),
                        "`check!` always returns a `Result`; `on_violation` belongs in \
                         `#[contract]`",
                    );
                } else if failure == Failure::Error && !cx.output.returns_result() {
                    let returns = match cx.output.ty() {
                        Some(ty) => format!("returns `{}`", code_text(&quote!(#ty))),
                        None => "returns nothing".to_string(),
                    };
                    cx_errors.error_at(
                        option.value.span(),
                        format!(
                            "`on_violation = error` needs a function that returns a `Result`, \
                             but `{}` {returns}; use `on_violation = panic`",
                            cx.function
                        ),
                    );
                }
                on_violation = Some((failure, option.value.span()));
            }
            kw::STATIC => match value.as_str() {
                "true" => static_checks = true,
                "false" => static_checks = false,
                _ => cx_errors.error_at(
                    option.value.span(),
                    format!("`static` is `true` or `false`, not `{value}`"),
                ),
            },
            // Set by an enclosing `#[contract]` that has analysed the body already.
            kw::CHECKED_BY_SCOPE => static_checks = false,
            kw::SAME_DEVICE => match value.as_str() {
                "true" => same_device = true,
                "false" => same_device = false,
                _ => cx_errors.error_at(
                    option.value.span(),
                    format!("`same_device` is `true` or `false`, not `{value}`"),
                ),
            },
            _ => {
                let hint = did_you_mean(&name, kw::OPTIONS.iter().copied())
                    .map(|s| format!("did you mean `{s}`?"))
                    .or_else(|| {
                        matches!(value.as_str(), "true" | "false").then(|| {
                            format!(
                                "a `bool` field's value is written from `self`: \
                                 `self.{name} = {value}`"
                            )
                        })
                    })
                    .unwrap_or_else(syntax::options_list);
                cx_errors.error_at(
                    option.name.span(),
                    format!("unknown option `{name}`; {hint}"),
                );
            }
        }
    }
    (on_violation, same_device, static_checks)
}

pub(super) fn check_subjects(cx_errors: &Ctxt, cx: &Context, tensors: &[&TensorClause]) {
    let mut seen: HashSet<String> = HashSet::new();
    for clause in tensors {
        let key = clause.subject.to_string();
        let subject_span = match &clause.subject {
            Subject::Param(ident) | Subject::Field { root: ident, .. } => ident.span(),
            Subject::Return(span, _) | Subject::Derived { span, .. } => span.first,
        };
        if !seen.insert(key.clone()) {
            cx_errors.error_at(
                subject_span,
                format!("duplicate clause for `{key}`: write all its rules in one clause"),
            );
            continue;
        }
        match &clause.subject {
            Subject::Param(ident) if !cx.inline => {
                check_param_subject(cx_errors, cx, ident, clause.spec.sequence.is_some())
            }
            Subject::Param(_) => {}
            Subject::Field { root, steps } if root == "self" => {
                check_path(cx_errors, cx, steps);
                if !cx.inline && !cx.has_receiver {
                    cx_errors.error_at(
                        root.span(),
                        format!(
                            "`{key}` needs a method with a `self` receiver, and `{}` has none",
                            cx.function
                        ),
                    );
                }
            }
            Subject::Field { root, steps } => {
                if !cx.inline && cx.param(&root.unraw().to_string()).is_none() {
                    check_param_subject(cx_errors, cx, root, false);
                }
                check_path(cx_errors, cx, steps);
            }
            Subject::Derived { span, .. } => {
                if cx.inline {
                    cx_errors.error_at(
                        *span,
                        "`check!` takes no derived subjects: compute the tensor into a variable \
                         first and name it in `check!`",
                    );
                } else if matches!(cx.output, Output::BoxedFuture { .. }) {
                    cx_errors.error_at(*span, boxed_future_message(cx, "derived subject"));
                }
            }
            Subject::Return(span, _) => {
                if cx.inline {
                    cx_errors.error_at(
                        *span,
                        "`check!` has no return value; `return` clauses belong in `#[contract]`",
                    );
                } else if matches!(cx.output, Output::BoxedFuture { .. }) {
                    cx_errors.error_at(
                        *span,
                        format!(
                            "`return` clause, but `{}` returns a boxed future (as \
                             `#[async_trait]` makes of an `async fn`), whose value the guard \
                             cannot see; check the value with `check!` where it is awaited",
                            cx.function
                        ),
                    );
                } else if matches!(cx.output, Output::Unit) {
                    cx_errors.error_at(
                        *span,
                        format!("`return` clause, but `{}` returns nothing", cx.function),
                    );
                }
            }
        }
    }
}

/// `return` and `return.0` do not mix, and each tuple element has one clause.
pub(super) fn check_returns(cx_errors: &Ctxt, cx: &Context, ordered: &[&TensorClause]) {
    let returns: Vec<(SpanRange, Option<u32>)> = ordered
        .iter()
        .filter_map(|c| match c.subject {
            Subject::Return(span, index) => Some((span, index)),
            _ => None,
        })
        .collect();
    if returns.iter().any(|(_, i)| i.is_none()) && returns.iter().any(|(_, i)| i.is_some()) {
        let span = returns.iter().find(|(_, i)| i.is_some()).map(|(s, _)| *s);
        cx_errors.error_at(
            span.unwrap_or_else(|| Span::call_site().into()),
            "`return` and `return.0` in one contract: a `return` clause checks a tensor, \
             `return.0`, `return.1`, ... the elements of a returned tuple; use one form",
        );
    }
    // `return.0` on a function that returns a tensor: rustc would only say that `Tensor`'s
    // field `0` is private.
    if let Some(tensor) = returned_tensor_type(&cx.output)
        && let Some((span, Some(index))) = returns.iter().find(|(_, i)| i.is_some())
    {
        cx_errors.error_at(
            *span,
            format!(
                "`return.{index}` names an element of a returned tuple, but `{}` returns \
                 `{tensor}`, not a tuple: write `return: ...`",
                cx.function
            ),
        );
    }
}

/// The name of the returned value's type when it is certainly a tensor (`Tensor`, `&Tensor`,
/// `Result<Tensor>`), not a tuple.
fn returned_tensor_type(output: &Output) -> Option<String> {
    let ty = match output {
        Output::Result(ty) => {
            let Type::Path(path) = ty else { return None };
            let syn::PathArguments::AngleBracketed(args) = &path.path.segments.last()?.arguments
            else {
                return None;
            };
            match args.args.first()? {
                syn::GenericArgument::Type(ty) => ty,
                _ => return None,
            }
        }
        Output::Other(ty) => ty,
        Output::Unit | Output::BoxedFuture { .. } => return None,
    };
    // An `Option<Tensor>` is checked when it is `Some`; its element is no tuple either.
    let optional = matches!(ty, Type::Path(path) if path.path.segments.last().is_some_and(|s| s.ident == "Option"));
    let ty = match ty {
        Type::Path(path)
            if path
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "Option") =>
        {
            let syn::PathArguments::AngleBracketed(args) = &path.path.segments.last()?.arguments
            else {
                return None;
            };
            match args.args.first()? {
                syn::GenericArgument::Type(ty) => ty,
                _ => return None,
            }
        }
        ty => ty,
    };
    let ty = match ty {
        Type::Reference(reference) => &*reference.elem,
        ty => ty,
    };
    match ty {
        Type::Path(path)
            if path.qself.is_none()
                && path.path.segments.last().is_some_and(|s| {
                    s.ident == "Tensor" && matches!(s.arguments, syn::PathArguments::None)
                }) =>
        {
            Some(if optional { "Option<Tensor>" } else { "Tensor" }.to_string())
        }
        _ => None,
    }
}

pub(super) fn check_param_subject(cx_errors: &Ctxt, cx: &Context, ident: &Ident, sequence: bool) {
    let name = ident.unraw().to_string();
    match cx.param(&name) {
        Some(param) => {
            if is_sequence_type(&param.ty) {
                if !sequence {
                    let ty = &param.ty;
                    cx_errors.error_at(
                        ident.span(),
                        format!(
                            "`{name}` is a `{}`, a sequence of tensors: write its clause as a \
                             sequence, each element's spec and their count, e.g. \
                             `{name}: [f32[E]; N]`",
                            code_text(&quote!(#ty))
                        ),
                    );
                }
            } else if sequence {
                // `Elements` is not implemented: rustc's error names the type.
            } else if let Some(ty) = plainly_not_a_tensor(&param.ty) {
                cx_errors.error_at(
                    ident.span(),
                    format!(
                        "`{name}` is a `{ty}`, not a tensor: a tensor clause names a `Tensor`, \
                         `&Tensor` or `Option<&Tensor>` parameter; to bound values by `{name}`, \
                         write `in 0..{name}` on a tensor's clause"
                    ),
                );
            }
        }
        None => {
            let names: Vec<String> = cx
                .params
                .iter()
                .map(|p| p.ident.unraw().to_string())
                .collect();
            let message = match did_you_mean(&name, names.iter().map(String::as_str)) {
                Some(suggestion) => {
                    format!("unknown parameter `{name}`; did you mean `{suggestion}`?")
                }
                None if names.is_empty() => format!(
                    "unknown parameter `{name}`: `{}` has no named parameters",
                    cx.function
                ),
                None => format!(
                    "unknown parameter `{name}`: the parameters of `{}` are {}",
                    cx.function,
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            cx_errors.error_at(ident.span(), message);
        }
    }
}

/// After `[..]`, a path goes on with fields and methods only; an index by name is a
/// parameter's (in `check!`, any integer in scope).
fn check_path(cx_errors: &Ctxt, cx: &Context, steps: &[FieldStep]) {
    let mut all = false;
    for step in steps {
        match step {
            FieldStep::All(span) if all => cx_errors.error_at(
                *span,
                "a contract path can take every element (`[..]`) once; check nested sequences \
                 with `check!` in a loop",
            ),
            FieldStep::All(_) => all = true,
            FieldStep::Optional(span) | FieldStep::Index(_, span) if all => cx_errors.error_at(
                *span,
                "after `[..]` a contract path goes on with fields and methods only; an element \
                 that is `None` is skipped already, so `self.layers[..].bias()` needs no `?`",
            ),
            FieldStep::IndexBy(ident) if all => cx_errors.error_at(
                ident.span(),
                "after `[..]` a contract path goes on with fields and methods only",
            ),
            FieldStep::IndexBy(ident)
                if !cx.inline && cx.param(&ident.unraw().to_string()).is_none() =>
            {
                cx_errors.error_at(
                    ident.span(),
                    format!(
                        "`{}` is no parameter of `{}`: a contract path indexes with a number \
                         (`[0]`), an integer parameter (`[block_idx]`) or `[..]`",
                        ident.unraw(),
                        cx.function
                    ),
                )
            }
            _ => {}
        }
    }
}

pub(super) fn check_dim_name(cx_errors: &Ctxt, cx: &Context, ident: &Ident) {
    let name = ident.unraw().to_string();
    if kw::RESERVED.contains(&name.as_str()) {
        cx_errors.error_at(
            ident.span(),
            format!("`{name}` is a reserved word of the contract language and cannot name a dim"),
        );
    } else if !cx.inline && cx.param(&name).is_some() {
        cx_errors.error_at(
            ident.span(),
            format!(
                "`{name}` is a parameter of `{}`: to use its value as this dim, write \
                 `{{{name}}}`; for a dim of its own, give it another name (by convention \
                 UPPER_CASE, e.g. `N`)",
                cx.function
            ),
        );
    }
}

/// The slots of the runtime's evaluator stack (`eval_ops` in the runtime's `dims.rs`).
const EXPR_STACK: usize = 16;

/// How many stack slots the postfix program of `expr` needs: the right operand is evaluated
/// while the left one's value waits on the stack.
fn stack_depth(expr: &DimExpr) -> usize {
    match expr {
        DimExpr::Lit(_) | DimExpr::Name(_) | DimExpr::Block { .. } => 1,
        DimExpr::Paren(inner) => stack_depth(inner),
        DimExpr::Binary { lhs, rhs, .. } => stack_depth(lhs).max(stack_depth(rhs) + 1),
    }
}

/// Refuses an expression the runtime's evaluator cannot hold, at the operator whose right
/// operand needs the 17th slot.
pub(super) fn check_stack_depth(cx_errors: &Ctxt, expr: &DimExpr) {
    let depth = stack_depth(expr);
    if depth <= EXPR_STACK {
        return;
    }
    let mut node = expr;
    loop {
        match node {
            DimExpr::Paren(inner) => node = inner,
            DimExpr::Binary {
                lhs, op_span, rhs, ..
            } => {
                if stack_depth(lhs) > EXPR_STACK {
                    node = lhs;
                } else if stack_depth(rhs) >= EXPR_STACK {
                    if stack_depth(rhs) > EXPR_STACK {
                        node = rhs;
                        continue;
                    }
                    cx_errors.error_at(
                        *op_span,
                        format!(
                            "dim expression `{expr}` is nested too deeply: it needs {depth} \
                             stack slots, at most {EXPR_STACK}; move the parentheses to the \
                             left (`(a + b) + c`) or compute a part in a braced value"
                        ),
                    );
                    return;
                } else {
                    return;
                }
            }
            DimExpr::Lit(_) | DimExpr::Name(_) | DimExpr::Block { .. } => return,
        }
    }
}

/// What the dtypes of a clause allow, for the literal checks.
pub(super) struct DTypeFacts {
    pub(super) members: Vec<DType>,
    pub(super) text: String,
}

impl DTypeFacts {
    pub(super) fn all_int(&self) -> bool {
        !self.members.is_empty() && self.members.iter().all(|d| d.kind() != Kind::Float)
    }
    pub(super) fn all_unsigned(&self) -> bool {
        !self.members.is_empty() && self.members.iter().all(|d| d.kind() == Kind::Unsigned)
    }
    pub(super) fn all_float(&self) -> bool {
        !self.members.is_empty() && self.members.iter().all(|d| d.kind() == Kind::Float)
    }
}

pub(super) fn check_dtypes(cx_errors: &Ctxt, spec: &TensorSpec) -> (Vec<&'static str>, DTypeFacts) {
    let mut constants = Vec::new();
    let mut members: Vec<DType> = Vec::new();
    for name in &spec.dtypes {
        match (
            DTypeSet::from_name(&name.name),
            DTypeSet::constant(&name.name),
        ) {
            (Some(dtypes), Some(constant)) => {
                constants.push(constant);
                for d in dtypes.iter() {
                    if !members.contains(&d) {
                        members.push(d);
                    }
                }
            }
            _ => {
                let hint = match did_you_mean(&name.name, DTypeSet::names()) {
                    Some(s) => format!("; did you mean `{s}`?"),
                    None => format!(
                        "; candle's dtypes are {} and the families `float`, `int`, `uint`, \
                         `sint`, `_`",
                        DType::ALL
                            .iter()
                            .map(|d| format!("`{}`", d.name()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                cx_errors.error_at(name.span, format!("unknown dtype `{}`{hint}", name.name));
            }
        }
    }
    let text = spec
        .dtypes
        .iter()
        .map(|d| d.name.as_str())
        .collect::<Vec<_>>()
        .join(" | ");
    (constants, DTypeFacts { members, text })
}

/// The message for a derived subject or mask expression on an `#[async_trait]` method.
pub(super) fn boxed_future_message(cx: &Context, what: &str) -> String {
    format!(
        "`{}` returns a boxed future (as `#[async_trait]` makes of an `async fn`): a {what} is \
         computed before the body, where its `?` has no `Result` to return; check it with \
         `check!` inside the body",
        cx.function
    )
}

/// An input's dim expression or bound cannot wait for the return value: its dims must be bound
/// by inputs.
pub(super) fn check_bound_by_inputs(cx_errors: &Ctxt, dims: &Dims, used: &[Ident]) {
    for ident in used {
        if dims
            .get(&ident.unraw().to_string())
            .is_some_and(|i| !i.bound_by_input)
        {
            cx_errors.error_at(
                ident.span(),
                format!(
                    "`{ident}` is bound only by the `return` clause, after the body runs, so an \
                     input cannot be checked against it; bind it in an input, or write the \
                     return clause in terms of the inputs' dims"
                ),
            );
        }
    }
}

/// Whether a parameter type names a tensor (to reject it as a numeric bound).
pub(super) fn looks_like_tensor(ty: &syn::Type) -> bool {
    let text = quote!(#ty).to_string();
    text.split(|c: char| !c.is_alphanumeric() && c != '_')
        .any(|word| word == "Tensor" || word == "Var")
}

/// A single float value (`in 0.5`, `ignore 0.1`) is compared exactly, so one that no dtype of
/// the clause holds (`0.1`, or `16777217.0` on f32) would match nothing: an error, never a rule
/// that silently checks nothing.
pub(super) fn inexact_single_value(
    cx_errors: &Ctxt,
    facts: &DTypeFacts,
    value: f64,
    text: &str,
    span: SpanRange,
    what: &str,
) {
    let exact = literal_vs_f64(text, value).is_eq();
    let whole = whole_literal(text);
    let held = facts.members.iter().any(|d| match d.kind() {
        Kind::Float => exact && d.holds_exactly(value),
        _ => exact && whole && d.can_hold(Some(value), Some(value), true),
    });
    if held || facts.members.is_empty() {
        return;
    }
    let message = if whole && facts.members.iter().any(|d| d.kind() != Kind::Float) {
        format!(
            "`{text}` as {what} is a whole number no f64 holds exactly: write it as an integer \
             (`{}`) for the integer dtypes of `{}`",
            text.split(['.', 'e', 'E']).next().unwrap_or(text),
            facts.text
        )
    } else {
        let nearest = if exact {
            String::new()
        } else {
            format!(" (the nearest f64 is {})", readable_f64(value))
        };
        format!(
            "`{text}` as {what} matches nothing: values are compared exactly, and no dtype of \
             `{}` holds {text}{nearest}; write a range around it, or a value a float holds \
             exactly (such as `0.5`)",
            facts.text,
        )
    };
    cx_errors.error_at(span, message);
}

/// Whether a float literal's digits spell a whole number (`3.0`, `1e3`, `-2.`).
fn whole_literal(text: &str) -> bool {
    let digits = text.trim_start_matches('-');
    let (mantissa, exponent) = match digits.find(['e', 'E']) {
        Some(at) => (&digits[..at], digits[at + 1..].parse::<i64>().unwrap_or(0)),
        None => (digits, 0),
    };
    let fraction = mantissa.split_once('.').map_or("", |(_, f)| f);
    let significant = fraction.trim_end_matches('0').len() as i64;
    significant <= exponent.max(0)
        && (exponent >= 0 || mantissa.chars().all(|c| c == '0' || c == '.'))
}

/// An f64 for a message: enough digits to see it is not the literal (0.10000000000000000555),
/// in scientific notation where that would be a row of zeros or a long integer.
fn readable_f64(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude != 0.0 && !(1e-4..1e16).contains(&magnitude) {
        format!("{value:.20e}")
    } else {
        format!("{value:.20}")
    }
}

/// A float literal beyond 2^53 that no f64 holds, on a clause with integer dtypes: integers
/// there lie between the f64s, so the bound would not compare as written.
pub(super) fn inexact_large_bound(
    cx_errors: &Ctxt,
    facts: &DTypeFacts,
    value: f64,
    text: &str,
    span: SpanRange,
) {
    if value.abs() >= 9_007_199_254_740_992.0
        && literal_vs_f64(text, value).is_ne()
        && facts.members.iter().any(|d| d.kind() != Kind::Float)
    {
        cx_errors.error_at(
            span,
            format!(
                "`{text}` is no f64 and lies beyond 2^53, where not every integer is an f64: on \
                 `{}`, which has integer dtypes, write the bound as an integer",
                facts.text
            ),
        );
    }
}
