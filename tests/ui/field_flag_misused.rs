use candle_contracts::contract;
use candle_core::{Result, Tensor};

// A flag states a `bool` field of `self`: a function without `self` has none.
#[contract(x: f32[N], self.multi_query = true)]
fn free(x: &Tensor) -> Result<usize> {
    x.dim(0)
}

struct Attention {
    num_heads: usize,
    multi_query: bool,
}

impl Attention {
    // `num_heads` is a `usize`: `= true` is a type error at the clause, never compared as 1.
    #[contract(x: f32[N], self.num_heads = true)]
    fn heads(&self, x: &Tensor) -> Result<usize> {
        let _ = self.multi_query;
        x.dim(0)
    }
}

fn main() {}
