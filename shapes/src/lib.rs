//! Symbolic shapes and dtypes of candle tensors, and how candle's ops transform them.
//!
//! placeholder
pub mod contract;
pub mod dim;
pub mod dtype;
pub mod parse;
pub mod reason;
pub mod rules;
pub mod shape;
pub mod verdict;
