// a glob import brings only the names the importer may see: `a::forward` is private
use candle_contracts::contract;
use candle_core::{Result, Tensor};

mod a {
    use super::*;
    #[contract(x: f32[N, 8])]
    #[allow(dead_code)]
    fn forward(x: &Tensor) -> Result<Tensor> {
        x.sqr()
    }
    pub fn other() {}
}

mod c {
    use super::*;
    #[contract(x: f32[N, 4])]
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}

pub mod b {
    use super::a::*;
    use super::c::*;
    use super::*;
    #[contract(x: f32[N, 4])]
    pub fn caller(x: &Tensor) -> Result<Tensor> {
        other();
        forward(x)
    }
}
