//! Every grammar element of the contract language, passing and failing.

use candle_contracts::{contract, ContractError, Rule};
use candle_core::{DType, Device, Result, Tensor};

use crate::{contract_error, only_violation, zeros};

const ALL_DTYPES: [DType; 10] = [
    DType::U8,
    DType::U32,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::BF16,
    DType::F16,
    DType::F32,
    DType::F64,
    DType::F8E4M3,
];

#[contract(x: float[..])]
fn any_float(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

#[contract(x: int[..])]
fn any_int(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

#[contract(x: uint[..])]
fn any_uint(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

#[contract(x: sint[..])]
fn any_sint(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

#[contract(x: _[..])]
fn any_dtype(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

#[contract(x: u8 | f16 [..])]
fn union(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

#[test]
fn dtype_families_and_unions() {
    for dtype in ALL_DTYPES {
        let x = zeros(&[2], dtype);
        assert_eq!(
            any_float(&x).is_ok(),
            dtype.is_float(),
            "float and {dtype:?}"
        );
        assert_eq!(any_int(&x).is_ok(), dtype.is_int(), "int and {dtype:?}");
        assert_eq!(
            any_uint(&x).is_ok(),
            matches!(dtype, DType::U8 | DType::U32),
            "uint and {dtype:?}"
        );
        assert_eq!(
            any_sint(&x).is_ok(),
            matches!(dtype, DType::I16 | DType::I32 | DType::I64),
            "sint and {dtype:?}"
        );
        assert!(any_dtype(&x).is_ok());
        assert_eq!(
            union(&x).is_ok(),
            matches!(dtype, DType::U8 | DType::F16),
            "union and {dtype:?}"
        );
    }
    let error = union(&zeros(&[2], DType::BF16)).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.rule(), violation.expected(), violation.found()),
        (Rule::DType, "u8 | f16", "bf16")
    );
    assert!(
        error
            .to_string()
            .contains("`x`: dtype bf16, expected u8 | f16"),
        "{error}"
    );
}

macro_rules! named_dtype_fn {
    ($($name:ident: $dtype:ident),*) => {$(
        #[contract(x: $dtype[N])]
        fn $name(x: &Tensor) -> Result<()> {
            let _ = x;
            Ok(())
        }
    )*};
}
named_dtype_fn!(
    only_u8: u8, only_u32: u32, only_i16: i16, only_i32: i32, only_i64: i64,
    only_bf16: bf16, only_f16: f16, only_f32: f32, only_f64: f64, only_f8e4m3: f8e4m3
);

#[test]
fn every_dtype_name() {
    type Check = fn(&Tensor) -> Result<()>;
    let checks: [(DType, Check); 10] = [
        (DType::U8, only_u8),
        (DType::U32, only_u32),
        (DType::I16, only_i16),
        (DType::I32, only_i32),
        (DType::I64, only_i64),
        (DType::BF16, only_bf16),
        (DType::F16, only_f16),
        (DType::F32, only_f32),
        (DType::F64, only_f64),
        (DType::F8E4M3, only_f8e4m3),
    ];
    for (expected, check) in checks {
        for dtype in ALL_DTYPES {
            assert_eq!(
                check(&zeros(&[1], dtype)).is_ok(),
                dtype == expected,
                "{expected:?} vs {dtype:?}"
            );
        }
    }
}

#[contract(x: f32[2, _, N], y: f32[N])]
fn fixed_any_named(x: &Tensor, y: &Tensor) -> Result<()> {
    let _ = (x, y);
    Ok(())
}

#[test]
fn fixed_any_and_named_dims() {
    assert!(fixed_any_named(&zeros(&[2, 7, 3], DType::F32), &zeros(&[3], DType::F32)).is_ok());
    let error =
        fixed_any_named(&zeros(&[3, 7, 3], DType::F32), &zeros(&[4], DType::F32)).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains(
            "`x`: shape [3, 7, 3] does not match [2, _, N] = [2, _, 3]\n    dim 0 is 3, expected 2"
        ),
        "{text}"
    );
    assert!(text.contains("`y`: shape [4] does not match [N] = [3]\n    dim 0 is 4 but N = 3 (bound by `x` dim 2)"), "{text}");
    let violation = &contract_error(&error).violations()[1];
    assert_eq!(violation.bound_dims()[0].name, "N");
    assert_eq!(
        (
            violation.bound_dims()[0].bound_by,
            violation.bound_dims()[0].axis
        ),
        ("x", 2)
    );
}

#[contract(x: f32[.., C], y: f32[B, ..])]
fn rest_dims(x: &Tensor, y: &Tensor) -> Result<()> {
    let _ = (x, y);
    Ok(())
}

#[test]
fn rest_matches_zero_or_more_dims() {
    assert!(rest_dims(&zeros(&[5], DType::F32), &zeros(&[1], DType::F32)).is_ok());
    assert!(rest_dims(
        &zeros(&[2, 3, 5], DType::F32),
        &zeros(&[1, 9, 9], DType::F32)
    )
    .is_ok());
    let error = rest_dims(&zeros(&[], DType::F32), &zeros(&[2], DType::F32)).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`x`: shape [] does not match [.., C] (rank 0, expected rank at least 1)"),
        "{error}"
    );
}

#[contract(images: f32[*B, 3, H, W], labels: u32[*B])]
fn named_runs(images: &Tensor, labels: &Tensor) -> Result<()> {
    let _ = (images, labels);
    Ok(())
}

#[test]
fn named_runs_of_dims() {
    assert!(named_runs(
        &zeros(&[2, 4, 3, 8, 8], DType::F32),
        &zeros(&[2, 4], DType::U32)
    )
    .is_ok());
    assert!(named_runs(&zeros(&[3, 8, 8], DType::F32), &zeros(&[], DType::U32)).is_ok());
    let error = named_runs(
        &zeros(&[2, 4, 3, 8, 8], DType::F32),
        &zeros(&[2, 5], DType::U32),
    )
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("dims 0..2 are [2, 5] but *B = [2, 4] (bound by `images` dims 0..2)"),
        "{error}"
    );
}

#[contract(x: f32[N, C], padded: f32[N + 1, 2 * C], pooled: f32[H / 2], window: f32[L - 1], source: f32[H], sequence: f32[L])]
fn expressions(
    x: &Tensor,
    padded: &Tensor,
    pooled: &Tensor,
    window: &Tensor,
    source: &Tensor,
    sequence: &Tensor,
) -> Result<()> {
    let _ = (x, padded, pooled, window, source, sequence);
    Ok(())
}

#[test]
fn dim_expressions() {
    let f = |n: &[usize]| zeros(n, DType::F32);
    assert!(expressions(
        &f(&[2, 3]),
        &f(&[3, 6]),
        &f(&[3]),
        &f(&[4]),
        &f(&[7]),
        &f(&[5])
    )
    .is_ok());
    let error = expressions(
        &f(&[2, 3]),
        &f(&[3, 7]),
        &f(&[4]),
        &f(&[4]),
        &f(&[7]),
        &f(&[5]),
    )
    .unwrap_err();
    let text = error.to_string();
    assert!(text.contains("`padded`: shape [3, 7] does not match [N + 1, 2 * C] = [3, 6]\n    dim 1 is 7 but 2 * C = 6 with C = 3 (bound by `x` dim 1)"), "{text}");
    assert!(text.contains("`pooled`: shape [4] does not match [H / 2] = [3]\n    dim 0 is 4 but H / 2 = 3 with H = 7 (bound by `source` dim 0)"), "{text}");
    // An expression that would go below zero is a violation of its own, never a wrap.
    let error = expressions(
        &f(&[2, 3]),
        &f(&[3, 6]),
        &f(&[3]),
        &f(&[4]),
        &f(&[7]),
        &f(&[0]),
    )
    .unwrap_err();
    let found = ContractError::find_in(&error).unwrap();
    assert_eq!(found.violations()[0].rule(), Rule::DimArithmetic);
    assert!(
        error.to_string().contains(
            "`window`: dim 0 of [L - 1]: `L - 1` goes below zero with L = 0 (bound by \
             `sequence` dim 0)"
        ),
        "{error}"
    );
}

#[contract(queries: f32[T, D], keys: f32[P, D], T <= P, D % 8 == 0)]
fn relations(queries: &Tensor, keys: &Tensor) -> Result<()> {
    let _ = (queries, keys);
    Ok(())
}

#[test]
fn relations_between_dims() {
    assert!(relations(&zeros(&[3, 16], DType::F32), &zeros(&[5, 16], DType::F32)).is_ok());
    let error = relations(&zeros(&[6, 12], DType::F32), &zeros(&[5, 12], DType::F32)).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("`T <= P`: does not hold with T = 6 (bound by `queries` dim 0), P = 5 (bound by `keys` dim 0)"), "{text}");
    assert!(text.contains("`D % 8 == 0`: does not hold: left side is 4, right side is 0 with D = 12 (bound by `queries` dim 1)"), "{text}");
    let rules: Vec<Rule> = contract_error(&error)
        .violations()
        .iter()
        .map(|v| v.rule())
        .collect();
    assert_eq!(rules, [Rule::Relation, Rule::Relation]);
}

#[contract(loss: f32[], return: f32[])]
fn scalar(loss: &Tensor) -> Result<Tensor> {
    loss.affine(2., 0.)
}

#[test]
fn scalar_shape() {
    let loss = Tensor::new(1.5f32, &Device::Cpu).unwrap();
    assert_eq!(scalar(&loss).unwrap().to_scalar::<f32>().unwrap(), 3.);
    let error = scalar(&zeros(&[1], DType::F32)).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`loss`: shape [1] does not match [] (rank 1, expected rank 0)"),
        "{error}"
    );
}

#[contract(x: f32[N, D], return: f32[D, N])]
fn transpose_wrongly(x: &Tensor) -> Result<Tensor> {
    x.contiguous()
}

#[contract(x: f32[N], return: f32[M], M >= N)]
fn output_binds_a_dim(x: &Tensor, extra: usize) -> Result<Tensor> {
    Tensor::cat(
        &[x.clone(), Tensor::zeros(extra, DType::F32, x.device())?],
        0,
    )?
    .narrow(0, 0, x.dim(0)? + extra - 2)
}

#[test]
fn return_clauses_bind_and_compare_dims() {
    let error = transpose_wrongly(&zeros(&[2, 3], DType::F32)).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`return`: shape [2, 3] does not match [D, N] = [3, 2]"),
        "{error}"
    );
    assert!(output_binds_a_dim(&zeros(&[3], DType::F32), 4).is_ok());
    let error = output_binds_a_dim(&zeros(&[3], DType::F32), 1).unwrap_err();
    assert!(error.to_string().contains("`M >= N`: does not hold with M = 2 (bound by `return` dim 0), N = 3 (bound by `x` dim 0)"), "{error}");
}

#[contract(logits: f32[N, C], target: u32[N] in 0..num_classes "class ids come from the loader's last column")]
fn parameter_bound(logits: &Tensor, target: &Tensor, num_classes: usize) -> Result<()> {
    let _ = (logits, target);
    Ok(())
}

#[contract(x: f32[N] in 0.0..=max)]
fn float_parameter_bound(x: &Tensor, max: f64) -> Result<()> {
    let _ = x;
    Ok(())
}

#[test]
fn parameter_bounds_and_notes() {
    let logits = zeros(&[2, 5], DType::F32);
    let target = Tensor::new(&[1u32, 3], &Device::Cpu).unwrap();
    assert!(parameter_bound(&logits, &target, 4).is_ok());
    let error = parameter_bound(&logits, &target, 3).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        violation.note(),
        Some("class ids come from the loader's last column")
    );
    assert!(
        error
            .to_string()
            .contains("target[1] = 3, expected 0..num_classes with num_classes = 3\n"),
        "{error}"
    );
    assert!(
        violation
            .help()
            .unwrap()
            .contains("must be < num_classes = 3"),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("    note: class ids come from the loader's last column"),
        "{error}"
    );
    let x = Tensor::new(&[0.5f32, 2.0], &Device::Cpu).unwrap();
    assert!(float_parameter_bound(&x, 2.0).is_ok());
    assert_eq!(
        only_violation(&float_parameter_bound(&x, 1.5).unwrap_err()).index(),
        Some(&[1][..])
    );
}

#[contract(x: f32[N], y: f32[N], same_device = false)]
fn any_device(x: &Tensor, y: &Tensor) -> Result<()> {
    let _ = (x, y);
    Ok(())
}

#[test]
fn same_device_option_parses_and_cpu_tensors_pass() {
    assert!(any_device(&zeros(&[1], DType::F32), &zeros(&[1], DType::F32)).is_ok());
}

#[contract(x: f32[N, 784], y: u8[N] in 0..10)]
fn every_violation_in_one_error(x: &Tensor, y: &Tensor) -> Result<()> {
    let _ = (x, y);
    Ok(())
}

#[test]
fn all_violations_of_a_call_come_together() {
    let x = zeros(&[2, 783], DType::F16);
    let y = Tensor::new(&[3u8, 10], &Device::Cpu).unwrap();
    let error = every_violation_in_one_error(&x, &y).unwrap_err();
    let rules: Vec<(&str, Rule)> = contract_error(&error)
        .violations()
        .iter()
        .map(|v| (v.argument(), v.rule()))
        .collect();
    assert_eq!(
        rules,
        [("x", Rule::DType), ("x", Rule::Shape), ("y", Rule::Range)]
    );
}

#[contract(tokens: f32[B, T], shifted: f32[B, T - 1])]
fn next_token(tokens: &Tensor, shifted: &Tensor) -> Result<()> {
    let _ = (tokens, shifted);
    Ok(())
}

#[test]
fn a_dim_expression_below_zero_is_dim_arithmetic() {
    let f = |n: &[usize]| zeros(n, DType::F32);
    assert!(next_token(&f(&[2, 5]), &f(&[2, 4])).is_ok());
    // An empty sequence: `T - 1` has no size; no shape is wrong and no batch differs.
    let error = next_token(&f(&[2, 0]), &f(&[2, 0])).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.rule(), Rule::DimArithmetic);
    assert_eq!(violation.argument(), "shifted");
    let text = error.to_string();
    assert!(
        text.contains(
            "`shifted`: dim 1 of [B, T - 1]: `T - 1` goes below zero with T = 0 (bound by \
             `tokens` dim 1)\n    help: `T - 1` is a size, so it cannot be negative"
        ),
        "{text}"
    );
    assert!(!text.contains("batch sizes differ"), "{text}");
}
