//! What expansions of `#[contract]` and `check!` name, as
//! `::candle_contracts::__private::...`. Not a public API: it changes with the macro crate,
//! which `candle-contracts` pins to its exact version.

use candle_core::Tensor;

pub use crate::error::ContractError;
pub use crate::guard::{ClauseArg, Guard, Inputs};
pub use crate::rule::{BoundValue, IntoBound};
#[doc(hidden)]
pub use crate::scan::range_passes;
pub use crate::scan::{device_transfers, force_device_path};
pub use crate::spec::{
    AllowAll, BoundSpec, ClauseSpec, CmpOp, ConstantProbe, ContractSpec, DTypeSet, DimExprSpec,
    DimSpec, ExprOp, IgnoreSpec, MaskSpec, RangeSpec, RelationSpec, Side, Subject, TextSpan,
    ValueSpec,
};

/// What `arbitrary!` expands to (the `proptest` feature).
#[cfg(feature = "proptest")]
pub mod arbitrary {
    pub use crate::arbitrary::{
        Append, Arbitrary, ArbitraryTree, ContractedFn, ContractedMethod, Drawn, Gather, Kind,
        Param, Returned, Settings, Slot, assert_function, assert_method, function, method,
    };
}

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

/// A value from scope in a shape's dim (`f32[N, {cfg.hidden_size}]`), as the guard takes it.
pub fn dim_value<T: IntoDim + ?Sized>(value: &T) -> BoundValue {
    value.to_dim()
}

/// What a braced dim may be: a `usize` (a `NonZeroUsize`, a reference to one), as candle's
/// dims are; an `Option` of one that is `None` skips what needs the dim.
#[diagnostic::on_unimplemented(
    message = "a braced dim is a `usize`, not `{Self}`",
    label = "this dim's value has type `{Self}`",
    note = "dims are candle's `usize` sizes: give the value that type, or convert it where it \
            is written, e.g. `{{n as usize}}` for a value known to be non-negative"
)]
pub trait IntoDim {
    /// The value as the guard takes it.
    fn to_dim(&self) -> BoundValue;
}

impl IntoDim for usize {
    fn to_dim(&self) -> BoundValue {
        BoundValue::Int(*self as i128)
    }
}

impl<T: IntoDim> IntoDim for Option<T> {
    fn to_dim(&self) -> BoundValue {
        self.as_ref().map_or(BoundValue::Absent, IntoDim::to_dim)
    }
}

impl IntoDim for std::num::NonZeroUsize {
    fn to_dim(&self) -> BoundValue {
        BoundValue::Int(self.get() as i128)
    }
}

// References to those, listed, not every `&T`: rustc then names the user's own type at the
// user's braces (`&str`, not `str`).
impl IntoDim for &usize {
    fn to_dim(&self) -> BoundValue {
        (**self).to_dim()
    }
}

impl IntoDim for &&usize {
    fn to_dim(&self) -> BoundValue {
        (***self).to_dim()
    }
}

impl<T: IntoDim> IntoDim for &Option<T> {
    fn to_dim(&self) -> BoundValue {
        (**self).to_dim()
    }
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

/// The error of a method's contract, naming the method's type `T` (`Self`) in its message.
#[cold]
pub fn in_method<T: ?Sized>(error: ContractError) -> ContractError {
    error.in_type(::core::any::type_name::<T>())
}

/// Panics with the violation's message, at the contract's location.
#[cold]
#[track_caller]
pub fn violated(error: ContractError) -> ! {
    panic!("{error}")
}

/// One tensor-like value as a clause's argument.
#[inline]
pub fn one<T: TensorArg + ?Sized>(value: &T) -> ClauseArg<'_> {
    ClauseArg::One(value.tensor_arg())
}

/// Every element of a sequence as a clause's argument.
#[inline]
pub fn many<S: Elements + ?Sized>(sequence: &S) -> ClauseArg<'_>
where
    S::Item: TensorArg,
{
    ClauseArg::Many(
        sequence
            .elements()
            .iter()
            .map(TensorArg::tensor_arg)
            .collect(),
    )
}

/// What a path with optional (`?`), index (`[i]`) or every-element (`[..]`) steps reached,
/// held in a local for the duration of the guard.
#[derive(Debug)]
pub enum Held<T> {
    /// The value at the end of the path.
    Value(T),
    /// The values at the end of a path through `[..]`.
    Many(Vec<T>),
    /// An optional step was `None`.
    Skip,
    /// An index step was past the end.
    Missing,
}

impl<T: TensorArg> Held<T> {
    /// The tensors the clause checks.
    #[inline]
    pub fn arg(&self) -> ClauseArg<'_> {
        match self {
            Held::Value(value) => ClauseArg::One(value.tensor_arg()),
            Held::Many(values) => {
                ClauseArg::Many(values.iter().map(TensorArg::tensor_arg).collect())
            }
            Held::Skip => ClauseArg::One(None),
            Held::Missing => ClauseArg::Missing,
        }
    }
}

impl<T> Held<T> {
    /// `else P = 0`: the size 0 where an optional step found `None`; otherwise no value (the
    /// clause's tensor binds the dim).
    #[inline]
    pub fn absent_size(&self) -> Option<usize> {
        matches!(self, Held::Skip).then_some(0)
    }
}

/// A candle-nn `Activation`, which `self.act_fn != Swiglu` reads: `Swiglu` is the one variant
/// that changes a shape (it halves the last dim).
#[diagnostic::on_unimplemented(
    message = "`!= Swiglu` states a candle-nn `Activation`, and this is a `{Self}`",
    label = "not a `candle_nn::Activation`",
    note = "`self.act_fn != Swiglu` says an `Activation` field keeps its input's shape"
)]
pub trait ActivationVariant {
    /// Whether the activation is `Swiglu`.
    fn is_swiglu(&self) -> bool;
}

impl ActivationVariant for candle_nn::Activation {
    #[inline]
    fn is_swiglu(&self) -> bool {
        matches!(self, candle_nn::Activation::Swiglu)
    }
}

impl<T: ActivationVariant + ?Sized> ActivationVariant for &T {
    #[inline]
    fn is_swiglu(&self) -> bool {
        (**self).is_swiglu()
    }
}

/// Values a `?` step in a contract path can stand on: an `Option` (`Linear::bias()`'s
/// `Option<&Tensor>`), or a reference to one (a field `Option<Embedding>`).
#[diagnostic::on_unimplemented(
    message = "`?` in a contract path needs an `Option`, and this is a `{Self}`",
    label = "this step is not an `Option`",
    note = "remove the `?`, or write it after a field or method whose value is an `Option`, as \
            in `self.position_embeddings?.embeddings()`"
)]
pub trait OptionalStep {
    /// What the `Option` holds, by reference for a field.
    type Inner;
    /// The held value.
    fn optional_step(self) -> Option<Self::Inner>;
}

impl<T> OptionalStep for Option<T> {
    type Inner = T;
    #[inline]
    fn optional_step(self) -> Option<T> {
        self
    }
}

impl<'a, T> OptionalStep for &'a Option<T> {
    type Inner = &'a T;
    #[inline]
    fn optional_step(self) -> Option<&'a T> {
        self.as_ref()
    }
}

impl<'a, T> OptionalStep for &'a mut Option<T> {
    type Inner = &'a T;
    #[inline]
    fn optional_step(self) -> Option<&'a T> {
        self.as_ref()
    }
}

/// An integer parameter that indexes a contract's path (`cache.kvs[block_idx]`): any of std's
/// integer types, or a reference to one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot index a contract's path",
    label = "not an integer",
    note = "a path like `cache.kvs[block_idx]` takes an integer parameter (`block_idx: usize`)"
)]
pub trait PathIndex {
    /// The position: `None` for a negative one, or one past `usize`.
    fn position(&self) -> Option<usize>;
}

macro_rules! path_index {
    ($($int:ty),*) => {$(
        impl PathIndex for $int {
            #[inline]
            fn position(&self) -> Option<usize> {
                usize::try_from(*self).ok()
            }
        }
    )*};
}

path_index!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize
);

impl<T: PathIndex + ?Sized> PathIndex for &T {
    #[inline]
    fn position(&self) -> Option<usize> {
        (**self).position()
    }
}

impl<T: PathIndex + ?Sized> PathIndex for &mut T {
    #[inline]
    fn position(&self) -> Option<usize> {
        (**self).position()
    }
}

/// Sequences a contract can index (`self.layers[0]`, `self.layers[..]`) or check element by
/// element (`items: [f32[E]; N]`): slices, arrays, `Vec`s, and references or boxes of them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a sequence, so a contract cannot index it or check its elements",
    label = "this value is not a slice, array or `Vec`",
    note = "`[i]`, `[..]` and `[spec; N]` stand on a `&[Tensor]`, `&[&Tensor]`, `Vec<Tensor>`, \
            `&Vec<Tensor>` or an array, or a field or method of such a type"
)]
pub trait Elements {
    /// The element type.
    type Item;
    /// The elements as a slice.
    fn elements(&self) -> &[Self::Item];
}

impl<T> Elements for [T] {
    type Item = T;
    #[inline]
    fn elements(&self) -> &[T] {
        self
    }
}

impl<T, const N: usize> Elements for [T; N] {
    type Item = T;
    #[inline]
    fn elements(&self) -> &[T] {
        self
    }
}

impl<T> Elements for Vec<T> {
    type Item = T;
    #[inline]
    fn elements(&self) -> &[T] {
        self
    }
}

macro_rules! forward_elements {
    ($($ty:ty),*) => {$(
        impl<S: Elements + ?Sized> Elements for $ty {
            type Item = S::Item;
            #[inline]
            fn elements(&self) -> &[S::Item] {
                (**self).elements()
            }
        }
    )*};
}
forward_elements!(&S, &mut S, Box<S>, std::rc::Rc<S>, std::sync::Arc<S>);

/// Implemented by `#[contract(...)]` on a struct: its methods' guards must carry its clauses,
/// which only a `#[contract] impl` in the struct's file gives them.
pub trait StructContract {}

/// The type a contracted method of a struct without a struct contract probes to.
#[derive(Debug)]
pub struct NoStructContract;

/// The type a contracted method probes to when its struct has a contract that the method did
/// not take: rustc's "expected `NoStructContract`, found `StructContractNotTaken_...`" then
/// says what to do.
#[derive(Debug)]
#[allow(non_camel_case_types)]
pub struct StructContractNotTaken_PutContractOnTheImplInTheStructsFile;

/// Autoref probe: `(&StructProbe::<Self>::NEW).kind()` is [`ViaStructContract::kind`] where
/// `Self: StructContract` and [`ViaNoStructContract::kind`] otherwise.
#[derive(Debug)]
pub struct StructProbe<T: ?Sized>(core::marker::PhantomData<T>);

impl<T: ?Sized> StructProbe<T> {
    /// The probe.
    pub const NEW: Self = StructProbe(core::marker::PhantomData);
}

/// The probe's answer for a struct with a contract.
pub trait ViaStructContract {
    /// The answer.
    fn kind(&self) -> StructContractNotTaken_PutContractOnTheImplInTheStructsFile {
        StructContractNotTaken_PutContractOnTheImplInTheStructsFile
    }
}

impl<T: StructContract + ?Sized> ViaStructContract for StructProbe<T> {}

/// The probe's answer for any other type.
pub trait ViaNoStructContract {
    /// The answer.
    fn kind(&self) -> NoStructContract {
        NoStructContract
    }
}

impl<T: ?Sized> ViaNoStructContract for &StructProbe<T> {}
