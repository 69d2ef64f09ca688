//! Symbolic dtypes and shapes of candle tensors, and how candle's ops transform them: the
//! engine with which `#[contract]` (and a command-line checker) find, at compile time, calls
//! whose shapes or dtypes are certainly wrong.
//!
//! A contracted function's parameters start with their clauses' types, dims as symbols
//! (`f32[B, 784]`); each call's [`rules`] give the type of its result, or a [`Mismatch`]
//! when the call is certain to fail at run time. std only: no proc-macro types, no candle.
//!
//! # Verdicts: certain, possible, unknown
//!
//! Every comparison answers with a [`Verdict`]:
//!
//! - **certainly equal**: for every run-time size of the symbols (`N + 1` and `1 + N`);
//! - **possibly equal**: for some sizes, or the engine cannot tell (`N` and `M`, two names
//!   that may be equal at run time; `N` and `3`); never reported: the run-time guard checks it;
//! - **certainly different**: for no sizes at all, with a [`Reason`]: two different literals,
//!   dims whose normal forms differ by a nonzero constant (`N` and `N + 1`), ranks that are
//!   both known and differ, dtype sets with no dtype in common.
//!
//! Only the last is an error. **Unknown** is a first-class value ([`Dim::Unknown`],
//! [`Shape::unknown`], [`DTypeSet::ANY`], [`TensorType::unknown`]): what a call the engine
//! does not know yields, what `_` and `..` mean, what a shape computed from values is. It
//! absorbs everything silently: any op on unknown gives unknown, and unknown never
//! mismatches. So a program the engine does not understand is never rejected.
//!
//! # Example
//!
//! The second layer of this MLP takes `[64, 10]` weights after a `[B, 128]` hidden layer:
//!
//! ```
//! use candle_contracts_shapes::{Arg, Contract, Env, method};
//!
//! let contract = Contract::parse("xs: f32[B, 784], w1: f32[128, 784], w2: f32[10, 64]")?;
//! let env = Env::for_function("mlp", &contract);
//! // let h = xs.matmul(&w1.t()?)?.relu()?;
//! let w1_t = method("t", &env.get("w1"), &[])?;
//! let h = method("matmul", &env.get("xs"), &[Arg::Tensor(w1_t)])?;
//! let h = method("relu", &h, &[])?;
//! assert_eq!(h.to_string(), "f32[B, 128]");
//! // h.matmul(&w2.t()?)
//! let w2_t = method("t", &env.get("w2"), &[])?;
//! let mismatch = method("matmul", &h, &[Arg::Tensor(w2_t)]).unwrap_err();
//! assert_eq!(
//!     mismatch.message("w2.t()?"),
//!     "`Tensor::matmul` takes `rhs: f32[.., 128, _]`, but `w2.t()?` is `f32[64, 10]` here"
//! );
//! assert_eq!(mismatch.note(), "dim -2: 64 given, 128 expected");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Modules, bottom up
//!
//! [`verdict`] (the three-way answer, dim positions) → [`dtype`] → [`dim`] (normal forms) →
//! [`reason`] → [`shape`] (shapes with runs, tensor types, unification and broadcasting) →
//! [`facts`] (what a contract's relations let the engine decide) → [`parse`] (contract text) → [`contract`] (binding a callee's names at a call) → [`rules`]
//! (the transfer rules) → [`env`](mod@env) (the tensors in scope in a body).

#![warn(missing_docs)]

pub mod contract;
pub mod dim;
pub mod dtype;
pub mod env;
pub mod facts;
pub mod parse;
pub mod reason;
pub mod rules;
pub mod shape;
pub mod verdict;

pub use contract::{Bindings, Clause, Contract};
pub use dim::Dim;
pub use dtype::{DType, DTypeSet};
pub use env::Env;
pub use facts::{Cmp, Facts, Relation};
pub use parse::{ParseError, parse_dim, parse_dtypes, parse_shape, parse_tensor_type};
pub use reason::Reason;
pub use rules::{
    Arg, Argument, Help, Mismatch, Outcome, Parts, check_read_rank, function, has_method_rule,
    method, parts, suggest,
};
pub use shape::{Run, Shape, TensorType};
pub use verdict::{Axis, DimIndex, Rank, Verdict};

/// The crate's README, its page on crates.io: its Rust samples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
