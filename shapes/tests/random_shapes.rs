//! A property test over random concrete shapes: with every dim a literal, the rules know
//! everything, so they must agree with candle exactly: the same dims where candle succeeds,
//! a certain mismatch exactly where candle fails.

use candle_contracts_shapes::dtype::DType;
use candle_contracts_shapes::rules::{self, Arg};
use candle_contracts_shapes::shape::{Shape, TensorType};
use candle_contracts_shapes::verdict::DimIndex;
use candle_core::{D, DType as CandleDType, Device, Tensor};
use proptest::prelude::*;

fn dims() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..=3, 0..=4)
}

fn typed(dims: &[usize]) -> Arg {
    Arg::Tensor(TensorType::new(DType::F32, Shape::literal(dims)))
}

fn zeros(dims: &[usize]) -> Tensor {
    Tensor::zeros(dims, CandleDType::F32, &Device::Cpu).unwrap()
}

/// One call: its name, the rule's arguments, and candle's run of it.
fn calls(
    a: &[usize],
    b: &[usize],
    i: usize,
    j: usize,
) -> Vec<(String, Option<Vec<Arg>>, candle_core::Result<Tensor>)> {
    let (ta, tb) = (zeros(a), zeros(b));
    let int = |n: usize| Arg::int(n as u64);
    let minus = |k: usize| Arg::Dim(DimIndex::FromEnd(k));
    let tuple = |dims: &[usize]| Arg::Tuple(dims.iter().map(|&d| int(d)).collect());
    vec![
        ("add".into(), Some(vec![typed(b)]), ta.add(&tb)),
        ("maximum".into(), Some(vec![typed(b)]), ta.maximum(&tb)),
        (
            "broadcast_add".into(),
            Some(vec![typed(b)]),
            ta.broadcast_add(&tb),
        ),
        (
            "broadcast_div".into(),
            Some(vec![typed(b)]),
            ta.broadcast_div(&tb),
        ),
        ("matmul".into(), Some(vec![typed(b)]), ta.matmul(&tb)),
        (
            "broadcast_matmul".into(),
            Some(vec![typed(b)]),
            ta.broadcast_matmul(&tb),
        ),
        ("t".into(), Some(vec![]), ta.t()),
        (
            "transpose".into(),
            Some(vec![int(i), int(j)]),
            ta.transpose(i, j),
        ),
        (
            "transpose".into(),
            Some(vec![minus(i + 1), int(j)]),
            ta.transpose(D::Minus(i + 1), j),
        ),
        ("squeeze".into(), Some(vec![int(i)]), ta.squeeze(i)),
        ("unsqueeze".into(), Some(vec![int(i)]), ta.unsqueeze(i)),
        (
            "unsqueeze".into(),
            Some(vec![minus(i + 1)]),
            ta.unsqueeze(D::Minus(i + 1)),
        ),
        ("sum_keepdim".into(), Some(vec![int(i)]), ta.sum_keepdim(i)),
        (
            "sum".into(),
            Some(vec![Arg::Tuple(vec![int(i), int(j)])]),
            ta.sum(vec![i, j]),
        ),
        (
            "max".into(),
            Some(vec![minus(i + 1)]),
            ta.max(D::Minus(i + 1)),
        ),
        (
            "argmax_keepdim".into(),
            Some(vec![int(i)]),
            ta.argmax_keepdim(i),
        ),
        (
            "narrow".into(),
            Some(vec![int(i), int(j), int(1)]),
            ta.narrow(i, j, 1),
        ),
        (
            "flatten_from".into(),
            Some(vec![int(i)]),
            ta.flatten_from(i),
        ),
        (
            "flatten".into(),
            Some(vec![int(i), int(j)]),
            ta.flatten(i, j),
        ),
        ("reshape".into(), Some(vec![tuple(b)]), ta.reshape(b)),
        (
            "broadcast_as".into(),
            Some(vec![tuple(b)]),
            ta.broadcast_as(b),
        ),
        (
            "permute".into(),
            Some(vec![Arg::Tuple(vec![int(i), int(j)])]),
            ta.permute(vec![i, j]),
        ),
        ("Tensor::cat".into(), None, Tensor::cat(&[&ta, &tb], i)),
        ("Tensor::stack".into(), None, Tensor::stack(&[&ta, &tb], i)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn rules_agree_with_candle_on_literal_shapes(a in dims(), b in dims(), i in 0usize..4, j in 0usize..4) {
        for (name, args, real) in calls(&a, &b, i, j) {
            let receiver = TensorType::new(DType::F32, Shape::literal(&a));
            let outcome = match args {
                Some(args) => rules::method(&name, &receiver, &args),
                None => rules::function(&name, &[Arg::Tensors(vec![receiver.clone(), typed_type(&b)]), Arg::int(i as u64)]),
            };
            match (&outcome, &real) {
                (Ok(rule), Ok(real)) => prop_assert_eq!(
                    &rule.shape, &Shape::literal(real.dims()), "{} on {:?}, {:?}, i {}, j {}", name, a, b, i, j
                ),
                (Err(mismatch), Ok(real)) => prop_assert!(
                    false, "false positive: {} on {:?}, {:?}, i {}, j {}: {} but candle gives {:?}", name, a, b, i, j, mismatch, real.dims()
                ),
                (Ok(rule), Err(error)) => prop_assert!(
                    false, "missed: {} on {:?}, {:?}, i {}, j {} gives {} but candle fails: {}", name, a, b, i, j, rule, error
                ),
                (Err(_), Err(_)) => {}
            }
        }
    }
}

fn typed_type(dims: &[usize]) -> TensorType {
    TensorType::new(DType::F32, Shape::literal(dims))
}
