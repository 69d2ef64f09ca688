use candle_contracts::contract;
use candle_core::{Result, Tensor};
use candle_nn::{Linear, Module};

pub struct Attn {
    pub q: Linear,
    pub o: Linear,
}

pub struct Wrap<'a> {
    pub inner: &'a mut Attn,
}
impl<'a> Wrap<'a> {
    pub fn set(&mut self, l: Linear) {
        self.inner.q = l;
    }
}

impl Attn {
    // A1: implicit reborrow through a typed let
    #[contract(x: f32[N, 4], self.q: Linear[4 -> 4], l: f32[8, 4])]
    pub fn a1(&mut self, x: &Tensor, l: &Tensor) -> Result<Tensor> {
        let me: &mut Self = self;
        me.q = Linear::new(l.clone(), None);
        let y = self.q.forward(x)?; // [N, 8]
        y.narrow(1, 0, 8)
    }

    // A2: destructuring with default binding mode
    #[contract(x: f32[N, 4], self.q: Linear[4 -> 4], l: f32[8, 4])]
    pub fn a2(&mut self, x: &Tensor, l: &Tensor) -> Result<Tensor> {
        let Attn { q, .. } = self;
        *q = Linear::new(l.clone(), None);
        let y = self.q.forward(x)?;
        y.narrow(1, 0, 8)
    }

    // A3: struct literal holding self
    #[contract(x: f32[N, 4], self.q: Linear[4 -> 4], l: f32[8, 4])]
    pub fn a3(&mut self, x: &Tensor, l: &Tensor) -> Result<Tensor> {
        Wrap { inner: self }.set(Linear::new(l.clone(), None));
        let y = self.q.forward(x)?;
        y.narrow(1, 0, 8)
    }

    // A4: if let with default binding mode
    #[contract(x: f32[N, 4], self.q: Linear[4 -> 4], l: f32[8, 4])]
    pub fn a4(&mut self, x: &Tensor, l: &Tensor) -> Result<Tensor> {
        let Attn { q, .. } = self else { unreachable!() };
        *q = Linear::new(l.clone(), None);
        let y = self.q.forward(x)?;
        y.narrow(1, 0, 8)
    }

    // A5: match self with default binding
    #[contract(x: f32[N, 4], self.q: Linear[4 -> 4], l: f32[8, 4])]
    pub fn a5(&mut self, x: &Tensor, l: &Tensor) -> Result<Tensor> {
        match self {
            Attn { q, .. } => *q = Linear::new(l.clone(), None),
        }
        let y = self.q.forward(x)?;
        y.narrow(1, 0, 8)
    }

    // A6: tuple of self then field
    #[contract(x: f32[N, 4], self.q: Linear[4 -> 4], l: f32[8, 4])]
    pub fn a6(&mut self, x: &Tensor, l: &Tensor) -> Result<Tensor> {
        let pair: (&mut Self, u8) = (self, 0);
        pair.0.q = Linear::new(l.clone(), None);
        let y = self.q.forward(x)?;
        y.narrow(1, 0, 8)
    }
}
