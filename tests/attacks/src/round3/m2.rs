use candle_contracts::contract;
use candle_core::{Result, Tensor};

pub struct State {
    pub w: Tensor,
}
impl State {
    // a user method named like candle's
    pub fn reshape(&mut self, t: Tensor) {
        self.w = t;
    }
}

pub struct M {
    pub st: State,
}

const K: usize = 4;

impl M {
    // B1: closure calling a &mut method named like candle's on a field
    #[contract(x: f32[N, 4], self.st.w: f32[4, 4], l: f32[4, 8])]
    pub fn b1(&mut self, x: &Tensor, l: &Tensor) -> Result<Tensor> {
        let mut f = |t: Tensor| self.st.reshape(t);
        f(l.clone());
        x.matmul(&self.st.w)?.narrow(1, 0, 8)
    }

    // B2: closure with an implicit reborrow
    #[contract(x: f32[N, 4], self.st.w: f32[4, 4], l: f32[4, 8])]
    pub fn b2(&mut self, x: &Tensor, l: &Tensor) -> Result<Tensor> {
        let mut f = |t: Tensor| {
            let me: &mut M = self;
            me.st.w = t;
        };
        f(l.clone());
        x.matmul(&self.st.w)?.narrow(1, 0, 8)
    }
}

// C1: decided-true condition with early return, dead code after
#[contract(x: f32[N, 4])]
pub fn c1(x: &Tensor) -> Result<Tensor> {
    if x.dim(1)? == 4 {
        return Ok(x.clone());
    }
    x.narrow(1, 0, 8)
}

// C2: unreachable code after return
#[contract(x: f32[N, 4])]
#[allow(unreachable_code)]
pub fn c2(x: &Tensor) -> Result<Tensor> {
    return Ok(x.clone());
    x.narrow(1, 0, 8)
}

// C3: body const shadows file const
#[contract(x: f32[N, 8])]
pub fn c3(x: &Tensor) -> Result<Tensor> {
    const K: usize = 8;
    if x.dim(1)? != K {
        return x.narrow(1, 0, 9);
    }
    Ok(x.clone())
}

// C4: division rounding
#[contract(x: f32[N, 8])]
pub fn c4(x: &Tensor) -> Result<Tensor> {
    if x.dim(1)? / 3 != 2 {
        return x.narrow(1, 0, 9);
    }
    Ok(x.clone())
}

// C5: remainder
#[contract(x: f32[N, 8])]
pub fn c5(x: &Tensor) -> Result<Tensor> {
    if x.dim(1)? % 3 != 2 {
        return x.narrow(1, 0, 9);
    }
    Ok(x.clone())
}

// C6: .. shapes
#[contract(x: f32[.., 4])]
pub fn c6(x: &Tensor) -> Result<Tensor> {
    if x.dim(0)? == 4 {
        return Ok(x.clone());
    }
    x.narrow(0, 0, 9)
}

// C7: decided loop break
#[contract(x: f32[N, 4])]
pub fn c7(x: &Tensor) -> Result<Tensor> {
    loop {
        if x.dim(1)? == 4 {
            break;
        }
        x.narrow(1, 0, 8)?;
    }
    Ok(x.clone())
}

// C8: unreachable after todo-like macro in a branch taken
#[contract(x: f32[N, 4])]
#[allow(unreachable_code)]
pub fn c8(x: &Tensor, k: usize) -> Result<Tensor> {
    let _ = k + K;
    if x.dim(1)? == 4 {
        return Ok(x.clone());
    } else {
        x.narrow(1, 0, 8)?;
    }
    x.narrow(1, 0, 8)
}
