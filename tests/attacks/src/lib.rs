//! Correct programs that an attack on the shared analysis (the macro and the CLI) once took
//! for certain mismatches: each module compiles with the body's analysis on, `cargo contracts
//! check` finds nothing in it, and its tests run it on tensors its contracts accept.
#![allow(
    non_snake_case,
    dead_code,
    missing_debug_implementations,
    unused_imports,
    unused_variables,
    unused_mut,
    irrefutable_let_patterns,
    clippy::all
)]

pub mod a1_alias;
pub mod a2_generic_trait;
pub mod a3_byvalue;
pub mod a4_cfg_const;
pub mod a5_cfg_mod;
pub mod a6_cfg_impl;
pub mod a7_cfg_field;
pub mod a8_raw;
pub mod a9_cast;

pub mod b10_moduleT;
pub mod b11_raw2;
pub mod b1_const_plain;
pub mod b2_swap;
pub mod b3_add_assign;
pub mod b4_shadow_macro;
pub mod b5_bail;
pub mod b6_refcell_subject;
pub mod b7_private_glob;
pub mod b8_twin_struct;
pub mod b9_int_math;
pub mod c1;
pub mod c2_deref;
pub mod c3_mutself_trait;
pub mod c4_generic_shadow;
pub mod c5_selfcall;
pub mod c6_async;
pub mod c7_nested;
pub mod c8_samebody;
pub mod d1_variant;
pub mod d2_macro_item;
pub mod d3_leading_colon;
pub mod d4_async_trait;

pub mod e1_crate_path;
pub mod round2;
pub mod round3;

#[candle_contracts::contract(x: f32[N, 4])]
pub fn forward(x: &candle_core::Tensor) -> candle_core::Result<candle_core::Tensor> {
    Ok(x.clone())
}

#[cfg(test)]
mod run {
    use candle_core::{DType, Device, Tensor};
    use std::marker::PhantomData;
    fn t(r: usize, c: usize) -> Tensor {
        Tensor::ones((r, c), DType::F32, &Device::Cpu).unwrap()
    }
    #[test]
    fn a1() {
        crate::a1_alias::caller(&crate::a1_alias::Wrapper::<f32>(PhantomData), &t(3, 4)).unwrap();
    }
    #[test]
    fn a2() {
        crate::a2_generic_trait::caller(
            &crate::a2_generic_trait::Model::<f64>(PhantomData),
            &t(3, 8),
        )
        .unwrap();
    }
    #[test]
    fn a3() {
        crate::a3_byvalue::caller(crate::a3_byvalue::Model, &t(3, 8)).unwrap();
    }
    #[test]
    fn a4() {
        crate::a4_cfg_const::inner::caller(&t(4, 4)).unwrap();
    }
    #[test]
    fn a5() {
        crate::a5_cfg_mod::caller(&t(3, 4)).unwrap();
    }
    #[test]
    fn a6() {
        crate::a6_cfg_impl::caller(&crate::a6_cfg_impl::Head, &t(3, 4)).unwrap();
    }
    #[test]
    fn a7() {
        crate::a7_cfg_field::Net {
            head: crate::a7_cfg_field::Head4,
        }
        .run(&t(3, 4))
        .unwrap();
    }
    #[test]
    fn a8() {
        crate::a8_raw::caller(&t(3, 4)).unwrap();
    }
    #[test]
    fn a9() {
        crate::a9_cast::caller(&t(44, 4)).unwrap();
    }
    #[test]
    fn b2() {
        crate::b2_swap::fill(&t(4, 8)).unwrap();
        crate::b2_swap::clone_from(&t(4, 8)).unwrap();
    }
    #[test]
    fn b3() {
        crate::b3_add_assign::caller(&t(8, 4)).unwrap();
    }
    #[test]
    fn b4() {
        crate::b4_shadow_macro::caller(&t(8, 4)).unwrap();
    }
    #[test]
    fn b5() {
        crate::b5_bail::caller(&t(3, 4), &t(3, 8)).unwrap();
    }
    #[test]
    fn b6() {
        let c = crate::b6_refcell_subject::Cache {
            w: std::cell::RefCell::new(t(2, 4)),
        };
        crate::b6_refcell_subject::caller(&c, &t(2, 8)).unwrap();
    }
    #[test]
    fn b1() {
        let y = crate::b1_const_plain::inner::caller(&t(3, 8)).unwrap();
        assert_eq!(y.dims(), &[3, 2]);
    }
    #[test]
    fn b7() {
        crate::b7_private_glob::b::caller(&t(3, 4)).unwrap();
    }
    #[test]
    fn b8() {
        crate::b8_twin_struct::Net {
            head: crate::b8_twin_struct::Head4,
        }
        .run(&t(3, 4))
        .unwrap();
    }
    #[test]
    fn b10() {
        crate::b10_moduleT::caller(&crate::b10_moduleT::Model, &t(3, 4)).unwrap();
    }
    #[test]
    fn b11() {
        crate::b11_raw2::caller_b(&t(3, 4), |t: &Tensor| Ok(t.clone())).unwrap();
    }
    #[test]
    fn c1() {
        crate::c1::caller(&crate::c1::Model::<f64>(PhantomData), &t(3, 8)).unwrap();
    }
    #[test]
    fn c2() {
        crate::c2_deref::caller(
            &crate::c2_deref::Model {
                inner: crate::c2_deref::Inner,
            },
            &t(3, 4),
        )
        .unwrap();
    }
    #[test]
    fn c3() {
        crate::c3_mutself_trait::Net {
            head: crate::c3_mutself_trait::Head { calls: 0 },
        }
        .run(&t(3, 4))
        .unwrap();
    }
    #[test]
    fn c4() {
        use crate::c4_generic_shadow::Run;
        struct S;
        impl crate::c4_generic_shadow::Step for S {
            fn step(&self, x: &Tensor) -> candle_core::Result<Tensor> {
                Ok(x.clone())
            }
        }
        S.run(&t(3, 4)).unwrap();
    }
    #[test]
    fn c5() {
        crate::c5_selfcall::Model::<f32>(PhantomData)
            .run(&t(3, 4))
            .unwrap();
    }
    #[test]
    fn d1() {
        let _ = crate::d1_variant::caller(&t(3, 4)).unwrap();
    }
    #[test]
    fn d2() {
        crate::d2_macro_item::caller(&t(3, 4)).unwrap();
    }
    #[test]
    fn d3() {
        crate::d3_leading_colon::caller_a(&t(3, 8)).unwrap();
        crate::d3_leading_colon::sub::caller_b(&t(3, 8)).unwrap();
    }
}
