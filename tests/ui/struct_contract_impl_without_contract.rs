use candle_contracts::contract;
use candle_core::{Module, Result, Tensor};
use candle_nn::Linear;

// The struct's clauses reach its methods only through a `#[contract] impl`: without one, the
// method's guard would check `x` and not `self.proj`, so it does not compile.
#[contract(proj: Linear[E -> E])]
struct Block {
    proj: Linear,
}

impl Block {
    #[contract(x: f32[N, E])]
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.proj.forward(x)
    }
}

fn main() {}
