//! A violation reaches the caller as the function's own error type: candle's, anyhow's, a boxed
//! error or the user's, and the typed `ContractError` can always be recovered.

use candle_contracts::{contract, ContractError};
use candle_core::{DType, Device, Tensor};

fn bad_target() -> (Tensor, Tensor) {
    let logits = Tensor::zeros((2, 3), DType::F32, &Device::Cpu).unwrap();
    let target = Tensor::new(&[0u32, 3], &Device::Cpu).unwrap();
    (logits, target)
}

#[contract(logits: f32[N, C], target: u32[N] in 0..C)]
fn with_candle(logits: &Tensor, target: &Tensor) -> candle_core::Result<Tensor> {
    candle_nn::loss::cross_entropy(logits, target)
}

#[contract(logits: f32[N, C], target: u32[N] in 0..C)]
fn with_anyhow(logits: &Tensor, target: &Tensor) -> anyhow::Result<Tensor> {
    Ok(candle_nn::loss::cross_entropy(logits, target)?)
}

#[contract(logits: f32[N, C], target: u32[N] in 0..C)]
fn with_boxed(
    logits: &Tensor,
    target: &Tensor,
) -> Result<Tensor, Box<dyn std::error::Error + Send + Sync>> {
    Ok(candle_nn::loss::cross_entropy(logits, target)?)
}

#[derive(Debug)]
enum TrainError {
    Contract(ContractError),
    Candle(candle_core::Error),
}

impl From<ContractError> for TrainError {
    fn from(error: ContractError) -> Self {
        TrainError::Contract(error)
    }
}

impl From<candle_core::Error> for TrainError {
    fn from(error: candle_core::Error) -> Self {
        TrainError::Candle(error)
    }
}

#[contract(logits: f32[N, C], target: u32[N] in 0..C)]
fn with_own_error(logits: &Tensor, target: &Tensor) -> Result<Tensor, TrainError> {
    Ok(candle_nn::loss::cross_entropy(logits, target)?)
}

#[contract(target: u32[N] in 0..10)]
fn with_own_error_unchecked(logits: &Tensor, target: &Tensor) -> Result<Tensor, TrainError> {
    Ok(candle_nn::loss::cross_entropy(logits, target)?)
}

#[test]
fn candle_errors_keep_the_typed_error_through_wrappers() {
    let (logits, target) = bad_target();
    let error = with_candle(&logits, &target).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("contract violated in `with_candle`"),
        "{error}"
    );
    assert_eq!(
        ContractError::find_in(&error).unwrap().violations()[0].argument(),
        "target"
    );
    let wrapped = error.context("in the training loop");
    assert_eq!(
        ContractError::find_in(&wrapped).unwrap().function(),
        "with_candle"
    );
    let in_candle_op = (|| -> candle_core::Result<Tensor> {
        let loss = with_candle(&logits, &target)?;
        loss.exp()
    })()
    .unwrap_err();
    assert!(ContractError::find_in(&in_candle_op).is_some());
}

#[test]
fn anyhow_and_boxed_errors_downcast() {
    let (logits, target) = bad_target();
    let error = with_anyhow(&logits, &target).unwrap_err();
    let contract = error
        .downcast_ref::<ContractError>()
        .expect("a ContractError");
    assert_eq!(contract.violations()[0].index(), Some(&[1][..]));
    let error = with_boxed(&logits, &target).unwrap_err();
    assert!(error.downcast_ref::<ContractError>().is_some());
}

#[test]
fn user_error_types_with_from() {
    let (logits, target) = bad_target();
    match with_own_error(&logits, &target) {
        Err(TrainError::Contract(error)) => assert_eq!(error.violations().len(), 1),
        other => panic!("expected a contract error, got {other:?}"),
    }
    let good = Tensor::new(&[0u32, 2], &Device::Cpu).unwrap();
    match with_own_error(&logits, &good) {
        Ok(loss) => assert!((loss.to_scalar::<f32>().unwrap() - 3f32.ln()).abs() < 1e-6),
        Err(other) => panic!("{other:?}"),
    }
    // Errors of the body keep their own variant.
    let wrong_rank_logits = Tensor::zeros((2, 3, 1), DType::F32, &Device::Cpu).unwrap();
    match with_own_error_unchecked(&wrong_rank_logits, &good) {
        Err(TrainError::Candle(error)) => assert!(ContractError::find_in(&error).is_none()),
        other => panic!("expected a candle error, got {other:?}"),
    }
}

#[test]
fn debug_prints_the_message_and_alternate_debug_the_structure() {
    let (logits, target) = bad_target();
    let error = with_anyhow(&logits, &target).unwrap_err();
    let contract = error.downcast_ref::<ContractError>().unwrap();
    assert_eq!(format!("{contract:?}"), contract.to_string());
    assert!(format!("{contract:#?}").starts_with("ContractError {\n    function: \"with_anyhow\""));
}

fn epoch(logits: &Tensor, target: &Tensor) -> candle_core::Result<Tensor> {
    use candle_core::Context;
    with_candle(logits, target).context("epoch 3")
}

#[test]
fn find_in_sees_through_every_candle_wrapper() {
    let (logits, target) = bad_target();
    let through_trait = epoch(&logits, &target).unwrap_err();
    // `WrappedContext` holding the candle error, under a backtrace when one is captured.
    assert!(
        through_trait.to_string().contains("epoch 3"),
        "{through_trait}"
    );
    assert_eq!(
        ContractError::find_in(&through_trait).unwrap().function(),
        "with_candle"
    );
    let error = with_candle(&logits, &target).unwrap_err();
    let layered = candle_core::Error::WithBacktrace {
        inner: Box::new(error.with_path("model.safetensors").context("epoch 3")),
        backtrace: Box::new(std::backtrace::Backtrace::force_capture()),
    };
    assert!(ContractError::find_in(&layered).is_some());
}

#[test]
fn find_in_error_walks_anyhow_and_boxed_chains() {
    let (logits, target) = bad_target();
    // A candle error carried on by `?` into anyhow, then given anyhow's own context.
    let error = (|| -> anyhow::Result<Tensor> {
        use anyhow::Context;
        let loss = epoch(&logits, &target).context("training")?;
        Ok(loss)
    })()
    .unwrap_err();
    assert!(error.downcast_ref::<ContractError>().is_none());
    let found = ContractError::find_in_error(error.as_ref()).expect("through anyhow");
    assert_eq!(found.violations()[0].argument(), "target");
    // A candle error boxed by `?`.
    let boxed = (|| -> Result<Tensor, Box<dyn std::error::Error + Send + Sync>> {
        Ok(with_candle(&logits, &target)?)
    })()
    .unwrap_err();
    assert!(boxed.downcast_ref::<ContractError>().is_none());
    assert!(ContractError::find_in_error(&*boxed).is_some());
    // The plain error and a bare `io::Error` holding it.
    let plain = with_anyhow(&logits, &target).unwrap_err();
    assert!(ContractError::find_in_error(plain.as_ref()).is_some());
    let io = std::io::Error::other(plain.downcast::<ContractError>().unwrap());
    assert!(ContractError::find_in_error(&io).is_some());
    // Nothing to find.
    let other = candle_core::Error::Msg("no contract".into());
    assert!(ContractError::find_in_error(&other).is_none());
}

#[contract(x: f32[N, 2])]
fn rank_two(x: &Tensor) -> candle_core::Result<()> {
    let _ = x;
    Ok(())
}

#[contract(x: f32[*B, C], y: f32[*B, C])]
fn same_batch(x: &Tensor, y: &Tensor) -> candle_core::Result<()> {
    let _ = (x, y);
    Ok(())
}

#[test]
fn messages_stay_short_for_huge_ranks() {
    let x = Tensor::zeros(vec![1usize; 5000], DType::F32, &Device::Cpu).unwrap();
    let error = rank_two(&x).unwrap_err();
    let message = error.to_string();
    assert!(message.len() < 2000, "{} bytes:\n{message}", message.len());
    assert!(message.contains("`x`"), "{message}");
    assert!(message.contains("rank 5000"), "{message}");

    let mut dims = vec![1usize; 5000];
    dims.push(3);
    let x = Tensor::zeros(dims.clone(), DType::F32, &Device::Cpu).unwrap();
    dims[4000] = 2;
    let y = Tensor::zeros(dims, DType::F32, &Device::Cpu).unwrap();
    let error = same_batch(&x, &y).unwrap_err();
    let message = error.to_string();
    assert!(message.len() < 2000, "{} bytes:\n{message}", message.len());
    assert!(message.contains("`y`"), "{message}");
    assert!(message.contains("rank 5001"), "{message}");
    assert!(message.contains("dim 4000 is 2, expected 1"), "{message}");
}
