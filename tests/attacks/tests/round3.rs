//! The third round of attacks, run: each function the checker once rejected gives candle's
//! own answer on tensors its contract accepts.

mod t1 {
    use candle_contracts_attacks::round3::m1::*;
    use candle_core::{DType, Device, Tensor};
    use candle_nn::Linear;
    fn mk() -> Attn {
        let w = Tensor::ones((4, 4), DType::F32, &Device::Cpu).unwrap();
        Attn {
            q: Linear::new(w.clone(), None),
            o: Linear::new(w, None),
        }
    }
    #[test]
    fn all() {
        let x = Tensor::ones((2, 4), DType::F32, &Device::Cpu).unwrap();
        let l = Tensor::ones((8, 4), DType::F32, &Device::Cpu).unwrap();
        assert_eq!(mk().a1(&x, &l).unwrap().dims(), &[2, 8]);
        assert_eq!(mk().a2(&x, &l).unwrap().dims(), &[2, 8]);
        assert_eq!(mk().a3(&x, &l).unwrap().dims(), &[2, 8]);
        assert_eq!(mk().a4(&x, &l).unwrap().dims(), &[2, 8]);
        assert_eq!(mk().a5(&x, &l).unwrap().dims(), &[2, 8]);
        assert_eq!(mk().a6(&x, &l).unwrap().dims(), &[2, 8]);
    }
}

mod t2 {
    use candle_contracts_attacks::round3::m2::*;
    use candle_core::{DType, Device, Tensor};
    #[test]
    fn all() {
        let z = |d: &[usize]| Tensor::ones(d, DType::F32, &Device::Cpu).unwrap();
        let x = z(&[2, 4]);
        let l = z(&[4, 8]);
        let mut m = M {
            st: State { w: z(&[4, 4]) },
        };
        assert_eq!(m.b1(&x, &l).unwrap().dims(), &[2, 8]);
        let mut m = M {
            st: State { w: z(&[4, 4]) },
        };
        assert_eq!(m.b2(&x, &l).unwrap().dims(), &[2, 8]);
        assert_eq!(c1(&x).unwrap().dims(), &[2, 4]);
        assert_eq!(c2(&x).unwrap().dims(), &[2, 4]);
        assert_eq!(c7(&x).unwrap().dims(), &[2, 4]);
        assert_eq!(c8(&x, 1).unwrap().dims(), &[2, 4]);
    }
}

mod t3 {
    use candle_contracts_attacks::round3::m3::*;
    use candle_core::{DType, Device, Tensor};
    use candle_nn::Linear;
    #[test]
    fn all() {
        let z = |d: &[usize]| Tensor::ones(d, DType::F32, &Device::Cpu).unwrap();
        let x = z(&[2, 4]);
        let mut a = A {
            q: Linear::new(z(&[4, 4]), None),
        };
        assert_eq!(a.r1(&x, &z(&[8, 4])).unwrap().dims(), &[2, 8]);
        assert_eq!(r2(&x).unwrap().dims(), &[2, 4]);
        assert_eq!(r3(&x, &z(&[2, 8])).unwrap().dims(), &[2, 8]);
        assert_eq!(r4(&x, &z(&[2, 8])).unwrap().dims(), &[2, 8]);
    }
}

mod t5 {
    use candle_contracts_attacks::round3::m5::*;
    use candle_core::{DType, Device, Tensor};
    use candle_nn::Linear;
    use std::{cell::RefCell, rc::Rc};
    #[test]
    fn all() {
        let z = |d: &[usize]| Tensor::ones(d, DType::F32, &Device::Cpu).unwrap();
        let x = z(&[2, 4]);
        let sh = Shared {
            inner: Rc::new(RefCell::new(z(&[4, 4]))),
        };
        let mut m = M {
            a: sh.clone(),
            b: sh.clone(),
            head: Linear::new(z(&[4, 4]), None),
        };
        assert_eq!(m.s1(&x, &z(&[4, 8])).unwrap().dims(), &[2, 8]);
        sh.set(z(&[4, 4]));
        assert_eq!(m.s2(&x, &z(&[4, 8]), &sh.clone()).unwrap().dims(), &[2, 8]);
        sh.set(z(&[4, 4]));
        assert_eq!(m.s5(&x, &z(&[8, 4])).unwrap().dims(), &[2, 8]);
        set_global(z(&[4, 4]));
        let n = N2 { g: G };
        assert_eq!(n.s3(&x, &z(&[4, 8])).unwrap().dims(), &[2, 8]);
    }
}

mod t6 {
    use candle_contracts_attacks::round3::m6::*;
    use candle_core::{DType, Device, Tensor};
    use candle_nn::{Conv1d, Conv1dConfig, LayerNorm, Linear};
    #[test]
    fn all() {
        let z = |d: &[usize]| Tensor::ones(d, DType::F32, &Device::Cpu).unwrap();
        let h = Head {
            head: Linear::new(z(&[1, 4]), Some(z(&[3]))),
            conv: Conv1d::new(z(&[1, 2, 1]), Some(z(&[3])), Conv1dConfig::default()),
            ln: LayerNorm::new(z(&[1]), z(&[3]), 1e-5),
        };
        assert_eq!(h.l1(&z(&[2, 4])).unwrap().dims(), &[2, 3]);
        assert_eq!(h.l2(&z(&[2, 2, 5])).unwrap().dims(), &[2, 3, 5]);
        let xs = z(&[2, 2]).narrow(1, 0, 1).unwrap();
        assert!(!xs.is_contiguous());
        assert_eq!(h.l3(&xs).unwrap().dims(), &[2, 3]);
    }
}

mod t7 {
    use candle_contracts_attacks::round3::m7::*;
    use candle_core::{DType, Device, Tensor};
    #[test]
    fn all() {
        let z = |d: &[usize]| Tensor::ones(d, DType::F32, &Device::Cpu).unwrap();
        let (x, w) = (z(&[2, 4]), z(&[4, 3]));
        assert_eq!(k1(&x).unwrap().dims(), &[2, 4]);
        assert_eq!(k2(&x, &w).unwrap().dims(), &[2, 3]);
        assert_eq!(k3(&x, &w).unwrap().dims(), &[2, 3]);
        assert_eq!(k4(&x, &w).unwrap().dims(), &[2, 3]);
        assert_eq!(k5(&x, &w).unwrap().dims(), &[2, 3]);
    }
}
