//! The second round of attacks: candle-nn layers, constructors, constants, arithmetic and
//! glue code (with `tests/glue.rs`).

pub mod c1_nested_const;
pub mod c2_arith;
pub mod c3_modscope;
pub mod d1_dead;
pub mod g_api;
pub mod l1_swiglu;
pub mod l2_ln_nobias;
pub mod l2a;
pub mod l3_mutself;
pub mod l4_shadow_param;
pub mod l5_blanket_trait;
pub mod l6_own_linear;
pub mod l7_misc;
pub mod l8_rms;
pub mod l9_alias;
pub mod t1_ctor;

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device, Result, Tensor};
    use candle_nn::{Activation, LayerNorm, Linear};
    fn z(s: &[usize]) -> Tensor {
        Tensor::ones(s, DType::F32, &Device::Cpu).unwrap()
    }

    #[test]
    fn swiglu() -> Result<()> {
        let g = super::l1_swiglu::Gate {
            act: Activation::Swiglu,
        };
        let y = g.forward(&z(&[3, 128]), &z(&[64, 10]))?;
        assert_eq!(y.dims(), &[3, 10]);
        Ok(())
    }
    #[test]
    fn ln_nobias() -> Result<()> {
        let n = super::l2a::Norm {
            norm: LayerNorm::new_no_bias(z(&[8]), 1e-5),
        };
        let y = n.forward(&z(&[3, 1]))?;
        assert_eq!(y.dims(), &[3, 8]);
        let n = super::l2a::Norm {
            norm: LayerNorm::rms_norm(z(&[8]), 1e-5),
        };
        let y = n.forward(&z(&[3, 1]))?;
        assert_eq!(y.dims(), &[3, 8]);
        Ok(())
    }
    #[test]
    fn blanket() -> Result<()> {
        let m = super::l5_blanket_trait::M {
            proj: Linear::new(z(&[4, 8]), None),
        };
        let y = m.forward(&z(&[8, 3]))?;
        assert_eq!(y.dims(), &[3, 4]);
        Ok(())
    }
    #[test]
    fn arith() -> Result<()> {
        use super::c2_arith::*;
        assert_eq!(negdiv(&z(&[2, 7]))?.dims(), &[2, 7]);
        assert_eq!(negrem(&z(&[2, 7]))?.dims(), &[2, 7]);
        Ok(())
    }
    #[test]
    fn conv_groups() -> Result<()> {
        let y = super::t1_ctor::conv_groups(&z(&[4, 5]))?;
        assert_eq!(y.dims(), &[8 - 2, 5]);
        Ok(())
    }

    #[test]
    fn by_ref_impl() -> Result<()> {
        let m = super::l7_misc::M {
            proj: Linear::new(z(&[4, 8]), None),
        };
        assert_eq!(m.by_ref_impl(&z(&[8, 3]))?.dims(), &[3, 4]);
        Ok(())
    }
    #[test]
    fn rms_strided() -> Result<()> {
        let r = super::l8_rms::R {
            norm: candle_nn::RmsNorm::new(z(&[8]), 1e-5),
        };
        assert_eq!(r.strided(&z(&[3, 2]))?.dims(), &[3, 8]);
        Ok(())
    }
    #[test]
    fn dead() -> Result<()> {
        assert_eq!(super::d1_dead::dispatch(&z(&[3, 4]))?.dims(), &[3, 4]);
        Ok(())
    }
}
