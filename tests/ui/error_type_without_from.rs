use candle_contracts::contract;
use candle_core::Tensor;

#[derive(Debug)]
struct MyError;

#[contract(x: f32[N])]
fn f(x: &Tensor) -> Result<Tensor, MyError> {
    Ok(x.clone())
}

fn main() {}
