//! The three-way answer of every comparison, and the positions a reason names.

use std::fmt;

/// Whether two things (dims, shapes, dtype sets) are the same at run time.
///
/// - `Equal`: for every run-time value of the symbols involved;
/// - `Possible`: for some values and not for others, or the checker cannot tell (anything
///   unknown lands here); never reported;
/// - `Different`: for no values at all, with the reason `R`: a certain bug.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict<R> {
    /// Certainly equal.
    Equal,
    /// Possibly equal: not reported.
    Possible,
    /// Certainly different, and why.
    Different(R),
}

impl<R> Verdict<R> {
    /// Whether the verdict is certain difference.
    pub fn is_different(&self) -> bool {
        matches!(self, Verdict::Different(_))
    }

    /// The verdict of two checks that must both hold: the first certain difference, else
    /// possible if either is, else equal.
    pub fn and(self, other: impl FnOnce() -> Verdict<R>) -> Verdict<R> {
        match self {
            Verdict::Different(reason) => Verdict::Different(reason),
            Verdict::Equal => other(),
            Verdict::Possible => match other() {
                Verdict::Different(reason) => Verdict::Different(reason),
                _ => Verdict::Possible,
            },
        }
    }

    /// The verdict with its reason mapped.
    pub fn map_reason<S>(self, f: impl FnOnce(R) -> S) -> Verdict<S> {
        match self {
            Verdict::Equal => Verdict::Equal,
            Verdict::Possible => Verdict::Possible,
            Verdict::Different(reason) => Verdict::Different(f(reason)),
        }
    }
}

/// A dim position as candle's `Dim` trait takes it: an index from the front (`1usize`) or from
/// the back (`D::Minus1` is `FromEnd(1)`, `D::Minus2` is `FromEnd(2)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DimIndex {
    /// `i`: the i-th dim, 0-based.
    Index(usize),
    /// `D::Minus(k)`: the k-th dim from the end, 1-based.
    FromEnd(usize),
}

impl fmt::Display for DimIndex {
    /// `1` or `D::Minus1`, as the user writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DimIndex::Index(i) => write!(f, "{i}"),
            DimIndex::FromEnd(k @ 1..=2) => write!(f, "D::Minus{k}"),
            DimIndex::FromEnd(k) => write!(f, "D::Minus({k})"),
        }
    }
}

/// Where a dim sits in a shape whose rank may be unknown: counted from the front, or from the
/// back when a run of unknown length comes before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    /// The i-th dim, 0-based.
    Front(usize),
    /// The k-th dim from the end, 1-based (`-1` is the last).
    Back(usize),
}

impl fmt::Display for Axis {
    /// `dim 1`, or `dim -1` for the last.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Axis::Front(i) => write!(f, "dim {i}"),
            Axis::Back(k) => write!(f, "dim -{k}"),
        }
    }
}

/// What is known of a rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rank {
    /// Exactly this rank.
    Exactly(usize),
    /// At least this rank (a shape with a run of unknown length).
    AtLeast(usize),
}

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rank::Exactly(rank) => write!(f, "rank {rank}"),
            Rank::AtLeast(rank) => write!(f, "rank {rank} or more"),
        }
    }
}
