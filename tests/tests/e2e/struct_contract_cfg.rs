//! Struct contracts and their methods' contracts written under `cfg_attr`, and `impl`s of a
//! struct declared in another module of a `#[contract] mod`: each compiles and checks the
//! struct's clauses where its contract is compiled in (a breaker found each one rejected with
//! `StructContractNotTaken`, a correct program that did not compile).

use candle_contracts::contract;
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::Linear;

fn linear(out: usize, inp: usize) -> Linear {
    Linear::new(
        Tensor::ones((out, inp), DType::F32, &Device::Cpu).unwrap(),
        None,
    )
}

fn xs() -> Tensor {
    Tensor::ones((2, 3), DType::F32, &Device::Cpu).unwrap()
}

/// The struct's contract under a `cfg_attr` that holds: its clauses are checked.
mod struct_under_cfg_on {
    use super::*;
    #[cfg_attr(all(), contract(w: Linear[E -> 4]))]
    pub struct Net {
        pub w: Linear,
    }
    #[contract]
    impl Net {
        #[contract(xs: f32[N, E])]
        pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
            self.w.forward(xs)
        }
    }
}

/// The struct's contract under a `cfg_attr` that does not hold: no clause of it is checked.
mod struct_under_cfg_off {
    use super::*;
    #[cfg_attr(any(), contract(w: Linear[E -> 4]))]
    pub struct Net {
        pub w: Linear,
    }
    #[contract]
    impl Net {
        #[contract(xs: f32[N, E])]
        pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
            self.w.forward(xs)
        }
    }
}

/// A method's contract, and the `impl`'s, under `cfg_attr`.
mod methods_under_cfg {
    use super::*;
    #[contract(w: Linear[E -> 4])]
    pub struct Net {
        pub w: Linear,
    }
    #[cfg_attr(all(), contract)]
    impl Net {
        #[cfg_attr(all(), contract(xs: f32[N, E]))]
        pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
            self.w.forward(xs)
        }
        #[contract(xs: f32[N, E])]
        pub fn forward_again(&self, xs: &Tensor) -> Result<Tensor> {
            self.w.forward(xs)
        }
    }
}

/// `impl`s in an inner module of a `#[contract] mod`, of the struct declared in the outer one.
#[contract]
mod outer {
    use candle_contracts::contract;
    use candle_core::{Module, Result, Tensor};
    use candle_nn::Linear;

    #[contract(w: Linear[E -> 4])]
    pub struct Net {
        pub w: Linear,
    }

    #[contract]
    pub mod inner {
        use super::Net;
        use candle_contracts::contract;
        use candle_core::{Module, Result, Tensor};
        #[contract]
        impl Net {
            #[contract(xs: f32[N, E])]
            pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
                self.w.forward(xs)
            }
        }
        impl super::Net {
            #[contract(xs: f32[N, E])]
            pub fn forward_by_path(&self, xs: &Tensor) -> Result<Tensor> {
                self.w.forward(xs)
            }
        }
    }

    impl Net {
        #[contract(xs: f32[N, E])]
        pub fn forward_here(&self, xs: &Tensor) -> Result<Tensor> {
            self.w.forward(xs)
        }
    }

    // Keeps the outer imports used whatever the inner module does.
    pub fn width(net: &Net) -> usize {
        let _: &Linear = &net.w;
        net.w.weight().dims()[0]
    }

    pub fn run(net: &Net, xs: &Tensor) -> Result<Tensor> {
        net.w.forward(xs)
    }
}

#[test]
fn a_struct_contract_under_cfg_attr_is_checked_only_where_it_holds() {
    let on = struct_under_cfg_on::Net { w: linear(4, 3) };
    assert_eq!(on.forward(&xs()).unwrap().dims(), &[2, 4]);
    let error = struct_under_cfg_on::Net { w: linear(5, 3) }
        .forward(&xs())
        .unwrap_err()
        .to_string();
    assert!(error.contains("self.w"), "{error}");
    // Compiled out: a 5-wide layer passes, as without a contract.
    let off = struct_under_cfg_off::Net { w: linear(5, 3) };
    assert_eq!(off.forward(&xs()).unwrap().dims(), &[2, 5]);
}

#[test]
fn a_method_contract_under_cfg_attr_takes_the_structs_clauses() {
    let net = methods_under_cfg::Net { w: linear(4, 3) };
    assert_eq!(net.forward(&xs()).unwrap().dims(), &[2, 4]);
    assert_eq!(net.forward_again(&xs()).unwrap().dims(), &[2, 4]);
    let wide = methods_under_cfg::Net { w: linear(5, 3) };
    for error in [wide.forward(&xs()), wide.forward_again(&xs())] {
        let error = error.unwrap_err().to_string();
        assert!(error.contains("self.w"), "{error}");
    }
    // The method's own clause is checked too: 2 columns are not the layer's 3 inputs.
    let narrow = Tensor::ones((2, 2), DType::F32, &Device::Cpu).unwrap();
    let error = net.forward(&narrow).unwrap_err().to_string();
    assert!(error.contains("E = 2 (bound by `xs` dim 1)"), "{error}");
}

#[test]
fn impls_in_an_inner_contract_mod_take_the_outer_structs_clauses() {
    let net = outer::Net { w: linear(4, 3) };
    assert_eq!(net.forward(&xs()).unwrap().dims(), &[2, 4]);
    assert_eq!(net.forward_by_path(&xs()).unwrap().dims(), &[2, 4]);
    assert_eq!(net.forward_here(&xs()).unwrap().dims(), &[2, 4]);
    assert_eq!(outer::width(&net), 4);
    assert_eq!(outer::run(&net, &xs()).unwrap().dims(), &[2, 4]);
    let wide = outer::Net { w: linear(5, 3) };
    for error in [
        wide.forward(&xs()),
        wide.forward_by_path(&xs()),
        wide.forward_here(&xs()),
    ] {
        let error = error.unwrap_err().to_string();
        assert!(error.contains("self.w"), "{error}");
    }
}
