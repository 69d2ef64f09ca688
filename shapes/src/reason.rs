//! Why two tensor types certainly differ, in the words a message uses.

use std::fmt;

use crate::dim::Dim;
use crate::dtype::DTypeSet;
use crate::verdict::{Axis, DimIndex, Rank};

/// Why a check is certain to fail at run time; displayed as a message's note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The ranks differ: `rank 2 given, rank 1 expected`.
    Rank {
        /// The rank of the value given.
        found: Rank,
        /// The rank the op takes.
        expected: Rank,
    },
    /// One dim differs: `dim 1: 64 given, 128 expected`.
    Dim {
        /// Which dim.
        axis: Axis,
        /// Its size in the value given.
        found: Dim,
        /// The size the op takes there.
        expected: Dim,
    },
    /// No dtype in common: `dtype u32 given, f32 | f64 expected`.
    DTypes {
        /// The dtypes the value given may have.
        found: DTypeSet,
        /// The dtypes the op takes.
        expected: DTypeSet,
    },
    /// Two dims that neither equal each other nor are 1, at the same place from the end.
    Broadcast {
        /// Which dim of the result (counted from the end).
        axis: Axis,
        /// The dim of the value given.
        found: Dim,
        /// The dim it must broadcast with.
        expected: Dim,
    },
    /// A reshape to another element count.
    ElementCount {
        /// The element count of the tensor.
        found: Dim,
        /// The element count of the shape asked for.
        expected: Dim,
    },
    /// A dim index past the rank: `dim 2 is past rank 2`.
    DimIndex {
        /// The index as written.
        index: DimIndex,
        /// The tensor's rank.
        rank: usize,
    },
    /// A slice past the end of its dim: `narrow 2 + 3 past dim 0 of size 4`.
    Narrow {
        /// The dim narrowed.
        axis: Axis,
        /// `start + len`.
        end: Dim,
        /// The size of the dim.
        size: Dim,
    },
    /// Anything else, said in words.
    Other(String),
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Rank { found, expected } => write!(f, "{found} given, {expected} expected"),
            Reason::Dim {
                axis,
                found,
                expected,
            } => write!(f, "{axis}: {found} given, {expected} expected"),
            Reason::DTypes { found, expected } => {
                write!(f, "dtype {found} given, {expected} expected")
            }
            Reason::Broadcast {
                axis,
                found,
                expected,
            } => write!(
                f,
                "{axis}: {found} does not broadcast with {expected} (sizes must be equal or 1)"
            ),
            Reason::ElementCount { found, expected } => write!(
                f,
                "the tensor has {found} elements, the shape asked for has {expected}"
            ),
            Reason::DimIndex { index, rank } => write!(f, "dim {index} is past rank {rank}"),
            Reason::Narrow { axis, end, size } => {
                write!(f, "the slice ends at {end}, past {axis} of size {size}")
            }
            Reason::Other(text) => f.write_str(text),
        }
    }
}
