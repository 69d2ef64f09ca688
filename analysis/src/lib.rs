//! The compile-time analysis of contracted candle code, shared by the `#[contract]` macro and
//! the `cargo contracts` CLI: one walk over a function's body ([`walk`]) with the engine of
//! `candle-contracts-shapes`, over an [`Index`] of what the caller can see.
//!
//! What differs between the two is only what is indexed: the CLI reads whole crates from
//! disk; the macro reads the one source file it stands in (or, where that file cannot be had,
//! its item alone). Names resolve the same way in both, and the findings are data
//! ([`Finding`]) that each renders in its own way with the same words.
//!
//! Soundness: a value is known only where it is certain; anything the walk does not model is
//! unknown, and nothing unknown is ever reported.

pub mod contract;
mod finding;
pub mod index;
mod walk;

pub use finding::{Finding, LetHint, Origin, Site};
pub use index::{ContractText, FileId, Files, FnDef, FnId, Index, ModId, Resolved};
pub use walk::{Function, SourceText, walk};
