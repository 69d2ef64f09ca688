//! Meaning: names resolved, dims numbered, dtypes and ranges checked against each other and the
//! signature. Every rule is one `check_*` function; every error goes into one list, so a
//! contract with three mistakes gives three errors in one compile.
//!
//! Two files by job, imports running one way: `check.rs` holds the rules that stand alone (the
//! options, the subjects, the dtypes, the literals), `lower.rs` builds the plan from the checked
//! clauses and reports the rules that need what it resolves (a dim's number, a bound's slot)
//! where it meets them. This file holds what both read: the context and the named dims.

use std::collections::BTreeMap;

use proc_macro2::Span;
use syn::Ident;
use syn::ext::IdentExt;

use crate::item::{Output, Param};
use crate::plan::RuntimeBound;

mod check;
mod lower;

pub use lower::validate;

/// Where the clauses stand: on a function (`#[contract]`) or inline (`check!`).
pub struct Context {
    pub inline: bool,
    pub function: String,
    pub params: Vec<Param>,
    pub has_receiver: bool,
    pub output: Output,
    /// Span for errors about the function as a whole (its name).
    pub name_span: Span,
    /// The function's const generic parameters: constants, by value.
    pub const_generics: Vec<String>,
}

impl Context {
    fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.ident.unraw() == name)
    }
}

/// What a named dim is and which side of the body binds it.
struct DimInfo {
    index: u16,
    bound_by_input: bool,
}

struct Dims {
    named: BTreeMap<String, DimInfo>,
    order: Vec<String>,
    idents: Vec<Ident>,
    runs: Vec<String>,
    /// Values from scope used in dim expressions and relations.
    values: Vec<RuntimeBound>,
    /// Whether the expression being resolved is a shape's dim, whose values from scope must
    /// be `usize`s (a relation compares any integer).
    in_shape: bool,
}

impl Dims {
    fn get(&self, name: &str) -> Option<&DimInfo> {
        self.named.get(name)
    }
}
