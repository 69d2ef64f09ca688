// a user type named Linear in a module that glob-imports candle_nn
use candle_contracts::contract;
use candle_core::{Result, Tensor};

pub mod layers {
    use candle_core::{Result, Tensor};
    pub use candle_nn::*;
    // stores the weight as [IN, OUT]
    #[derive(Clone)]
    pub struct Linear {
        w: Tensor,
    }
    impl Linear {
        pub fn weight(&self) -> &Tensor {
            &self.w
        }
        pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
            x.matmul(&self.w)
        }
    }
}
use layers::*;

pub struct M {
    pub proj: Linear,
}
impl M {
    #[contract(x: f32[N, 8], self.proj.weight(): f32[8, 4])]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.proj.forward(x)
    }
}

pub mod inner {
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};
    use candle_nn::*;
    pub struct Linear {
        pub w: Tensor,
    }
    impl Linear {
        pub fn weight(&self) -> &Tensor {
            &self.w
        }
        pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
            x.matmul(&self.w)
        }
    }
    pub struct M2 {
        pub proj: Linear,
    }
    impl M2 {
        #[contract(x: f32[N, 8], self.proj.weight(): f32[8, 4])]
        pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
            self.proj.forward(x)
        }
    }
}
