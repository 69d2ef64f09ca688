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

struct Mqa {
    n: usize,
    multi_query: bool,
}

impl Mqa {
    // One field, one value.
    #[contract(x: f32[N], self.multi_query = true, self.multi_query = false)]
    fn both(&self, x: &Tensor) -> Result<usize> {
        x.dim(0)
    }

    // A field that names a dim is a size.
    #[contract(x: f32[K], self.n = K, self.n = true)]
    fn sized(&self, x: &Tensor) -> Result<usize> {
        x.dim(0)
    }

    // Written like an option: the error says to write it from `self`.
    #[contract(x: f32[N], multi_query = true)]
    fn unprefixed(&self, x: &Tensor) -> Result<usize> {
        x.dim(0)
    }
}

// The struct states one value, the method the other.
#[contract(multi_query = true)]
struct Gqa {
    multi_query: bool,
}

#[contract]
impl Gqa {
    #[contract(x: f32[N], self.multi_query = false)]
    fn heads(&self, x: &Tensor) -> Result<usize> {
        x.dim(0)
    }
}

fn main() {}
