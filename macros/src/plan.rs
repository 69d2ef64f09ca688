//! The plan: the contract as the runtime's spec table (`runtime/src/spec.rs`), one type per
//! spec type with the spec's fields, each printing itself with `ToTokens` as the constant
//! expression that builds the runtime value. `valid` builds a `Plan`; `expand` puts its
//! `ContractSpec` in a `static` and wraps the function. Fields only the expansion reads (how the
//! guard reaches a tensor, spans, the tokens of values from scope) print nothing.
//!
//! The tokens name the runtime by a path (`::candle_contracts::__private`, or the one
//! `crate = ..` gives), so a plan value prints through [`InCrate`], which carries that path.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::Ident;

use crate::syntax::{ArithOp, CmpOp, SpanRange};

/// A plan value with the path of the runtime's `__private` module, printed by `ToTokens`.
pub struct InCrate<'a, T: ?Sized> {
    pub private: &'a TokenStream,
    pub value: &'a T,
}

impl<'a, T: ?Sized> InCrate<'a, T> {
    pub fn new(private: &'a TokenStream, value: &'a T) -> Self {
        Self { private, value }
    }

    /// Another value under the same path.
    fn with<U: ?Sized>(&self, value: &'a U) -> InCrate<'a, U> {
        InCrate {
            private: self.private,
            value,
        }
    }

    /// `&[a, b, ..]` of the items.
    fn slice<U>(&self, items: &'a [U]) -> TokenStream
    where
        for<'b> InCrate<'b, U>: ToTokens,
    {
        let items = items.iter().map(|item| self.with(item));
        quote!(&[#(#items),*])
    }

    fn option<U>(&self, value: Option<&'a U>) -> TokenStream
    where
        for<'b> InCrate<'b, U>: ToTokens,
    {
        option_tokens(value.map(|v| self.with(v).into_token_stream()))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Error,
    Panic,
}

/// What a clause is about, as the spec names it.
pub enum Subject {
    Argument(String),
    Field(String),
    Return,
    ReturnField(String),
    /// A plain name in `check!`: a variable, not an argument.
    Variable(String),
    /// `{target.sum(1)?}`: a tensor computed before the body, by its text.
    Derived(String),
}

/// How the guard reaches a clause's tensor (prints nothing: the expansion reads it).
pub enum Access {
    Param(Ident),
    /// A path from `self` or a parameter.
    Path {
        root: Ident,
        steps: Vec<Step>,
    },
    /// `return`, or `return.0`.
    Output(Option<u32>),
    /// A derived subject: the `k`-th, computed from these tokens in the function's scope.
    Derived {
        index: u16,
        tokens: TokenStream,
        span: Span,
    },
}

/// Where a `where` mask comes from, and its index among the masks the expansion passes.
pub struct MaskSpec {
    pub index: u16,
    pub text: TextSpan,
}

/// How the expansion reaches a mask: a parameter, or braced tokens it evaluates.
pub enum MaskAccess {
    Param(Ident),
    Expr { tokens: TokenStream, span: Span },
}

pub enum Step {
    Member(syn::Member, bool),
    Optional(Span),
    Index(usize, Span),
    /// `[block_idx]`: the element at an integer parameter's value.
    IndexBy(Ident),
    All(Span),
}

pub enum DimSpec {
    Fixed(u64),
    Named(u16),
    Any,
    Rest,
    Run(u16),
    Expr(DimExprSpec),
}

pub struct DimExprSpec {
    pub text: TextSpan,
    pub ops: Vec<ExprOp>,
}

#[derive(Clone, Copy)]
pub enum ExprOp {
    Lit(u64),
    Dim(u16),
    Value(u16),
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl From<ArithOp> for ExprOp {
    fn from(op: ArithOp) -> Self {
        match op {
            ArithOp::Add => ExprOp::Add,
            ArithOp::Sub => ExprOp::Sub,
            ArithOp::Mul => ExprOp::Mul,
            ArithOp::Div => ExprOp::Div,
            ArithOp::Rem => ExprOp::Rem,
        }
    }
}

pub enum BoundSpec {
    Int(i128),
    Float(f64),
    /// A float literal no `f64` equals: the nearest, and whether the literal is above it.
    Inexact(f64, bool),
    Dim(u16),
    Runtime(u16, TextSpan),
}

pub struct RangeSpec {
    pub lo: Option<BoundSpec>,
    pub hi: Option<BoundSpec>,
    pub inclusive: bool,
}

pub enum IgnoreSpec {
    Int(i128),
    Float(f64),
    Max,
    Runtime(u16, TextSpan),
}

pub enum AllowAll {
    No,
    Yes,
    When(u16, TextSpan),
}

pub struct ValueSpec {
    pub ranges: Vec<RangeSpec>,
    pub ranges_span: TextSpan,
    pub ignore: Vec<IgnoreSpec>,
    pub ignore_span: TextSpan,
    pub allow_all: AllowAll,
    pub finite: bool,
    pub integral: bool,
}

/// A tensor clause; `access` and `span` print nothing.
pub struct ClauseSpec {
    pub subject: Subject,
    /// A path with a `?` step: a `None` along it skips the clause.
    pub optional: bool,
    pub access: Access,
    pub span: SpanRange,
    pub dtype_constants: Vec<&'static str>,
    pub dtypes_span: TextSpan,
    pub shape: Vec<DimSpec>,
    pub shape_span: TextSpan,
    pub values: Option<ValueSpec>,
    pub contiguous: bool,
    pub note: Option<String>,
    /// A sequence clause's count.
    pub sequence: Option<DimSpec>,
    pub mask: Option<MaskSpec>,
}

pub struct RelationSpec {
    pub text: TextSpan,
    pub lhs: Vec<ExprOp>,
    pub op: CmpOp,
    pub rhs: Vec<ExprOp>,
    pub after_body: bool,
    /// `self.n_head = H`: `lhs` is the dim, `rhs` the field's value, which binds it.
    pub binds: bool,
}

pub struct RuntimeBound {
    pub tokens: TokenStream,
    pub span: Span,
    /// As written, for messages (values from scope in dims and relations).
    pub text: String,
    /// A value in a shape's dim: it must be a `usize`.
    pub dim: bool,
}

/// A byte range of the contract's text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TextSpan {
    pub start: u32,
    pub end: u32,
}

/// The contract's canonical text (its clauses one a line, as the doc section shows them),
/// which the spec carries once; a part of a clause is a [`TextSpan`] of it.
pub struct ContractText {
    pub text: String,
}

impl ContractText {
    /// The span of `piece`, found in the text at or after byte `from` (the same text anywhere
    /// prints the same message); a piece the text lacks is appended on a line of its own.
    pub fn span(&mut self, piece: &str, from: usize) -> TextSpan {
        let from = from.min(self.text.len());
        let start = match self.text.get(from..).and_then(|rest| rest.find(piece)) {
            Some(offset) => from + offset,
            None => {
                if !self.text.is_empty() {
                    self.text.push('\n');
                }
                self.text.push_str(piece);
                self.text.len() - piece.len()
            }
        };
        // A contract's text is far below 4 GiB: the attribute's tokens are a few lines.
        let offset = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        TextSpan {
            start: offset(start),
            end: offset(start + piece.len()),
        }
    }

    /// The text `span` covers (empty for a span off the text).
    #[cfg(test)]
    pub fn of(&self, span: TextSpan) -> &str {
        self.text
            .get(span.start as usize..span.end as usize)
            .unwrap_or_default()
    }
}

/// A contract with every name resolved, ready to expand: the spec table's parts and what the
/// expansion evaluates before the body.
pub struct Plan {
    pub inputs: Vec<ClauseSpec>,
    pub outputs: Vec<ClauseSpec>,
    pub relations: Vec<RelationSpec>,
    pub dims: Vec<String>,
    /// Each named dim's first identifier, for the probe that tells a constant from a dim.
    pub dim_idents: Vec<Ident>,
    /// Values from scope in dims and relations (constants, parameters, braced expressions),
    /// evaluated unless the mode is off.
    pub values: Vec<RuntimeBound>,
    pub runs: Vec<String>,
    pub runtime_bounds: Vec<RuntimeBound>,
    /// The masks of `where` rules, in the order of their index.
    pub masks: Vec<MaskAccess>,
    pub on_violation: Option<(Failure, Span)>,
    pub same_device: bool,
    /// Whether the body is checked at compile time (`static = false` turns it off).
    pub static_checks: bool,
    /// The path generated code names the runtime by: `::candle_contracts` unless `crate = ..`.
    pub krate: TokenStream,
    /// The clauses as canonical text, for the rustdoc `# Contract` section.
    pub doc: Vec<String>,
    /// The text the spec's [`TextSpan`]s point into: the doc lines, one a line.
    pub text: ContractText,
}

/// The spec table of one contract: a `Plan` where it stands, for `file!()` and `line!()`.
pub struct ContractSpec<'a> {
    pub plan: &'a Plan,
    pub function: &'a str,
    /// The function's parameters by name, without the receiver (`_` for a pattern).
    pub params: &'a [String],
    pub location: Span,
}

impl ToTokens for InCrate<'_, ContractSpec<'_>> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let p = self.private;
        let ContractSpec {
            plan,
            function,
            params,
            location,
        } = self.value;
        let inputs = self.slice(&plan.inputs);
        let outputs = self.slice(&plan.outputs);
        let relations = self.slice(&plan.relations);
        let values = plan.values.iter().map(|v| &v.text);
        let dims = &plan.dims;
        let runs = &plan.runs;
        let same_device = plan.same_device;
        let text = &plan.text.text;
        let file = quote_spanned!(*location=> ::core::file!());
        let line = quote_spanned!(*location=> ::core::line!());
        let column = quote_spanned!(*location=> ::core::column!());
        tokens.extend(quote! {
            #p::ContractSpec {
                function: #function,
                params: &[#(#params),*],
                file: #file,
                line: #line,
                column: #column,
                dims: &[#(#dims),*],
                values: &[#(#values),*],
                runs: &[#(#runs),*],
                inputs: #inputs,
                outputs: #outputs,
                relations: #relations,
                same_device: #same_device,
                text: #text,
            }
        });
    }
}

impl ToTokens for InCrate<'_, ClauseSpec> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let p = self.private;
        let clause = self.value;
        let subject = self.with(&clause.subject);
        let optional = clause.optional;
        let mut dtypes = clause
            .dtype_constants
            .iter()
            .map(|c| Ident::new(c, Span::call_site()));
        let dtypes = match dtypes.next() {
            Some(first) => quote!(#p::DTypeSet::#first #(.or(#p::DTypeSet::#dtypes))*),
            None => quote!(#p::DTypeSet::ANY),
        };
        let dtypes_span = self.with(&clause.dtypes_span);
        let shape = self.slice(&clause.shape);
        let shape_span = self.with(&clause.shape_span);
        let values = option_tokens(clause.values.as_ref().map(|values| {
            let values = self.with(values);
            quote!(&#values)
        }));
        let contiguous = clause.contiguous;
        let note = option_tokens(clause.note.as_ref().map(|n| quote!(#n)));
        let sequence = self.option(clause.sequence.as_ref());
        let mask = self.option(clause.mask.as_ref());
        tokens.extend(quote!(#p::ClauseSpec {
            subject: #subject,
            optional: #optional,
            dtypes: #dtypes,
            dtypes_span: #dtypes_span,
            shape: #shape,
            shape_span: #shape_span,
            values: #values,
            contiguous: #contiguous,
            note: #note,
            sequence: #sequence,
            mask: #mask,
        }));
    }
}

impl ToTokens for InCrate<'_, TextSpan> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let p = self.private;
        let start = Literal::u32_unsuffixed(self.value.start);
        let end = Literal::u32_unsuffixed(self.value.end);
        tokens.extend(quote!(#p::TextSpan::new(#start, #end)));
    }
}

impl ToTokens for InCrate<'_, Subject> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let p = self.private;
        tokens.extend(match self.value {
            Subject::Argument(name) => quote!(#p::Subject::Argument(#name)),
            Subject::Field(name) => quote!(#p::Subject::Field(#name)),
            Subject::Return => quote!(#p::Subject::Return),
            Subject::ReturnField(name) => quote!(#p::Subject::ReturnField(#name)),
            Subject::Variable(name) => quote!(#p::Subject::Variable(#name)),
            Subject::Derived(name) => quote!(#p::Subject::Derived(#name)),
        });
    }
}

impl ToTokens for InCrate<'_, MaskSpec> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let p = self.private;
        let index = self.value.index;
        let text = self.with(&self.value.text);
        tokens.extend(quote!(#p::MaskSpec { index: #index, text: #text }));
    }
}

impl ToTokens for InCrate<'_, DimSpec> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let p = self.private;
        tokens.extend(match self.value {
            DimSpec::Fixed(v) => {
                let v = Literal::usize_suffixed(*v as usize);
                quote!(#p::DimSpec::Fixed(#v))
            }
            DimSpec::Named(id) => quote!(#p::DimSpec::Named(#id)),
            DimSpec::Any => quote!(#p::DimSpec::Any),
            DimSpec::Rest => quote!(#p::DimSpec::Rest),
            DimSpec::Run(id) => quote!(#p::DimSpec::Run(#id)),
            DimSpec::Expr(expr) => {
                let expr = self.with(expr);
                quote!(#p::DimSpec::Expr(&#expr))
            }
        });
    }
}

impl ToTokens for InCrate<'_, DimExprSpec> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let p = self.private;
        let text = self.with(&self.value.text);
        let ops = self.slice(&self.value.ops);
        tokens.extend(quote!(#p::DimExprSpec { text: #text, ops: #ops }));
    }
}

impl ToTokens for InCrate<'_, ExprOp> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let p = self.private;
        tokens.extend(match *self.value {
            ExprOp::Lit(v) => {
                let v = Literal::u64_suffixed(v);
                quote!(#p::ExprOp::Lit(#v))
            }
            ExprOp::Dim(id) => quote!(#p::ExprOp::Dim(#id)),
            ExprOp::Value(index) => quote!(#p::ExprOp::Value(#index)),
            ExprOp::Add => quote!(#p::ExprOp::Add),
            ExprOp::Sub => quote!(#p::ExprOp::Sub),
            ExprOp::Mul => quote!(#p::ExprOp::Mul),
            ExprOp::Div => quote!(#p::ExprOp::Div),
            ExprOp::Rem => quote!(#p::ExprOp::Rem),
        });
    }
}

impl ToTokens for InCrate<'_, RelationSpec> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let p = self.private;
        let relation = self.value;
        let text = self.with(&relation.text);
        let lhs = self.slice(&relation.lhs);
        let rhs = self.slice(&relation.rhs);
        let op = match relation.op {
            CmpOp::Eq => quote!(Eq),
            CmpOp::Ne => quote!(Ne),
            CmpOp::Lt => quote!(Lt),
            CmpOp::Le => quote!(Le),
            CmpOp::Gt => quote!(Gt),
            CmpOp::Ge => quote!(Ge),
        };
        let after_body = relation.after_body;
        let binds = relation.binds;
        tokens.extend(quote!(#p::RelationSpec {
            text: #text,
            lhs: #lhs,
            op: #p::CmpOp::#op,
            rhs: #rhs,
            after_body: #after_body,
            binds: #binds,
        }));
    }
}

impl ToTokens for InCrate<'_, ValueSpec> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let p = self.private;
        let values = self.value;
        let ranges = self.slice(&values.ranges);
        let ranges_span = self.with(&values.ranges_span);
        let ignore = self.slice(&values.ignore);
        let ignore_span = self.with(&values.ignore_span);
        let allow_all = match &values.allow_all {
            AllowAll::No => quote!(#p::AllowAll::No),
            AllowAll::Yes => quote!(#p::AllowAll::Yes),
            AllowAll::When(index, text) => {
                let text = self.with(text);
                quote!(#p::AllowAll::When(#index, #text))
            }
        };
        let finite = values.finite;
        let integral = values.integral;
        tokens.extend(quote!(#p::ValueSpec {
            ranges: #ranges,
            ranges_span: #ranges_span,
            ignore: #ignore,
            ignore_span: #ignore_span,
            allow_all_ignored: #allow_all,
            finite: #finite,
            integral: #integral,
        }));
    }
}

impl ToTokens for InCrate<'_, RangeSpec> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let p = self.private;
        let lo = self.option(self.value.lo.as_ref());
        let hi = self.option(self.value.hi.as_ref());
        let inclusive = self.value.inclusive;
        tokens.extend(quote!(#p::RangeSpec { lo: #lo, hi: #hi, inclusive: #inclusive }));
    }
}

impl ToTokens for InCrate<'_, BoundSpec> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let p = self.private;
        tokens.extend(match self.value {
            BoundSpec::Int(v) => {
                let v = int_tokens(*v);
                quote!(#p::BoundSpec::Int(#v))
            }
            BoundSpec::Float(v) => {
                let v = float_tokens(*v);
                quote!(#p::BoundSpec::Float(#v))
            }
            BoundSpec::Inexact(v, above) => {
                let v = float_tokens(*v);
                let side = if *above {
                    quote!(#p::Side::Above)
                } else {
                    quote!(#p::Side::Below)
                };
                quote!(#p::BoundSpec::Inexact(#v, #side))
            }
            BoundSpec::Dim(id) => quote!(#p::BoundSpec::Dim(#id)),
            BoundSpec::Runtime(index, text) => {
                let text = self.with(text);
                quote!(#p::BoundSpec::Runtime(#index, #text))
            }
        });
    }
}

impl ToTokens for InCrate<'_, IgnoreSpec> {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let p = self.private;
        tokens.extend(match self.value {
            IgnoreSpec::Int(v) => {
                let v = int_tokens(*v);
                quote!(#p::IgnoreSpec::Int(#v))
            }
            IgnoreSpec::Float(v) => {
                let v = float_tokens(*v);
                quote!(#p::IgnoreSpec::Float(#v))
            }
            IgnoreSpec::Max => quote!(#p::IgnoreSpec::Max),
            IgnoreSpec::Runtime(index, text) => {
                let text = self.with(text);
                quote!(#p::IgnoreSpec::Runtime(#index, #text))
            }
        });
    }
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

fn option_tokens(value: Option<TokenStream>) -> TokenStream {
    match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}
