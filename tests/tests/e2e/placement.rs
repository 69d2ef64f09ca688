//! Every place a contract may stand: free functions, inherent and trait-impl methods, generic
//! and `async fn`s, `impl Trait` arguments, and every tensor parameter form.

use std::rc::Rc;
use std::sync::{Arc, Mutex};

use candle_contracts::{contract, Rule};
use candle_core::{DType, Device, Module, Result, Tensor};

use crate::{contract_error, only_violation, panic_message, zeros};

#[contract(x: f32[N, D], y: f32[N])]
fn free_function(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x.sum(1)?.add(y)
}

#[test]
fn free_function_passes_and_fails() {
    let x = Tensor::new(&[[1f32, 2.], [3., 4.]], &Device::Cpu).unwrap();
    let y = Tensor::new(&[10f32, 20.], &Device::Cpu).unwrap();
    assert_eq!(
        free_function(&x, &y).unwrap().to_vec1::<f32>().unwrap(),
        [13., 27.]
    );
    let error = free_function(&x, &zeros(&[3], DType::F32)).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.argument(), "y");
    assert_eq!(violation.rule(), Rule::Shape);
    assert!(
        error.to_string().contains(
            "`y`: shape [3] does not match [N] = [2]\n    dim 0 is 3 but N = 2 (bound by `x` dim 0)"
        ),
        "{error}"
    );
}

struct Embedding {
    table: Tensor,
    scale: Option<Tensor>,
    vocab_size: usize,
}

impl Embedding {
    #[contract(self.table: f32[V, D], ids: u32[B, T] in 0..{self.vocab_size}, return: f32[B, T, D])]
    fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        let (b, t) = ids.dims2()?;
        let rows = self.table.index_select(&ids.flatten_all()?, 0)?;
        rows.reshape((b, t, self.table.dim(1)?))
    }

    #[contract(self.scale: f32[D])]
    fn scale(&self) -> Result<Tensor> {
        Ok(self.scale.clone().expect("checked by the contract"))
    }

    #[contract(self.table: f32[V, D], return: f32[V, D])]
    fn into_table(self) -> Tensor {
        self.table
    }
}

#[test]
fn inherent_method_with_fields_and_a_braced_bound() {
    let embedding = Embedding {
        table: Tensor::arange(0f32, 12., &Device::Cpu)
            .unwrap()
            .reshape((4, 3))
            .unwrap(),
        scale: None,
        vocab_size: 4,
    };
    let ids = Tensor::new(&[[0u32, 3]], &Device::Cpu).unwrap();
    let out = embedding.forward(&ids).unwrap();
    assert_eq!(out.dims(), [1, 2, 3]);
    assert_eq!(
        out.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
        [0., 1., 2., 9., 10., 11.]
    );
    let bad = Tensor::new(&[[1u32, 4]], &Device::Cpu).unwrap();
    let error = embedding.forward(&bad).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.index(), Some(&[0, 1][..]));
    assert!(
        error
            .to_string()
            .contains("ids[0, 1] = 4, expected 0..{self.vocab_size}"),
        "{error}"
    );
    // A `None` field is a violation, not a skip.
    let error = embedding.scale().unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("self.scale", Rule::Missing)
    );
    assert!(
        error
            .to_string()
            .contains("`self.scale`: is None, expected f32[D]"),
        "{error}"
    );
    // A method taking `self` by value, with a return clause and no `Result`.
    assert_eq!(embedding.into_table().dims(), [4, 3]);
}

struct Mlp {
    weight: Tensor,
}

impl Module for Mlp {
    #[contract(xs: f32[N, 4], self.weight: f32[3, 4], return: f32[N, 3])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        xs.matmul(&self.weight.t()?)
    }
}

#[test]
fn trait_impl_method() {
    let mlp = Mlp {
        weight: Tensor::ones((3, 4), DType::F32, &Device::Cpu).unwrap(),
    };
    let out = mlp
        .forward(&Tensor::ones((2, 4), DType::F32, &Device::Cpu).unwrap())
        .unwrap();
    assert_eq!(out.to_vec2::<f32>().unwrap(), [[4., 4., 4.], [4., 4., 4.]]);
    let error = mlp.forward(&zeros(&[2, 5], DType::F32)).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`xs`: shape [2, 5] does not match [N, 4]"),
        "{error}"
    );
    // Through `dyn Module`, as candle-nn's `Sequential` calls it.
    let boxed: Box<dyn Module> = Box::new(mlp);
    assert!(boxed.forward(&zeros(&[1, 4], DType::F32)).is_ok());
}

#[contract(x: float[N], return: float[N])]
fn generic_scale<T>(x: &Tensor, factor: T) -> Result<Tensor>
where
    T: Into<f64> + Copy + std::fmt::Debug,
{
    x.affine(factor.into(), 0.)
}

#[test]
fn generic_function() {
    let x = Tensor::new(&[1f32, 2.], &Device::Cpu).unwrap();
    assert_eq!(
        generic_scale(&x, 3u8).unwrap().to_vec1::<f32>().unwrap(),
        [3., 6.]
    );
    assert!(generic_scale(&zeros(&[2], DType::U8), 2.5f32).is_err());
}

#[contract(x: f32[N])]
fn with_impl_trait(x: &Tensor, op: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    op(x)
}

#[test]
fn impl_trait_argument() {
    let x = Tensor::new(&[1f32, -2.], &Device::Cpu).unwrap();
    assert_eq!(
        with_impl_trait(&x, |t| t.abs())
            .unwrap()
            .to_vec1::<f32>()
            .unwrap(),
        [1., 2.]
    );
}

#[contract(x: f32[N] in 0.0..=1.0, return: f32[N])]
async fn async_function(x: &Tensor) -> Result<Tensor> {
    std::future::ready(()).await;
    x.affine(2., 0.)
}

fn assert_send<T: Send>(value: T) -> T {
    value
}

#[test]
fn async_fn_checks_at_first_poll_and_stays_send() {
    let x = Tensor::new(&[0.25f32, 0.5], &Device::Cpu).unwrap();
    let future = assert_send(async_function(&x));
    assert_eq!(
        futures_executor::block_on(future)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap(),
        [0.5, 1.]
    );
    let bad = Tensor::new(&[0.25f32, 1.5], &Device::Cpu).unwrap();
    let error = futures_executor::block_on(async_function(&bad)).unwrap_err();
    assert_eq!(only_violation(&error).index(), Some(&[1][..]));
}

#[contract(x: f32[N], mask: u8[N] in 0..=1)]
fn optional(x: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
    match mask {
        Some(mask) => mask.where_cond(x, &x.zeros_like()?),
        None => Ok(x.clone()),
    }
}

#[contract(x: f32[N], bias: f32[N])]
fn optional_owned(x: Tensor, bias: Option<Tensor>) -> Result<Tensor> {
    match bias {
        Some(bias) => x.add(&bias),
        None => Ok(x),
    }
}

#[test]
fn option_arguments_are_skipped_when_none() {
    let x = Tensor::new(&[1f32, 2.], &Device::Cpu).unwrap();
    assert_eq!(
        optional(&x, None).unwrap().to_vec1::<f32>().unwrap(),
        [1., 2.]
    );
    let mask = Tensor::new(&[1u8, 0], &Device::Cpu).unwrap();
    assert_eq!(
        optional(&x, Some(&mask)).unwrap().to_vec1::<f32>().unwrap(),
        [1., 0.]
    );
    let bad = Tensor::new(&[1u8, 255], &Device::Cpu).unwrap();
    assert_eq!(
        only_violation(&optional(&x, Some(&bad)).unwrap_err()).argument(),
        "mask"
    );
    assert!(optional_owned(x.clone(), None).is_ok());
    let error = optional_owned(x, Some(zeros(&[3], DType::F32))).unwrap_err();
    assert_eq!(only_violation(&error).argument(), "bias");
}

#[contract(a: f32[N], b: f32[N], c: f32[N], d: f32[N], e: f32[N])]
fn pointer_forms(
    a: Tensor,
    b: &mut Tensor,
    c: Box<Tensor>,
    d: Arc<Tensor>,
    e: Rc<Tensor>,
) -> Result<Tensor> {
    *b = b.affine(1., 1.)?;
    a.add(b)?.add(&c)?.add(&d)?.add(&e)
}

#[test]
fn owned_mut_and_smart_pointer_parameters() {
    let one = Tensor::ones(2, DType::F32, &Device::Cpu).unwrap();
    let mut b = one.clone();
    let out = pointer_forms(
        one.clone(),
        &mut b,
        Box::new(one.clone()),
        Arc::new(one.clone()),
        Rc::new(one.clone()),
    )
    .unwrap();
    assert_eq!(out.to_vec1::<f32>().unwrap(), [6., 6.]);
    assert_eq!(b.to_vec1::<f32>().unwrap(), [2., 2.]);
    let mut wrong = zeros(&[3], DType::F32);
    let error = pointer_forms(
        one.clone(),
        &mut wrong,
        Box::new(one.clone()),
        Arc::new(one.clone()),
        Rc::new(zeros(&[1], DType::F32)),
    )
    .unwrap_err();
    let names: Vec<&str> = contract_error(&error)
        .violations()
        .iter()
        .map(|v| v.argument())
        .collect();
    assert_eq!(names, ["b", "e"]);
    // The guard stopped the call before the body could modify `b`.
    assert_eq!(wrong.to_vec1::<f32>().unwrap(), [0., 0., 0.]);
}

#[contract(x: f32[N])]
fn not_a_result(x: &Tensor) -> usize {
    x.dims()[0]
}

#[contract(x: f32[N], on_violation = panic)]
fn panics_though_result(x: &Tensor) -> Result<usize> {
    Ok(x.dims()[0])
}

#[test]
fn functions_without_result_panic_with_the_message() {
    assert_eq!(not_a_result(&zeros(&[3], DType::F32)), 3);
    let message = panic_message(|| {
        not_a_result(&zeros(&[3], DType::U8));
    });
    assert!(
        message.starts_with("contract violated in `not_a_result` (tests/tests/e2e/placement.rs:"),
        "{message}"
    );
    assert!(message.contains("`x`: dtype u8, expected f32"), "{message}");
    let message = panic_message(|| {
        let _ = panics_though_result(&zeros(&[3, 1], DType::F32));
    });
    assert!(
        message.contains("`x`: shape [3, 1] does not match [N] (rank 2, expected rank 1)"),
        "{message}"
    );
}

// Edition 2021 drops a block's tail temporaries after its locals: these bodies' tails borrow a
// local and a parameter through temporaries, and must compile and run unchanged.
#[contract(x: f32[N])]
fn tail_borrows_a_local(x: &Tensor) -> usize {
    let dims = x.dims().to_vec();
    dims.iter().map(|d| d * 2).sum()
}

#[contract(x: f32[N], return: f32[N])]
fn tail_borrows_a_parameter(x: &Tensor, cache: &Mutex<Vec<Tensor>>) -> Tensor {
    cache.lock().unwrap().push(x.clone());
    cache.lock().unwrap().last().cloned().unwrap()
}

#[test]
fn tail_expressions_keep_their_meaning() {
    let x = zeros(&[3], DType::F32);
    assert_eq!(tail_borrows_a_local(&x), 6);
    let cache = Mutex::new(Vec::new());
    assert_eq!(tail_borrows_a_parameter(&x, &cache).dims(), [3]);
    assert_eq!(cache.lock().unwrap().len(), 1);
}

#[contract(x: f32[N], return: f32[N])]
fn early_return_and_question_mark(x: &Tensor, negate: bool) -> Result<Tensor> {
    if negate {
        return x.neg();
    }
    let doubled = x.affine(2., 0.)?;
    Ok(doubled)
}

#[test]
fn return_and_question_mark_keep_their_meaning() {
    let x = Tensor::new(&[1f32, 2.], &Device::Cpu).unwrap();
    assert_eq!(
        early_return_and_question_mark(&x, true)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap(),
        [-1., -2.]
    );
    assert_eq!(
        early_return_and_question_mark(&x, false)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap(),
        [2., 4.]
    );
}

trait Scorer {
    fn score(&self, logits: &Tensor) -> Result<Tensor>;
}

struct Softmax;

impl Scorer for Softmax {
    #[contract(logits: float[N, C], return: float[N, C] in 0.0..=1.0)]
    fn score(&self, logits: &Tensor) -> Result<Tensor> {
        candle_nn::ops::softmax_last_dim(logits)
    }
}

struct Broken;

impl Scorer for Broken {
    #[contract(logits: float[N, C], return: float[N, C] in 0.0..=1.0)]
    fn score(&self, logits: &Tensor) -> Result<Tensor> {
        logits.affine(10., 0.)
    }
}

#[test]
fn return_clause_checks_the_value_coming_out() {
    let logits = Tensor::new(&[[1f32, 2., 3.]], &Device::Cpu).unwrap();
    let probabilities = Softmax.score(&logits).unwrap();
    let sum: f32 = probabilities.sum_all().unwrap().to_scalar().unwrap();
    assert!((sum - 1.).abs() < 1e-6);
    let error = Broken.score(&logits).unwrap_err();
    let contract = contract_error(&error);
    assert!(contract.body_ran());
    let violation = &contract.violations()[0];
    assert_eq!(
        (violation.argument(), violation.index()),
        ("return", Some(&[0, 0][..]))
    );
    assert!(
        error
            .to_string()
            .contains("contract violated in `Broken::score` ("),
        "{error}"
    );
    assert!(error.to_string().contains("), by its return value\n  `return`: value out of range: return[0, 0] = 10, expected 0.0..=1.0"), "{error}");
}

#[async_trait::async_trait]
trait AsyncScorer {
    async fn score(&self, logits: &Tensor) -> Result<Tensor>;
}

struct AsyncSoftmax;

// `#[async_trait]` expands first and turns the method into one returning a boxed future; the
// guard then runs when the future is created, and a violation is returned as a ready `Err`.
#[async_trait::async_trait]
impl AsyncScorer for AsyncSoftmax {
    #[contract(logits: f32[N, C] finite)]
    async fn score(&self, logits: &Tensor) -> Result<Tensor> {
        candle_nn::ops::softmax_last_dim(logits)
    }
}

#[test]
fn async_trait_methods_return_the_violation_as_an_error() {
    let logits = Tensor::new(&[[1f32, 2.]], &Device::Cpu).unwrap();
    let out = futures_executor::block_on(AsyncSoftmax.score(&logits)).unwrap();
    assert_eq!(out.dims(), [1, 2]);
    let bad = Tensor::new(&[[1f32, f32::NAN]], &Device::Cpu).unwrap();
    let future = assert_send(AsyncSoftmax.score(&bad));
    let error = futures_executor::block_on(future).unwrap_err();
    assert_eq!(only_violation(&error).index(), Some(&[0, 1][..]));
}

struct Weights {
    w: Tensor,
}

impl Weights {
    #[contract(return: f32[N, D])]
    fn weight_mut(&mut self) -> &mut Tensor {
        &mut self.w
    }
}

#[contract(x: f32[N], return: f32[N])]
fn pass_through<'a>(x: &'a mut Tensor) -> Result<&'a mut Tensor> {
    Ok(x)
}

#[test]
fn return_clauses_on_functions_returning_mutable_borrows() {
    let mut weights = Weights {
        w: Tensor::zeros((2, 3), DType::F32, &Device::Cpu).unwrap(),
    };
    *weights.weight_mut() = Tensor::ones((2, 3), DType::F32, &Device::Cpu).unwrap();
    assert_eq!(
        weights.w.sum_all().unwrap().to_scalar::<f32>().unwrap(),
        6.0
    );
    let mut x = Tensor::zeros(4, DType::F32, &Device::Cpu).unwrap();
    assert_eq!(pass_through(&mut x).unwrap().dims(), [4]);
    weights.w = Tensor::zeros(3, DType::F32, &Device::Cpu).unwrap();
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        weights.weight_mut();
    }))
    .unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(
        message.contains("`return`: shape [3] does not match [N, D] (rank 1, expected rank 2)"),
        "{message}"
    );
}

/// One-line bodies, as written before rustfmt, and a body with inner attributes: the expansion
/// adds no lint of its own (`#![deny(warnings)]` crates build).
#[rustfmt::skip]
#[deny(unused_braces, unused_attributes)]
mod one_line_bodies {
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};

    #[contract(x: f32[N])]
    pub fn plain(x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }

    #[contract(x: f32[N], return: f32[N])]
    pub fn with_return(x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }

    #[contract(x: f32[N], return: f32[N])]
    pub async fn in_async(x: &Tensor) -> Tensor { x.clone() }

    #[contract(x: f32[N])]
    pub fn inner_attributes(x: &Tensor) -> Result<usize> {
        #![allow(clippy::let_and_return)]
        let n = x.dim(0)?;
        Ok(n)
    }
}

#[test]
fn one_line_bodies_and_inner_attributes_keep_their_meaning() {
    let x = Tensor::zeros(3, DType::F32, &Device::Cpu).unwrap();
    assert_eq!(one_line_bodies::plain(&x).unwrap().dims(), [3]);
    assert_eq!(one_line_bodies::with_return(&x).unwrap().dims(), [3]);
    assert_eq!(
        futures_executor::block_on(one_line_bodies::in_async(&x)).dims(),
        [3]
    );
    assert_eq!(one_line_bodies::inner_attributes(&x).unwrap(), 3);
    let rank_2 = Tensor::zeros((1, 3), DType::F32, &Device::Cpu).unwrap();
    assert!(one_line_bodies::plain(&rank_2).is_err());
}

mod blocks {
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};

    pub struct Block<T>(pub T);
    pub struct Head;

    impl<T> Block<T> {
        #[contract(xs: f32[B, T, 4])]
        pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
            Ok(xs.clone())
        }

        #[contract(n: f32[N])]
        pub fn new(n: &Tensor, inner: T) -> Self {
            let _ = n;
            Block(inner)
        }
    }

    impl Head {
        #[contract(xs: f32[B, 4], on_violation = panic)]
        pub fn forward(&self, xs: &Tensor) -> Tensor {
            xs.clone()
        }
    }
}

/// With several `forward`s in a file, the message names the method's type.
#[test]
fn a_method_is_named_with_its_type() {
    let wrong = Tensor::zeros((2, 3), DType::F32, &Device::Cpu).unwrap();
    let error = blocks::Block(7u8).forward(&wrong).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("contract violated in `Block::forward` ("),
        "{error}"
    );
    assert_eq!(
        contract_error(&error).receiver_type().as_deref(),
        Some("Block")
    );
    assert_eq!(contract_error(&error).function(), "forward");
    let message = panic_message(|| {
        blocks::Head.forward(&Tensor::zeros(3, DType::F32, &Device::Cpu).unwrap());
    });
    assert!(
        message.starts_with("contract violated in `Head::forward` ("),
        "{message}"
    );
    // An associated function without `self` keeps its bare name.
    let message = panic_message(|| {
        let wrong = Tensor::zeros((2, 3), DType::F32, &Device::Cpu).unwrap();
        let _ = blocks::Block::new(&wrong, ());
    });
    assert!(
        message.starts_with("contract violated in `new` ("),
        "{message}"
    );
}

mod receivers {
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};

    pub struct A;
    pub struct B;

    pub trait Forward {
        fn fwd(&self, x: &Tensor) -> Result<()>;
    }

    impl Forward for (A, B) {
        #[contract(x: f32[N, 4])]
        fn fwd(&self, x: &Tensor) -> Result<()> {
            let _ = x;
            Ok(())
        }
    }

    impl Forward for [A] {
        #[contract(x: f32[N, 4])]
        fn fwd(&self, x: &Tensor) -> Result<()> {
            let _ = x;
            Ok(())
        }
    }
}

/// A receiver that is not a named type is shown in angle brackets, as Rust writes it.
#[test]
fn a_receiver_that_is_not_a_named_type_keeps_its_whole_type() {
    use receivers::Forward;
    let wrong = Tensor::zeros(3, DType::F32, &Device::Cpu).unwrap();
    let error = (receivers::A, receivers::B).fwd(&wrong).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("contract violated in `<(A, B)>::fwd` ("),
        "{error}"
    );
    let slice: &[receivers::A] = &[receivers::A];
    let error = slice.fwd(&wrong).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("contract violated in `<[A]>::fwd` ("),
        "{error}"
    );
}
