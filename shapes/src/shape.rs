//! Shapes with unknown runs, and tensor types (a dtype set and a shape).

use std::fmt;

use crate::dim::{Dim, Factor};
use crate::dtype::DTypeSet;
use crate::reason::Reason;
use crate::verdict::{Axis, DimIndex, Rank, Verdict};

/// A run of dims of unknown length: `..` (anonymous) or `*B` (named, the same sizes wherever
/// the name appears in one contract).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Run {
    /// `Some("B")` for `*B`, `None` for `..`.
    pub name: Option<String>,
}

impl Run {
    /// `..`.
    pub fn anonymous() -> Run {
        Run { name: None }
    }

    /// `*name`.
    pub fn named(name: impl Into<String>) -> Run {
        Run {
            name: Some(name.into()),
        }
    }
}

/// The shape of a tensor: dims, with at most one run of unknown length among them.
///
/// `[N, C]` has rank 2; `[B, ..]` has rank 1 or more with its first dim known; `[..]` is a
/// wholly unknown shape ([`Shape::unknown`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    front: Vec<Dim>,
    run: Option<Run>,
    /// Dims after the run; empty when there is no run.
    back: Vec<Dim>,
}

/// Where a [`DimIndex`] lands in a [`Shape`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// On a dim the shape knows the place of.
    At(Axis),
    /// Inside or around the run: nothing is known.
    Unknown,
    /// Past a rank that is known: candle's `DimOutOfRange`.
    OutOfRange {
        /// The known rank.
        rank: usize,
    },
}

impl Shape {
    /// A shape of known rank (`[N, C]`).
    pub fn new(dims: Vec<Dim>) -> Shape {
        Shape {
            front: dims,
            run: None,
            back: Vec::new(),
        }
    }

    /// A shape of literal dims (`[2, 3]`).
    pub fn literal(dims: &[usize]) -> Shape {
        Shape::new(dims.iter().map(|&d| Dim::from(d)).collect())
    }

    /// The rank-0 shape `[]` of a scalar.
    pub fn scalar() -> Shape {
        Shape::new(Vec::new())
    }

    /// `[front.., run, back..]`.
    pub fn with_run(front: Vec<Dim>, run: Run, back: Vec<Dim>) -> Shape {
        Shape {
            front,
            run: Some(run),
            back,
        }
    }

    /// `[front.., middle.., back..]`: a shape spliced between dims (a named run replaced by
    /// what it was bound to).
    pub fn join(mut front: Vec<Dim>, middle: Shape, back: Vec<Dim>) -> Shape {
        front.extend(middle.front);
        match middle.run {
            None => {
                front.extend(back);
                Shape::new(front)
            }
            Some(run) => {
                let mut after = middle.back;
                after.extend(back);
                Shape::with_run(front, run, after)
            }
        }
    }

    /// `[..]`: nothing known, not even the rank.
    pub fn unknown() -> Shape {
        Shape::with_run(Vec::new(), Run::anonymous(), Vec::new())
    }

    /// Whether nothing at all is known (`[..]`).
    pub fn is_unknown(&self) -> bool {
        self.front.is_empty() && self.back.is_empty() && self.run == Some(Run::anonymous())
    }

    /// The dims of a shape of known rank.
    pub fn dims(&self) -> Option<&[Dim]> {
        match self.run {
            None => Some(&self.front),
            Some(_) => None,
        }
    }

    /// The same shape with every dim replaced by `f`'s answer (the run kept).
    pub fn map_dims(&self, f: &mut dyn FnMut(&Dim) -> Dim) -> Shape {
        Shape {
            front: self.front.iter().map(&mut *f).collect(),
            run: self.run.clone(),
            back: self.back.iter().map(&mut *f).collect(),
        }
    }

    /// The dims before the run (all dims when there is none).
    pub fn front(&self) -> &[Dim] {
        &self.front
    }

    /// The run of unknown length, if any.
    pub fn run(&self) -> Option<&Run> {
        self.run.as_ref()
    }

    /// The dims after the run (empty when there is none).
    pub fn back(&self) -> &[Dim] {
        &self.back
    }

    /// The dims known counted from the end: those after the run, or all dims.
    fn back_view(&self) -> &[Dim] {
        match self.run {
            None => &self.front,
            Some(_) => &self.back,
        }
    }

    /// The k-th dim from the end (1 is the last), if its place is known.
    pub fn from_end(&self, k: usize) -> Option<Dim> {
        let back = self.back_view();
        let i = back.len().checked_sub(k)?;
        (k >= 1).then(|| back[i].clone())
    }

    /// The shape without its last `k` dims; unknown if they are not all known places.
    pub fn without_last(&self, k: usize) -> Shape {
        let mut shape = self.clone();
        let dims = match shape.run {
            None => &mut shape.front,
            Some(_) => &mut shape.back,
        };
        match dims.len().checked_sub(k) {
            Some(len) => {
                dims.truncate(len);
                shape
            }
            None => Shape::unknown(),
        }
    }

    /// What is known of the rank.
    pub fn rank(&self) -> Rank {
        match self.run {
            None => Rank::Exactly(self.front.len()),
            Some(_) => Rank::AtLeast(self.front.len() + self.back.len()),
        }
    }

    /// Whether every dim is known, rank included.
    pub fn is_fully_known(&self) -> bool {
        self.run.is_none() && self.front.iter().all(|d| !d.is_unknown())
    }

    /// The number of elements: the product of the dims, unknown with a run.
    pub fn elem_count(&self) -> Dim {
        match self.run {
            None => Dim::product(&self.front),
            Some(_) => Dim::Unknown,
        }
    }

    /// Where candle's `to_index` puts `index`.
    pub fn resolve(&self, index: DimIndex) -> Resolved {
        match (index, &self.run) {
            (DimIndex::Index(i), None) if i < self.front.len() => Resolved::At(Axis::Front(i)),
            (DimIndex::FromEnd(k), None) if k >= 1 && k <= self.front.len() => {
                Resolved::At(Axis::Front(self.front.len() - k))
            }
            (_, None) => Resolved::OutOfRange {
                rank: self.front.len(),
            },
            (DimIndex::FromEnd(0), Some(_)) => Resolved::OutOfRange { rank: 0 },
            (DimIndex::Index(i), Some(_)) if i < self.front.len() => Resolved::At(Axis::Front(i)),
            (DimIndex::FromEnd(k), Some(_)) if k <= self.back.len() => Resolved::At(Axis::Back(k)),
            (_, Some(_)) => Resolved::Unknown,
        }
    }

    /// The dim at a resolved axis.
    pub fn get(&self, axis: Axis) -> Dim {
        match axis {
            Axis::Front(i) => self.front.get(i).cloned().unwrap_or_default(),
            Axis::Back(k) => {
                let back = self.back_view();
                back.len()
                    .checked_sub(k)
                    .and_then(|i| back.get(i))
                    .cloned()
                    .unwrap_or_default()
            }
        }
    }

    fn slot(&mut self, axis: Axis) -> Option<(&mut Vec<Dim>, usize)> {
        let (dims, i) = match axis {
            Axis::Front(i) => (&mut self.front, Some(i)),
            Axis::Back(k) if self.run.is_none() => {
                let len = self.front.len();
                (&mut self.front, len.checked_sub(k))
            }
            Axis::Back(k) => {
                let len = self.back.len();
                (&mut self.back, len.checked_sub(k))
            }
        };
        let i = i.filter(|&i| i < dims.len())?;
        Some((dims, i))
    }

    /// The shape with the dim at `axis` replaced (unchanged if `axis` is not in the shape).
    pub fn with_dim(mut self, axis: Axis, dim: Dim) -> Shape {
        if let Some((dims, i)) = self.slot(axis) {
            dims[i] = dim;
        }
        self
    }

    /// The shape without the dim at `axis` (unchanged if `axis` is not in the shape).
    pub fn without_dim(mut self, axis: Axis) -> Shape {
        if let Some((dims, i)) = self.slot(axis) {
            dims.remove(i);
        }
        self
    }

    /// The shape with `dim` appended (`ids.dims()` followed by `D`).
    pub fn appended(mut self, dim: Dim) -> Shape {
        match self.run {
            None => self.front.push(dim),
            Some(_) => self.back.push(dim),
        }
        self
    }

    /// The shape with `dim` inserted where candle's `to_index_plus_one` puts `index`
    /// (`unsqueeze`); unknown if that place is not known; `Err` with the known rank if it is
    /// past the end.
    pub fn inserted(mut self, index: DimIndex, dim: Dim) -> Result<Shape, usize> {
        match (index, &self.run) {
            (DimIndex::Index(i), None) if i <= self.front.len() => self.front.insert(i, dim),
            (DimIndex::FromEnd(k), None) if k >= 1 && k <= self.front.len() + 1 => {
                let at = self.front.len() + 1 - k;
                self.front.insert(at, dim);
            }
            (_, None) => return Err(self.front.len()),
            (DimIndex::FromEnd(0), Some(_)) => return Err(0),
            (DimIndex::Index(i), Some(_)) if i <= self.front.len() => self.front.insert(i, dim),
            (DimIndex::FromEnd(k), Some(_)) if k <= self.back.len() + 1 => {
                let at = self.back.len() + 1 - k;
                self.back.insert(at, dim);
            }
            (_, Some(_)) => return Ok(Shape::unknown()),
        }
        Ok(self)
    }

    /// Whether `self` (the shape given) is the shape `expected`: certainly, possibly, or
    /// certainly not (a rank difference of known ranks, or two dims at the same place that
    /// certainly differ).
    pub fn compare(&self, expected: &Shape) -> Verdict<Reason> {
        let (found_rank, expected_rank) = (self.rank(), expected.rank());
        let mut verdict = match (found_rank, expected_rank) {
            (Rank::Exactly(a), Rank::Exactly(b)) if a != b => Verdict::Different(()),
            (Rank::Exactly(a), Rank::AtLeast(b)) | (Rank::AtLeast(b), Rank::Exactly(a))
                if a < b =>
            {
                Verdict::Different(())
            }
            _ => Verdict::Equal,
        }
        .map_reason(|()| Reason::Rank {
            found: found_rank,
            expected: expected_rank,
        });
        if let (Some(Run { name: Some(a) }), Some(Run { name: Some(b) })) =
            (&self.run, &expected.run)
        {
            let (fixed_found, fixed_expected) = (
                self.front.len() + self.back.len(),
                expected.front.len() + expected.back.len(),
            );
            if a == b && fixed_found != fixed_expected {
                verdict = verdict.and(|| {
                    Verdict::Different(Reason::Other(format!(
                        "{fixed_found} dims besides `*{a}` given, {fixed_expected} expected"
                    )))
                });
            }
        }
        let same_structure = match (&self.run, &expected.run) {
            (None, None) => true,
            (Some(Run { name: Some(a) }), Some(Run { name: Some(b) })) => {
                a == b
                    && self.front.len() == expected.front.len()
                    && self.back.len() == expected.back.len()
            }
            _ => false,
        };
        if !same_structure {
            verdict = verdict.and(|| Verdict::Possible);
        }
        for (i, (found, wanted)) in self.front.iter().zip(&expected.front).enumerate() {
            verdict = verdict.and(|| compare_dim(Axis::Front(i), found, wanted));
        }
        if self.run.is_some() || expected.run.is_some() {
            let (found, wanted) = (self.back_view(), expected.back_view());
            for k in 1..=found.len().min(wanted.len()) {
                let (f, w) = (&found[found.len() - k], &wanted[wanted.len() - k]);
                verdict = verdict.and(|| compare_dim(Axis::Back(k), f, w));
            }
        }
        verdict
    }

    /// The shape candle's `broadcast_shape_binary_op` gives (right-aligned; dims equal or 1);
    /// `Err` only when two dims at one place are certainly different and neither can be 1.
    pub fn broadcast(&self, other: &Shape) -> Result<Shape, Reason> {
        if self.run.is_none() && other.run.is_none() {
            let len = self.front.len().max(other.front.len());
            let mut dims = vec![Dim::Unknown; len];
            for (k, slot) in (1..=len).zip(dims.iter_mut().rev()) {
                *slot = broadcast_dims(Axis::Back(k), back_dim(self, k), back_dim(other, k))?;
            }
            return Ok(Shape::new(dims));
        }
        if self.run.is_some()
            && self.run == other.run
            && self.run.as_ref().is_some_and(|run| run.name.is_some())
            && self.front.len() == other.front.len()
            && self.back.len() == other.back.len()
        {
            let front = pairwise(&self.front, &other.front, Axis::Front)?;
            let back = pairwise(&self.back, &other.back, |i| Axis::Back(self.back.len() - i))?;
            return Ok(Shape::with_run(
                front,
                self.run.clone().unwrap_or_else(Run::anonymous),
                back,
            ));
        }
        let (a, b) = (self.back_view(), other.back_view());
        let aligned = a.len().min(b.len());
        let mut back = vec![Dim::Unknown; aligned];
        for (k, slot) in (1..=aligned).zip(back.iter_mut().rev()) {
            *slot = broadcast_dims(Axis::Back(k), back_dim(self, k), back_dim(other, k))?;
        }
        // A run-free side that fits in the other's back dims leaves the other's front and run.
        for (short, long) in [(self, other), (other, self)] {
            if short.run.is_none() && long.run.is_some() && short.front.len() <= long.back.len() {
                let mut back_dims = long.back[..long.back.len() - aligned].to_vec();
                back_dims.extend(back);
                return Ok(Shape::with_run(
                    long.front.clone(),
                    long.run.clone().unwrap_or_else(Run::anonymous),
                    back_dims,
                ));
            }
        }
        // A run-free side longer than the other's known tail: its extra dims meet the run,
        // and broadcasting keeps each one unless it may be 1.
        let mut tail = Vec::new();
        for (short, long) in [(self, other), (other, self)] {
            if short.run.is_none() && long.run.is_some() {
                let extra = &short.front[..short.front.len() - aligned];
                tail = extra
                    .iter()
                    .map(|d| match d.compare_one() {
                        Verdict::Different(()) => d.clone(),
                        _ => Dim::Unknown,
                    })
                    .collect();
            }
        }
        tail.extend(back);
        Ok(Shape::with_run(Vec::new(), Run::anonymous(), tail))
    }
}

/// The k-th dim from the end, 1 where the shape is shorter (known rank) or unknown (a run).
fn back_dim(shape: &Shape, k: usize) -> Dim {
    let back = shape.back_view();
    match back.len().checked_sub(k) {
        Some(i) => back[i].clone(),
        None if shape.run.is_none() => Dim::lit(1),
        None => Dim::Unknown,
    }
}

fn pairwise(a: &[Dim], b: &[Dim], axis: impl Fn(usize) -> Axis) -> Result<Vec<Dim>, Reason> {
    a.iter()
        .zip(b)
        .enumerate()
        .map(|(i, (x, y))| broadcast_dims(axis(i), x.clone(), y.clone()))
        .collect()
}

fn compare_dim(axis: Axis, found: &Dim, expected: &Dim) -> Verdict<Reason> {
    found.compare(expected).map_reason(|()| Reason::Dim {
        axis,
        found: found.clone(),
        expected: expected.clone(),
    })
}

/// One dim of a broadcast: certain only where both sides are certain.
fn broadcast_dims(axis: Axis, a: Dim, b: Dim) -> Result<Dim, Reason> {
    match a.compare(&b) {
        Verdict::Equal => return Ok(a),
        Verdict::Different(())
            if a.compare_one().is_different() && b.compare_one().is_different() =>
        {
            return Err(Reason::Broadcast {
                axis,
                found: b,
                expected: a,
            });
        }
        _ => {}
    }
    if a.compare_one() == Verdict::Equal {
        Ok(b)
    } else if b.compare_one() == Verdict::Equal {
        Ok(a)
    } else if covers(&a, &b) {
        Ok(b)
    } else if covers(&b, &a) {
        Ok(a)
    } else {
        Ok(Dim::Unknown)
    }
}

/// Whether a broadcast of `small` against `large` can only give `large`: `1 <= small <=
/// large` for every size (`T` against `P + T` where `T >= 1`). Where it runs, `small` is
/// `large`, or 1; and `large` 1 makes `small` 1 too. So too a remainder of `large` by a
/// number `m >= 2` (`T as u32`, BERT's position ids against `T`): below `m` it is `large`;
/// from `m` on it is less than `large`, which is not 1, so only a remainder of 1 runs. So too
/// where `large` is `small` times an integer `k` (Phi's `[B, T, H * HD]` under a norm of
/// `[HD]`): it runs where they are equal, where `small` is 1, or where `large` is 1, which
/// makes `small` 1 too; each gives `large`.
fn covers(small: &Dim, large: &Dim) -> bool {
    let remainder = matches!(small.as_factor(), Some(Factor::Rem(of, by))
        if **of == *large && by.as_constant().is_some_and(|m| m >= 2));
    remainder
        || large.is_multiple_of(small)
        || (Dim::lit(1).at_most(small) == Some(true) && small.at_most(large) == Some(true))
}

impl fmt::Display for Shape {
    /// As a contract writes it: `[N, 1]`, `[*B, D]`, `[..]`, `[]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut items: Vec<String> = self.front.iter().map(Dim::to_string).collect();
        if let Some(run) = &self.run {
            items.push(match &run.name {
                Some(name) => format!("*{name}"),
                None => "..".to_string(),
            });
            items.extend(self.back.iter().map(Dim::to_string));
        }
        write!(f, "[{}]", items.join(", "))
    }
}

/// What the checker knows of one tensor: the dtypes it may have and its shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    /// The dtypes the tensor may have ([`DTypeSet::ANY`] when unknown).
    pub dtypes: DTypeSet,
    /// Its shape ([`Shape::unknown`] when unknown).
    pub shape: Shape,
}

impl TensorType {
    /// A tensor of these dtypes and shape.
    pub fn new(dtypes: impl Into<DTypeSet>, shape: Shape) -> TensorType {
        TensorType {
            dtypes: dtypes.into(),
            shape,
        }
    }

    /// A tensor nothing is known about: any dtype, `[..]`. It never mismatches, and every op
    /// on it yields unknown parts.
    pub fn unknown() -> TensorType {
        TensorType::new(DTypeSet::ANY, Shape::unknown())
    }

    /// Whether nothing at all is known.
    pub fn is_unknown(&self) -> bool {
        self.dtypes.is_any() && self.shape.is_unknown()
    }

    /// The same tensor with another shape.
    pub fn with_shape(&self, shape: Shape) -> TensorType {
        TensorType::new(self.dtypes, shape)
    }

    /// What is known of a value that is `self` on one path and `other` on another (the arms
    /// of an `if` or `match`): either dtype, and the dims both agree on; the rest unknown.
    pub fn join(&self, other: &TensorType) -> TensorType {
        self.join_by(other, &mut |_, _| Dim::Unknown)
    }

    /// [`TensorType::join`], where `disagree` gives the dim of a position whose two dims are
    /// not certainly equal (the caller may name a size of its own; [`Dim::Unknown`] else).
    pub fn join_by(
        &self,
        other: &TensorType,
        disagree: &mut dyn FnMut(&Dim, &Dim) -> Dim,
    ) -> TensorType {
        let dtypes = self.dtypes.union(other.dtypes);
        let shape = match (self.shape.dims(), other.shape.dims()) {
            _ if self.shape == other.shape => self.shape.clone(),
            (Some(a), Some(b)) if a.len() == b.len() => Shape::new(
                a.iter()
                    .zip(b)
                    .map(|(x, y)| {
                        if x.compare(y) == Verdict::Equal {
                            x.clone()
                        } else {
                            disagree(x, y)
                        }
                    })
                    .collect(),
            ),
            _ => Shape::unknown(),
        };
        TensorType::new(dtypes, shape)
    }

    /// Whether `self` (the tensor given) is of type `expected`: shape first, then dtypes.
    pub fn compare(&self, expected: &TensorType) -> Verdict<Reason> {
        self.shape
            .compare(&expected.shape)
            .and(|| compare_dtypes(self.dtypes, expected.dtypes))
    }
}

/// Certainly different only when no dtype is in both sets.
pub fn compare_dtypes(found: DTypeSet, expected: DTypeSet) -> Verdict<Reason> {
    if found.intersection(expected).is_empty() {
        Verdict::Different(Reason::DTypes { found, expected })
    } else if found == expected && found.single().is_some() {
        Verdict::Equal
    } else {
        Verdict::Possible
    }
}

impl fmt::Display for TensorType {
    /// As a contract writes it: `u32[N, 1]`, `u8 | u32 | i64 [N]`, `_[..]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dtypes = self.dtypes.to_string();
        if dtypes.contains(' ') {
            write!(f, "{dtypes} {}", self.shape)
        } else {
            write!(f, "{dtypes}{}", self.shape)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{parse_shape, parse_tensor_type};

    fn s(text: &str) -> Shape {
        parse_shape(text).unwrap()
    }

    fn verdict(found: &str, expected: &str) -> String {
        match s(found).compare(&s(expected)) {
            Verdict::Equal => "equal".to_string(),
            Verdict::Possible => "possible".to_string(),
            Verdict::Different(reason) => reason.to_string(),
        }
    }

    #[test]
    fn shapes_unify_three_ways() {
        assert_eq!(verdict("[N, C]", "[N, C]"), "equal");
        assert_eq!(verdict("[N + 1, C]", "[1 + N, C]"), "equal");
        assert_eq!(verdict("[N, C]", "[N, M]"), "possible");
        assert_eq!(verdict("[N, 1]", "[N]"), "rank 2 given, rank 1 expected");
        assert_eq!(
            verdict("[N, 64]", "[N, 128]"),
            "dim 1: 64 given, 128 expected"
        );
        assert_eq!(verdict("[N]", "[N + 1]"), "dim 0: N given, N + 1 expected");
        assert_eq!(verdict("[N, _]", "[N, 3]"), "possible");
        assert_eq!(verdict("[..]", "[N, 3]"), "possible");
        assert_eq!(verdict("[B, ..]", "[N]"), "possible");
        assert_eq!(
            verdict("[A, B, ..]", "[N]"),
            "rank 2 or more given, rank 1 expected"
        );
        assert_eq!(verdict("[.., 3]", "[N, 4]"), "dim -1: 3 given, 4 expected");
        assert_eq!(verdict("[2, ..]", "[.., 3]"), "possible");
        assert_eq!(verdict("[*B, D]", "[*B, D]"), "equal");
        assert_eq!(
            verdict("[*B, D]", "[*B]"),
            "1 dims besides `*B` given, 0 expected"
        );
        assert_eq!(verdict("[*B, D]", "[*C, D]"), "possible");
        assert_eq!(verdict("[]", "[]"), "equal");
    }

    fn broadcast(a: &str, b: &str) -> String {
        match s(a).broadcast(&s(b)) {
            Ok(shape) => shape.to_string(),
            Err(reason) => reason.to_string(),
        }
    }

    #[test]
    fn broadcasting_is_certain_only_for_literals() {
        assert_eq!(broadcast("[N, C]", "[C]"), "[N, C]");
        assert_eq!(broadcast("[N, 1]", "[1, C]"), "[N, C]");
        assert_eq!(
            broadcast("[N, 3]", "[4]"),
            "dim -1: 4 does not broadcast with 3 (sizes must be equal or 1)"
        );
        // N may be 1, so `N` against `N + 1` is not certain; nor is the size (`N` of 0
        // against 1 gives 0).
        assert_eq!(broadcast("[N]", "[N + 1]"), "[_]");
        // A size of at least 1 against one at least as large: the larger.
        assert_eq!(broadcast("[N + 1]", "[N + M + 1]"), "[M + N + 1]");
        assert_eq!(broadcast("[2, N + 3]", "[1]"), "[2, N + 3]");
        assert_eq!(broadcast("[N]", "[M]"), "[_]");
        assert_eq!(broadcast("[*B, D]", "[D]"), "[*B, D]");
        assert_eq!(broadcast("[*B, D]", "[*B, 1]"), "[*B, D]");
        assert_eq!(broadcast("[A, .., D]", "[X, 1, 5, D]"), "[.., _, _, 5, D]");
        assert_eq!(broadcast("[..]", "[3]"), "[.., 3]");
        assert_eq!(broadcast("[]", "[N, C]"), "[N, C]");
    }

    #[test]
    fn dim_indices_resolve_as_candle_does() {
        let shape = s("[A, B, C]");
        assert_eq!(
            shape.resolve(DimIndex::Index(2)),
            Resolved::At(Axis::Front(2))
        );
        assert_eq!(
            shape.resolve(DimIndex::FromEnd(1)),
            Resolved::At(Axis::Front(2))
        );
        assert_eq!(
            shape.resolve(DimIndex::Index(3)),
            Resolved::OutOfRange { rank: 3 }
        );
        assert_eq!(
            shape.resolve(DimIndex::FromEnd(0)),
            Resolved::OutOfRange { rank: 3 }
        );
        let run = s("[A, .., C]");
        assert_eq!(
            run.resolve(DimIndex::Index(0)),
            Resolved::At(Axis::Front(0))
        );
        assert_eq!(run.resolve(DimIndex::Index(5)), Resolved::Unknown);
        assert_eq!(
            run.resolve(DimIndex::FromEnd(1)),
            Resolved::At(Axis::Back(1))
        );
        assert_eq!(run.resolve(DimIndex::FromEnd(2)), Resolved::Unknown);
        assert_eq!(
            s("[A]")
                .inserted(DimIndex::FromEnd(1), Dim::lit(1))
                .unwrap()
                .to_string(),
            "[A, 1]"
        );
        assert_eq!(s("[A]").inserted(DimIndex::Index(2), Dim::lit(1)), Err(1));
    }

    #[test]
    fn types_print_as_contracts_write_them() {
        let t = parse_tensor_type("u8 | u32 | i64 [N]").unwrap();
        assert_eq!(t.to_string(), "u8 | u32 | i64 [N]");
        assert_eq!(TensorType::unknown().to_string(), "_[..]");
        assert!(TensorType::unknown().is_unknown());
    }
}
