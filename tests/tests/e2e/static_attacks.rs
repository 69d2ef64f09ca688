//! Correct but tricky programs the compile-time analysis must accept: each compiles and runs to
//! the shape candle gives.

#![allow(clippy::needless_borrow, clippy::redundant_clone)]

use candle_contracts::contract;
use candle_core::{DType, Device, IndexOp, Result, Tensor, D};

fn ones(shape: &[usize]) -> Tensor {
    Tensor::ones(shape, DType::F32, &Device::Cpu).unwrap()
}

#[contract(x: f32[N, D])]
fn shadow_in_branch(x: &Tensor, c: bool) -> Result<Tensor> {
    let y = if c {
        let x = x.to_dtype(DType::U32)?;
        x.to_dtype(DType::F32)?
    } else {
        x.clone()
    };
    y.add(x)
}

#[contract(a: f32[N, N], b: f32[N, N])]
fn branch_transpose(a: &Tensor, b: &Tensor, c: bool) -> Result<Tensor> {
    let x = if c { a.clone() } else { b.t()? };
    x.matmul(a)
}

#[contract(x: f32[N, D])]
fn loop_reassign(x: &Tensor) -> Result<Tensor> {
    let mut y = x.clone();
    for _ in 0..2 {
        y = y.sum_keepdim(1)?;
    }
    y.sum(1)
}

#[contract(x: f32[N, D])]
fn loop_grows(x: &Tensor) -> Result<Tensor> {
    let mut y = x.clone();
    for _ in 0..2 {
        y = Tensor::cat(&[&y, x], 1)?;
    }
    y.narrow(1, 0, 1)
}

#[contract(x: f32[N, D])]
fn while_unsqueeze(x: &Tensor) -> Result<Tensor> {
    let mut y = x.clone();
    while y.rank() < 4 {
        y = y.unsqueeze(0)?;
    }
    y.squeeze(0)?.squeeze(0)?.matmul(&x.t()?)
}

#[contract(xs: f32[N, D])]
fn question_on_option(xs: &Tensor, extra: Option<&Tensor>) -> Result<Tensor> {
    fn first(extra: Option<&Tensor>) -> Option<Tensor> {
        let e = extra?;
        Some(e.clone())
    }
    match first(extra) {
        Some(e) => xs.broadcast_add(&e),
        None => Ok(xs.clone()),
    }
}

#[contract(x: f32[N, 3])]
fn from_new(x: &Tensor) -> Result<Tensor> {
    let w = Tensor::new(&[[1f32, 2., 3.], [4., 5., 6.]], x.device())?;
    let z = x.zeros_like()?;
    let o = Tensor::zeros_like(x)?;
    x.add(&z)?.add(&o)?.matmul(&w.t()?)
}

#[contract(x: f32[N, D])]
fn double_ref(x: &Tensor) -> Result<Tensor> {
    let r = &x;
    let rr = &&x;
    r.add(*rr)?.sum(0)
}

fn generic_sum<T: AsRef<Tensor>>(t: T) -> Result<Tensor> {
    t.as_ref().sum(0)
}

#[contract(x: f32[N, D])]
fn generic_call(x: &Tensor) -> Result<Tensor> {
    let s = generic_sum(x)?;
    s.unsqueeze(0)?.broadcast_add(x)
}

#[contract(a: f32[N], b: f32[M], N == M)]
fn relation_equal(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.add(b)
}

const HIDDEN: usize = 4;

#[contract(x: f32[N, HIDDEN], w: f32[{HIDDEN}, 2])]
fn const_and_braced(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    x.matmul(w)?.reshape((x.dim(0)?, 2))
}

#[contract(x: f32[.., D], w: f32[D, 2])]
fn dotdot_run(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    x.broadcast_matmul(w)?.sum_keepdim(D::Minus1)
}

#[contract(x: f32[*B, D], y: f32[*B, D])]
fn star_run(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x.add(y)?.sum(D::Minus1)
}

#[contract(x: f32[N, 1], y: f32[1, M])]
fn broadcast_ones(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x.broadcast_mul(y)?.broadcast_sub(&x)?.broadcast_add(&y)
}

#[contract(x: f32[N, 6])]
fn reshape_holes(x: &Tensor) -> Result<Tensor> {
    let a = x.reshape(((), 2, 3))?;
    let b = x.reshape((x.dim(0)?, (), 2))?;
    a.flatten_from(1)?.add(&b.flatten_from(1)?)
}

#[contract(x: f32[N, D], return: f32[N])]
fn sum_vs_keepdim(x: &Tensor) -> Result<Tensor> {
    let k = x.sum_keepdim(1)?;
    let s = x.sum(1)?;
    k.squeeze(1)?.add(&s)
}

#[contract(x: f32[N, D], return: f32[N, D])]
fn squeeze_symbolic(x: &Tensor) -> Result<Tensor> {
    x.squeeze(1)
}

#[contract(x: f32[N, D], return: f32[N, ..])]
fn narrow_symbolic(x: &Tensor) -> Result<Tensor> {
    let d = x.dim(1)?;
    let a = x.narrow(1, 0, d / 2)?;
    let b = x.narrow(1, d / 2, d - d / 2)?;
    Tensor::cat(&[&b, &a], 1)
}

#[contract(x: f32[A, B, C], return: f32[A, C, B])]
fn transpose_negative(x: &Tensor) -> Result<Tensor> {
    x.transpose(D::Minus1, D::Minus2)
}

#[contract(x: f32[N], y: float[N])]
fn float_clause(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x.add(y)
}

#[contract(ids: u32[N], return: f32[N])]
fn int_to_dtype(ids: &Tensor) -> Result<Tensor> {
    let a = ids.to_dtype(DType::I64)?;
    let b = a.to_dtype(DType::F32)?;
    let c = ids.to_dtype(DType::F32)?;
    b.add(&c)
}

#[contract(a: f32[B, M, K], b: f32[B, K, N], return: f32[B, M, N])]
fn matmul_batch(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.matmul(b)
}

#[contract(a: f32[B, M, K], b: f32[K, N])]
fn broadcast_matmul_mixed(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.broadcast_matmul(b)
}

#[contract(x: f32[N, D], return: f32[D])]
fn indexing(x: &Tensor) -> Result<Tensor> {
    let row = x.i(0)?;
    let col = x.i((.., 0))?;
    let _ = col;
    row.add(&x.get(0)?)
}

trait Extension {
    fn squeeze2(&self) -> Result<Tensor>;
}

impl Extension for Tensor {
    fn squeeze2(&self) -> Result<Tensor> {
        self.squeeze(0)?.squeeze(0)
    }
}

trait Shout {
    fn relu_twice(&self) -> Result<Tensor>;
}
impl Shout for Tensor {
    fn relu_twice(&self) -> Result<Tensor> {
        self.relu()?.relu()
    }
}

#[contract(x: f32[1, 1, D], return: f32[D])]
fn extension_traits(x: &Tensor) -> Result<Tensor> {
    x.relu_twice()?.squeeze2()
}

#[contract(x: f32[N, D], y: f32[D, N])]
fn closure_shadow(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let f = |x: &Tensor| x.t();
    let x2 = f(y)?;
    x.add(&x2)
}

macro_rules! rebind {
    ($x:ident) => {
        let $x = $x.t()?;
    };
}

#[contract(x: f32[N, D], y: f32[D, N])]
fn macro_rebinds(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    rebind!(x);
    x.add(y)
}

#[contract(x: f32[N, D])]
fn matmul_vector(x: &Tensor) -> Result<Tensor> {
    let v = x.sum(0)?;
    x.broadcast_mul(&v)
}

#[contract(x: f32[N, D], return: f32[N, D])]
fn neg_and_ops(x: &Tensor) -> Result<Tensor> {
    let y = (x * 2.0)?;
    let z = (&y + x)?;
    let w = (z.neg()? - 1.0)?;
    (w + x)?.abs()
}

#[contract(x: f32[N, D], return: f32[N, D])]
fn affine_and_powf(x: &Tensor) -> Result<Tensor> {
    x.affine(2.0, 1.0)?
        .powf(2.0)?
        .sqr()?
        .sqrt()?
        .clamp(0f32, 1f32)
}

#[contract(x: f32[N, D], mask: u8[N, D], return: f32[N, D])]
fn masked_fill(x: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let neg = Tensor::new(f32::NEG_INFINITY, x.device())?.broadcast_as(x.shape())?;
    mask.where_cond(&neg, x)
}

#[contract(x: f32[N, D])]
fn shape_of_other(x: &Tensor) -> Result<Tensor> {
    let y = Tensor::zeros(x.shape(), x.dtype(), x.device())?;
    let z = Tensor::zeros((x.dim(0)?, 1), DType::F32, x.device())?;
    y.broadcast_add(&z)
}

#[contract(x: f32[N, D], return: f32[1, N, D])]
fn stack_one(x: &Tensor) -> Result<Tensor> {
    Tensor::stack(&[x], 0)
}

#[contract(x: f32[N, D], return: f32[D, N])]
fn permute_neg(x: &Tensor) -> Result<Tensor> {
    x.permute((1, 0))
}

#[contract(x: f32[N, D], return: f32[N])]
fn max_and_argmax(x: &Tensor) -> Result<Tensor> {
    let m = x.max(D::Minus1)?;
    let a = x.argmax(D::Minus1)?.to_dtype(DType::F32)?;
    m.add(&a)
}

#[contract(x: f32[N, D])]
fn early_return(x: &Tensor, c: bool) -> Result<Tensor> {
    if c {
        return x.sum(0);
    }
    x.sum(1)
}

#[contract(x: f32[2, 3])]
fn literal_transpose(x: &Tensor) -> Result<Tensor> {
    let y = x.t()?.contiguous()?;
    let z = y.reshape((2, 3))?;
    z.add(x)
}

#[contract(x: f32[N, D])]
fn flatten_scalar(x: &Tensor) -> Result<Tensor> {
    let s = x.sum_all()?;
    let f = s.flatten_all()?;
    x.broadcast_add(&f)
}

#[test]
fn tricky_programs_run() {
    let x = ones(&[2, 3]);
    assert_eq!(shadow_in_branch(&x, true).unwrap().dims(), &[2, 3]);
    let sq = ones(&[3, 3]);
    assert_eq!(branch_transpose(&sq, &sq, false).unwrap().dims(), &[3, 3]);
    assert_eq!(loop_reassign(&x).unwrap().dims(), &[2]);
    assert_eq!(loop_grows(&x).unwrap().dims(), &[2, 1]);
    assert_eq!(while_unsqueeze(&x).unwrap().dims(), &[2, 2]);
    assert_eq!(question_on_option(&x, Some(&x)).unwrap().dims(), &[2, 3]);
    assert_eq!(from_new(&x).unwrap().dims(), &[2, 2]);
    assert_eq!(double_ref(&x).unwrap().dims(), &[3]);
    assert_eq!(generic_call(&x).unwrap().dims(), &[2, 3]);
    assert_eq!(
        relation_equal(&ones(&[3]), &ones(&[3])).unwrap().dims(),
        &[3]
    );
    assert_eq!(
        const_and_braced(&ones(&[5, 4]), &ones(&[4, 2]))
            .unwrap()
            .dims(),
        &[5, 2]
    );
    assert_eq!(
        dotdot_run(&ones(&[2, 5, 3]), &ones(&[3, 2]))
            .unwrap()
            .dims(),
        &[2, 5, 1]
    );
    assert_eq!(star_run(&x, &x).unwrap().dims(), &[2]);
    assert_eq!(
        broadcast_ones(&ones(&[2, 1]), &ones(&[1, 3]))
            .unwrap()
            .dims(),
        &[2, 3]
    );
    assert_eq!(reshape_holes(&ones(&[2, 6])).unwrap().dims(), &[2, 6]);
    assert_eq!(sum_vs_keepdim(&x).unwrap().dims(), &[2]);
    assert_eq!(squeeze_symbolic(&x).unwrap().dims(), &[2, 3]);
    assert_eq!(narrow_symbolic(&x).unwrap().dims(), &[2, 3]);
    assert_eq!(
        transpose_negative(&ones(&[2, 3, 4])).unwrap().dims(),
        &[2, 4, 3]
    );
    assert_eq!(float_clause(&ones(&[3]), &ones(&[3])).unwrap().dims(), &[3]);
    let ids = Tensor::new(&[1u32, 2], &Device::Cpu).unwrap();
    assert_eq!(
        int_to_dtype(&ids).unwrap().to_vec1::<f32>().unwrap(),
        vec![2.0, 4.0]
    );
    assert_eq!(
        matmul_batch(&ones(&[2, 3, 4]), &ones(&[2, 4, 5]))
            .unwrap()
            .dims(),
        &[2, 3, 5]
    );
    assert_eq!(
        broadcast_matmul_mixed(&ones(&[2, 3, 4]), &ones(&[4, 5]))
            .unwrap()
            .dims(),
        &[2, 3, 5]
    );
    assert_eq!(indexing(&x).unwrap().dims(), &[3]);
    assert_eq!(extension_traits(&ones(&[1, 1, 3])).unwrap().dims(), &[3]);
    assert_eq!(closure_shadow(&x, &ones(&[3, 2])).unwrap().dims(), &[2, 3]);
    assert_eq!(macro_rebinds(&x, &ones(&[3, 2])).unwrap().dims(), &[3, 2]);
    assert_eq!(matmul_vector(&x).unwrap().dims(), &[2, 3]);
    assert_eq!(neg_and_ops(&x).unwrap().dims(), &[2, 3]);
    assert_eq!(affine_and_powf(&x).unwrap().dims(), &[2, 3]);
    let mask = Tensor::zeros((2, 3), DType::U8, &Device::Cpu).unwrap();
    assert_eq!(masked_fill(&x, &mask).unwrap().dims(), &[2, 3]);
    assert_eq!(shape_of_other(&x).unwrap().dims(), &[2, 3]);
    assert_eq!(stack_one(&x).unwrap().dims(), &[1, 2, 3]);
    assert_eq!(permute_neg(&x).unwrap().dims(), &[3, 2]);
    assert_eq!(max_and_argmax(&x).unwrap().dims(), &[2]);
    assert_eq!(early_return(&x, true).unwrap().dims(), &[3]);
    assert_eq!(literal_transpose(&x).unwrap().dims(), &[2, 3]);
    assert_eq!(flatten_scalar(&x).unwrap().dims(), &[2, 3]);
}
