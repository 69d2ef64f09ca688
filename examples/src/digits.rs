//! An MLP classifier of the UCI handwritten digits (8×8 images, 10 classes), written as candle
//! model code usually is (`impl Module`, a `VarMap`, AdamW), with contracts on the model's
//! `forward`, the training step and the batch loader, and `candle_contracts::nn::cross_entropy`
//! as the loss.

// ANCHOR: imports
use candle_contracts::{contract, nn};
use candle_core::{D, DType, Device, Module, Result, Tensor};
use candle_nn::{AdamW, Linear, Optimizer, ParamsAdamW, VarBuilder, VarMap};
use clap::Parser;
use indicatif::ProgressBar;

use crate::data::{self, Dataset};
use crate::seeded_init;
// ANCHOR_END: imports

/// How the labels are numbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Labels {
    /// As in the data set: `0..=9`.
    ZeroBased,
    /// Shifted to `1..=10`, as a mislabelled data set would be.
    OneBased,
}

/// What to train, and how.
#[derive(Debug, Clone)]
pub struct Options {
    pub labels: Labels,
    pub epochs: usize,
    pub batch_size: usize,
    pub hidden: usize,
    pub learning_rate: f64,
    pub seed: u64,
    pub device: Device,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            labels: Labels::ZeroBased,
            epochs: 8,
            batch_size: 64,
            hidden: 64,
            learning_rate: 3e-3,
            seed: 42,
            device: Device::Cpu,
        }
    }
}

// ANCHOR: model
/// Two linear layers with a ReLU: 64 pixels -> `hidden` -> 10 class scores.
#[derive(Debug)]
pub struct Mlp {
    hidden: Linear,
    pub head: Linear,
}

impl Mlp {
    pub fn new(vb: VarBuilder<'_>, hidden: usize, classes: usize) -> Result<Self> {
        Ok(Self {
            hidden: candle_nn::linear(64, hidden, vb.pp("hidden"))?,
            head: candle_nn::linear(hidden, classes, vb.pp("head"))?,
        })
    }
}

impl Module for Mlp {
    /// Class scores for a batch of images.
    #[contract(
        xs: f32[N, F],
        self.hidden.weight(): f32[H, F],
        self.head.weight(): f32[C, H],
        return: f32[N, C] finite,
    )]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.head.forward(&self.hidden.forward(xs)?.relu()?)
    }
}
// ANCHOR_END: model

// ANCHOR: train_step
/// One optimisation step on a batch's features and class indices. `target` is checked against
/// the model's own head before any op runs: `C` is the number of rows of the head's weight,
/// whatever a config says.
#[contract(
    features: f32[N, 64],
    target: u8[N] in 0..C "the digit each image shows",
    model.head.weight(): f32[C, H],
)]
pub fn train_step(
    model: &Mlp,
    optimizer: &mut AdamW,
    features: &Tensor,
    target: &Tensor,
) -> Result<f32> {
    let logits = model.forward(features)?;
    let loss = nn::cross_entropy(&logits, target)?;
    optimizer.backward_step(&loss)?;
    loss.to_scalar::<f32>()
}
// ANCHOR_END: train_step

/// The share of `data` the model classifies right.
pub fn accuracy(model: &Mlp, data: &Dataset, device: &Device) -> Result<f64> {
    let predictions = model
        .forward(&data.features_tensor(device)?)?
        .argmax(D::Minus1)?;
    let labels = data.labels_tensor(device)?.to_dtype(DType::U32)?;
    let correct = predictions
        .eq(&labels)?
        .to_dtype(DType::F32)?
        .sum_all()?
        .to_scalar::<f32>()?;
    Ok(correct as f64 / data.len() as f64)
}

/// What a training run did.
#[derive(Debug, Clone)]
pub struct Report {
    pub train_size: usize,
    pub test_size: usize,
    pub epoch_losses: Vec<f32>,
    pub accuracy: f64,
}

/// Loads the data, splits it 80/20 with the seed, and trains; `bar` shows the batches.
///
/// # Errors
///
/// A contract violation (with the epoch and batch in its context) or any candle error.
pub fn train(options: &Options, bar: &ProgressBar) -> anyhow::Result<Report> {
    let mut dataset = data::digits()?;
    if options.labels == Labels::OneBased {
        dataset.labels.iter_mut().for_each(|label| *label += 1);
    }
    let (train, test) = dataset.split(0.2, options.seed);
    let device = &options.device;
    let varmap = VarMap::new();
    let model = Mlp::new(
        VarBuilder::from_varmap(&varmap, DType::F32, device),
        options.hidden,
        10,
    )?;
    seeded_init(&varmap, options.seed)?;
    let params = ParamsAdamW {
        lr: options.learning_rate,
        ..ParamsAdamW::default()
    };
    let mut optimizer = AdamW::new(varmap.all_vars(), params)?;
    let batches_per_epoch = train.len().div_ceil(options.batch_size);
    bar.set_length((batches_per_epoch * options.epochs) as u64);
    let mut epoch_losses = Vec::with_capacity(options.epochs);
    for epoch in 0..options.epochs {
        let mut total = 0.0;
        let seed = options.seed + 1 + epoch as u64;
        for (index, batch) in data::batches(&train, options.batch_size, seed, device).enumerate() {
            let context = || {
                format!(
                    "training stopped at epoch {}, batch {} of {batches_per_epoch}",
                    epoch + 1,
                    index + 1
                )
            };
            let batch = batch.map_err(|e| anyhow::Error::new(e).context(context()))?;
            let loss = train_step(&model, &mut optimizer, &batch.features, &batch.labels).map_err(
                |e| {
                    anyhow::Error::new(StoppedAt {
                        error: e,
                        rows: batch.rows.clone(),
                    })
                    .context(context())
                },
            )?;
            total += loss * batch.rows.len() as f32;
            bar.inc(1);
        }
        let mean = total / train.len() as f32;
        bar.set_message(format!("epoch {} loss {mean:.4}", epoch + 1));
        epoch_losses.push(mean);
    }
    Ok(Report {
        train_size: train.len(),
        test_size: test.len(),
        epoch_losses,
        accuracy: accuracy(&model, &test, device)?,
    })
}

/// A candle error raised while training on a batch, with the CSV rows of that batch, so the
/// offending sample of a contract violation can be named.
#[derive(Debug)]
pub struct StoppedAt {
    pub error: candle_core::Error,
    pub rows: Vec<usize>,
}

impl std::fmt::Display for StoppedAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.error)?;
        let violation = candle_contracts::ContractError::find_in(&self.error)
            .and_then(|e| e.violations().iter().find(|v| v.argument() == "target"));
        if let Some(&[index]) = violation.and_then(|v| v.index())
            && let Some(row) = self.rows.get(index)
        {
            write!(
                f,
                "\ntarget[{index}] is row {row} of examples/data/digits.csv.gz (0-based, \
                 as loaded)"
            )?;
        }
        Ok(())
    }
}

/// The wrapped error is part of the message, so it is not repeated as a source.
impl std::error::Error for StoppedAt {}

/// Train an MLP on the UCI handwritten digits (1797 8x8 images, 10 classes).
#[derive(Debug, Parser)]
struct Args {
    /// How the labels are numbered; `one-based` shifts them to 1..=10 as a mislabelled data set
    /// would, and the training step's contract stops the run at the first batch.
    #[arg(long, value_enum, default_value = "zero-based")]
    labels: Labels,
    /// `cpu`, or `cuda` in a build with `--features cuda`.
    #[arg(long, default_value = "cpu")]
    device: String,
    #[arg(long, default_value_t = 8)]
    epochs: usize,
    #[arg(long, default_value_t = 64)]
    batch_size: usize,
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// The command line of `examples/digits.rs`: runs it and returns the exit status
/// (0 success, 1 a failed run or contract violation, 2 bad arguments).
pub fn main<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Args = match crate::parse_args(args) {
        Ok(args) => args,
        Err(status) => return status,
    };
    let device = match crate::device_arg(&args.device) {
        Ok(device) => device,
        Err(status) => return status,
    };
    let options = Options {
        labels: args.labels,
        epochs: args.epochs,
        batch_size: args.batch_size,
        seed: args.seed,
        device,
        ..Options::default()
    };
    let bar = crate::progress_bar();
    let started = std::time::Instant::now();
    let result = train(&options, &bar);
    bar.finish_and_clear();
    match result {
        Ok(report) => {
            for (epoch, loss) in report.epoch_losses.iter().enumerate() {
                println!("epoch {:>2}  mean training loss {loss:.4}", epoch + 1);
            }
            println!(
                "test accuracy {:.3} on {} held-out images ({} trained on, {:.1?})",
                report.accuracy,
                report.test_size,
                report.train_size,
                started.elapsed()
            );
            crate::accuracy_status(report.accuracy)
        }
        Err(error) => crate::report_failure(&error),
    }
}
