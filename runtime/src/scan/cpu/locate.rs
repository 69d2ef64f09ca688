//! The locating pass, run only when the fast pass found a violation: from the first block that
//! holds one, in logical order, to the first offending element and a few distinct offending
//! values, reading as little as proves the list complete.

use super::tally::{Fast, Part};
use super::walk::{Blocks, Walk};
use crate::error::OFFENDING_SHOWN;
use crate::rule::{Compare, TypedRule};

/// The most blocks the locating pass reads: the first offender's and a few with violations
/// after it.
pub(super) const LOCATE_BLOCKS: usize = 4;

impl<C: Compare> Fast<C> {
    /// The blocks the locating pass reads, in order: from the first with a violation, only
    /// those with violations where the parts are known, [`LOCATE_BLOCKS`] at most.
    pub(super) fn candidates(&self, blocks: Blocks) -> impl Iterator<Item = usize> + '_ {
        let first = self.first_block.unwrap_or(blocks.count);
        (first..blocks.count)
            .filter(|&b| {
                self.blocks
                    .as_ref()
                    .is_none_or(|parts| parts.get(b).is_some_and(|part| part.violating > 0))
            })
            .take(LOCATE_BLOCKS)
    }
}

/// What the locating pass found: the first offending element (row, position in the row,
/// value), distinct offending values in order of first appearance, whether they are all the
/// tensor's (or as many as a message lists), and how many stored elements it read.
pub(super) struct Located<C> {
    pub(super) first: Option<(usize, usize, C)>,
    pub(super) offending: Vec<C>,
    pub(super) complete: bool,
    pub(super) read: u64,
    /// Offending elements met so far.
    seen: u64,
}

impl<C: Compare> Located<C> {
    pub(super) fn new() -> Self {
        Self {
            first: None,
            offending: Vec::new(),
            complete: false,
            read: 0,
            seen: 0,
        }
    }

    /// Notes offending element `v` at `position` of row `row`; whether the list is now
    /// complete: as long as a message shows, every violation seen, or proven by the fast
    /// pass's ranges.
    pub(super) fn offends(
        &mut self,
        row: usize,
        position: usize,
        v: C,
        fast: &Fast<C>,
        rule: &TypedRule<C>,
    ) -> bool {
        self.seen += 1;
        if self.first.is_none() {
            self.first = Some((row, position, v));
        }
        let listed = self.offending.len();
        note_offending(&mut self.offending, v);
        self.complete = self.offending.len() == OFFENDING_SHOWN
            || self.seen == fast.all.violating
            || (self.offending.len() > listed && proven_complete(&fast.all, rule, &self.offending));
        self.complete
    }
}

/// Reads from the first block with a violation, in logical order, for the first offending
/// element and a few distinct offending values; stops as soon as the list is complete, and
/// after [`LOCATE_BLOCKS`] blocks with violations in any case.
pub(super) fn locate<T: Copy, C: Compare>(
    data: &[T],
    widen: impl Fn(T) -> C,
    rule: &TypedRule<C>,
    walk: &Walk<1>,
    blocks: Blocks,
    fast: &Fast<C>,
) -> Located<C> {
    let (_, [inner_stride]) = walk.inner();
    let mut located = Located::new();
    if fast.first_block.is_none() {
        // Nothing offends: the empty list is complete.
        located.complete = true;
        return located;
    }
    'blocks: for b in fast.candidates(blocks) {
        for (row, from, to) in blocks.segments(b) {
            let [start] = walk.row_start(row);
            for position in from..to {
                let v = widen(data[start + position * inner_stride]);
                located.read += 1;
                if rule.is_ignored(v) || rule.accepts(v) {
                    continue;
                }
                if located.offends(row, position, v, fast, rule) {
                    break 'blocks;
                }
            }
        }
    }
    located
}

/// Adds `v` to the distinct offending values (NaN equal to NaN), up to [`OFFENDING_SHOWN`].
pub(super) fn note_offending<C: Compare>(offending: &mut Vec<C>, v: C) {
    let seen = offending
        .iter()
        .any(|&o| o == v || (o.is_nan() && v.is_nan()));
    if !seen && offending.len() < OFFENDING_SHOWN {
        offending.push(v);
    }
}

/// Whether `listed` holds every distinct offending value, by the fast pass's ranges: NaN is
/// listed if any element is NaN, and each side of the interval holds one value, listed.
fn proven_complete<C: Compare>(all: &Part<C>, rule: &TypedRule<C>, listed: &[C]) -> bool {
    // NaN breaks every rule that has intervals or `integral`; without them nothing does.
    let nan_breaks = rule.intervals.is_some() || rule.integral;
    let nan_listed = all.nan == 0 || !nan_breaks || listed.iter().any(|o| o.is_nan());
    let side_listed =
        |side: Option<(C, C)>| side.is_none_or(|(a, b)| a == b && listed.contains(&a));
    nan_listed && side_listed(all.below) && side_listed(all.above)
}
