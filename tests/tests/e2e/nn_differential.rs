//! `candle_contracts::nn` against PyTorch: replays the seeded cases of
//! `scripts/differential/generate.py` (torch's values and verdicts, recorded in
//! `tests/fixtures/nn_pytorch.json`) and compares verdicts (torch raises, or the docs say the
//! op refuses, ⇔ we return `Err`), dtypes, shapes and values.
//!
//! `NN_DIFFERENTIAL_FIXTURE=path` replays another fixture of the generator instead.

use candle_contracts::nn::{self, LossOptions, Reduction};
use candle_core::{DType, Device, Module, Result, Tensor};
use serde_json::Value as Json;

const FIXTURE: &str = include_str!("../fixtures/nn_pytorch.json");

/// A float of the fixture: a number, or "nan", "inf", "-inf".
fn float(value: &Json) -> f64 {
    match value {
        Json::String(s) if s == "nan" => f64::NAN,
        Json::String(s) if s == "inf" => f64::INFINITY,
        Json::String(s) if s == "-inf" => f64::NEG_INFINITY,
        other => other
            .as_f64()
            .unwrap_or_else(|| panic!("not a number: {other}")),
    }
}

fn integer(value: &Json) -> i64 {
    value
        .as_i64()
        .unwrap_or_else(|| panic!("not an integer: {value}"))
}

/// A tensor of the fixture's `{dtype, shape, data}`; every value is one its dtype holds.
fn tensor(spec: &Json) -> Tensor {
    let shape: Vec<usize> = spec["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let data = spec["data"].as_array().unwrap();
    let cpu = &Device::Cpu;
    let floats = || data.iter().map(float);
    let ints = || data.iter().map(integer);
    match spec["dtype"].as_str().unwrap() {
        "f64" => Tensor::from_vec(floats().collect::<Vec<_>>(), shape, cpu),
        "f32" => Tensor::from_vec(floats().map(|v| v as f32).collect::<Vec<_>>(), shape, cpu),
        "f16" => Tensor::from_vec(
            floats().map(half::f16::from_f64).collect::<Vec<_>>(),
            shape,
            cpu,
        ),
        "bf16" => Tensor::from_vec(
            floats().map(half::bf16::from_f64).collect::<Vec<_>>(),
            shape,
            cpu,
        ),
        "u8" => Tensor::from_vec(ints().map(|v| v as u8).collect::<Vec<_>>(), shape, cpu),
        "u32" => Tensor::from_vec(ints().map(|v| v as u32).collect::<Vec<_>>(), shape, cpu),
        "i64" => Tensor::from_vec(ints().collect::<Vec<_>>(), shape, cpu),
        other => panic!("dtype {other} is not in the generator"),
    }
    .unwrap()
}

fn dim(params: &Json) -> usize {
    params["dim"].as_u64().unwrap() as usize
}

/// Runs one case's op on its inputs.
fn run(case: &Json) -> Result<Tensor> {
    let inputs: Vec<Tensor> = case["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(tensor)
        .collect();
    let params = &case["params"];
    let options = || LossOptions {
        ignore_index: params["ignore_index"].as_i64(),
        reduction: match params["reduction"].as_str().unwrap() {
            "mean" => Reduction::Mean,
            "sum" => Reduction::Sum,
            _ => Reduction::None,
        },
    };
    match case["op"].as_str().unwrap() {
        "cross_entropy" => nn::cross_entropy(&inputs[0], &inputs[1]),
        "nll" => nn::nll(&inputs[0], &inputs[1]),
        "cross_entropy_with" => nn::cross_entropy_with(&inputs[0], &inputs[1], options()),
        "nll_with" => nn::nll_with(&inputs[0], &inputs[1], options()),
        "binary_cross_entropy" => nn::binary_cross_entropy(&inputs[0], &inputs[1]),
        "binary_cross_entropy_with_logit" => {
            nn::binary_cross_entropy_with_logit(&inputs[0], &inputs[1])
        }
        "embedding" => nn::embedding(&inputs[0], &inputs[1]),
        "Embedding::forward" => {
            let table = &inputs[1];
            let hidden = table.dims().last().copied().unwrap_or(0);
            nn::Embedding::new(table.clone(), hidden).forward(&inputs[0])
        }
        "index_select" => nn::index_select(&inputs[0], &inputs[1], dim(params)),
        "gather" => nn::gather(&inputs[0], &inputs[1], dim(params)),
        "scatter_add" => nn::scatter_add(&inputs[0], &inputs[1], &inputs[2], dim(params)),
        "index_add" => nn::index_add(&inputs[0], &inputs[1], &inputs[2], dim(params)),
        "one_hot" => nn::one_hot(
            inputs[0].clone(),
            params["depth"].as_u64().unwrap() as usize,
            params["on_value"].as_f64().unwrap() as f32,
            params["off_value"].as_f64().unwrap() as f32,
        ),
        other => panic!("op {other} is not in the generator"),
    }
}

/// Relative and absolute tolerance for a dtype: a loss reduced in f32 differs from torch's in
/// the last bits; f16 and bf16 round the result.
fn tolerance(dtype: &str) -> f64 {
    match dtype {
        "f64" => 1e-9,
        "f32" => 2e-5,
        "f16" | "bf16" => 1e-2,
        _ => 0.0,
    }
}

/// The tolerance of a case: that of its least precise float, input or result (torch computes
/// part of a mixed-dtype loss in the narrower dtype).
fn case_tolerance(case: &Json) -> f64 {
    let inputs = case["inputs"].as_array().unwrap().iter();
    inputs
        .chain([&case["torch"]["result"]])
        .map(|spec| tolerance(spec["dtype"].as_str().unwrap_or_default()))
        .fold(0.0, f64::max)
}

fn dtype_name(dtype: DType) -> &'static str {
    match dtype {
        DType::U32 | DType::I64 => "i64",
        other => other.as_str(),
    }
}

/// Why `ours` differs from torch's `expected` result, if it does.
fn compare(ours: &Tensor, expected: &Json, tol: f64) -> Option<String> {
    let dtype = expected["dtype"].as_str().unwrap();
    if dtype_name(ours.dtype()) != dtype {
        return Some(format!(
            "dtype {} where torch has {dtype}",
            ours.dtype().as_str()
        ));
    }
    let reference = tensor(expected);
    if ours.dims() != reference.dims() {
        return Some(format!(
            "shape {:?} where torch has {:?}",
            ours.dims(),
            reference.dims()
        ));
    }
    let flat = |t: &Tensor| {
        t.flatten_all()
            .and_then(|t| t.to_dtype(DType::F64))
            .and_then(|t| t.to_vec1::<f64>())
            .unwrap()
    };
    for (i, (a, b)) in flat(ours).iter().zip(flat(&reference)).enumerate() {
        let same = (a.is_nan() && b.is_nan()) || a == &b || (a - b).abs() <= tol * (1.0 + b.abs());
        if !same {
            return Some(format!("element {i} is {a} where torch has {b}"));
        }
    }
    None
}

#[test]
fn guarded_ops_agree_with_pytorch_on_the_recorded_cases() {
    let text = match std::env::var("NN_DIFFERENTIAL_FIXTURE") {
        Ok(path) => std::fs::read_to_string(path).unwrap(),
        Err(_) => FIXTURE.to_owned(),
    };
    let fixture: Json = serde_json::from_str(&text).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    let mut mismatches = Vec::new();
    let (mut accepted, mut refused, mut divergent) = (0, 0, 0);
    for case in cases {
        let id = &case["id"];
        let op = case["op"].as_str().unwrap();
        let expect_ok = case["expect_ok"].as_bool().unwrap();
        divergent += usize::from(case.get("divergence").is_some());
        match (run(case), expect_ok) {
            (Ok(ours), true) => {
                accepted += 1;
                if let Some(why) = compare(&ours, &case["torch"]["result"], case_tolerance(case)) {
                    mismatches.push(format!("case {id} ({op}): {why}"));
                }
            }
            (Err(_), false) => refused += 1,
            (Ok(_), false) => mismatches.push(format!(
                "case {id} ({op}): Ok where torch raises or the docs refuse ({})",
                case.get("divergence")
                    .map_or_else(|| case["torch"]["error"].to_string(), Json::to_string)
            )),
            (Err(error), true) => {
                let first = error.to_string();
                let first = first.lines().next().unwrap_or_default().to_owned();
                mismatches.push(format!(
                    "case {id} ({op}): Err where torch computes: {first}"
                ));
            }
        }
    }
    println!(
        "{} cases from torch {}: {accepted} equal values, {refused} refused by both \
         ({divergent} of the verdicts are documented refusals of what torch computes), {} \
         mismatches",
        cases.len(),
        fixture["torch"],
        mismatches.len()
    );
    assert!(
        cases.len() >= 600,
        "the fixture holds {} cases",
        cases.len()
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
