//! The syntax of a contract, as written, with the spans of its tokens: plain data, no parsing
//! (`parse.rs` reads it from tokens) and no meaning yet (the macro's `valid/` resolves names
//! and checks the rules; `lower.rs` gives the analysis its tensor clauses). Each type prints as its canonical text, for messages and the rustdoc
//! `# Contract` section.
//!
//! Grammar (the book's reference chapter describes each form):
//!
//! ```text
//! contract    := clause (',' clause)* ','?
//! clause      := subject ':' dtypes shape constraint* | relation | option
//! subject     := IDENT | 'self' ('.' member ('(' ')')?)+ | 'return' | '{' EXPR '}'
//! dtypes      := dtype ('|' dtype)*
//! shape       := '[' (dim (',' dim)*)? ']'
//! dim         := INT | IDENT | '_' | '..' | '*' IDENT | dim_expr
//! constraint  := 'in' pattern ('|' pattern)* | 'ignore' value ('|' value)* 'allow_all'?
//!              | 'finite' | 'integral' | 'contiguous' | 'where' (IDENT | '{' EXPR '}') | STRING
//! relation    := dim_expr ('==' | '!=' | '<' | '<=' | '>' | '>=') dim_expr
//! option      := IDENT '=' IDENT
//! ```
// Without the `extra-traits` feature syn's types have no `Debug`: the tree's is a test's need.
#![cfg_attr(not(feature = "extra-traits"), allow(missing_debug_implementations))]

use std::fmt;

use proc_macro2::{Punct, Spacing, Span, TokenStream};
use quote::{ToTokens, TokenStreamExt};
use syn::ext::IdentExt;
use syn::{Ident, LitStr, Member};

/// The words of the contract language, each spelled once: the parser matches these, and
/// did-you-mean and the messages quote them.
pub mod kw {
    pub const IN: &str = "in";
    pub const IGNORE: &str = "ignore";
    pub const FINITE: &str = "finite";
    pub const INTEGRAL: &str = "integral";
    pub const WHERE: &str = "where";
    pub const CONTIGUOUS: &str = "contiguous";
    pub const ALLOW_ALL: &str = "allow_all";
    pub const MAX: &str = "MAX";
    pub const RETURN: &str = "return";
    pub const SELF: &str = "self";
    /// The rules that may follow a shape (besides a note string).
    pub const CONSTRAINTS: &[&str] = &[IN, IGNORE, FINITE, INTEGRAL, CONTIGUOUS, WHERE];
    /// Words that end an open range and can never be dim or parameter names.
    pub const RESERVED: &[&str] = &[
        IN, IGNORE, FINITE, INTEGRAL, CONTIGUOUS, WHERE, MAX, RETURN, SELF, ALLOW_ALL,
    ];

    pub const ON_VIOLATION: &str = "on_violation";
    pub const SAME_DEVICE: &str = "same_device";
    pub const CRATE: &str = "crate";
    pub const STATIC: &str = "static";
    /// The hidden option an enclosing `#[contract]` adds to the contracts it has analysed, so that
    /// their own expansion does not report the same errors again.
    pub const CHECKED_BY_SCOPE: &str = "__checked_by_scope";
    /// `__struct_contract(self.c_attn: .., ..)`: the clauses of a struct's contract, added by
    /// its `#[contract] impl` to each method's contract.
    pub const STRUCT_CONTRACT: &str = "__struct_contract";
    /// The options a contract takes, `name = value`.
    pub const OPTIONS: &[&str] = &[ON_VIOLATION, SAME_DEVICE, CRATE, STATIC];
    /// The values of `on_violation`.
    pub const PANIC: &str = "panic";
    pub const ERROR: &str = "error";
}

/// Words as code, joined with commas for a message: "`a`, `b`, `c`".
pub fn code_list(words: &[&str]) -> String {
    let words: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
    words.join(", ")
}

/// Words as code, joined for a message: "`a`, `b` or `c`" (`last` is "or" or "and").
pub fn quoted(words: &[&str], last: &str) -> String {
    let words: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
    match words.split_last() {
        Some((final_word, rest)) if !rest.is_empty() => {
            format!("{} {last} {final_word}", rest.join(", "))
        }
        _ => words.concat(),
    }
}

/// "the options are `on_violation`, `same_device` and `crate`", for messages.
pub fn options_list() -> String {
    format!("the options are {}", quoted(kw::OPTIONS, "and"))
}

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

impl From<Span> for SpanRange {
    fn from(span: Span) -> Self {
        Self::single(span)
    }
}

/// Spans are where a clause is written, not what it says: two parses compare equal wherever
/// their tokens stand, so tests compare syntax by value.
#[cfg(feature = "extra-traits")]
impl PartialEq for SpanRange {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[cfg(feature = "extra-traits")]
impl std::fmt::Debug for SpanRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("_")
    }
}

/// Rust tokens kept for the expansion (a braced value, an `allow_all` condition); compared
/// and shown by their text.
#[derive(Clone)]
pub struct Tokens(pub TokenStream);

impl ToTokens for Tokens {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.0.to_tokens(tokens);
    }
}

#[cfg(feature = "extra-traits")]
impl PartialEq for Tokens {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

#[cfg(feature = "extra-traits")]
impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{}}}", self.0)
    }
}

#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub enum Clause {
    Tensor(TensorClause),
    Relation(Relation),
    Option(OptionClause),
    Crate(CratePath),
    Bind(FieldBinding),
    Flag(FieldFlag),
    NotSwiglu(NotSwiglu),
}

/// `self.n_head = H` (in a struct contract, `n_head = H`): an integer field's value is the
/// named dim, bound before any tensor is read.
#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub struct FieldBinding {
    /// The field's path from `self` (a [`Subject::Field`]).
    pub subject: Subject,
    /// The dim it names.
    pub dim: Ident,
    /// The whole clause.
    pub span: SpanRange,
}

/// `self.multi_query = true` (in a struct contract, `multi_query = true`): a `bool` field's
/// value, checked before the body runs, so a branch on it that cannot run is not analysed.
#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub struct FieldFlag {
    /// The field's path from `self` (a [`Subject::Field`]).
    pub subject: Subject,
    /// The value it must have.
    pub value: bool,
    /// The whole clause.
    pub span: SpanRange,
}

/// `self.act_fn != Swiglu` (in a struct contract, `act_fn != Swiglu`): a candle-nn
/// `Activation` field that is not `Swiglu`, the one variant that changes a shape; checked
/// before the body runs, so the activation keeps its input's shape there.
#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub struct NotSwiglu {
    /// The field's path from `self` (a [`Subject::Field`]).
    pub subject: Subject,
    /// The whole clause.
    pub span: SpanRange,
}

/// The variants of candle-nn 0.11's `Activation` (not its functions: `Activation::clone(&a)`
/// is whichever `a` holds).
pub const ACTIVATION_VARIANTS: &[&str] = &[
    "Gelu",
    "NewGelu",
    "Relu",
    "Relu2",
    "Relu6",
    "Silu",
    "Sigmoid",
    "HardSigmoid",
    "Swiglu",
    "Swish",
    "Mish",
    "HardSwish",
    "Elu",
    "LeakyRelu",
    "GeluPytorchTanh",
];

/// `crate = ::cc` (or serde's spelling, `crate = "::cc"`): the path the generated code names
/// the runtime by, for a crate that renames the dependency or reaches it through a re-export.
#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub struct CratePath {
    pub keyword: SpanRange,
    pub path: syn::Path,
}

#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub struct TensorClause {
    pub subject: Subject,
    pub spec: TensorSpec,
    pub span: SpanRange,
    /// `else P = 0`: a dim of the shape that is 0 where an optional step of the path finds
    /// `None` (an empty kv cache holds no positions).
    pub absent_zero: Option<Ident>,
}

#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub enum Subject {
    /// A parameter (in `#[contract]`) or a variable in scope (in `check!`).
    Param(Ident),
    /// `self.a.b()`, `batch.images`, `self.pos?.embeddings()`, `self.layers[0].weight()`: a
    /// path of fields, argument-less method calls, optional steps and indexing from `self`, a
    /// parameter or (in `check!`) a variable.
    Field { root: Ident, steps: Vec<FieldStep> },
    /// `return`, or `return.0` for an element of a returned tuple.
    Return(SpanRange, Option<u32>),
    /// `{target.sum(1)?}`: a tensor computed in the function's scope before the body.
    Derived { tokens: Tokens, span: SpanRange },
}

#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub enum FieldStep {
    /// `.field` or `.method()`.
    Member { member: Member, call: bool },
    /// `?`: the value so far is an `Option`; `None` skips the clause.
    Optional(SpanRange),
    /// `[i]`: one element of a sequence.
    Index(usize, SpanRange),
    /// `[block_idx]`: the element at an integer parameter's value (Llama's
    /// `cache.kvs[block_idx]`), read when the guard runs.
    IndexBy(Ident),
    /// `[..]`: every element of a sequence.
    All(SpanRange),
}

#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub struct TensorSpec {
    pub dtypes: Vec<DTypeName>,
    pub shape: Shape,
    pub constraints: Vec<Constraint>,
    /// `[spec; N]`: a sequence of tensors, each matching the spec; the count.
    pub sequence: Option<Dim>,
}

#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub struct DTypeName {
    pub name: String,
    pub span: SpanRange,
}

#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub struct Shape {
    pub span: SpanRange,
    pub dims: Vec<Dim>,
}

#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub enum Dim {
    Fixed(u64),
    Named(Ident),
    Any,
    Rest(SpanRange),
    Run { star: SpanRange, name: Ident },
    Expr(DimExpr),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub enum DimExpr {
    Lit(u64),
    Name(Ident),
    /// `{cfg.hidden_size}`: a `usize` expression in the function's scope.
    Block {
        tokens: Tokens,
        span: SpanRange,
    },
    Paren(Box<DimExpr>),
    Binary {
        lhs: Box<DimExpr>,
        op: ArithOp,
        op_span: SpanRange,
        rhs: Box<DimExpr>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub struct Relation {
    pub lhs: DimExpr,
    pub op: CmpOp,
    pub rhs: DimExpr,
}

#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub struct OptionClause {
    pub name: Ident,
    pub value: Ident,
}

#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub enum Constraint {
    In {
        keyword: SpanRange,
        patterns: Vec<Pattern>,
    },
    Ignore {
        keyword: SpanRange,
        values: Vec<IgnoreValue>,
        allow_all: Option<AllowAll>,
    },
    Finite(SpanRange),
    /// `integral`: every checked value is a whole number.
    Integral(SpanRange),
    Contiguous(SpanRange),
    /// `where MASK`: the value rules apply only where the mask is non-zero.
    Where {
        keyword: SpanRange,
        mask: Mask,
    },
    Note(LitStr),
}

/// The mask after `where`: a parameter, or a braced expression.
#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub enum Mask {
    Param(Ident),
    Block { tokens: Tokens, span: SpanRange },
}

impl Mask {
    pub fn span(&self) -> SpanRange {
        match self {
            Mask::Param(ident) => SpanRange::single(ident.span()),
            Mask::Block { span, .. } => *span,
        }
    }
}

impl fmt::Display for Mask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mask::Param(ident) => write!(f, "{}", ident.unraw()),
            Mask::Block { tokens, .. } => write!(f, "{{{}}}", code_text(&tokens.0)),
        }
    }
}

/// `allow_all`, alone or with a braced condition: `allow_all {reduction != Reduction::Mean}`.
#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub struct AllowAll {
    pub span: SpanRange,
    pub condition: Option<Tokens>,
}

#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
pub enum Pattern {
    Range {
        lo: Option<BoundExpr>,
        hi: Option<BoundExpr>,
        inclusive: bool,
        span: SpanRange,
    },
    Single(BoundExpr),
}

#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
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
        tokens: Tokens,
        span: SpanRange,
    },
}

#[cfg_attr(feature = "extra-traits", derive(Debug, PartialEq))]
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
    Max(SpanRange),
    /// A braced expression evaluated before the body, e.g. `{options.ignore_index}`.
    Block {
        tokens: Tokens,
        span: SpanRange,
    },
}

impl Constraint {
    pub fn span(&self) -> Span {
        match self {
            Constraint::In { keyword, .. } | Constraint::Ignore { keyword, .. } => keyword.first,
            Constraint::Finite(span)
            | Constraint::Integral(span)
            | Constraint::Contiguous(span) => span.first,
            Constraint::Where { mask, .. } => mask.span().last,
            Constraint::Note(lit) => lit.span(),
        }
    }
}

impl BoundExpr {
    pub fn span(&self) -> SpanRange {
        match self {
            BoundExpr::Int { span, .. } | BoundExpr::Float { span, .. } => *span,
            BoundExpr::Name(ident) => SpanRange::single(ident.span()),
            BoundExpr::Block { span, .. } => *span,
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
            IgnoreValue::Max(span) | IgnoreValue::Block { span, .. } => *span,
        }
    }
}

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
            DimExpr::Block { tokens, .. } => write!(f, "{{{}}}", code_text(&tokens.0)),
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
            BoundExpr::Block { tokens, .. } => write!(f, "{{{}}}", code_text(&tokens.0)),
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
            IgnoreValue::Max(_) => f.write_str(kw::MAX),
            IgnoreValue::Block { tokens, .. } => write!(f, "{{{}}}", code_text(&tokens.0)),
        }
    }
}

/// Rust tokens as a person writes them: `self.vocab_size`, not `self . vocab_size`, and
/// `a != b` with its spaces.
pub fn code_text(tokens: &TokenStream) -> String {
    const OPERATORS: &[&str] = &["!=", "==", "<=", ">=", "&&", "||"];
    let text = tokens.to_string();
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let operator_at = |start: usize| {
        chars.get(start..start + 2).is_some_and(|pair| {
            OPERATORS
                .iter()
                .any(|op| op.chars().eq(pair.iter().copied()))
        })
    };
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let prev = if i > 0 { chars[i - 1] } else { ' ' };
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            let tight = |c: char| matches!(c, '.' | '(' | ')' | '[' | ']' | '?' | ':' | '!' | '&');
            let by_operator = operator_at(i + 1) || (i >= 2 && operator_at(i - 2));
            if !by_operator && (tight(prev) || tight(next) || next == ',') {
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
                    }) => write!(f, " allow_all {{{}}}", code_text(&condition.0))?,
                    Some(_) => f.write_str(" allow_all")?,
                    None => {}
                }
                Ok(())
            }
            Constraint::Finite(_) => f.write_str(kw::FINITE),
            Constraint::Integral(_) => f.write_str(kw::INTEGRAL),
            Constraint::Contiguous(_) => f.write_str(kw::CONTIGUOUS),
            Constraint::Where { mask, .. } => write!(f, "{} {mask}", kw::WHERE),
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
            Subject::Derived { tokens, .. } => write!(f, "{{{}}}", code_text(&tokens.0)),
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
                        FieldStep::IndexBy(ident) => write!(f, "[{}]", ident.unraw())?,
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
            Clause::Tensor(clause) => {
                write!(f, "{}: {}", clause.subject, clause.spec)?;
                match &clause.absent_zero {
                    Some(dim) => write!(f, " else {} = 0", dim.unraw()),
                    None => Ok(()),
                }
            }
            Clause::Relation(relation) => {
                write!(f, "{} {} {}", relation.lhs, relation.op, relation.rhs)
            }
            Clause::Option(option) => write!(f, "{} = {}", option.name, option.value),
            Clause::Bind(binding) => write!(f, "{} = {}", binding.subject, binding.dim),
            Clause::Flag(flag) => write!(f, "{} = {}", flag.subject, flag.value),
            Clause::NotSwiglu(clause) => write!(f, "{} != Swiglu", clause.subject),
            Clause::Crate(krate) => {
                let path = &krate.path;
                write!(f, "crate = {}", code_text(&quote::quote!(#path)))
            }
        }
    }
}

/// An identifier as a name: `r#type` is `type`.
pub fn name_of(ident: &Ident) -> String {
    ident.unraw().to_string()
}
