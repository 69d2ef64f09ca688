//! Code generation: a `static` spec table (plain data) and one guard call before the untouched
//! body; with a `return` clause, the body runs in a closure (or `async` block) and its value is
//! checked on the way out. Generated code names only `::candle_contracts::__private::…` and
//! `::core::…` paths; its locals are `__cc_` names with mixed-site hygiene.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::Ident;

use crate::ast;
use crate::fallback;
use crate::item::{self, ContractFn, Output};
use crate::valid::{
    self, Context, Failure, Plan, PlanAllowAll, PlanBound, PlanClause, PlanDim, PlanIgnore, PlanOp,
    PlanStep, PlanSubject,
};

/// Everything the attribute and `check!` share: parse, validate, and either a plan or errors.
pub(crate) fn analyze(
    args: TokenStream,
    cx: &Context,
    errors: &mut Vec<syn::Error>,
) -> Option<Plan> {
    if args.is_empty() {
        errors.push(syn::Error::new(
            Span::call_site(),
            "empty contract: list at least one clause, e.g. `x: f32[N, D]`",
        ));
        return None;
    }
    let clauses = ast::parse_clauses(args, errors);
    let plan = valid::validate(&clauses, cx, errors);
    errors.is_empty().then_some(plan)
}

pub fn contract(args: TokenStream, input: TokenStream) -> TokenStream {
    let location = args
        .clone()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span());
    let item: ContractFn = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(error) => {
            let error = syn::Error::new(
                error.span(),
                format!("`#[contract]` goes on a function ({error})"),
            );
            return fallback::emit(vec![error], input);
        }
    };
    let mut errors = Vec::new();
    if let Some(constness) = &item.sig.constness {
        errors.push(syn::Error::new(
            constness.span,
            "`#[contract]` cannot go on a `const fn`: its guard reads tensors at run time",
        ));
    }
    if let Some(semi) = &item.semi {
        errors.push(syn::Error::new(
            semi.span,
            "`#[contract]` needs a function body: put the contract on the method in the `impl`, \
             not on the trait's declaration",
        ));
    }
    let cx = Context {
        inline: false,
        function: item.sig.ident.to_string(),
        params: item::params(&item.sig),
        has_receiver: item.sig.receiver().is_some(),
        output: Output::of(&item.sig),
        name_span: item::name_span(&item.sig),
        const_generics: item
            .sig
            .generics
            .const_params()
            .map(|c| c.ident.to_string())
            .collect(),
    };
    let plan = analyze(args, &cx, &mut errors);
    match (plan, &item.body) {
        (Some(plan), Some(body)) if errors.is_empty() => {
            expand_fn(&item, body, &plan, &cx, location)
        }
        _ => fallback::emit(errors, input),
    }
}

pub fn check(input: TokenStream) -> TokenStream {
    let location = input
        .clone()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span());
    let cx = Context {
        inline: true,
        function: "check!".to_string(),
        params: Vec::new(),
        has_receiver: true,
        output: Output::Unit,
        name_span: Span::call_site(),
        const_generics: Vec::new(),
    };
    let mut errors = Vec::new();
    match analyze(input, &cx, &mut errors) {
        Some(plan) => expand_check(&plan, location),
        None => fallback::emit_check(errors),
    }
}

fn private() -> TokenStream {
    quote!(::candle_contracts::__private)
}

fn local(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

fn int_tokens(value: i128) -> TokenStream {
    if value >= 0 {
        Literal::i128_suffixed(value).into_token_stream()
    } else if value == i128::MIN {
        quote!(::core::primitive::i128::MIN)
    } else {
        let magnitude = Literal::i128_suffixed(-value);
        quote!(-#magnitude)
    }
}

fn float_tokens(value: f64) -> TokenStream {
    // `Literal::f64_suffixed` panics on a non-finite value; the parser refuses those, and this
    // keeps the expansion total anyway.
    if value.is_infinite() {
        return if value < 0.0 {
            quote!(::core::primitive::f64::NEG_INFINITY)
        } else {
            quote!(::core::primitive::f64::INFINITY)
        };
    }
    if value.is_sign_negative() {
        let magnitude = Literal::f64_suffixed(-value);
        quote!(-#magnitude)
    } else {
        Literal::f64_suffixed(value).into_token_stream()
    }
}

fn ops_tokens(ops: &[PlanOp]) -> TokenStream {
    let p = private();
    let ops = ops.iter().map(|op| match *op {
        PlanOp::Lit(v) => {
            let v = Literal::u64_suffixed(v);
            quote!(#p::ExprOp::Lit(#v))
        }
        PlanOp::Dim(id) => quote!(#p::ExprOp::Dim(#id)),
        PlanOp::Value(index) => quote!(#p::ExprOp::Value(#index)),
        PlanOp::Arith(op) => {
            let name = match op {
                ast::ArithOp::Add => "Add",
                ast::ArithOp::Sub => "Sub",
                ast::ArithOp::Mul => "Mul",
                ast::ArithOp::Div => "Div",
                ast::ArithOp::Rem => "Rem",
            };
            let name = Ident::new(name, Span::call_site());
            quote!(#p::ExprOp::#name)
        }
    });
    quote!(&[#(#ops),*])
}

fn bound_tokens(bound: &PlanBound) -> TokenStream {
    let p = private();
    match bound {
        PlanBound::Int(v) => {
            let v = int_tokens(*v);
            quote!(#p::BoundSpec::Int(#v))
        }
        PlanBound::Float(v) => {
            let v = float_tokens(*v);
            quote!(#p::BoundSpec::Float(#v))
        }
        PlanBound::Dim(id) => quote!(#p::BoundSpec::Dim(#id)),
        PlanBound::Runtime(index, text) => quote!(#p::BoundSpec::Runtime(#index, #text)),
    }
}

fn option_tokens(value: Option<TokenStream>) -> TokenStream {
    match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}

/// A clause's spec; `inline` for `check!`, whose plain names are variables, not arguments.
fn clause_tokens(clause: &PlanClause, inline: bool) -> TokenStream {
    let p = private();
    let name = &clause.name;
    let subject = match &clause.subject {
        PlanSubject::Param(_) if inline => quote!(#p::Subject::Variable(#name)),
        PlanSubject::Param(_) => quote!(#p::Subject::Argument(#name)),
        PlanSubject::Path { .. } => quote!(#p::Subject::Field(#name)),
        PlanSubject::Output(None) => quote!(#p::Subject::Return),
        PlanSubject::Output(Some(_)) => quote!(#p::Subject::ReturnField(#name)),
    };
    let optional = matches!(clause.subject, PlanSubject::Path { optional: true, .. });
    let dtypes = clause
        .dtype_constants
        .iter()
        .map(|c| Ident::new(c, Span::call_site()))
        .map(|c| quote!(#p::DTypeSet::#c));
    let mut dtypes_iter = dtypes.into_iter();
    let first = dtypes_iter
        .next()
        .unwrap_or_else(|| quote!(#p::DTypeSet::ANY));
    let dtypes = quote!(#first #(.or(#dtypes_iter))*);
    let dtypes_text = &clause.dtypes_text;
    let shape = clause.shape.iter().map(dim_tokens);
    let sequence = option_tokens(clause.sequence.as_ref().map(dim_tokens));
    let shape_text = &clause.shape_text;
    let values = option_tokens(clause.values.as_ref().map(|values| {
        let ranges = values.ranges.iter().map(|range| {
            let lo = option_tokens(range.lo.as_ref().map(bound_tokens));
            let hi = option_tokens(range.hi.as_ref().map(bound_tokens));
            let inclusive = range.inclusive;
            quote!(#p::RangeSpec { lo: #lo, hi: #hi, inclusive: #inclusive })
        });
        let ignore = values.ignore.iter().map(|value| match value {
            PlanIgnore::Int(v) => {
                let v = int_tokens(*v);
                quote!(#p::IgnoreSpec::Int(#v))
            }
            PlanIgnore::Float(v) => {
                let v = float_tokens(*v);
                quote!(#p::IgnoreSpec::Float(#v))
            }
            PlanIgnore::Max => quote!(#p::IgnoreSpec::Max),
            PlanIgnore::Runtime(index, text) => quote!(#p::IgnoreSpec::Runtime(#index, #text)),
        });
        let ranges_text = &values.ranges_text;
        let ignore_text = &values.ignore_text;
        let allow_all = match &values.allow_all {
            PlanAllowAll::No => quote!(#p::AllowAll::No),
            PlanAllowAll::Yes => quote!(#p::AllowAll::Yes),
            PlanAllowAll::When(index, text) => quote!(#p::AllowAll::When(#index, #text)),
        };
        let finite = values.finite;
        quote!(&#p::ValueSpec {
            ranges: &[#(#ranges),*],
            ranges_text: #ranges_text,
            ignore: &[#(#ignore),*],
            ignore_text: #ignore_text,
            allow_all_ignored: #allow_all,
            finite: #finite,
        })
    }));
    let contiguous = clause.contiguous;
    let note = option_tokens(clause.note.as_ref().map(|n| quote!(#n)));
    quote!(#p::ClauseSpec {
        subject: #subject,
        optional: #optional,
        dtypes: #dtypes,
        dtypes_text: #dtypes_text,
        shape: &[#(#shape),*],
        shape_text: #shape_text,
        values: #values,
        contiguous: #contiguous,
        note: #note,
        sequence: #sequence,
    })
}

fn dim_tokens(dim: &PlanDim) -> TokenStream {
    let p = private();
    match dim {
        PlanDim::Fixed(v) => {
            let v = Literal::usize_suffixed(*v as usize);
            quote!(#p::DimSpec::Fixed(#v))
        }
        PlanDim::Named(id) => quote!(#p::DimSpec::Named(#id)),
        PlanDim::Any => quote!(#p::DimSpec::Any),
        PlanDim::Rest => quote!(#p::DimSpec::Rest),
        PlanDim::Run(id) => quote!(#p::DimSpec::Run(#id)),
        PlanDim::Expr { text, ops } => {
            let ops = ops_tokens(ops);
            quote!(#p::DimSpec::Expr(&#p::DimExprSpec { text: #text, ops: #ops }))
        }
    }
}

/// `|v| match v { NAME => true, _ => false }` in the user's scope: in a pattern, `NAME` is a
/// constant when one is in scope (any integer type: the literal `0` takes the constant's type,
/// or falls back to `i32`), and a binding that accepts every value otherwise.
fn probe_tokens(ident: &Ident) -> TokenStream {
    let v = local("__cc_v");
    let s = local("__cc_s");
    let x = local("__cc_x");
    quote! {
        |#v: ::core::primitive::u64| -> ::core::primitive::bool {
            let mut #s = 0;
            match ::core::convert::TryFrom::try_from(#v) {
                ::core::result::Result::Ok(#x) => #s = #x,
                ::core::result::Result::Err(_) => return false,
            }
            match #s {
                #ident => true,
                _ => false,
            }
        }
    }
}

/// `static __CC_SPEC: ContractSpec = …;`, located at the contract for `file!()` / `line!()`.
fn spec_tokens(plan: &Plan, function: &str, location: Span, inline: bool) -> TokenStream {
    let p = private();
    let inputs = plan
        .inputs
        .iter()
        .map(|clause| clause_tokens(clause, inline));
    let outputs = plan
        .outputs
        .iter()
        .map(|clause| clause_tokens(clause, inline));
    let values = plan.values.iter().map(|v| &v.text);
    let relations = plan.relations.iter().map(|relation| {
        let text = &relation.text;
        let lhs = ops_tokens(&relation.lhs);
        let rhs = ops_tokens(&relation.rhs);
        let op = Ident::new(
            match relation.op {
                ast::CmpOp::Eq => "Eq",
                ast::CmpOp::Ne => "Ne",
                ast::CmpOp::Lt => "Lt",
                ast::CmpOp::Le => "Le",
                ast::CmpOp::Gt => "Gt",
                ast::CmpOp::Ge => "Ge",
            },
            Span::call_site(),
        );
        let after_body = relation.after_body;
        quote!(#p::RelationSpec { text: #text, lhs: #lhs, op: #p::CmpOp::#op, rhs: #rhs, after_body: #after_body })
    });
    let dims = &plan.dims;
    let runs = &plan.runs;
    let same_device = plan.same_device;
    let file = quote_spanned!(location=> ::core::file!());
    let line = quote_spanned!(location=> ::core::line!());
    let column = quote_spanned!(location=> ::core::column!());
    quote! {
        static __CC_SPEC: #p::ContractSpec = #p::ContractSpec {
            function: #function,
            file: #file,
            line: #line,
            column: #column,
            dims: &[#(#dims),*],
            values: &[#(#values),*],
            runs: &[#(#runs),*],
            inputs: &[#(#inputs),*],
            outputs: &[#(#outputs),*],
            relations: &[#(#relations),*],
            same_device: #same_device,
        };
    }
}

/// For each input clause, the expression of its `ClauseArg`, and the `let`s it needs first (a
/// path through `?`, `[i]` or `[..]` is held in a local while the guard runs).
fn access_tokens(plan: &Plan) -> (TokenStream, Vec<TokenStream>) {
    let p = private();
    let mut held = TokenStream::new();
    let mut args = Vec::new();
    for (k, clause) in plan.inputs.iter().enumerate() {
        let span = clause.span.first;
        let arg = match &clause.subject {
            PlanSubject::Param(ident) if clause.sequence.is_some() => {
                quote_spanned!(span=> ::candle_contracts::__private::many(&#ident))
            }
            PlanSubject::Param(ident) => {
                quote_spanned!(span=> ::candle_contracts::__private::one(&#ident))
            }
            PlanSubject::Path { root, steps, .. } => {
                let plain = steps.iter().all(|s| matches!(s, PlanStep::Member(..)));
                if plain {
                    let place = member_chain(quote!(#root), steps);
                    if clause.sequence.is_some() {
                        quote_spanned!(span=> ::candle_contracts::__private::many(&#place))
                    } else {
                        quote_spanned!(span=> ::candle_contracts::__private::one(&#place))
                    }
                } else {
                    let local = local(&format!("__cc_held_{k}"));
                    let value = held_expr(quote!(#root), steps, 0, true);
                    held.extend(quote_spanned!(span=> let #local = #value;));
                    quote_spanned!(span=> #p::Held::arg(&#local))
                }
            }
            PlanSubject::Output(_) => quote!(#p::ClauseArg::One(::core::option::Option::None)),
        };
        args.push(arg);
    }
    (held, args)
}

fn member_chain(mut acc: TokenStream, steps: &[PlanStep]) -> TokenStream {
    for step in steps {
        if let PlanStep::Member(member, call) = step {
            acc = if *call {
                quote!(#acc.#member())
            } else {
                quote!(#acc.#member)
            };
        }
    }
    acc
}

/// The `Held` a path with `?`, `[i]` or `[..]` steps reaches; `place` says whether `acc` is a
/// place to borrow (a field) rather than a value (a method's result or a reference).
fn held_expr(acc: TokenStream, steps: &[PlanStep], depth: usize, place: bool) -> TokenStream {
    let p = private();
    let some = quote!(::core::option::Option::Some);
    let none = quote!(::core::option::Option::None);
    let Some((step, rest)) = steps.split_first() else {
        return if place {
            quote!(#p::Held::Value(&#acc))
        } else {
            quote!(#p::Held::Value(#acc))
        };
    };
    let v = local(&format!("__cc_s{depth}"));
    match step {
        PlanStep::Member(member, call) => {
            let acc = if *call {
                quote!(#acc.#member())
            } else {
                quote!(#acc.#member)
            };
            held_expr(acc, rest, depth, !call)
        }
        PlanStep::Optional(span) => {
            let inner = held_expr(quote!(#v), rest, depth + 1, false);
            let acc = borrow_if(place, acc);
            let step = quote_spanned!(*span=> #p::OptionalStep::optional_step(#acc));
            quote! {
                match #step {
                    #some(#v) => #inner,
                    #none => #p::Held::Skip,
                }
            }
        }
        PlanStep::Index(i, span) => {
            let inner = held_expr(quote!(#v), rest, depth + 1, false);
            let acc = borrow_if(place, acc);
            let step = quote_spanned!(*span=> #p::Elements::elements(#acc));
            quote! {
                match #step.get(#i) {
                    #some(#v) => #inner,
                    #none => #p::Held::Missing,
                }
            }
        }
        PlanStep::All(span) => {
            let element = member_chain(quote!(#v), rest);
            let element = match rest.last() {
                Some(PlanStep::Member(_, false)) => quote!(&#element),
                _ => element,
            };
            let acc = borrow_if(place, acc);
            let step = quote_spanned!(*span=> #p::Elements::elements(#acc));
            quote! {
                #p::Held::Many(
                    #step
                        .iter()
                        .map(|#v| #element)
                        .collect::<::std::vec::Vec<_>>(),
                )
            }
        }
    }
}

/// `let __cc_constants = [probe, ..];`, one probe per named dim, in the body's scope (see
/// `probe_tokens`).
fn constants_tokens(plan: &Plan) -> TokenStream {
    let p = private();
    let constants = local("__cc_constants");
    let count = plan.dim_idents.len();
    let probes = plan.dim_idents.iter().map(probe_tokens);
    quote! {
        #[allow(
            non_snake_case,
            non_upper_case_globals,
            unreachable_patterns,
            unused_variables,
            unused_assignments,
            clippy::all,
            clippy::pedantic
        )]
        let #constants: [#p::ConstantProbe; #count] = [#(#probes),*];
    }
}

/// A field is borrowed where it stands; a method's result (a reference, or an `Option` of one)
/// is passed on as it is, so nothing borrows a temporary.
fn borrow_if(place: bool, acc: TokenStream) -> TokenStream {
    if place { quote!(&#acc) } else { acc }
}

/// `[bound(&(expr)), ..]`: the values from scope that dims and relations use, or the value
/// rules' bounds; the guard evaluates them only in the modes that need them.
fn evaluated_array(items: &[valid::RuntimeBound]) -> TokenStream {
    let values = items.iter().map(|item| {
        let tokens = &item.tokens;
        quote_spanned!(item.span=> ::candle_contracts::__private::bound(&(#tokens)))
    });
    quote!([#(#values),*])
}

/// `Guard::<DIMS, RUNS, BOUNDS, VALUES>`, for the plan's counts.
fn guard_type(plan: &Plan) -> TokenStream {
    let p = private();
    let dims = plan.dims.len();
    let runs = plan.runs.len();
    let bounds = plan.runtime_bounds.len();
    let values = plan.values.len();
    quote!(#p::Guard::<#dims, #runs, #bounds, #values>)
}

/// The closure `check_inputs` runs in `full` and `shapes` mode: the constants' probes, the
/// held paths and the arguments, handed to the guard with the values and bounds.
fn inputs_closure(plan: &Plan) -> TokenStream {
    let inputs = local("__cc_inputs");
    let constants = constants_tokens(plan);
    let constants_local = local("__cc_constants");
    let (held, accesses) = access_tokens(plan);
    let values = evaluated_array(&plan.values);
    let bounds = evaluated_array(&plan.runtime_bounds);
    quote! {
        |#inputs| {
            #constants
            #held
            #inputs.check(&[#(#accesses),*], &#constants_local, #values, || #bounds)
        }
    }
}

fn doc_attrs(plan: &Plan) -> TokenStream {
    let mut lines = vec![
        String::new(),
        "# Contract".to_string(),
        String::new(),
        "```text".to_string(),
    ];
    lines.extend(plan.doc.iter().cloned());
    lines.push("```".to_string());
    quote!(#(#[doc = #lines])*)
}

fn expand_fn(
    item: &ContractFn,
    body: &proc_macro2::Group,
    plan: &Plan,
    cx: &Context,
    location: Span,
) -> TokenStream {
    let p = private();
    let ContractFn {
        attrs,
        vis,
        defaultness,
        sig,
        ..
    } = item;
    let docs = doc_attrs(plan);
    let spec = spec_tokens(plan, &cx.function, location, false);
    let error = local("__cc_error");
    let failure = match plan.on_violation {
        Some((failure, _)) => failure,
        None if cx.output.returns_result() => Failure::Error,
        None => Failure::Panic,
    };
    let fail = match failure {
        Failure::Error => {
            // Spanned at the return type, so a missing `From<ContractError>` is reported there.
            let span = match cx.output.ty() {
                Some(ty) => ty
                    .into_token_stream()
                    .into_iter()
                    .next()
                    .map_or(cx.name_span, |t| t.span()),
                None => cx.name_span,
            };
            let convert = quote_spanned!(span=> ::candle_contracts::__private::into_error(#error));
            match &cx.output {
                // `#[async_trait]` made the `async fn` return a boxed future: return a ready one.
                Output::BoxedFuture { output, .. } => {
                    let value = local("__cc_value");
                    quote! {
                        return ::std::boxed::Box::pin(async move {
                            let #value: #output = ::core::result::Result::Err(#convert);
                            #value
                        });
                    }
                }
                _ => quote!(return ::core::result::Result::Err(#convert);),
            }
        }
        Failure::Panic => quote!(#p::violated(#error)),
    };
    let guard_type = guard_type(plan);
    let inputs = inputs_closure(plan);
    let new_body = if plan.outputs.is_empty() {
        // The guard is a temporary: in `off` mode it costs the mode's load and one test.
        let guard = quote! {
            #spec
            if let ::core::result::Result::Err(#error) =
                #guard_type::new(&__CC_SPEC).check_inputs(#inputs)
            {
                #fail
            }
        };
        item::body_with(body, guard)
    } else {
        // With a return clause the body runs in a closure (or `async` block). The input check
        // runs first inside it, where the body's own items (a `const` in the body) are in
        // scope, as without one; the guard outside keeps what it bound for the output check.
        let guard = local("__cc_guard");
        let guard_in = local("__cc_guard_in");
        let output = local("__cc_output");
        let fake = match cx.output.ty() {
            Some(ty) if !cx.output.is_opaque() => {
                let fake = local("__cc_fake");
                quote! {
                    #[allow(unreachable_code, clippy::diverging_sub_expression)]
                    if false {
                        let #fake: #ty = loop {};
                        return #fake;
                    }
                }
            }
            _ => quote!(),
        };
        let input_guard = quote! {
            if let ::core::result::Result::Err(#error) = #guard_in.check_inputs(#inputs) {
                #fail
            }
        };
        let body = item::body_with(body, quote!(#input_guard #fake));
        let run_body = if sig.asyncness.is_some() {
            quote!(async move #body.await)
        } else {
            quote!(#p::run_body(move || #body))
        };
        let ok = local("__cc_ok");
        let outputs_count = plan.outputs.len();
        let args_of = |value: &TokenStream| {
            let args = plan.outputs.iter().map(|clause| {
                let place = match clause.subject {
                    PlanSubject::Output(Some(index)) => {
                        let index = syn::Index::from(index as usize);
                        quote!(#value.#index)
                    }
                    _ => value.clone(),
                };
                if clause.sequence.is_some() {
                    quote!(#p::many(&#place))
                } else {
                    quote!(#p::one(&#place))
                }
            });
            quote!([#(#args),*])
        };
        let extract = match cx.output {
            Output::Result(_) => {
                let args = args_of(&quote!((*#ok)));
                quote! {
                    match &#output {
                        ::core::result::Result::Ok(#ok) => #args,
                        ::core::result::Result::Err(_) => ::core::array::from_fn::<
                            _,
                            #outputs_count,
                            _,
                        >(|_| #p::ClauseArg::One(::core::option::Option::None)),
                    }
                }
            }
            _ => args_of(&quote!(#output)),
        };
        quote!({
            #spec
            let mut #guard = #guard_type::new(&__CC_SPEC);
            let #guard_in = &mut #guard;
            let #output = #run_body;
            if let ::core::result::Result::Err(#error) = #guard.check_output(|| #extract) {
                #fail
            }
            #output
        })
    };
    quote! {
        #(#attrs)*
        #docs
        #vis #defaultness #sig #new_body
    }
}

fn expand_check(plan: &Plan, location: Span) -> TokenStream {
    let spec = spec_tokens(plan, "check!", location, true);
    let guard_type = guard_type(plan);
    let inputs = inputs_closure(plan);
    quote! {
        {
            #spec
            #guard_type::new(&__CC_SPEC).check_inputs(#inputs)
        }
    }
}
