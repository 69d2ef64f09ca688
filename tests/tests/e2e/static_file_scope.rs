//! Correct programs the compile-time check once refused (a breaker's finds): a twin body that
//! the file lookup took for the function expanding, `use`s that are not in effect where the
//! call is (under `cfg`, in a nested block), and contracted siblings under `cfg`. Each compiles,
//! and runs to the value the user's own `nn` gives.
#![allow(unused, clippy::all)]
use candle_contracts::contract;
use candle_contracts::nn;
use candle_core::{DType, Device, Result, Tensor};

/// A user's own loss module: target is a column [N, 1].
pub mod mynn {
    use candle_core::{Result, Tensor};
    pub fn cross_entropy(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
        candle_nn::loss::cross_entropy(logits, &target.squeeze(1)?)
    }
}
pub mod shim {
    pub use crate::static_file_scope::mynn as nn;
}

// ---- Case 1: twin body at file level (candle's nn), real one nested in a fn body (user's nn)
fn loss1(l: &Tensor, t: &Tensor) -> Result<Tensor> {
    nn::cross_entropy(l, t)
}
fn case1() -> Result<Tensor> {
    use crate::static_file_scope::mynn as nn;
    #[contract(l: f32[N, C], t: i64[N, 1])]
    fn loss1(l: &Tensor, t: &Tensor) -> Result<Tensor> {
        nn::cross_entropy(l, t)
    }
    let l = Tensor::zeros((3, 4), DType::F32, &Device::Cpu)?;
    let t = Tensor::zeros((3, 1), DType::I64, &Device::Cpu)?;
    loss1(&l, &t)
}

// ---- Case 2: a cfg'd-out `use candle_contracts::nn`, `nn` really from a glob
mod case2 {
    use crate::static_file_scope::shim::*;
    use candle_contracts::contract;
    #[cfg(any())]
    use candle_contracts::nn;
    use candle_core::{Result, Tensor};
    #[contract(l: f32[N, C], t: i64[N, 1])]
    pub fn loss2(l: &Tensor, t: &Tensor) -> Result<Tensor> {
        nn::cross_entropy(l, t)
    }
}

// ---- Case 3: a block-scoped `use` in the body, the outer `nn` from a glob
mod case3 {
    use crate::static_file_scope::shim::*;
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};
    #[contract(l: f32[N, C], t: i64[N, 1])]
    pub fn loss3(l: &Tensor, t: &Tensor) -> Result<Tensor> {
        let _unused = {
            use candle_contracts::nn;
            let _ = nn::cross_entropy;
            0
        };
        nn::cross_entropy(l, t)
    }
}

// ---- Case 4: in-body cfg'd use
mod case4 {
    use crate::static_file_scope::shim::*;
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};
    #[contract(l: f32[N, C], t: i64[N, 1])]
    pub fn loss4(l: &Tensor, t: &Tensor) -> Result<Tensor> {
        #[cfg(any())]
        use candle_contracts::nn;
        nn::cross_entropy(l, t)
    }
}

// ---- Case 5: a #[contract] mod with two cfg'd fns of one name
#[contract]
mod case5 {
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};
    #[cfg(any())]
    #[contract(x: f32[N, M], return: f32[N, M])]
    pub fn helper(x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
    #[cfg(not(any()))]
    pub fn helper(x: &Tensor) -> Result<Tensor> {
        x.t()
    }
    #[contract(y: f32[2, 3], return: f32[3, 2])]
    pub fn caller(y: &Tensor) -> Result<Tensor> {
        helper(y)
    }
}

// ---- Case 6: a #[contract] impl with two cfg'd methods of one name
pub struct M6;
#[contract]
impl M6 {
    #[cfg(any())]
    #[contract(x: f32[N, K], return: f32[N, K])]
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
    #[cfg(not(any()))]
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.t()
    }
    #[contract(y: f32[2, 3], return: f32[3, 2])]
    pub fn run(&self, y: &Tensor) -> Result<Tensor> {
        self.forward(y)
    }
}

// ---- Case 7: macro-generated function in a module whose nn is the user's; twin elsewhere
macro_rules! make_loss7 {
    () => {
        #[contract(l: f32[N, C], t: i64[N, 1])]
        pub fn loss7(l: &Tensor, t: &Tensor) -> Result<Tensor> {
            nn::cross_entropy(l, t)
        }
    };
}
mod case7_twin {
    use candle_contracts::nn;
    use candle_core::{Result, Tensor};
    pub fn loss7(l: &Tensor, t: &Tensor) -> Result<Tensor> {
        nn::cross_entropy(l, t)
    }
}
mod case7 {
    use crate::static_file_scope::mynn as nn;
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};
    make_loss7!();
}

// ---- Case 8: shadowing patterns of a parameter
#[contract(x: f32[N, 3], w: f32[4, M])]
fn case8(x: &Tensor, w: &Tensor, o: Option<Tensor>, xs: Vec<Tensor>) -> Result<Tensor> {
    if let Some(x) = &o {
        let _ = x.matmul(w)?;
    }
    let f = |x: &Tensor| x.matmul(w);
    for x in xs.iter() {
        let _ = x.matmul(w)?;
    }
    fn inner(x: &Tensor, w: &Tensor) -> Result<Tensor> {
        x.matmul(w)
    }
    let r = match &o {
        Some(x) => x.matmul(w)?,
        None => w.clone(),
    };
    while let Some(x) = o.as_ref() {
        let _ = x.matmul(w)?;
        break;
    }
    let Some(x) = o.as_ref() else { return Ok(r) };
    x.matmul(w)
}

// ---- Case 9: mutation through clone_from / mem::swap / macro from outside / &mut method
macro_rules! grow {
    ($t:ident) => {
        $t = $t.unsqueeze(0)?
    };
}
#[contract(x: f32[N, C], y: f32[N, C, 1])]
fn case9(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let mut a = x.clone();
    a.clone_from(y);
    let _ = a.squeeze(2)?; // rank 3 ok
    let mut b = x.clone();
    let mut c = y.clone();
    std::mem::swap(&mut b, &mut c);
    let _ = b.squeeze(2)?;
    let mut d = x.clone();
    grow!(d);
    let _ = d.narrow(2, 0, 1)?;
    let mut e = x.clone();
    {
        let r = &mut e;
        *r = r.unsqueeze(0)?;
    }
    let _ = e.narrow(2, 0, 1)?;
    let mut g = x.clone();
    let h = std::mem::replace(&mut g, y.clone());
    g.narrow(2, 0, 1)
}

// ---- Case 10: broadcast with an unknown rhs of higher rank
#[contract(x: f32[N], return: f32[M, N])]
fn case10(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x.broadcast_add(y)
}

// ---- Case 11: same-shape op with an unknown arg where the arg is a scalar-like of different kind
#[contract(x: f32[N, C])]
fn case11(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let z = x.add(y)?; // z: [N, C]
    z.sum_keepdim(1)
}

// ---- Case 12: the empty-tensor path of matmul and others
#[contract(x: f32[0, 3], w: f32[3, M])]
fn case12(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    x.matmul(w)
}

// ---- Case 13: a trait's default method, with a twin in a module using candle_contracts::nn
mod h_twin {
    use candle_contracts::nn;
    use candle_core::{Result, Tensor};
    pub fn loss_h(l: &Tensor, t: &Tensor) -> Result<Tensor> {
        nn::cross_entropy(l, t)
    }
}
mod h {
    use crate::static_file_scope::mynn as nn;
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};
    pub trait Loss {
        #[contract(l: f32[N, C], t: i64[N, 1])]
        fn loss_h(l: &Tensor, t: &Tensor) -> Result<Tensor> {
            nn::cross_entropy(l, t)
        }
    }
    pub struct S;
    impl Loss for S {}
}

// ---- Case 14: an `impl` inside a `const _` block, with a twin outside
mod i_twin {
    use candle_contracts::nn;
    use candle_core::{Result, Tensor};
    pub struct S;
    impl S {
        pub fn loss_i(l: &Tensor, t: &Tensor) -> Result<Tensor> {
            nn::cross_entropy(l, t)
        }
    }
}
mod i {
    use crate::static_file_scope::mynn as nn;
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};
    pub struct T;
    const _: () = {
        impl T {
            #[contract(l: f32[N, C], t: i64[N, 1])]
            pub fn loss_i(l: &Tensor, t: &Tensor) -> Result<Tensor> {
                nn::cross_entropy(l, t)
            }
        }
    };
}

#[test]
fn the_users_own_nn_is_called_and_nothing_was_refused() {
    let l = Tensor::zeros((3, 4), DType::F32, &Device::Cpu).unwrap();
    let t = Tensor::zeros((3, 1), DType::I64, &Device::Cpu).unwrap();
    let ln4 = 4f32.ln();
    for loss in [
        case1().unwrap(),
        case2::loss2(&l, &t).unwrap(),
        case3::loss3(&l, &t).unwrap(),
        case4::loss4(&l, &t).unwrap(),
        case7::loss7(&l, &t).unwrap(),
        <h::S as h::Loss>::loss_h(&l, &t).unwrap(),
        i::T::loss_i(&l, &t).unwrap(),
    ] {
        assert!((loss.to_scalar::<f32>().unwrap() - ln4).abs() < 1e-6);
    }
    let y = Tensor::zeros((2, 3), DType::F32, &Device::Cpu).unwrap();
    assert_eq!(case5::caller(&y).unwrap().dims(), [3, 2]);
    assert_eq!(M6.run(&y).unwrap().dims(), [3, 2]);
}
