//! Test support of candle-contracts. The README's and the book's samples run as doctests of
//! this crate: each chapter's Markdown is the documentation of an item below, so
//! `cargo test --workspace` compiles and runs every Rust block of them (PyO3's guide does the
//! same; `mdbook test` cannot link a workspace with a proc-macro crate and candle).

/// The Markdown files whose Rust samples are doctests, relative to the workspace root. The
/// book test checks that every chapter of `book/src/SUMMARY.md` is in this list.
pub const DOCTESTED: &[&str] = &[
    "README.md",
    "book/src/introduction.md",
    "book/src/why.md",
    "book/src/quick-start.md",
    "book/src/tutorial.md",
    "book/src/real-models.md",
    "book/src/reference.md",
    "book/src/beyond-ranges.md",
    "book/src/violations.md",
    "book/src/compile-errors.md",
    "book/src/static-checks.md",
    "book/src/editor.md",
    "book/src/guarded-ops.md",
    "book/src/contracts-as-tests.md",
    "book/src/cost.md",
    "book/src/debugging.md",
    "book/src/from-python.md",
];

#[cfg(doctest)]
macro_rules! doctested {
    ($($name:ident => $path:literal),* $(,)?) => {
        $(
            #[doc = include_str!($path)]
            pub struct $name;
        )*
    };
}

#[cfg(doctest)]
doctested! {
    Readme => "../../README.md",
    Introduction => "../../book/src/introduction.md",
    Why => "../../book/src/why.md",
    QuickStart => "../../book/src/quick-start.md",
    Tutorial => "../../book/src/tutorial.md",
    RealModels => "../../book/src/real-models.md",
    Reference => "../../book/src/reference.md",
    BeyondRanges => "../../book/src/beyond-ranges.md",
    Violations => "../../book/src/violations.md",
    CompileErrors => "../../book/src/compile-errors.md",
    StaticChecks => "../../book/src/static-checks.md",
    Editor => "../../book/src/editor.md",
    GuardedOps => "../../book/src/guarded-ops.md",
    Cost => "../../book/src/cost.md",
    Debugging => "../../book/src/debugging.md",
    FromPython => "../../book/src/from-python.md",
}

/// The chapter on `assert_contract!`, `violations!` and `arbitrary!`: its samples need the
/// runtime's `proptest` feature, so they run with this crate's `arbitrary` feature
/// (`cargo test -p candle-contracts-tests --features arbitrary --doc`).
#[cfg(all(doctest, feature = "arbitrary"))]
#[doc = include_str!("../../book/src/contracts-as-tests.md")]
pub struct ContractsAsTests;
