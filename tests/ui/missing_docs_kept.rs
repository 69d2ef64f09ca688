//! `#![deny(missing_docs)]` still sees an undocumented function: the contract adds its doc
//! section only to a function that has docs already.
#![deny(missing_docs)]

use candle_contracts::contract;

#[contract(x: f32[N])]
pub fn undocumented(x: &candle_core::Tensor) {
    let _ = x;
}

/// Documented: the contract's section is appended.
#[contract(x: f32[N])]
pub fn documented(x: &candle_core::Tensor) {
    let _ = x;
}

fn main() {}
