//! The failure scenarios the guards exist for, each run twice: as candle code without a
//! contract, and with one (or with the guarded op from `candle_contracts::nn`). On a CPU the
//! unguarded runs show what candle does there; on a GPU the indexing ones end in a device-side
//! assert instead, which poisons the CUDA context.

use std::path::Path;

use candle_contracts::{ContractError, contract, nn};
use candle_core::{D, DType, Device, Module, Result, Tensor};
use clap::Parser;

/// One scenario's outcome, both ways.
#[derive(Debug)]
pub struct Row {
    pub scenario: &'static str,
    /// What candle does without a contract: its error, or the value it returns.
    pub candle: String,
    /// The contract's error (`None` if the guarded run passed, which no scenario should).
    pub contract: Option<ContractError>,
    /// The guarded run's message when it failed without a contract violation.
    pub other_error: Option<String>,
    /// Extra context the scenario adds (e.g. which file a bad label came from).
    pub note: Option<String>,
}

impl Row {
    /// The first violation's headline, as the table shows it.
    pub fn contract_says(&self) -> String {
        match (&self.contract, &self.other_error) {
            (Some(error), _) => {
                let text = error.to_string();
                let mut lines = text.lines().skip(1);
                let first = lines.next().unwrap_or_default().trim().to_string();
                match &self.note {
                    Some(note) => format!("{first}\n{note}"),
                    None => first,
                }
            }
            (None, Some(other)) => format!("(not a contract error) {other}"),
            (None, None) => "passed".to_string(),
        }
    }
}

fn candle_outcome(result: Result<Tensor>) -> String {
    match result {
        Ok(value) => match value
            .to_dtype(DType::F32)
            .and_then(|v| v.to_scalar::<f32>())
        {
            Ok(v) if v.is_nan() => "no error: the loss is NaN".to_string(),
            Ok(v) => format!("no error: the loss is {v:.4}"),
            Err(_) => format!("no error: returns a tensor of shape {:?}", value.dims()),
        },
        Err(error) => {
            let text = error.to_string();
            format!("error: {}", text.lines().next().unwrap_or_default())
        }
    }
}

fn row(scenario: &'static str, unguarded: Result<Tensor>, guarded: Result<Tensor>) -> Row {
    let (contract, other_error) = match guarded {
        Ok(_) => (None, None),
        Err(error) => match ContractError::find_in(&error) {
            Some(contract) => (Some(contract.clone()), None),
            None => (None, Some(error.to_string())),
        },
    };
    Row {
        scenario,
        candle: candle_outcome(unguarded),
        contract,
        other_error,
        note: None,
    }
}

fn cpu() -> Device {
    Device::Cpu
}

fn logits(n: usize, c: usize) -> Result<Tensor> {
    let values: Vec<f32> = (0..n * c)
        .map(|i| ((i * 7 % 11) as f32 - 5.0) / 3.0)
        .collect();
    Tensor::from_vec(values, (n, c), &cpu())
}

/// A hand-written BCE on probabilities, as people write it in candle (which has none).
fn hand_written_bce(p: &Tensor, t: &Tensor) -> Result<Tensor> {
    let loss = (t.mul(&p.log()?)? + t.affine(-1., 1.)?.mul(&p.affine(-1., 1.)?.log()?)?)?;
    loss.neg()?.mean_all()
}

fn class_id_equal_to_class_count() -> Result<Row> {
    let logits = logits(4, 3)?;
    let target = Tensor::new(&[0u32, 1, 3, 2], &cpu())?;
    Ok(row(
        "a target equal to the class count (3 of 3 classes)",
        candle_nn::loss::cross_entropy(&logits, &target),
        nn::cross_entropy(&logits, &target),
    ))
}

fn one_hot_targets() -> Result<Row> {
    let logits = logits(4, 3)?;
    let target =
        candle_nn::encoding::one_hot(Tensor::new(&[0u32, 2, 1, 1], &cpu())?, 3, 1f32, 0f32)?;
    Ok(row(
        "one-hot targets instead of class indices",
        candle_nn::loss::cross_entropy(&logits, &target),
        nn::cross_entropy(&logits, &target),
    ))
}

fn column_targets() -> Result<Row> {
    let logits = logits(4, 3)?;
    let target = Tensor::new(&[[0u32], [2], [1], [1]], &cpu())?;
    Ok(row(
        "targets of shape [N, 1]",
        candle_nn::loss::cross_entropy(&logits, &target),
        nn::cross_entropy(&logits, &target),
    ))
}

/// A linear classifier step as a user writes it, with a contract at the model boundary.
#[contract(x: f32[N, 10], target: u32[N] in 0..C, weight: f32[C, 10])]
fn guarded_step(x: &Tensor, target: &Tensor, weight: &Tensor) -> Result<Tensor> {
    unguarded_step(x, target, weight)
}

fn unguarded_step(x: &Tensor, target: &Tensor, weight: &Tensor) -> Result<Tensor> {
    candle_nn::loss::cross_entropy(&x.matmul(&weight.t()?)?, target)
}

fn last_batch_smaller() -> Result<Row> {
    let weight = Tensor::ones((3, 10), DType::F32, &cpu())?;
    // The loader's last batch has 2 samples, but the targets were sliced with the configured 6.
    let x = Tensor::ones((2, 10), DType::F32, &cpu())?;
    let target = Tensor::new(&[0u32, 1, 2, 0, 1, 2], &cpu())?;
    Ok(row(
        "a last batch of a different size",
        unguarded_step(&x, &target, &weight),
        guarded_step(&x, &target, &weight),
    ))
}

fn empty_batch() -> Result<Row> {
    let logits = logits(0, 3)?;
    let target = Tensor::zeros(0, DType::U32, &cpu())?;
    Ok(row(
        "an empty batch",
        candle_nn::loss::cross_entropy(&logits, &target),
        nn::cross_entropy(&logits, &target),
    ))
}

/// A masked mean as people write it for an ignore index: ignored rows weigh 0.
fn hand_written_ignoring_loss(logits: &Tensor, target: &Tensor, ignore: i64) -> Result<Tensor> {
    let kept = target.ne(ignore)?;
    let safe = kept.where_cond(target, &target.zeros_like()?)?;
    let log_probs = candle_nn::ops::log_softmax(logits, D::Minus1)?;
    let picked = log_probs.gather(&safe.unsqueeze(1)?, 1)?.squeeze(1)?;
    let kept = kept.to_dtype(DType::F32)?;
    picked.mul(&kept)?.sum_all()?.neg()?.div(&kept.sum_all()?)
}

fn all_targets_ignored() -> Result<Row> {
    let logits = logits(4, 3)?;
    let target = Tensor::new(&[-100i64; 4], &cpu())?;
    Ok(row(
        "all targets ignored (ignore index -100)",
        hand_written_ignoring_loss(&logits, &target, -100),
        nn::cross_entropy_with(&logits, &target, nn::LossOptions::default()),
    ))
}

fn multibox_without_background() -> Result<Row> {
    // Six object classes labelled 0..=5, shifted by one so that 0 is the background class, and
    // then a confidence head built for 6 classes instead of 7.
    let object_classes = [3i64, 0, 5, 5, 1, 2];
    let matched = [true, false, true, true, false, true, false, true];
    let mut labels = Vec::new();
    let mut objects = object_classes.iter();
    for &is_object in &matched {
        labels.push(if is_object {
            objects.next().map_or(0, |c| c + 1)
        } else {
            0
        });
    }
    let labels = Tensor::new(labels.as_slice(), &cpu())?;
    let confidences = logits(matched.len(), 6)?;
    Ok(row(
        "SSD multibox loss: class count forgot the background class",
        candle_nn::loss::cross_entropy(&confidences, &labels),
        nn::cross_entropy(&confidences, &labels),
    ))
}

/// The 20 Pascal VOC classes, in the usual order.
pub const VOC_CLASSES: [&str; 20] = [
    "aeroplane",
    "bicycle",
    "bird",
    "boat",
    "bottle",
    "bus",
    "car",
    "cat",
    "chair",
    "cow",
    "diningtable",
    "dog",
    "horse",
    "motorbike",
    "person",
    "pottedplant",
    "sheep",
    "sofa",
    "train",
    "tvmonitor",
];

/// One labelled box of an annotation file.
#[derive(Debug, Clone)]
pub struct Annotation {
    pub file: String,
    pub object: usize,
    pub name: String,
}

/// Reads the `<object><name>` of every VOC-style XML file in `dir`, in file order.
///
/// # Errors
///
/// A file that cannot be read or is not well-formed XML.
pub fn read_annotations(dir: &Path) -> anyhow::Result<Vec<Annotation>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    files.retain(|path| path.extension().is_some_and(|e| e == "xml"));
    files.sort();
    let mut annotations = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path)?;
        let document = roxmltree::Document::parse(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let objects = document.descendants().filter(|n| n.has_tag_name("object"));
        for (object, node) in objects.enumerate() {
            let name = node
                .children()
                .find(|n| n.has_tag_name("name"))
                .and_then(|n| n.text())
                .unwrap_or_default()
                .trim()
                .to_string();
            annotations.push(Annotation {
                file: path
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
                object,
                name,
            });
        }
    }
    Ok(annotations)
}

fn voc_with_a_foreign_class() -> anyhow::Result<Row> {
    let annotations = read_annotations(&crate::data::data_dir().join("voc"))?;
    // The loader maps an unknown name to 255, VOC's "void" value, in u8 labels.
    let labels: Vec<u8> = annotations
        .iter()
        .map(|a| {
            VOC_CLASSES
                .iter()
                .position(|c| *c == a.name)
                .map_or(255, |i| i as u8)
        })
        .collect();
    let labels = Tensor::new(labels.as_slice(), &cpu())?;
    let logits = logits(annotations.len(), VOC_CLASSES.len())?;
    let mut row = row(
        "VOC annotations with a class name from another data set",
        candle_nn::loss::cross_entropy(&logits, &labels),
        nn::cross_entropy(&logits, &labels),
    );
    let bad = row
        .contract
        .as_ref()
        .and_then(|e| e.violations().first())
        .and_then(|v| v.index())
        .map(|index| index[0]);
    if let Some(index) = bad
        && let Some(annotation) = annotations.get(index)
    {
        row.note = Some(format!(
            "target[{index}] is object {} of {}: `{}` is not a VOC class",
            annotation.object, annotation.file, annotation.name
        ));
    }
    Ok(row)
}

fn tokens_past_the_vocabulary() -> Result<Row> {
    // A tokenizer grew two special tokens (100 and 101); the table still has 100 rows.
    let table = Tensor::arange(0f32, 800., &cpu())?.reshape((100, 8))?;
    let ids = Tensor::new(&[[5u32, 17, 100, 42, 101]], &cpu())?;
    Ok(row(
        "token ids past the vocabulary",
        candle_nn::Embedding::new(table.clone(), 8).forward(&ids),
        nn::Embedding::new(table, 8).forward(&ids),
    ))
}

fn missing_sigmoid() -> Result<Row> {
    let logits = Tensor::new(&[[2.3f32, -1.7], [0.4, 1.1]], &cpu())?;
    let target = Tensor::new(&[[1f32, 0.], [0., 1.]], &cpu())?;
    Ok(row(
        "a missing sigmoid before BCE",
        hand_written_bce(&logits, &target),
        nn::binary_cross_entropy(&logits, &target),
    ))
}

fn nan_reaching_bce() -> Result<Row> {
    let probabilities = Tensor::new(&[0.2f32, f32::NAN, 0.9, 0.4, f32::NAN, 0.1], &cpu())?;
    let target = Tensor::new(&[0f32, 1., 1., 0., 1., 0.], &cpu())?;
    Ok(row(
        "NaN reaching BCE",
        hand_written_bce(&probabilities, &target),
        nn::binary_cross_entropy(&probabilities, &target),
    ))
}

/// Runs every scenario.
///
/// # Errors
///
/// Only failures to set a scenario up (never the failures it shows).
pub fn run() -> anyhow::Result<Vec<Row>> {
    Ok(vec![
        class_id_equal_to_class_count()?,
        one_hot_targets()?,
        column_targets()?,
        last_batch_smaller()?,
        empty_batch()?,
        all_targets_ignored()?,
        multibox_without_background()?,
        voc_with_a_foreign_class()?,
        tokens_past_the_vocabulary()?,
        missing_sigmoid()?,
        nan_reaching_bce()?,
    ])
}

/// The rows as a table for a terminal.
pub fn table(rows: &[Row]) -> comfy_table::Table {
    let mut table = comfy_table::Table::new();
    table
        .load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(160)
        .set_header(["scenario", "candle, unguarded (CPU)", "the contract"]);
    for row in rows {
        table.add_row([
            row.scenario.to_string(),
            row.candle.clone(),
            row.contract_says(),
        ]);
    }
    table
}

/// Show what candle does with each bad input, and what the contract says.
#[derive(Debug, Parser)]
struct Args {
    /// After the table, print every contract error in full.
    #[arg(long)]
    full: bool,
}

/// The command line of `examples/failures.rs`: runs it and returns the exit status
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
    let rows = match run() {
        Ok(rows) => rows,
        Err(error) => return crate::report_failure(&error),
    };
    println!("{}", table(&rows));
    println!(
        "On a GPU the index errors above are device-side asserts in candle's CUDA kernels: they \
         surface at a later, unrelated line and leave the CUDA context unusable until the \
         process restarts."
    );
    if args.full {
        for row in &rows {
            if let Some(error) = &row.contract {
                println!("\n## {}\n{error}", row.scenario);
            }
        }
    }
    if rows.iter().all(|row| row.contract.is_some()) {
        0
    } else {
        eprintln!("error: a scenario passed its contract");
        1
    }
}
