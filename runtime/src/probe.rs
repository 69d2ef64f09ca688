//! Asking a contracted function's guard from outside, without running the body (`arbitrary!`,
//! with the `proptest` feature): a request on this thread that the guard answers and then stops
//! the call, by unwinding to [`run`] without the panic hook (`resume_unwind`), before the body.
//!
//! Plain data and the thread-local request: the guard fills a [`Finding`], `arbitrary` reads
//! it. While no request is open anywhere, the guard's test is one relaxed atomic load.

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::ContractError;
use crate::rule::BoundValue;
use crate::spec::ContractSpec;

/// What a request asks of a guard.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ask {
    /// The spec of the first guard the call reaches; nothing of the contract is evaluated.
    Spec,
    /// The values from scope, the bounds, the constants, and what the clauses that
    /// [`bound_clauses`] names bind (fields of `self`, paths from given parameters); for this
    /// spec only.
    Scope(&'static ContractSpec),
    /// The verdict of the input check, derived subjects and masks included, in `full` mode
    /// whatever the process's mode; for this spec only.
    Verdict(&'static ContractSpec),
    /// Nothing to answer: the call runs whole, its inputs and its `return` clause checked in
    /// `full` mode whatever the process's mode (`assert_contract!`'s valid draws); for this
    /// spec only.
    Full(&'static ContractSpec),
}

/// What a guard answered.
#[derive(Debug)]
pub(crate) enum Finding {
    /// The answer to [`Ask::Spec`].
    Spec(&'static ContractSpec),
    /// The answer to [`Ask::Scope`].
    Scope(Scope),
    /// The answer to [`Ask::Verdict`].
    Verdict(Result<(), ContractError>),
}

/// A named dim's name seen as a constant in scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Constant {
    /// A plain dim.
    No,
    /// A constant of this value.
    Value(usize),
    /// A constant whose value the probe did not find (negative, or above 2^24).
    Unknown,
}

/// What the guard knows before it reads the drawn tensors.
#[derive(Debug)]
pub(crate) struct Scope {
    /// The values from scope that dims and relations use (`ContractSpec::values`).
    pub values: Vec<BoundValue>,
    /// The value rules' bounds.
    pub bounds: Vec<BoundValue>,
    /// Each named dim's constant, if its name is one.
    pub constants: Vec<Constant>,
    /// Each named dim's size where a bound clause (or a struct contract's field) gave one.
    pub dims: Vec<Option<usize>>,
    /// Each named run's sizes where a bound clause gave them.
    pub runs: Vec<Option<Vec<usize>>>,
    /// The bound clauses' own violations (a receiver that breaks its contract).
    pub violations: Result<(), ContractError>,
}

/// How a probed call ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The guard answered.
    Found(Finding),
    /// The call returned without a guard answering: no contract, an `async fn` (its future is
    /// not polled), or an error from a derived subject's `?`.
    Returned,
    /// The call panicked (its message, if a string).
    Panicked(String),
}

#[derive(Debug, Default)]
struct Request {
    ask: Option<Ask>,
    bound: Vec<bool>,
    finding: Option<Finding>,
}

thread_local! {
    static REQUEST: RefCell<Request> = RefCell::new(Request::default());
}

/// How many requests are open on all threads: zero keeps the guard's test to this load.
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// The payload the guard unwinds with once it answered.
struct Stop;

/// Whether the request open on this thread asks the guard of `spec` (any guard, for
/// [`Ask::Spec`]).
#[inline]
pub(crate) fn asks(spec: &'static ContractSpec) -> Option<Ask> {
    if OPEN.load(Ordering::Relaxed) == 0 {
        return None;
    }
    asks_here(spec)
}

#[cold]
#[inline(never)]
fn asks_here(spec: &'static ContractSpec) -> Option<Ask> {
    REQUEST.with(|request| match request.borrow().ask {
        Some(Ask::Spec) => Some(Ask::Spec),
        Some(ask @ (Ask::Scope(asked) | Ask::Verdict(asked) | Ask::Full(asked)))
            if std::ptr::eq(asked, spec) =>
        {
            Some(ask)
        }
        _ => None,
    })
}

/// Which input clauses [`Ask::Scope`] binds, by index (a clause past the end is not bound).
pub(crate) fn bound_clauses() -> Vec<bool> {
    REQUEST.with(|request| request.borrow().bound.clone())
}

/// Answers the open request and stops the call: unwinds to [`run`] without the panic hook.
#[cold]
pub(crate) fn answer(finding: Finding) -> ! {
    REQUEST.with(|request| {
        let mut request = request.borrow_mut();
        request.ask = None;
        request.finding = Some(finding);
    });
    panic::resume_unwind(Box::new(Stop))
}

/// Runs `call` with `ask` open on this thread (and `bound` for [`Ask::Scope`]), and says how it
/// ended. A request already open (a probe inside a probed call) is restored afterwards.
/// Runs `call` with the guard of `spec` in `full` mode (see [`Ask::Full`]), on this thread
/// only: a `set_mode` of another test, or `CANDLE_CONTRACTS`, does not weaken it.
pub(crate) fn in_full_mode<R>(spec: &'static ContractSpec, call: impl FnOnce() -> R) -> R {
    let outer = REQUEST.with(|request| {
        request.replace(Request {
            ask: Some(Ask::Full(spec)),
            bound: Vec::new(),
            finding: None,
        })
    });
    OPEN.fetch_add(1, Ordering::Relaxed);
    // Restored on unwinding too: the call may panic.
    struct Restore(Option<Request>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OPEN.fetch_sub(1, Ordering::Relaxed);
            if let Some(outer) = self.0.take() {
                REQUEST.with(|request| request.replace(outer));
            }
        }
    }
    let _restore = Restore(Some(outer));
    call()
}

pub(crate) fn run(ask: Ask, bound: Vec<bool>, call: impl FnOnce()) -> Outcome {
    let outer = REQUEST.with(|request| {
        request.replace(Request {
            ask: Some(ask),
            bound,
            finding: None,
        })
    });
    OPEN.fetch_add(1, Ordering::Relaxed);
    let result = panic::catch_unwind(AssertUnwindSafe(call));
    OPEN.fetch_sub(1, Ordering::Relaxed);
    let finding = REQUEST.with(|request| request.replace(outer).finding);
    match (finding, result) {
        (Some(finding), _) => Outcome::Found(finding),
        (None, Ok(())) => Outcome::Returned,
        (None, Err(payload)) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string());
            Outcome::Panicked(message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static SPEC: ContractSpec = ContractSpec {
        function: "f",
        params: &[],
        file: "f.rs",
        line: 1,
        column: 1,
        dims: &[],
        values: &[],
        runs: &[],
        inputs: &[],
        outputs: &[],
        relations: &[],
        same_device: true,
        text: "",
    };

    #[test]
    fn a_request_reaches_only_its_own_thread_and_spec() {
        assert!(asks(&SPEC).is_none());
        let outcome = run(Ask::Verdict(&SPEC), Vec::new(), || {
            assert!(matches!(asks(&SPEC), Some(Ask::Verdict(_))));
            let other = std::thread::spawn(|| asks(&SPEC).is_none());
            assert!(other.join().unwrap());
            answer(Finding::Verdict(Ok(())));
        });
        assert!(matches!(outcome, Outcome::Found(Finding::Verdict(Ok(())))));
        assert!(asks(&SPEC).is_none());
        assert!(matches!(
            run(Ask::Spec, Vec::new(), || {}),
            Outcome::Returned
        ));
    }
}
