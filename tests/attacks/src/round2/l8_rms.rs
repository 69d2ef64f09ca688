use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::{Module, RmsNorm};

pub struct R {
    pub norm: RmsNorm,
}
impl R {
    #[contract(x: f32[N, 2], self.norm.weight(): f32[8])]
    pub fn strided(&self, x: &Tensor) -> Result<Tensor> {
        self.norm.forward(&x.narrow(1, 0, 1)?) // non-contiguous [N, 1]: the slow path broadcasts
    }
}
