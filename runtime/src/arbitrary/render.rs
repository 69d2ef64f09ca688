//! A draw in the contract's terms, for `assert_contract!`'s message: its named dims
//! (`N = 2, D = 1`), runs (`*B = [2, 3]`), and each drawn tensor's dtype, shape and, when small,
//! values.

use std::fmt::Write;

use candle_core::{DType, Tensor};

use super::layout::Layout;
use super::params::Drawn;
use crate::spec::ContractSpec;

/// Tensors with at most this many elements have their values printed.
const SHOWN_ELEMENTS: usize = 16;

/// `N = 2, D = 1, *B = [2, 3]`: the draw's named dims and runs, in the contract's order
/// (`no named dims` where it has none).
pub(crate) fn dims(spec: &ContractSpec, layout: &Layout) -> String {
    let mut parts: Vec<String> = spec
        .dims
        .iter()
        .zip(&layout.dims)
        .map(|(name, size)| format!("{name} = {size}"))
        .collect();
    parts.extend(
        spec.runs
            .iter()
            .zip(&layout.runs)
            .map(|(name, sizes)| format!("*{name} = {sizes:?}")),
    );
    if parts.is_empty() {
        "no named dims".to_string()
    } else {
        parts.join(", ")
    }
}

/// `f32[2, 3] = [0, 1.5, ...]`: a tensor's dtype, shape and, when small, values (row-major).
pub(crate) fn tensor(tensor: &Tensor) -> String {
    let mut text = format!("{}{:?}", tensor.dtype().as_str(), tensor.dims());
    if tensor.elem_count() <= SHOWN_ELEMENTS {
        let integer = matches!(
            tensor.dtype(),
            DType::U8 | DType::U32 | DType::I16 | DType::I32 | DType::I64
        );
        let flat = tensor.flatten_all();
        let values: candle_core::Result<Vec<String>> = if integer {
            flat.and_then(|t| t.to_dtype(DType::I64))
                .and_then(|t| t.to_vec1::<i64>())
                .map(|v| v.iter().map(i64::to_string).collect())
        } else {
            flat.and_then(|t| t.to_dtype(DType::F64))
                .and_then(|t| t.to_vec1::<f64>())
                .map(|v| v.iter().map(f64::to_string).collect())
        };
        match values {
            Ok(values) => {
                let _ = write!(text, " = [{}]", values.join(", "));
            }
            Err(error) => {
                let _ = write!(text, " (values unreadable: {error})");
            }
        }
    }
    text
}

/// One line per drawn parameter: `  logits: f32[2, 3] = [...]`.
pub(crate) fn values(spec: &ContractSpec, values: &[Option<Drawn>]) -> String {
    let mut text = String::new();
    for (name, value) in spec.params.iter().zip(values) {
        let shown = match value {
            Some(Drawn::Tensor(t)) | Some(Drawn::Optional(Some(t))) => tensor(t),
            Some(Drawn::Optional(None)) => "None".to_string(),
            Some(Drawn::Sequence(tensors)) => {
                let items: Vec<String> = tensors.iter().map(tensor).collect();
                format!("[{}]", items.join(", "))
            }
            None => continue,
        };
        let _ = writeln!(text, "  {name}: {shown}");
    }
    text
}
