//! A body a `macro_rules!` of this file takes from another file (`twin_macro_b.rs`), with the
//! same tokens as `A::forward` here: the macro must read each in its own file, never
//! `Narrow::forward` as `A::forward` (a review found the macro do so where the two bodies open
//! at the same line and column of their files, with a struct contract: a false error).

use candle_contracts::contract;
use candle_core::{Module, Result, Tensor};
use candle_nn::Linear;

#[contract(proj: Linear[4 -> 8])]
pub struct A {
    pub proj: Linear,
}

#[contract]
impl A {
    #[contract(xs: f32[B, T, 4], return: f32[B, T, 8])]
    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.proj.forward(xs)
    }
}

macro_rules! contracted_impl {
    ($t:ty, $($f:tt)*) => {
        #[contract]
        impl $t {
            $($f)*
        }
    };
}
pub(crate) use contracted_impl;
