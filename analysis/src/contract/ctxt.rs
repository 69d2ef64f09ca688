//! The errors of one expansion, gathered so every mistake comes out in one compile.

use std::cell::RefCell;
use std::fmt::Display;

use super::syntax::SpanRange;

/// Collects errors from every phase. Its owner must take them with [`Ctxt::check`]: a `Ctxt`
/// dropped with its errors never taken panics, which a proc macro reports as a compile error,
/// so a forgotten check can never let a wrong contract expand silently.
pub struct Ctxt {
    /// `None` once taken.
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl std::fmt::Debug for Ctxt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctxt").finish_non_exhaustive()
    }
}

impl Default for Ctxt {
    fn default() -> Self {
        Self::new()
    }
}

impl Ctxt {
    /// An accumulator with no error yet.
    pub fn new() -> Self {
        Self {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    pub fn push(&self, error: syn::Error) {
        if let Some(errors) = self.errors.borrow_mut().as_mut() {
            errors.push(error);
        }
    }

    /// An error at one token (a `Span`) or over several (a `SpanRange`).
    pub fn error_at(&self, span: impl Into<SpanRange>, message: impl Display) {
        self.push(span.into().error(message));
    }

    /// Whether any error is in, for a phase that only makes sense on a valid contract.
    pub fn has_errors(&self) -> bool {
        self.errors.borrow().as_ref().is_some_and(|e| !e.is_empty())
    }

    /// Takes the errors: `Err` with all of them combined into one, in the order reported.
    pub fn check(self) -> Result<(), syn::Error> {
        let errors = self.errors.borrow_mut().take().unwrap_or_default();
        let mut errors = errors.into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for error in errors {
            combined.combine(error);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        // Not while unwinding already: that would abort and hide the first panic.
        if !std::thread::panicking() && self.errors.get_mut().is_some() {
            panic!("candle-contracts-macros: a `Ctxt` was dropped without checking its errors");
        }
    }
}
