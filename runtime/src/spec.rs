//! The const description of a contract that `#[contract]` and `check!` emit as a `static`.
//!
//! Everything here is plain data: the macro resolves names to indices at compile time, and the
//! guard in `guard/` interprets the table at call time. Dims and runs are numbered in the
//! order the contract first mentions them.

use candle_core::DType;

/// A whole contract: the function it guards, where it was written, and its clauses.
#[derive(Debug)]
pub struct ContractSpec {
    /// The guarded function's name (`check!` for the inline form).
    pub function: &'static str,
    /// The guarded function's parameters by name (as the contract names them: `type` for
    /// `r#type`), in order, without the receiver; a parameter written as a pattern (`(a, b):
    /// (Tensor, Tensor)`) is `_`. Empty for `check!` and a struct's contract. `arbitrary!` maps
    /// the values it is given (`k = 3`) to positions with it.
    pub params: &'static [&'static str],
    /// Source file of the contract (`file!()` at the attribute).
    pub file: &'static str,
    /// Line of the contract.
    pub line: u32,
    /// Column of the contract.
    pub column: u32,
    /// Named dims, indexed by [`DimSpec::Named`] and [`ExprOp::Dim`].
    pub dims: &'static [&'static str],
    /// The values from the function's scope that dim expressions and relations use (constants,
    /// integer parameters, braced expressions), as written; indexed by [`ExprOp::Value`].
    pub values: &'static [&'static str],
    /// Named runs of dims (`*B`), indexed by [`DimSpec::Run`].
    pub runs: &'static [&'static str],
    /// Tensor clauses on arguments, `self` fields or variables, in the order written.
    pub inputs: &'static [ClauseSpec],
    /// The `return` clause, or the `return.0`, `return.1`, ... clauses of a returned tuple,
    /// checked on the value coming out of the body.
    pub outputs: &'static [ClauseSpec],
    /// Relations between dims, such as `T <= P`.
    pub relations: &'static [RelationSpec],
    /// Whether every checked tensor must be on one device (the default).
    pub same_device: bool,
    /// The contract's clauses as canonical text, one a line (the doc section's text); each
    /// [`TextSpan`] of the spec points into it.
    pub text: &'static str,
}

impl ContractSpec {
    /// The part of the contract's text that `span` covers: `u32`, `[N, C]`, `0..C`. Empty for a
    /// span that does not fall on the text (a hand-written spec), never a panic.
    pub fn text_of(&self, span: TextSpan) -> &'static str {
        let text: &'static str = self.text;
        text.get(span.start as usize..span.end as usize)
            .unwrap_or_default()
    }
}

/// A byte range of [`ContractSpec::text`]: where a part of a clause is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextSpan {
    /// The first byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl TextSpan {
    /// The bytes `start..end`.
    pub const fn new(start: u32, end: u32) -> Self {
        Self { start, end }
    }
}

/// One tensor clause, such as `target: u8 | u32 | i64 [N] in 0..C`.
#[derive(Debug)]
pub struct ClauseSpec {
    /// What the clause checks.
    pub subject: Subject,
    /// A path with an optional step (`self.position_embeddings?.embeddings()`): a `None`
    /// anywhere along it skips the clause. Without one, a [`Subject::Field`] that is `None` is
    /// a violation.
    pub optional: bool,
    /// The dtypes allowed.
    pub dtypes: DTypeSet,
    /// The dtypes as written, e.g. `u8 | u32 | i64`.
    pub dtypes_span: TextSpan,
    /// The dims, left to right.
    pub shape: &'static [DimSpec],
    /// The shape as written, e.g. `[N, C]`.
    pub shape_span: TextSpan,
    /// `in`, `ignore` and `finite`, if any.
    pub values: Option<&'static ValueSpec>,
    /// Whether the clause says `contiguous`.
    pub contiguous: bool,
    /// The user's note string for this clause.
    pub note: Option<&'static str>,
    /// `items: [f32[E]; N]`, or a path through `[..]`: the clause names a sequence of tensors,
    /// each checked against the spec, and this is the count (`N`, a literal or `_`).
    pub sequence: Option<DimSpec>,
    /// `where MASK`: the clause's value rules apply only where the mask is non-zero.
    pub mask: Option<MaskSpec>,
}

/// The mask of a clause's value rules (`... in 0..V where attention_mask`, `where {ids.ge(2)?}`):
/// an argument or a braced expression, of the subject's shape or broadcastable to it. A
/// position is checked where the mask is non-zero and exempt where it is zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaskSpec {
    /// The index of the mask among the masks the expansion passes with the derived subjects.
    pub index: u16,
    /// The mask as written: `attention_mask`, `{input_ids.ge(OFFSET)?}`.
    pub text: TextSpan,
}

/// Whether a dim's name is a constant in scope, and which values equal it.
///
/// The expansion builds one per named dim in the function's body (where the body's own
/// constants are in scope, and a const generic of an `impl` is a compile error rather than a
/// binding) as `|v| match v { NAME => true, _ => false }`: in a
/// pattern, Rust resolves `NAME` to a constant when one is in scope, and binds any value
/// otherwise. So a probe that accepts both 0 and 1 belongs to a plain dim, and any other probe
/// accepts exactly the constant's value.
pub type ConstantProbe = fn(u64) -> bool;

/// What a clause or a violation is about: the subject as written in the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Subject {
    /// A function argument, by parameter name; `None` in an `Option` is skipped.
    Argument(&'static str),
    /// A path from `self` or a parameter, such as `self.weight` or
    /// `self.position_embeddings?.embeddings()`; see [`ClauseSpec::optional`] for `None`.
    Field(&'static str),
    /// The function's return value (the `Ok` value of a `Result`).
    Return,
    /// One element of a returned tuple, such as `return.0`.
    ReturnField(&'static str),
    /// A variable named in `check!`; `None` is skipped. (A path in `check!`, such as
    /// `batch.labels`, is a [`Subject::Field`].)
    Variable(&'static str),
    /// A relation between dims, such as `T <= P`.
    Relation(&'static str),
    /// A tensor computed in the function's scope before the body (`{target.sum(1)?}`), named
    /// by its text; evaluated only when the mode checks values.
    Derived(&'static str),
}

impl Subject {
    /// The name as written in the contract: `target`, `self.weight`, `return` or `T <= P`.
    pub fn name(&self) -> &'static str {
        match self {
            Subject::Argument(name)
            | Subject::Field(name)
            | Subject::Variable(name)
            | Subject::ReturnField(name)
            | Subject::Relation(name)
            | Subject::Derived(name) => name,
            Subject::Return => "return",
        }
    }
}

/// One dim of a shape.
#[derive(Debug, Clone, Copy)]
pub enum DimSpec {
    /// Exactly this size.
    Fixed(usize),
    /// A named dim: bound by its first occurrence, equal at every later one.
    Named(u16),
    /// `_`: any size, not bound.
    Any,
    /// `..`: zero or more dims, not bound.
    Rest,
    /// `*B`: a named run of dims, the same sizes at every occurrence.
    Run(u16),
    /// An expression over named dims, checked once they are bound.
    Expr(&'static DimExprSpec),
}

/// A dim expression such as `N + 1`, as a postfix program.
#[derive(Debug)]
pub struct DimExprSpec {
    /// The expression as written.
    pub text: TextSpan,
    /// Postfix program evaluated on a stack of `u64`.
    pub ops: &'static [ExprOp],
}

/// One step of a postfix dim expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExprOp {
    /// Push a literal.
    Lit(u64),
    /// Push the value of a named dim.
    Dim(u16),
    /// Push a value from the function's scope (a constant, an integer parameter or a braced
    /// expression), evaluated before the body: the index into the values the expansion passes.
    Value(u16),
    /// Pop two, push their sum.
    Add,
    /// Pop two, push their difference (below zero is a violation).
    Sub,
    /// Pop two, push their product.
    Mul,
    /// Pop two, push their quotient rounded down.
    Div,
    /// Pop two, push the remainder.
    Rem,
}

/// A comparison in a relation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// Whether `lhs op rhs` holds.
    pub fn holds(self, lhs: i128, rhs: i128) -> bool {
        match self {
            CmpOp::Eq => lhs == rhs,
            CmpOp::Ne => lhs != rhs,
            CmpOp::Lt => lhs < rhs,
            CmpOp::Le => lhs <= rhs,
            CmpOp::Gt => lhs > rhs,
            CmpOp::Ge => lhs >= rhs,
        }
    }
}

/// A relation between dim expressions, such as `T <= P` or `D % 8 == 0`.
#[derive(Debug)]
pub struct RelationSpec {
    /// The relation as written.
    pub text: TextSpan,
    /// Left side.
    pub lhs: &'static [ExprOp],
    /// Comparison.
    pub op: CmpOp,
    /// Right side.
    pub rhs: &'static [ExprOp],
    /// Whether it names a dim bound only by the return clause, so it is checked after the body.
    pub after_body: bool,
    /// `self.n_head = H` (a struct contract's integer field naming a dim): `lhs` is that one
    /// dim and `rhs` the field's value, which binds the dim before any tensor is read.
    pub binds: bool,
}

/// The value rules of a clause: `in`, `ignore` and `finite`.
#[derive(Debug)]
pub struct ValueSpec {
    /// Allowed ranges and single values, joined by `|` (empty: no `in`).
    pub ranges: &'static [RangeSpec],
    /// The `in` patterns as written, e.g. `0..C`.
    pub ranges_span: TextSpan,
    /// Ignored values.
    pub ignore: &'static [IgnoreSpec],
    /// The ignored values as written, e.g. `-100 | MAX`.
    pub ignore_span: TextSpan,
    /// `allow_all`: whether a tensor with no usable element (every element ignored, or none at
    /// all) is allowed.
    pub allow_all_ignored: AllowAll,
    /// `finite`: NaN and ±inf are violations.
    pub finite: bool,
    /// `integral`: every checked value is a whole number (NaN and ±inf are not).
    pub integral: bool,
}

/// The opt-out of the all-ignored rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllowAll {
    /// No `allow_all`: a clause with `ignore` needs at least one usable element.
    No,
    /// `allow_all`.
    Yes,
    /// `allow_all {condition}`: the index of the condition in the bounds the expansion passes
    /// (a bool, as 1 or 0), and its text.
    When(u16, TextSpan),
}

/// One `in` pattern. A single value `v` is `v..=v`.
#[derive(Debug)]
pub struct RangeSpec {
    /// Lower bound (inclusive), if any.
    pub lo: Option<BoundSpec>,
    /// Upper bound, if any.
    pub hi: Option<BoundSpec>,
    /// Whether the upper bound is inclusive (`..=`).
    pub inclusive: bool,
}

/// Where a bound's value comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BoundSpec {
    /// An integer literal.
    Int(i128),
    /// A float literal that is exactly this `f64`.
    Float(f64),
    /// A float literal no `f64` equals (`0.1`): the nearest `f64`, and on which side of it
    /// the number written lies, so that comparisons stay exact for every float dtype.
    Inexact(f64, Side),
    /// A named dim.
    Dim(u16),
    /// An integer parameter or a braced expression, evaluated before the body; the index into
    /// the bounds the expansion passes, and the text as written.
    Runtime(u16, TextSpan),
}

/// On which side of the nearest `f64` a float literal's real number lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The number written is above its nearest `f64` (`0.3` is above 0.29999999999999998890).
    Above,
    /// The number written is below its nearest `f64` (`0.1` is below 0.10000000000000000555).
    Below,
}

/// An ignored value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum IgnoreSpec {
    /// An integer.
    Int(i128),
    /// A float.
    Float(f64),
    /// `MAX`: the dtype's maximum, candle's own "skip this index" sentinel.
    Max,
    /// A braced expression evaluated before the body: the index into the bounds the
    /// expansion passes, and the text as written.
    Runtime(u16, TextSpan),
}

/// A set of candle dtypes, built from names and families at compile time.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DTypeSet(u16);

impl DTypeSet {
    /// `u8`
    pub const U8: Self = Self(1 << 0);
    /// `u32`
    pub const U32: Self = Self(1 << 1);
    /// `i16`
    pub const I16: Self = Self(1 << 2);
    /// `i32`
    pub const I32: Self = Self(1 << 3);
    /// `i64`
    pub const I64: Self = Self(1 << 4);
    /// `bf16`
    pub const BF16: Self = Self(1 << 5);
    /// `f16`
    pub const F16: Self = Self(1 << 6);
    /// `f32`
    pub const F32: Self = Self(1 << 7);
    /// `f64`
    pub const F64: Self = Self(1 << 8);
    /// `f8e4m3`
    pub const F8E4M3: Self = Self(1 << 9);
    /// `f6e2m3`
    pub const F6E2M3: Self = Self(1 << 10);
    /// `f6e3m2`
    pub const F6E3M2: Self = Self(1 << 11);
    /// `f4`
    pub const F4: Self = Self(1 << 12);
    /// `f8e8m0`
    pub const F8E8M0: Self = Self(1 << 13);
    /// `uint`: every unsigned integer dtype.
    pub const UINT: Self = Self(Self::U8.0 | Self::U32.0);
    /// `sint`: every signed integer dtype.
    pub const SINT: Self = Self(Self::I16.0 | Self::I32.0 | Self::I64.0);
    /// `int`: every integer dtype.
    pub const INT: Self = Self(Self::UINT.0 | Self::SINT.0);
    /// `float`: every float dtype.
    pub const FLOAT: Self = Self(
        Self::BF16.0
            | Self::F16.0
            | Self::F32.0
            | Self::F64.0
            | Self::F8E4M3.0
            | Self::F6E2M3.0
            | Self::F6E3M2.0
            | Self::F4.0
            | Self::F8E8M0.0,
    );
    /// `_`: every dtype.
    pub const ANY: Self = Self(Self::INT.0 | Self::FLOAT.0);

    /// The union of two sets (`a | b` in a contract).
    pub const fn or(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// The set holding just `dtype`.
    pub const fn of(dtype: DType) -> Self {
        match dtype {
            DType::U8 => Self::U8,
            DType::U32 => Self::U32,
            DType::I16 => Self::I16,
            DType::I32 => Self::I32,
            DType::I64 => Self::I64,
            DType::BF16 => Self::BF16,
            DType::F16 => Self::F16,
            DType::F32 => Self::F32,
            DType::F64 => Self::F64,
            DType::F8E4M3 => Self::F8E4M3,
            DType::F6E2M3 => Self::F6E2M3,
            DType::F6E3M2 => Self::F6E3M2,
            DType::F4 => Self::F4,
            DType::F8E8M0 => Self::F8E8M0,
            // A dtype added by a later candle is in no set but `_`.
            #[allow(unreachable_patterns)]
            _ => Self(1 << 15),
        }
    }

    /// Whether `dtype` is in the set.
    pub const fn contains(self, dtype: DType) -> bool {
        self.0 == Self::ANY.0 || self.0 & Self::of(dtype).0 != 0
    }
}

impl std::fmt::Debug for DTypeSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DTypeSet({:#016b})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static SPANNED: ContractSpec = ContractSpec {
        function: "f",
        params: &["logits", "target"],
        file: "f.rs",
        line: 1,
        column: 1,
        dims: &["N", "C"],
        values: &[],
        runs: &[],
        inputs: &[],
        outputs: &[],
        relations: &[],
        same_device: true,
        text: "logits: f32[N, C]\ntarget: u32 | i64 [N] in 0..{self.classes} ignore -100",
    };

    #[test]
    fn text_spans_cover_the_parts_of_the_contract_text() {
        assert_eq!(SPANNED.text_of(TextSpan::new(8, 11)), "f32");
        assert_eq!(SPANNED.text_of(TextSpan::new(11, 17)), "[N, C]");
        assert_eq!(SPANNED.text_of(TextSpan::new(26, 35)), "u32 | i64");
        assert_eq!(SPANNED.text_of(TextSpan::new(43, 60)), "0..{self.classes}");
        assert_eq!(SPANNED.text_of(TextSpan::new(68, 72)), "-100");
        assert_eq!(SPANNED.text_of(TextSpan::default()), "");
        // A span off the text, reversed, or inside a character is empty, never a panic.
        assert_eq!(SPANNED.text_of(TextSpan::new(70, 900)), "");
        assert_eq!(SPANNED.text_of(TextSpan::new(11, 8)), "");
        assert_eq!(SPANNED.text_of(TextSpan::new(u32::MAX, u32::MAX)), "");
        let accented = ContractSpec {
            text: "é",
            ..SPANNED
        };
        assert_eq!(accented.text_of(TextSpan::new(0, 1)), "");
        assert_eq!(accented.text_of(TextSpan::new(0, 2)), "é");
    }

    #[test]
    fn families_hold_their_dtypes() {
        assert!(DTypeSet::INT.contains(DType::I16));
        assert!(DTypeSet::UINT.contains(DType::U32));
        assert!(!DTypeSet::UINT.contains(DType::I64));
        assert!(DTypeSet::FLOAT.contains(DType::F8E8M0));
        assert!(!DTypeSet::FLOAT.contains(DType::U8));
        let union = DTypeSet::U8.or(DTypeSet::U32).or(DTypeSet::I64);
        assert!(union.contains(DType::I64));
        assert!(!union.contains(DType::I32));
        for dtype in [
            DType::U8,
            DType::U32,
            DType::I16,
            DType::I32,
            DType::I64,
            DType::BF16,
            DType::F16,
            DType::F32,
            DType::F64,
            DType::F8E4M3,
            DType::F6E2M3,
            DType::F6E3M2,
            DType::F4,
            DType::F8E8M0,
        ] {
            assert!(DTypeSet::ANY.contains(dtype));
            assert_ne!(
                DTypeSet::INT.contains(dtype),
                DTypeSet::FLOAT.contains(dtype),
                "{dtype:?} is exactly one of int and float"
            );
            assert_eq!(DTypeSet::FLOAT.contains(dtype), dtype.is_float());
        }
    }
}
