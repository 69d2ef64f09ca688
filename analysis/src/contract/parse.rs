//! Reads the syntax of a contract from the attribute's tokens: one `Parse` impl per syntax
//! type, so a clause, a shape or a dim parses on its own (`syn::parse_str::<Clause>(..)`).

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream, Parser};
use syn::{Ident, LitFloat, LitInt, LitStr, Member, Token};

use super::ctxt::Ctxt;
use super::syntax::{
    AllowAll, ArithOp, BoundExpr, Clause, CmpOp, Constraint, CratePath, DTypeName, Dim, DimExpr,
    FieldBinding, FieldFlag, FieldStep, IgnoreValue, Mask, NotSwiglu, OptionClause, Pattern,
    Relation, Shape, SpanRange, Subject, TensorClause, TensorSpec, Tokens, code_list, code_text,
    kw, options_list,
};

/// Splits a token stream at its top-level commas. Commas inside brackets, parentheses and
/// braces stay inside their group, so `[N, C]` is one piece.
pub fn split_commas(tokens: TokenStream) -> Vec<TokenStream> {
    let mut pieces = vec![TokenStream::new()];
    for tree in tokens {
        match &tree {
            TokenTree::Punct(p) if p.as_char() == ',' => pieces.push(TokenStream::new()),
            _ => pieces.last_mut().expect("never empty").extend([tree]),
        }
    }
    pieces
}

/// Parses every clause of an attribute; a clause that does not parse adds its error and the
/// others are still parsed, so all errors come out in one compile.
pub fn parse_clauses(tokens: TokenStream, errors: &Ctxt) -> Vec<Clause> {
    let pieces = split_commas(tokens);
    let count = pieces.len();
    let mut clauses = Vec::new();
    // The convolution whose `with` settings are being read (`self.conv: Conv2d[CIN -> COUT, 3]
    // with stride = S, padding = 1`), and the settings read so far.
    let mut open: Option<(Subject, Vec<String>, usize)> = None;
    // The weight clauses of `with groups = G` convolutions (by index), and their groups.
    let mut grouped: Vec<(usize, DimExpr)> = Vec::new();
    // The settings after a `with` that was refused: one error says why, not one each.
    let mut refused_settings = false;
    for (i, piece) in pieces.into_iter().enumerate() {
        if refused_settings && is_setting_piece(&piece) {
            continue;
        }
        refused_settings = false;
        if let Some((layer, seen, at)) = &mut open
            && is_setting_piece(&piece)
        {
            match parse_setting(piece, layer, seen) {
                Ok(clause) => {
                    grouped.extend(groups_of(&clause, seen, *at));
                    clauses.push(clause);
                }
                Err(error) => errors.push(error),
            }
            continue;
        }
        open = None;
        let (piece, settings) = split_settings(piece);
        // The layer the bracket before `with` sizes (`Conv2d[..] with ..`).
        let conv_named = {
            let trees: Vec<TokenTree> = piece.clone().into_iter().collect();
            matches!(trees.as_slice(), [.., TokenTree::Ident(layer), TokenTree::Group(_)]
                if layer == "Conv1d" || layer == "Conv2d")
        };
        if piece.is_empty() {
            // A trailing comma is fine; an empty clause in the middle is not.
            if i + 1 < count && i > 0 {
                errors.push(syn::Error::new(
                    Span::call_site(),
                    "empty clause between two commas",
                ));
            }
            continue;
        }
        let embedding = is_embedding_clause(&piece);
        match parse_clause.parse2(piece) {
            Ok(clause) => {
                let width = match (&clause, embedding) {
                    (Clause::Tensor(tensor), true) => hidden_size_binding(tensor),
                    _ => None,
                };
                if let Some((with, first)) = settings {
                    match conv_layer(&clause, with, conv_named) {
                        Ok(layer) => {
                            let mut seen = Vec::new();
                            match parse_setting(first, &layer, &mut seen) {
                                Ok(setting) => {
                                    let at = clauses.len();
                                    grouped.extend(groups_of(&setting, &seen, at));
                                    clauses.push(clause);
                                    clauses.push(setting);
                                    open = Some((layer, seen, at));
                                }
                                Err(error) => errors.push(error),
                            }
                        }
                        Err(error) => {
                            errors.push(error);
                            refused_settings = true;
                        }
                    }
                    continue;
                }
                clauses.push(clause);
                clauses.extend(width.map(Clause::Bind));
            }
            Err(error) => errors.push(error),
        }
    }
    apply_groups(&mut clauses, grouped);
    clauses
}

/// The groups a setting just read gives the weight clause at `at` (`groups = G`, or a number
/// other than 1).
fn groups_of(setting: &Clause, seen: &[String], at: usize) -> Option<(usize, DimExpr)> {
    if seen.last().map(String::as_str) != Some("groups") {
        return None;
    }
    match setting {
        Clause::Bind(binding) => Some((at, DimExpr::Name(binding.dim.clone()))),
        Clause::Relation(Relation {
            rhs: DimExpr::Lit(n),
            ..
        }) if *n != 1 => Some((at, DimExpr::Lit(*n))),
        _ => None,
    }
}

/// The settings a convolution's clause may state after `with`: the fields of candle-nn's
/// `Conv1dConfig` and `Conv2dConfig` that give its output's size.
const CONV_SETTINGS: &[&str] = &["padding", "stride", "dilation", "groups"];

/// A clause cut at its top-level `with` (`self.conv: Conv2d[CIN -> COUT, 3] with stride = 2`):
/// the clause, and the `with` keyword with the first setting's tokens.
pub(crate) fn split_settings(piece: TokenStream) -> (TokenStream, Option<(Ident, TokenStream)>) {
    let trees: Vec<TokenTree> = piece.clone().into_iter().collect();
    let found = trees.iter().enumerate().find_map(|(i, tree)| match tree {
        TokenTree::Ident(ident)
            if ident == "with"
                && i > 0
                && matches!(&trees[i - 1],
                    TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket) =>
        {
            Some((i, ident.clone()))
        }
        _ => None,
    });
    match found {
        Some((at, with)) => (
            trees[..at].iter().cloned().collect(),
            Some((with, trees[at + 1..].iter().cloned().collect())),
        ),
        None => (piece, None),
    }
}

/// Whether a clause is one more setting of the convolution before it (`padding = 1`).
pub(crate) fn is_setting_piece(piece: &TokenStream) -> bool {
    let trees: Vec<TokenTree> = piece.clone().into_iter().collect();
    matches!(trees.as_slice(), [TokenTree::Ident(name), TokenTree::Punct(eq), rest @ ..]
        if CONV_SETTINGS.contains(&name.to_string().as_str())
            && eq.as_char() == '='
            && !matches!(rest.first(), Some(TokenTree::Punct(p)) if p.as_char() == '='))
}

/// The convolution a clause with `with` settings names (its path from `self`, without the
/// `weight()` the clause checks).
fn conv_layer(clause: &Clause, with: Ident, conv_named: bool) -> syn::Result<Subject> {
    let Clause::Tensor(TensorClause {
        subject: Subject::Field { root, steps },
        ..
    }) = clause
    else {
        return Err(syn::Error::new(
            with.span(),
            "`with` gives a convolution's settings: `self.conv: Conv2d[CIN -> COUT, 3] with \
             stride = 2`",
        ));
    };
    let conv = conv_named && steps.last().is_some_and(|step| {
        matches!(step, FieldStep::Member { member: Member::Named(m), call: true } if m == "weight")
    });
    let layer_steps = member_steps(&steps[..steps.len().saturating_sub(1)]);
    if !conv {
        return Err(syn::Error::new(
            with.span(),
            "only a `Conv1d` or `Conv2d` clause takes settings after `with`",
        ));
    }
    let optional = steps
        .iter()
        .any(|step| matches!(step, FieldStep::Optional(_)));
    match layer_steps {
        Some(steps) if root == "self" && !steps.is_empty() => Ok(Subject::Field {
            root: root.clone(),
            steps,
        }),
        _ if root == "self" && optional => Err(syn::Error::new(
            with.span(),
            "settings after `with` are not read through an optional step (`?`): state the \
             layer's sizes alone (`self.conv_shortcut?: Conv2d[CIN -> COUT, 1]`)",
        )),
        _ => Err(syn::Error::new(
            with.span(),
            "the settings after `with` are read from a layer of `self` (`self.conv: Conv2d[..] \
             with stride = 2`)",
        )),
    }
}

/// A copy of a path's steps where each is a field or an argument-less call (`.conv`,
/// `.config()`); `None` where one is an optional step or an index.
fn member_steps(steps: &[FieldStep]) -> Option<Vec<FieldStep>> {
    steps
        .iter()
        .map(|step| match step {
            FieldStep::Member { member, call } => Some(FieldStep::Member {
                member: member.clone(),
                call: *call,
            }),
            _ => None,
        })
        .collect()
}

/// `stride = S` or `padding = 1` of the convolution `layer`: the value of its
/// `config().stride` names the dim `S` (as `self.n_head = H` does), or must be the number
/// (as the relation `{self.conv.config().padding} == 1`).
fn parse_setting(
    tokens: TokenStream,
    layer: &Subject,
    seen: &mut Vec<String>,
) -> syn::Result<Clause> {
    let parse = |input: ParseStream<'_>| -> syn::Result<Clause> {
        let name: Ident = input
            .call(Ident::parse_any)
            .map_err(|e| syn::Error::new(e.span(), "after `with` comes a setting: `stride = 2`"))?;
        let setting = name.to_string();
        if !CONV_SETTINGS.contains(&setting.as_str()) {
            return Err(syn::Error::new(
                name.span(),
                format!(
                    "a convolution's settings are {}; `{setting}` is none of them",
                    code_list(CONV_SETTINGS)
                ),
            ));
        }
        if seen.contains(&setting) {
            return Err(syn::Error::new(
                name.span(),
                format!("`{setting}` is set twice"),
            ));
        }
        seen.push(setting.clone());
        input.parse::<Token![=]>()?;
        let layer_path = match layer {
            Subject::Field { root, steps } => member_steps(steps).map(|path| (root, path)),
            _ => None,
        };
        let Some((root, mut path)) = layer_path else {
            return Err(syn::Error::new(
                name.span(),
                "the settings after `with` are read from a layer of `self`",
            ));
        };
        path.push(FieldStep::Member {
            member: Member::Named(Ident::new("config", name.span())),
            call: true,
        });
        path.push(FieldStep::Member {
            member: Member::Named(name.clone()),
            call: false,
        });
        let subject = Subject::Field {
            root: root.clone(),
            steps: path,
        };
        if input.peek(LitInt) {
            let value: LitInt = input.parse()?;
            expect_end(input, "after the setting's value")?;
            let n = value.base10_parse::<u64>().map_err(|_| {
                syn::Error::new(
                    value.span(),
                    format!("`{setting}` is a whole number of 0 or more, or a dim's name"),
                )
            })?;
            let span = SpanRange {
                first: name.span(),
                last: value.span(),
            };
            return Ok(Clause::Relation(Relation {
                lhs: DimExpr::Block {
                    tokens: Tokens(path_tokens(&subject)),
                    span,
                },
                op: CmpOp::Eq,
                rhs: DimExpr::Lit(n),
            }));
        }
        let dim = input.call(Ident::parse_any).map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("after `{setting} =` comes a dim's name or a number: `{setting} = S`"),
            )
        })?;
        if matches!(
            dim.to_string().as_str(),
            "_" | "self" | "Self" | "crate" | "super"
        ) {
            return Err(syn::Error::new(
                dim.span(),
                format!("after `{setting} =` comes a dim's name or a number: `{setting} = S`"),
            ));
        }
        expect_end(input, "after the dim's name")?;
        Ok(Clause::Bind(FieldBinding {
            subject,
            span: SpanRange {
                first: name.span(),
                last: dim.span(),
            },
            dim,
        }))
    };
    parse.parse2(tokens)
}

/// The tokens of a path of members from its root (`self.conv.config().padding`), with their
/// own spans.
fn path_tokens(subject: &Subject) -> TokenStream {
    let Subject::Field { root, steps } = subject else {
        return TokenStream::new();
    };
    let mut tokens = root.to_token_stream();
    for step in steps {
        if let FieldStep::Member { member, call } = step {
            tokens.extend(quote::quote!(.#member));
            if *call {
                tokens.extend(quote::quote!(()));
            }
        }
    }
    tokens
}

/// A convolution of `with groups = G` has a weight `[COUT, CIN / G, K, K]`: its clause's second
/// dim is divided by the groups it sets (only the clause the `with` follows).
fn apply_groups(clauses: &mut [Clause], grouped: Vec<(usize, DimExpr)>) {
    for (at, g) in grouped {
        let Some(Clause::Tensor(tensor)) = clauses.get_mut(at) else {
            continue;
        };
        let Some(cin) = tensor.spec.shape.dims.get_mut(1) else {
            continue;
        };
        let inner = match std::mem::replace(cin, Dim::Any) {
            Dim::Fixed(n) => DimExpr::Lit(n),
            Dim::Named(name) => DimExpr::Name(name),
            Dim::Expr(e) => DimExpr::Paren(Box::new(e)),
            other => {
                *cin = other;
                continue;
            }
        };
        let span = tensor.span;
        *cin = Dim::Expr(DimExpr::Binary {
            lhs: Box::new(inner),
            op: ArithOp::Div,
            op_span: span,
            rhs: Box::new(g),
        });
    }
}

/// Whether a clause is a layer clause of an `Embedding` (`self.wte: Embedding[V, E]`).
fn is_embedding_clause(piece: &TokenStream) -> bool {
    let trees: Vec<TokenTree> = piece.clone().into_iter().collect();
    let Some(colon) = trees.iter().position(
        |tree| matches!(tree, TokenTree::Punct(p) if p.as_char() == ':' && p.spacing() == proc_macro2::Spacing::Alone),
    ) else {
        return false;
    };
    trees[colon + 1..].windows(2).any(|pair| {
        matches!((&pair[0], &pair[1]), (TokenTree::Ident(name), TokenTree::Group(group))
            if name == "Embedding" && group.delimiter() == proc_macro2::Delimiter::Bracket)
    })
}

/// `self.wte: Embedding[V, E]` also says the layer's `hidden_size()` is `E`: candle's
/// `Embedding::forward` gives rows of its `hidden_size`, which `Embedding::new` sets apart
/// from the table (the table's width is `E`, the rows' too only once this is checked). As
/// `self.wte.hidden_size() = E`, checked with the clause; only for a named width of a path of
/// fields from `self`.
fn hidden_size_binding(clause: &TensorClause) -> Option<FieldBinding> {
    let Subject::Field { root, steps } = &clause.subject else {
        return None;
    };
    let [fields @ .., _table] = steps.as_slice() else {
        return None;
    };
    let Some(Dim::Named(width)) = clause.spec.shape.dims.get(1) else {
        return None;
    };
    if root != "self" {
        return None;
    }
    let mut path = Vec::new();
    for step in fields {
        match step {
            FieldStep::Member {
                member,
                call: false,
            } => path.push(FieldStep::Member {
                member: member.clone(),
                call: false,
            }),
            _ => return None,
        }
    }
    path.push(FieldStep::Member {
        member: Member::Named(Ident::new("hidden_size", clause.span.first)),
        call: true,
    });
    Some(FieldBinding {
        subject: Subject::Field {
            root: root.clone(),
            steps: path,
        },
        dim: width.clone(),
        span: clause.span,
    })
}

fn first_span(input: ParseStream<'_>) -> Span {
    input.cursor().span()
}

fn parse_clause(input: ParseStream<'_>) -> syn::Result<Clause> {
    let start = first_span(input);
    if input.peek(Token![return]) {
        let keyword: Token![return] = input.parse()?;
        let index = if input.peek(Token![.]) {
            input.parse::<Token![.]>()?;
            let index: syn::Index = input.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "after `return.` comes the index of a tuple element, e.g. `return.0`",
                )
            })?;
            Some(index.index)
        } else {
            None
        };
        return tensor_clause(input, start, Subject::Return(keyword.span.into(), index));
    }
    if input.peek(syn::token::Brace) && input.peek2(Token![:]) && !input.peek2(Token![::]) {
        let TokenTree::Group(group) = input.parse::<TokenTree>()? else {
            unreachable!("peeked a brace group")
        };
        if group.stream().is_empty() {
            return Err(syn::Error::new(
                group.span(),
                "empty braces: a derived subject is a Rust expression whose value is a tensor, \
                 e.g. `{target.sum(1)?}: f32[N] in 0.999..=1.001`",
            ));
        }
        let subject = Subject::Derived {
            tokens: Tokens(group.stream()),
            span: group.span().into(),
        };
        return tensor_clause(input, start, subject);
    }
    if input.peek(Token![self])
        || (input.peek(Ident::peek_any)
            && (input.peek2(Token![.])
                || input.peek2(Token![?])
                || input.peek2(syn::token::Bracket)))
    {
        let subject = parse_field_subject(input)?;
        if input.peek(Token![=]) && !input.peek(Token![==]) {
            return field_binding(input, start, subject);
        }
        if input.peek(Token![!=]) {
            return not_swiglu(input, start, subject);
        }
        return tensor_clause(input, start, subject);
    }
    if input.peek(Ident::peek_any) && input.peek2(Token![:]) && !input.peek2(Token![::]) {
        let name: Ident = input.call(Ident::parse_any)?;
        return tensor_clause(input, start, Subject::Param(name));
    }
    if input.peek(Token![crate]) && input.peek2(Token![=]) && !input.peek2(Token![==]) {
        let keyword: Token![crate] = input.parse()?;
        input.parse::<Token![=]>()?;
        let expected = |e: syn::Error| {
            syn::Error::new(
                e.span(),
                "expected the path of the `candle-contracts` crate, e.g. `crate = ::cc`",
            )
        };
        let path = if input.peek(LitStr) {
            let lit: LitStr = input.parse()?;
            lit.parse_with(syn::Path::parse_mod_style)
                .map_err(expected)?
        } else {
            input.call(syn::Path::parse_mod_style).map_err(expected)?
        };
        expect_end(input, "after the crate path")?;
        return Ok(Clause::Crate(CratePath {
            keyword: keyword.span.into(),
            path,
        }));
    }
    let keyword_option = input.peek(Token![static]) && input.peek2(Token![=]);
    if keyword_option || input.peek(Ident) && input.peek2(Token![=]) && !input.peek2(Token![==]) {
        let name: Ident = input.call(Ident::parse_any)?;
        input.parse::<Token![=]>()?;
        if !input.peek(Ident::peek_any) && !kw::OPTIONS.iter().any(|o| name == o) {
            // `N = 3`: a relation written with one `=`, or an option that does not exist.
            return Err(syn::Error::new(
                name.span(),
                format!(
                    "unknown option `{name}` ({}); to require a dim to equal a value, write a \
                     relation: `{name} == ...`",
                    options_list()
                ),
            ));
        }
        let value = input.call(Ident::parse_any).map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("expected a value for option `{name}`, e.g. `{name} = panic`"),
            )
        })?;
        expect_end(input, "after the option value")?;
        return Ok(Clause::Option(OptionClause { name, value }));
    }
    if input.peek(Ident)
        || input.peek(LitInt)
        || input.peek(syn::token::Paren)
        || input.peek(syn::token::Brace)
    {
        let lhs = parse_dim_expr(input)?;
        let op = parse_cmp_op(input)?;
        // `act != Swiglu`: an activation's clause, written without `self.` (a field's name is
        // lowercase; `N != Swiglu` may compare a dim with a constant).
        if matches!(op, CmpOp::Ne)
            && matches!(&lhs, DimExpr::Name(name)
                if name.unraw().to_string().starts_with(|c: char| c.is_lowercase()))
            && input
                .fork()
                .call(Ident::parse_any)
                .is_ok_and(|ident| ident == "Swiglu")
        {
            return Err(syn::Error::new(
                start,
                format!(
                    "`!= Swiglu` states an `Activation` field of `self`: for a field, write \
                     `self.{lhs} != Swiglu` (in a struct contract, the field's name)"
                ),
            ));
        }
        let rhs = parse_dim_expr(input)?;
        expect_end(input, "after the relation")?;
        return Ok(Clause::Relation(Relation { lhs, op, rhs }));
    }
    Err(input.error(
        "expected a clause: `name: dtype[dims] ...`, `self.field: ...`, `return: ...`, \
         a relation such as `T <= P`, or an option such as `on_violation = panic`",
    ))
}

/// Whether a subject is a path of fields and argument-less methods from `self` (what a field
/// binding, a flag or an activation's clause states).
fn is_self_field_path(subject: &Subject) -> bool {
    matches!(subject, Subject::Field { root, steps }
        if root == "self" && steps.iter().all(|s| matches!(s, FieldStep::Member { .. })))
}

/// The rest of `self.n_head = H` after its subject: the dim an integer field's value names.
fn field_binding(input: ParseStream<'_>, start: Span, subject: Subject) -> syn::Result<Clause> {
    if !is_self_field_path(&subject) {
        return Err(syn::Error::new(
            start,
            "a field's value, a dim (`self.n_head = H`) or a `bool` (`self.multi_query = true`), \
             is stated on a path of fields from `self`; a size of another parameter's field \
             goes in a relation (`P == {cache.len}`)",
        ));
    }
    input.parse::<Token![=]>()?;
    // `self.multi_query = true`: a `bool` field's value.
    if input.peek(syn::LitBool) {
        let value: syn::LitBool = input.parse()?;
        expect_end(input, "after `true` or `false`")?;
        return Ok(Clause::Flag(FieldFlag {
            subject,
            value: value.value,
            span: SpanRange {
                first: start,
                last: value.span,
            },
        }));
    }
    let dim = input.call(Ident::parse_any).map_err(|e| {
        syn::Error::new(
            e.span(),
            "after `=` comes the name of the dim the field's value is, e.g. `self.n_head = H`, \
             or a `bool` field's value, `self.multi_query = true`",
        )
    })?;
    expect_end(input, "after the dim's name")?;
    let end = dim.span();
    Ok(Clause::Bind(FieldBinding {
        subject,
        dim,
        span: SpanRange {
            first: start,
            last: end,
        },
    }))
}

/// The rest of `self.act_fn != Swiglu` after its subject: an `Activation` field that keeps
/// its input's shape.
fn not_swiglu(input: ParseStream<'_>, start: Span, subject: Subject) -> syn::Result<Clause> {
    if !is_self_field_path(&subject) {
        return Err(syn::Error::new(
            start,
            "`!= Swiglu` states an `Activation` field on a path of fields from `self`, e.g. \
             `self.act_fn != Swiglu`",
        ));
    }
    input.parse::<Token![!=]>()?;
    // `Swiglu`, or a path to it (`Activation::Swiglu`).
    let path = input.call(syn::Path::parse_mod_style).map_err(|e| {
        syn::Error::new(
            e.span(),
            "after `!=` comes `Swiglu`: `self.act_fn != Swiglu`",
        )
    })?;
    let Some(variant) = path.segments.last().map(|segment| segment.ident.clone()) else {
        return Err(syn::Error::new(
            start,
            "after `!=` comes `Swiglu`: `self.act_fn != Swiglu`",
        ));
    };
    if variant != "Swiglu" {
        return Err(syn::Error::new(
            variant.span(),
            format!(
                "`{variant}` keeps the shape as every `Activation` but `Swiglu` does: \
                 `{subject} != Swiglu` says the activation keeps its input's shape"
            ),
        ));
    }
    expect_end(input, "after `!= Swiglu`")?;
    Ok(Clause::NotSwiglu(NotSwiglu {
        subject,
        span: SpanRange {
            first: start,
            last: variant.span(),
        },
    }))
}

/// The layers a clause may name, with the accessor of the tensor their sizes state.
const LAYERS: &[(&str, &str)] = &[
    ("Linear", "weight"),
    ("Embedding", "embeddings"),
    ("LayerNorm", "weight"),
    ("RmsNorm", "weight"),
    ("Conv1d", "weight"),
    ("Conv2d", "weight"),
];

/// The rest of a tensor clause after its subject: `: dtypes shape constraints`, or a layer
/// clause (`self.q_proj: Linear[E -> H * D]`), which states the shape of the layer's weight.
fn tensor_clause(input: ParseStream<'_>, start: Span, subject: Subject) -> syn::Result<Clause> {
    input.parse::<Token![:]>()?;
    if is_layer_clause(input) {
        if has_else(input) {
            return Err(syn::Error::new(
                start,
                "`else P = 0` follows a tensor clause through `?` (`self.kv_cache?.0: f32[B, \
                 P, D] else P = 0`); a layer clause states the layer's sizes only",
            ));
        }
        let (spec, accessor) = parse_layer_spec(input)?;
        let subject = match subject {
            Subject::Param(root) => Subject::Field {
                root,
                steps: vec![accessor],
            },
            Subject::Field { root, mut steps } => {
                steps.push(accessor);
                Subject::Field { root, steps }
            }
            _ => {
                return Err(syn::Error::new(
                    start,
                    "a layer clause names a layer: `self.q_proj: Linear[E -> E]`",
                ));
            }
        };
        let span = SpanRange {
            first: start,
            last: spec.shape.span.last,
        };
        return Ok(Clause::Tensor(TensorClause {
            subject,
            spec,
            span,
            absent_zero: None,
        }));
    }
    if !has_else(input) {
        let spec = parse_tensor_spec(input)?;
        let span = SpanRange {
            first: start,
            last: last_span(&spec),
        };
        return Ok(Clause::Tensor(TensorClause {
            subject,
            spec,
            span,
            absent_zero: None,
        }));
    }
    // `self.kv_cache?.0: f32[B, KVH, P, HD] else P = 0`.
    let mut before = TokenStream::new();
    while !input.peek(Token![else]) {
        before.extend([input.parse::<TokenTree>()?]);
    }
    let keyword: Token![else] = input.parse()?;
    let spec = parse_tensor_spec.parse2(before)?;
    let dim = absent_zero(input, &subject, &spec, keyword.span)?;
    let span = SpanRange {
        first: start,
        last: dim.span(),
    };
    Ok(Clause::Tensor(TensorClause {
        subject,
        spec,
        span,
        absent_zero: Some(dim),
    }))
}

/// Whether a clause goes on with `else` after its spec (at the top level of its tokens).
fn has_else(input: ParseStream<'_>) -> bool {
    let fork = input.fork();
    while !fork.is_empty() {
        if fork.peek(Token![else]) {
            return true;
        }
        if fork.parse::<TokenTree>().is_err() {
            return false;
        }
    }
    false
}

/// `P = 0` after a clause's `else`: a dim its shape names, 0 where an optional step of its
/// path finds `None`.
fn absent_zero(
    input: ParseStream<'_>,
    subject: &Subject,
    spec: &TensorSpec,
    keyword: Span,
) -> syn::Result<Ident> {
    let optional = matches!(subject, Subject::Field { steps, .. }
        if steps.iter().any(|step| matches!(step, FieldStep::Optional(_))));
    let every = matches!(subject, Subject::Field { steps, .. }
        if steps.iter().any(|step| matches!(step, FieldStep::All(_))));
    if !optional || every || spec.sequence.is_some() {
        return Err(syn::Error::new(
            keyword,
            format!(
                "`else P = 0` gives a size where an optional step (`?`) of the path finds \
                 `None`, as an empty cache holds no positions; `{subject}` is no path with a \
                 `?`{}",
                if every { " to one element" } else { "" }
            ),
        ));
    }
    let form = "after `else` comes a dim of the shape and `= 0`, e.g. \
                `self.kv_cache?.0: f32[B, KVH, P, HD] else P = 0`";
    let dim = input
        .call(Ident::parse_any)
        .map_err(|e| syn::Error::new(e.span(), form))?;
    if !input.peek(Token![=]) || input.peek(Token![==]) {
        return Err(input.error(form));
    }
    input.parse::<Token![=]>()?;
    let value: LitInt = input.parse().map_err(|e| syn::Error::new(e.span(), form))?;
    if value.base10_parse::<u64>().ok() != Some(0) {
        return Err(syn::Error::new(
            value.span(),
            "where the path finds `None` there is nothing to hold: the size is 0 (`else P = 0`)",
        ));
    }
    expect_end(input, "after `else P = 0`")?;
    let named = spec
        .shape
        .dims
        .iter()
        .any(|d| matches!(d, Dim::Named(name) if name.unraw() == dim.unraw()));
    if !named {
        let word = dim.unraw().to_string();
        let in_expression = spec.shape.dims.iter().any(|d| {
            matches!(d, Dim::Expr(expr) if expr
                .to_string()
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|part| part == word))
        });
        let why = match in_expression {
            true => {
                "stands in an expression of the shape: `else` gives the size of a dim the \
                     shape names alone (`f32[B, P, D]`)"
            }
            false => "is no dim of the shape: `else` gives the size of one of its named dims",
        };
        return Err(syn::Error::new(
            dim.span(),
            format!("`{word}` {why}, in `{subject}`"),
        ));
    }
    Ok(dim)
}

/// Whether what follows the `:` is a layer, after its dtypes if any (`bf16 Linear[E -> E]`).
fn is_layer_clause(input: ParseStream<'_>) -> bool {
    let fork = input.fork();
    let mut last = None;
    while let Ok(ident) = fork.call(Ident::parse_any) {
        last = Some(ident);
        if fork.peek(Token![|]) {
            let _ = fork.parse::<Token![|]>();
        } else if fork.peek(Ident::peek_any) && !fork.peek(syn::token::Bracket) {
            continue;
        } else {
            break;
        }
    }
    last.is_some_and(|ident| LAYERS.iter().any(|(name, _)| ident == name))
        && fork.peek(syn::token::Bracket)
}

/// `[dtypes] Layer[sizes]`: the shape of the layer's weight, and the step that reads it.
/// `Linear[IN -> OUT]` is a weight `[OUT, IN]`, `Embedding[V, E]` a table `[V, E]`,
/// `LayerNorm[D]` and `RmsNorm[D]` a weight `[D]`, `Conv1d[CIN -> COUT, K]` a weight
/// `[COUT, CIN, K]` and `Conv2d[CIN -> COUT, K]` one of `[COUT, CIN, K, K]` (one group).
fn parse_layer_spec(input: ParseStream<'_>) -> syn::Result<(TensorSpec, FieldStep)> {
    let mut dtypes = Vec::new();
    let layer = loop {
        let ident = input.call(Ident::parse_any)?;
        if LAYERS.iter().any(|(name, _)| ident == name) && input.peek(syn::token::Bracket) {
            break ident;
        }
        dtypes.push(DTypeName {
            name: ident.to_string(),
            span: ident.span().into(),
        });
        if input.peek(Token![|]) {
            input.parse::<Token![|]>()?;
        }
    };
    if dtypes.is_empty() {
        dtypes.push(DTypeName {
            name: "float".to_string(),
            span: layer.span().into(),
        });
    }
    let TokenTree::Group(group) = input.parse::<TokenTree>()? else {
        unreachable!("peeked a bracket group")
    };
    let dims = |tokens: TokenStream| -> syn::Result<Vec<Dim>> {
        split_commas(tokens)
            .into_iter()
            .filter(|piece| !piece.is_empty())
            .map(|piece| parse_dim.parse2(piece))
            .collect()
    };
    // `IN -> OUT..`: the sides of the arrow.
    let trees: Vec<TokenTree> = group.stream().into_iter().collect();
    let arrow = trees.windows(2).position(|w| {
        matches!((&w[0], &w[1]), (TokenTree::Punct(a), TokenTree::Punct(b))
            if a.as_char() == '-' && b.as_char() == '>' && a.spacing() == proc_macro2::Spacing::Joint)
    });
    let (before, after) = match arrow {
        Some(at) => (
            dims(trees[..at].iter().cloned().collect())?,
            Some(dims(trees[at + 2..].iter().cloned().collect())?),
        ),
        None => (dims(group.stream())?, None),
    };
    let name = layer.to_string();
    let wrong = |form: &str| {
        Err(syn::Error::new(
            group.span(),
            format!("`{name}` takes its sizes as `{name}{form}`"),
        ))
    };
    let weight = match (name.as_str(), before, after) {
        ("Linear", mut inner, Some(mut outer)) if inner.len() == 1 && outer.len() == 1 => {
            vec![outer.remove(0), inner.remove(0)]
        }
        ("Linear", ..) => return wrong("[IN -> OUT]"),
        ("Embedding", table, None) if table.len() == 2 => table,
        ("Embedding", ..) => return wrong("[V, E]"),
        ("LayerNorm" | "RmsNorm", dim, None) if dim.len() == 1 => dim,
        ("LayerNorm" | "RmsNorm", ..) => return wrong("[D]"),
        ("Conv1d" | "Conv2d", mut inner, Some(mut outer))
            if inner.len() == 1 && outer.len() == 2 =>
        {
            let kernel = outer.remove(1);
            let mut weight = vec![outer.remove(0), inner.remove(0)];
            if name == "Conv2d" {
                weight.push(copy_dim(&kernel));
            }
            weight.push(kernel);
            weight
        }
        _ => return wrong("[CIN -> COUT, K]"),
    };
    if !input.is_empty() {
        return Err(input.error(
            "a layer clause states the layer's sizes only; check its output with a clause on it",
        ));
    }
    let accessor = LAYERS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("weight", |(_, accessor)| accessor);
    let step = FieldStep::Member {
        member: Member::Named(Ident::new(accessor, layer.span())),
        call: true,
    };
    let spec = TensorSpec {
        dtypes,
        shape: Shape {
            span: group.span().into(),
            dims: weight,
        },
        constraints: Vec::new(),
        sequence: None,
    };
    Ok((spec, step))
}

/// A second use of a dim written once (a square kernel's `K`).
fn copy_dim(dim: &Dim) -> Dim {
    match dim {
        Dim::Fixed(n) => Dim::Fixed(*n),
        Dim::Named(ident) => Dim::Named(ident.clone()),
        other => syn::parse::Parser::parse_str(parse_dim, &other.to_string()).unwrap_or(Dim::Any),
    }
}

fn last_span(spec: &TensorSpec) -> Span {
    match spec.constraints.last() {
        Some(Constraint::In { patterns, .. }) => patterns
            .last()
            .map(|p| p.span().last)
            .unwrap_or(spec.shape.span.first),
        Some(Constraint::Ignore {
            values, allow_all, ..
        }) => allow_all
            .as_ref()
            .map(|a| a.span.first)
            .or_else(|| values.last().map(|v| v.span().last))
            .unwrap_or(spec.shape.span.first),
        Some(other) => other.span(),
        None => spec.shape.span.first,
    }
}

fn parse_field_subject(input: ParseStream<'_>) -> syn::Result<Subject> {
    let root = input.call(Ident::parse_any)?;
    let mut steps = Vec::new();
    loop {
        if input.peek(Token![.]) {
            input.parse::<Token![.]>()?;
            let member: Member = if input.peek(Ident::peek_any) {
                Member::Named(input.call(Ident::parse_any)?)
            } else {
                input.parse()?
            };
            let call = if input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in input);
                if !content.is_empty() {
                    return Err(content.error(
                        "a field path may call methods only without arguments, e.g. \
                         `self.embedding.embeddings()`; for anything else, check a braced \
                         expression with `check!` in the body",
                    ));
                }
                true
            } else {
                false
            };
            steps.push(FieldStep::Member { member, call });
        } else if input.peek(Token![?]) {
            let question: Token![?] = input.parse()?;
            steps.push(FieldStep::Optional(question.span.into()));
        } else if input.peek(syn::token::Bracket) {
            let content;
            let bracket = syn::bracketed!(content in input);
            let span = bracket.span.join();
            if content.peek(Token![..]) && !content.peek(Token![..=]) {
                content.parse::<Token![..]>()?;
                if !content.is_empty() {
                    return Err(content.error(
                        "a contract path takes one element (`[0]`) or every element (`[..]`), \
                         not a range",
                    ));
                }
                steps.push(FieldStep::All(span.into()));
            } else if content.peek(Ident::peek_any) {
                let ident = content.call(Ident::parse_any)?;
                if !content.is_empty() {
                    return Err(syn::Error::new(
                        span,
                        "a contract path indexes with a number (`self.layers[0]`), an integer \
                         parameter (`cache.kvs[block_idx]`) or `[..]` for every element; for a \
                         computed index, use `check!` in the body",
                    ));
                }
                steps.push(FieldStep::IndexBy(ident));
            } else {
                let index: LitInt = content.parse().map_err(|_| {
                    syn::Error::new(
                        span,
                        "a contract path indexes with a number (`self.layers[0]`), an integer \
                         parameter (`cache.kvs[block_idx]`) or `[..]` for every element; for a \
                         computed index, use `check!` in the body",
                    )
                })?;
                let value = index.base10_parse::<usize>()?;
                if !content.is_empty() {
                    return Err(content.error("expected `]` after the index"));
                }
                steps.push(FieldStep::Index(value, span.into()));
            }
        } else {
            break;
        }
    }
    if steps.is_empty() {
        return Err(syn::Error::new(
            root.span(),
            "a `self` clause names a field, e.g. `self.weight: f32[V, D]`",
        ));
    }
    Ok(Subject::Field { root, steps })
}

fn expect_end(input: ParseStream<'_>, context: &str) -> syn::Result<()> {
    if input.is_empty() {
        Ok(())
    } else {
        Err(input.error(format!(
            "unexpected `{}` {context}; separate clauses with commas",
            input
                .cursor()
                .token_tree()
                .map(|(t, _)| t.to_string())
                .unwrap_or_default()
        )))
    }
}

/// Rust's number types that are no candle dtype (`u32`, `f32`.. are both: a shape follows).
const RUST_NUMBER_TYPES: &[&str] = &["usize", "isize", "u16", "u64", "u128", "i8", "i128", "bool"];

fn parse_tensor_spec(input: ParseStream<'_>) -> syn::Result<TensorSpec> {
    if input.peek(syn::token::Bracket) {
        return parse_sequence_spec(input);
    }
    let mut dtypes = Vec::new();
    loop {
        if input.peek(syn::token::Bracket) || input.is_empty() {
            let msg = if dtypes.is_empty() {
                "expected a dtype before the shape, e.g. `f32[N, C]` (`_` allows any dtype)"
            } else {
                "expected another dtype after `|`"
            };
            return Err(input.error(msg));
        }
        let ident = if input.peek(Token![_]) {
            let underscore: Token![_] = input.parse()?;
            Ident::new("_", underscore.span)
        } else if input.peek(LitInt) || input.peek(LitFloat) {
            return Err(input.error(
                "expected a dtype such as `f32`, `u32` or a family (`float`, `int`, `uint`, \
                 `sint`, `_`)",
            ));
        } else {
            input.call(Ident::parse_any).map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "expected a dtype such as `f32`, `u32` or a family (`float`, `int`, `uint`, \
                     `sint`, `_`)",
                )
            })?
        };
        dtypes.push(DTypeName {
            name: ident.to_string(),
            span: ident.span().into(),
        });
        if input.peek(Token![|]) {
            input.parse::<Token![|]>()?;
            continue;
        }
        break;
    }
    if !input.peek(syn::token::Bracket) {
        // `n: usize`: a number parameter, which no clause states.
        if let [only] = dtypes.as_slice()
            && input.is_empty()
            && RUST_NUMBER_TYPES.contains(&only.name.as_str())
        {
            return Err(syn::Error::new(
                only.span.first,
                format!(
                    "a clause states a tensor, and `{}` is a Rust number type: a number \
                     parameter needs no clause; use its value in a shape (`f32[N, {{n}}]`) or \
                     a relation (`N <= n`)",
                    only.name
                ),
            ));
        }
        return Err(input.error(
            "expected a shape in brackets after the dtype, e.g. `f32[N, C]`; `[]` is a scalar \
             and `[..]` any shape",
        ));
    }
    let shape = parse_shape(input)?;
    let mut constraints = Vec::new();
    while !input.is_empty() {
        constraints.push(parse_constraint(input)?);
    }
    Ok(TensorSpec {
        dtypes,
        shape,
        constraints,
        sequence: None,
    })
}

/// `[f32[E] in 0.0..; N]`: a sequence of tensors and their count.
fn parse_sequence_spec(input: ParseStream<'_>) -> syn::Result<TensorSpec> {
    let TokenTree::Group(group) = input.parse::<TokenTree>()? else {
        unreachable!("peeked a bracket group")
    };
    let mut element = TokenStream::new();
    let mut count = None;
    for tree in group.stream() {
        match &tree {
            TokenTree::Punct(p) if p.as_char() == ';' && count.is_none() => {
                count = Some(TokenStream::new());
            }
            _ => match &mut count {
                Some(count) => count.extend([tree]),
                None => element.extend([tree]),
            },
        }
    }
    let Some(count) = count else {
        return Err(syn::Error::new(
            group.span(),
            "expected a dtype before the shape, e.g. `f32[N, C]`; for a sequence of tensors \
             write the element's spec and the count, e.g. `[f32[E]; N]`",
        ));
    };
    // `[Block; L]`: a `Vec` of the crate's structs, which a clause cannot state whole.
    if let [TokenTree::Ident(name)] = element.clone().into_iter().collect::<Vec<_>>().as_slice() {
        return Err(syn::Error::new(
            name.span(),
            format!(
                "a sequence of `{name}`s is not checked as a whole; state what each element \
                 holds, e.g. `self.layers[..].proj: Linear[E -> E]` (every element) or \
                 `self.layers[0].proj.weight(): f32[E, E]`"
            ),
        ));
    }
    let mut spec = parse_tensor_spec.parse2(element)?;
    if spec.sequence.is_some() {
        return Err(syn::Error::new(
            group.span(),
            "a sequence of sequences cannot be checked; name the inner sequences in a loop \
             with `check!`",
        ));
    }
    if count.is_empty() {
        return Err(syn::Error::new(
            group.span(),
            "expected the count after `;`, e.g. `[f32[E]; N]` (`_` for any count)",
        ));
    }
    let count = parse_dim.parse2(count)?;
    if matches!(count, Dim::Rest(_) | Dim::Run { .. }) {
        return Err(syn::Error::new(
            group.span(),
            "a sequence's count is one number: a dim, a literal or `_`",
        ));
    }
    if !input.is_empty() {
        return Err(input.error(
            "rules of a sequence's elements go inside its brackets: `[f32[E] in 0.0..=1.0; N]`",
        ));
    }
    spec.sequence = Some(count);
    Ok(spec)
}

fn parse_shape(input: ParseStream<'_>) -> syn::Result<Shape> {
    let group = match input.parse::<TokenTree>()? {
        TokenTree::Group(group) if group.delimiter() == Delimiter::Bracket => group,
        other => {
            return Err(syn::Error::new(
                other.span(),
                "expected a shape in brackets",
            ));
        }
    };
    let mut dims = Vec::new();
    let pieces = split_commas(group.stream());
    let count = pieces.len();
    for (i, piece) in pieces.into_iter().enumerate() {
        if piece.is_empty() {
            if i + 1 == count {
                continue; // `[N, C,]` or `[]`
            }
            return Err(syn::Error::new(
                group.span(),
                "empty dim between two commas in this shape",
            ));
        }
        dims.push(parse_dim.parse2(piece)?);
    }
    Ok(Shape {
        span: group.span().into(),
        dims,
    })
}

fn parse_dim(input: ParseStream<'_>) -> syn::Result<Dim> {
    let dim = if input.peek(Token![..]) && !input.peek(Token![..=]) {
        let dots: Token![..] = input.parse()?;
        Dim::Rest(dots.spans[0].into())
    } else if input.peek(Token![_]) {
        input.parse::<Token![_]>()?;
        Dim::Any
    } else if input.peek(Token![*]) {
        let star: Token![*] = input.parse()?;
        let name: Ident = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected a name after `*`, e.g. `*B` for a run of dims",
            )
        })?;
        Dim::Run {
            star: star.span.into(),
            name,
        }
    } else {
        match parse_dim_expr(input)? {
            DimExpr::Lit(value) => Dim::Fixed(value),
            DimExpr::Name(ident) => Dim::Named(ident),
            expr => Dim::Expr(expr),
        }
    };
    if !input.is_empty() {
        return Err(input.error("unexpected token in this dim; separate dims with commas"));
    }
    Ok(dim)
}

pub fn parse_dim_expr(input: ParseStream<'_>) -> syn::Result<DimExpr> {
    let mut lhs = parse_dim_term(input)?;
    loop {
        let op = if input.peek(Token![+]) && !input.peek(Token![+=]) {
            ArithOp::Add
        } else if input.peek(Token![-]) && !input.peek(Token![-=]) && !input.peek(Token![->]) {
            ArithOp::Sub
        } else {
            return Ok(lhs);
        };
        let op_span = input.parse::<TokenTree>()?.span();
        let rhs = parse_dim_term(input)?;
        lhs = DimExpr::Binary {
            lhs: Box::new(lhs),
            op,
            op_span: op_span.into(),
            rhs: Box::new(rhs),
        };
    }
}

fn parse_dim_term(input: ParseStream<'_>) -> syn::Result<DimExpr> {
    let mut lhs = parse_dim_atom(input)?;
    loop {
        let op = if input.peek(Token![*]) && !input.peek(Token![*=]) {
            ArithOp::Mul
        } else if input.peek(Token![/]) && !input.peek(Token![/=]) {
            ArithOp::Div
        } else if input.peek(Token![%]) && !input.peek(Token![%=]) {
            ArithOp::Rem
        } else {
            return Ok(lhs);
        };
        let op_span = input.parse::<TokenTree>()?.span();
        let rhs = parse_dim_atom(input)?;
        lhs = DimExpr::Binary {
            lhs: Box::new(lhs),
            op,
            op_span: op_span.into(),
            rhs: Box::new(rhs),
        };
    }
}

fn parse_dim_atom(input: ParseStream<'_>) -> syn::Result<DimExpr> {
    if input.peek(LitInt) {
        let lit: LitInt = input.parse()?;
        let value = lit.base10_parse::<u64>().map_err(|_| {
            syn::Error::new(
                lit.span(),
                "a dim is a non-negative integer that fits in 64 bits",
            )
        })?;
        return Ok(DimExpr::Lit(value));
    }
    if input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in input);
        let inner = parse_dim_expr(&content)?;
        if !content.is_empty() {
            return Err(content.error("unexpected token in this dim expression"));
        }
        return Ok(DimExpr::Paren(Box::new(inner)));
    }
    if starts_keyword_path(input) {
        let first: TokenTree = input.parse()?;
        return Err(unbraced_expression(input, first.into(), "a value"));
    }
    if input.peek(Ident) {
        let ident: Ident = input.parse()?;
        if continues_as_expression(input) {
            return Err(unbraced_expression(
                input,
                TokenTree::Ident(ident).into(),
                "a value",
            ));
        }
        return Ok(DimExpr::Name(ident));
    }
    if input.peek(syn::token::Brace) {
        let TokenTree::Group(group) = input.parse::<TokenTree>()? else {
            unreachable!("peeked a brace group")
        };
        if group.stream().is_empty() {
            return Err(syn::Error::new(
                group.span(),
                "empty braces: write a Rust expression inside, e.g. `{self.hidden_size}`",
            ));
        }
        return Ok(DimExpr::Block {
            tokens: Tokens(group.stream()),
            span: group.span().into(),
        });
    }
    if input.peek(Token![-]) {
        return Err(
            input.error("dims are non-negative: a dim or dim expression cannot start with `-`")
        );
    }
    if input.peek(LitFloat) {
        return Err(input.error("a dim is a whole number, not a float"));
    }
    if input.is_empty() {
        return Err(input.error("expected a dim: a number, a name, `_`, `..` or `*name`"));
    }
    Err(input.error(
        "expected a dim: a number, a name, `_`, `..`, `*name` or an expression such as `N + 1`",
    ))
}

fn parse_cmp_op(input: ParseStream<'_>) -> syn::Result<CmpOp> {
    let op = if input.peek(Token![==]) {
        input.parse::<Token![==]>()?;
        CmpOp::Eq
    } else if input.peek(Token![!=]) {
        input.parse::<Token![!=]>()?;
        CmpOp::Ne
    } else if input.peek(Token![<=]) {
        input.parse::<Token![<=]>()?;
        CmpOp::Le
    } else if input.peek(Token![>=]) {
        input.parse::<Token![>=]>()?;
        CmpOp::Ge
    } else if input.peek(Token![<]) {
        input.parse::<Token![<]>()?;
        CmpOp::Lt
    } else if input.peek(Token![>]) {
        input.parse::<Token![>]>()?;
        CmpOp::Gt
    } else if input.peek(Token![:]) {
        return Err(
            input.error("a tensor clause starts with a parameter name, `self.field` or `return`")
        );
    } else {
        return Err(input
            .error("expected a comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`) in this relation"));
    };
    Ok(op)
}

fn parse_constraint(input: ParseStream<'_>) -> syn::Result<Constraint> {
    if input.peek(Token![in]) {
        let keyword: Token![in] = input.parse()?;
        let mut patterns = vec![parse_pattern(input)?];
        while input.peek(Token![|]) {
            input.parse::<Token![|]>()?;
            patterns.push(parse_pattern(input)?);
        }
        return Ok(Constraint::In {
            keyword: keyword.span.into(),
            patterns,
        });
    }
    if input.peek(LitStr) {
        return Ok(Constraint::Note(input.parse()?));
    }
    if input.peek(Token![where]) {
        let keyword: Token![where] = input.parse()?;
        let mask = if input.peek(syn::token::Brace) {
            let TokenTree::Group(group) = input.parse::<TokenTree>()? else {
                unreachable!("peeked a brace group")
            };
            if group.stream().is_empty() {
                return Err(syn::Error::new(
                    group.span(),
                    "empty braces: write the mask as a Rust expression, e.g. \
                     `where {input_ids.ge(2)?}`",
                ));
            }
            Mask::Block {
                tokens: Tokens(group.stream()),
                span: group.span().into(),
            }
        } else if input.peek(Ident) {
            Mask::Param(input.parse()?)
        } else {
            return Err(input.error(
                "expected a mask after `where`: a parameter (`where attention_mask`) or a \
                 braced expression (`where {input_ids.ge(2)?}`, `where {&self.mask}`)",
            ));
        };
        return Ok(Constraint::Where {
            keyword: keyword.span.into(),
            mask,
        });
    }
    let ident = match input.call(Ident::parse_any) {
        Ok(ident) => ident,
        Err(_) => {
            return Err(input.error(format!(
                "expected {} or a note string after the shape",
                code_list(kw::CONSTRAINTS)
            )));
        }
    };
    match ident.to_string().as_str() {
        kw::IGNORE => {
            let mut values = vec![parse_ignore_value(input)?];
            while input.peek(Token![|]) {
                input.parse::<Token![|]>()?;
                values.push(parse_ignore_value(input)?);
            }
            let allow_all = if input.peek(Ident) && input.fork().parse::<Ident>()? == kw::ALLOW_ALL
            {
                let keyword = input.parse::<Ident>()?;
                let condition = if input.peek(syn::token::Brace) {
                    let TokenTree::Group(group) = input.parse::<TokenTree>()? else {
                        unreachable!("peeked a brace group")
                    };
                    Some(group.stream())
                } else {
                    None
                };
                Some(AllowAll {
                    span: keyword.span().into(),
                    condition: condition.map(Tokens),
                })
            } else {
                None
            };
            Ok(Constraint::Ignore {
                keyword: ident.span().into(),
                values,
                allow_all,
            })
        }
        kw::FINITE => Ok(Constraint::Finite(ident.span().into())),
        kw::INTEGRAL => Ok(Constraint::Integral(ident.span().into())),
        kw::CONTIGUOUS => Ok(Constraint::Contiguous(ident.span().into())),
        kw::ALLOW_ALL => Err(syn::Error::new(
            ident.span(),
            "`allow_all` goes right after the ignore values, e.g. `ignore -100 allow_all`",
        )),
        other => {
            let hint = super::suggest::did_you_mean(other, kw::CONSTRAINTS.iter().copied())
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            Err(syn::Error::new(
                ident.span(),
                format!(
                    "unknown constraint `{other}`: expected {} or a note string after the \
                     shape{hint}",
                    code_list(kw::CONSTRAINTS)
                ),
            ))
        }
    }
}

fn parse_pattern(input: ParseStream<'_>) -> syn::Result<Pattern> {
    let start = first_span(input);
    if input.peek(Token![..=]) {
        input.parse::<Token![..=]>()?;
        let hi = parse_bound(input, "after `..=`")?;
        let span = SpanRange::single(start).to(hi.span());
        return Ok(Pattern::Range {
            lo: None,
            hi: Some(hi),
            inclusive: true,
            span,
        });
    }
    if input.peek(Token![..]) {
        let dots: Token![..] = input.parse()?;
        let Some(hi) = parse_optional_bound(input)? else {
            return Err(syn::Error::new(
                dots.spans[0],
                "`..` alone allows every value; write `finite` to reject NaN and infinities, \
                 or give a bound such as `..=1.0`",
            ));
        };
        let span = SpanRange::single(start).to(hi.span());
        return Ok(Pattern::Range {
            lo: None,
            hi: Some(hi),
            inclusive: false,
            span,
        });
    }
    let lo = parse_bound(input, "after `in` or `|`")?;
    if input.peek(Token![..=]) {
        input.parse::<Token![..=]>()?;
        let hi = parse_bound(input, "after `..=`")?;
        let span = lo.span().to(hi.span());
        return Ok(Pattern::Range {
            lo: Some(lo),
            hi: Some(hi),
            inclusive: true,
            span,
        });
    }
    if input.peek(Token![..]) {
        let dots: Token![..] = input.parse()?;
        let hi = parse_optional_bound(input)?;
        let last = hi.as_ref().map(|h| h.span().last).unwrap_or(dots.spans[1]);
        let span = SpanRange {
            first: lo.span().first,
            last,
        };
        return Ok(Pattern::Range {
            lo: Some(lo),
            hi,
            inclusive: false,
            span,
        });
    }
    Ok(Pattern::Single(lo))
}

/// A bound is present after `..` when the next token can start one and is not a reserved word
/// (so `in 0.. finite` is an open range followed by `finite`).
fn parse_optional_bound(input: ParseStream<'_>) -> syn::Result<Option<BoundExpr>> {
    let starts_bound = input.peek(LitInt)
        || input.peek(LitFloat)
        || input.peek(Token![-])
        || input.peek(syn::token::Brace)
        || starts_keyword_path(input)
        || (input.peek(Ident) && {
            let ident: Ident = input.fork().parse()?;
            !kw::RESERVED.contains(&ident.to_string().as_str()) || ident == kw::MAX
        });
    if starts_bound {
        Ok(Some(parse_bound(input, "after `..`")?))
    } else {
        Ok(None)
    }
}

fn parse_bound(input: ParseStream<'_>, context: &str) -> syn::Result<BoundExpr> {
    let minus_span = input.span();
    let (number, negative) = parse_number(input)?;
    match number {
        Some(Number::Int { value, span }) => return Ok(BoundExpr::Int { value, span }),
        Some(Number::Float { value, text, span }) => {
            return Ok(BoundExpr::Float { value, text, span });
        }
        None => {}
    }
    if negative && (input.peek(Ident) || starts_keyword_path(input)) {
        // `-f64::MAX`, `-cfg.limit`, `-n`: the negated value needs braces.
        let first: TokenTree = input.parse()?;
        let mut minus = proc_macro2::Punct::new('-', proc_macro2::Spacing::Alone);
        minus.set_span(minus_span);
        let tokens: TokenStream = [TokenTree::Punct(minus), first].into_iter().collect();
        return Err(unbraced_expression(input, tokens, "a bound"));
    }
    if negative {
        return Err(input.error(
            "`-` goes only before a number; for a negative dim expression use a braced \
             expression such as `{-(n as i64)}`",
        ));
    }
    if starts_keyword_path(input) {
        let first: TokenTree = input.parse()?;
        return Err(unbraced_expression(input, first.into(), "a bound"));
    }
    if input.peek(Ident) {
        let ident: Ident = input.parse()?;
        if continues_as_expression(input) {
            return Err(unbraced_expression(
                input,
                TokenTree::Ident(ident).into(),
                "a bound",
            ));
        }
        return Ok(BoundExpr::Name(ident));
    }
    if input.peek(syn::token::Brace) {
        let TokenTree::Group(group) = input.parse::<TokenTree>()? else {
            unreachable!("peeked a brace group")
        };
        if group.stream().is_empty() {
            return Err(syn::Error::new(
                group.span(),
                "empty braces: write a Rust expression inside, e.g. `{self.vocab_size}`",
            ));
        }
        return Ok(BoundExpr::Block {
            tokens: Tokens(group.stream()),
            span: group.span().into(),
        });
    }
    Err(input.error(format!(
        "expected a bound {context}: a number, a dim, a parameter or a braced expression \
         such as `{{self.vocab_size}}`"
    )))
}

/// Whether a name just read goes on as a path, a field, a call or a cast (`f64::MAX`,
/// `cfg.num_labels`), which only braces can hold.
fn continues_as_expression(input: ParseStream<'_>) -> bool {
    input.peek(Token![::])
        || (input.peek(Token![.]) && !input.peek(Token![..]))
        || input.peek(syn::token::Paren)
        || input.peek(Token![as])
}

/// `self.n`, `Self::MAX`, `crate::LABELS`, `super::X`: keywords syn's `Ident` does not peek.
fn starts_keyword_path(input: ParseStream<'_>) -> bool {
    input.peek(Token![self])
        || input.peek(Token![Self])
        || input.peek(Token![crate])
        || input.peek(Token![super])
}

/// A bound or dim written as a path or an expression (`f64::MAX`, `cfg.num_labels`, `-n`),
/// `tokens` its start: the error that says to brace it, spanned on all of it.
fn unbraced_expression(input: ParseStream<'_>, mut tokens: TokenStream, what: &str) -> syn::Error {
    // A reserved word ends the expression unless it follows `::` or `.` (`f64::MAX`).
    let mut joined = false;
    loop {
        let ends = input.is_empty()
            || input.peek(Token![,])
            || input.peek(Token![|])
            || input.peek(Token![..]);
        let reserved = input.peek(Ident)
            && input
                .fork()
                .parse::<Ident>()
                .is_ok_and(|ident| kw::RESERVED.contains(&ident.to_string().as_str()));
        if ends || (reserved && !joined) {
            break;
        }
        match input.parse::<TokenTree>() {
            Ok(token) => {
                joined = matches!(&token, TokenTree::Punct(p) if p.as_char() == ':' || p.as_char() == '.');
                tokens.extend([token]);
            }
            Err(_) => break,
        }
    }
    let text = code_text(&tokens);
    let text = match text.strip_prefix("- ") {
        Some(negated) => format!("-{negated}"),
        None => text,
    };
    syn::Error::new_spanned(
        &tokens,
        format!("{what} that is a path or an expression goes in braces: write `{{{text}}}`"),
    )
}

fn parse_ignore_value(input: ParseStream<'_>) -> syn::Result<IgnoreValue> {
    let (number, negative) = parse_number(input)?;
    match number {
        Some(Number::Int { value, span }) => return Ok(IgnoreValue::Int { value, span }),
        Some(Number::Float { value, text, span }) => {
            return Ok(IgnoreValue::Float { value, text, span });
        }
        None => {}
    }
    if !negative && input.peek(syn::token::Brace) {
        let TokenTree::Group(group) = input.parse::<TokenTree>()? else {
            unreachable!("peeked a brace group")
        };
        return Ok(IgnoreValue::Block {
            tokens: Tokens(group.stream()),
            span: group.span().into(),
        });
    }
    if !negative && input.peek(Ident) {
        let ident: Ident = input.fork().parse()?;
        if ident == kw::MAX {
            input.parse::<Ident>()?;
            return Ok(IgnoreValue::Max(ident.span().into()));
        }
    }
    Err(input.error(
        "expected an ignored value after `ignore`: a number such as `-100`, `MAX` (the \
         dtype's maximum, candle's skip sentinel) or a braced expression such as \
         `{options.ignore_index}`",
    ))
}

/// A number as bounds and ignored values start with, its `-` included in value and span.
enum Number {
    Int {
        value: i128,
        span: SpanRange,
    },
    Float {
        value: f64,
        text: String,
        span: SpanRange,
    },
}

/// Reads an optional `-` and the number after it; `None` (and whether a `-` was read) when
/// no number follows, for the caller's other forms and message.
fn parse_number(input: ParseStream<'_>) -> syn::Result<(Option<Number>, bool)> {
    let start = first_span(input);
    let negative = input.peek(Token![-]);
    if negative {
        input.parse::<Token![-]>()?;
    }
    let number = if input.peek(LitInt) {
        let lit: LitInt = input.parse()?;
        Some(Number::Int {
            value: parse_int(&lit, negative)?,
            span: SpanRange {
                first: start,
                last: lit.span(),
            },
        })
    } else if input.peek(LitFloat) {
        let lit: LitFloat = input.parse()?;
        let (value, text) = parse_float(&lit, negative)?;
        Some(Number::Float {
            value,
            text,
            span: SpanRange {
                first: start,
                last: lit.span(),
            },
        })
    } else {
        None
    };
    Ok((number, negative))
}

fn parse_int(lit: &LitInt, negative: bool) -> syn::Result<i128> {
    let magnitude = lit
        .base10_parse::<u128>()
        .map_err(|_| syn::Error::new(lit.span(), "integer too large for a bound"))?;
    let too_large = || syn::Error::new(lit.span(), "integer too large for a bound");
    if negative {
        if magnitude > i128::MAX as u128 + 1 {
            return Err(too_large());
        }
        Ok((magnitude as i128).wrapping_neg())
    } else {
        i128::try_from(magnitude).map_err(|_| too_large())
    }
}

fn parse_float(lit: &LitFloat, negative: bool) -> syn::Result<(f64, String)> {
    let value = lit
        .base10_parse::<f64>()
        .map_err(|_| syn::Error::new(lit.span(), "cannot read this float"))?;
    if !value.is_finite() {
        // As rustc's `overflowing_literals`: the value would round to infinity.
        return Err(syn::Error::new(
            lit.span(),
            "float literal out of range for f64 (it would round to infinity): write a finite \
             value, or leave that end of a range open (`0.0..`)",
        ));
    }
    let digits = lit.base10_digits();
    if negative {
        Ok((-value, format!("-{digits}")))
    } else {
        Ok((value, digits.to_string()))
    }
}

// One `Parse` impl per syntax type, so a test parses a clause, a shape or a dim on its own.

impl Parse for Clause {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        parse_clause(input)
    }
}

impl Parse for TensorSpec {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        parse_tensor_spec(input)
    }
}

impl Parse for Shape {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        parse_shape(input)
    }
}

impl Parse for Dim {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        parse_dim(input)
    }
}

impl Parse for DimExpr {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        parse_dim_expr(input)
    }
}

impl Parse for Constraint {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        parse_constraint(input)
    }
}

/// How the real number a float literal's digits spell (`-0.1`, `2.5e-3`: syn's base-10 digits,
/// sign included) compares with `value`, the `f64` Rust rounds it to: `Equal` when the literal
/// is exactly that `f64`.
pub fn literal_vs_f64(digits: &str, value: f64) -> std::cmp::Ordering {
    let (negative, digits) = match digits.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, digits),
    };
    // Rust prints a float with a given precision exactly; an f64 has at most 767 significant
    // decimal digits.
    let exact = format!("{:.1100e}", value.abs());
    let magnitude = decimal_magnitude(digits).cmp(&decimal_magnitude(&exact));
    if negative {
        magnitude.reverse()
    } else {
        magnitude
    }
}

/// A decimal as `(non-zero, exponent of its first digit, digits without leading or trailing
/// zeros)`, which orders as the numbers do for non-negative decimals.
fn decimal_magnitude(text: &str) -> (bool, i64, String) {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], text[at + 1..].parse::<i64>().unwrap_or(0)),
        None => (text, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all: String = int
        .chars()
        .chain(frac.chars())
        .filter(char::is_ascii_digit)
        .collect();
    let leading = all.len() - all.trim_start_matches('0').len();
    let digits = all
        .trim_start_matches('0')
        .trim_end_matches('0')
        .to_string();
    if digits.is_empty() {
        return (false, 0, String::new());
    }
    let first = exponent + int.len() as i64 - leading as i64;
    (true, first, digits)
}
