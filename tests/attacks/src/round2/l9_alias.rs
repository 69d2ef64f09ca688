use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::*;

pub mod my {
    use candle_core::{Result, Tensor};
    pub struct MyLin {
        pub w: Tensor,
    }
    impl MyLin {
        pub fn weight(&self) -> &Tensor {
            &self.w
        }
        pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
            x.matmul(&self.w)
        }
    }
}
type Linear = my::MyLin;
pub struct M {
    pub proj: Linear,
}
impl M {
    #[contract(x: f32[N, 8], self.proj.weight(): f32[8, 4])]
    pub fn alias(&self, x: &Tensor) -> Result<Tensor> {
        self.proj.forward(x)
    }
}
pub mod renamed {
    use super::my::MyLin as Embedding;
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};
    use candle_nn::*;
    pub struct M2 {
        pub emb: Embedding,
    }
    impl M2 {
        #[contract(x: f32[N, 8], self.emb.weight(): f32[8, 4])]
        pub fn renamed(&self, x: &Tensor) -> Result<Tensor> {
            self.emb.forward(x)
        }
    }
}
