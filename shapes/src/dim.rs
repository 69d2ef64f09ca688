//! Dims: literals, named symbols and integer expressions over them, kept in a normal form so
//! that equal expressions compare equal and `N` vs `N + 1` is certainly different.

use std::collections::BTreeMap;
use std::fmt;

use crate::verdict::Verdict;

/// What a [`Decider`] is asked of two dims `a`, `b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ask {
    /// `a == b`.
    Equal,
    /// `a <= b`.
    AtMost,
}

/// Decides a relation of two dims that their normal form leaves open, or says nothing.
pub(crate) type Decider = std::rc::Rc<dyn Fn(&Dim, Ask, &Dim) -> Option<bool>>;

thread_local! {
    /// The deciders in force, innermost last: the facts of the function being checked (set
    /// by the layer above, `facts::Facts::under`, so that this module needs nothing above it).
    static DECIDERS: std::cell::RefCell<Vec<Decider>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Set while a decider runs: it compares dims of its own, by their normal form only.
    static DECIDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `body` with `decide` settling the equalities the normal form leaves open.
pub(crate) fn with_decider<R>(decide: Decider, body: impl FnOnce() -> R) -> R {
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            DECIDERS.with(|d| d.borrow_mut().pop());
        }
    }
    DECIDERS.with(|d| d.borrow_mut().push(decide));
    let _pop = Pop;
    body()
}

/// What the decider in force says of `a ask b`, if any.
fn decide_open(a: &Dim, ask: Ask, b: &Dim) -> Option<bool> {
    if a.is_unknown() || b.is_unknown() || DECIDING.with(std::cell::Cell::get) {
        return None;
    }
    let decide = DECIDERS.with(|d| d.borrow().last().cloned())?;
    struct Done;
    impl Drop for Done {
        fn drop(&mut self) {
            DECIDING.with(|d| d.set(false));
        }
    }
    DECIDING.with(|d| d.set(true));
    let _done = Done;
    decide(a, ask, b)
}

/// One factor of a monomial.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Factor {
    /// A named dim (`N`), or a constant's name the checker does not know the value of.
    Symbol(String),
    /// A braced expression (`{cfg.hidden_size}`), by its text: equal texts, equal values.
    Braced(String),
    /// A floor division that does not fold (`H / 2`), by its normal-form operands.
    Div(Box<Dim>, Box<Dim>),
    /// A remainder that does not fold (`N % 8`).
    Rem(Box<Dim>, Box<Dim>),
}

/// A product of factors, sorted; the empty product is the constant term.
type Monomial = Vec<Factor>;

/// A polynomial with integer coefficients over [`Factor`]s: the normal form of a known dim.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Poly {
    terms: BTreeMap<Monomial, i128>,
}

/// The size of one dim: an integer expression over named dims, or unknown.
///
/// Known dims are kept in a normal form (linear terms collected with integer coefficients,
/// products of symbols as monomials, `/` and `%` that do not fold as opaque factors), so
/// `N + 1` and `1 + N` are the same value and `(N + 1) - N` is the constant 1.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dim {
    /// A size the checker can name.
    Known(Poly),
    /// A size the checker knows nothing about (`_`, computed from values, an overflow).
    #[default]
    Unknown,
}

impl Dim {
    /// The literal `n`.
    pub fn lit(n: u64) -> Dim {
        Dim::constant(i128::from(n))
    }

    /// The named dim `name` (`N`).
    pub fn symbol(name: impl Into<String>) -> Dim {
        Dim::factor(Factor::Symbol(name.into()))
    }

    /// A braced expression, named by its text with whitespace removed (`{cfg.hidden}`).
    pub fn braced(text: &str) -> Dim {
        let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        Dim::factor(Factor::Braced(text))
    }

    /// A size nothing is known about.
    pub fn unknown() -> Dim {
        Dim::Unknown
    }

    fn constant(c: i128) -> Dim {
        let mut terms = BTreeMap::new();
        if c != 0 {
            terms.insert(Vec::new(), c);
        }
        Dim::Known(Poly { terms })
    }

    fn factor(factor: Factor) -> Dim {
        Dim::Known(Poly {
            terms: BTreeMap::from([(vec![factor], 1)]),
        })
    }

    /// Whether nothing is known about the size.
    pub fn is_unknown(&self) -> bool {
        matches!(self, Dim::Unknown)
    }

    /// The value of a constant dim (`3`, or `N + 3 - N`); `None` for anything else, a negative
    /// constant included.
    pub fn as_literal(&self) -> Option<u64> {
        self.as_constant().and_then(|c| u64::try_from(c).ok())
    }

    /// The value of a constant dim, negative ones included (`N - N - 1` is -1).
    pub fn as_constant(&self) -> Option<i128> {
        let Dim::Known(poly) = self else { return None };
        match poly.terms.len() {
            0 => Some(0),
            1 => poly.terms.get(&Vec::new()).copied(),
            _ => None,
        }
    }

    /// The name of a dim that is one named symbol (`N`), nothing added or scaled.
    pub fn as_symbol(&self) -> Option<&str> {
        let Dim::Known(poly) = self else { return None };
        let mut terms = poly.terms.iter();
        match (terms.next(), terms.next()) {
            (Some((monomial, 1)), None) => match monomial.as_slice() {
                [Factor::Symbol(name)] => Some(name),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether the two dims are equal: certainly (same normal form), certainly not (they
    /// differ by a nonzero constant), or possibly (anything else, unknown included).
    pub fn compare(&self, other: &Dim) -> Verdict<()> {
        match self.clone().sub(other.clone()).as_constant() {
            Some(0) => Verdict::Equal,
            Some(_) => Verdict::Different(()),
            None => match decide_open(self, Ask::Equal, other) {
                Some(true) => Verdict::Equal,
                Some(false) => Verdict::Different(()),
                None => Verdict::Possible,
            },
        }
    }

    /// Whether `self <= other` for every size (`Some(true)`): by the form of `other - self`,
    /// or by the facts in force; `Some(false)` where the facts rule it out; `None` otherwise.
    pub fn at_most(&self, other: &Dim) -> Option<bool> {
        if other.clone().sub(self.clone()).certainly_nonnegative() {
            return Some(true);
        }
        decide_open(self, Ask::AtMost, other)
    }

    /// Whether the dim is certainly 1, certainly not 1, or possibly 1.
    pub fn compare_one(&self) -> Verdict<()> {
        self.compare(&Dim::lit(1))
    }

    /// `self + other`.
    #[allow(clippy::should_implement_trait)]
    pub fn add(self, other: Dim) -> Dim {
        self.combine(other, 1)
    }

    /// `self - other` (a size that would go below zero is an error at run time, never here).
    #[allow(clippy::should_implement_trait)]
    pub fn sub(self, other: Dim) -> Dim {
        self.combine(other, -1)
    }

    fn combine(self, other: Dim, sign: i128) -> Dim {
        let (Dim::Known(mut a), Dim::Known(b)) = (self, other) else {
            return Dim::Unknown;
        };
        for (monomial, coefficient) in b.terms {
            let Some(scaled) = coefficient.checked_mul(sign) else {
                return Dim::Unknown;
            };
            let entry = a.terms.entry(monomial).or_insert(0);
            let Some(sum) = entry.checked_add(scaled) else {
                return Dim::Unknown;
            };
            *entry = sum;
        }
        a.terms.retain(|_, c| *c != 0);
        Dim::Known(a)
    }

    /// `self * other`, distributed into monomials.
    #[allow(clippy::should_implement_trait)]
    pub fn mul(self, other: Dim) -> Dim {
        let (Dim::Known(a), Dim::Known(b)) = (self, other) else {
            return Dim::Unknown;
        };
        let mut terms: BTreeMap<Monomial, i128> = BTreeMap::new();
        for (ma, ca) in &a.terms {
            for (mb, cb) in &b.terms {
                let mut monomial: Monomial = ma.iter().chain(mb).cloned().collect();
                monomial.sort();
                let Some(product) = ca.checked_mul(*cb) else {
                    return Dim::Unknown;
                };
                let entry = terms.entry(monomial).or_insert(0);
                let Some(sum) = entry.checked_add(product) else {
                    return Dim::Unknown;
                };
                *entry = sum;
            }
        }
        terms.retain(|_, c| *c != 0);
        Dim::Known(Poly { terms })
    }

    /// `self / other`, rounded down: folded when both are constants or `other` is 1, an
    /// opaque factor otherwise; division by a constant 0 is unknown (an error at run time).
    #[allow(clippy::should_implement_trait)]
    pub fn div(self, other: Dim) -> Dim {
        if let Some(quotient) = self.exact_quotient(&other) {
            return quotient;
        }
        self.opaque(other, i128::checked_div_euclid, Factor::Div, |x| x)
    }

    /// Whether the dim may be negative for some sizes of its symbols (sizes are never
    /// negative): a term with a negative coefficient, or nothing known.
    pub fn may_be_negative(&self) -> bool {
        match self {
            Dim::Known(poly) => poly.terms.values().any(|&c| c < 0),
            Dim::Unknown => true,
        }
    }

    /// `self / n` where it is a whole number for every size of the symbols: every coefficient
    /// of `self` a multiple of `n` (`3 * E` by 3 is `E`, `6` by 3 is `2`); `None` otherwise, and
    /// for `n` 0.
    pub fn divided_exactly(&self, n: u64) -> Option<Dim> {
        let Dim::Known(poly) = self else {
            return None;
        };
        let n = i128::from(n);
        if n == 0 || poly.terms.values().any(|c| c % n != 0) {
            return None;
        }
        let terms = poly
            .terms
            .iter()
            .map(|(monomial, c)| (monomial.clone(), c / n))
            .collect();
        Some(Dim::Known(Poly { terms }))
    }

    /// Whether `self` is `other` times an integer for every size of the symbols (`H * HD` of
    /// `HD`, `B * P + B * T` of `P + T`).
    pub fn is_multiple_of(&self, other: &Dim) -> bool {
        self.exact_quotient(other).is_some()
    }

    /// `self / other` when `other` is one term that divides every term of `self` (`N * T / T`
    /// is `N`, `2 * N / 2` is `N`): exact, so floor division gives the same value.
    fn exact_quotient(&self, other: &Dim) -> Option<Dim> {
        let (Dim::Known(a), Dim::Known(b)) = (self, other) else {
            return None;
        };
        let mut divisor = b.terms.iter();
        let (Some((factors, &c)), None) = (divisor.next(), divisor.next()) else {
            return self.monomial_quotient(other);
        };
        if c <= 0 || (factors.is_empty() && a.terms.keys().all(Vec::is_empty)) {
            // A constant divisor of a constant folds as floor division instead.
            return None;
        }
        let mut terms = BTreeMap::new();
        for (monomial, &coefficient) in &a.terms {
            if coefficient % c != 0 {
                return None;
            }
            terms.insert(without_factors(monomial, factors)?, coefficient / c);
        }
        Some(Dim::Known(Poly { terms }))
    }

    /// `self / other` for a divisor of several terms where `self` is one term times it
    /// (`(B * H * P + B * H * T) / (P + T)` is `B * H`, what a reshape's `()` gives): the
    /// same polynomial, so the division is exact wherever the divisor is not 0.
    fn monomial_quotient(&self, other: &Dim) -> Option<Dim> {
        let (Dim::Known(a), Dim::Known(b)) = (self, other) else {
            return None;
        };
        let (first, &c) = b.terms.iter().next()?;
        if b.terms.len() < 2 || c == 0 {
            return None;
        }
        a.terms.iter().find_map(|(monomial, &coefficient)| {
            if coefficient % c != 0 {
                return None;
            }
            let quotient = Dim::Known(Poly {
                terms: BTreeMap::from([(without_factors(monomial, first)?, coefficient / c)]),
            });
            let product = quotient.clone().mul(other.clone());
            (product.sub(self.clone()).as_constant() == Some(0)).then_some(quotient)
        })
    }

    /// `self % other`: folded when both are constants, an opaque factor otherwise.
    #[allow(clippy::should_implement_trait)]
    pub fn rem(self, other: Dim) -> Dim {
        // `2 * N % 2` and `N * T % T` are 0: the divisor divides every term.
        if self.exact_quotient(&other).is_some() {
            return Dim::lit(0);
        }
        self.opaque(other, i128::checked_rem_euclid, Factor::Rem, |_| {
            Dim::lit(0)
        })
    }

    fn opaque(
        self,
        other: Dim,
        fold: fn(i128, i128) -> Option<i128>,
        factor: fn(Box<Dim>, Box<Dim>) -> Factor,
        at_one: fn(Dim) -> Dim,
    ) -> Dim {
        if self.is_unknown() || other.is_unknown() {
            return Dim::Unknown;
        }
        match (self.as_constant(), other.as_constant()) {
            (_, Some(0)) => Dim::Unknown,
            // A negative side: Rust's (and the guard's) truncation and the floor differ.
            (Some(a), Some(b)) if a < 0 || b < 0 => Dim::Unknown,
            (Some(a), Some(b)) => fold(a, b).map_or(Dim::Unknown, Dim::constant),
            // `x / 1 = x` and `x % 1 = 0` for every x.
            (_, Some(1)) => at_one(self),
            _ => Dim::factor(factor(Box::new(self), Box::new(other))),
        }
    }

    /// The dim with every symbol and braced expression replaced by `lookup`'s answer.
    pub fn substitute(&self, lookup: &mut dyn FnMut(&Factor) -> Option<Dim>) -> Dim {
        let Dim::Known(poly) = self else {
            return Dim::Unknown;
        };
        let mut total = Dim::lit(0);
        for (monomial, coefficient) in &poly.terms {
            let mut term = Dim::constant(*coefficient);
            for factor in monomial {
                let value = match factor {
                    Factor::Div(a, b) => a.substitute(lookup).div(b.substitute(lookup)),
                    Factor::Rem(a, b) => a.substitute(lookup).rem(b.substitute(lookup)),
                    leaf => lookup(leaf).unwrap_or(Dim::Unknown),
                };
                term = term.mul(value);
            }
            total = total.add(term);
        }
        total
    }

    /// The factor of a dim that is one factor (`N`, `H / K`), nothing added or scaled.
    pub fn as_factor(&self) -> Option<&Factor> {
        let Dim::Known(poly) = self else { return None };
        let mut terms = poly.terms.iter();
        match (terms.next(), terms.next()) {
            (Some((monomial, 1)), None) => match monomial.as_slice() {
                [factor] => Some(factor),
                _ => None,
            },
            _ => None,
        }
    }

    /// The dim with every occurrence of `factor` replaced by `by` (`K * (H / K)` with
    /// `H / K` as 1 is `K`); the other factors stay as they are.
    pub fn replace_factor(&self, factor: &Factor, by: &Dim) -> Dim {
        let Dim::Known(poly) = self else {
            return Dim::Unknown;
        };
        let mut total = Dim::lit(0);
        for (monomial, coefficient) in &poly.terms {
            let mut term = Dim::constant(*coefficient);
            for f in monomial {
                let value = if f == factor {
                    by.clone()
                } else {
                    match f {
                        Factor::Div(a, b) => a
                            .replace_factor(factor, by)
                            .div(b.replace_factor(factor, by)),
                        Factor::Rem(a, b) => a
                            .replace_factor(factor, by)
                            .rem(b.replace_factor(factor, by)),
                        leaf => Dim::Known(Poly {
                            terms: BTreeMap::from([(vec![leaf.clone()], 1)]),
                        }),
                    }
                };
                term = term.mul(value);
            }
            total = total.add(term);
        }
        total
    }

    /// The operands of a dim that is one remainder (`D % 2`), nothing added or scaled.
    pub(crate) fn as_remainder(&self) -> Option<(&Dim, &Dim)> {
        let Dim::Known(poly) = self else { return None };
        let mut terms = poly.terms.iter();
        match (terms.next(), terms.next()) {
            (Some((monomial, 1)), None) => match monomial.as_slice() {
                [Factor::Rem(a, b)] => Some((a, b)),
                _ => None,
            },
            _ => None,
        }
    }

    /// The one named symbol or braced expression the dim is (`D`, `{cfg.head_dim}`), nothing
    /// added or scaled: what a fact `D % 2 == 0` can be about.
    pub(crate) fn as_leaf(&self) -> Option<&Factor> {
        let Dim::Known(poly) = self else { return None };
        let mut terms = poly.terms.iter();
        match (terms.next(), terms.next()) {
            (Some((monomial, 1)), None) => match monomial.as_slice() {
                [leaf @ (Factor::Symbol(_) | Factor::Braced(_))] => Some(leaf),
                _ => None,
            },
            _ => None,
        }
    }

    /// The dim where the leaf `x` is known to be a multiple of `k` (`k >= 2`): every `x` is
    /// written `k * (x / k)`, which collects `x / 2 + x / 2` into `2 * (x / 2)`, then every
    /// `k * (x / k)` is written `x` again. Equal values under the fact get equal normal forms
    /// (`D / 2 * 2`, `D / 2 + D / 2` and `D` all become `D`); `D / 2` stays `D / 2`.
    pub(crate) fn with_multiple(&self, x: &Factor, k: i128) -> Dim {
        if k < 2 || self.is_unknown() {
            return self.clone();
        }
        let quotient = Factor::Div(Box::new(Dim::factor(x.clone())), Box::new(Dim::constant(k)));
        let written = self.substitute(&mut |leaf| {
            Some(if leaf == x {
                Dim::constant(k).mul(Dim::factor(quotient.clone()))
            } else {
                Dim::factor(leaf.clone())
            })
        });
        written.collect_multiples(&quotient, x, k)
    }

    /// The dim where the leaf `x` is known to be a multiple of the leaf `y` (`H % KVH == 0`):
    /// every `x` is written `y * (x / y)`, then each `y * (x / y)` of a term is written `x`
    /// again, so `KVH * (H / KVH)` and `H` get one normal form; `H / KVH` stays as it is.
    pub(crate) fn with_multiple_of(&self, x: &Factor, y: &Factor) -> Dim {
        if x == y || self.is_unknown() {
            return self.clone();
        }
        let quotient = Factor::Div(
            Box::new(Dim::factor(x.clone())),
            Box::new(Dim::factor(y.clone())),
        );
        self.written_as_multiple_of(x, y)
            .collect_multiples_of(&quotient, x, y)
    }

    /// The dim with every leaf `x` written `y * (x / y)`, as it is where `x % y == 0`; not a
    /// normal form (the value of `x / y` may then stand in it).
    pub(crate) fn written_as_multiple_of(&self, x: &Factor, y: &Factor) -> Dim {
        if x == y || self.is_unknown() {
            return self.clone();
        }
        let quotient = Dim::factor(x.clone()).div(Dim::factor(y.clone()));
        self.substitute(&mut |leaf| {
            Some(if leaf == x {
                Dim::factor(y.clone()).mul(quotient.clone())
            } else {
                Dim::factor(leaf.clone())
            })
        })
    }

    /// Each pair of `quotient` and `y` factors of a term written `x`, inside divisions and
    /// remainders too.
    fn collect_multiples_of(&self, quotient: &Factor, x: &Factor, y: &Factor) -> Dim {
        let Dim::Known(poly) = self else {
            return Dim::Unknown;
        };
        let mut total = Dim::lit(0);
        for (monomial, &coefficient) in &poly.terms {
            let quotients = monomial.iter().filter(|f| *f == quotient).count();
            let divisors = monomial.iter().filter(|f| *f == y).count();
            let (mut pairs_q, mut pairs_y) = (quotients.min(divisors), quotients.min(divisors));
            let mut term = Dim::constant(coefficient);
            for factor in monomial {
                let value = match factor {
                    f if f == quotient && pairs_q > 0 => {
                        pairs_q -= 1;
                        Dim::factor(x.clone())
                    }
                    f if f == y && pairs_y > 0 => {
                        pairs_y -= 1;
                        Dim::lit(1)
                    }
                    Factor::Div(a, b) => a
                        .collect_multiples_of(quotient, x, y)
                        .div(b.collect_multiples_of(quotient, x, y)),
                    Factor::Rem(a, b) => a
                        .collect_multiples_of(quotient, x, y)
                        .rem(b.collect_multiples_of(quotient, x, y)),
                    leaf => Dim::factor(leaf.clone()),
                };
                term = term.mul(value);
            }
            total = total.add(term);
        }
        total
    }

    /// Each `k^j * quotient^j` of a term written `x^j` (as many as the coefficient allows),
    /// inside divisions and remainders too.
    fn collect_multiples(&self, quotient: &Factor, x: &Factor, k: i128) -> Dim {
        let Dim::Known(poly) = self else {
            return Dim::Unknown;
        };
        let mut total = Dim::lit(0);
        for (monomial, &coefficient) in &poly.terms {
            let mut coefficient = coefficient;
            let mut term = Dim::lit(1);
            for factor in monomial {
                let value = match factor {
                    f if f == quotient => {
                        if coefficient % k == 0 {
                            coefficient /= k;
                            Dim::factor(x.clone())
                        } else {
                            Dim::factor(f.clone())
                        }
                    }
                    Factor::Div(a, b) => a
                        .collect_multiples(quotient, x, k)
                        .div(b.collect_multiples(quotient, x, k)),
                    Factor::Rem(a, b) => a
                        .collect_multiples(quotient, x, k)
                        .rem(b.collect_multiples(quotient, x, k)),
                    leaf => Dim::factor(leaf.clone()),
                };
                term = term.mul(value);
            }
            total = total.add(Dim::constant(coefficient).mul(term));
        }
        total
    }

    /// Whether the dim is at least 0 for every size of its symbols, from its form alone: no
    /// negative coefficient, and every factor a size, or a floor division or remainder of two
    /// such dims (candle's sizes are never negative; a remainder of a dividend that may be
    /// negative, `(T - 5) % 4`, is negative where the guard works it out, truncating).
    pub(crate) fn certainly_nonnegative(&self) -> bool {
        let Dim::Known(poly) = self else {
            return false;
        };
        poly.terms.iter().all(|(monomial, &coefficient)| {
            coefficient >= 0
                && monomial.iter().all(|factor| match factor {
                    Factor::Symbol(_) | Factor::Braced(_) => true,
                    Factor::Div(a, b) | Factor::Rem(a, b) => {
                        a.certainly_nonnegative() && b.certainly_nonnegative()
                    }
                })
        })
    }

    /// The symbols the dim names, inside divisions included.
    pub fn symbols(&self) -> Vec<&str> {
        let mut names = Vec::new();
        if let Dim::Known(poly) = self {
            for monomial in poly.terms.keys() {
                for factor in monomial {
                    match factor {
                        Factor::Symbol(name) => names.push(name.as_str()),
                        Factor::Braced(_) => {}
                        Factor::Div(a, b) | Factor::Rem(a, b) => {
                            names.extend(a.symbols());
                            names.extend(b.symbols());
                        }
                    }
                }
            }
        }
        names
    }

    /// The product of `dims` (the element count of a shape).
    pub fn product<'a>(dims: impl IntoIterator<Item = &'a Dim>) -> Dim {
        dims.into_iter()
            .fold(Dim::lit(1), |acc, dim| acc.mul(dim.clone()))
    }
}

impl From<u64> for Dim {
    fn from(n: u64) -> Self {
        Dim::lit(n)
    }
}

impl From<usize> for Dim {
    fn from(n: usize) -> Self {
        u64::try_from(n).map_or(Dim::Unknown, Dim::lit)
    }
}

impl fmt::Display for Factor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Factor::Symbol(name) => f.write_str(name),
            Factor::Braced(text) => write!(f, "{{{text}}}"),
            Factor::Div(a, b) => write!(f, "{} / {}", Operand(a), Operand(b)),
            // What a cast to a narrow unsigned type gives: `T as u32`.
            Factor::Rem(a, b) => match b.as_constant().and_then(unsigned_name) {
                Some(ty) => write!(f, "{} as {ty}", Operand(a)),
                None => write!(f, "{} % {}", Operand(a), Operand(b)),
            },
        }
    }
}

/// `monomial` with each of `factors` taken out once, where it has them all.
fn without_factors(monomial: &[Factor], factors: &[Factor]) -> Option<Vec<Factor>> {
    let mut rest = monomial.to_vec();
    for factor in factors {
        let at = rest.iter().position(|f| f == factor)?;
        rest.remove(at);
    }
    Some(rest)
}

/// The unsigned type a remainder by `modulus` is the cast to: `u32` for `2^32`, which no
/// contract writes (a `% 256` stays as written).
fn unsigned_name(modulus: i128) -> Option<&'static str> {
    (modulus == 1 << 32).then_some("u32")
}

/// A dim printed as an operand of `/` or `%`: parenthesized unless it is one symbol, braced
/// name (`{dim}`) or literal.
struct Operand<'a>(&'a Dim);

impl fmt::Display for Operand<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let braced = matches!(self.0.as_factor(), Some(Factor::Braced(_)));
        if self.0.as_symbol().is_some() || self.0.as_constant().is_some() || braced {
            write!(f, "{}", self.0)
        } else {
            write!(f, "({})", self.0)
        }
    }
}

/// `(A + e) * (B + d) + r` where `poly` is `A * B + d * A + e * B + (d * e + r)` of two single
/// factors `A` and `B` (a symbol, a quotient) and `d`, `e` not 0: the two and `r`, for display.
fn bilinear_factors(poly: &Poly) -> Option<(Dim, Dim, i128)> {
    let constant = poly.terms.get(&Vec::new()).copied().unwrap_or(0);
    let expected = if constant == 0 { 3 } else { 4 };
    if poly.terms.len() != expected {
        return None;
    }
    let singles: Vec<(&Monomial, i128)> = poly
        .terms
        .iter()
        .filter(|(m, _)| m.len() == 1)
        .map(|(m, c)| (m, *c))
        .collect();
    let [(a, d), (b, e)] = singles.as_slice() else {
        return None;
    };
    let mut product: Monomial = a.iter().chain(b.iter()).cloned().collect();
    product.sort();
    if poly.terms.get(&product) != Some(&1) {
        return None;
    }
    let rest = constant.checked_sub(d.checked_mul(*e)?)?;
    let part = |m: &Monomial, c: i128| {
        Dim::Known(Poly {
            terms: BTreeMap::from([(m.clone(), 1), (Vec::new(), c)]),
        })
    };
    Some((part(a, *e), part(b, *d), rest))
}

impl fmt::Display for Dim {
    /// As a contract writes it: `N + 1`, `2 * C`, `N * T`, `H / 2`, `_` for unknown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Dim::Known(poly) = self else {
            return f.write_str("_");
        };
        if poly.terms.is_empty() {
            return f.write_str("0");
        }
        // A ViT's patch count, `((H - P) / P + 1) * ((W - P) / P + 1)`, as written.
        if let Some((a, b, rest)) = bilinear_factors(poly) {
            write!(f, "({a}) * ({b})")?;
            return match rest {
                0 => Ok(()),
                r if r < 0 => write!(f, " - {}", r.unsigned_abs()),
                r => write!(f, " + {r}"),
            };
        }
        // Terms with symbols first, the constant last: `N + 1`, `C - 1`.
        let mut terms: Vec<_> = poly.terms.iter().filter(|(m, _)| !m.is_empty()).collect();
        terms.extend(poly.terms.iter().filter(|(m, _)| m.is_empty()));
        for (i, (monomial, &coefficient)) in terms.into_iter().enumerate() {
            let magnitude = coefficient.unsigned_abs();
            match (i, coefficient < 0) {
                (0, true) => f.write_str("-")?,
                (0, false) => {}
                (_, true) => f.write_str(" - ")?,
                (_, false) => f.write_str(" + ")?,
            }
            if monomial.is_empty() {
                write!(f, "{magnitude}")?;
                continue;
            }
            if magnitude != 1 {
                write!(f, "{magnitude} * ")?;
            }
            // `2 * (HD / 2)`: a quotient inside a product is its own operand (`2 * HD / 2`
            // would read as `(2 * HD) / 2`, another size where `HD` is odd).
            let alone = magnitude == 1 && monomial.len() == 1;
            for (j, factor) in monomial.iter().enumerate() {
                if j > 0 {
                    f.write_str(" * ")?;
                }
                match factor {
                    Factor::Div(..) | Factor::Rem(..) if !alone => write!(f, "({factor})")?,
                    _ => write!(f, "{factor}")?,
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n() -> Dim {
        Dim::symbol("N")
    }

    #[test]
    fn a_product_of_two_sums_is_written_as_one() {
        let m = Dim::symbol("M");
        let patches = |size: &str| {
            Dim::symbol(size)
                .sub(Dim::lit(16))
                .div(Dim::lit(16))
                .add(Dim::lit(1))
        };
        assert_eq!(
            patches("H").mul(patches("W")).to_string(),
            "((H - 16) / 16 + 1) * ((W - 16) / 16 + 1)"
        );
        assert_eq!(
            n().sub(Dim::lit(1))
                .mul(m.clone().sub(Dim::lit(2)))
                .to_string(),
            "(M - 2) * (N - 1)"
        );
        // A class token beside the patches: one more.
        assert_eq!(
            patches("H").mul(patches("W")).add(Dim::lit(1)).to_string(),
            "((H - 16) / 16 + 1) * ((W - 16) / 16 + 1) + 1"
        );
        // Not of that form: written term by term.
        assert_eq!(n().mul(m.clone()).add(n()).to_string(), "M * N + N");
        assert_eq!(n().mul(n()).add(n()).to_string(), "N + N * N");
        assert_eq!(
            n().mul(m.clone()).add(n()).add(Dim::lit(2)).to_string(),
            "M * N + N + 2"
        );
        // Two sums and a constant beside them.
        assert_eq!(
            n().mul(m.clone())
                .add(n())
                .add(m)
                .add(Dim::lit(2))
                .to_string(),
            "(M + 1) * (N + 1) + 1"
        );
    }

    #[test]
    fn a_quotient_inside_a_product_is_parenthesised() {
        let half = Dim::symbol("HD").div(Dim::lit(2));
        assert_eq!(half.to_string(), "HD / 2");
        assert_eq!(half.clone().mul(Dim::lit(2)).to_string(), "2 * (HD / 2)");
        assert_eq!(half.mul(n()).to_string(), "N * (HD / 2)");
    }

    #[test]
    fn a_division_is_exact_only_where_every_coefficient_is_a_multiple() {
        let e3 = n().mul(Dim::lit(3));
        assert_eq!(
            e3.divided_exactly(3).map(|d| d.to_string()),
            Some("N".into())
        );
        let plus = e3.clone().add(Dim::lit(6));
        assert_eq!(
            plus.divided_exactly(3).map(|d| d.to_string()),
            Some("N + 2".into())
        );
        assert_eq!(Dim::lit(12).divided_exactly(4), Some(Dim::lit(3)));
        assert_eq!(Dim::lit(0).divided_exactly(4), Some(Dim::lit(0)));
        assert_eq!(Dim::lit(7).divided_exactly(2), None);
        assert_eq!(n().divided_exactly(2), None);
        assert_eq!(e3.clone().add(Dim::lit(1)).divided_exactly(3), None);
        assert_eq!(e3.divided_exactly(0), None);
        assert_eq!(Dim::Unknown.divided_exactly(1), None);
    }

    /// A reshape's `()` of `[B, G * KVH, P + T, HD]` read as `[B, (), P + T, HD]`.
    #[test]
    fn a_sum_divided_by_a_sum_it_is_a_multiple_of_is_the_multiplier() {
        let d = |text: &str| crate::parse::parse_dim(text).unwrap();
        let numerator = d("B * G * HD * KVH * P + B * G * HD * KVH * T");
        let divisor = d("B * HD * P + B * HD * T");
        assert_eq!(numerator.clone().div(divisor.clone()), d("G * KVH"));
        assert_eq!(d("2 * P + 2 * T").div(d("P + T")), d("2"));
        assert_eq!(numerator.rem(divisor), Dim::lit(0));
        // Not a multiple: stays a quotient.
        let open = d("P + 2 * T").div(d("P + T"));
        assert_eq!(open.to_string(), "(P + 2 * T) / (P + T)");
        assert_eq!(
            d("3 * P + T").div(d("P + T")).to_string(),
            "(3 * P + T) / (P + T)"
        );
    }

    #[test]
    fn normal_forms_make_equal_expressions_equal() {
        assert_eq!(n().add(Dim::lit(1)), Dim::lit(1).add(n()));
        assert_eq!(
            n().add(Dim::lit(1)).compare(&Dim::lit(1).add(n())),
            Verdict::Equal
        );
        let nt = n().mul(Dim::symbol("T"));
        assert_eq!(nt, Dim::symbol("T").mul(n()));
        assert_eq!(nt.to_string(), "N * T");
        assert_eq!(n().add(n()).to_string(), "2 * N");
        assert_eq!(n().sub(Dim::lit(1)).to_string(), "N - 1");
        let h2 = Dim::symbol("H").div(Dim::lit(2));
        assert_eq!(h2.to_string(), "H / 2");
        assert_eq!(
            h2.compare(&Dim::symbol("H").div(Dim::lit(2))),
            Verdict::Equal
        );
        assert_eq!(
            n().add(Dim::lit(1)).div(Dim::lit(2)).to_string(),
            "(N + 1) / 2"
        );
        assert_eq!(Dim::lit(7).div(Dim::lit(2)), Dim::lit(3));
        assert_eq!(n().div(Dim::lit(1)), n());
        let t = Dim::symbol("T");
        assert_eq!(
            n().mul(t.clone()).mul(Dim::lit(4)).div(t.clone()),
            n().mul(Dim::lit(4))
        );
        assert_eq!(
            n().mul(Dim::lit(2)).add(Dim::lit(4)).div(Dim::lit(2)),
            n().add(Dim::lit(2))
        );
        assert_eq!(n().add(Dim::lit(1)).div(t).to_string(), "(N + 1) / T");
        // A braced name is one operand too (fastvit's `{dim} / 32`).
        assert_eq!(
            Dim::braced("dim").div(Dim::lit(32)).to_string(),
            "{dim} / 32"
        );
        assert_eq!(n().rem(Dim::lit(1)), Dim::lit(0));
        assert_eq!(n().rem(Dim::lit(8)).to_string(), "N % 8");
        // A divisor of every term leaves nothing.
        assert_eq!(n().mul(Dim::lit(4)).rem(Dim::lit(2)), Dim::lit(0));
        assert_eq!(n().mul(Dim::symbol("T")).rem(Dim::symbol("T")), Dim::lit(0));
        assert_eq!(
            n().mul(Dim::lit(2))
                .add(Dim::lit(1))
                .rem(Dim::lit(2))
                .to_string(),
            "(2 * N + 1) % 2"
        );
    }

    #[test]
    fn only_constant_differences_are_certain() {
        assert_eq!(n().compare(&n().add(Dim::lit(1))), Verdict::Different(()));
        assert_eq!(Dim::lit(2).compare(&Dim::lit(3)), Verdict::Different(()));
        assert_eq!(n().compare(&Dim::symbol("M")), Verdict::Possible);
        assert_eq!(n().compare(&Dim::lit(3)), Verdict::Possible);
        assert_eq!(n().compare(&n().mul(Dim::lit(2))), Verdict::Possible);
        assert_eq!(Dim::Unknown.compare(&Dim::Unknown), Verdict::Possible);
        assert_eq!(Dim::Unknown.compare(&Dim::lit(3)), Verdict::Possible);
        let h = Dim::symbol("H");
        assert_eq!(h.clone().div(Dim::lit(2)).compare(&h), Verdict::Possible);
    }

    #[test]
    fn substitution_folds_what_becomes_constant() {
        let expr = n().add(Dim::lit(1)).div(Dim::lit(2));
        let folded = expr.substitute(&mut |factor| match factor {
            Factor::Symbol(name) if name == "N" => Some(Dim::lit(9)),
            _ => None,
        });
        assert_eq!(folded, Dim::lit(5));
        let unbound = n().add(Dim::lit(1)).substitute(&mut |_| None);
        assert_eq!(unbound, Dim::Unknown);
    }

    #[test]
    fn overflow_is_unknown_never_wrong() {
        let big = Dim::lit(u64::MAX);
        let huge = big.clone().mul(big.clone()).mul(big.clone()).mul(big);
        assert!(huge.is_unknown() || huge.as_literal().is_none());
    }
}
