//! A contracted function seen through its type: which parameters `arbitrary!` draws (tensors,
//! optional tensors, sequences of tensors) and which it is given (`k = 3`), how a drawn value is
//! lent to the function for its guard's verdict, and the tuple the strategy yields.
//!
//! `arbitrary!(f)` names `f` by its path, so everything about the signature comes from `f`'s
//! type: [`ContractedFn`] is implemented for every function whose parameters are all
//! [`Param`]s, and [`ContractedMethod`] for every method of a `&self` receiver whose other
//! parameters are.

use std::any::Any;
use std::fmt::Debug;

use candle_core::{DType, Device, Tensor};

/// How `arbitrary!` fills one parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A tensor (`&Tensor`, `Tensor`, `&mut Tensor`): drawn, yielded as a `Tensor`.
    Tensor,
    /// `Option<&Tensor>` or `Option<Tensor>`: drawn, `None` now and then, yielded as an
    /// `Option<Tensor>`.
    Optional,
    /// `&[Tensor]`, `Vec<Tensor>` or `&Vec<Tensor>`: drawn, yielded as a `Vec<Tensor>`.
    Sequence,
    /// A number or `bool`: given as `arbitrary!(f, name = value)`, never drawn; the type's name.
    Given(&'static str),
}

/// A drawn value of one parameter.
#[derive(Debug, Clone)]
pub enum Drawn {
    /// For [`Kind::Tensor`].
    Tensor(Tensor),
    /// For [`Kind::Optional`].
    Optional(Option<Tensor>),
    /// For [`Kind::Sequence`].
    Sequence(Vec<Tensor>),
}

/// What one parameter is filled from in a call.
#[derive(Debug, Clone, Copy)]
pub enum Slot<'a> {
    /// A drawn value.
    Drawn(&'a Drawn),
    /// A given value, as `arbitrary!` received it (an integer literal is an `i32`), and the
    /// parameter's name.
    Given(&'a (dyn Any + Send + Sync), &'static str),
    /// A stand-in where the guard will not read the value: a 0-dim zero tensor, `None`, an
    /// empty sequence, a zero.
    Placeholder,
}

/// A parameter type `arbitrary!` can fill: a tensor it draws, or a number it is given.
#[diagnostic::on_unimplemented(
    message = "`arbitrary!` can neither draw nor be given a parameter of type `{Self}`",
    label = "this parameter's type",
    note = "tensors are drawn (`&Tensor`, `Tensor`, `&mut Tensor`, `Option<&Tensor>`, \
            `Option<Tensor>`, `&[Tensor]`, `Vec<Tensor>`, `&Vec<Tensor>`); numbers and `bool` \
            are given as `arbitrary!(f, name = value)`"
)]
pub trait Param {
    /// How the parameter is filled.
    const KIND: Kind;
    /// What a call holds while the parameter is lent to the function.
    type Held;
    /// The parameter as lent for one call (`&'a Tensor` for a `&Tensor`).
    type Lent<'a>;
    /// Its part of the strategy's value: `(Tensor,)`, `(Option<Tensor>,)`, `(Vec<Tensor>,)`,
    /// or `()` for a given parameter.
    type Out;
    /// What the call holds for `slot`; `Err` says why the slot does not fit (a given value of
    /// the wrong type).
    fn hold(slot: Slot<'_>) -> Result<Self::Held, String>;
    /// The parameter lent from what the call holds.
    fn lend(held: &mut Self::Held) -> Self::Lent<'_>;
    /// The strategy's part of the value, from what was drawn (`None` for a given parameter).
    fn out(drawn: Option<Drawn>) -> Self::Out;
}

/// A 0-dim zero tensor, for a placeholder.
fn placeholder() -> Result<Tensor, String> {
    Tensor::zeros((), DType::F32, &Device::Cpu).map_err(|e| e.to_string())
}

fn mismatch(expected: &str, slot: Slot<'_>) -> String {
    format!("`arbitrary!` filled a {expected} parameter with {slot:?} (an internal mismatch)")
}

fn tensor_of(slot: Slot<'_>) -> Result<Tensor, String> {
    match slot {
        Slot::Drawn(Drawn::Tensor(tensor)) => Ok(tensor.clone()),
        Slot::Placeholder => placeholder(),
        other => Err(mismatch("tensor", other)),
    }
}

fn optional_of(slot: Slot<'_>) -> Result<Option<Tensor>, String> {
    match slot {
        Slot::Drawn(Drawn::Optional(tensor)) => Ok(tensor.clone()),
        Slot::Placeholder => Ok(None),
        other => Err(mismatch("optional tensor", other)),
    }
}

fn sequence_of(slot: Slot<'_>) -> Result<Vec<Tensor>, String> {
    match slot {
        Slot::Drawn(Drawn::Sequence(tensors)) => Ok(tensors.clone()),
        Slot::Placeholder => Ok(Vec::new()),
        other => Err(mismatch("sequence", other)),
    }
}

fn out_tensor(drawn: Option<Drawn>) -> Tensor {
    match drawn {
        Some(Drawn::Tensor(tensor)) => tensor,
        // The plan draws a `Drawn::Tensor` for every `Kind::Tensor`.
        _ => Tensor::zeros((), DType::F32, &Device::Cpu).expect("a CPU scalar is created"),
    }
}

impl Param for &Tensor {
    const KIND: Kind = Kind::Tensor;
    type Held = Tensor;
    type Lent<'a> = &'a Tensor;
    type Out = (Tensor,);
    fn hold(slot: Slot<'_>) -> Result<Tensor, String> {
        tensor_of(slot)
    }
    fn lend(held: &mut Tensor) -> &Tensor {
        held
    }
    fn out(drawn: Option<Drawn>) -> (Tensor,) {
        (out_tensor(drawn),)
    }
}

impl Param for &mut Tensor {
    const KIND: Kind = Kind::Tensor;
    type Held = Tensor;
    type Lent<'a> = &'a mut Tensor;
    type Out = (Tensor,);
    fn hold(slot: Slot<'_>) -> Result<Tensor, String> {
        tensor_of(slot)
    }
    fn lend(held: &mut Tensor) -> &mut Tensor {
        held
    }
    fn out(drawn: Option<Drawn>) -> (Tensor,) {
        (out_tensor(drawn),)
    }
}

impl Param for Tensor {
    const KIND: Kind = Kind::Tensor;
    type Held = Tensor;
    type Lent<'a> = Tensor;
    type Out = (Tensor,);
    fn hold(slot: Slot<'_>) -> Result<Tensor, String> {
        tensor_of(slot)
    }
    fn lend(held: &mut Tensor) -> Tensor {
        held.clone()
    }
    fn out(drawn: Option<Drawn>) -> (Tensor,) {
        (out_tensor(drawn),)
    }
}

impl Param for Option<&Tensor> {
    const KIND: Kind = Kind::Optional;
    type Held = Option<Tensor>;
    type Lent<'a> = Option<&'a Tensor>;
    type Out = (Option<Tensor>,);
    fn hold(slot: Slot<'_>) -> Result<Option<Tensor>, String> {
        optional_of(slot)
    }
    fn lend(held: &mut Option<Tensor>) -> Option<&Tensor> {
        held.as_ref()
    }
    fn out(drawn: Option<Drawn>) -> (Option<Tensor>,) {
        match drawn {
            Some(Drawn::Optional(tensor)) => (tensor,),
            _ => (None,),
        }
    }
}

impl Param for Option<Tensor> {
    const KIND: Kind = Kind::Optional;
    type Held = Option<Tensor>;
    type Lent<'a> = Option<Tensor>;
    type Out = (Option<Tensor>,);
    fn hold(slot: Slot<'_>) -> Result<Option<Tensor>, String> {
        optional_of(slot)
    }
    fn lend(held: &mut Option<Tensor>) -> Option<Tensor> {
        held.clone()
    }
    fn out(drawn: Option<Drawn>) -> (Option<Tensor>,) {
        match drawn {
            Some(Drawn::Optional(tensor)) => (tensor,),
            _ => (None,),
        }
    }
}

fn out_sequence(drawn: Option<Drawn>) -> (Vec<Tensor>,) {
    match drawn {
        Some(Drawn::Sequence(tensors)) => (tensors,),
        _ => (Vec::new(),),
    }
}

impl Param for &[Tensor] {
    const KIND: Kind = Kind::Sequence;
    type Held = Vec<Tensor>;
    type Lent<'a> = &'a [Tensor];
    type Out = (Vec<Tensor>,);
    fn hold(slot: Slot<'_>) -> Result<Vec<Tensor>, String> {
        sequence_of(slot)
    }
    fn lend(held: &mut Vec<Tensor>) -> &[Tensor] {
        held
    }
    fn out(drawn: Option<Drawn>) -> (Vec<Tensor>,) {
        out_sequence(drawn)
    }
}

impl Param for &Vec<Tensor> {
    const KIND: Kind = Kind::Sequence;
    type Held = Vec<Tensor>;
    type Lent<'a> = &'a Vec<Tensor>;
    type Out = (Vec<Tensor>,);
    fn hold(slot: Slot<'_>) -> Result<Vec<Tensor>, String> {
        sequence_of(slot)
    }
    fn lend(held: &mut Vec<Tensor>) -> &Vec<Tensor> {
        held
    }
    fn out(drawn: Option<Drawn>) -> (Vec<Tensor>,) {
        out_sequence(drawn)
    }
}

impl Param for Vec<Tensor> {
    const KIND: Kind = Kind::Sequence;
    type Held = Vec<Tensor>;
    type Lent<'a> = Vec<Tensor>;
    type Out = (Vec<Tensor>,);
    fn hold(slot: Slot<'_>) -> Result<Vec<Tensor>, String> {
        sequence_of(slot)
    }
    fn lend(held: &mut Vec<Tensor>) -> Vec<Tensor> {
        held.clone()
    }
    fn out(drawn: Option<Drawn>) -> (Vec<Tensor>,) {
        out_sequence(drawn)
    }
}

/// A given value as an integer, whatever integer type it was written in.
fn given_int(value: &(dyn Any + Send + Sync)) -> Option<i128> {
    macro_rules! try_int {
        ($($t:ty),*) => {$(
            if let Some(v) = value.downcast_ref::<$t>() {
                return i128::try_from(*v).ok();
            }
        )*};
    }
    try_int!(
        i32, usize, u8, u16, u32, u64, u128, i8, i16, i64, i128, isize
    );
    None
}

/// A given value as a float: a float, or an integer.
fn given_float(value: &(dyn Any + Send + Sync)) -> Option<f64> {
    if let Some(v) = value.downcast_ref::<f64>() {
        return Some(*v);
    }
    if let Some(v) = value.downcast_ref::<f32>() {
        return Some(f64::from(*v));
    }
    given_int(value).map(|v| v as f64)
}

fn wrong_given(name: &str, ty: &str) -> String {
    format!("`{name}` is a `{ty}` parameter: give it a value of that type, e.g. `{name} = 3`")
}

macro_rules! given_int_param {
    ($($t:ty),*) => {$(
        impl Param for $t {
            const KIND: Kind = Kind::Given(stringify!($t));
            type Held = $t;
            type Lent<'a> = $t;
            type Out = ();
            fn hold(slot: Slot<'_>) -> Result<$t, String> {
                match slot {
                    Slot::Given(value, name) => given_int(value)
                        .and_then(|v| <$t>::try_from(v).ok())
                        .ok_or_else(|| {
                            format!(
                                "{}; the value given is not one (or out of its range)",
                                wrong_given(name, stringify!($t))
                            )
                        }),
                    Slot::Placeholder => Ok(0),
                    other => Err(mismatch(stringify!($t), other)),
                }
            }
            fn lend(held: &mut $t) -> $t {
                *held
            }
            fn out(_: Option<Drawn>) {}
        }
    )*};
}
given_int_param!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

macro_rules! given_float_param {
    ($($t:ty),*) => {$(
        impl Param for $t {
            const KIND: Kind = Kind::Given(stringify!($t));
            type Held = $t;
            type Lent<'a> = $t;
            type Out = ();
            fn hold(slot: Slot<'_>) -> Result<$t, String> {
                match slot {
                    Slot::Given(value, name) => given_float(value)
                        .map(|v| v as $t)
                        .ok_or_else(|| wrong_given(name, stringify!($t))),
                    Slot::Placeholder => Ok(0.0),
                    other => Err(mismatch(stringify!($t), other)),
                }
            }
            fn lend(held: &mut $t) -> $t {
                *held
            }
            fn out(_: Option<Drawn>) {}
        }
    )*};
}
given_float_param!(f32, f64);

impl Param for bool {
    const KIND: Kind = Kind::Given("bool");
    type Held = bool;
    type Lent<'a> = bool;
    type Out = ();
    fn hold(slot: Slot<'_>) -> Result<bool, String> {
        match slot {
            Slot::Given(value, name) => value.downcast_ref::<bool>().copied().ok_or_else(|| {
                format!("`{name}` is a `bool` parameter: give it `true` or `false`")
            }),
            Slot::Placeholder => Ok(false),
            other => Err(mismatch("bool", other)),
        }
    }
    fn lend(held: &mut bool) -> bool {
        *held
    }
    fn out(_: Option<Drawn>) {}
}

/// A tuple with one more element: `(A, B)` and `(X,)` give `(A, B, X)`; `()` adds nothing.
pub trait Append<Fragment> {
    /// The longer tuple.
    type Output;
    /// Appends the fragment.
    fn append(self, fragment: Fragment) -> Self::Output;
}

impl<T> Append<()> for T {
    type Output = T;
    fn append(self, (): ()) -> T {
        self
    }
}

macro_rules! append {
    ($($a:ident),*) => {
        impl<$($a,)* X> Append<(X,)> for ($($a,)*) {
            type Output = ($($a,)* X,);
            #[allow(non_snake_case)]
            fn append(self, (x,): (X,)) -> Self::Output {
                let ($($a,)*) = self;
                ($($a,)* x,)
            }
        }
    };
}
append!();
append!(A);
append!(A, B);
append!(A, B, C);
append!(A, B, C, D);
append!(A, B, C, D, E);
append!(A, B, C, D, E, G);
append!(A, B, C, D, E, G, H);
append!(A, B, C, D, E, G, H, I);
append!(A, B, C, D, E, G, H, I, J);
append!(A, B, C, D, E, G, H, I, J, K);
append!(A, B, C, D, E, G, H, I, J, K, L);

/// The strategy's value for a list of parameters `(P1, (P2, (.., ())))`, gathered from what was
/// drawn onto `Acc`: each parameter adds its [`Param::Out`].
pub trait Gather<Acc> {
    /// The tuple of every drawn parameter's value, in order.
    type Value;
    /// Gathers the values, one per parameter in `drawn`.
    fn gather(acc: Acc, drawn: &mut std::vec::IntoIter<Option<Drawn>>) -> Self::Value;
}

impl<Acc> Gather<Acc> for () {
    type Value = Acc;
    fn gather(acc: Acc, _: &mut std::vec::IntoIter<Option<Drawn>>) -> Acc {
        acc
    }
}

impl<Acc, P: Param, Rest> Gather<Acc> for (P, Rest)
where
    Acc: Append<P::Out>,
    Rest: Gather<<Acc as Append<P::Out>>::Output>,
{
    type Value = Rest::Value;
    fn gather(acc: Acc, drawn: &mut std::vec::IntoIter<Option<Drawn>>) -> Self::Value {
        let acc = acc.append(P::out(drawn.next().flatten()));
        Rest::gather(acc, drawn)
    }
}

/// What a contracted function returns, read by `assert_contract!`: a `Result` fails with its
/// error; the other types it takes never fail (the guard of a function that does not return a
/// `Result` panics on a violation, and `assert_contract!` reports the panic).
#[diagnostic::on_unimplemented(
    message = "`assert_contract!` cannot tell whether a call returning `{Self}` failed",
    label = "this function's return type",
    note = "`assert_contract!` takes a function returning a `Result` whose error implements \
            `Display`, a `Tensor`, `Vec<Tensor>`, `Option<Tensor>`, a tuple of two or three \
            tensors, `()`, a number or `bool`"
)]
pub trait Returned {
    /// The error, as its `{:#}` text (anyhow's chain of contexts included); `None` for a
    /// success.
    fn failure(&self) -> Option<String>;
}

impl<T, E: std::fmt::Display> Returned for Result<T, E> {
    fn failure(&self) -> Option<String> {
        self.as_ref().err().map(|error| format!("{error:#}"))
    }
}

macro_rules! never_fails {
    ($($t:ty),*) => {$(
        impl Returned for $t {
            fn failure(&self) -> Option<String> {
                None
            }
        }
    )*};
}
never_fails!(
    (),
    Tensor,
    Vec<Tensor>,
    Option<Tensor>,
    (Tensor, Tensor),
    (Tensor, Tensor, Tensor),
    f32,
    f64,
    usize,
    bool
);

/// A contracted function `arbitrary!` can draw inputs for: every parameter a [`Param`], and a
/// return type that does not borrow from them. `M` is the signature, for inference.
#[diagnostic::on_unimplemented(
    message = "`arbitrary!` cannot draw the inputs of `{Self}`",
    label = "a function whose parameters are tensors, numbers or `bool`",
    note = "a parameter is a tensor (`&Tensor`, `Tensor`, `&mut Tensor`, `Option<&Tensor>`, \
            `Option<Tensor>`, `&[Tensor]`, `Vec<Tensor>`, `&Vec<Tensor>`), drawn, or a number or \
            `bool`, given as `arbitrary!(f, name = value)`; a method's receiver is given as \
            `arbitrary!(Type::method, &receiver)`; a generic function needs its types, as in \
            `arbitrary!(f::<f32>)`"
)]
pub trait ContractedFn<M> {
    /// The tuple of the drawn parameters' values, in order.
    type Value: Debug;
    /// What the function returns.
    type Ret;
    /// How each parameter is filled, in order.
    fn kinds() -> Vec<Kind>;
    /// Calls the function with one slot per parameter and returns what it returns. `Err` when
    /// a slot does not fit its parameter (nothing is called then).
    fn call_with(&self, slots: &[Slot<'_>]) -> Result<Self::Ret, String>;
    /// The strategy's value from what was drawn, one entry per parameter.
    fn value(drawn: Vec<Option<Drawn>>) -> Self::Value;
}

/// A contracted method of a `&self` receiver of type `S` whose inputs `arbitrary!` can draw;
/// see [`ContractedFn`].
#[diagnostic::on_unimplemented(
    message = "`arbitrary!` cannot draw the inputs of the method `{Self}` on a `&{S}`",
    label = "a method of `&self` whose other parameters are tensors, numbers or `bool`",
    note = "with a receiver, `arbitrary!(Type::method, &receiver)` takes a method of `&self`; \
            a parameter is a tensor (`&Tensor`, `Tensor`, `&mut Tensor`, `Option<&Tensor>`, \
            `Option<Tensor>`, `&[Tensor]`, `Vec<Tensor>`, `&Vec<Tensor>`), drawn, or a number or \
            `bool`, given as `name = value`"
)]
pub trait ContractedMethod<S: ?Sized, M> {
    /// The tuple of the drawn parameters' values, in order.
    type Value: Debug;
    /// What the method returns.
    type Ret;
    /// How each parameter but the receiver is filled, in order.
    fn kinds() -> Vec<Kind>;
    /// Calls the method on `receiver` with one slot per other parameter; see
    /// [`ContractedFn::call_with`].
    fn call_with(&self, receiver: &S, slots: &[Slot<'_>]) -> Result<Self::Ret, String>;
    /// The strategy's value from what was drawn, one entry per parameter but the receiver.
    fn value(drawn: Vec<Option<Drawn>>) -> Self::Value;
}

/// `(P1, (P2, (.., ())))`.
macro_rules! nest {
    () => { () };
    ($head:ident $(, $tail:ident)*) => { ($head, nest!($($tail),*)) };
}

fn slot<'a>(slots: &[Slot<'a>], index: usize) -> Slot<'a> {
    slots.get(index).copied().unwrap_or(Slot::Placeholder)
}

macro_rules! contracted {
    ($($p:ident $h:ident $i:tt),*) => {
        impl<Func, Ret, $($p: Param),*> ContractedFn<fn($($p),*) -> Ret> for Func
        where
            Func: Fn($($p),*) -> Ret + for<'a> Fn($($p::Lent<'a>),*) -> Ret,
            nest!($($p),*): Gather<()>,
            <nest!($($p),*) as Gather<()>>::Value: Debug,
        {
            type Value = <nest!($($p),*) as Gather<()>>::Value;
            type Ret = Ret;

            fn kinds() -> Vec<Kind> {
                vec![$($p::KIND),*]
            }

            #[allow(non_snake_case, unused_variables, unused_mut)]
            fn call_with(&self, slots: &[Slot<'_>]) -> Result<Ret, String> {
                $(let mut $h = $p::hold(slot(slots, $i))?;)*
                // As many parameters as the user's function.
                #[allow(clippy::too_many_arguments)]
                fn call<Func, Ret, $($p),*>(f: &Func, $($h: $p),*) -> Ret
                where
                    Func: Fn($($p),*) -> Ret,
                {
                    f($($h),*)
                }
                Ok(call::<Func, Ret, $($p::Lent<'_>),*>(self, $($p::lend(&mut $h)),*))
            }

            fn value(drawn: Vec<Option<Drawn>>) -> Self::Value {
                <nest!($($p),*) as Gather<()>>::gather((), &mut drawn.into_iter())
            }
        }

        impl<Func, Ret, Recv: ?Sized, $($p: Param),*> ContractedMethod<Recv, fn(&Recv, $($p),*) -> Ret>
            for Func
        where
            Func: Fn(&Recv, $($p),*) -> Ret + for<'r, 'a> Fn(&'r Recv, $($p::Lent<'a>),*) -> Ret,
            nest!($($p),*): Gather<()>,
            <nest!($($p),*) as Gather<()>>::Value: Debug,
        {
            type Value = <nest!($($p),*) as Gather<()>>::Value;
            type Ret = Ret;

            fn kinds() -> Vec<Kind> {
                vec![$($p::KIND),*]
            }

            #[allow(non_snake_case, unused_variables, unused_mut)]
            fn call_with(&self, receiver: &Recv, slots: &[Slot<'_>]) -> Result<Ret, String> {
                $(let mut $h = $p::hold(slot(slots, $i))?;)*
                #[allow(clippy::too_many_arguments)]
                fn call<Func, Ret, Recv: ?Sized, $($p),*>(
                    f: &Func,
                    receiver: &Recv,
                    $($h: $p),*
                ) -> Ret
                where
                    Func: Fn(&Recv, $($p),*) -> Ret,
                {
                    f(receiver, $($h),*)
                }
                Ok(call::<Func, Ret, Recv, $($p::Lent<'_>),*>(
                    self,
                    receiver,
                    $($p::lend(&mut $h)),*
                ))
            }

            fn value(drawn: Vec<Option<Drawn>>) -> Self::Value {
                <nest!($($p),*) as Gather<()>>::gather((), &mut drawn.into_iter())
            }
        }
    };
}
contracted!();
contracted!(P0 h0 0);
contracted!(P0 h0 0, P1 h1 1);
contracted!(P0 h0 0, P1 h1 1, P2 h2 2);
contracted!(P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3);
contracted!(P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4);
contracted!(P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5);
contracted!(P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6);
contracted!(P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7);
contracted!(P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8);
contracted!(
    P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9
);
