//! A `#[contract] impl` takes its struct's contract from the file, found by a method's body:
//! where that body's text stands more than once (twin structs of one name in two modules, an
//! inherent and a trait `impl` with the same method, two `impl`s of a generic struct), the
//! method on the body's own line is the one (a review found each of these failing to compile).

use candle_contracts::contract;
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::Linear;

fn linear(out: usize, inp: usize) -> Linear {
    Linear::new(
        Tensor::ones((out, inp), DType::F32, &Device::Cpu).unwrap(),
        None,
    )
}

mod a {
    use super::*;
    #[contract(w: Linear[E -> 4])]
    pub struct Net {
        pub w: Linear,
    }
    #[contract]
    impl Net {
        #[contract(xs: f32[N, E], return: f32[N, 4])]
        pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
            self.w.forward(xs)
        }
    }
}

mod b {
    use super::*;
    #[contract(w: Linear[E -> 8])]
    pub struct Net {
        pub w: Linear,
    }
    #[contract]
    impl Net {
        #[contract(xs: f32[N, E], return: f32[N, 8])]
        pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
            self.w.forward(xs)
        }
    }
}

#[test]
fn twin_structs_in_two_modules_take_each_its_own_contract() {
    let xs = Tensor::ones((2, 3), DType::F32, &Device::Cpu).unwrap();
    assert_eq!(
        a::Net { w: linear(4, 3) }.forward(&xs).unwrap().dims(),
        &[2, 4]
    );
    assert_eq!(
        b::Net { w: linear(8, 3) }.forward(&xs).unwrap().dims(),
        &[2, 8]
    );
    // Each checks its own: a 4-wide layer is no `b::Net`.
    assert!(b::Net { w: linear(4, 3) }.forward(&xs).is_err());
}

#[contract(w: Linear[E -> 4])]
pub struct Both {
    pub w: Linear,
}

#[contract]
impl Both {
    #[contract(xs: f32[N, E], return: f32[N, 4])]
    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.w.forward(xs)
    }
}

#[contract]
impl Module for Both {
    #[contract(xs: f32[N, E], return: f32[N, 4])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.w.forward(xs)
    }
}

#[contract(w: Linear[E -> 4])]
pub struct Generic<T> {
    pub w: Linear,
    pub t: std::marker::PhantomData<T>,
}

#[contract]
impl Generic<u8> {
    #[contract(xs: f32[N, E], return: f32[N, 4])]
    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.w.forward(xs)
    }
}

#[contract]
impl Generic<u16> {
    #[contract(xs: f32[N, E], return: f32[N, 4])]
    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.w.forward(xs)
    }
}

#[test]
fn an_inherent_and_a_trait_impl_or_two_generic_impls_with_one_body_compile_and_run() {
    let xs = Tensor::ones((2, 3), DType::F32, &Device::Cpu).unwrap();
    let both = Both { w: linear(4, 3) };
    assert_eq!(both.forward(&xs).unwrap().dims(), &[2, 4]);
    assert_eq!(Module::forward(&both, &xs).unwrap().dims(), &[2, 4]);
    let generic = Generic::<u8> {
        w: linear(4, 3),
        t: std::marker::PhantomData,
    };
    assert_eq!(generic.forward(&xs).unwrap().dims(), &[2, 4]);
    let wide = Generic::<u16> {
        w: linear(4, 3),
        t: std::marker::PhantomData,
    };
    assert_eq!(wide.forward(&xs).unwrap().dims(), &[2, 4]);
    assert!(Both { w: linear(5, 3) }.forward(&xs).is_err());
}

mod r#async {
    use candle_contracts::contract;
    use candle_nn::Linear;
    #[contract(w: Linear[E -> 8])]
    pub struct Net {
        pub w: Linear,
    }
}

use r#async::Net as Renamed;

#[contract]
impl Renamed {
    #[contract(xs: f32[N, E], return: f32[N, 8])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.w.forward(xs)
    }
}

/// An `impl` that names its type through a renamed import, of a module with a raw name.
#[test]
fn an_impl_through_a_renamed_import_takes_the_structs_contract() {
    let xs = Tensor::ones((2, 3), DType::F32, &Device::Cpu).unwrap();
    let net = r#async::Net { w: linear(8, 3) };
    assert_eq!(net.forward(&xs).unwrap().dims(), &[2, 8]);
    assert!(r#async::Net { w: linear(4, 3) }.forward(&xs).is_err());
}

/// In a `#[contract] mod`, `impl inner::Attention` is not the `Attention` declared beside it:
/// it takes no struct contract (a review found it taking the outer one's flag, a false
/// violation on a valid call).
#[contract]
mod qualified_impl {
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};

    #[contract(multi_query = true)]
    pub struct Attention {
        pub multi_query: bool,
    }

    pub mod inner {
        pub struct Attention {
            pub multi_query: bool,
        }
    }

    impl inner::Attention {
        #[contract(q: f32[2, 3, 8])]
        pub fn split(&self, q: &Tensor) -> Result<Tensor> {
            match self.multi_query {
                true => q.reshape((2, 6, 4)),
                false => Ok(q.clone()),
            }
        }
    }

    impl Attention {
        #[contract(q: f32[2, 3, 8])]
        pub fn split(&self, q: &Tensor) -> Result<Tensor> {
            q.reshape((2, 6, 4))
        }
    }

    // `self::Attention` is the one declared here.
    impl self::Attention {
        #[contract(q: f32[2, 3, 8])]
        pub fn split_again(&self, q: &Tensor) -> Result<Tensor> {
            q.reshape((2, 6, 4))
        }
    }
}

#[test]
fn an_impl_of_a_qualified_path_takes_no_struct_contract_of_its_last_name() {
    let q = Tensor::ones((2, 3, 8), DType::F32, &Device::Cpu).unwrap();
    let inner = qualified_impl::inner::Attention { multi_query: false };
    assert_eq!(inner.split(&q).unwrap().dims(), &[2, 3, 8]);
    let outer = qualified_impl::Attention { multi_query: false };
    let error = outer.split(&q).unwrap_err().to_string();
    assert!(error.contains("self.multi_query = true"), "{error}");
    let error = outer.split_again(&q).unwrap_err().to_string();
    assert!(error.contains("self.multi_query = true"), "{error}");
}

/// A `#[contract] impl` in the struct's file takes its contract however the header writes the
/// type (`self::Scaled`) and whatever its bounds hold (`F: Fn(&Tensor) -> candle_core::Result<
/// Tensor>`, whose `->` once closed an angle bracket): a review found both no longer compiling.
mod written_by_path {
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};

    #[contract(n = N)]
    pub struct Scaled<F> {
        pub n: usize,
        pub act: F,
    }

    #[contract]
    impl<F: Fn(&Tensor) -> candle_core::Result<Tensor>> self::Scaled<F> {
        #[contract(xs: f32[N])]
        pub fn apply(&self, xs: &Tensor) -> Result<Tensor> {
            (self.act)(xs)
        }
    }
}

#[test]
fn an_impl_written_by_a_path_or_with_an_arrow_in_its_bounds_takes_the_structs_contract() {
    let scaled = written_by_path::Scaled {
        n: 6,
        act: |xs: &Tensor| xs.affine(2.0, 0.0),
    };
    let xs = Tensor::ones(6, DType::F32, &Device::Cpu).unwrap();
    assert_eq!(scaled.apply(&xs).unwrap().dims(), &[6]);
    // The struct's `n = N` is checked: 5 elements are not `self.n`'s 6.
    let error = scaled
        .apply(&Tensor::ones(5, DType::F32, &Device::Cpu).unwrap())
        .unwrap_err()
        .to_string();
    assert!(error.contains("bound by `self.n`"), "{error}");
}
