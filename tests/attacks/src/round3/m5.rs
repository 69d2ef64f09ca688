use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::{Linear, Module};
use std::cell::RefCell;
use std::rc::Rc;

#[derive(Clone)]
pub struct Shared {
    pub inner: Rc<RefCell<Tensor>>,
}
impl Shared {
    pub fn weight(&self) -> Tensor {
        self.inner.borrow().clone()
    }
    pub fn set(&self, t: Tensor) {
        *self.inner.borrow_mut() = t;
    }
}

pub struct M {
    pub a: Shared,
    pub b: Shared,
    pub head: Linear,
}

thread_local! {
    static GLOBAL: RefCell<Option<Tensor>> = const { RefCell::new(None) };
}

pub struct G;
impl G {
    pub fn weight(&self) -> Tensor {
        GLOBAL.with(|g| g.borrow().clone().unwrap())
    }
}
pub fn set_global(t: Tensor) {
    GLOBAL.with(|g| *g.borrow_mut() = Some(t));
}

pub struct N2 {
    pub g: G,
}

impl M {
    // S1: &mut self, a sibling field shares the cell
    #[contract(x: f32[N, 4], self.a.weight(): f32[4, 4], l: f32[4, 8])]
    pub fn s1(&mut self, x: &Tensor, l: &Tensor) -> Result<Tensor> {
        self.b.set(l.clone());
        x.matmul(&self.a.weight())?.narrow(1, 0, 8)
    }

    // S2: &self, a parameter shares the cell
    #[contract(x: f32[N, 4], self.a.weight(): f32[4, 4], l: f32[4, 8])]
    pub fn s2(&self, x: &Tensor, l: &Tensor, handle: &Shared) -> Result<Tensor> {
        handle.set(l.clone());
        x.matmul(&self.a.weight())?.narrow(1, 0, 8)
    }

    // S5: &mut self with a layer clause on a user type named by method `weight`
    #[contract(x: f32[N, 4], self.a: Linear[4 -> 4], l: f32[8, 4])]
    pub fn s5(&mut self, x: &Tensor, l: &Tensor) -> Result<Tensor> {
        self.b.set(l.clone());
        x.matmul(&self.a.weight().t()?)?.narrow(1, 0, 8)
    }
}

impl N2 {
    // S3: &self, a free function changes global state read by the subject
    #[contract(x: f32[N, 4], self.g.weight(): f32[4, 4], l: f32[4, 8])]
    pub fn s3(&self, x: &Tensor, l: &Tensor) -> Result<Tensor> {
        set_global(l.clone());
        x.matmul(&self.g.weight())?.narrow(1, 0, 8)
    }
}
