use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::{Linear, Module};

pub struct A {
    pub q: Linear,
}

impl A {
    // R1: &raw mut of a self path
    #[contract(x: f32[N, 4], self.q: Linear[4 -> 4], l: f32[8, 4])]
    pub fn r1(&mut self, x: &Tensor, l: &Tensor) -> Result<Tensor> {
        let p = &raw mut self.q;
        unsafe { *p = Linear::new(l.clone(), None) };
        self.q.forward(x)?.narrow(1, 0, 8)
    }
}

// R2: &raw mut of an integer local
#[contract(x: f32[N, 4])]
pub fn r2(x: &Tensor) -> Result<Tensor> {
    let mut n = 8;
    let p = &raw mut n;
    unsafe { *p = 4 };
    x.narrow(1, 0, n)
}

// R3: &raw mut of a tensor local
#[contract(x: f32[N, 4], y: f32[N, 8])]
pub fn r3(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let mut h = x.clone();
    let p = &raw mut h;
    unsafe { *p = y.clone() };
    h.narrow(1, 0, 8)
}

// R4: ptr::write through &raw mut
#[contract(x: f32[N, 4], y: f32[N, 8])]
pub fn r4(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let mut h = x.clone();
    unsafe { std::ptr::write(&raw mut h, y.clone()) };
    h.narrow(1, 0, 8)
}
