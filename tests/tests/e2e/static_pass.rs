//! Correct programs the compile-time analysis must accept (it is gradual: what it cannot prove
//! wrong compiles), and each runs to the value it should. The failing counterparts are the
//! `static_*` cases of tests/ui.

use candle_contracts::{contract, nn};
use candle_core::{DType, Device, Module, Result, Tensor, D};

fn ones(shape: &[usize]) -> Tensor {
    Tensor::ones(shape, DType::F32, &Device::Cpu).unwrap()
}

fn class_ids(ids: &[u32]) -> Tensor {
    Tensor::new(ids, &Device::Cpu).unwrap()
}

/// `N` and `M` may be equal at run time: not an error.
#[contract(a: f32[N, D], b: f32[M, D])]
fn add_rows(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.add(b)
}

#[test]
fn different_dim_names_may_be_equal() {
    let sum = add_rows(&ones(&[3, 2]), &ones(&[3, 2])).unwrap();
    assert_eq!(sum.dims(), &[3, 2]);
    assert_eq!(sum.sum_all().unwrap().to_scalar::<f32>().unwrap(), 12.0);
}

/// Sizes read from `dims()` are the dims they came from: `n` is `B`.
#[contract(x: f32[B, D], return: f32[B, 1])]
fn column_of_sums(x: &Tensor) -> Result<Tensor> {
    let (b, _d) = x.dims2()?;
    let n = x.dim(0)?;
    assert_eq!(b, n);
    x.sum(1)?.reshape((b, 1))
}

#[test]
fn values_from_dims() {
    let column = column_of_sums(&ones(&[4, 3])).unwrap();
    assert_eq!(column.dims(), &[4, 1]);
    assert_eq!(column.to_vec2::<f32>().unwrap()[0], vec![3.0]);
}

/// A helper the analysis does not know yields an unknown tensor.
fn flatten_images(x: &Tensor) -> Result<Tensor> {
    x.flatten_from(1)
}

#[contract(images: f32[N, 28, 28], w: f32[10, 784])]
fn classify(images: &Tensor, w: &Tensor) -> Result<Tensor> {
    let flat = flatten_images(images)?;
    flat.matmul(&w.t()?)
}

#[test]
fn unknown_helpers() {
    let logits = classify(&ones(&[2, 28, 28]), &ones(&[10, 784])).unwrap();
    assert_eq!(logits.dims(), &[2, 10]);
}

/// Branches that disagree give an unknown shape, not an error.
#[contract(x: f32[B, D], return: f32[B, ..])]
fn maybe_keepdim(x: &Tensor, keep: bool) -> Result<Tensor> {
    let reduced = if keep { x.sum_keepdim(1)? } else { x.sum(1)? };
    let reduced = match keep {
        true => reduced,
        false => reduced.unsqueeze(1)?,
    };
    Ok(reduced)
}

#[test]
fn branches() {
    assert_eq!(maybe_keepdim(&ones(&[2, 5]), true).unwrap().dims(), &[2, 1]);
    assert_eq!(
        maybe_keepdim(&ones(&[2, 5]), false).unwrap().dims(),
        &[2, 1]
    );
}

/// A closure's parameter shadows a contracted name; a loop reassigns a `mut` tensor.
#[contract(x: f32[B, D], w: f32[D, D])]
fn repeated(x: &Tensor, w: &Tensor, times: usize) -> Result<Tensor> {
    let apply = |x: &Tensor| x.matmul(w);
    let mut h = x.clone();
    for _ in 0..times {
        h = apply(&h)?;
    }
    let w = h.sum_keepdim(1)?; // shadows `w` with `[B, 1]`
    h.broadcast_mul(&w)
}

#[test]
fn closures_and_loops() {
    let eye = Tensor::eye(3, DType::F32, &Device::Cpu).unwrap();
    let out = repeated(&ones(&[2, 3]), &eye, 2).unwrap();
    assert_eq!(out.dims(), &[2, 3]);
    assert_eq!(out.to_vec2::<f32>().unwrap()[1], vec![3.0, 3.0, 3.0]);
}

/// An `async` body, with a `.await` in the middle.
#[contract(x: f32[N, C], return: f32[N, C])]
async fn softmax_later(x: &Tensor) -> Result<Tensor> {
    let ready = async { x.clone() }.await;
    candle_nn::ops::softmax(&ready, D::Minus1)
}

#[test]
fn async_bodies() {
    let probs = futures_executor::block_on(softmax_later(&ones(&[2, 4]))).unwrap();
    assert_eq!(probs.to_vec2::<f32>().unwrap()[0], vec![0.25; 4]);
}

macro_rules! rebind_as_row {
    ($name:ident) => {
        let $name = $name.flatten_all()?;
    };
}

/// A macro may rebind a name: what it touches is unknown afterwards.
#[contract(x: f32[B, D], target: f32[B, D])]
fn macro_rebinds(x: &Tensor, target: &Tensor) -> Result<Tensor> {
    rebind_as_row!(x);
    rebind_as_row!(target);
    let _shape = format!("{:?}", x.dims());
    x.sub(&target)?.sqr()?.sum_all()
}

#[test]
fn macros_in_bodies() {
    let loss = macro_rebinds(&ones(&[2, 3]), &ones(&[2, 3])).unwrap();
    assert_eq!(loss.to_scalar::<f32>().unwrap(), 0.0);
}

/// A type of its own with methods named like candle's ops and like a contracted method.
struct Meter {
    total: f32,
}

impl Meter {
    fn add(&self, _x: &Tensor) -> f32 {
        self.total + 1.0
    }
    fn matmul(&self, scale: f32) -> f32 {
        self.total * scale
    }
    fn forward(&self, _a: &Tensor, _b: &Tensor) -> f32 {
        self.total
    }
}

struct Linear {
    weight: Tensor,
}

#[contract]
impl Linear {
    #[contract(xs: f32[N, I], self.weight: f32[O, I], return: f32[N, O])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        xs.matmul(&self.weight.t()?)
    }

    /// `meter.forward(...)` and `meter.add(...)` are `Meter`'s, not `Linear`'s or candle's.
    #[contract(xs: f32[N, I], ys: f32[N, 3, 3])]
    fn logged(&self, xs: &Tensor, ys: &Tensor, meter: &Meter) -> Result<Tensor> {
        let _ = meter.forward(ys, ys) + meter.add(ys) + meter.matmul(2.0);
        self.forward(xs)
    }
}

#[test]
fn methods_of_other_types() {
    let layer = Linear {
        weight: ones(&[2, 3]),
    };
    let meter = Meter { total: 1.0 };
    let out = layer
        .logged(&ones(&[4, 3]), &ones(&[4, 3, 3]), &meter)
        .unwrap();
    assert_eq!(out.dims(), &[4, 2]);
    assert_eq!(out.to_vec2::<f32>().unwrap()[0], vec![3.0, 3.0]);
}

/// A module of one's own named `loss`, with a function named like candle-nn's: a path through
/// a module the body imports is resolved through the import.
mod my_losses {
    use candle_core::{Result, Tensor};

    pub fn cross_entropy(logits: &Tensor, _target: &Tensor) -> Result<Tensor> {
        logits.sum_all()
    }
}

#[contract(logits: f32[N, C], target: f32[N, C])]
fn soft_loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    use my_losses as loss;
    loss::cross_entropy(logits, target)
}

#[test]
fn paths_resolve_through_the_body_s_uses() {
    let value = soft_loss(&ones(&[2, 3]), &ones(&[2, 3])).unwrap();
    assert_eq!(value.to_scalar::<f32>().unwrap(), 6.0);
}

/// Correct uses of the ops with rules compile: the guarded loss on class ids.
#[contract(xs: f32[N, 4], w: f32[3, 4], target: u32[N])]
fn guarded_loss(xs: &Tensor, w: &Tensor, target: &Tensor) -> Result<Tensor> {
    let logits = xs.matmul(&w.t()?)?;
    let layer = candle_nn::Linear::new(w.clone(), None);
    let _same = layer.forward(xs)?;
    nn::cross_entropy(&logits, target)
}

#[test]
fn correct_uses_of_known_ops() {
    let loss = guarded_loss(&ones(&[2, 4]), &ones(&[3, 4]), &class_ids(&[0, 2])).unwrap();
    assert!((loss.to_scalar::<f32>().unwrap() - 3f32.ln()).abs() < 1e-6);
}

/// `static = false` turns the analysis off: this body is certainly wrong (`[N, 3]` times
/// `[4, 3]`), compiles, and fails at run time with candle's own error.
#[contract(xs: f32[N, 3], w: f32[4, 3], static = false)]
fn unchecked(xs: &Tensor, w: &Tensor) -> Result<Tensor> {
    xs.matmul(w)
}

#[test]
fn static_false_turns_the_analysis_off() {
    let error = unchecked(&ones(&[2, 3]), &ones(&[4, 3])).unwrap_err();
    assert!(
        error.to_string().contains("shape mismatch in matmul"),
        "{error}"
    );
}

/// The functions of a `#[contract]` module see each other's contracts: `features` returns
/// `[N, 784]`, which is what `logits` takes.
#[contract]
mod pipeline {
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};

    #[contract(images: f32[N, 28, 28], return: f32[N, 784])]
    pub fn features(images: &Tensor) -> Result<Tensor> {
        images.flatten_from(1)
    }

    #[contract(images: f32[N, 28, 28], w: f32[10, 784], return: f32[N, 10])]
    pub fn logits(images: &Tensor, w: &Tensor) -> Result<Tensor> {
        let flat = features(images)?;
        flat.matmul(&w.t()?)
    }
}

#[test]
fn contracts_of_a_module_see_each_other() {
    let logits = pipeline::logits(&ones(&[3, 28, 28]), &ones(&[10, 784])).unwrap();
    assert_eq!(logits.dims(), &[3, 10]);
    assert_eq!(logits.to_vec2::<f32>().unwrap()[2][9], 784.0);
}

/// From a new-user trial: a `#[contract] impl` (of a struct with a contract) inside a
/// `#[contract]` module, as a file already annotated and then wrapped gives it, compiles; the
/// module checks its methods once and the `impl` neither checks nor marks them again.
#[contract]
mod wrapped {
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};

    #[contract(proj: f32[O, I])]
    pub struct Head {
        pub proj: Tensor,
    }

    #[contract]
    impl Head {
        #[contract(xs: f32[N, I], return: f32[N, O])]
        pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
            xs.matmul(&self.proj.t()?)
        }
    }
}

#[test]
fn an_impl_with_its_own_contract_attribute_inside_a_contracted_module() {
    let head = wrapped::Head {
        proj: ones(&[2, 4]),
    };
    let out = head.forward(&ones(&[3, 4])).unwrap();
    assert_eq!(out.to_vec2::<f32>().unwrap(), vec![vec![4.0; 2]; 3]);
    // The struct's clause is checked per call: a weight of another width is refused.
    let other = wrapped::Head {
        proj: ones(&[2, 5]),
    };
    assert!(other.forward(&ones(&[3, 4])).is_err());
}
