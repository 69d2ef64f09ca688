//! End-to-end tests: real candle tensors through contracted functions, asserting messages and
//! `Ok` values. One binary, one module per topic.

mod beyond_ranges;
mod check_macro;
mod common_mistakes;
mod crate_sight;
mod device_path;
mod empty_caches;
mod error_types;
mod field_flags;
mod file_tokens;
mod grammar;
mod help_lines;
mod hygiene;
mod layer_clauses;
mod limits;
mod nn_differential;
mod nn_ops;
mod nn_pytorch_parity;
mod placement;
mod properties;
mod real_models;
mod scope_names;
mod static_attacks;
mod static_file_scope;
mod static_pass;
mod static_real_models;
mod static_unknown_params;
mod struct_contract_cfg;
mod struct_contract_lookup;
mod struct_contracts;
mod twin_macro_a;
mod twin_macro_b;
mod values;

use candle_contracts::{ContractError, Violation};
use candle_core::{DType, Device, Tensor};

/// The `ContractError` inside a candle error.
pub fn contract_error(error: &candle_core::Error) -> &ContractError {
    ContractError::find_in(error).unwrap_or_else(|| panic!("not a contract violation: {error}"))
}

/// The only violation of a failed call.
pub fn only_violation(error: &candle_core::Error) -> &Violation {
    let violations = contract_error(error).violations();
    assert_eq!(violations.len(), 1, "{error}");
    &violations[0]
}

pub fn zeros(shape: &[usize], dtype: DType) -> Tensor {
    Tensor::zeros(shape, dtype, &Device::Cpu).unwrap()
}

/// The panic message of `f`.
pub fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let payload = std::panic::catch_unwind(f).expect_err("expected a panic");
    if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else if let Some(message) = payload.downcast_ref::<&str>() {
        message.to_string()
    } else {
        panic!("panic payload is not a string")
    }
}
