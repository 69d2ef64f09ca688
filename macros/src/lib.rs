//! The procedural macros of [candle-contracts](https://docs.rs/candle-contracts): `#[contract]`
//! and `check!` (and, for the runtime's `proptest` feature, `arbitrary!`, `violations!`, `exemptions!` and
//! `assert_contract!`). Use them through the `candle-contracts` crate, which re-exports them
//! and holds everything the generated code calls.
//!
//! Phases, one module each, imports running one way: `syntax` (the contract as written, with
//! spans), `parse` (its `Parse` impls) and `ctxt` (the error accumulator), which the CLI shares
//! from `candle-contracts-analysis`, `item` (the function,
//! body untouched), `plan` (the runtime's spec table, printing itself), `valid` (names, dims,
//! dtypes and ranges checked, all errors at once; builds the plan), `expand` (wraps the
//! function around the plan's table and one guard call), `fallback` (errors plus the original
//! item), `analysis` (the body read against the contracts it uses: compile-time shape and
//! dtype errors). `arbitrary` parses `arbitrary!`, `violations!`, `exemptions!` and `assert_contract!` on its
//! own: they only name a contracted function, whose guard the runtime asks for the contract.

mod analysis;
mod arbitrary;
mod expand;
mod fallback;
mod item;
mod plan;
mod valid;

// The grammar is shared with the CLI (`candle-contracts-analysis`); here it keeps its names.
use candle_contracts_analysis::contract::{ctxt, parse, suggest, syntax};

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Checks a function's tensors against a contract before its body runs. See the
/// `candle-contracts` crate for the language.
#[proc_macro_attribute]
pub fn contract(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::contract(args.into(), input.into()).into()
}

/// Checks tensors in scope against contract clauses, returning
/// `Result<(), candle_contracts::ContractError>`. See the `candle-contracts` crate.
#[proc_macro]
pub fn check(input: TokenStream) -> TokenStream {
    expand::check(input.into()).into()
}

/// A proptest `Strategy` of the inputs a contracted function accepts. See the
/// `candle-contracts` crate (its `proptest` feature).
#[proc_macro]
pub fn arbitrary(input: TokenStream) -> TokenStream {
    arbitrary::arbitrary(input.into()).into()
}

/// The inputs of a contracted function that each break one rule of one clause. See the
/// `candle-contracts` crate (its `proptest` feature).
#[proc_macro]
pub fn violations(input: TokenStream) -> TokenStream {
    arbitrary::violations(input.into()).into()
}

/// The inputs of a contracted function whose broken value its contract exempts (a mask's 0, an
/// ignored value). See the `candle-contracts` crate (its `proptest` feature).
#[proc_macro]
pub fn exemptions(input: TokenStream) -> TokenStream {
    arbitrary::exemptions(input.into()).into()
}

/// Runs a contracted function on its valid inputs and on inputs that break its contract. See
/// the `candle-contracts` crate (its `proptest` feature).
#[proc_macro]
pub fn assert_contract(input: TokenStream) -> TokenStream {
    arbitrary::assert_contract(input.into()).into()
}
