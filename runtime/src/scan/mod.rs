//! Reading tensor data for the value rules: in place on the CPU (`cpu.rs`, and `cpu/masked.rs`
//! under a `where` mask), with candle ops and one small transfer on other devices
//! (`device.rs`). Scans return statistics only; the
//! violations they stand for are built above, in `report.rs`.

use std::cell::Cell;

use candle_core::Tensor;

use crate::rule::{Details, Resolved};

pub(crate) mod cpu;
pub(crate) mod device;
#[cfg(test)]
mod parity;

thread_local! {
    static FORCE_DEVICE_PATH: Cell<bool> = const { Cell::new(false) };
    static DEVICE_TRANSFERS: Cell<u64> = const { Cell::new(0) };
}

/// Makes guards on this thread check CPU tensors the way they check GPU tensors (candle ops and
/// one transfer), so that path is exercised by tests on a machine without a GPU.
pub fn force_device_path(on: bool) {
    FORCE_DEVICE_PATH.with(|flag| flag.set(on));
}

pub(crate) fn device_path_forced() -> bool {
    FORCE_DEVICE_PATH.with(Cell::get)
}

/// How many device-to-host transfers the device path has made on this thread.
pub fn device_transfers() -> u64 {
    DEVICE_TRANSFERS.with(Cell::get)
}

pub(crate) fn count_transfer() {
    DEVICE_TRANSFERS.with(|count| count.set(count.get() + 1));
}

/// One tensor whose value rules need its data read.
pub(crate) struct Request<'t> {
    pub tensor: &'t Tensor,
    /// `where MASK`: the value rules apply only where the mask is non-zero. Already broadcast
    /// to the tensor's dims (a view: stride 0 on broadcast dims), of any dtype; a float mask is
    /// non-zero where it is not `0.0` or `-0.0` (NaN is non-zero, as PyTorch's `bool()`).
    pub mask: Option<&'t Tensor>,
    pub rule: &'t Resolved,
    /// Whether a tensor with no usable element breaks the rule (`ignore` without `allow_all`).
    pub needs_usable: bool,
}

/// What reading one tensor found.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Every element passes.
    Pass,
    /// Elements break the rule, or none is usable: the statistics for the message.
    Fail(Details),
    /// The dtype's values cannot be read (candle's packed `f4` / `f6` formats).
    Unreadable,
    /// The device failed while reading.
    Failed(candle_core::Error),
}

/// Whether candle gives access to a dtype's values (not its packed `f4` / `f6` formats).
pub(crate) fn readable(dtype: candle_core::DType) -> bool {
    use candle_core::DType;
    !matches!(dtype, DType::F6E2M3 | DType::F6E3M2 | DType::F4)
}

/// Whether a tensor is read in place by `cpu.rs` (a CPU tensor, unless the device path is
/// forced); the others go to `device.rs`.
pub(crate) fn reads_in_place(tensor: &Tensor) -> bool {
    tensor.device().is_cpu() && !device_path_forced()
}

/// For the benches: whether every value of `tensor` that `mask` checks is in `lo..=hi`, read
/// by the scan a guard uses (in place on the CPU, else the device path). `None` if the scan
/// could not read it. Not a public API.
#[doc(hidden)]
pub fn range_passes(tensor: &Tensor, mask: Option<&Tensor>, lo: f64, hi: f64) -> Option<bool> {
    use crate::rule::{Interval, Num};
    let rule = Resolved {
        ranges: Some(vec![Interval {
            lo: Some(Num::Float(lo)),
            hi: Some(Num::Float(hi)),
            inclusive: true,
        }]),
        ignore: Vec::new(),
        finite: false,
        allow_all: false,
        integral: false,
    };
    let request = Request {
        tensor,
        mask,
        rule: &rule,
        needs_usable: false,
    };
    let outcome = if reads_in_place(tensor) {
        cpu::scan(&request)
    } else {
        device::scan(std::slice::from_ref(&request)).pop()?
    };
    match outcome {
        Outcome::Pass => Some(true),
        Outcome::Fail(_) => Some(false),
        Outcome::Unreadable | Outcome::Failed(_) => None,
    }
}
