//! The layout walk, shared by the unmasked scan and the masked one: one or more layouts of the
//! same dims (a tensor; a tensor and its mask) read together in logical order as rows of
//! contiguous or evenly strided runs, and the rows cut into blocks that threads share.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use candle_core::Layout;

/// Below this many elements one thread is faster than splitting.
pub(super) const PARALLEL_MIN: usize = 1 << 17;
/// Stored elements per block (a task when splitting; the unit the locating pass reads).
pub(super) const CHUNK: usize = 1 << 16;

/// One dim of a [`Walk`]: its size, its stride in each layout walked, and the axes of the view
/// it stands for, with their sizes.
struct WalkDim<const N: usize> {
    size: usize,
    strides: [usize; N],
    axes: Vec<(usize, usize)>,
}

/// `N` layouts of the same dims (a tensor; a tensor and its mask) as one walk in logical order,
/// reduced to rows: runs of the innermost dim, each starting where its outer index puts it.
/// Size-1 dims are dropped, dims broadcast (stride 0) in every layout are counted in `repeat`
/// instead of read again, and neighbours contiguous with each other in every layout are merged,
/// so a contiguous tensor is one row. Each merged dim keeps the axes of the view it stands for,
/// so a walked element's first index in the view is known: its broadcast axes at 0 (the first
/// time the view shows it).
pub(super) struct Walk<const N: usize> {
    starts: [usize; N],
    dims: Vec<WalkDim<N>>,
    /// How many times each walked position stands in the view (dims broadcast in every layout).
    pub(super) repeat: u64,
    rank: usize,
    empty: bool,
}

impl<const N: usize> Walk<N> {
    /// The walk over `layouts`, which have the same dims.
    pub(super) fn new(layouts: [&Layout; N]) -> Self {
        let view = layouts[0].dims();
        let mut repeat = 1u64;
        let mut empty = false;
        let mut dims: Vec<WalkDim<N>> = Vec::new();
        for (axis, &size) in view.iter().enumerate() {
            let strides: [usize; N] = std::array::from_fn(|k| layouts[k].stride()[axis]);
            if size == 0 {
                empty = true;
            }
            if size == 1 {
                continue;
            }
            if strides.iter().all(|&s| s == 0) {
                repeat = repeat.saturating_mul(size as u64);
                continue;
            }
            match dims.last_mut() {
                Some(last) if (0..N).all(|k| last.strides[k] == size * strides[k]) => {
                    last.size *= size;
                    last.strides = strides;
                    last.axes.push((axis, size));
                }
                _ => dims.push(WalkDim {
                    size,
                    strides,
                    axes: vec![(axis, size)],
                }),
            }
        }
        Self {
            starts: std::array::from_fn(|k| layouts[k].start_offset()),
            dims,
            repeat,
            rank: view.len(),
            empty,
        }
    }

    /// The length of the innermost dim and its stride in each layout.
    pub(super) fn inner(&self) -> (usize, [usize; N]) {
        self.dims
            .last()
            .map_or((1, [1; N]), |d| (d.size, d.strides))
    }

    /// Runs of the innermost dim.
    pub(super) fn rows(&self) -> usize {
        if self.empty {
            return 0;
        }
        let outer = self.dims.len().saturating_sub(1);
        self.dims[..outer].iter().map(|d| d.size).product()
    }

    /// Positions the walk reads (stored elements, each once).
    pub(super) fn stored(&self) -> usize {
        self.rows() * self.inner().0
    }

    /// Where row `row` starts in each layout's storage.
    pub(super) fn row_start(&self, row: usize) -> [usize; N] {
        let outer = self.dims.len().saturating_sub(1);
        let mut rest = row;
        let mut starts = self.starts;
        for dim in self.dims[..outer].iter().rev() {
            let at = rest % dim.size;
            for (start, stride) in starts.iter_mut().zip(dim.strides) {
                *start += at * stride;
            }
            rest /= dim.size;
        }
        starts
    }

    /// The index in the view of position `position` of row `row` (axes broadcast in every
    /// layout at 0: the first time the view shows it).
    pub(super) fn index(&self, row: usize, position: usize) -> Vec<usize> {
        view_index(self.rank, &self.dims, row, position, |d| (d.size, &d.axes))
    }
}

/// The index in a view of rank `rank` of element `position` of row `row`, for a walk over
/// merged `dims` (each with its size and the axes of the view it covers, with their sizes);
/// axes no dim covers (size 1, broadcast) are at 0.
fn view_index<D>(
    rank: usize,
    dims: &[D],
    row: usize,
    position: usize,
    parts: impl Fn(&D) -> (usize, &[(usize, usize)]),
) -> Vec<usize> {
    let mut index = vec![0; rank];
    let Some((inner, outer)) = dims.split_last() else {
        return index;
    };
    let mut place = |axes: &[(usize, usize)], mut at: usize| {
        for &(axis, size) in axes.iter().rev() {
            index[axis] = at % size;
            at /= size;
        }
    };
    place(parts(inner).1, position);
    let mut rest = row;
    for dim in outer.iter().rev() {
        let (size, axes) = parts(dim);
        place(axes, rest % size);
        rest /= size;
    }
    index
}

/// How the stored elements are cut into tasks: parts of one long row, or several short rows.
#[derive(Clone, Copy)]
pub(super) struct Blocks {
    rows: usize,
    inner_len: usize,
    /// Parts per row (long rows) ...
    parts: usize,
    /// ... or rows per block (short rows).
    rows_per_block: usize,
    pub(super) count: usize,
}

impl Blocks {
    pub(super) fn new(rows: usize, inner_len: usize) -> Self {
        if inner_len >= CHUNK {
            let parts = inner_len.div_ceil(CHUNK);
            Self {
                rows,
                inner_len,
                parts,
                rows_per_block: 1,
                count: rows * parts,
            }
        } else {
            let rows_per_block = (CHUNK / inner_len.max(1)).max(1);
            Self {
                rows,
                inner_len,
                parts: 1,
                rows_per_block,
                count: rows.div_ceil(rows_per_block),
            }
        }
    }

    /// `block(b)` for every block, in block order. With `parallel`, the calling thread and
    /// rayon tasks (one fewer than the pool's threads) claim blocks from one counter: the caller
    /// starts at once and a helper joins when it wakes, so a call between other work does not
    /// wait for sleeping workers (a fork-join from outside the pool sleeps until they wake, and
    /// measured no faster than one thread on two cores). A helper that wakes after the last
    /// block is claimed finds nothing to do.
    pub(super) fn map<R: Send + Sync>(
        self,
        parallel: bool,
        block: impl Fn(usize) -> R + Sync,
    ) -> Vec<R> {
        let helpers = rayon::current_num_threads()
            .saturating_sub(1)
            .min(self.count.saturating_sub(1));
        if !parallel || helpers == 0 {
            return (0..self.count).map(block).collect();
        }
        let next = AtomicUsize::new(0);
        let slots: Vec<OnceLock<R>> = (0..self.count).map(|_| OnceLock::new()).collect();
        let claim = || {
            loop {
                let b = next.fetch_add(1, Ordering::Relaxed);
                let Some(slot) = slots.get(b) else { break };
                // Each block is claimed once, so the slot is empty.
                let _ = slot.set(block(b));
            }
        };
        rayon::in_place_scope(|scope| {
            for _ in 0..helpers {
                scope.spawn(|_| claim());
            }
            claim();
        });
        // The scope has joined every helper: each slot is full.
        slots.into_iter().filter_map(OnceLock::into_inner).collect()
    }

    /// The `(row, from, to)` segments of block `block`, in logical order.
    pub(super) fn segments(self, block: usize) -> impl Iterator<Item = (usize, usize, usize)> {
        let (first_row, last_row, from, to) = if self.parts > 1 {
            let part = block % self.parts;
            let from = part * CHUNK;
            let row = block / self.parts;
            (row, row + 1, from, (from + CHUNK).min(self.inner_len))
        } else {
            let first = block * self.rows_per_block;
            let last = (first + self.rows_per_block).min(self.rows);
            (first, last, 0, self.inner_len)
        };
        (first_row..last_row).map(move |row| (row, from, to))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device, Tensor};

    #[test]
    fn walk_merges_contiguous_dims_and_skips_broadcasts() {
        let t = Tensor::zeros((4, 3, 5), DType::F32, &Device::Cpu).unwrap();
        let walk = Walk::new([t.layout()]);
        assert_eq!((walk.rows(), walk.inner()), (1, (60, [1])));
        let narrowed = t.narrow(2, 1, 3).unwrap();
        let walk = Walk::new([narrowed.layout()]);
        assert_eq!((walk.rows(), walk.inner()), (12, (3, [1])));
        assert_eq!(walk.row_start(1), [1 + 5]);
        let broadcast = Tensor::zeros(5, DType::F32, &Device::Cpu)
            .unwrap()
            .broadcast_as((7, 5))
            .unwrap();
        let walk = Walk::new([broadcast.layout()]);
        assert_eq!((walk.rows(), walk.inner().0, walk.repeat), (1, 5, 7));
    }

    #[test]
    fn the_joint_walk_merges_only_dims_contiguous_in_both() {
        let cpu = &Device::Cpu;
        let t = Tensor::zeros((4, 6, 5), DType::F32, cpu).unwrap();
        let same = Tensor::zeros((4, 6, 5), DType::U8, cpu).unwrap();
        let joint = Walk::new([t.layout(), same.layout()]);
        assert_eq!((joint.rows(), joint.inner().0, joint.repeat), (1, 120, 1));
        // An attention-style mask [4, 6, 1] broadcast over the last dim: the first two dims
        // merge, the last is walked with mask stride 0.
        let rows = Tensor::zeros((4, 6, 1), DType::U8, cpu).unwrap();
        let rows = rows.broadcast_as((4, 6, 5)).unwrap();
        let joint = Walk::new([t.layout(), rows.layout()]);
        assert_eq!((joint.rows(), joint.inner()), (24, (5, [1, 0])));
        assert_eq!(joint.row_start(7), [35, 7]);
        assert_eq!(joint.index(7, 3), vec![1, 1, 3]);
        // Broadcast in both: counted, not walked.
        let one = Tensor::zeros((4, 1, 5), DType::F32, cpu).unwrap();
        let one = one.broadcast_as((4, 6, 5)).unwrap();
        let mask = Tensor::zeros((1, 1, 5), DType::U8, cpu).unwrap();
        let mask = mask.broadcast_as((4, 6, 5)).unwrap();
        let joint = Walk::new([one.layout(), mask.layout()]);
        assert_eq!((joint.rows(), joint.inner().0, joint.repeat), (4, 5, 6));
    }

    #[test]
    fn blocks_map_yields_every_block_in_order_from_any_thread() {
        let blocks = Blocks::new(1, 40 * CHUNK + 3);
        assert_eq!(blocks.count, 41);
        let expected: Vec<usize> = (0..41).map(|b| b * 3).collect();
        for parallel in [false, true] {
            assert_eq!(blocks.map(parallel, |b| b * 3), expected);
        }
        // From a worker of the pool (a guard called inside a parallel loop), and from a pool
        // of one thread, which has no helper to spare.
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            assert_eq!(pool.install(|| blocks.map(true, |b| b * 3)), expected);
            let nested: Vec<Vec<usize>> = pool.install(|| {
                use rayon::prelude::*;
                (0..4)
                    .into_par_iter()
                    .map(|_| blocks.map(true, |b| b * 3))
                    .collect()
            });
            assert!(nested.iter().all(|v| *v == expected));
        }
        // One block, and none.
        assert_eq!(Blocks::new(1, 5).map(true, |b| b + 1), vec![1]);
        assert_eq!(Blocks::new(0, 5).map(true, |b| b + 1), Vec::<usize>::new());
    }
}
