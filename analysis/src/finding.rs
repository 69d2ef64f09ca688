//! What the walk finds, as data: each certain mismatch with the tokens it is about, and the
//! type of each name a `let` binds. The macro renders findings as `syn::Error`s, the CLI with
//! codespan-reporting, in the same words.

use proc_macro2::Span;
use quote::ToTokens;

/// Where a finding lies: the first and the last token of the code it is about (a stable proc
/// macro cannot join two spans; a diagnostic covers the range between them).
#[derive(Clone, Copy, Debug)]
pub struct Site {
    /// The span of the first token.
    pub first: Span,
    /// The span of the last token.
    pub last: Span,
}

impl Site {
    /// The site of `tokens` (the call site when there are none).
    pub fn of(tokens: &impl ToTokens) -> Site {
        let mut spans = tokens.to_token_stream().into_iter().map(|tree| tree.span());
        let first = spans.next().unwrap_or_else(Span::call_site);
        let last = spans.last().unwrap_or(first);
        Site { first, last }
    }
}

/// Where the wrong value's type comes from.
#[derive(Clone, Debug)]
pub enum Origin {
    /// The clause of this subject (`target`, `self.head.weight()`) in the walked function's
    /// contract.
    Clause(String),
    /// A binding of the body (a `let`, an assignment).
    Binding(Site),
}

/// A call certain to fail, worded for a diagnostic.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The expression that is wrong (an argument, a receiver, the tail expression).
    pub site: Site,
    /// The message (`` `Tensor::matmul` takes ..., but `w2.t()?` is `f32[64, 10]` here ``).
    pub message: String,
    /// Why, as the engine's reason says it.
    pub note: String,
    /// A likely fix.
    pub help: Option<String>,
    /// The code that replaces the site's text to apply that fix (`&target.squeeze(1)?`), for
    /// an editor's quick fix or a machine-applicable suggestion.
    pub replacement: Option<String>,
    /// Where the wrong value's type was declared, and what it was declared as.
    pub origin: Option<(Origin, String)>,
}

/// A size named `?1`, `?2`, ..: two branches give it differently (a kv cache's `T` when empty,
/// `P + T` after a `cat`), or an `Activation` of a variant the analysis does not know gives
/// its input's last dim or half of it (`Swiglu` halves it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Join {
    /// `?1`.
    pub name: String,
    /// The first branch's size (`T`), or the activation's input's last dim.
    pub first: String,
    /// The second branch's size (`P + T`), or half of it.
    pub second: String,
    /// What picks one: `the branch taken`, or `the activation's variant (..)`.
    pub by: String,
}

/// The type inferred for one name a `let` binds.
#[derive(Clone, Debug)]
pub struct LetHint {
    /// The name's token.
    pub site: Site,
    /// The name.
    pub name: String,
    /// Its type (`f32[B, 128]`), `?` where unknown; `= B` or `= _` for an integer, `float` for a float.
    pub ty: String,
    /// The op that gave it (`matmul`, `Tensor::zeros`, `/`), empty where none stands out.
    pub op: String,
    /// Each size named `?1`, `?2`, .. in `ty`: one of two sizes on each run.
    pub joins: Vec<Join>,
    /// Each size of `ty` that only an `Option` field's clauses state, with that field: 0
    /// where the field is `None` (`("P", "self.kv_cache")`: no cached step is `P + T`).
    pub absent: Vec<(String, String)>,
    /// Where `ty` is not fully known, the first place its value lost its shape (`` `self.v_proj`
    /// has no sizes the check knows: .. ``, `` `k` is `f32[B, _, H, D]` already ``).
    pub why: Option<String>,
}

/// An `if` whose branches the walk followed without reporting in them, in the function's own
/// code: the contract does not decide its condition (`if self.use_flash_attn` of a flag the
/// constructor chooses, `if seqlen_offset > 0`).
#[derive(Clone, Debug)]
pub struct Unchecked {
    /// The condition's tokens.
    pub site: Site,
    /// What is not checked, in words: `` `if self.use_flash_attn`: neither branch is checked ``.
    pub what: String,
}
