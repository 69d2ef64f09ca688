//! Reading tensor data for the value rules: in place on the CPU (`cpu.rs`), with candle ops and
//! one small transfer on other devices (`device.rs`).

use std::cell::Cell;

pub(crate) mod cpu;
pub(crate) mod device;

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
