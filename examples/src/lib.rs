//! Annotated candle models on real data, and the failures candle-contracts turns into clear
//! errors. Each example binary in `examples/` is a thin command line over a module here, so the
//! integration tests run the same code paths.
//!
//! - [`digits`]: an MLP on the UCI handwritten digits, cross-entropy, 10 classes.
//! - [`breast_cancer`]: binary classification with a sigmoid head and binary cross-entropy.
//! - [`failures`]: every failure scenario run unguarded and guarded, side by side.

pub mod breast_cancer;
pub mod data;
pub mod digits;
pub mod failures;

use candle_core::{Device, Result, Tensor};
use candle_nn::VarMap;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Overwrites every variable of `varmap` with seeded values, so that runs are reproducible
/// (candle's CPU generator cannot be seeded): weights uniform in ±1/sqrt(fan_in), as candle's
/// `linear` draws them, biases 0.
///
/// # Errors
///
/// candle's errors setting a variable.
pub fn seeded_init(varmap: &VarMap, seed: u64) -> Result<()> {
    let vars = varmap
        .data()
        .lock()
        .map_err(|_| candle_core::Error::msg("the VarMap's lock is poisoned"))?;
    let mut names: Vec<&String> = vars.keys().collect();
    names.sort();
    let mut rng = StdRng::seed_from_u64(seed);
    for name in names {
        let var = &vars[name];
        if name.ends_with("bias") {
            var.set(&var.zeros_like()?)?;
            continue;
        }
        let fan_in = var.dims().last().copied().unwrap_or(1).max(1);
        let bound = 1.0 / (fan_in as f32).sqrt();
        let values: Vec<f32> = (0..var.elem_count())
            .map(|_| rng.random_range(-bound..bound))
            .collect();
        var.set(&Tensor::from_vec(values, var.dims(), var.device())?.to_dtype(var.dtype())?)?;
    }
    Ok(())
}

/// Parses an example's command line; on `--help` or bad arguments, prints clap's text and
/// returns the exit status instead (0 for help, 2 for bad arguments).
///
/// # Errors
///
/// The exit status to return when the arguments do not describe a run.
pub fn parse_args<A, I, T>(args: I) -> std::result::Result<A, u8>
where
    A: clap::Parser,
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    A::try_parse_from(args).map_err(|error| {
        let _ = error.print();
        if error.use_stderr() { 2 } else { 0 }
    })
}

/// The device named on the command line; when there is none by that name, prints why and
/// returns exit status 2 instead.
///
/// # Errors
///
/// The exit status to return, as [`device`] refuses the name.
pub fn device_arg(name: &str) -> std::result::Result<Device, u8> {
    device(name).map_err(|error| {
        eprintln!("error: {error}");
        2
    })
}

/// Prints a failed run's error with its causes, one per line, and returns exit status 1.
pub fn report_failure(error: &anyhow::Error) -> u8 {
    eprintln!("error: {error}");
    for cause in error.chain().skip(1) {
        eprintln!("{cause}");
    }
    1
}

/// Exit status 0 when a trained model reaches the examples' accuracy floor of 0.9, else 1.
pub fn accuracy_status(accuracy: f64) -> u8 {
    if accuracy >= 0.9 {
        0
    } else {
        eprintln!("error: accuracy below 0.9");
        1
    }
}

/// The training progress bar of the examples: batches done of all epochs' batches.
pub fn progress_bar() -> indicatif::ProgressBar {
    indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} batches  {msg}")
            .expect("a valid template"),
    )
}

/// The device named on the command line: `cpu`, or `cuda` when built with `--features cuda`.
///
/// # Errors
///
/// An unknown name, or `cuda` in a build without CUDA.
pub fn device(name: &str) -> anyhow::Result<Device> {
    match name {
        "cpu" => Ok(Device::Cpu),
        "cuda" if cfg!(feature = "cuda") => Ok(Device::new_cuda(0)?),
        "cuda" => anyhow::bail!(
            "this build has no CUDA: run with `--features cuda` (needs the CUDA toolkit)"
        ),
        other => anyhow::bail!("unknown device `{other}`: expected `cpu` or `cuda`"),
    }
}
