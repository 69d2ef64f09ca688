//! Lowering: the plan built from the checked clauses. Dims are numbered, expressions become
//! postfix programs, values from scope become slots the expansion evaluates, and every part of
//! a clause becomes a span of the contract's text. The rules that need what this resolves are
//! reported where it meets them.

use std::collections::BTreeMap;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::Ident;
use syn::ext::IdentExt;

use super::check::{
    DTypeFacts, boxed_future_message, check_bound_by_inputs, check_dim_name, check_dtypes,
    check_options, check_param_subject, check_returns, check_stack_depth, check_subjects,
    inexact_large_bound, inexact_single_value, looks_like_tensor,
};
use super::{Context, DimInfo, Dims};
use crate::ctxt::Ctxt;
use crate::item::{Output, plainly_not_a_tensor};
use crate::parse::literal_vs_f64;
use crate::plan::{
    self, Access, AllowAll, BoundSpec, ClauseSpec, ContractText, DimExprSpec, DimSpec, ExprOp,
    IgnoreSpec, MaskAccess, Plan, RangeSpec, RelationSpec, RuntimeBound, Step, TextSpan, ValueSpec,
};
use crate::syntax::{
    self, ArithOp, BoundExpr, Clause, CmpOp, Constraint, Dim, DimExpr, FieldBinding, FieldFlag,
    FieldStep, IgnoreValue, NotSwiglu, OptionClause, Pattern, Relation, Subject, TensorClause,
    code_text, join, kw, quoted,
};

pub fn validate(clauses: &[Clause], cx: &Context, cx_errors: &Ctxt) -> Plan {
    let tensors: Vec<&TensorClause> = clauses
        .iter()
        .filter_map(|c| match c {
            Clause::Tensor(t) => Some(t),
            _ => None,
        })
        .collect();
    let relations: Vec<&Relation> = clauses
        .iter()
        .filter_map(|c| match c {
            Clause::Relation(r) => Some(r),
            _ => None,
        })
        .collect();
    let binds: Vec<&FieldBinding> = clauses
        .iter()
        .filter_map(|c| match c {
            Clause::Bind(b) => Some(b),
            _ => None,
        })
        .collect();
    let flags: Vec<&FieldFlag> = clauses
        .iter()
        .filter_map(|c| match c {
            Clause::Flag(f) => Some(f),
            _ => None,
        })
        .collect();
    let options: Vec<&OptionClause> = clauses
        .iter()
        .filter_map(|c| match c {
            Clause::Option(o) => Some(o),
            _ => None,
        })
        .collect();

    let (on_violation, same_device, static_checks) = check_options(cx_errors, cx, &options);
    let mut krate: Option<TokenStream> = None;
    for clause in clauses {
        if let Clause::Crate(option) = clause {
            let path = &option.path;
            let path_tokens = quote!(#path);
            // Joined contracts of a renamed crate each name it: the same path twice is one.
            if krate
                .as_ref()
                .is_some_and(|seen| seen.to_string() != path_tokens.to_string())
            {
                cx_errors.error_at(
                    option.keyword,
                    format!(
                        "option `{}` names two different paths; give it once",
                        kw::CRATE
                    ),
                );
            }
            krate = Some(path_tokens);
        }
    }
    check_subjects(cx_errors, cx, &tensors);

    // Inputs in the order written, the return clause last.
    let ordered: Vec<&TensorClause> = tensors
        .iter()
        .filter(|t| !matches!(t.subject, Subject::Return(..)))
        .chain(
            tensors
                .iter()
                .filter(|t| matches!(t.subject, Subject::Return(..))),
        )
        .copied()
        .collect();
    let mut dims = collect_dims(cx_errors, cx, &ordered);
    bind_field_dims(cx_errors, cx, &mut dims, &binds);
    check_returns(cx_errors, cx, &ordered);

    let doc: Vec<String> = clauses
        .iter()
        .filter(|c| !matches!(c, Clause::Crate(_)))
        .filter(|c| !matches!(c, Clause::Option(o) if o.name == kw::CHECKED_BY_SCOPE))
        .map(ToString::to_string)
        .collect();
    let mut text = ContractText {
        text: doc.join("\n"),
    };
    let mut evaluated = Evaluated::default();
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    let mut absent = Vec::new();
    for clause in &ordered {
        let is_output = matches!(clause.subject, Subject::Return(..));
        let plan = plan_clause(
            cx_errors,
            cx,
            &mut dims,
            clause,
            is_output,
            &mut evaluated,
            &mut text,
        );

        if is_output {
            outputs.push(plan);
        } else {
            if clause.absent_zero.is_some() {
                absent.push((inputs.len(), *clause));
            }
            inputs.push(plan);
        }
    }
    let mut planned: Vec<RelationSpec> = binds
        .iter()
        .map(|binding| plan_binding(&mut dims, binding, &mut text))
        .collect();
    check_flags(cx_errors, &flags, &binds);
    for flag in &flags {
        planned.extend(plan_flag(cx_errors, cx, &mut dims, flag, &mut text));
    }
    let private = {
        let krate = krate.clone().unwrap_or_else(|| quote!(::candle_contracts));
        quote!(#krate::__private)
    };
    for activation in clauses.iter().filter_map(|c| match c {
        Clause::NotSwiglu(activation) => Some(activation),
        _ => None,
    }) {
        planned.extend(plan_not_swiglu(
            cx_errors, cx, &mut dims, activation, &private, &mut text,
        ));
    }
    for (index, clause) in absent {
        planned.extend(plan_absent_zero(
            cx_errors, &mut dims, index, clause, &mut text,
        ));
    }
    for relation in &relations {
        planned.push(plan_relation(cx_errors, cx, &mut dims, relation, &mut text));
    }
    let relations = planned;
    Plan {
        inputs,
        outputs,
        relations,
        dims: dims.order,
        dim_idents: dims.idents,
        values: dims.values,
        runs: dims.runs,
        runtime_bounds: evaluated.bounds,
        masks: evaluated.masks,
        on_violation,
        same_device,
        krate: krate.unwrap_or_else(|| quote!(::candle_contracts)),
        static_checks,
        doc,
        text,
    }
}

/// Numbers the named dims and runs in order of first appearance. A const generic parameter is
/// a constant, not a dim; any other name may be a constant too, which the expansion's probe
/// finds out at the call.
fn collect_dims(cx_errors: &Ctxt, cx: &Context, ordered: &[&TensorClause]) -> Dims {
    let mut dims = Dims {
        named: BTreeMap::new(),
        order: Vec::new(),
        idents: Vec::new(),
        runs: Vec::new(),
        values: Vec::new(),
        in_shape: false,
    };
    for clause in ordered {
        let is_input = !matches!(clause.subject, Subject::Return(..));
        let count = clause.spec.sequence.iter();
        for dim in count.chain(&clause.spec.shape.dims) {
            match dim {
                Dim::Named(ident) if !cx.const_generics.contains(&ident.to_string()) => {
                    let name = ident.unraw().to_string();
                    if let Some(info) = dims.named.get_mut(&name) {
                        info.bound_by_input |= is_input;
                        continue;
                    }
                    check_dim_name(cx_errors, cx, ident);
                    let index = dims.order.len() as u16;
                    dims.order.push(name.clone());
                    dims.idents.push(ident.clone());
                    dims.named.insert(
                        name,
                        DimInfo {
                            index,
                            bound_by_input: is_input,
                        },
                    );
                }
                Dim::Run { name, .. } if !dims.runs.iter().any(|r| name == r) => {
                    check_dim_name(cx_errors, cx, name);
                    dims.runs.push(name.to_string());
                }
                _ => {}
            }
        }
    }
    for clause in ordered {
        for dim in &clause.spec.shape.dims {
            if let Dim::Run { name, .. } = dim
                && dims.named.contains_key(&name.to_string())
            {
                cx_errors.error_at(
                    name.span(),
                    format!(
                        "`{name}` names a single dim elsewhere in this contract and a run of dims \
                         (`*{name}`) here; give them different names"
                    ),
                );
            }
        }
    }
    dims
}

/// The dims that integer fields name (`self.n_head = H`): each is bound before any tensor is
/// read. A binding needs `self`, and one field names one dim.
fn bind_field_dims(cx_errors: &Ctxt, cx: &Context, dims: &mut Dims, binds: &[&FieldBinding]) {
    let mut seen: Vec<String> = Vec::new();
    for binding in binds {
        if !cx.has_receiver {
            cx_errors.error_at(
                binding.span,
                format!(
                    "`{} = {}` names a field of `self`, and `{}` takes no `self`",
                    binding.subject, binding.dim, cx.function
                ),
            );
            continue;
        }
        let path = binding.subject.to_string();
        if seen.contains(&path) {
            cx_errors.error_at(
                binding.span,
                format!("`{path}` names a dim twice; one field is one dim"),
            );
        }
        seen.push(path);
        let name = binding.dim.unraw().to_string();
        if let Some(info) = dims.named.get_mut(&name) {
            info.bound_by_input = true;
            continue;
        }
        check_dim_name(cx_errors, cx, &binding.dim);
        let index = dims.order.len() as u16;
        dims.order.push(name.clone());
        dims.idents.push(binding.dim.clone());
        dims.named.insert(
            name,
            DimInfo {
                index,
                bound_by_input: true,
            },
        );
    }
}

/// `self.n_head = H` as the relation `H == {self.n_head}` that binds `H` first.
fn plan_binding(dims: &mut Dims, binding: &FieldBinding, text: &mut ContractText) -> RelationSpec {
    let name = binding.dim.unraw().to_string();
    let index = dims.get(&name).map_or(0, |info| info.index);
    let path = binding.subject.to_string();
    dims.in_shape = true;
    let value = scope_value(
        dims,
        field_path_tokens(&binding.subject),
        binding.span.first,
        format!("{{{path}}}"),
    );
    dims.in_shape = false;
    RelationSpec {
        text: text.span(&format!("{path} = {name}"), 0),
        lhs: vec![ExprOp::Dim(index)],
        op: CmpOp::Eq,
        rhs: vec![ExprOp::Value(value)],
        after_body: false,
        binds: true,
    }
}

/// One field, one value: a flag stated `true` and `false` (in the method's contract, the
/// struct's, or both) is a contract no call meets, and a field that names a dim is no `bool`.
fn check_flags(cx_errors: &Ctxt, flags: &[&FieldFlag], binds: &[&FieldBinding]) {
    for (at, flag) in flags.iter().enumerate() {
        let path = flag.subject.to_string();
        if flags[..at]
            .iter()
            .any(|earlier| earlier.subject.to_string() == path && earlier.value != flag.value)
        {
            cx_errors.error_at(
                flag.span,
                format!("`{path}` is stated `true` and `false`; a field has one value"),
            );
        }
        if let Some(binding) = binds.iter().find(|b| b.subject.to_string() == path) {
            cx_errors.error_at(
                flag.span,
                format!(
                    "`{path}` names the dim `{}` and is stated `{}`: a size is no `bool`",
                    binding.dim, flag.value
                ),
            );
        }
    }
}

/// `self.multi_query = true` as a relation the guard checks before the body: the field,
/// which must be a `bool` (a type error at the clause otherwise), read as 0 or 1.
fn plan_flag(
    cx_errors: &Ctxt,
    cx: &Context,
    dims: &mut Dims,
    flag: &FieldFlag,
    text: &mut ContractText,
) -> Option<RelationSpec> {
    if !cx.has_receiver {
        cx_errors.error_at(
            flag.span,
            format!(
                "`{} = {}` states a field of `self`, and `{}` takes no `self`",
                flag.subject, flag.value, cx.function
            ),
        );
        return None;
    }
    let path = flag.subject.to_string();
    let span = flag.span.first;
    let field = field_path_tokens(&flag.subject);
    let read = quote_spanned!(span=> { let flag: bool = #field; flag });
    // Its own text: `{self.n}` elsewhere in the contract is a size, read without the type.
    let value = scope_value(dims, read, span, format!("{path}: bool"));
    Some(RelationSpec {
        text: text.span(&format!("{path} = {}", flag.value), 0),
        lhs: vec![ExprOp::Value(value)],
        op: CmpOp::Eq,
        rhs: vec![ExprOp::Lit(u64::from(flag.value))],
        after_body: false,
        binds: false,
    })
}

/// `self.act_fn != Swiglu` as a relation the guard checks before the body: whether the field,
/// which must be a candle-nn `Activation` (a trait error at the clause otherwise), is
/// `Swiglu`, read as 0 or 1.
fn plan_not_swiglu(
    cx_errors: &Ctxt,
    cx: &Context,
    dims: &mut Dims,
    activation: &NotSwiglu,
    private: &TokenStream,
    text: &mut ContractText,
) -> Option<RelationSpec> {
    if !cx.has_receiver {
        cx_errors.error_at(
            activation.span,
            format!(
                "`{} != Swiglu` states a field of `self`, and `{}` takes no `self`",
                activation.subject, cx.function
            ),
        );
        return None;
    }
    let path = activation.subject.to_string();
    let span = activation.span.first;
    let field = field_path_tokens(&activation.subject);
    let read = quote_spanned!(span=> #private::ActivationVariant::is_swiglu(&#field));
    let value = scope_value(dims, read, span, format!("{path}: Activation"));
    Some(RelationSpec {
        text: text.span(&format!("{path} != Swiglu"), 0),
        lhs: vec![ExprOp::Value(value)],
        op: CmpOp::Eq,
        rhs: vec![ExprOp::Lit(0)],
        after_body: false,
        binds: false,
    })
}

/// `self.kv_cache?.0: f32[B, KVH, P, HD] else P = 0` as a field binding the guard makes before
/// any tensor is read: `P` is 0 where the clause's held path (input `index`) found `None`,
/// and nothing is bound otherwise (the tensor binds it).
fn plan_absent_zero(
    cx_errors: &Ctxt,
    dims: &mut Dims,
    index: usize,
    clause: &TensorClause,
    text: &mut ContractText,
) -> Option<RelationSpec> {
    let dim = clause.absent_zero.as_ref()?;
    let name = dim.unraw().to_string();
    // The parser took a named dim of the shape: only a const generic is no dim.
    let Some(info) = dims.get(&name) else {
        cx_errors.error_at(
            dim.span(),
            format!(
                "`{name}` is a const generic, whose value the caller fixes: `else` gives the \
                 size of a dim the clause binds"
            ),
        );
        return None;
    };
    let id = info.index;
    let held = Ident::new(&format!("__cc_held_{index}"), Span::mixed_site());
    let path = clause.subject.to_string();
    dims.in_shape = true;
    let value = scope_value(
        dims,
        quote!(#held.absent_size()),
        dim.span(),
        format!("{{{path} is None}}"),
    );
    dims.in_shape = false;
    Some(RelationSpec {
        text: text.span(&format!("{path} else {name} = 0"), 0),
        lhs: vec![ExprOp::Dim(id)],
        op: CmpOp::Eq,
        rhs: vec![ExprOp::Value(value)],
        after_body: false,
        binds: true,
    })
}

/// The code of a path of fields from `self` (`self.cfg.n_head`, `self.conv.config()`), as the
/// parser reads a field binding's or a flag's subject.
fn field_path_tokens(subject: &Subject) -> TokenStream {
    let Subject::Field { root, steps } = subject else {
        return TokenStream::new();
    };
    let members = steps.iter().filter_map(|step| match step {
        FieldStep::Member { member, call } => Some(match call {
            true => quote!(.#member()),
            false => quote!(.#member),
        }),
        _ => None,
    });
    quote!(#root #(#members)*)
}

/// A value from scope for a dim expression or relation: its index in `dims.values`.
fn scope_value(dims: &mut Dims, tokens: TokenStream, span: Span, text: String) -> u16 {
    let dim = dims.in_shape;
    if let Some(index) = dims.values.iter().position(|v| v.text == text) {
        dims.values[index].dim |= dim;
        return index as u16;
    }
    dims.values.push(RuntimeBound {
        tokens,
        span,
        text,
        dim,
    });
    (dims.values.len() - 1) as u16
}

fn resolve_expr(
    cx_errors: &Ctxt,
    cx: &Context,
    dims: &mut Dims,
    expr: &DimExpr,
    ops: &mut Vec<ExprOp>,
    used: &mut Vec<Ident>,
) {
    match expr {
        DimExpr::Lit(value) => ops.push(ExprOp::Lit(*value)),
        DimExpr::Name(ident) => {
            let name = ident.unraw().to_string();
            if let Some(info) = dims.get(&name) {
                ops.push(ExprOp::Dim(info.index));
                used.push(ident.clone());
                return;
            }
            if dims.runs.contains(&name) {
                cx_errors.error_at(
                    ident.span(),
                    format!("`{name}` is a run of dims (`*{name}`) and has no single size"),
                );
                ops.push(ExprOp::Lit(0));
                return;
            }
            if !cx.inline
                && let Some(param) = cx.param(&name)
                && looks_like_tensor(&param.ty)
            {
                cx_errors.error_at(
                    ident.span(),
                    format!(
                        "`{name}` is a tensor, not a number: name one of its dims instead, e.g. \
                         `{name}: f32[N, C]` and `C`"
                    ),
                );
                ops.push(ExprOp::Lit(0));
                return;
            }
            // A parameter, a constant or a const generic in scope: its value. rustc reports a
            // name that is none of these where it stands.
            let index = scope_value(dims, quote!(#ident), ident.span(), name);
            ops.push(ExprOp::Value(index));
        }
        DimExpr::Block { tokens, span } => {
            let index = scope_value(
                dims,
                quote!({ #tokens }),
                span.first,
                format!("{{{}}}", code_text(&tokens.0)),
            );
            ops.push(ExprOp::Value(index));
        }
        DimExpr::Paren(inner) => resolve_expr(cx_errors, cx, dims, inner, ops, used),
        DimExpr::Binary {
            lhs,
            op,
            op_span,
            rhs,
        } => {
            resolve_expr(cx_errors, cx, dims, lhs, ops, used);
            resolve_expr(cx_errors, cx, dims, rhs, ops, used);
            if matches!(op, ArithOp::Div | ArithOp::Rem) && matches!(**rhs, DimExpr::Lit(0)) {
                cx_errors.error_at(*op_span, format!("division by zero in `{expr}`"));
            }
            ops.push(ExprOp::from(*op));
        }
    }
}

fn plan_relation(
    cx_errors: &Ctxt,
    cx: &Context,
    dims: &mut Dims,
    relation: &Relation,
    text: &mut ContractText,
) -> RelationSpec {
    let mut lhs = Vec::new();
    let mut rhs = Vec::new();
    let mut used = Vec::new();
    resolve_expr(cx_errors, cx, dims, &relation.lhs, &mut lhs, &mut used);
    resolve_expr(cx_errors, cx, dims, &relation.rhs, &mut rhs, &mut used);
    check_stack_depth(cx_errors, &relation.lhs);
    check_stack_depth(cx_errors, &relation.rhs);
    let after_body = used.iter().any(|ident| {
        dims.get(&ident.unraw().to_string())
            .is_some_and(|i| !i.bound_by_input)
    });
    RelationSpec {
        text: text.span(
            &format!("{} {} {}", relation.lhs, relation.op, relation.rhs),
            0,
        ),
        lhs,
        op: relation.op,
        rhs,
        after_body,
        binds: false,
    }
}

/// A derived subject's or mask's expression as the expansion evaluates it: borrowed
/// (`&(self.table)` borrows the field, `&(x.sum(1)?)` keeps the temporary alive), so naming a
/// field or an owned parameter moves nothing; a block with statements is evaluated as written.
fn borrowed(tokens: &TokenStream, span: Span) -> TokenStream {
    if syn::parse2::<syn::Expr>(tokens.clone()).is_ok() {
        quote_spanned!(span=> &(#tokens))
    } else {
        quote_spanned!(span=> &{ #tokens })
    }
}

/// What the expansion evaluates in the function's scope: the value rules' bounds, the masks,
/// and how many derived subjects come before the clause being planned.
#[derive(Default)]
struct Evaluated {
    bounds: Vec<RuntimeBound>,
    masks: Vec<MaskAccess>,
    derived: u16,
}

fn plan_clause(
    cx_errors: &Ctxt,
    cx: &Context,
    dims: &mut Dims,
    clause: &TensorClause,
    is_output: bool,
    evaluated: &mut Evaluated,
    text: &mut ContractText,
) -> ClauseSpec {
    let Evaluated {
        bounds: runtime_bounds,
        masks,
        derived,
    } = evaluated;
    let spec = &clause.spec;
    // The clause's parts are spans of its line in the contract's text, in the order written.
    let line = format!("{}: {}", clause.subject, spec);
    let from = text.text.find(&line).unwrap_or(0) + clause.subject.to_string().len();
    let (dtype_constants, facts) = check_dtypes(cx_errors, spec);
    let shape = plan_shape(
        cx_errors,
        cx,
        dims,
        &clause.spec.shape.dims,
        is_output,
        text,
    );
    let sequence = clause.spec.sequence.as_ref().map(|count| {
        plan_shape(
            cx_errors,
            cx,
            dims,
            std::slice::from_ref(count),
            is_output,
            text,
        )
        .pop()
        .unwrap_or(DimSpec::Any)
    });
    let dtypes_span = text.span(&facts.text, from);
    let shape_span = text.span(&spec.shape.to_string(), dtypes_span.end as usize);
    let after_shape = shape_span.end as usize;
    let mut added = Added {
        bounds: runtime_bounds,
        text,
    };
    let mut values = ValueSpec {
        ranges: Vec::new(),
        ranges_span: TextSpan::default(),
        ignore: Vec::new(),
        ignore_span: TextSpan::default(),
        allow_all: AllowAll::No,
        finite: false,
        integral: false,
    };
    let mut has_values = false;
    let mut mask = None;
    let mut contiguous = false;
    let mut note = None;
    let mut seen: Vec<&'static str> = Vec::new();
    for constraint in &spec.constraints {
        let kind = match constraint {
            Constraint::In { .. } => kw::IN,
            Constraint::Ignore { .. } => kw::IGNORE,
            Constraint::Finite(_) => kw::FINITE,
            Constraint::Integral(_) => kw::INTEGRAL,
            Constraint::Contiguous(_) => kw::CONTIGUOUS,
            Constraint::Where { .. } => kw::WHERE,
            Constraint::Note(_) => "note",
        };
        if seen.contains(&kind) {
            let message = if kind == "note" {
                "this clause already has a note string".to_string()
            } else if [kw::FINITE, kw::CONTIGUOUS, kw::INTEGRAL, kw::WHERE].contains(&kind) {
                format!("`{kind}` appears twice in this clause; remove one")
            } else {
                format!("`{kind}` appears twice in this clause; join the values with `|`")
            };
            cx_errors.error_at(constraint.span(), message);
            continue;
        }
        seen.push(kind);
        match constraint {
            Constraint::In { patterns, .. } => {
                has_values = true;
                values.ranges_span = added.text.span(&join(patterns, " | "), after_shape);
                for pattern in patterns {
                    let range =
                        plan_pattern(cx_errors, cx, dims, &facts, pattern, is_output, &mut added);
                    values.ranges.push(range);
                }
            }
            Constraint::Ignore {
                values: ignored,
                allow_all,
                ..
            } => {
                has_values = true;
                values.ignore_span = added.text.span(&join(ignored, " | "), after_shape);
                values.allow_all = match allow_all {
                    None => AllowAll::No,
                    Some(syntax::AllowAll {
                        condition: None, ..
                    }) => AllowAll::Yes,
                    Some(syntax::AllowAll {
                        condition: Some(condition),
                        span,
                    }) => {
                        let (index, at) = added.runtime_bound(
                            quote!({ #condition }),
                            span.first,
                            format!("{{{}}}", code_text(&condition.0)),
                            after_shape,
                        );
                        AllowAll::When(index, at)
                    }
                };
                for value in ignored {
                    values
                        .ignore
                        .push(check_ignore_value(cx_errors, &facts, value, &mut added));
                }
            }
            Constraint::Finite(span) => {
                has_values = true;
                values.finite = true;
                if facts.all_int() {
                    cx_errors.error_at(
                        *span,
                        format!(
                            "`finite` on an integer clause (`{}`) always holds: integers are \
                             never NaN or infinite",
                            facts.text
                        ),
                    );
                }
            }
            Constraint::Integral(span) => {
                has_values = true;
                values.integral = true;
                if facts.all_int() {
                    cx_errors.error_at(
                        *span,
                        format!(
                            "`integral` on an integer clause (`{}`) always holds: it is for \
                             floats that must be whole numbers",
                            facts.text
                        ),
                    );
                }
            }
            Constraint::Where {
                keyword,
                mask: written,
            } => {
                mask = Some((keyword, written));
            }
            Constraint::Contiguous(_) => contiguous = true,
            Constraint::Note(lit) => note = Some(lit.value()),
        }
    }
    let mask = mask.and_then(|(keyword, written)| {
        if !has_values {
            cx_errors.error_at(
                keyword.first,
                format!(
                    "`where` exempts positions from the value rules, and this clause has none: \
                     add {} before it",
                    quoted(&[kw::IN, kw::IGNORE, kw::FINITE, kw::INTEGRAL], "or")
                ),
            );
            return None;
        }
        if is_output {
            cx_errors.error_at(
                keyword.first,
                "a `return` clause takes no `where` mask: check the masked values in the caller, \
                 or with `check!` in the body",
            );
            return None;
        }
        let access = match written {
            syntax::Mask::Param(ident) => {
                if !cx.inline {
                    check_param_subject(cx_errors, cx, ident, false);
                }
                MaskAccess::Param(param_ident(cx, ident))
            }
            syntax::Mask::Block { tokens, span } => {
                if cx.inline {
                    cx_errors.error_at(
                        span.first,
                        "`check!` takes a mask variable, not an expression: compute the mask \
                         into a variable first and write `where mask`",
                    );
                } else if matches!(cx.output, Output::BoxedFuture { .. }) {
                    cx_errors.error_at(span.first, boxed_future_message(cx, "mask expression"));
                }
                MaskAccess::Expr {
                    tokens: borrowed(&tokens.0, span.first),
                    span: span.first,
                }
            }
        };
        let index = masks.len() as u16;
        masks.push(access);
        Some(plan::MaskSpec {
            index,
            text: added.text.span(&written.to_string(), after_shape),
        })
    });
    let through_all = matches!(&clause.subject, Subject::Field { steps, .. }
        if steps.iter().any(|s| matches!(s, FieldStep::All(_))));
    let sequence = match sequence {
        None if through_all => Some(DimSpec::Any),
        other => other,
    };
    let name = clause.subject.to_string();
    let (subject, access) = match &clause.subject {
        Subject::Param(ident) if cx.inline => (
            plan::Subject::Variable(name),
            Access::Param(param_ident(cx, ident)),
        ),
        Subject::Param(ident) => (
            plan::Subject::Argument(name),
            Access::Param(param_ident(cx, ident)),
        ),
        Subject::Return(_, None) => (plan::Subject::Return, Access::Output(None)),
        Subject::Derived { tokens, span } => {
            let index = *derived;
            *derived += 1;
            (
                plan::Subject::Derived(name),
                Access::Derived {
                    index,
                    tokens: borrowed(&tokens.0, span.first),
                    span: span.first,
                },
            )
        }
        Subject::Return(_, index) => (plan::Subject::ReturnField(name), Access::Output(*index)),
        Subject::Field { root, steps } => {
            let root = if root == "self" {
                root.clone()
            } else {
                param_ident(cx, root)
            };
            let steps: Vec<Step> = steps
                .iter()
                .map(|step| match step {
                    FieldStep::Member { member, call } => Step::Member(member.clone(), *call),
                    FieldStep::Optional(span) => Step::Optional(span.first),
                    FieldStep::Index(i, span) => Step::Index(*i, span.first),
                    FieldStep::IndexBy(ident) => Step::IndexBy(param_ident(cx, ident)),
                    FieldStep::All(span) => Step::All(span.first),
                })
                .collect();
            (plan::Subject::Field(name), Access::Path { root, steps })
        }
    };
    let optional = matches!(&access, Access::Path { steps, .. }
        if steps.iter().any(|s| matches!(s, Step::Optional(_))));
    ClauseSpec {
        subject,
        optional,
        access,
        span: clause.span,
        dtype_constants,
        dtypes_span,
        shape,
        shape_span,
        values: has_values.then_some(values),
        contiguous,
        note,
        sequence,
        mask,
    }
}

/// The parameter's own identifier (`r#type` for a clause written `type:`), so the expansion
/// names it as the signature does.
fn param_ident(cx: &Context, ident: &Ident) -> Ident {
    let mut own = cx
        .param(&ident.unraw().to_string())
        .map_or_else(|| ident.clone(), |p| p.ident.clone());
    own.set_span(ident.span());
    own
}

fn plan_shape(
    cx_errors: &Ctxt,
    cx: &Context,
    dims: &mut Dims,
    shape_dims: &[Dim],
    is_output: bool,
    text: &mut ContractText,
) -> Vec<DimSpec> {
    let mut variadic: Option<Span> = None;
    let mut shape = Vec::new();
    for dim in shape_dims {
        let span = match dim {
            Dim::Rest(span) => Some(*span),
            Dim::Run { star, .. } => Some(*star),
            _ => None,
        };
        if let Some(span) = span {
            if variadic.is_some() {
                cx_errors.error_at(
                    span,
                    "a shape can hold only one `..` or `*name`: with two, the dims between them \
                     are ambiguous",
                );
            }
            variadic = Some(span.first);
        }
        shape.push(match dim {
            Dim::Fixed(value) => DimSpec::Fixed(*value),
            Dim::Named(ident) if cx.const_generics.contains(&ident.to_string()) => {
                let index = scope_value(dims, quote!(#ident), ident.span(), ident.to_string());
                DimSpec::Expr(DimExprSpec {
                    text: text.span(&ident.to_string(), 0),
                    ops: vec![ExprOp::Value(index)],
                })
            }
            Dim::Named(ident) => {
                DimSpec::Named(dims.get(&ident.unraw().to_string()).map_or(0, |i| i.index))
            }
            Dim::Any => DimSpec::Any,
            Dim::Rest(_) => DimSpec::Rest,
            Dim::Run { name, .. } => {
                DimSpec::Run(dims.runs.iter().position(|r| name == r).unwrap_or(0) as u16)
            }
            Dim::Expr(expr) => {
                let mut ops = Vec::new();
                let mut used = Vec::new();
                dims.in_shape = true;
                resolve_expr(cx_errors, cx, dims, expr, &mut ops, &mut used);
                dims.in_shape = false;
                check_stack_depth(cx_errors, expr);
                if !is_output {
                    check_bound_by_inputs(cx_errors, dims, &used);
                }
                DimSpec::Expr(DimExprSpec {
                    text: text.span(&expr.to_string(), 0),
                    ops,
                })
            }
        });
    }
    shape
}

/// A literal's value as a real number, for emptiness and dtype-range checks.
fn literal(bound: &BoundExpr) -> Option<f64> {
    match bound {
        BoundExpr::Int { value, .. } => Some(*value as f64),
        BoundExpr::Float { value, .. } => Some(*value),
        _ => None,
    }
}

/// What planning a clause's value rules adds to the contract: bounds evaluated at call time,
/// and the spans of their text.
struct Added<'a> {
    bounds: &'a mut Vec<RuntimeBound>,
    text: &'a mut ContractText,
}

impl Added<'_> {
    /// A bound from scope (`written` as the contract shows it, found at or after `from`): its
    /// index among the bounds the guard evaluates, and its span of the contract's text.
    fn runtime_bound(
        &mut self,
        tokens: TokenStream,
        span: Span,
        written: String,
        from: usize,
    ) -> (u16, TextSpan) {
        let index = self.bounds.len() as u16;
        let at = self.text.span(&written, from);
        self.bounds.push(RuntimeBound {
            tokens,
            span,
            text: written,
            dim: false,
        });
        (index, at)
    }
}

fn plan_pattern(
    cx_errors: &Ctxt,
    cx: &Context,
    dims: &mut Dims,
    facts: &DTypeFacts,
    pattern: &Pattern,
    is_output: bool,
    added: &mut Added<'_>,
) -> RangeSpec {
    let mut resolve = |cx_errors: &Ctxt, bound: &BoundExpr| {
        plan_bound(cx_errors, cx, dims, facts, bound, is_output, added)
    };
    match pattern {
        Pattern::Single(bound) => {
            let value = resolve(cx_errors, bound);
            if let BoundExpr::Float { value, text, span } = bound {
                inexact_single_value(
                    cx_errors,
                    facts,
                    *value,
                    text,
                    *span,
                    "a single value in `in`",
                );
            }
            if let Some(v) = literal(bound)
                && !facts.members.is_empty()
                && !facts
                    .members
                    .iter()
                    .any(|d| d.can_hold(Some(v), Some(v), true))
            {
                cx_errors.error_at(
                    bound.span(),
                    format!("`{bound}` can never occur in a `{}` tensor", facts.text),
                );
            }
            let hi = plan_bound_copy(&value);
            RangeSpec {
                lo: value,
                hi,
                inclusive: true,
            }
        }
        Pattern::Range {
            lo,
            hi,
            inclusive,
            span,
        } => {
            let lo_plan = lo.as_ref().and_then(|b| resolve(cx_errors, b));
            let hi_plan = hi.as_ref().and_then(|b| resolve(cx_errors, b));
            // `0.1..=0.1` is the single value `0.1`.
            if let (
                Some(BoundExpr::Float { value, text, .. }),
                Some(BoundExpr::Float { value: other, .. }),
            ) = (lo, hi)
                && *inclusive
                && value == other
            {
                inexact_single_value(
                    cx_errors,
                    facts,
                    *value,
                    text,
                    *span,
                    "a range of one value",
                );
            }
            let lo_value = lo.as_ref().and_then(literal);
            let hi_value = hi.as_ref().and_then(literal);
            let empty = match (lo, hi) {
                (Some(BoundExpr::Int { value: a, .. }), Some(BoundExpr::Int { value: b, .. })) => {
                    if *inclusive {
                        a > b
                    } else {
                        a >= b
                    }
                }
                _ => match (lo_value, hi_value) {
                    (Some(a), Some(b)) => {
                        if *inclusive {
                            a > b
                        } else {
                            a >= b
                        }
                    }
                    _ => false,
                },
            };
            if empty {
                cx_errors.error_at(
                    *span,
                    format!("empty range `{pattern}`: no value satisfies it"),
                );
            } else if (lo_value.is_some() || hi_value.is_some())
                && lo.as_ref().is_none_or(|b| literal(b).is_some())
                && hi.as_ref().is_none_or(|b| literal(b).is_some())
                && !facts.members.is_empty()
                && !facts
                    .members
                    .iter()
                    .any(|d| d.can_hold(lo_value, hi_value, *inclusive))
            {
                let ranges: Vec<String> = facts
                    .members
                    .iter()
                    .map(|d| format!("`{}` holds {}", d.name(), d.describe_range()))
                    .collect();
                cx_errors.error_at(
                    *span,
                    format!(
                        "`{pattern}` can never hold for `{}`: {}",
                        facts.text,
                        ranges.join(", ")
                    ),
                );
            }
            RangeSpec {
                lo: lo_plan,
                hi: hi_plan,
                inclusive: *inclusive,
            }
        }
    }
}

fn plan_bound_copy(bound: &Option<BoundSpec>) -> Option<BoundSpec> {
    bound.as_ref().map(|b| match b {
        BoundSpec::Int(v) => BoundSpec::Int(*v),
        BoundSpec::Float(v) => BoundSpec::Float(*v),
        BoundSpec::Inexact(v, above) => BoundSpec::Inexact(*v, *above),
        BoundSpec::Dim(v) => BoundSpec::Dim(*v),
        BoundSpec::Runtime(i, text) => BoundSpec::Runtime(*i, *text),
    })
}

fn plan_bound(
    cx_errors: &Ctxt,
    cx: &Context,
    dims: &mut Dims,
    facts: &DTypeFacts,
    bound: &BoundExpr,
    is_output: bool,
    added: &mut Added<'_>,
) -> Option<BoundSpec> {
    match bound {
        BoundExpr::Int { value, span } => {
            if *value < 0 && facts.all_unsigned() {
                cx_errors.error_at(
                    *span,
                    format!(
                        "negative bound `{value}` on an unsigned clause (`{}`): its values are \
                         never negative",
                        facts.text
                    ),
                );
            }
            Some(BoundSpec::Int(*value))
        }
        BoundExpr::Float { value, text, span } => {
            if facts.all_int() {
                cx_errors.error_at(
                    *span,
                    format!(
                        "float bound `{text}` on an integer clause (`{}`): write an integer \
                         bound",
                        facts.text
                    ),
                );
            } else if *value < 0.0 && facts.all_unsigned() {
                cx_errors.error_at(
                    *span,
                    format!("negative bound `{text}` on an unsigned clause"),
                );
            }
            inexact_large_bound(cx_errors, facts, *value, text, *span);
            Some(match literal_vs_f64(text, *value) {
                std::cmp::Ordering::Equal => BoundSpec::Float(*value),
                side => BoundSpec::Inexact(*value, side.is_gt()),
            })
        }
        BoundExpr::Name(ident) => {
            let name = ident.to_string();
            if let Some(info) = dims.get(&name) {
                if !is_output && !info.bound_by_input {
                    check_bound_by_inputs(cx_errors, dims, std::slice::from_ref(ident));
                }
                return Some(BoundSpec::Dim(info.index));
            }
            if name == kw::MAX {
                cx_errors.error_at(
                    ident.span(),
                    "`MAX` stands only after `ignore` (candle's skip sentinel); in a range, \
                     write the number",
                );
                return None;
            }
            if dims.runs.contains(&name) {
                cx_errors.error_at(
                    ident.span(),
                    format!("`{name}` is a run of dims (`*{name}`) and cannot bound a range"),
                );
                return None;
            }
            if !cx.inline
                && let Some(param) = cx.param(&name)
                && plainly_not_a_tensor(&param.ty).is_none()
                && looks_like_tensor(&param.ty)
            {
                cx_errors.error_at(
                    ident.span(),
                    format!(
                        "`{name}` is a tensor, not a number: bound the range by one of its dims \
                         instead, e.g. `{name}: f32[N, C]` and `in 0..C`"
                    ),
                );
                return None;
            }
            // An integer parameter, or a constant in scope: rustc reports a name that is
            // neither where it stands.
            let (index, text) = added.runtime_bound(quote!(#ident), ident.span(), name, 0);
            Some(BoundSpec::Runtime(index, text))
        }
        BoundExpr::Block { tokens, span } => {
            let written = format!("{{{}}}", code_text(&tokens.0));
            let (index, text) = added.runtime_bound(quote!({ #tokens }), span.first, written, 0);
            Some(BoundSpec::Runtime(index, text))
        }
    }
}

fn check_ignore_value(
    cx_errors: &Ctxt,
    facts: &DTypeFacts,
    value: &IgnoreValue,
    added: &mut Added<'_>,
) -> IgnoreSpec {
    match value {
        IgnoreValue::Int { value: v, span } => {
            if *v < 0 && facts.all_unsigned() {
                cx_errors.error_at(
                    *span,
                    format!(
                        "negative ignore value `{v}` on an unsigned clause (`{}`): it can never \
                         occur",
                        facts.text
                    ),
                );
            } else if !facts.members.is_empty()
                && !facts
                    .members
                    .iter()
                    .any(|d| d.can_hold(Some(*v as f64), Some(*v as f64), true))
            {
                cx_errors.error_at(
                    *span,
                    format!(
                        "ignore value `{v}` can never occur in a `{}` tensor",
                        facts.text
                    ),
                );
            }
            IgnoreSpec::Int(*v)
        }
        IgnoreValue::Float {
            value: v,
            text,
            span,
        } => {
            if facts.all_int() {
                cx_errors.error_at(
                    *span,
                    format!(
                        "float ignore value `{text}` on an integer clause (`{}`)",
                        facts.text
                    ),
                );
            }
            inexact_single_value(cx_errors, facts, *v, text, *span, "an ignored value");
            IgnoreSpec::Float(*v)
        }
        IgnoreValue::Block { tokens, span } => {
            let written = format!("{{{}}}", code_text(&tokens.0));
            let (index, text) = added.runtime_bound(quote!({ #tokens }), span.first, written, 0);
            IgnoreSpec::Runtime(index, text)
        }
        IgnoreValue::Max(span) => {
            if facts.all_float() {
                cx_errors.error_at(
                    *span,
                    format!(
                        "`MAX` is candle's integer skip sentinel; a float clause (`{}`) cannot \
                         use it",
                        facts.text
                    ),
                );
            }
            IgnoreSpec::Max
        }
    }
}
