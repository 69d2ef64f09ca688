//! Correct but tricky programs the compile-time analysis must accept: each compiles and runs to
//! the shape candle gives.

// The odd forms (`*rr`, a loop that only breaks, `return` as a tail, `vec!`, `let ref mut`, a
// `match` of one arm, a late `let`) are the attacks.
#![allow(
    clippy::needless_borrow,
    clippy::redundant_clone,
    clippy::explicit_auto_deref,
    clippy::never_loop,
    clippy::needless_return,
    clippy::useless_vec,
    clippy::toplevel_ref_arg,
    clippy::match_single_binding,
    clippy::needless_late_init
)]

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

// Second batch: literal dims, so that a wrong reading of a binding is a certain mismatch.

macro_rules! rebind_t {
    ($x:ident) => {
        let $x = $x.t()?;
    };
}

#[contract(x: f32[2, 3], y: f32[3, 2])]
fn macro_rebinds_literal(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    rebind_t!(x);
    x.add(y)
}

#[contract(x: f32[2, 3], y: f32[3, 2])]
fn closure_param_shadows(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let f = |x: &Tensor| x.add(y);
    f(&x.t()?)
}

#[contract(x: f32[2, 4], w: f32[4, 3])]
fn match_pattern_shadows(x: &Tensor, w: &Tensor, alt: Option<Tensor>) -> Result<Tensor> {
    match alt {
        Some(x) => x.matmul(&w.t()?),
        None => x.matmul(w),
    }
}

#[contract(x: f32[2, 4], w: f32[4, 3])]
fn if_let_shadows(x: &Tensor, w: &Tensor, alt: Option<Tensor>) -> Result<Tensor> {
    if let Some(x) = alt {
        return x.matmul(&w.t()?);
    }
    x.matmul(w)
}

#[contract(x: f32[2, 4], w: f32[4, 3])]
fn for_pattern_shadows(x: &Tensor, w: &Tensor, rest: &[Tensor]) -> Result<Tensor> {
    for x in rest {
        x.matmul(&w.t()?)?;
    }
    x.matmul(w)
}

#[contract(x: f32[2, 4], w: f32[4, 3])]
fn nested_fn_param(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    fn inner(x: &Tensor, w: &Tensor) -> Result<Tensor> {
        x.matmul(&w.t()?)
    }
    let y = x.matmul(w)?;
    inner(&y, w)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn tuple_swap(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (a, b) = (b, a);
    a.matmul(b)?.matmul(a)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn mem_swap(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut a = a.clone();
    let mut b = b.clone();
    std::mem::swap(&mut a, &mut b);
    a.add(&b.t()?)?.matmul(&b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn mem_replace(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut a = a.clone();
    let old = std::mem::replace(&mut a, b.clone());
    a.add(b)?.matmul(&old)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn through_mut_ref(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    let r = &mut h;
    *r = b.clone();
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn clone_from(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    h.clone_from(b);
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn assign_in_closure(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    let mut set = |t: &Tensor| h = t.clone();
    set(b);
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn option_take(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut slot = Some(a.t()?);
    let h = slot.take().unwrap_or_else(|| a.clone());
    h.add(b)
}

#[contract(a: f32[2, 3])]
fn loop_used_after_reassign(a: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    for i in 0..2 {
        if i > 0 {
            h = h.matmul(&h.t()?)?;
        } else {
            h = h.t()?;
        }
    }
    h.sum_all()
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn assign_in_block_expr(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    h.add(a)?;
    let _ = {
        h = b.clone();
        0
    };
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn assign_in_match_guard(a: &Tensor, b: &Tensor, c: bool) -> Result<Tensor> {
    let mut h = a.clone();
    h.add(a)?;
    if c || {
        h = b.clone();
        true
    } {
        h = b.clone();
    }
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn let_else(a: &Tensor, b: &Tensor, alt: Option<Tensor>) -> Result<Tensor> {
    let Some(a) = alt else {
        return b.t();
    };
    a.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn loop_break_value(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let h = loop {
        break b.clone();
    };
    let _ = a;
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn struct_field_named_like_param(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    struct Pair {
        a: Tensor,
    }
    let p = Pair { a: b.clone() };
    let _ = a;
    p.a.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn assign_to_param(mut a: Tensor, b: &Tensor) -> Result<Tensor> {
    a = b.clone();
    a.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn assign_in_while_cond(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    let mut n = 0;
    while {
        n += 1;
        n < 2
    } {
        h = b.clone();
    }
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn async_block(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    futures_executor::block_on(async {
        h = b.clone();
    });
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn cat_of_reassigned_vec(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut parts = vec![a.clone()];
    parts[0] = b.t()?;
    let whole = Tensor::cat(&parts, 0)?;
    whole.add(a)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn shadowed_in_inner_block(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let h = {
        let a = b;
        a.clone()
    };
    h.add(b)?;
    a.add(&b.t()?)
}

#[contract(a: f32[2, 3])]
fn i_with_ranges(a: &Tensor) -> Result<Tensor> {
    let r = a.i((.., 1..3))?;
    let s = a.i(1)?;
    let t = a.i((1, ..))?;
    r.sum(1)?.add(&s.narrow(0, 0, 2)?)?.add(&t.narrow(0, 1, 2)?)
}

#[contract(a: f32[2, 3], b: f32[3])]
fn matmul_with_one_d(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.broadcast_mul(&b.unsqueeze(0)?)?.sum(1)
}

#[contract(a: f32[2, 1, 3])]
fn squeeze_negative(a: &Tensor) -> Result<Tensor> {
    a.squeeze(D::Minus2)?.add(&a.squeeze(1)?)
}

#[contract(a: f32[2, 3, 4], return: f32[2, 12])]
fn flatten_negative(a: &Tensor) -> Result<Tensor> {
    a.flatten(D::Minus2, D::Minus1)
}

#[contract(a: f32[2, 3])]
fn chunk_and_cat(a: &Tensor) -> Result<Tensor> {
    let parts = a.chunk(3, 1)?;
    Tensor::cat(&parts, 1)?.add(a)
}

#[contract(a: f32[2, 3], b: f32[2, 3])]
fn ops_with_refs(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let c = (a + b)?;
    let d = (&c * &c)?;
    let e = (d - 1.0)?.exp()?;
    (e / 2.0)?.add(a)
}

#[contract(a: f32[2, 3], b: f32[2, 3])]
fn add_scalar_tensor(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let s = a.sum_all()?;
    a.broadcast_add(&s)?.add(b)
}

#[contract(a: f32[4])]
fn reshape_usize(a: &Tensor) -> Result<Tensor> {
    a.reshape(4)?
        .reshape((2, 2))?
        .reshape(&[4])?
        .reshape(vec![2, 2])
}

#[contract(a: f32[2, 3])]
fn transpose_same(a: &Tensor) -> Result<Tensor> {
    a.transpose(0, 0)?.add(a)
}

#[contract(a: f32[2, 3])]
fn unsqueeze_end(a: &Tensor) -> Result<Tensor> {
    a.unsqueeze(2)?
        .unsqueeze(D::Minus1)?
        .squeeze(3)?
        .squeeze(2)?
        .add(a)
}

#[contract(a: f32[2, 3])]
fn narrow_zero(a: &Tensor) -> Result<Tensor> {
    let e = a.narrow(1, 3, 0)?;
    Tensor::cat(&[a, &e], 1)?.add(a)
}

#[contract(a: f32[2, 3])]
fn pad_and_expand(a: &Tensor) -> Result<Tensor> {
    let p = a.pad_with_zeros(1, 1, 1)?;
    p.narrow(1, 1, 3)?.add(a)?.expand((4, 2, 3))
}

#[contract(a: f32[2, 3], b: u32[2, 3])]
fn where_cond_mask(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let m = b.ge(1u32)?;
    m.where_cond(a, &a.zeros_like()?)
}

#[contract(a: f32[2, 3])]
fn gather_index_select(a: &Tensor) -> Result<Tensor> {
    let ids = Tensor::new(&[0u32, 2], a.device())?;
    let picked = a.index_select(&ids, 1)?;
    let idx = Tensor::new(&[[0u32], [1]], a.device())?;
    picked.gather(&idx, 1)?.broadcast_add(&picked)
}

#[contract(a: f32[2, 3], return: f32[2, 3])]
fn softmax_variants(a: &Tensor) -> Result<Tensor> {
    let s = candle_nn::ops::softmax(a, 1)?;
    let l = candle_nn::ops::log_softmax(a, D::Minus1)?;
    let m = candle_nn::ops::softmax_last_dim(a)?;
    (s + l)? + m
}

#[contract(a: f32[2, 3], b: f32[2, 3])]
fn stack_cat_neg(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let s = Tensor::stack(&[a, b], D::Minus1)?;
    let c = Tensor::cat(&[a, b], D::Minus1)?;
    s.flatten_from(1)?.add(&c)
}

#[contract(a: f32[2, 3])]
fn dims_destructure(a: &Tensor) -> Result<Tensor> {
    let (n, d) = a.dims2()?;
    let z = Tensor::zeros((d, n), DType::F32, a.device())?;
    a.matmul(&z)
}

#[contract(a: f32[2, 3])]
fn shape_dims_index(a: &Tensor) -> Result<Tensor> {
    let d = a.dims()[1];
    let n = a.shape().dims()[0];
    a.reshape((d, n))?.t()?.add(a)
}

#[test]
fn tricky_programs_with_literal_dims_run() {
    let a = ones(&[2, 3]);
    let b = ones(&[3, 2]);
    assert_eq!(macro_rebinds_literal(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(closure_param_shadows(&a, &b).unwrap().dims(), &[3, 2]);
    let w = ones(&[4, 3]);
    assert_eq!(
        match_pattern_shadows(&ones(&[2, 4]), &w, Some(ones(&[5, 3])))
            .unwrap()
            .dims(),
        &[5, 4]
    );
    assert_eq!(
        if_let_shadows(&ones(&[2, 4]), &w, Some(ones(&[5, 3])))
            .unwrap()
            .dims(),
        &[5, 4]
    );
    assert_eq!(
        for_pattern_shadows(&ones(&[2, 4]), &w, &[ones(&[5, 3])])
            .unwrap()
            .dims(),
        &[2, 3]
    );
    assert_eq!(nested_fn_param(&ones(&[2, 4]), &w).unwrap().dims(), &[2, 4]);
    assert_eq!(tuple_swap(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(mem_swap(&a, &b).unwrap().dims(), &[3, 3]);
    assert_eq!(mem_replace(&a, &b).unwrap().dims(), &[3, 3]);
    assert_eq!(through_mut_ref(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(clone_from(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(assign_in_closure(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(option_take(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(
        loop_used_after_reassign(&a).unwrap().dims(),
        &[] as &[usize]
    );
    assert_eq!(assign_in_block_expr(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(
        assign_in_match_guard(&a, &b, false).unwrap().dims(),
        &[3, 2]
    );
    assert_eq!(let_else(&a, &b, Some(b.clone())).unwrap().dims(), &[3, 2]);
    assert_eq!(loop_break_value(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(
        struct_field_named_like_param(&a, &b).unwrap().dims(),
        &[3, 2]
    );
    assert_eq!(assign_to_param(a.clone(), &b).unwrap().dims(), &[3, 2]);
    assert_eq!(assign_in_while_cond(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(async_block(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(cat_of_reassigned_vec(&a, &b).unwrap().dims(), &[2, 3]);
    assert_eq!(shadowed_in_inner_block(&a, &b).unwrap().dims(), &[2, 3]);
    assert_eq!(i_with_ranges(&a).unwrap().dims(), &[2]);
    assert_eq!(matmul_with_one_d(&a, &ones(&[3])).unwrap().dims(), &[2]);
    assert_eq!(squeeze_negative(&ones(&[2, 1, 3])).unwrap().dims(), &[2, 3]);
    assert_eq!(
        flatten_negative(&ones(&[2, 3, 4])).unwrap().dims(),
        &[2, 12]
    );
    assert_eq!(chunk_and_cat(&a).unwrap().dims(), &[2, 3]);
    assert_eq!(ops_with_refs(&a, &a).unwrap().dims(), &[2, 3]);
    assert_eq!(add_scalar_tensor(&a, &a).unwrap().dims(), &[2, 3]);
    assert_eq!(reshape_usize(&ones(&[4])).unwrap().dims(), &[2, 2]);
    assert_eq!(transpose_same(&a).unwrap().dims(), &[2, 3]);
    assert_eq!(unsqueeze_end(&a).unwrap().dims(), &[2, 3]);
    assert_eq!(narrow_zero(&a).unwrap().dims(), &[2, 3]);
    assert_eq!(pad_and_expand(&a).unwrap().dims(), &[4, 2, 3]);
    let ids = Tensor::ones((2, 3), DType::U32, &Device::Cpu).unwrap();
    assert_eq!(where_cond_mask(&a, &ids).unwrap().dims(), &[2, 3]);
    assert_eq!(gather_index_select(&a).unwrap().dims(), &[2, 2]);
    assert_eq!(softmax_variants(&a).unwrap().dims(), &[2, 3]);
    assert_eq!(stack_cat_neg(&a, &a).unwrap().dims(), &[2, 6]);
    assert_eq!(dims_destructure(&a).unwrap().dims(), &[2, 2]);
    assert_eq!(shape_dims_index(&a).unwrap().dims(), &[2, 3]);
}

/// A `&mut self` method of an extension trait may replace the tensor.
trait Reset {
    fn reset_to(&mut self, other: &Tensor);
}

impl Reset for Tensor {
    fn reset_to(&mut self, other: &Tensor) {
        *self = other.clone();
    }
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn mut_self_extension(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    h.reset_to(b);
    h.add(b)
}

#[contract(a: f32[2, 3])]
fn vec_push_then_cat(a: &Tensor) -> Result<Tensor> {
    let mut parts = vec![a.clone()];
    parts.push(a.clone());
    let whole = Tensor::cat(&parts, 0)?;
    whole.add(&Tensor::cat(&[a, a], 0)?)
}

#[contract(a: f32[2, 3])]
fn array_then_cat(a: &Tensor) -> Result<Tensor> {
    let mut parts = [a.clone(), a.clone()];
    parts[1] = a.narrow(0, 0, 1)?;
    let whole = Tensor::cat(&parts, 0)?;
    whole.add(&a.narrow(0, 0, 3 - 1)?.pad_with_zeros(0, 0, 1)?)
}

#[contract(a: f32[2, 3])]
fn vec_extend_then_stack(a: &Tensor) -> Result<Tensor> {
    let mut parts = vec![a.clone()];
    parts.extend([a.clone()]);
    let whole = Tensor::stack(&parts, 0)?;
    whole.add(&Tensor::stack(&[a, a], 0)?)
}

#[test]
fn mutated_collections_and_receivers_run() {
    let a = ones(&[2, 3]);
    let b = ones(&[3, 2]);
    assert_eq!(mut_self_extension(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(vec_push_then_cat(&a).unwrap().dims(), &[4, 3]);
    assert_eq!(array_then_cat(&a).unwrap().dims(), &[3, 3]);
    assert_eq!(vec_extend_then_stack(&a).unwrap().dims(), &[2, 2, 3]);
}

#[contract(a: f32[2, 3])]
fn cat_of_repeat_array(a: &Tensor) -> Result<Tensor> {
    let twice = Tensor::cat(&[a; 2], 0)?;
    let thrice = Tensor::cat(&vec![a; 3], 0)?;
    let stacked = Tensor::stack(&[a; 2], 0)?;
    twice.add(&Tensor::cat(&[a, a], 0)?)?;
    stacked.flatten_to(1)?.add(&twice)?;
    thrice.narrow(0, 0, 4)?.add(&twice)
}

#[contract(a: f32[2, 3, 4, 5], b: f32[3, 2, 5, 6], return: f32[2, 3, 4, 6])]
fn matmul_batch_counts(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.matmul(b)
}

#[contract(a: f32[X, Y, M, K], b: f32[Y, X, K, N], return: f32[X, Y, M, N])]
fn matmul_batch_counts_symbolic(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.matmul(b)
}

#[contract(a: f32[2, 3], return: f32[2, 3, 2])]
fn stack_at_rank(a: &Tensor) -> Result<Tensor> {
    Tensor::stack(&[a, a], 2)
}

#[contract(a: f32[2, 3, 4])]
fn reduce_tuples(a: &Tensor) -> Result<Tensor> {
    let s = a.sum((0, 2))?;
    let k = a.sum_keepdim((0, 2))?;
    let m = a.mean(vec![0, 1])?;
    let t = a.max_keepdim(D::Minus1)?;
    s.add(&k.flatten_all()?)?;
    m.add(
        &t.squeeze(2)?
            .get(0)?
            .narrow(0, 0, 3)?
            .sum(0)?
            .broadcast_as(4)?,
    )
}

#[contract(a: f32[2, 3, 4])]
fn permute_forms(a: &Tensor) -> Result<Tensor> {
    let p = a.permute((2, 0, 1))?;
    let q = a.permute(vec![2, 0, 1])?;
    let r = a.permute([2, 0, 1])?;
    p.add(&q)?.add(&r)
}

#[contract(a: f32[2, 3], b: f32[3])]
fn broadcast_to_rank(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let c = b.broadcast_as((4, 2, 3))?;
    let d = a.broadcast_left(4)?;
    c.add(&d)?.broadcast_sub(b)?.broadcast_mul(a)
}

#[contract(a: f32[2, 3])]
fn index_forms(a: &Tensor) -> Result<Tensor> {
    let x = a.i((.., 0..2))?;
    let y = a.i((0..2, ..2))?;
    let z = a.i((1.., 1..=2))?;
    let w = a.i(..)?;
    x.add(&y)?
        .narrow(0, 0, 1)?
        .add(&z)?
        .broadcast_add(&w.narrow(1, 0, 2)?)
}

#[contract(a: f32[N, 3])]
fn narrow_with_dims(a: &Tensor) -> Result<Tensor> {
    let n = a.dim(0)?;
    let head = a.narrow(0, 0, n - 1)?;
    let tail = a.narrow(0, 1, n - 1)?;
    let last = a.narrow(0, n - 1, 1)?;
    let _ = last;
    head.sub(&tail)
}

#[contract(a: f32[2, 3])]
fn chunk_index(a: &Tensor) -> Result<Tensor> {
    let parts = a.chunk(2, 0)?;
    parts[0].add(&parts[1])
}

#[contract(a: f32[B, T, C])]
fn split_heads(a: &Tensor) -> Result<Tensor> {
    let (b, t, c) = a.dims3()?;
    let h = a.reshape((b, t, 1, c))?.transpose(1, 2)?;
    let back = h.transpose(1, 2)?.reshape((b, t, c))?;
    back.add(a)
}

#[test]
fn candle_semantics_run() {
    let a = ones(&[2, 3]);
    assert_eq!(cat_of_repeat_array(&a).unwrap().dims(), &[4, 3]);
    assert_eq!(
        matmul_batch_counts(&ones(&[2, 3, 4, 5]), &ones(&[3, 2, 5, 6]))
            .unwrap()
            .dims(),
        &[2, 3, 4, 6]
    );
    assert_eq!(
        matmul_batch_counts_symbolic(&ones(&[2, 3, 4, 5]), &ones(&[3, 2, 5, 6]))
            .unwrap()
            .dims(),
        &[2, 3, 4, 6]
    );
    assert_eq!(stack_at_rank(&a).unwrap().dims(), &[2, 3, 2]);
    assert_eq!(reduce_tuples(&ones(&[2, 3, 4])).unwrap().dims(), &[4]);
    assert_eq!(permute_forms(&ones(&[2, 3, 4])).unwrap().dims(), &[4, 2, 3]);
    assert_eq!(
        broadcast_to_rank(&a, &ones(&[3])).unwrap().dims(),
        &[4, 2, 3]
    );
    assert_eq!(index_forms(&a).unwrap().dims(), &[2, 2]);
    assert_eq!(narrow_with_dims(&ones(&[4, 3])).unwrap().dims(), &[3, 3]);
    assert_eq!(chunk_index(&a).unwrap().dims(), &[1, 3]);
    assert_eq!(split_heads(&ones(&[2, 3, 4])).unwrap().dims(), &[2, 3, 4]);
}

struct Layer {
    w: Tensor,
}

impl Layer {
    fn replace(&mut self, w: &Tensor) {
        self.w = w.clone();
    }

    #[contract(self.w: f32[2, 3], b: f32[3, 2])]
    fn assign_field(&mut self, b: &Tensor) -> Result<Tensor> {
        self.w = b.clone();
        self.w.add(b)
    }

    #[contract(self.w: f32[2, 3], b: f32[3, 2])]
    fn mutate_field_by_method(&mut self, b: &Tensor) -> Result<Tensor> {
        self.replace(b);
        self.w.add(b)
    }

    #[contract(self.w: f32[2, 3], b: f32[3, 2])]
    fn shadow_self_field(&self, b: &Tensor) -> Result<Tensor> {
        let w = b;
        w.add(b)?;
        self.w.add(&b.t()?)
    }
}

/// (A clause cannot name a generic `T`: the guard needs a tensor type.)
#[contract(w: f32[3, 2])]
fn generic_param<T: AsRef<Tensor>>(x: T, w: &Tensor) -> Result<Tensor> {
    x.as_ref().matmul(w)
}

#[contract(w: f32[2, 3])]
fn impl_trait_param(x: impl AsRef<Tensor>, w: &Tensor) -> Result<Tensor> {
    x.as_ref().t()?.matmul(w)
}

#[contract(x: f32[N, 3], mask: f32[N, 3])]
fn optional_param(x: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
    match mask {
        Some(mask) => x.mul(mask),
        None => Ok(x.clone()),
    }
}

#[contract(x: f32[2, 3], return.0: f32[2, 3], return.1: f32[3, 2])]
fn tuple_return(x: &Tensor) -> Result<(Tensor, Tensor)> {
    let t = x.t()?;
    Ok((x.clone(), t))
}

#[contract(x: f32[2, 3], return: f32[3, 2])]
async fn async_contract(x: &Tensor) -> Result<Tensor> {
    let y = async { x.t() }.await?;
    Ok(y)
}

#[contract(xs: [f32[3]; N])]
fn sequence_param(xs: &[Tensor]) -> Result<Tensor> {
    Tensor::stack(xs, 0)
}

#[test]
fn fields_generics_and_options_run() {
    let a = ones(&[2, 3]);
    let b = ones(&[3, 2]);
    let mut layer = Layer { w: a.clone() };
    assert_eq!(layer.assign_field(&b).unwrap().dims(), &[3, 2]);
    let mut layer = Layer { w: a.clone() };
    assert_eq!(layer.mutate_field_by_method(&b).unwrap().dims(), &[3, 2]);
    let layer = Layer { w: a.clone() };
    assert_eq!(layer.shadow_self_field(&b).unwrap().dims(), &[2, 3]);
    assert_eq!(generic_param(&a, &b).unwrap().dims(), &[2, 2]);
    assert_eq!(impl_trait_param(&a, &a).unwrap().dims(), &[3, 3]);
    assert_eq!(optional_param(&a, Some(&a)).unwrap().dims(), &[2, 3]);
    assert_eq!(tuple_return(&a).unwrap().1.dims(), &[3, 2]);
    let y = futures_executor::block_on(async_contract(&a)).unwrap();
    assert_eq!(y.dims(), &[3, 2]);
    assert_eq!(
        sequence_param(&[ones(&[3]), ones(&[3])]).unwrap().dims(),
        &[2, 3]
    );
}

/// Two types of one `#[contract]` module with methods of one name: `self.forward` is the
/// receiver's own.
#[contract]
mod two_models {
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};

    pub struct Small;
    pub struct Wide;

    impl Small {
        #[contract(xs: f32[N, 3], return: f32[N, 3])]
        pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
            Ok(xs.clone())
        }
    }

    impl Wide {
        #[contract(xs: f32[N, 5], return: f32[N, 5])]
        pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
            Ok(xs.clone())
        }

        #[contract(xs: f32[N, 5], return: f32[N, 5])]
        pub fn step(&self, xs: &Tensor) -> Result<Tensor> {
            self.forward(xs)
        }
    }

    /// A free function named like the methods.
    #[contract(xs: f32[N, 7], return: f32[N, 7])]
    pub fn forward(xs: &Tensor) -> Result<Tensor> {
        Ok(xs.clone())
    }

    #[contract(xs: f32[N, 5])]
    pub fn wide_twice(xs: &Tensor) -> Result<Tensor> {
        let ys = Wide.forward(xs)?;
        let small = |xs: &Tensor| Small.forward(xs);
        let _ = small;
        Wide.step(&ys)
    }

    pub mod inner {
        use candle_contracts::contract;
        use candle_core::{Result, Tensor};

        #[contract(xs: f32[N, 2], return: f32[N, 2])]
        pub fn forward(xs: &Tensor) -> Result<Tensor> {
            Ok(xs.clone())
        }

        #[contract(xs: f32[N, 2])]
        pub fn call_own(xs: &Tensor) -> Result<Tensor> {
            forward(xs)
        }
    }
}

#[test]
fn methods_of_one_name_in_a_module_run() {
    let xs = ones(&[2, 5]);
    assert_eq!(two_models::Wide.step(&xs).unwrap().dims(), &[2, 5]);
    assert_eq!(two_models::wide_twice(&xs).unwrap().dims(), &[2, 5]);
    assert_eq!(
        two_models::inner::call_own(&ones(&[2, 2])).unwrap().dims(),
        &[2, 2]
    );
    assert_eq!(
        two_models::Small.forward(&ones(&[2, 3])).unwrap().dims(),
        &[2, 3]
    );
    assert_eq!(two_models::forward(&ones(&[2, 7])).unwrap().dims(), &[2, 7]);
}

#[contract(a: f32[2, 3, 4], return: f32[2, 4, 3])]
fn minus_k_dims(a: &Tensor) -> Result<Tensor> {
    let s = a.sum_keepdim(D::Minus(2))?.squeeze(D::Minus(2))?;
    let n = a.narrow(D::Minus(3), 0_usize, 0x2)?;
    let _ = (s, n);
    a.transpose(D::Minus(1), D::Minus(2))
}

#[contract(a: f32[2, 1_000])]
fn literal_forms(a: &Tensor) -> Result<Tensor> {
    a.reshape((2usize, 10, 100))?
        .reshape((2, 1_000))?
        .narrow(1, 999, 1)
}

#[test]
fn dim_forms_run() {
    assert_eq!(minus_k_dims(&ones(&[2, 3, 4])).unwrap().dims(), &[2, 4, 3]);
    assert_eq!(literal_forms(&ones(&[2, 1000])).unwrap().dims(), &[2, 1]);
}

#[contract(a: f32[2, 3], return: f32[2, 3])]
fn returns_of_inner_bodies(a: &Tensor) -> Result<Tensor> {
    fn inner(a: &Tensor) -> Result<Tensor> {
        return a.t();
    }
    let f = || -> Result<Tensor> {
        return a.t();
    };
    let g = async {
        return a.t();
    };
    let _ = futures_executor::block_on(g)?;
    let _ = (inner(a)?, f()?);
    Ok(a.clone())
}

impl Layer {
    /// A method whose `self.w` is replaced through a `&mut self` borrow in a closure.
    #[contract(self.w: f32[2, 3], b: f32[3, 2], return: f32[3, 2])]
    fn field_set_in_closure(&mut self, b: &Tensor) -> Result<Tensor> {
        let mut set = |w: &Tensor| self.w = w.clone();
        set(b);
        Ok(self.w.clone())
    }
}

#[test]
fn inner_returns_run() {
    assert_eq!(
        returns_of_inner_bodies(&ones(&[2, 3])).unwrap().dims(),
        &[2, 3]
    );
    let mut layer = Layer { w: ones(&[2, 3]) };
    assert_eq!(
        layer.field_set_in_closure(&ones(&[3, 2])).unwrap().dims(),
        &[3, 2]
    );
}

/// A file's own modules named like candle-nn's (a soft-label `nll`, a softmax with a
/// temperature) and like `candle_contracts::nn`: the macro cannot see which is meant.
mod loss {
    use candle_core::{Result, Tensor, D};

    /// The negative log-likelihood of soft labels `[N, C]`.
    pub fn nll(log_probs: &Tensor, soft: &Tensor) -> Result<Tensor> {
        (log_probs * soft)?.sum(D::Minus1)?.mean_all()?.neg()
    }
}

mod ops {
    use candle_core::{Result, Tensor, D};

    /// The softmax of the last dim at a temperature.
    pub fn softmax(x: &Tensor, temperature: usize) -> Result<Tensor> {
        candle_nn::ops::softmax(&(x / temperature as f64)?, D::Minus1)
    }
}

mod nn {
    use candle_core::{Result, Tensor};

    /// Cross-entropy against probabilities `[N, C]` (PyTorch's soft targets).
    pub fn cross_entropy(logits: &Tensor, probabilities: &Tensor) -> Result<Tensor> {
        let log_probs = candle_nn::ops::log_softmax(logits, 1)?;
        super::loss::nll(&log_probs, probabilities)
    }
}

#[contract(log_probs: f32[N, C], soft: f32[N, C])]
fn own_loss_module(log_probs: &Tensor, soft: &Tensor) -> Result<Tensor> {
    loss::nll(log_probs, soft)
}

#[contract(x: f32[N, C])]
fn own_ops_module(x: &Tensor) -> Result<Tensor> {
    ops::softmax(x, 5)
}

#[contract(logits: f32[N, C], probabilities: f32[N, C])]
fn own_nn_module(logits: &Tensor, probabilities: &Tensor) -> Result<Tensor> {
    nn::cross_entropy(logits, probabilities)
}

/// Names in a body that hide a `#[contract]` module's own contracted `features`.
mod other {
    use candle_core::{Result, Tensor};

    pub fn features(x: &Tensor) -> Result<Tensor> {
        x.sum_keepdim(1)
    }
}

#[contract]
mod hidden_siblings {
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};

    #[contract(images: f32[N, 28, 28], return: f32[N, 784])]
    pub fn features(images: &Tensor) -> Result<Tensor> {
        images.flatten_from(1)
    }

    #[contract(x: f32[N, 784])]
    pub fn by_use(x: &Tensor) -> Result<Tensor> {
        use super::other::features;
        features(x)
    }

    #[contract(x: f32[N, 784])]
    pub fn by_glob(x: &Tensor) -> Result<Tensor> {
        use super::other::*;
        features(x)
    }

    #[contract(x: f32[N, 784])]
    pub fn by_annotated_let(x: &Tensor) -> Result<Tensor> {
        let features: fn(&Tensor) -> Result<Tensor> = super::other::features;
        features(x)
    }

    #[contract(x: f32[N, 784])]
    pub fn by_closure_parameter(x: &Tensor) -> Result<Tensor> {
        let apply = |features: &dyn Fn(&Tensor) -> Result<Tensor>| features(x);
        apply(&super::other::features)
    }
}

#[test]
fn a_files_own_modules_and_hidden_siblings_run() {
    let soft = Tensor::new(&[[0.25f32, 0.75], [1.0, 0.0]], &Device::Cpu).unwrap();
    let log_probs = soft.clamp(1e-6, 1.0).unwrap().log().unwrap();
    assert_eq!(
        own_loss_module(&log_probs, &soft).unwrap().dims(),
        &[] as &[usize]
    );
    assert_eq!(own_ops_module(&soft).unwrap().dims(), &[2, 2]);
    assert_eq!(own_nn_module(&soft, &soft).unwrap().dims(), &[] as &[usize]);
    let x = ones(&[2, 784]);
    for f in [
        hidden_siblings::by_use,
        hidden_siblings::by_glob,
        hidden_siblings::by_annotated_let,
        hidden_siblings::by_closure_parameter,
    ] {
        assert_eq!(f(&x).unwrap().dims(), &[2, 1]);
    }
    assert_eq!(
        hidden_siblings::features(&ones(&[2, 28, 28]))
            .unwrap()
            .dims(),
        &[2, 784]
    );
}

/// `mut` bindings are followed in the order of the body: these are the ways a value changes
/// behind the walk's back, each correct for the inputs the test gives.
#[contract(x: f32[2, 3, 4], w: f32[4, 5])]
fn mut_shadow_of_a_parameter(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let y = x.broadcast_matmul(w)?;
    let mut x = x.permute((0, 2, 1))?;
    x = x.transpose(1, 2)?;
    x.broadcast_matmul(w)?.add(&y)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn assign_in_a_nested_block(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    h.add(a)?;
    {
        h = b.clone();
    }
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn assign_in_else_of_if_let(a: &Tensor, b: &Tensor, alt: Option<&Tensor>) -> Result<Tensor> {
    let mut h = a.clone();
    if let Some(h) = alt {
        let _ = h;
    } else {
        h = b.clone();
    }
    h.add(b)
}

struct Holder {
    h: Tensor,
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn field_name_in_a_pattern(a: &Tensor, b: &Tensor, holder: &Holder) -> Result<Tensor> {
    let mut h = a.clone();
    h.add(a)?;
    match holder {
        Holder { h: inner } => {
            let _ = inner;
            h = b.clone();
        }
    }
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn assign_in_short_circuit(a: &Tensor, b: &Tensor, c: bool) -> Result<Tensor> {
    let mut h = a.clone();
    if c || {
        h = b.clone();
        true
    } {
        let _ = 0;
    }
    let mut g = b.clone();
    if c && {
        g = a.clone();
        false
    } {
        let _ = 0;
    }
    h.add(b)?.add(&g)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn assign_in_a_failed_guard(a: &Tensor, b: &Tensor, k: usize) -> Result<Tensor> {
    let mut h = a.clone();
    match k {
        0 if {
            h = b.clone();
            false
        } =>
        {
            return a.t();
        }
        _ => {}
    }
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn assign_after_a_labelled_break(a: &Tensor, b: &Tensor, c: bool) -> Result<Tensor> {
    let mut h = b.clone();
    'done: {
        if c {
            break 'done;
        }
        h = a.clone();
    }
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn read_before_the_assignment_of_a_turn(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    for turn in 0..2 {
        if turn == 1 {
            h.add(b)?;
        }
        h = b.clone();
    }
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn closure_called_in_a_loop(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    let mut set = |t: &Tensor| h = t.clone();
    for _ in 0..2 {
        set(b);
    }
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn mut_method_in_a_closure(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    h.add(a)?;
    let mut reset = || h.reset_to(b);
    reset();
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn mut_method_later_in_a_turn(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    for turn in 0..2 {
        if turn == 1 {
            h.add(b)?;
        }
        h.reset_to(b);
    }
    h.add(b)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn ref_mut_patterns(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    let ref mut r = h;
    *r = b.clone();
    let mut g = a.clone();
    match g {
        ref mut r => *r = b.clone(),
    }
    h.add(b)?.add(&g)
}

macro_rules! set_to {
    ($h:ident, $v:expr) => {
        $h = $v.clone()
    };
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn assigned_by_macros(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    h.add(a)?;
    let () = set_to!(h, b);
    let mut g = a.clone();
    g.add(a)?;
    println!("{}", {
        g = b.clone();
        0
    });
    h.add(b)?.add(&g)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn destructuring_assignment(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    let mut g = b.clone();
    (h, g) = (g, h);
    h.add(b)?.t()?.add(&g)
}

#[contract(a: f32[2, 3], b: f32[3, 2])]
fn assigned_once_later(a: &Tensor, b: &Tensor, c: bool) -> Result<Tensor> {
    let h;
    if c {
        h = b.clone();
    } else {
        h = a.t()?;
    }
    h.add(b)
}

#[test]
fn mut_bindings_followed_in_order_run() {
    let a = ones(&[2, 3]);
    let b = ones(&[3, 2]);
    let w = ones(&[4, 5]);
    assert_eq!(
        mut_shadow_of_a_parameter(&ones(&[2, 3, 4]), &w)
            .unwrap()
            .dims(),
        &[2, 3, 5]
    );
    assert_eq!(assign_in_a_nested_block(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(
        assign_in_else_of_if_let(&a, &b, None).unwrap().dims(),
        &[3, 2]
    );
    let holder = Holder { h: a.clone() };
    assert_eq!(
        field_name_in_a_pattern(&a, &b, &holder).unwrap().dims(),
        &[3, 2]
    );
    assert_eq!(
        assign_in_short_circuit(&a, &b, false).unwrap().dims(),
        &[3, 2]
    );
    assert_eq!(assign_in_a_failed_guard(&a, &b, 0).unwrap().dims(), &[3, 2]);
    assert_eq!(
        assign_after_a_labelled_break(&a, &b, true).unwrap().dims(),
        &[3, 2]
    );
    assert_eq!(
        read_before_the_assignment_of_a_turn(&a, &b).unwrap().dims(),
        &[3, 2]
    );
    assert_eq!(closure_called_in_a_loop(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(mut_method_in_a_closure(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(mut_method_later_in_a_turn(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(ref_mut_patterns(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(assigned_by_macros(&a, &b).unwrap().dims(), &[3, 2]);
    assert_eq!(destructuring_assignment(&a, &b).unwrap().dims(), &[2, 3]);
    assert_eq!(assigned_once_later(&a, &b, true).unwrap().dims(), &[3, 2]);
}

/// Clauses on a parameter's fields hold while the parameter is the one the clause names.
struct Rotary {
    cos: Tensor,
}

#[contract(x: f32[2, 3], rot.cos: f32[4, 3])]
fn field_clause_of_a_shadowed_parameter(
    x: &Tensor,
    rot: &Rotary,
    other: &Rotary,
) -> Result<Tensor> {
    let _ = rot;
    let rot = other;
    rot.cos.add(x)
}

#[contract(x: f32[2, 3], rot.cos: f32[4, 3])]
fn field_clause_of_a_mut_reference(x: &Tensor, rot: &mut Rotary) -> Result<Tensor> {
    rot.cos = x.clone();
    rot.cos.add(x)
}

/// `v + eps` is candle's operator only for the types candle implements it for: a type of the
/// crate may add by broadcasting.
struct Eps(Tensor);

impl std::ops::Add<&Eps> for Tensor {
    type Output = Result<Tensor>;

    fn add(self, eps: &Eps) -> Result<Tensor> {
        self.broadcast_add(&eps.0)
    }
}

#[contract(x: f32[2, 1], return: f32[2, 3])]
fn operator_of_a_crate_type(x: &Tensor, eps: &Eps) -> Result<Tensor> {
    x.clone() + eps
}

#[test]
fn field_clauses_and_operators_run() {
    let x = ones(&[2, 3]);
    let rot = Rotary { cos: ones(&[4, 3]) };
    let other = Rotary { cos: ones(&[2, 3]) };
    assert_eq!(
        field_clause_of_a_shadowed_parameter(&x, &rot, &other)
            .unwrap()
            .dims(),
        &[2, 3]
    );
    let mut rot = Rotary { cos: ones(&[4, 3]) };
    assert_eq!(
        field_clause_of_a_mut_reference(&x, &mut rot)
            .unwrap()
            .dims(),
        &[2, 3]
    );
    assert_eq!(
        operator_of_a_crate_type(&ones(&[2, 1]), &Eps(x))
            .unwrap()
            .dims(),
        &[2, 3]
    );
}

/// A `macro_rules!` of the body sees the body's names where it is defined: its call may
/// assign one it does not name.
#[contract(a: f32[2, 3], b: f32[3, 2])]
fn body_macro_assigns_what_it_sees(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    h.add(a)?;
    macro_rules! reset {
        () => {
            h = b.clone()
        };
    }
    reset!();
    h.add(b)?;
    let mut g = a.clone();
    macro_rules! set_g {
        () => {
            g = b.clone()
        };
    }
    for turn in 0..2 {
        if turn == 1 {
            g.add(b)?;
        }
        set_g!();
    }
    g.add(b)
}

macro_rules! define_features {
    () => {
        fn features(x: &Tensor) -> Result<Tensor> {
            x.sum_keepdim(1)
        }
    };
}

/// A macro in a body may define an item that hides the module's function of its name.
#[contract]
mod hidden_by_a_macro {
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};

    #[contract(images: f32[N, 28, 28], return: f32[N, 784])]
    pub fn features(images: &Tensor) -> Result<Tensor> {
        images.flatten_from(1)
    }

    #[contract(x: f32[N, 784])]
    pub fn by_macro(x: &Tensor) -> Result<Tensor> {
        define_features!();
        features(x)
    }
}

#[test]
fn what_a_body_s_macros_may_do_runs() {
    let (a, b) = (ones(&[2, 3]), ones(&[3, 2]));
    assert_eq!(
        body_macro_assigns_what_it_sees(&a, &b).unwrap().dims(),
        &[3, 2]
    );
    assert_eq!(
        hidden_by_a_macro::by_macro(&ones(&[2, 784]))
            .unwrap()
            .dims(),
        &[2, 1]
    );
    assert_eq!(
        hidden_by_a_macro::features(&ones(&[2, 28, 28]))
            .unwrap()
            .dims(),
        &[2, 784]
    );
}

/// A closure's body may run again after it changed a name: its first statements do not see
/// only the value the name had where the closure stands.
#[contract(a: f32[2, 3], b: f32[3, 2])]
fn closure_reads_what_its_last_call_set(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut h = a.clone();
    let mut calls = 0;
    let mut step = || -> Result<()> {
        if calls > 0 {
            h.add(b)?;
        }
        h = b.clone();
        calls += 1;
        Ok(())
    };
    step()?;
    step()?;
    Ok(h)
}

#[test]
fn a_closure_called_twice_runs() {
    let (a, b) = (ones(&[2, 3]), ones(&[3, 2]));
    assert_eq!(
        closure_reads_what_its_last_call_set(&a, &b).unwrap().dims(),
        &[3, 2]
    );
}
