//! `assert_contract!` under another mode than `full`: its valid draws are still checked in
//! `full` mode (a test of its own: `set_mode` is the whole process's).

use candle_contracts::{assert_contract, contract, set_mode, Mode};
use candle_core::{Result, Tensor};

/// A planted bug: `[N, 1]` for `N > 1` under `return: f32[N]`.
#[contract(x: f32[N], return: f32[N])]
fn column(x: &Tensor) -> Result<Tensor> {
    if x.dims1()? > 1 {
        x.unsqueeze(1)
    } else {
        Ok(x.clone())
    }
}

/// A loss that is never finite, under `return: f32[] finite`.
#[contract(x: f32[N], return: f32[] finite)]
fn nan_loss(x: &Tensor) -> Result<Tensor> {
    x.sum_all()? * f64::NAN
}

#[test]
fn valid_draws_are_checked_in_full_mode_whatever_the_process_mode() {
    for mode in [Mode::Off, Mode::Shapes] {
        set_mode(mode);
        let caught = std::panic::catch_unwind(|| assert_contract!(column, cases = 64));
        let message = caught
            .expect_err("the planted bug fails")
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(message.contains("shrunk to N = 2"), "{mode:?}: {message}");
        let caught = std::panic::catch_unwind(|| assert_contract!(nan_loss, cases = 16));
        let message = caught
            .expect_err("the NaN loss fails")
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(message.contains("finite"), "{mode:?}: {message}");
    }
    set_mode(Mode::Full);
}
