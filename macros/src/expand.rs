//! Code generation: the plan's spec table in a `static` (the plan prints it) and one guard call
//! before the untouched body; with a `return` clause, the body runs in a closure (or `async` block) and its value is
//! checked on the way out. Generated code names only `::candle_contracts::__private::…` (or
//! the path `crate = ..` gives) and `::core::…` paths; its locals are `__cc_` names with mixed-site hygiene.

use candle_contracts_analysis::contract::lower;
use candle_contracts_shapes::Contract;
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, quote, quote_spanned};
use syn::Ident;

use crate::ctxt::Ctxt;
use crate::fallback;
use crate::item::{self, ContractFn, Output};
use crate::parse;
use crate::plan::{Access, ContractSpec, Failure, InCrate, MaskAccess, Plan, RuntimeBound, Step};
use crate::valid::{self, Context};

/// Everything the attribute and `check!` share: parse, validate, and either a plan (with the
/// tensor clauses lowered for the body's analysis) or errors.
pub(crate) fn analyze(
    args: TokenStream,
    cx: &Context,
    errors: &Ctxt,
) -> Option<(Plan, Option<Contract>)> {
    if args.is_empty() {
        errors.push(syn::Error::new(
            Span::call_site(),
            "empty contract: list at least one clause, e.g. `x: f32[N, D]`",
        ));
        return None;
    }
    let clauses = parse::parse_clauses(args, errors);
    let plan = valid::validate(&clauses, cx, errors);
    (!errors.has_errors()).then(|| (plan, lower::contract(&clauses)))
}

pub fn contract(args: TokenStream, input: TokenStream) -> TokenStream {
    if args.is_empty()
        && let Some(expanded) = crate::analysis::expand_scope(&input)
    {
        return expanded;
    }
    let location = args
        .clone()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span());
    if let Ok(item) = syn::parse2::<syn::ItemStruct>(input.clone()) {
        return expand_struct(args, item, input, location);
    }
    let mut item: ContractFn = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(error) => {
            let error = syn::Error::new(
                error.span(),
                format!("`#[contract]` goes on a function or a struct ({error})"),
            );
            return fallback::emit(error, input);
        }
    };
    // A second `#[contract]` below this one has not expanded yet: its clauses join these, so
    // the function gets one guard (two would define `__CC_SPEC` twice).
    let mut args = args;
    let mut merged = false;
    item.attrs.retain(|attr| {
        let is_contract = candle_contracts_analysis::contract::is_contract(attr);
        match &attr.meta {
            syn::Meta::List(list) if is_contract => {
                if !args.is_empty() && !list.tokens.is_empty() {
                    args.extend(quote!(,));
                }
                args.extend(list.tokens.clone());
                merged = true;
                false
            }
            _ => true,
        }
    });
    // `__struct_contract(...)`, from the `#[contract] impl` of a struct with a contract: a
    // method with `self` takes those clauses.
    let (rest, struct_clauses) = take_struct_clauses(args);
    args = rest;
    let took_struct_contract = struct_clauses.is_some();
    if let Some(clauses) = struct_clauses
        && item.sig.receiver().is_some()
        && !clauses.is_empty()
    {
        if !args.is_empty() {
            args.extend(quote!(,));
        }
        args.extend(clauses);
    }
    // On an error the function is emitted as written, less the contracts merged here.
    let input = if merged {
        item.to_token_stream()
    } else {
        input
    };
    // `#[contract]` without clauses on a function with a body: its body is checked at compile
    // time with what the analysis can see, and nothing is added to what runs. Inside a
    // `#[contract] mod` or `impl`, the scope checked it already.
    if only_checked_by_scope(&args) && item.body.is_some() {
        return input;
    }
    if args.is_empty()
        && let Some(body) = &item.body
    {
        let errors = crate::analysis::check_function(&Contract::default(), &item.sig, body);
        let errors = errors.into_iter().map(|e| e.to_compile_error());
        return quote!(#(#errors)* #input);
    }
    let errors = Ctxt::new();
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
    let analyzed = analyze(args, &cx, &errors);
    match (errors.check(), analyzed, &item.body) {
        (Ok(()), Some((plan, contract)), Some(body)) => {
            let probe = !took_struct_contract && item.sig.receiver().is_some();
            let mut expanded = expand_fn(&item, body, &plan, &cx, location, probe);
            if plan.static_checks
                && let Some(contract) = &contract
            {
                let errors = crate::analysis::check_function(contract, &item.sig, body);
                expanded.extend(errors.into_iter().map(|e| e.to_compile_error()));
            }
            expanded
        }
        (Err(errors), ..) => fallback::emit(errors, input),
        // Without errors there is a plan, and a body (its absence is an error).
        (Ok(()), ..) => input,
    }
}

/// `args` less its `__struct_contract(...)` (which the `#[contract] impl` of a struct with a
/// contract adds to each method's contract), and what that holds.
fn take_struct_clauses(args: TokenStream) -> (TokenStream, Option<TokenStream>) {
    let mut rest = TokenStream::new();
    let mut taken = None;
    for piece in crate::parse::split_commas(args) {
        let trees: Vec<proc_macro2::TokenTree> = piece.clone().into_iter().collect();
        match trees.as_slice() {
            [
                proc_macro2::TokenTree::Ident(name),
                proc_macro2::TokenTree::Group(group),
            ] if name == crate::syntax::kw::STRUCT_CONTRACT
                && group.delimiter() == proc_macro2::Delimiter::Parenthesis =>
            {
                taken = Some(group.stream());
            }
            _ if piece.is_empty() => {}
            _ => {
                if !rest.is_empty() {
                    rest.extend(quote!(,));
                }
                rest.extend(piece);
            }
        }
    }
    (rest, taken)
}

/// `#[contract(...)]` on a struct: its clauses are checked as the clauses of a method on
/// `self` (each field clause gets `self.`), and the struct is emitted as written with a
/// `StructContract` impl, which every contracted method of the struct checks that it took.
fn expand_struct(
    args: TokenStream,
    item: syn::ItemStruct,
    input: TokenStream,
    location: Span,
) -> TokenStream {
    if args.is_empty() {
        let error = syn::Error::new(
            item.ident.span(),
            "`#[contract]` on a struct states its fields, e.g. `#[contract(c_attn: \
             Linear[E -> 3 * E], n_head = H)]`; without clauses it goes on a function, an \
             `impl` or a `mod`",
        );
        return fallback::emit(error, input);
    }
    let fields = candle_contracts_analysis::contract::fields::field_names(&item);
    let clauses = match candle_contracts_analysis::contract::fields::method_clauses(&args, &fields)
    {
        Ok(clauses) => clauses,
        Err(field_errors) => {
            let errors = Ctxt::new();
            for error in field_errors {
                errors.push(syn::Error::new(error.span, error.message));
            }
            return match errors.check() {
                Err(errors) => fallback::emit(errors, input),
                Ok(()) => input,
            };
        }
    };
    let cx = Context {
        inline: false,
        function: item.ident.to_string(),
        params: Vec::new(),
        has_receiver: true,
        output: Output::Unit,
        name_span: item.ident.span(),
        const_generics: Vec::new(),
    };
    let errors = Ctxt::new();
    let analyzed = analyze(clauses, &cx, &errors);
    let krate = match (errors.check(), analyzed) {
        (Err(errors), _) => return fallback::emit(errors, input),
        (Ok(()), Some((plan, _))) => plan.krate,
        (Ok(()), None) => return input,
    };
    let name = &item.ident;
    let (impl_generics, ty_generics, where_clause) = item.generics.split_for_impl();
    quote_spanned! {location=>
        #item
        impl #impl_generics #krate::__private::StructContract for #name #ty_generics
            #where_clause {}
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
    let errors = Ctxt::new();
    let analyzed = analyze(input, &cx, &errors);
    match (errors.check(), analyzed) {
        (Ok(()), Some((plan, _))) => expand_check(&plan, location),
        (Err(errors), _) => fallback::emit_check(errors),
        // Without errors there is a plan.
        (Ok(()), None) => TokenStream::new(),
    }
}

/// `::candle_contracts::__private`, or the same under the path `crate = ..` gives.
fn private(plan: &Plan) -> TokenStream {
    let krate = &plan.krate;
    quote!(#krate::__private)
}

/// `tokens` with every span set to `span`, as `quote_spanned!` writes its own tokens: a trait
/// error in a call through the path is reported at the user's token.
fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|mut token| {
            token.set_span(span);
            token
        })
        .collect()
}

fn local(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
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

/// `let __cc_spec = { static __CC_SPEC: ContractSpec = …; &__CC_SPEC };`, located at the
/// contract for `file!()` / `line!()`. The static sits in its own block so that a second
/// contract under another name (`use contract as requires`) defines its own.
fn spec_tokens(plan: &Plan, function: &str, params: &[String], location: Span) -> TokenStream {
    let p = private(plan);
    let spec = ContractSpec {
        plan,
        function,
        params,
        location,
    };
    let spec = InCrate::new(&p, &spec);
    let local = local("__cc_spec");
    quote! {
        let #local: &'static #p::ContractSpec = {
            static __CC_SPEC: #p::ContractSpec = #spec;
            &__CC_SPEC
        };
    }
}

/// For each input clause, the expression of its `ClauseArg`, and the `let`s it needs first (a
/// path through `?`, `[i]` or `[..]` is held in a local while the guard runs).
fn access_tokens(plan: &Plan) -> (TokenStream, Vec<TokenStream>) {
    let p = private(plan);
    let mut held = TokenStream::new();
    let mut args = Vec::new();
    for (k, clause) in plan.inputs.iter().enumerate() {
        let span = clause.span.first;
        let sp = respan(&p, span);
        let arg = match &clause.access {
            Access::Param(ident) if clause.sequence.is_some() => {
                quote_spanned!(span=> #sp::many(&#ident))
            }
            Access::Param(ident) => {
                quote_spanned!(span=> #sp::one(&#ident))
            }
            Access::Path { root, steps, .. } => {
                let plain = steps.iter().all(|s| matches!(s, Step::Member(..)));
                if plain {
                    let place = member_chain(quote!(#root), steps);
                    if clause.sequence.is_some() {
                        quote_spanned!(span=> #sp::many(&#place))
                    } else {
                        quote_spanned!(span=> #sp::one(&#place))
                    }
                } else {
                    let local = local(&format!("__cc_held_{k}"));
                    let value = held_expr(&p, quote!(#root), steps, 0, true);
                    held.extend(quote_spanned!(span=> let #local = #value;));
                    quote_spanned!(span=> #p::Held::arg(&#local))
                }
            }
            // A derived subject is computed after the inputs pass (`later_tokens`).
            Access::Output(_) | Access::Derived { .. } => {
                quote!(#p::ClauseArg::One(::core::option::Option::None))
            }
        };
        args.push(arg);
    }
    (held, args)
}

fn member_chain(mut acc: TokenStream, steps: &[Step]) -> TokenStream {
    for step in steps {
        if let Step::Member(member, call) = step {
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
fn held_expr(
    p: &TokenStream,
    acc: TokenStream,
    steps: &[Step],
    depth: usize,
    place: bool,
) -> TokenStream {
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
        Step::Member(member, call) => {
            let acc = if *call {
                quote!(#acc.#member())
            } else {
                quote!(#acc.#member)
            };
            held_expr(p, acc, rest, depth, !call)
        }
        Step::Optional(span) => {
            let inner = held_expr(p, quote!(#v), rest, depth + 1, false);
            let acc = borrow_if(place, acc);
            let step = quote_spanned!(*span=> #p::OptionalStep::optional_step(#acc));
            quote! {
                match #step {
                    #some(#v) => #inner,
                    #none => #p::Held::Skip,
                }
            }
        }
        Step::Index(i, span) => {
            let inner = held_expr(p, quote!(#v), rest, depth + 1, false);
            let acc = borrow_if(place, acc);
            let step = quote_spanned!(*span=> #p::Elements::elements(#acc));
            quote! {
                match #step.get(#i) {
                    #some(#v) => #inner,
                    #none => #p::Held::Missing,
                }
            }
        }
        // An index of any integer type; a negative one, or one past the end, is missing.
        Step::IndexBy(ident) => {
            let inner = held_expr(p, quote!(#v), rest, depth + 1, false);
            let acc = borrow_if(place, acc);
            let span = ident.span();
            let step = quote_spanned!(span=> #p::Elements::elements(#acc));
            let at = quote_spanned!(span=> #p::PathIndex::position(&#ident));
            quote! {
                match #at.and_then(|__cc_at| #step.get(__cc_at)) {
                    #some(#v) => #inner,
                    #none => #p::Held::Missing,
                }
            }
        }
        Step::All(span) => {
            let element = member_chain(quote!(#v), rest);
            let element = match rest.last() {
                Some(Step::Member(_, false)) => quote!(&#element),
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
    let p = private(plan);
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
fn evaluated_array(p: &TokenStream, items: &[RuntimeBound]) -> TokenStream {
    let values = items.iter().map(|item| {
        let tokens = &item.tokens;
        let sp = respan(p, item.span);
        if item.dim {
            quote_spanned!(item.span=> #sp::dim_value(&(#tokens)))
        } else {
            quote_spanned!(item.span=> #sp::bound(&(#tokens)))
        }
    });
    quote!([#(#values),*])
}

/// `Guard::<DIMS, RUNS, BOUNDS, VALUES>`, for the plan's counts.
fn guard_type(plan: &Plan) -> TokenStream {
    let p = private(plan);
    let dims = plan.dims.len();
    let runs = plan.runs.len();
    let bounds = plan.runtime_bounds.len();
    let values = plan.values.len();
    quote!(#p::Guard::<#dims, #runs, #bounds, #values>)
}

/// The closure `check_inputs` runs in `full` and `shapes` mode: the constants' probes, the
/// held paths and the arguments, handed to the guard with the values and bounds.
fn inputs_closure(plan: &Plan) -> TokenStream {
    let p = private(plan);
    let inputs = local("__cc_inputs");
    let constants = constants_tokens(plan);
    let constants_local = local("__cc_constants");
    let (held, accesses) = access_tokens(plan);
    let values = evaluated_array(&p, &plan.values);
    let bounds = evaluated_array(&p, &plan.runtime_bounds);
    quote! {
        |#inputs| {
            #constants
            #held
            #inputs.check(&[#(#accesses),*], &#constants_local, #values, || #bounds)
        }
    }
}

/// Whether the contract has derived subjects or masks, checked after the inputs.
fn has_later(plan: &Plan) -> bool {
    !plan.masks.is_empty()
        || plan
            .inputs
            .iter()
            .any(|clause| matches!(clause.access, Access::Derived { .. }))
}

/// The `let`s that compute the derived subjects and braced masks in the function's scope (a `?`
/// in them returns the function's error), and the arguments of `check_derived`: the inputs
/// again, the derived subjects and the masks.
fn later_parts(plan: &Plan) -> (TokenStream, TokenStream) {
    let p = private(plan);
    let mut lets = TokenStream::new();
    let mut derived = Vec::new();
    // Each argument spanned at its expression, so a value that is no tensor is reported there.
    for clause in &plan.inputs {
        if let Access::Derived {
            index,
            tokens,
            span,
        } = &clause.access
        {
            let local = local(&format!("__cc_derived_{index}"));
            let sp = respan(&p, *span);
            lets.extend(quote!(let #local = #tokens;));
            if clause.sequence.is_some() {
                derived.push(quote_spanned!(*span=> #sp::many(#local)));
            } else {
                derived.push(quote_spanned!(*span=> #sp::one(#local)));
            }
        }
    }
    let mut masks = Vec::new();
    for (index, mask) in plan.masks.iter().enumerate() {
        match mask {
            MaskAccess::Param(ident) => {
                let sp = respan(&p, ident.span());
                masks.push(quote_spanned!(ident.span()=> #sp::one(&#ident)));
            }
            MaskAccess::Expr { tokens, span } => {
                let local = local(&format!("__cc_mask_{index}"));
                let sp = respan(&p, *span);
                lets.extend(quote!(let #local = #tokens;));
                masks.push(quote_spanned!(*span=> #sp::one(#local)));
            }
        }
    }
    let (held, accesses) = access_tokens(plan);
    lets.extend(held);
    let args = quote!(&[#(#accesses),*], &[#(#derived),*], &[#(#masks),*]);
    (lets, args)
}

/// After the input check: in `full` mode, once the inputs passed, the derived subjects and
/// masks are computed and checked with the value rules; nothing for a contract without them.
fn later_tokens(plan: &Plan, guard: &Ident, fail: &TokenStream) -> TokenStream {
    if !has_later(plan) {
        return TokenStream::new();
    }
    let error = local("__cc_error");
    let (lets, args) = later_parts(plan);
    quote! {
        if #guard.derives() {
            #lets
            if let ::core::result::Result::Err(#error) = #guard.check_derived(#args) {
                #fail
            }
        }
    }
}

/// The span of a type's first token (`default` for an empty one).
fn first_span(ty: &syn::Type, default: Span) -> Span {
    ty.into_token_stream()
        .into_iter()
        .next()
        .map_or(default, |t| t.span())
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
    probe: bool,
) -> TokenStream {
    let p = private(plan);
    let ContractFn {
        attrs,
        vis,
        defaultness,
        sig,
        ..
    } = item;
    // Only on a documented item: a doc section of ours would silence `missing_docs`.
    let documented = attrs.iter().any(|a| a.path().is_ident("doc"));
    let docs = if documented {
        doc_attrs(plan)
    } else {
        TokenStream::new()
    };
    let spec = spec_tokens(plan, &cx.function, &item::param_names(sig), location);
    // A method of a struct with a contract that it did not take (no `#[contract]` on its
    // `impl`, or the struct out of that `impl`'s sight) would run without the struct's
    // clauses: a type error instead, at the contract.
    let spec = match probe {
        true => quote_spanned! {location=>
            #spec
            {
                #[allow(unused_imports)]
                use #p::{ViaNoStructContract as _, ViaStructContract as _};
                let _: #p::NoStructContract = (&#p::StructProbe::<Self>::NEW).kind();
            }
        },
        false => spec,
    };
    let error = local("__cc_error");
    // A method's message names its type (`Block::forward`); `Self` exists where there is a
    // receiver, and is read only on the failure path.
    let failed = if sig.receiver().is_some() {
        quote!(#p::in_method::<Self>(#error))
    } else {
        quote!(#error)
    };
    let failure = match plan.on_violation {
        Some((failure, _)) => failure,
        None if cx.output.returns_result() => Failure::Error,
        None => Failure::Panic,
    };
    let fail = match failure {
        Failure::Error => {
            // Spanned at the return type, so a missing `From<ContractError>` is reported there.
            let span = cx
                .output
                .ty()
                .map_or(cx.name_span, |ty| first_span(ty, cx.name_span));
            let sp = respan(&p, span);
            let convert = quote_spanned!(span=> #sp::into_error(#failed));
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
        Failure::Panic => quote!(#p::violated(#failed)),
    };
    let guard_type = guard_type(plan);
    let cc_spec = local("__cc_spec");
    let inputs = inputs_closure(plan);
    let parts = item::BodyParts::of(body);
    let new_body = if plan.outputs.is_empty() && has_later(plan) {
        let guard = local("__cc_guard");
        let later = later_tokens(plan, &guard, &fail);
        let guard = quote! {
            #spec
            let mut #guard = #guard_type::new(#cc_spec);
            if let ::core::result::Result::Err(#error) = #guard.check_inputs(#inputs) {
                #fail
            }
            #later
        };
        parts.with(guard, true)
    } else if plan.outputs.is_empty() {
        // The guard is a temporary: in `off` mode it costs the mode's load and one test.
        let guard = quote! {
            #spec
            if let ::core::result::Result::Err(#error) =
                #guard_type::new(#cc_spec).check_inputs(#inputs)
            {
                #fail
            }
        };
        parts.with(guard, true)
    } else {
        // With a return clause the body runs in a closure (or `async` block). The input check
        // runs first inside it, outside the body's own block as without one; the guard outside
        // keeps what it bound for the output check.
        let guard = local("__cc_guard");
        let guard_in = local("__cc_guard_in");
        let output = local("__cc_output");
        let later = later_tokens(plan, &guard_in, &fail);
        let input_guard = quote! {
            if let ::core::result::Result::Err(#error) = #guard_in.check_inputs(#inputs) {
                #fail
            }
            #later
        };
        // The body's return type, for `?` and `return` inside it; an `impl Trait` cannot be
        // written there and is left to inference.
        let ty = cx.output.ty().filter(|_| !cx.output.is_opaque());
        let run_body = if sig.asyncness.is_some() {
            // An `async` block has no place for a return type: a `return` of that type that
            // never runs gives it one (no `loop {}`: no `unreachable_code` to allow).
            let fake = ty.map(|ty| {
                let span = Span::call_site().located_at(first_span(ty, cx.name_span));
                let fake = local("__cc_fake");
                quote_spanned! {span=>
                    if false {
                        let #fake: ::core::option::Option<#ty> = ::core::option::Option::None;
                        if let ::core::option::Option::Some(#fake) = #fake {
                            return #fake;
                        }
                    }
                }
            });
            let body = parts.with(quote!(#input_guard #fake), false);
            quote!(async move #body.await)
        } else {
            let ty = ty.map(|ty| quote!(-> #ty));
            let body = parts.with(input_guard, false);
            quote!(#p::run_body(move || #ty #body))
        };
        let ok = local("__cc_ok");
        let outputs_count = plan.outputs.len();
        let args_of = |value: &TokenStream| {
            let args = plan.outputs.iter().map(|clause| {
                let place = match clause.access {
                    Access::Output(Some(index)) => {
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
        let inner_attrs = &parts.inner_attrs;
        let stream = quote! {
            #inner_attrs
            #spec
            let mut #guard = #guard_type::new(#cc_spec);
            let #guard_in = &mut #guard;
            let #output = #run_body;
            if let ::core::result::Result::Err(#error) = #guard.check_output(|| #extract) {
                #fail
            }
            #output
        };
        // The body's own braces: with the macro's, clippy takes the whole function for
        // generated code and skips its lints (`missing_errors_doc`).
        let mut block = proc_macro2::Group::new(proc_macro2::Delimiter::Brace, stream);
        block.set_span(body.span());
        proc_macro2::TokenTree::Group(block).into()
    };
    quote! {
        #(#attrs)*
        #docs
        #vis #defaultness #sig #new_body
    }
}

fn expand_check(plan: &Plan, location: Span) -> TokenStream {
    let spec = spec_tokens(plan, "check!", &[], location);
    let guard_type = guard_type(plan);
    let cc_spec = local("__cc_spec");
    let inputs = inputs_closure(plan);
    if !has_later(plan) {
        return quote! {
            {
                #spec
                #guard_type::new(#cc_spec).check_inputs(#inputs)
            }
        };
    }
    let guard = local("__cc_guard");
    let (lets, args) = later_parts(plan);
    quote! {
        {
            #spec
            let mut #guard = #guard_type::new(#cc_spec);
            match #guard.check_inputs(#inputs) {
                ::core::result::Result::Ok(()) if #guard.derives() => {
                    #lets
                    #guard.check_derived(#args)
                }
                other => other,
            }
        }
    }
}

/// Whether a contract's tokens are the mark a `#[contract] mod` or `impl` gives a bare
/// `#[contract]` it checked (`__checked_by_scope = true`), and nothing else.
fn only_checked_by_scope(args: &TokenStream) -> bool {
    let trees: Vec<TokenTree> = args.clone().into_iter().collect();
    matches!(trees.as_slice(),
        [TokenTree::Ident(option), TokenTree::Punct(eq), TokenTree::Ident(value)]
            if option == crate::syntax::kw::CHECKED_BY_SCOPE
                && eq.as_char() == '='
                && value == "true")
}
