use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::Activation;

// The activation is a field of `self`: a function without `self` has none.
#[contract(x: f32[N], self.act != Swiglu)]
fn free(x: &Tensor) -> Result<usize> {
    x.dim(0)
}

struct Mlp {
    act: Activation,
    n: usize,
}

impl Mlp {
    // Every variant but `Swiglu` keeps the shape: no other is named.
    #[contract(x: f32[N], self.act != Relu)]
    fn relu(&self, x: &Tensor) -> Result<usize> {
        x.dim(0)
    }

    // A `usize` is no activation: a trait error at the clause.
    #[contract(x: f32[N], self.n != Swiglu)]
    fn number(&self, x: &Tensor) -> Result<usize> {
        let _ = &self.act;
        x.dim(0)
    }

    // Without `self.`: read as a relation between dims, it says what to write.
    #[contract(x: f32[N], act != Swiglu)]
    fn unprefixed(&self, x: &Tensor) -> Result<usize> {
        x.dim(0)
    }

    // A path from another parameter.
    #[contract(x: f32[N], other.act != Swiglu)]
    fn other(&self, x: &Tensor, other: &Mlp) -> Result<usize> {
        let _ = &other.act;
        x.dim(0)
    }
}

// In a struct contract, a name that is no field.
#[contract(activation != Swiglu)]
struct Gated {
    act: Activation,
}

// In a struct contract, another variant than `Swiglu`.
#[contract(act != Relu)]
struct Relued {
    act: Activation,
}

fn main() {}
