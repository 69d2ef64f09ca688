//! What expansions of `#[contract]` and `check!` name, as
//! `::candle_contracts::__private::...`. Not a public API: it changes with the macro crate,
//! which `candle-contracts` pins to its exact version.

use candle_core::Tensor;

pub use crate::error::ContractError;
pub use crate::guard::{Bindings, CallState, DimSlot, RunSlot, check_inputs, check_output};
pub use crate::mode::{Mode, mode};
pub use crate::scan::{device_transfers, force_device_path};
pub use crate::spec::{
    AllowAll, BoundSpec, ClauseSpec, CmpOp, ContractSpec, DTypeSet, DimExprSpec, DimSpec, ExprOp,
    IgnoreSpec, RangeSpec, RelationSpec, SubjectSpec, ValueSpec,
};
pub use crate::value::{BoundValue, IntoBound};

/// Types a tensor clause can name: a tensor, a reference or smart pointer to one, a `Var`, or
/// an `Option` of those (`None` skips the clause for an argument and is a violation for a
/// field).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tensor, so a contract clause cannot check it",
    label = "this clause names a value of type `{Self}`",
    note = "a tensor clause names a `Tensor`, `&Tensor`, `&mut Tensor`, `Option<&Tensor>`, \
            `Option<Tensor>`, a `Var`, or a `Box`, `Rc` or `Arc` of one; a number bounds a \
            range instead, as in `in 0..num_classes`"
)]
pub trait TensorArg {
    /// The tensor, or `None` for an absent optional one.
    fn tensor_arg(&self) -> Option<&Tensor>;
}

impl TensorArg for Tensor {
    #[inline]
    fn tensor_arg(&self) -> Option<&Tensor> {
        Some(self)
    }
}

impl TensorArg for candle_core::Var {
    #[inline]
    fn tensor_arg(&self) -> Option<&Tensor> {
        Some(self.as_tensor())
    }
}

impl<T: TensorArg> TensorArg for Option<T> {
    #[inline]
    fn tensor_arg(&self) -> Option<&Tensor> {
        self.as_ref().and_then(TensorArg::tensor_arg)
    }
}

macro_rules! forward_tensor_arg {
    ($($ty:ty),*) => {$(
        impl<T: TensorArg + ?Sized> TensorArg for $ty {
            #[inline]
            fn tensor_arg(&self) -> Option<&Tensor> {
                (**self).tensor_arg()
            }
        }
    )*};
}
forward_tensor_arg!(&T, &mut T, Box<T>, std::rc::Rc<T>, std::sync::Arc<T>);

/// The value of an integer or float bound.
#[inline]
pub fn bound<T: IntoBound + ?Sized>(value: &T) -> BoundValue {
    value.to_bound()
}

/// Error types a contracted function can return: any `E: From<ContractError>`, which includes
/// `candle_core::Error`, `anyhow::Error` and `Box<dyn Error + Send + Sync>`.
#[diagnostic::on_unimplemented(
    message = "the error type `{Self}` cannot carry a contract violation",
    label = "this function returns errors of type `{Self}`",
    note = "implement `From<candle_contracts::ContractError>` for `{Self}`, or write \
            `on_violation = panic` in the contract"
)]
pub trait FromContractError: Sized {
    /// Converts the violation into this error type.
    fn from_contract_error(error: ContractError) -> Self;
}

impl<E: From<ContractError>> FromContractError for E {
    #[inline]
    fn from_contract_error(error: ContractError) -> Self {
        E::from(error)
    }
}

/// Runs a function's body where its value must be checked (a `return` clause). Through an
/// `FnOnce` bound the closure may return borrows of what it captured, as the body could
/// (`&mut self.weight`, a `&'a mut Tensor` argument); an immediately called closure would be
/// inferred `FnMut` and refuse them.
#[inline(always)]
pub fn run_body<R>(body: impl FnOnce() -> R) -> R {
    body()
}

/// Converts a violation into the function's error type.
#[cold]
pub fn into_error<E: FromContractError>(error: ContractError) -> E {
    E::from_contract_error(error)
}

/// Panics with the violation's message, at the contract's location.
#[cold]
#[track_caller]
pub fn violated(error: ContractError) -> ! {
    panic!("{error}")
}
