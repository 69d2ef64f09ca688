// an inherent method whose receiver (`self: Rc<Self>`) does not apply: auto-deref finds Inner's
use candle_contracts::contract;
use candle_core::{Result, Tensor};
use std::ops::Deref;
use std::rc::Rc;

pub struct Inner;
impl Inner {
    #[contract(x: f32[N, 4])]
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }
}

pub struct Model {
    pub inner: Inner,
}
impl Deref for Model {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.inner
    }
}
impl Model {
    #[contract(x: f32[N, 8])]
    pub fn forward(self: Rc<Self>, x: &Tensor) -> Result<Tensor> {
        x.sqr()
    }
}

#[contract(x: f32[N, 4])]
pub fn caller(m: &Model, x: &Tensor) -> Result<Tensor> {
    m.forward(x)
}
