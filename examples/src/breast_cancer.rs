//! Binary classification of the Wisconsin diagnostic breast-cancer set: standardised features,
//! an MLP with a sigmoid head, and binary cross-entropy on its probabilities. `Head::Logits`
//! drops the sigmoid, the classic bug of a modified head: the loss's contract stops it where a
//! hand-written BCE would give NaN.

use candle_contracts::{contract, nn};
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{AdamW, Linear, Optimizer, ParamsAdamW, VarBuilder, VarMap};
use clap::Parser;
use indicatif::ProgressBar;

use crate::data::{self, Dataset};
use crate::seeded_init;

/// What the model's last layer outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Head {
    /// Probabilities, through a sigmoid (correct for a BCE on probabilities).
    Sigmoid,
    /// Raw logits: the sigmoid forgotten.
    Logits,
}

#[derive(Debug, Clone)]
pub struct Options {
    pub head: Head,
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
            head: Head::Sigmoid,
            epochs: 30,
            batch_size: 32,
            hidden: 16,
            learning_rate: 3e-3,
            seed: 7,
            device: Device::Cpu,
        }
    }
}

#[derive(Debug)]
pub struct Classifier {
    hidden: Linear,
    out: Linear,
    head: Head,
}

impl Classifier {
    pub fn new(vb: VarBuilder<'_>, features: usize, hidden: usize, head: Head) -> Result<Self> {
        Ok(Self {
            hidden: candle_nn::linear(features, hidden, vb.pp("hidden"))?,
            out: candle_nn::linear(hidden, 1, vb.pp("out"))?,
            head,
        })
    }
}

impl Module for Classifier {
    /// One score per sample: a probability with the sigmoid head, a logit without.
    #[contract(xs: f32[N, 30] finite, return: f32[N, 1])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let logits = self.out.forward(&self.hidden.forward(xs)?.relu()?)?;
        match self.head {
            Head::Sigmoid => candle_nn::ops::sigmoid(&logits),
            Head::Logits => Ok(logits),
        }
    }
}

// ANCHOR: loss
/// Binary cross-entropy on the model's probabilities.
#[contract(
    probabilities: f32[N, 1] in 0.0..=1.0 "the model's output, after its sigmoid",
    target: f32[N, 1] in 0.0..=1.0,
)]
pub fn loss(probabilities: &Tensor, target: &Tensor) -> Result<Tensor> {
    nn::binary_cross_entropy(probabilities, target)
}
// ANCHOR_END: loss

/// Per-feature mean and standard deviation of the training split.
fn standardizer(train: &Dataset) -> (Vec<f32>, Vec<f32>) {
    let f = train.feature_count;
    let n = train.len() as f32;
    let mut mean = vec![0f32; f];
    for row in train.features.chunks(f) {
        mean.iter_mut().zip(row).for_each(|(m, &x)| *m += x / n);
    }
    let mut std = vec![0f32; f];
    for row in train.features.chunks(f) {
        std.iter_mut()
            .zip(row.iter().zip(&mean))
            .for_each(|(s, (&x, &m))| *s += (x - m) * (x - m) / n);
    }
    std.iter_mut().for_each(|s| *s = s.sqrt().max(1e-6));
    (mean, std)
}

fn standardize(data: &mut Dataset, mean: &[f32], std: &[f32]) {
    for row in data.features.chunks_mut(data.feature_count) {
        for ((x, m), s) in row.iter_mut().zip(mean).zip(std) {
            *x = (*x - m) / s;
        }
    }
}

#[derive(Debug, Clone)]
pub struct Report {
    pub train_size: usize,
    pub test_size: usize,
    pub epoch_losses: Vec<f32>,
    pub accuracy: f64,
}

/// Share of `data` classified right at the 0.5 threshold.
pub fn accuracy(model: &Classifier, data: &Dataset, device: &Device) -> Result<f64> {
    let scores = model.forward(&data.features_tensor(device)?)?.squeeze(1)?;
    let threshold = match model.head {
        Head::Sigmoid => 0.5,
        Head::Logits => 0.0,
    };
    let predicted = scores.ge(threshold)?;
    let labels = data.labels_tensor(device)?;
    let correct = predicted
        .eq(&labels)?
        .to_dtype(DType::F32)?
        .sum_all()?
        .to_scalar::<f32>()?;
    Ok(correct as f64 / data.len() as f64)
}

/// Loads and standardises the data, splits it 80/20 with the seed, and trains.
///
/// # Errors
///
/// A contract violation (with the epoch and batch in its context) or any candle error.
pub fn train(options: &Options, bar: &ProgressBar) -> anyhow::Result<Report> {
    let dataset = data::breast_cancer()?;
    let (mut train, mut test) = dataset.split(0.2, options.seed);
    let (mean, std) = standardizer(&train);
    standardize(&mut train, &mean, &std);
    standardize(&mut test, &mean, &std);
    let device = &options.device;
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, device);
    let model = Classifier::new(vb, train.feature_count, options.hidden, options.head)?;
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
            let step = || -> Result<f32> {
                let batch = batch?;
                let target = batch.labels.to_dtype(DType::F32)?.unsqueeze(1)?;
                let probabilities = model.forward(&batch.features)?;
                let loss = loss(&probabilities, &target)?;
                optimizer.backward_step(&loss)?;
                Ok(loss.to_scalar::<f32>()? * target.dim(0)? as f32)
            };
            total += step().map_err(|e| anyhow::Error::new(e).context(context()))?;
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

/// Train a classifier of malignant and benign tumours (569 samples, 30 features).
#[derive(Debug, Parser)]
struct Args {
    /// The model's last layer: `sigmoid` gives probabilities; `logits` forgets the sigmoid, and
    /// the loss's contract stops the run.
    #[arg(long, value_enum, default_value = "sigmoid")]
    head: Head,
    /// `cpu`, or `cuda` in a build with `--features cuda`.
    #[arg(long, default_value = "cpu")]
    device: String,
    #[arg(long, default_value_t = 30)]
    epochs: usize,
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

/// The command line of `examples/breast_cancer.rs`: runs it and returns the exit status
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
        head: args.head,
        epochs: args.epochs,
        seed: args.seed,
        device,
        ..Options::default()
    };
    let bar = crate::progress_bar();
    let result = train(&options, &bar);
    bar.finish_and_clear();
    match result {
        Ok(report) => {
            println!(
                "final mean training loss {:.4}",
                report.epoch_losses.last().copied().unwrap_or(f32::NAN)
            );
            println!(
                "test accuracy {:.3} on {} held-out samples ({} trained on)",
                report.accuracy, report.test_size, report.train_size
            );
            crate::accuracy_status(report.accuracy)
        }
        Err(error) => crate::report_failure(&error),
    }
}
