use candle_contracts::contract;
use candle_core::{Result, Tensor};

struct RmsNorm {
    weight: Tensor,
    eps: f64,
}

#[contract]
impl RmsNorm {
    // `self.eps` is a scalar the macro cannot see, yet what `broadcast_div` gives has at least
    // the rank of `xs`: the `mul` by `[D]` certainly fails, and is reported where it is.
    #[contract(xs: f32[B, D], self.weight: f32[D], return: f32[B, D])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let v = xs.sqr()?.mean_keepdim(1)?;
        let ys = xs.broadcast_div(&(v + self.eps)?.sqrt()?)?;
        let ys = ys.mul(&self.weight)?; // should be `broadcast_mul`
        Ok(ys)
    }
}

fn main() {}
