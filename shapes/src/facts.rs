//! What a contract's relations between dims (`D % 2 == 0`, `T <= P`, `N >= 1`) let the engine
//! decide: the guard checks them before the body runs, so within the body they hold.
//!
//! A fact `X % k == 0` about one dim name makes `X / k * k`, `X / k + X / k` and
//! `k * (X / k)` the same as `X` ([`Facts::simplify`]); an inequality makes a relation between
//! dims certain, one way or the other ([`Facts::decide`]). A fact the engine cannot use (an
//! expression on both sides, a divisor that is not a literal) is left out; a set of facts that
//! contradicts itself is not used at all. Neither is ever an error by itself.

use std::collections::BTreeMap;
use std::fmt;

use crate::dim::{Dim, Factor};
use crate::shape::{Shape, TensorType};
use crate::verdict::Verdict;

/// How the two sides of a relation compare (`==`, `!=`, `<`, `<=`, `>`, `>=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl fmt::Display for Cmp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        })
    }
}

/// A relation between two dims, as a contract states it (`T <= P`, `D % 2 == 0`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Relation {
    /// The left side.
    pub lhs: Dim,
    /// How the sides compare.
    pub op: Cmp,
    /// The right side.
    pub rhs: Dim,
}

impl Relation {
    /// `lhs op rhs`.
    pub fn new(lhs: Dim, op: Cmp, rhs: Dim) -> Relation {
        Relation { lhs, op, rhs }
    }

    /// The relation with each side mapped by `f` (a callee's names put in the caller's terms).
    pub fn map(&self, mut f: impl FnMut(&Dim) -> Dim) -> Relation {
        Relation::new(f(&self.lhs), self.op, f(&self.rhs))
    }
}

impl fmt::Display for Relation {
    /// As a contract writes it: `T <= P`, `D % 2 == 0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.lhs, self.op, self.rhs)
    }
}

/// How many inequalities one proof may add up (`T <= P` and `P <= M` give `T <= M`).
const PROOF_STEPS: usize = 2;

/// The facts in force in a body: dim names that are multiples of a literal, and dims that are
/// at least 0 (`P - T` for `T <= P`). The empty set knows nothing and decides only what the
/// normal form alone decides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// `(X, k)`: `X % k == 0`, `k >= 2`, one entry per name (the least common multiple).
    multiples: Vec<(Factor, i128)>,
    /// `(X, Y)`: `X % Y == 0` for two dim names (`H % KVH == 0`).
    multiples_of: Vec<(Factor, Factor)>,
    /// Dims that are at least 0, each from one inequality, in simplified form.
    bounds: Vec<Dim>,
    /// Dims that are 0, each `lhs - rhs` of one equality, in simplified form (`NC % 2 - 1`
    /// for `NC % 2 == 1`).
    zeros: Vec<Dim>,
    /// Names that stand for one of two sizes (`?1`, `T` or `P + T` by the branch a body
    /// took): a relation holds where it holds for each.
    alternatives: BTreeMap<String, (Dim, Dim)>,
}

impl Facts {
    /// No fact.
    pub fn none() -> Facts {
        Facts::default()
    }

    /// The facts `relations` state, those the engine can use. Equalities between two dims
    /// (`E == H * D`) are the caller's to substitute; here an equality is used only as
    /// `X % k == 0`. A set that contradicts itself (`T < P, P < T`, or `D % 2 == 0` where `D`
    /// is 3) gives no facts at all.
    pub fn new(relations: &[Relation]) -> Facts {
        match Facts::build(relations) {
            (facts, false) => facts,
            (_, true) => Facts::none(),
        }
    }

    /// Whether `relations` contradict each other as far as the engine can tell (`T < P, P <
    /// T`; `D % 2 == 0` where `D` is 3): no sizes satisfy them all.
    pub fn contradict(relations: &[Relation]) -> bool {
        Facts::build(relations).1
    }

    /// The facts `relations` state, and whether they contradict each other.
    fn build(relations: &[Relation]) -> (Facts, bool) {
        let mut facts = Facts::none();
        for relation in relations {
            if let Some((x, k)) = multiple(relation) {
                match facts.multiples.iter_mut().find(|(y, _)| *y == x) {
                    Some((_, m)) => match lcm(*m, k) {
                        Some(l) => *m = l,
                        // Too large to hold: no facts, no contradiction known.
                        None => return (Facts::none(), false),
                    },
                    None => facts.multiples.push((x, k)),
                }
            }
            if let Some(pair) = multiple_of(relation)
                && !facts.multiples_of.contains(&pair)
            {
                facts.multiples_of.push(pair);
            }
        }
        for relation in relations {
            if relation.op == Cmp::Eq {
                let zero = facts.simplify(&relation.lhs.clone().sub(relation.rhs.clone()));
                if !zero.is_unknown() && zero.as_constant().is_none() {
                    facts.zeros.push(zero);
                }
            }
        }
        for relation in relations {
            let (small, large, strict) = match relation.op {
                Cmp::Le => (&relation.lhs, &relation.rhs, false),
                Cmp::Lt => (&relation.lhs, &relation.rhs, true),
                Cmp::Ge => (&relation.rhs, &relation.lhs, false),
                Cmp::Gt => (&relation.rhs, &relation.lhs, true),
                Cmp::Eq | Cmp::Ne => continue,
            };
            let mut room = large.clone().sub(small.clone());
            if strict {
                room = room.sub(Dim::lit(1));
            }
            let room = facts.simplify(&room);
            if !room.is_unknown() {
                facts.bounds.push(room);
            }
        }
        // A contradiction proves anything: such facts are not used. `X % k == c` with `c`
        // out of `0..k` is one (the engine does not know a remainder's range).
        let out_of_range = relations.iter().any(|relation| {
            let remainder = |side: &Dim, value: &Dim| {
                let Some(Factor::Rem(_, divisor)) = side.as_factor() else {
                    return false;
                };
                match (divisor.as_constant(), value.as_constant()) {
                    (Some(k), Some(c)) => k > 0 && !(0..k).contains(&c),
                    _ => false,
                }
            };
            relation.op == Cmp::Eq
                && (remainder(&relation.lhs, &relation.rhs)
                    || remainder(&relation.rhs, &relation.lhs))
        });
        let contradicts = out_of_range
            || facts.at_least_zero(&Dim::lit(0).sub(Dim::lit(1)))
            || relations
                .iter()
                .any(|relation| facts.decide(relation) == Some(false));
        (facts, contradicts)
    }

    /// Whether there is no fact.
    pub fn is_empty(&self) -> bool {
        self.multiples.is_empty()
            && self.multiples_of.is_empty()
            && self.bounds.is_empty()
            && self.zeros.is_empty()
            && self.alternatives.is_empty()
    }

    /// States that the dim name `name` is `first` or `second`, which one not known (a size
    /// two branches give differently): a relation naming it is decided where both agree.
    /// An unknown side leaves relations naming it undecided.
    pub fn set_alternatives(&mut self, name: &str, first: Dim, second: Dim) {
        self.alternatives.insert(name.to_string(), (first, second));
    }

    /// Each name of [`Facts::set_alternatives`] with its two sizes mapped by `f`.
    pub fn map_alternatives(&mut self, mut f: impl FnMut(&Dim) -> Dim) {
        for (first, second) in self.alternatives.values_mut() {
            *first = f(first);
            *second = f(second);
        }
    }

    /// `relation` decided once for each size of the first alternative name it names, where
    /// both agree; `None` where it names none (`Some(None)`: they disagree).
    fn decide_by_alternatives(&self, relation: &Relation, depth: usize) -> Option<Option<bool>> {
        let names: Vec<&str> = relation
            .lhs
            .symbols()
            .into_iter()
            .chain(relation.rhs.symbols())
            .collect();
        let (name, (first, second)) = self
            .alternatives
            .iter()
            .find(|(name, _)| names.contains(&name.as_str()))?;
        // A chain of names each of another (`?3` is `?1` or `D`) is followed this far.
        if depth > 4 {
            return Some(None);
        }
        let factor = Factor::Symbol(name.clone());
        let mut each = [first, second].into_iter().map(|size| {
            let relation = relation.map(|d| d.replace_factor(&factor, size));
            match self.decide_by_alternatives(&relation, depth + 1) {
                Some(verdict) => verdict,
                None => self.decide_plain(&relation),
            }
        });
        let (a, b) = (each.next().flatten(), each.next().flatten());
        Some(if a == b { a } else { None })
    }

    /// `dim` in a normal form under the facts: `D / 2 * 2` is `D` where `D % 2 == 0`.
    pub fn simplify(&self, dim: &Dim) -> Dim {
        let dim = self
            .multiples
            .iter()
            .fold(dim.clone(), |dim, (x, k)| dim.with_multiple(x, *k));
        self.multiples_of
            .iter()
            .fold(dim, |dim, (x, y)| dim.with_multiple_of(x, y))
    }

    /// `dim` with each name the facts make a multiple of another written as that product
    /// (`H` as `KVH * (H / KVH)` where `H % KVH == 0`), so that a value of the quotient
    /// (`H / KVH == 1` in a branch) can stand in it; not a normal form.
    pub fn with_quotients(&self, dim: &Dim) -> Dim {
        self.multiples_of
            .iter()
            .fold(dim.clone(), |dim, (x, y)| dim.written_as_multiple_of(x, y))
    }

    /// `shape` with each dim simplified.
    pub fn simplify_shape(&self, shape: &Shape) -> Shape {
        if self.multiples.is_empty() && self.multiples_of.is_empty() {
            return shape.clone();
        }
        let map = |dims: &[Dim]| -> Vec<Dim> { dims.iter().map(|d| self.simplify(d)).collect() };
        let (front, back) = (map(shape.front()), map(shape.back()));
        match shape.run() {
            Some(run) => Shape::with_run(front, run.clone(), back),
            None => Shape::new(front),
        }
    }

    /// `tensor` with each dim of its shape simplified.
    pub fn simplify_type(&self, tensor: &TensorType) -> TensorType {
        tensor.with_shape(self.simplify_shape(&tensor.shape))
    }

    /// Runs `body` with these facts deciding every comparison of dims whose normal form
    /// leaves it open (`3 * E` vs `E` is different where `E >= 1`; `T` vs `P` where `T < P`).
    /// Only for the dims of the function the facts are stated for: a callee's own names are
    /// other dims.
    pub fn under<R>(&self, body: impl FnOnce() -> R) -> R {
        if self.is_empty() {
            return body();
        }
        let facts = self.clone();
        crate::dim::with_decider(
            std::rc::Rc::new(move |a: &Dim, ask: crate::dim::Ask, b: &Dim| {
                let op = match ask {
                    crate::dim::Ask::Equal => Cmp::Eq,
                    crate::dim::Ask::AtMost => Cmp::Le,
                };
                facts.decide(&Relation::new(a.clone(), op, b.clone()))
            }),
            body,
        )
    }

    /// Whether the two dims are equal under the facts: certainly, certainly not (by the normal
    /// form, or one certainly less than the other), or possibly.
    pub fn compare(&self, a: &Dim, b: &Dim) -> Verdict<()> {
        match self.decide(&Relation::new(a.clone(), Cmp::Eq, b.clone())) {
            Some(true) => Verdict::Equal,
            Some(false) => Verdict::Different(()),
            None => Verdict::Possible,
        }
    }

    /// Whether `relation` holds for every size the facts allow (`Some(true)`), for none
    /// (`Some(false)`), or the engine cannot tell (`None`, unknown dims included).
    pub fn decide(&self, relation: &Relation) -> Option<bool> {
        let plain = self.decide_plain(relation);
        if plain.is_some() || self.alternatives.is_empty() {
            return plain;
        }
        self.decide_by_alternatives(relation, 0).flatten()
    }

    /// [`Facts::decide`] with each alternative name an unknown size of its own.
    fn decide_plain(&self, relation: &Relation) -> Option<bool> {
        let (lhs, rhs) = (self.simplify(&relation.lhs), self.simplify(&relation.rhs));
        if lhs.is_unknown() || rhs.is_unknown() {
            return None;
        }
        // `a <= b` holds where `b - a` is at least 0, and fails where `a - b - 1` is.
        let le = |a: &Dim, b: &Dim| {
            if self.at_least_zero(&b.clone().sub(a.clone())) {
                Some(true)
            } else if self.at_least_zero(&a.clone().sub(b.clone()).sub(Dim::lit(1))) {
                Some(false)
            } else {
                None
            }
        };
        let lt = |a: &Dim, b: &Dim| le(b, a).map(|holds| !holds);
        match relation.op {
            Cmp::Le => le(&lhs, &rhs),
            Cmp::Lt => lt(&lhs, &rhs),
            Cmp::Ge => le(&rhs, &lhs),
            Cmp::Gt => lt(&rhs, &lhs),
            Cmp::Eq | Cmp::Ne => {
                let difference = self.simplify(&lhs.clone().sub(rhs.clone()));
                // What is left after taking away a dim an equality says is 0 (`NC % 2 - 1`
                // of `NC % 2 == 1`), either way round.
                let after_a_zero = self.zeros.iter().find_map(|zero| {
                    [
                        difference.clone().sub(zero.clone()),
                        difference.clone().add(zero.clone()),
                    ]
                    .into_iter()
                    .find_map(|rest| self.simplify(&rest).as_constant())
                });
                let equal = match difference.as_constant().or(after_a_zero) {
                    Some(0) => Some(true),
                    Some(_) => Some(false),
                    // One side certainly below the other: not equal.
                    None if lt(&lhs, &rhs) == Some(true) || lt(&rhs, &lhs) == Some(true) => {
                        Some(false)
                    }
                    None => None,
                };
                match relation.op {
                    Cmp::Eq => equal,
                    _ => equal.map(|holds| !holds),
                }
            }
        }
    }

    /// Whether `dim` is at least 0: by its form, by its form with each dim the facts give a
    /// least value written as that value and a rest (`B * T * E - 1` is `b + t + e + bt + ..`
    /// with `B = 1 + b`, .. where `B, T, E >= 1`), or after taking away up to [`PROOF_STEPS`]
    /// dims the facts say are at least 0.
    fn at_least_zero(&self, dim: &Dim) -> bool {
        let dim = self.simplify(dim);
        if dim.certainly_nonnegative() || self.shifted(&dim).certainly_nonnegative() {
            return true;
        }
        let mut frontier = vec![(dim, 0usize)];
        for _ in 0..PROOF_STEPS {
            let mut next = Vec::new();
            for (rest, from) in &frontier {
                for (i, bound) in self.bounds.iter().enumerate().skip(*from) {
                    let less = self.simplify(&rest.clone().sub(bound.clone()));
                    if less.certainly_nonnegative() {
                        return true;
                    }
                    next.push((less, i));
                }
            }
            frontier = next;
        }
        false
    }
}

impl Facts {
    /// `dim` with each name a fact bounds from below by a positive literal (`B >= 1`: a bound
    /// `B - 1`) written as that literal plus a name of its own, at least 0: `B` is `1 + B`.
    /// A polynomial of such rests whose coefficients are all at least 0 is at least 0.
    fn shifted(&self, dim: &Dim) -> Dim {
        let mut least: BTreeMap<String, u64> = BTreeMap::new();
        for bound in &self.bounds {
            let names = bound.symbols();
            let [name] = names.as_slice() else {
                continue;
            };
            let Some(offset) = bound.clone().sub(Dim::symbol(*name)).as_constant() else {
                continue;
            };
            // `B - 1`: `B >= 1`.
            if let Ok(value) = u64::try_from(-offset)
                && value > 0
            {
                let least = least.entry(name.to_string()).or_insert(0);
                *least = (*least).max(value);
            }
        }
        if least.is_empty() {
            return dim.clone();
        }
        dim.substitute(&mut |factor| match factor {
            Factor::Symbol(name) => Some(match least.get(name) {
                Some(&value) => Dim::symbol(name.clone()).add(Dim::lit(value)),
                None => Dim::symbol(name.clone()),
            }),
            Factor::Braced(text) => Some(Dim::braced(text)),
            _ => None,
        })
    }
}

/// `a % b == 0` (either way round): `(a, b)`.
fn zero_remainder(relation: &Relation) -> Option<(&Dim, &Dim)> {
    if relation.op != Cmp::Eq {
        return None;
    }
    let remainder = match (relation.lhs.as_constant(), relation.rhs.as_constant()) {
        (_, Some(0)) => &relation.lhs,
        (Some(0), _) => &relation.rhs,
        _ => return None,
    };
    remainder.as_remainder()
}

/// `X % k == 0` (either way round) with `X` one dim name and `k` a literal of at least 2.
fn multiple(relation: &Relation) -> Option<(Factor, i128)> {
    let (x, k) = zero_remainder(relation)?;
    let k = k.as_constant().filter(|&k| k >= 2)?;
    Some((x.as_leaf()?.clone(), k))
}

/// `X % Y == 0` (either way round) with `X` and `Y` two dim names.
fn multiple_of(relation: &Relation) -> Option<(Factor, Factor)> {
    let (x, y) = zero_remainder(relation)?;
    let (x, y) = (x.as_leaf()?, y.as_leaf()?);
    (x != y).then(|| (x.clone(), y.clone()))
}

/// The least common multiple of two positive numbers; `None` on overflow.
fn lcm(a: i128, b: i128) -> Option<i128> {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    (a / x).checked_mul(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_dim;

    fn dim(text: &str) -> Dim {
        parse_dim(text).unwrap()
    }

    fn rel(lhs: &str, op: Cmp, rhs: &str) -> Relation {
        Relation::new(dim(lhs), op, dim(rhs))
    }

    fn even_d() -> Facts {
        Facts::new(&[rel("D % 2", Cmp::Eq, "0")])
    }

    #[test]
    fn contradicting_relations_are_told_apart() {
        let relation = |lhs: &str, op: Cmp, rhs: &str| Relation::new(dim(lhs), op, dim(rhs));
        assert!(Facts::contradict(&[
            relation("N", Cmp::Gt, "M"),
            relation("M", Cmp::Gt, "N"),
        ]));
        assert!(Facts::contradict(&[
            relation("N + 1", Cmp::Le, "M"),
            relation("M", Cmp::Le, "N"),
        ]));
        assert!(!Facts::contradict(&[
            relation("N", Cmp::Gt, "M"),
            relation("M + 1", Cmp::Le, "N"),
        ]));
        assert!(!Facts::contradict(&[]));
    }

    #[test]
    fn an_even_dim_is_twice_its_half() {
        let facts = even_d();
        for text in ["D / 2 * 2", "D / 2 + D / 2", "2 * (D / 2)"] {
            assert_eq!(facts.simplify(&dim(text)).to_string(), "D", "{text}");
            assert_eq!(facts.compare(&dim(text), &dim("D")), Verdict::Equal);
        }
        assert_eq!(facts.simplify(&dim("D % 2")).to_string(), "0");
        assert_eq!(facts.simplify(&dim("D / 2")).to_string(), "D / 2");
        assert_eq!(
            facts.simplify(&dim("H * (D / 2) * 2 + 1")).to_string(),
            "D * H + 1"
        );
        // `0 == D % 2` is the same fact.
        let turned = Facts::new(&[rel("0", Cmp::Eq, "D % 2")]);
        assert_eq!(turned.simplify(&dim("D / 2 * 2")).to_string(), "D");
        // One more than the whole is certainly not it.
        assert_eq!(
            facts.compare(&dim("D / 2 + D / 2 + 1"), &dim("D")),
            Verdict::Different(())
        );
    }

    #[test]
    fn without_the_fact_the_halves_stay_undecided() {
        let facts = Facts::none();
        for text in ["D / 2 * 2", "D / 2 + D / 2", "2 * (D / 2)"] {
            assert_eq!(
                facts.simplify(&dim(text)).to_string(),
                "2 * (D / 2)",
                "{text}"
            );
            assert_eq!(facts.compare(&dim(text), &dim("D")), Verdict::Possible);
        }
        // A fact about another name says nothing about `D`.
        let other = Facts::new(&[rel("E % 2", Cmp::Eq, "0")]);
        assert_eq!(
            other.compare(&dim("D / 2 * 2"), &dim("D")),
            Verdict::Possible
        );
        // Nor does an odd divisor about the half.
        let three = Facts::new(&[rel("D % 3", Cmp::Eq, "0")]);
        assert_eq!(
            three.compare(&dim("D / 2 * 2"), &dim("D")),
            Verdict::Possible
        );
        assert_eq!(three.simplify(&dim("D / 3 * 3")).to_string(), "D");
    }

    #[test]
    fn a_name_that_divides_another_multiplies_back_to_it() {
        let facts = Facts::new(&[rel("H % KVH", Cmp::Eq, "0")]);
        // llama's `repeat_kv`: KVH heads repeated H / KVH times are the H heads.
        assert_eq!(facts.simplify(&dim("KVH * (H / KVH)")).to_string(), "H");
        assert_eq!(
            facts.compare(&dim("B * (KVH * (H / KVH))"), &dim("B * H")),
            Verdict::Equal
        );
        assert_eq!(facts.simplify(&dim("H / KVH")).to_string(), "H / KVH");
        assert_eq!(facts.simplify(&dim("H % KVH")).to_string(), "0");
        // Not the other way round, and not without the fact.
        let other = Facts::new(&[rel("KVH % H", Cmp::Eq, "0")]);
        assert_eq!(
            other.compare(&dim("KVH * (H / KVH)"), &dim("H")),
            Verdict::Possible
        );
        assert_eq!(
            Facts::none().compare(&dim("KVH * (H / KVH)"), &dim("H")),
            Verdict::Possible
        );
        // With a literal multiple on the same name too.
        let both = Facts::new(&[rel("H % KVH", Cmp::Eq, "0"), rel("H % 2", Cmp::Eq, "0")]);
        assert_eq!(
            both.compare(&dim("KVH * (H / KVH)"), &dim("H")),
            Verdict::Equal
        );
        assert_eq!(both.compare(&dim("H / 2 * 2"), &dim("H")), Verdict::Equal);
    }

    #[test]
    fn two_facts_on_one_name_join() {
        let facts = Facts::new(&[rel("D % 2", Cmp::Eq, "0"), rel("D % 3", Cmp::Eq, "0")]);
        assert_eq!(facts.compare(&dim("D / 2 * 2"), &dim("D")), Verdict::Equal);
        assert_eq!(facts.compare(&dim("D / 3 * 3"), &dim("D")), Verdict::Equal);
        assert_eq!(facts.simplify(&dim("D % 6")).to_string(), "0");
    }

    #[test]
    fn a_product_of_dims_of_at_least_one_is_at_least_one() {
        let facts = Facts::new(&[
            rel("B", Cmp::Ge, "1"),
            rel("T", Cmp::Ge, "1"),
            rel("E", Cmp::Gt, "0"),
        ]);
        // A reshape of `[B, T, E]` to `[B, T, 2 * E]`: twice the elements, never the same.
        assert_eq!(
            facts.compare(&dim("B * T * E"), &dim("2 * B * T * E")),
            Verdict::Different(())
        );
        assert_eq!(facts.decide(&rel("B * T", Cmp::Ge, "1")), Some(true));
        assert_eq!(
            facts.decide(&rel("B * T * E", Cmp::Lt, "B * T * E + E")),
            Some(true)
        );
        // Without the fact on one of them, it may be 0.
        let some = Facts::new(&[rel("B", Cmp::Ge, "1"), rel("T", Cmp::Ge, "1")]);
        assert_eq!(
            some.compare(&dim("B * T * E"), &dim("2 * B * T * E")),
            Verdict::Possible
        );
        assert_eq!(
            Facts::none().compare(&dim("B * T"), &dim("2 * B * T")),
            Verdict::Possible
        );
        // A difference of products is not decided by their least values.
        assert_eq!(facts.decide(&rel("B * T", Cmp::Ge, "E")), None);
        // `B >= 2`: `B * T` is at least `2 * T`, so at least 2.
        let two = Facts::new(&[rel("B", Cmp::Ge, "2"), rel("T", Cmp::Ge, "1")]);
        assert_eq!(two.decide(&rel("B * T", Cmp::Ge, "2")), Some(true));
        assert_eq!(two.decide(&rel("B * T", Cmp::Ge, "3")), None);
    }

    #[test]
    fn inequalities_decide_relations() {
        let facts = Facts::new(&[rel("T", Cmp::Le, "P")]);
        assert_eq!(facts.decide(&rel("T", Cmp::Le, "P")), Some(true));
        assert_eq!(facts.decide(&rel("P", Cmp::Ge, "T")), Some(true));
        assert_eq!(facts.decide(&rel("T", Cmp::Le, "P + 1")), Some(true));
        assert_eq!(facts.decide(&rel("T", Cmp::Gt, "P")), Some(false));
        assert_eq!(facts.decide(&rel("T + 1", Cmp::Le, "P")), None);
        assert_eq!(facts.decide(&rel("T", Cmp::Lt, "P")), None);
        assert_eq!(facts.decide(&rel("T", Cmp::Eq, "P")), None);
        let strict = Facts::new(&[rel("T", Cmp::Lt, "P")]);
        assert_eq!(strict.decide(&rel("T + 1", Cmp::Le, "P")), Some(true));
        assert_eq!(strict.decide(&rel("T", Cmp::Eq, "P")), Some(false));
        assert_eq!(strict.compare(&dim("T"), &dim("P")), Verdict::Different(()));
        assert_eq!(strict.decide(&rel("P", Cmp::Ne, "T")), Some(true));
        // Two steps: `T <= P` and `P <= M` give `T <= M`.
        let chain = Facts::new(&[rel("T", Cmp::Le, "P"), rel("P", Cmp::Le, "M")]);
        assert_eq!(chain.decide(&rel("T", Cmp::Le, "M")), Some(true));
        assert_eq!(chain.decide(&rel("M", Cmp::Lt, "T")), Some(false));
        let at_least_one = Facts::new(&[rel("N", Cmp::Ge, "1")]);
        assert_eq!(at_least_one.decide(&rel("N", Cmp::Eq, "0")), Some(false));
    }

    #[test]
    fn without_a_fact_inequalities_stay_undecided() {
        let facts = Facts::none();
        assert_eq!(facts.decide(&rel("T", Cmp::Le, "P")), None);
        assert_eq!(facts.decide(&rel("T", Cmp::Gt, "P")), None);
        assert_eq!(facts.decide(&rel("N", Cmp::Eq, "0")), None);
        // The normal form alone: sizes are never negative.
        assert_eq!(facts.decide(&rel("T", Cmp::Le, "T + P")), Some(true));
        assert_eq!(facts.decide(&rel("T + 1", Cmp::Le, "T")), Some(false));
        assert_eq!(facts.decide(&rel("3", Cmp::Lt, "2")), Some(false));
        assert_eq!(
            facts.decide(&Relation::new(Dim::Unknown, Cmp::Le, dim("P"))),
            None
        );
    }

    #[test]
    fn facts_that_contradict_themselves_are_not_used() {
        for relations in [
            vec![rel("T", Cmp::Lt, "P"), rel("P", Cmp::Lt, "T")],
            vec![rel("N", Cmp::Ge, "5"), rel("N", Cmp::Le, "3")],
            vec![rel("4", Cmp::Le, "3")],
            vec![rel("7 % 2", Cmp::Eq, "0")],
            vec![rel("D % 2", Cmp::Eq, "0"), rel("D % 2", Cmp::Eq, "1")],
            // A remainder by 2 is never 3.
            vec![rel("N % 2", Cmp::Eq, "3")],
        ] {
            let facts = Facts::new(&relations);
            assert!(facts.is_empty(), "{relations:?}");
            assert_eq!(facts.decide(&rel("T", Cmp::Le, "P")), None);
        }
        // Facts the engine cannot use are left out, the others kept.
        let facts = Facts::new(&[
            rel("D % K", Cmp::Eq, "0"),
            rel("(D + 1) % 2", Cmp::Eq, "0"),
            rel("H * D", Cmp::Eq, "E"),
            rel("T", Cmp::Le, "P"),
        ]);
        assert_eq!(
            facts.compare(&dim("(D + 1) / 2 * 2"), &dim("D + 1")),
            Verdict::Possible
        );
        // `D % K == 0` is used, since two names can be a multiple of one another.
        assert_eq!(facts.compare(&dim("D / K * K"), &dim("D")), Verdict::Equal);
        assert_eq!(facts.decide(&rel("T", Cmp::Le, "P")), Some(true));
    }

    #[test]
    fn an_equality_decides_what_differs_from_it_by_a_constant() {
        let odd = Facts::new(&[rel("NC % 2", Cmp::Eq, "1")]);
        assert_eq!(odd.compare(&dim("NC % 2"), &dim("1")), Verdict::Equal);
        assert_eq!(
            odd.compare(&dim("NC % 2"), &dim("0")),
            Verdict::Different(())
        );
        assert_eq!(odd.compare(&dim("1"), &dim("NC % 2")), Verdict::Equal);
        // Nothing about another name.
        assert_eq!(odd.compare(&dim("N % 2"), &dim("1")), Verdict::Possible);
        let heads = Facts::new(&[rel("E", Cmp::Eq, "H * D")]);
        assert_eq!(heads.compare(&dim("H * D"), &dim("E")), Verdict::Equal);
        assert_eq!(
            heads.compare(&dim("H * D + 1"), &dim("E")),
            Verdict::Different(())
        );
        assert_eq!(
            heads.compare(&dim("H * D"), &dim("2 * E")),
            Verdict::Possible
        );
    }

    #[test]
    fn facts_in_force_decide_comparisons_of_dims() {
        let positive = Facts::new(&[rel("E", Cmp::Ge, "1")]);
        // By the normal form alone, `3 * E` may be `E` (where `E` is 0).
        assert_eq!(dim("3 * E").compare(&dim("E")), Verdict::Possible);
        positive.under(|| {
            assert_eq!(dim("3 * E").compare(&dim("E")), Verdict::Different(()));
            assert_eq!(dim("E").compare(&dim("E")), Verdict::Equal);
            // A name the facts say nothing of stays open.
            assert_eq!(dim("3 * H").compare(&dim("H")), Verdict::Possible);
        });
        // Out of `under`, the facts are gone again.
        assert_eq!(dim("3 * E").compare(&dim("E")), Verdict::Possible);
        let shorter = Facts::new(&[rel("T", Cmp::Lt, "P")]);
        shorter.under(|| {
            assert_eq!(dim("T").compare(&dim("P")), Verdict::Different(()));
            assert_eq!(dim("T + 1").compare(&dim("P")), Verdict::Possible);
            // The innermost facts are the ones in force.
            positive.under(|| assert_eq!(dim("T").compare(&dim("P")), Verdict::Possible));
        });
    }

    /// A name two branches give differently (`?1`: `T` or `P + T`) satisfies what both its
    /// sizes satisfy, and nothing else; a name of names (`?2`: `?1` or `P + T`) too.
    #[test]
    fn a_size_of_either_branch_satisfies_what_both_sizes_do() {
        // `?N` is no name a contract can write: built here as the walk builds it.
        let size = |text: &str| match text.starts_with('?') {
            true => Dim::symbol(text),
            false => dim(text),
        };
        let joined = |name: &str, op: Cmp, rhs: &str| Relation::new(size(name), op, dim(rhs));
        let mut facts = Facts::new(&[rel("T", Cmp::Ge, "1")]);
        facts.set_alternatives("?1", dim("T"), dim("P + T"));
        facts.set_alternatives("?2", size("?1"), dim("P + T"));
        for name in ["?1", "?2"] {
            assert_eq!(facts.decide(&joined(name, Cmp::Le, "P + T")), Some(true));
            assert_eq!(facts.decide(&joined(name, Cmp::Ge, "1")), Some(true));
            assert_eq!(facts.decide(&joined(name, Cmp::Ge, "T")), Some(true));
            // `T` for one branch, `P + T` (where `P` may be 0) for the other.
            assert_eq!(facts.decide(&joined(name, Cmp::Eq, "T")), None);
            assert_eq!(facts.decide(&joined(name, Cmp::Eq, "P + T")), None);
            assert_eq!(facts.decide(&joined(name, Cmp::Lt, "T")), Some(false));
            assert_eq!(
                facts.decide(&joined(name, Cmp::Eq, "P + T + 1")),
                Some(false)
            );
        }
        // The broadcast of either against `P + T` is `P + T`; without `T >= 1` (`T` of 0
        // against `P` of 1 gives 0), it is not known.
        let broadcast = |facts: &Facts| {
            facts.under(|| {
                let a = Shape::new(vec![dim("B"), size("?1")]);
                let b = Shape::new(vec![dim("P + T")]);
                a.broadcast(&b).unwrap().to_string()
            })
        };
        assert_eq!(broadcast(&facts), "[B, P + T]");
        let mut unbounded = Facts::none();
        unbounded.set_alternatives("?1", dim("T"), dim("P + T"));
        assert_eq!(broadcast(&unbounded), "[B, _]");
        // A name whose sizes are gone (a loop's index forgotten) decides nothing.
        facts.map_alternatives(|_| Dim::Unknown);
        assert_eq!(facts.decide(&joined("?1", Cmp::Le, "P + T")), None);
    }
}
