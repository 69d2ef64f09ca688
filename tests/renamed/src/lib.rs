//! A crate that depends on `candle-contracts` as `cc`: `crate = ::cc` tells the macros where the
//! runtime is, and a re-export (`reexport::contracts`) works the same way.

use candle_core::{Result, Tensor};
use cc::{check, contract};

/// The runtime under a path of this crate, as a library that re-exports it would offer.
pub mod reexport {
    pub use cc as contracts;
}

/// Adds `x` and `y`; `crate` as a path.
///
/// # Errors
/// When the contract is violated, or candle's `add` fails.
#[contract(crate = ::cc, x: f32[N], y: f32[N], return: f32[N])]
pub fn add(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x.add(y)
}

/// Sums `x` over its last dim; `crate` in serde's spelling, through a re-export.
///
/// # Errors
/// When the contract is violated, or candle's `sum` fails.
#[contract(crate = "crate::reexport::contracts", x: f32[B, D] finite)]
pub fn sum_last(x: &Tensor) -> Result<Tensor> {
    x.sum(1)
}

/// Means of `x` over its last dim, with no `# Errors` section on purpose.
// Clippy must still lint a function with a return clause: with the macro's own braces around
// the body it took the function for generated code and the expectation went unfulfilled.
#[expect(
    clippy::missing_errors_doc,
    reason = "pins that clippy lints a contracted function"
)]
#[contract(crate = ::cc, x: f32[B, D], return: f32[B])]
pub fn mean_last(x: &Tensor) -> Result<Tensor> {
    x.mean(1)
}

/// Scales `x`; two joined contracts, each naming the crate as a user of a renamed crate writes
/// them.
///
/// # Errors
/// When the contract is violated, or candle's `affine` fails.
#[contract(crate = ::cc, x: f32[N])]
#[cc::contract(crate = ::cc, return: f32[N])]
pub fn twice(x: &Tensor) -> Result<Tensor> {
    x.affine(2.0, 0.0)
}

/// `check!` with the option.
///
/// # Errors
/// When `x` is not an `u32` vector.
pub fn checked(x: &Tensor) -> std::result::Result<(), cc::ContractError> {
    check!(crate = ::cc, x: u32[N])
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device, Tensor};

    fn zeros(shape: &[usize], dtype: DType) -> Tensor {
        Tensor::zeros(shape, dtype, &Device::Cpu).unwrap()
    }

    #[test]
    fn a_renamed_dependency_guards_with_crate_as_a_path() {
        let out = super::add(&zeros(&[2], DType::F32), &zeros(&[2], DType::F32)).unwrap();
        assert_eq!(out.to_vec1::<f32>().unwrap(), [0., 0.]);
        let error = super::add(&zeros(&[2], DType::F32), &zeros(&[3], DType::F32)).unwrap_err();
        let violation = &cc::ContractError::find_in(&error).unwrap().violations()[0];
        assert_eq!(
            (violation.argument(), violation.rule()),
            ("y", cc::Rule::Shape)
        );
    }

    #[test]
    fn a_reexport_guards_with_crate_as_a_string() {
        let out = super::sum_last(&zeros(&[2, 3], DType::F32)).unwrap();
        assert_eq!(out.dims(), [2]);
        let nan = Tensor::new(&[[f32::NAN]], &Device::Cpu).unwrap();
        let error = super::sum_last(&nan).unwrap_err();
        let violation = &cc::ContractError::find_in(&error).unwrap().violations()[0];
        assert_eq!(violation.rule(), cc::Rule::Finite);
    }

    #[test]
    fn check_takes_the_option_too() {
        super::checked(&zeros(&[4], DType::U32)).unwrap();
        let error = super::checked(&zeros(&[4], DType::F32)).unwrap_err();
        assert_eq!(error.violations()[0].rule(), cc::Rule::DType);
    }
}
