//! The syntax of a contract, as written, with the spans of its tokens. No meaning yet: names are
//! resolved and rules are checked in `valid.rs`.
//!
//! Grammar (the book's reference chapter describes each form):
//!
//! ```text
//! contract    := clause (',' clause)* ','?
//! clause      := subject ':' dtypes shape constraint* | relation | option
//! subject     := IDENT | 'self' ('.' member ('(' ')')?)+ | 'return'
//! dtypes      := dtype ('|' dtype)*
//! shape       := '[' (dim (',' dim)*)? ']'
//! dim         := INT | IDENT | '_' | '..' | '*' IDENT | dim_expr
//! constraint  := 'in' pattern ('|' pattern)* | 'ignore' value ('|' value)* 'allow_all'?
//!              | 'finite' | 'contiguous' | STRING
//! relation    := dim_expr ('==' | '!=' | '<' | '<=' | '>' | '>=') dim_expr
//! option      := IDENT '=' IDENT
//! ```

use std::fmt;

use proc_macro2::{Delimiter, Punct, Spacing, Span, TokenStream, TokenTree};
use quote::{ToTokens, TokenStreamExt};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::{Ident, LitFloat, LitInt, LitStr, Member, Token};

/// Words that end an open range and can never be dim or parameter names.
pub const RESERVED: &[&str] = &[
    "in",
    "ignore",
    "finite",
    "contiguous",
    "MAX",
    "return",
    "self",
    "allow_all",
];

/// A span from one token to another, for errors that cover several tokens on stable Rust.
#[derive(Clone, Copy)]
pub struct SpanRange {
    pub first: Span,
    pub last: Span,
}

impl SpanRange {
    pub fn single(span: Span) -> Self {
        Self {
            first: span,
            last: span,
        }
    }

    pub fn to(self, other: SpanRange) -> Self {
        Self {
            first: self.first,
            last: other.last,
        }
    }

    pub fn error(self, message: impl fmt::Display) -> syn::Error {
        syn::Error::new_spanned(self, message)
    }
}

impl ToTokens for SpanRange {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let mut first = Punct::new('#', Spacing::Alone);
        first.set_span(self.first);
        let mut last = Punct::new('#', Spacing::Alone);
        last.set_span(self.last);
        tokens.append(first);
        tokens.append(last);
    }
}

pub enum Clause {
    Tensor(TensorClause),
    Relation(Relation),
    Option(OptionClause),
}

pub struct TensorClause {
    pub subject: Subject,
    pub spec: TensorSpec,
    pub span: SpanRange,
}

pub enum Subject {
    /// A parameter (in `#[contract]`) or a variable in scope (in `check!`).
    Param(Ident),
    /// `self.a.b()`, `batch.images`, `self.pos?.embeddings()`, `self.layers[0].weight()`: a
    /// path of fields, argument-less method calls, optional steps and indexing from `self`, a
    /// parameter or (in `check!`) a variable.
    Field { root: Ident, steps: Vec<FieldStep> },
    /// `return`, or `return.0` for an element of a returned tuple.
    Return(Span, Option<u32>),
}

pub enum FieldStep {
    /// `.field` or `.method()`.
    Member { member: Member, call: bool },
    /// `?`: the value so far is an `Option`; `None` skips the clause.
    Optional(Span),
    /// `[i]`: one element of a sequence.
    Index(usize, Span),
    /// `[..]`: every element of a sequence.
    All(Span),
}

pub struct TensorSpec {
    pub dtypes: Vec<DTypeName>,
    pub shape: Shape,
    pub constraints: Vec<Constraint>,
    /// `[spec; N]`: a sequence of tensors, each matching the spec; the count.
    pub sequence: Option<Dim>,
}

pub struct DTypeName {
    pub name: String,
    pub span: Span,
}

pub struct Shape {
    pub span: Span,
    pub dims: Vec<Dim>,
}

pub enum Dim {
    Fixed(u64),
    Named(Ident),
    Any,
    Rest(Span),
    Run { star: Span, name: Ident },
    Expr(DimExpr),
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

pub enum DimExpr {
    Lit(u64),
    Name(Ident),
    /// `{cfg.hidden_size}`: a `usize` expression in the function's scope.
    Block {
        tokens: TokenStream,
        span: Span,
    },
    Paren(Box<DimExpr>),
    Binary {
        lhs: Box<DimExpr>,
        op: ArithOp,
        op_span: Span,
        rhs: Box<DimExpr>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

pub struct Relation {
    pub lhs: DimExpr,
    pub op: CmpOp,
    pub rhs: DimExpr,
}

pub struct OptionClause {
    pub name: Ident,
    pub value: Ident,
}

pub enum Constraint {
    In {
        keyword: Span,
        patterns: Vec<Pattern>,
    },
    Ignore {
        keyword: Span,
        values: Vec<IgnoreValue>,
        allow_all: Option<AllowAll>,
    },
    Finite(Span),
    Contiguous(Span),
    Note(LitStr),
}

/// `allow_all`, alone or with a braced condition: `allow_all {reduction != Reduction::Mean}`.
pub struct AllowAll {
    pub span: Span,
    pub condition: Option<TokenStream>,
}

pub enum Pattern {
    Range {
        lo: Option<BoundExpr>,
        hi: Option<BoundExpr>,
        inclusive: bool,
        span: SpanRange,
    },
    Single(BoundExpr),
}

pub enum BoundExpr {
    Int {
        value: i128,
        span: SpanRange,
    },
    Float {
        value: f64,
        text: String,
        span: SpanRange,
    },
    Name(Ident),
    Block {
        tokens: TokenStream,
        span: Span,
    },
}

pub enum IgnoreValue {
    Int {
        value: i128,
        span: SpanRange,
    },
    Float {
        value: f64,
        text: String,
        span: SpanRange,
    },
    Max(Span),
    /// A braced expression evaluated before the body, e.g. `{options.ignore_index}`.
    Block {
        tokens: TokenStream,
        span: Span,
    },
}

impl Constraint {
    pub fn span(&self) -> Span {
        match self {
            Constraint::In { keyword, .. } | Constraint::Ignore { keyword, .. } => *keyword,
            Constraint::Finite(span) | Constraint::Contiguous(span) => *span,
            Constraint::Note(lit) => lit.span(),
        }
    }
}

impl BoundExpr {
    pub fn span(&self) -> SpanRange {
        match self {
            BoundExpr::Int { span, .. } | BoundExpr::Float { span, .. } => *span,
            BoundExpr::Name(ident) => SpanRange::single(ident.span()),
            BoundExpr::Block { span, .. } => SpanRange::single(*span),
        }
    }
}

impl Pattern {
    pub fn span(&self) -> SpanRange {
        match self {
            Pattern::Range { span, .. } => *span,
            Pattern::Single(bound) => bound.span(),
        }
    }
}

impl IgnoreValue {
    pub fn span(&self) -> SpanRange {
        match self {
            IgnoreValue::Int { span, .. } | IgnoreValue::Float { span, .. } => *span,
            IgnoreValue::Max(span) | IgnoreValue::Block { span, .. } => SpanRange::single(*span),
        }
    }
}

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
pub fn parse_clauses(tokens: TokenStream, errors: &mut Vec<syn::Error>) -> Vec<Clause> {
    let pieces = split_commas(tokens);
    let count = pieces.len();
    let mut clauses = Vec::new();
    for (i, piece) in pieces.into_iter().enumerate() {
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
        match parse_clause.parse2(piece) {
            Ok(clause) => clauses.push(clause),
            Err(error) => errors.push(error),
        }
    }
    clauses
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
        input.parse::<Token![:]>()?;
        let spec = parse_tensor_spec(input)?;
        let span = SpanRange {
            first: start,
            last: last_span(&spec),
        };
        return Ok(Clause::Tensor(TensorClause {
            subject: Subject::Return(keyword.span, index),
            spec,
            span,
        }));
    }
    if input.peek(Token![self])
        || (input.peek(Ident::peek_any)
            && (input.peek2(Token![.])
                || input.peek2(Token![?])
                || input.peek2(syn::token::Bracket)))
    {
        let subject = parse_field_subject(input)?;
        input.parse::<Token![:]>()?;
        let spec = parse_tensor_spec(input)?;
        let span = SpanRange {
            first: start,
            last: last_span(&spec),
        };
        return Ok(Clause::Tensor(TensorClause {
            subject,
            spec,
            span,
        }));
    }
    if input.peek(Ident::peek_any) && input.peek2(Token![:]) && !input.peek2(Token![::]) {
        let name: Ident = input.call(Ident::parse_any)?;
        input.parse::<Token![:]>()?;
        let spec = parse_tensor_spec(input)?;
        let span = SpanRange {
            first: start,
            last: last_span(&spec),
        };
        return Ok(Clause::Tensor(TensorClause {
            subject: Subject::Param(name),
            spec,
            span,
        }));
    }
    if input.peek(Ident) && input.peek2(Token![=]) && !input.peek2(Token![==]) {
        let name: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        if !input.peek(Ident::peek_any) && name != "on_violation" && name != "same_device" {
            // `N = 3`: a relation written with one `=`, or an option that does not exist.
            return Err(syn::Error::new(
                name.span(),
                format!(
                    "unknown option `{name}` (the options are `on_violation` and \
                     `same_device`); to require a dim to equal a value, write a relation: \
                     `{name} == ...`"
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
        let rhs = parse_dim_expr(input)?;
        expect_end(input, "after the relation")?;
        return Ok(Clause::Relation(Relation { lhs, op, rhs }));
    }
    Err(input.error(
        "expected a clause: `name: dtype[dims] ...`, `self.field: ...`, `return: ...`, \
         a relation such as `T <= P`, or an option such as `on_violation = panic`",
    ))
}

fn last_span(spec: &TensorSpec) -> Span {
    match spec.constraints.last() {
        Some(Constraint::In { patterns, .. }) => patterns
            .last()
            .map(|p| p.span().last)
            .unwrap_or(spec.shape.span),
        Some(Constraint::Ignore {
            values, allow_all, ..
        }) => allow_all
            .as_ref()
            .map(|a| a.span)
            .or_else(|| values.last().map(|v| v.span().last))
            .unwrap_or(spec.shape.span),
        Some(other) => other.span(),
        None => spec.shape.span,
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
            steps.push(FieldStep::Optional(question.span));
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
                steps.push(FieldStep::All(span));
            } else {
                let index: LitInt = content.parse().map_err(|_| {
                    syn::Error::new(
                        span,
                        "a contract path indexes with a number (`self.layers[0]`) or `[..]` for \
                         every element; for a computed index, use `check!` in the body",
                    )
                })?;
                let value = index.base10_parse::<usize>()?;
                if !content.is_empty() {
                    return Err(content.error("expected `]` after the index"));
                }
                steps.push(FieldStep::Index(value, span));
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
            span: ident.span(),
        });
        if input.peek(Token![|]) {
            input.parse::<Token![|]>()?;
            continue;
        }
        break;
    }
    if !input.peek(syn::token::Bracket) {
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
        span: group.span(),
        dims,
    })
}

fn parse_dim(input: ParseStream<'_>) -> syn::Result<Dim> {
    let dim = if input.peek(Token![..]) && !input.peek(Token![..=]) {
        let dots: Token![..] = input.parse()?;
        Dim::Rest(dots.spans[0])
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
            star: star.span,
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
            op_span,
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
            op_span,
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
    if input.peek(Ident) {
        return Ok(DimExpr::Name(input.parse()?));
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
            tokens: group.stream(),
            span: group.span(),
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
            keyword: keyword.span,
            patterns,
        });
    }
    if input.peek(LitStr) {
        return Ok(Constraint::Note(input.parse()?));
    }
    let ident = match input.call(Ident::parse_any) {
        Ok(ident) => ident,
        Err(_) => {
            return Err(input.error(
                "expected `in`, `ignore`, `finite`, `contiguous` or a note string after the shape",
            ));
        }
    };
    match ident.to_string().as_str() {
        "ignore" => {
            let mut values = vec![parse_ignore_value(input)?];
            while input.peek(Token![|]) {
                input.parse::<Token![|]>()?;
                values.push(parse_ignore_value(input)?);
            }
            let allow_all = if input.peek(Ident) && input.fork().parse::<Ident>()? == "allow_all" {
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
                    span: keyword.span(),
                    condition,
                })
            } else {
                None
            };
            Ok(Constraint::Ignore {
                keyword: ident.span(),
                values,
                allow_all,
            })
        }
        "finite" => Ok(Constraint::Finite(ident.span())),
        "contiguous" => Ok(Constraint::Contiguous(ident.span())),
        "allow_all" => Err(syn::Error::new(
            ident.span(),
            "`allow_all` goes right after the ignore values, e.g. `ignore -100 allow_all`",
        )),
        other => {
            let known = ["in", "ignore", "finite", "contiguous"];
            let hint = crate::suggest::did_you_mean(other, known.iter().copied())
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            Err(syn::Error::new(
                ident.span(),
                format!(
                    "unknown constraint `{other}`: expected `in`, `ignore`, `finite`, \
                     `contiguous` or a note string after the shape{hint}"
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
        || (input.peek(Ident) && {
            let ident: Ident = input.fork().parse()?;
            !RESERVED.contains(&ident.to_string().as_str()) || ident == "MAX"
        });
    if starts_bound {
        Ok(Some(parse_bound(input, "after `..`")?))
    } else {
        Ok(None)
    }
}

fn parse_bound(input: ParseStream<'_>, context: &str) -> syn::Result<BoundExpr> {
    let start = first_span(input);
    let negative = if input.peek(Token![-]) {
        input.parse::<Token![-]>()?;
        true
    } else {
        false
    };
    if input.peek(LitInt) {
        let lit: LitInt = input.parse()?;
        let value = parse_int(&lit, negative)?;
        return Ok(BoundExpr::Int {
            value,
            span: SpanRange {
                first: start,
                last: lit.span(),
            },
        });
    }
    if input.peek(LitFloat) {
        let lit: LitFloat = input.parse()?;
        let (value, text) = parse_float(&lit, negative)?;
        return Ok(BoundExpr::Float {
            value,
            text,
            span: SpanRange {
                first: start,
                last: lit.span(),
            },
        });
    }
    if negative {
        return Err(input.error(
            "`-` goes only before a number; for a negative dim expression use a braced \
             expression such as `{-(n as i64)}`",
        ));
    }
    if input.peek(Ident) {
        return Ok(BoundExpr::Name(input.parse()?));
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
            tokens: group.stream(),
            span: group.span(),
        });
    }
    Err(input.error(format!(
        "expected a bound {context}: a number, a dim, a parameter or a braced expression \
         such as `{{self.vocab_size}}`"
    )))
}

fn parse_ignore_value(input: ParseStream<'_>) -> syn::Result<IgnoreValue> {
    let start = first_span(input);
    let negative = if input.peek(Token![-]) {
        input.parse::<Token![-]>()?;
        true
    } else {
        false
    };
    if input.peek(LitInt) {
        let lit: LitInt = input.parse()?;
        let value = parse_int(&lit, negative)?;
        return Ok(IgnoreValue::Int {
            value,
            span: SpanRange {
                first: start,
                last: lit.span(),
            },
        });
    }
    if input.peek(LitFloat) {
        let lit: LitFloat = input.parse()?;
        let (value, text) = parse_float(&lit, negative)?;
        return Ok(IgnoreValue::Float {
            value,
            text,
            span: SpanRange {
                first: start,
                last: lit.span(),
            },
        });
    }
    if !negative && input.peek(syn::token::Brace) {
        let TokenTree::Group(group) = input.parse::<TokenTree>()? else {
            unreachable!("peeked a brace group")
        };
        return Ok(IgnoreValue::Block {
            tokens: group.stream(),
            span: group.span(),
        });
    }
    if !negative && input.peek(Ident) {
        let ident: Ident = input.fork().parse()?;
        if ident == "MAX" {
            input.parse::<Ident>()?;
            return Ok(IgnoreValue::Max(ident.span()));
        }
    }
    Err(input.error(
        "expected an ignored value after `ignore`: a number such as `-100`, `MAX` (the \
         dtype's maximum, candle's skip sentinel) or a braced expression such as \
         `{options.ignore_index}`",
    ))
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

// Canonical text of the syntax, used in messages and the rustdoc `# Contract` section.

impl fmt::Display for ArithOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Rem => "%",
        })
    }
}

impl fmt::Display for CmpOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        })
    }
}

impl fmt::Display for DimExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DimExpr::Lit(value) => write!(f, "{value}"),
            DimExpr::Name(ident) => write!(f, "{}", ident.unraw()),
            DimExpr::Block { tokens, .. } => write!(f, "{{{}}}", code_text(tokens)),
            DimExpr::Paren(inner) => write!(f, "({inner})"),
            DimExpr::Binary { lhs, op, rhs, .. } => write!(f, "{lhs} {op} {rhs}"),
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Fixed(value) => write!(f, "{value}"),
            Dim::Named(ident) => write!(f, "{ident}"),
            Dim::Any => f.write_str("_"),
            Dim::Rest(_) => f.write_str(".."),
            Dim::Run { name, .. } => write!(f, "*{name}"),
            Dim::Expr(expr) => write!(f, "{expr}"),
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, dim) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{dim}")?;
        }
        f.write_str("]")
    }
}

impl fmt::Display for BoundExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BoundExpr::Int { value, .. } => write!(f, "{value}"),
            BoundExpr::Float { text, .. } => f.write_str(text),
            BoundExpr::Name(ident) => write!(f, "{ident}"),
            BoundExpr::Block { tokens, .. } => write!(f, "{{{}}}", code_text(tokens)),
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Single(bound) => write!(f, "{bound}"),
            Pattern::Range {
                lo, hi, inclusive, ..
            } => {
                if let Some(lo) = lo {
                    write!(f, "{lo}")?;
                }
                f.write_str(if *inclusive { "..=" } else { ".." })?;
                if let Some(hi) = hi {
                    write!(f, "{hi}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for IgnoreValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IgnoreValue::Int { value, .. } => write!(f, "{value}"),
            IgnoreValue::Float { text, .. } => f.write_str(text),
            IgnoreValue::Max(_) => f.write_str("MAX"),
            IgnoreValue::Block { tokens, .. } => write!(f, "{{{}}}", code_text(tokens)),
        }
    }
}

/// Rust tokens as a person writes them: `self.vocab_size`, not `self . vocab_size`.
pub fn code_text(tokens: &TokenStream) -> String {
    let text = tokens.to_string();
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let prev = if i > 0 { chars[i - 1] } else { ' ' };
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            let tight = |c: char| matches!(c, '.' | '(' | ')' | '[' | ']' | '?' | ':' | '!' | '&');
            if tight(prev) || tight(next) || next == ',' {
                continue;
            }
        }
        out.push(c);
    }
    out
}

pub fn join<T: fmt::Display>(items: &[T], separator: &str) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(separator)
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Constraint::In { patterns, .. } => write!(f, "in {}", join(patterns, " | ")),
            Constraint::Ignore {
                values, allow_all, ..
            } => {
                write!(f, "ignore {}", join(values, " | "))?;
                match allow_all {
                    Some(AllowAll {
                        condition: Some(condition),
                        ..
                    }) => write!(f, " allow_all {{{condition}}}")?,
                    Some(_) => f.write_str(" allow_all")?,
                    None => {}
                }
                Ok(())
            }
            Constraint::Finite(_) => f.write_str("finite"),
            Constraint::Contiguous(_) => f.write_str("contiguous"),
            Constraint::Note(lit) => write!(f, "{:?}", lit.value()),
        }
    }
}

impl fmt::Display for TensorSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.sequence.is_some() {
            f.write_str("[")?;
        }
        self.fmt_element(f)?;
        if let Some(count) = &self.sequence {
            write!(f, "; {count}]")?;
        }
        Ok(())
    }
}

impl TensorSpec {
    fn fmt_element(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dtypes: Vec<&str> = self.dtypes.iter().map(|d| d.name.as_str()).collect();
        f.write_str(&dtypes.join(" | "))?;
        if self.dtypes.len() > 1 {
            f.write_str(" ")?;
        }
        write!(f, "{}", self.shape)?;
        for constraint in &self.constraints {
            write!(f, " {constraint}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Param(ident) => write!(f, "{}", ident.unraw()),
            Subject::Return(_, None) => f.write_str("return"),
            Subject::Return(_, Some(index)) => write!(f, "return.{index}"),
            Subject::Field { root, steps } => {
                write!(f, "{}", root.unraw())?;
                for step in steps {
                    match step {
                        FieldStep::Member { member, call } => {
                            match member {
                                Member::Named(ident) => write!(f, ".{}", ident.unraw())?,
                                Member::Unnamed(index) => write!(f, ".{}", index.index)?,
                            }
                            if *call {
                                f.write_str("()")?;
                            }
                        }
                        FieldStep::Optional(_) => f.write_str("?")?,
                        FieldStep::Index(i, _) => write!(f, "[{i}]")?,
                        FieldStep::All(_) => f.write_str("[..]")?,
                    }
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Clause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Clause::Tensor(clause) => write!(f, "{}: {}", clause.subject, clause.spec),
            Clause::Relation(relation) => {
                write!(f, "{} {} {}", relation.lhs, relation.op, relation.rhs)
            }
            Clause::Option(option) => write!(f, "{} = {}", option.name, option.value),
        }
    }
}
