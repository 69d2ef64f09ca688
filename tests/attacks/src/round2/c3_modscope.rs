use candle_contracts::contract;
use candle_core::{Result, Tensor};

const D: usize = 4;

pub mod m {
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};
    // D is not in sight here: it is a free dim
    #[contract(x: f32[N, D], w: f32[8, 3])]
    pub fn f(x: &Tensor, w: &Tensor) -> Result<Tensor> {
        x.matmul(w)
    }
}

pub mod m2 {
    use super::*;
    const D: usize = 8;
    #[contract(x: f32[N, D], w: f32[8, 3])]
    pub fn g(x: &Tensor, w: &Tensor) -> Result<Tensor> {
        x.matmul(w)
    }
}

pub mod m3 {
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};
    pub const D: usize = 8;
    pub mod deep {
        use super::*;
        use candle_contracts::contract;
        use candle_core::{Result, Tensor};
        #[contract(x: f32[N, D], w: f32[8, 3])]
        pub fn h(x: &Tensor, w: &Tensor) -> Result<Tensor> {
            x.matmul(w)
        }
    }
}
