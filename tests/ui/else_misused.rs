use candle_contracts::contract;
use candle_core::{Result, Tensor};

struct Attention {
    kv_cache: Option<(Tensor, Tensor)>,
    k: Tensor,
    proj: Option<candle_nn::Linear>,
}

impl Attention {
    // `else` gives a size where an optional step finds `None`: an argument has none.
    #[contract(x: f32[N, P] else P = 0)]
    fn argument(&self, x: &Tensor) -> Result<usize> {
        x.dim(0)
    }

    // Nor does a path without `?`.
    #[contract(self.k: f32[N, P] else P = 0)]
    fn plain_path(&self) -> Result<usize> {
        self.k.dim(0)
    }

    // An absent cache holds nothing: its size is 0, no other number.
    #[contract(self.kv_cache?.0: f32[N, P] else P = 1)]
    fn one(&self) -> Result<usize> {
        Ok(self.kv_cache.is_some() as usize)
    }

    // The dim is one of the clause's own.
    #[contract(self.kv_cache?.0: f32[N, P] else Q = 0)]
    fn other_dim(&self) -> Result<usize> {
        Ok(self.kv_cache.is_some() as usize)
    }

    // `P` in an expression: the dim `else` sizes stands alone in the shape.
    #[contract(self.kv_cache?.0: f32[N, P + 1] else P = 0)]
    fn in_expression(&self) -> Result<usize> {
        Ok(self.kv_cache.is_some() as usize)
    }

    // A layer clause states a layer's sizes only.
    #[contract(self.proj?: Linear[E -> P] else P = 0)]
    fn layer(&self) -> Result<usize> {
        Ok(self.proj.is_some() as usize)
    }

    // A const generic is no dim: its value is the caller's.
    #[contract(self.kv_cache?.0: f32[N, P] else P = 0)]
    fn generic<const P: usize>(&self) -> Result<usize> {
        Ok(self.kv_cache.is_some() as usize + P)
    }

    // Written as a relation.
    #[contract(self.kv_cache?.0: f32[N, P] else P == 0)]
    fn relation(&self) -> Result<usize> {
        Ok(self.kv_cache.is_some() as usize)
    }
}

fn main() {}
