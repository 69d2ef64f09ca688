//! Glue code that calls a contracted function with arguments it rejects, and expects the
//! failure: `cargo contracts check` must not report it.

use candle_contracts_attacks::round2::g_api::{f4, f8};
use candle_core::{DType, Device, Result, Tensor};

#[test]
#[should_panic(expected = "contract violated")]
fn wrong_width_panics() {
    let x = Tensor::zeros((2, 4), DType::F32, &Device::Cpu).unwrap();
    f8(&x).unwrap();
}

#[test]
fn wrong_width_is_caught() {
    let x = Tensor::zeros((2, 4), DType::F32, &Device::Cpu).unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        f8(&x).unwrap();
    }));
    assert!(caught.is_err());
}

#[test]
fn try_closure() {
    let x = Tensor::zeros((2, 4), DType::F32, &Device::Cpu).unwrap();
    let result = (|| -> Result<Tensor> {
        let y = f8(&x)?;
        Ok(y)
    })();
    assert!(result.is_err());
}

#[test]
fn dispatch_on_width() -> Result<()> {
    let x = Tensor::zeros((2, 4), DType::F32, &Device::Cpu)?;
    let y = if x.dim(1)? == 8 { f8(&x)? } else { f4(&x)? };
    assert_eq!(y.dims(), &[2, 4]);
    Ok(())
}

#[test]
fn thread_join() {
    let x = Tensor::zeros((2, 4), DType::F32, &Device::Cpu).unwrap();
    let handle = std::thread::spawn(move || {
        f8(&x).unwrap();
    });
    assert!(handle.join().is_err());
}

#[test]
fn never_called_closure() -> Result<()> {
    let x = Tensor::zeros((2, 4), DType::F32, &Device::Cpu)?;
    let _wide = || f8(&x).unwrap();
    f4(&x)?;
    Ok(())
}
