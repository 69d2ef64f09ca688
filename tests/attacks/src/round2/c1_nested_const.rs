// a contracted function inside another function's body: the body's const is the one in its sight
use candle_contracts::contract;
use candle_core::{Result, Tensor};

const D: usize = 4;

pub fn outer(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    const D: usize = 8;
    #[contract(x: f32[N, D], w: f32[8, 3])]
    fn inner(x: &Tensor, w: &Tensor) -> Result<Tensor> {
        x.matmul(w)
    }
    inner(x, w)
}

pub mod other {
    pub const E: usize = 8;
}
const E: usize = 4;
pub fn outer_use(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    use other::E;
    #[contract(x: f32[N, E], w: f32[8, 3])]
    fn inner2(x: &Tensor, w: &Tensor) -> Result<Tensor> {
        x.matmul(w)
    }
    inner2(x, w)
}
