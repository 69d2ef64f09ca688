//! The tensors in scope while a contracted function's body is read: what the macro keeps as it
//! walks `let`s, and the function's `return` clause.

use std::collections::BTreeMap;

use crate::contract::Contract;
use crate::rules::{Argument, Mismatch, suggest};
use crate::shape::TensorType;
use crate::verdict::Verdict;

/// Named tensors (parameters, `self.field`s, `let` bindings) and the type the function must
/// return. A name that is not bound is an unknown tensor.
///
/// The dim names in these types are the function's own contract's: rigid symbols, equal only
/// to themselves (and to what their normal form makes them equal to).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Env {
    function: String,
    tensors: BTreeMap<String, TensorType>,
    returns: Option<TensorType>,
}

impl Env {
    /// An environment for `function` with nothing bound and no return clause.
    pub fn new(function: impl Into<String>) -> Env {
        Env {
            function: function.into(),
            ..Env::default()
        }
    }

    /// The environment at the start of `function`'s body: each clause's subject bound to its
    /// type (`xs`, `self.weight`), and the `return` clause kept for [`Env::check_return`].
    pub fn for_function(function: impl Into<String>, contract: &Contract) -> Env {
        let mut env = Env::new(function);
        for clause in &contract.clauses {
            match clause.subject.as_str() {
                "return" => env.returns = Some(clause.spec.clone()),
                subject => env.bind(subject, clause.spec.clone()),
            }
        }
        env
    }

    /// The function's name, as messages about its return clause use it.
    pub fn function(&self) -> &str {
        &self.function
    }

    /// Binds `name` (a `let`, which shadows an earlier binding of the name).
    pub fn bind(&mut self, name: impl Into<String>, tensor: TensorType) {
        self.tensors.insert(name.into(), tensor);
    }

    /// Forgets `name` (a binding the walk can no longer follow, such as one assigned in a loop).
    pub fn forget(&mut self, name: &str) {
        self.tensors.remove(name);
    }

    /// The type bound to `name`; unknown if none is.
    pub fn get(&self, name: &str) -> TensorType {
        self.tensors
            .get(name)
            .cloned()
            .unwrap_or_else(TensorType::unknown)
    }

    /// The `return` clause's type, if the contract has one.
    pub fn returns(&self) -> Option<&TensorType> {
        self.returns.as_ref()
    }

    /// The environment after two branches (`if`/`else`, `match` arms): names bound in both
    /// keep what the two agree on ([`TensorType::join`]); names bound in one only are unknown.
    pub fn merge(&self, other: &Env) -> Env {
        let tensors = self
            .tensors
            .iter()
            .filter_map(|(name, tensor)| {
                let theirs = other.tensors.get(name)?;
                Some((name.clone(), tensor.join(theirs)))
            })
            .collect();
        Env {
            function: self.function.clone(),
            tensors,
            returns: self.returns.clone(),
        }
    }

    /// Checks the value the body yields (its tail expression, or a `return`) against the
    /// `return` clause: a mismatch only when it is certain.
    pub fn check_return(&self, tail: &TensorType) -> Result<(), Box<Mismatch>> {
        let Some(expected) = &self.returns else {
            return Ok(());
        };
        match tail.compare(expected) {
            Verdict::Different(reason) => Err(Box::new(Mismatch {
                op: self.function.clone(),
                argument: Argument::Return,
                expected: format!("return: {expected}"),
                found: tail.to_string(),
                help: suggest(tail, expected, &reason),
                reason,
            })),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_tensor_type;

    fn t(text: &str) -> TensorType {
        parse_tensor_type(text).unwrap()
    }

    #[test]
    fn a_keepdim_sum_is_not_the_declared_return() {
        let contract = Contract::parse("x: f32[B, D], return: f32[B]").unwrap();
        let env = Env::for_function("total", &contract);
        assert_eq!(env.get("x"), t("f32[B, D]"));
        assert!(env.get("y").is_unknown());
        let tail = crate::rules::method("sum_keepdim", &env.get("x"), &[crate::rules::Arg::int(1)])
            .unwrap();
        let mismatch = env.check_return(&tail).unwrap_err();
        assert_eq!(
            mismatch.message("x.sum_keepdim(1)"),
            "`total` returns `return: f32[B]`, but `x.sum_keepdim(1)` is `f32[B, 1]` here"
        );
        assert_eq!(mismatch.note(), "rank 2 given, rank 1 expected");
        assert_eq!(
            mismatch.help_for_result("x.sum_keepdim(1)").as_deref(),
            Some("squeeze the last dim: `x.sum_keepdim(1)?.squeeze(1)`")
        );
        assert_eq!(
            mismatch.help("sums").as_deref(),
            Some("squeeze the last dim: `sums.squeeze(1)?`")
        );
        assert!(env.check_return(&t("f32[B]")).is_ok());
        assert!(env.check_return(&t("f32[M]")).is_ok());
        assert!(env.check_return(&TensorType::unknown()).is_ok());
        assert!(Env::new("f").check_return(&t("f32[3]")).is_ok());
    }

    #[test]
    fn branches_keep_what_they_agree_on() {
        let mut a = Env::new("f");
        let mut b = Env::new("f");
        a.bind("h", t("f32[B, 128]"));
        b.bind("h", t("f32[B, 64]"));
        a.bind("only_a", t("f32[B]"));
        b.bind("g", t("f64[B]"));
        a.bind("g", t("f32[B]"));
        let merged = a.merge(&b);
        assert_eq!(merged.get("h").to_string(), "f32[B, _]");
        assert_eq!(merged.get("g").to_string(), "f32 | f64 [B]");
        assert!(merged.get("only_a").is_unknown());
        let mut rank = Env::new("f");
        rank.bind("h", t("f32[B]"));
        assert_eq!(a.merge(&rank).get("h").to_string(), "f32[..]");
    }
}
