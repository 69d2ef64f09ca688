//! A property test of the dim normal form against integer arithmetic: a dim's value after
//! substitution is the expression's value, "certainly equal" dims have equal values and
//! "certainly different" ones never do, whatever the symbols' sizes.

use candle_contracts_shapes::dim::{Dim, Factor};
use candle_contracts_shapes::verdict::Verdict;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Expr {
    Lit(u64),
    Sym(usize),
    Add(Box<Expr>, Box<Expr>),
    Sub(Box<Expr>, Box<Expr>),
    Mul(Box<Expr>, Box<Expr>),
    Div(Box<Expr>, Box<Expr>),
    Rem(Box<Expr>, Box<Expr>),
}

const NAMES: [&str; 3] = ["N", "M", "T"];

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        (0u64..5).prop_map(Expr::Lit),
        (0usize..3).prop_map(Expr::Sym)
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::Add(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::Sub(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::Mul(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::Div(Box::new(a), Box::new(b))),
            (inner.clone(), inner).prop_map(|(a, b)| Expr::Rem(Box::new(a), Box::new(b))),
        ]
    })
}

fn dim(e: &Expr) -> Dim {
    match e {
        Expr::Lit(n) => Dim::lit(*n),
        Expr::Sym(i) => Dim::symbol(NAMES[*i]),
        Expr::Add(a, b) => dim(a).add(dim(b)),
        Expr::Sub(a, b) => dim(a).sub(dim(b)),
        Expr::Mul(a, b) => dim(a).mul(dim(b)),
        Expr::Div(a, b) => dim(a).div(dim(b)),
        Expr::Rem(a, b) => dim(a).rem(dim(b)),
    }
}

/// The value with floor (Euclidean) division; `None` for a division by zero.
fn eval(e: &Expr, values: &[i128; 3]) -> Option<i128> {
    Some(match e {
        Expr::Lit(n) => i128::from(*n),
        Expr::Sym(i) => values[*i],
        Expr::Add(a, b) => eval(a, values)? + eval(b, values)?,
        Expr::Sub(a, b) => eval(a, values)? - eval(b, values)?,
        Expr::Mul(a, b) => eval(a, values)? * eval(b, values)?,
        Expr::Div(a, b) => eval(a, values)?.checked_div_euclid(eval(b, values)?)?,
        Expr::Rem(a, b) => eval(a, values)?.checked_rem_euclid(eval(b, values)?)?,
    })
}

/// Whether any division inside divides by zero for these values (the dim is then an error at
/// run time, and the normal form may have simplified it away).
fn divides_by_zero(e: &Expr, values: &[i128; 3]) -> bool {
    match e {
        Expr::Lit(_) | Expr::Sym(_) => false,
        Expr::Add(a, b) | Expr::Sub(a, b) | Expr::Mul(a, b) => {
            divides_by_zero(a, values) || divides_by_zero(b, values)
        }
        Expr::Div(a, b) | Expr::Rem(a, b) => {
            eval(b, values) == Some(0) || divides_by_zero(a, values) || divides_by_zero(b, values)
        }
    }
}

fn value(d: &Dim, values: &[i128; 3]) -> Option<i128> {
    d.substitute(&mut |factor| match factor {
        Factor::Symbol(name) => {
            let i = NAMES.iter().position(|n| n == name)?;
            Some(Dim::lit(u64::try_from(values[i]).ok()?))
        }
        _ => None,
    })
    .as_constant()
}

proptest! {
    // About a third of the draws divide by zero somewhere and are rejected: room for them,
    // so the run never aborts on proptest's default limit of 1,024 rejects.
    #![proptest_config(ProptestConfig {
        cases: 2000,
        max_global_rejects: 20_000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn normal_forms_agree_with_arithmetic(a in expr(), b in expr(), n in 1i128..6, m in 1i128..6, t in 1i128..6) {
        let values = [n, m, t];
        prop_assume!(!divides_by_zero(&a, &values) && !divides_by_zero(&b, &values));
        let (da, db) = (dim(&a), dim(&b));
        let (va, vb) = (eval(&a, &values).unwrap(), eval(&b, &values).unwrap());
        // Where it folds: a division or remainder of a negative value is unknown (Rust's
        // truncation and the floor differ there), never another number.
        if !da.is_unknown()
            && let Some(folded) = value(&da, &values)
        {
            prop_assert_eq!(folded, va, "{} at {:?}", da, values);
        }
        match da.compare(&db) {
            Verdict::Equal => prop_assert_eq!(va, vb, "{} and {} at {:?}", da, db, values),
            Verdict::Different(()) => prop_assert_ne!(va, vb, "{} and {} at {:?}", da, db, values),
            Verdict::Possible => {}
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        max_global_rejects: 20_000,
        ..ProptestConfig::default()
    })]

    /// Under the fact `N % M == 0` (llama's heads over key-value heads), the facts' verdicts
    /// hold for every `N` that is a multiple of `M`.
    #[test]
    fn a_multiple_of_a_name_agrees_with_arithmetic(a in expr(), b in expr(), q in 0i128..4, m in 1i128..6, t in 1i128..6) {
        use candle_contracts_shapes::facts::{Cmp, Facts, Relation};
        let values = [q * m, m, t];
        prop_assume!(!divides_by_zero(&a, &values) && !divides_by_zero(&b, &values));
        let facts = Facts::new(&[Relation::new(
            Dim::symbol("N").rem(Dim::symbol("M")),
            Cmp::Eq,
            Dim::lit(0),
        )]);
        let (da, db) = (dim(&a), dim(&b));
        let (va, vb) = (eval(&a, &values).unwrap(), eval(&b, &values).unwrap());
        let simplified = facts.simplify(&da);
        if !simplified.is_unknown()
            && let Some(folded) = value(&simplified, &values)
        {
            prop_assert_eq!(folded, va, "{} at {:?}", simplified, values);
        }
        match facts.compare(&da, &db) {
            Verdict::Equal => prop_assert_eq!(va, vb, "{} and {} at {:?}", da, db, values),
            Verdict::Different(()) => prop_assert_ne!(va, vb, "{} and {} at {:?}", da, db, values),
            Verdict::Possible => {}
        }
    }
}
