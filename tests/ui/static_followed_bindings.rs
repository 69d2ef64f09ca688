use candle_contracts::contract;
use candle_core::{Result, Tensor, D};

// The parameter `x` is known until the `let mut x` shadows it, and the new `x` from there on.
#[contract(x: f32[2, 3, 4], w: f32[4, 5])]
fn mixed(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let y = x.broadcast_matmul(w)?;
    let mut x = x.permute((0, 2, 1))?; // [2, 4, 3]
    x = x.broadcast_matmul(w)?; // [.., 4, 3] times [4, 5]
    x.add(&y)
}

// A local named `loss` does not hide the module `loss` a `use` names.
#[contract(logits: f32[N, C], target: f32[N, C])]
fn soft_targets(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    use candle_nn::{loss, ops};
    let log_sm = ops::log_softmax(logits, D::Minus1)?;
    let loss = loss::nll(&log_sm, target)?; // `nll` takes class indices
    Ok(loss)
}

struct Cache {
    cos: Tensor,
}

// A clause on a parameter's field holds in the body.
#[contract(x: f32[T, 64], cache.cos: f32[P, 64])]
fn rotate(x: &Tensor, cache: &Cache) -> Result<Tensor> {
    let cos = cache.cos.narrow(0, 0, 2)?; // [2, 64]
    x.matmul(&cos) // should be `&cos.t()?`
}

fn main() {}
