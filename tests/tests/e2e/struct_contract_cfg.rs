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

/// A struct with a contract under other attributes a model struct often has: a derive under
/// `cfg_attr`, its own `cfg`, twins under opposite `cfg`s, an `impl` under `cfg_attr`, the
/// whole in a module under `cfg` (a `tests` module): a breaker found each rejected with
/// `StructContractNotTaken`.
mod under_other_attributes {
    use super::*;

    #[cfg_attr(test, derive(Debug))]
    #[contract(w: Linear[E -> 4])]
    pub struct Derived {
        pub w: Linear,
    }
    #[cfg_attr(test, allow(clippy::needless_lifetimes))]
    #[contract]
    impl Derived {
        #[contract(xs: f32[N, E])]
        pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
            self.w.forward(xs)
        }
    }

    #[cfg(test)]
    #[contract(w: Linear[E -> 4])]
    pub struct Twin {
        pub w: Linear,
    }
    #[cfg(not(test))]
    #[contract(w: Linear[E -> 8])]
    pub struct Twin {
        pub w: Linear,
    }
    #[contract]
    impl Twin {
        #[contract(xs: f32[N, E])]
        pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
            self.w.forward(xs)
        }
    }

    #[cfg(test)]
    pub mod gated {
        use super::super::*;
        #[contract(w: Linear[E -> 4])]
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
}

/// The struct in a module inside a `#[contract] mod`, its `impl` in the outer one; and a plain
/// module inside one, whose `impl` of the outer struct has no `#[contract]` of its own.
#[contract]
mod nested {
    use candle_contracts::contract;
    use candle_core::{Module, Result, Tensor};

    pub mod layers {
        use candle_contracts::contract;
        use candle_nn::Linear;
        #[contract(w: Linear[E -> 4])]
        pub struct Block {
            pub w: Linear,
        }
    }
    pub use layers::Block;

    #[contract]
    impl Block {
        #[contract(xs: f32[N, E])]
        pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
            self.w.forward(xs)
        }
    }

    pub mod plain {
        use super::Block;
        use candle_contracts::contract;
        use candle_core::{Module, Result, Tensor};
        impl Block {
            #[contract(xs: f32[N, E])]
            pub fn forward_plain(&self, xs: &Tensor) -> Result<Tensor> {
                self.w.forward(xs)
            }
        }
    }

    pub fn run(block: &Block, xs: &Tensor) -> Result<Tensor> {
        block.w.forward(xs)
    }
}

#[test]
fn a_struct_contract_beside_other_attributes_is_checked() {
    use under_other_attributes::{gated, Derived, Twin};
    assert_eq!(
        Derived { w: linear(4, 3) }.forward(&xs()).unwrap().dims(),
        &[2, 4]
    );
    assert_eq!(
        Twin { w: linear(4, 3) }.forward(&xs()).unwrap().dims(),
        &[2, 4]
    );
    let gated_net = gated::Net { w: linear(4, 3) };
    assert_eq!(gated_net.forward(&xs()).unwrap().dims(), &[2, 4]);
    // The twin compiled in states `E -> 4`: an 8-wide layer is not it.
    for error in [
        Derived { w: linear(5, 3) }.forward(&xs()),
        Twin { w: linear(8, 3) }.forward(&xs()),
        gated::Net { w: linear(5, 3) }.forward(&xs()),
    ] {
        let error = error.unwrap_err().to_string();
        assert!(error.contains("self.w"), "{error}");
    }
}

#[test]
fn nested_modules_of_a_contract_mod_hand_on_the_structs_clauses() {
    let block = nested::Block { w: linear(4, 3) };
    assert_eq!(block.forward(&xs()).unwrap().dims(), &[2, 4]);
    assert_eq!(block.forward_plain(&xs()).unwrap().dims(), &[2, 4]);
    assert_eq!(nested::run(&block, &xs()).unwrap().dims(), &[2, 4]);
    let wide = nested::Block { w: linear(5, 3) };
    for error in [wide.forward(&xs()), wide.forward_plain(&xs())] {
        let error = error.unwrap_err().to_string();
        assert!(error.contains("self.w"), "{error}");
    }
}

/// A struct contract under `cfg_attr` whose `impl` is in another module, and two `cfg_attr`
/// contracts on one struct (one per `cfg`): a breaker found the first rejected with
/// `StructContractNotTaken`, and the second read as its first contract only.
mod under_cfg_attr_elsewhere {
    use candle_contracts::contract;
    use candle_nn::Linear;

    #[cfg_attr(test, contract(w: Linear[E -> 4]))]
    pub struct Net {
        pub w: Linear,
    }

    #[cfg_attr(not(test), contract(w: Linear[E -> 8]))]
    #[cfg_attr(test, contract(w: Linear[E -> 4]))]
    pub struct Either {
        pub w: Linear,
    }

    pub mod inner {
        use super::{Either, Net};
        use candle_contracts::contract;
        use candle_core::{Module, Result, Tensor};

        #[contract]
        impl Net {
            #[contract(xs: f32[N, E])]
            pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
                self.w.forward(xs)
            }
        }

        #[contract]
        impl Either {
            #[contract(xs: f32[N, E])]
            pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
                self.w.forward(xs)
            }
        }
    }
}

#[test]
fn a_struct_contract_under_cfg_attr_reaches_an_impl_in_another_module() {
    use under_cfg_attr_elsewhere::{Either, Net};
    assert_eq!(
        Net { w: linear(4, 3) }.forward(&xs()).unwrap().dims(),
        &[2, 4]
    );
    assert_eq!(
        Either { w: linear(4, 3) }.forward(&xs()).unwrap().dims(),
        &[2, 4]
    );
    // Tests build with `test`: the `E -> 4` contract, not the `E -> 8` one.
    for error in [
        Net { w: linear(5, 3) }.forward(&xs()),
        Either { w: linear(8, 3) }.forward(&xs()),
    ] {
        let error = error.unwrap_err().to_string();
        assert!(error.contains("self.w"), "{error}");
    }
}

/// A struct there under every `cfg`, its `impl` in a module under `cfg` (a third breaker found
/// it rejected with `StructContractNotTaken`: the index resolves no `impl` under `cfg`).
mod impl_under_cfg {
    use candle_nn::Linear;

    #[candle_contracts::contract(w: Linear[E -> 4])]
    pub struct Net {
        pub w: Linear,
    }

    #[cfg(test)]
    pub mod helpers {
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
    }
}

#[test]
fn an_impl_in_a_module_under_cfg_takes_the_structs_clauses() {
    use impl_under_cfg::Net;
    assert_eq!(
        Net { w: linear(4, 3) }.forward(&xs()).unwrap().dims(),
        &[2, 4]
    );
    let error = Net { w: linear(5, 3) }
        .forward(&xs())
        .unwrap_err()
        .to_string();
    assert!(error.contains("self.w"), "{error}");
}

/// An `impl` whose type only `use`s under opposite `cfg`s bring, each naming the same struct (a
/// third breaker found it rejected with `StructContractNotTaken`).
mod impl_through_twin_uses {
    use candle_nn::Linear;

    #[candle_contracts::contract(w: Linear[E -> 4])]
    pub struct Net {
        pub w: Linear,
    }

    pub mod helpers {
        #[cfg(test)]
        use super::Net;
        #[cfg(not(test))]
        use crate::struct_contract_cfg::impl_through_twin_uses::Net;
        use candle_contracts::contract;
        use candle_core::{Module, Result, Tensor};

        #[contract]
        impl Net {
            #[contract(xs: f32[N, E])]
            pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
                self.w.forward(xs)
            }
        }
    }
}

#[test]
fn an_impl_through_twin_uses_takes_the_structs_clauses() {
    use impl_through_twin_uses::Net;
    assert_eq!(
        Net { w: linear(4, 3) }.forward(&xs()).unwrap().dims(),
        &[2, 4]
    );
    let error = Net { w: linear(5, 3) }
        .forward(&xs())
        .unwrap_err()
        .to_string();
    assert!(error.contains("self.w"), "{error}");
}

/// Twin structs under opposite `cfg`s, their `impl` in a child module through `use super::Net`
/// (a third breaker found it rejected with `StructContractNotTaken`).
mod twins_impl_in_a_child {
    use candle_nn::Linear;

    #[cfg(test)]
    #[candle_contracts::contract(w: Linear[E -> 4])]
    pub struct Net {
        pub w: Linear,
    }
    #[cfg(not(test))]
    #[candle_contracts::contract(w: Linear[E -> 4])]
    pub struct Net {
        pub w: Linear,
    }

    pub mod helpers {
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
    }
}

/// A struct in a module under `cfg(test)`, its `impl` in a module below written `impl
/// super::Probe`; and a struct contract under nested `cfg_attr`s (`all()` of both holds).
#[cfg(test)]
mod in_a_test_module {
    use candle_nn::Linear;

    #[candle_contracts::contract(w: Linear[E -> 4])]
    pub struct Probe {
        pub w: Linear,
    }

    #[cfg_attr(all(), cfg_attr(test, candle_contracts::contract(w: Linear[E -> 4])))]
    pub struct Nested {
        pub w: Linear,
    }

    mod sub {
        use candle_contracts::contract;
        use candle_core::{Module, Result, Tensor};

        #[contract]
        impl super::Probe {
            #[contract(xs: f32[N, E])]
            pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
                self.w.forward(xs)
            }
        }

        #[contract]
        impl super::Nested {
            #[contract(xs: f32[N, E])]
            pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
                self.w.forward(xs)
            }
        }
    }
}

#[test]
fn twins_and_test_module_structs_hand_their_clauses_to_impls_elsewhere() {
    use in_a_test_module::{Nested, Probe};
    use twins_impl_in_a_child::Net;
    assert_eq!(
        Net { w: linear(4, 3) }.forward(&xs()).unwrap().dims(),
        &[2, 4]
    );
    assert_eq!(
        Probe { w: linear(4, 3) }.forward(&xs()).unwrap().dims(),
        &[2, 4]
    );
    assert_eq!(
        Nested { w: linear(4, 3) }.forward(&xs()).unwrap().dims(),
        &[2, 4]
    );
    for error in [
        Net { w: linear(5, 3) }.forward(&xs()).unwrap_err(),
        Probe { w: linear(5, 3) }.forward(&xs()).unwrap_err(),
        Nested { w: linear(5, 3) }.forward(&xs()).unwrap_err(),
    ] {
        assert!(error.to_string().contains("self.w"), "{error}");
    }
}
