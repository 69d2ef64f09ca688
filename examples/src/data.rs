//! The real data sets in `examples/data/` (see its README for attribution), a seeded split,
//! and a mini-batch loader whose batches carry a contract.

use std::io::Read;
use std::path::{Path, PathBuf};

use candle_contracts::contract;
use candle_core::{Device, Result, Tensor};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

/// The folder holding the data sets.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// A table of samples: `features` row-major, `[rows, feature_count]`, and one label per row.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub features: Vec<f32>,
    pub labels: Vec<u8>,
    pub feature_count: usize,
    /// The CSV row of each sample (0-based, header excluded), kept through splits and shuffles.
    pub rows: Vec<usize>,
}

impl Dataset {
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    fn select(&self, order: &[usize]) -> Dataset {
        let f = self.feature_count;
        Dataset {
            features: order
                .iter()
                .flat_map(|&i| self.features[i * f..(i + 1) * f].iter().copied())
                .collect(),
            labels: order.iter().map(|&i| self.labels[i]).collect(),
            feature_count: f,
            rows: order.iter().map(|&i| self.rows[i]).collect(),
        }
    }

    /// A seeded shuffle split into `(train, test)`, `test_fraction` of the rows in `test`.
    pub fn split(&self, test_fraction: f64, seed: u64) -> (Dataset, Dataset) {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.shuffle(&mut StdRng::seed_from_u64(seed));
        let test_len = (self.len() as f64 * test_fraction).round() as usize;
        let (test, train) = order.split_at(test_len);
        (self.select(train), self.select(test))
    }

    /// All features as one `[rows, feature_count]` f32 tensor.
    pub fn features_tensor(&self, device: &Device) -> Result<Tensor> {
        Tensor::from_slice(&self.features, (self.len(), self.feature_count), device)
    }

    /// All labels as one `[rows]` u8 tensor.
    pub fn labels_tensor(&self, device: &Device) -> Result<Tensor> {
        Tensor::from_slice(&self.labels, self.len(), device)
    }
}

fn read_gz(path: &Path) -> anyhow::Result<String> {
    let file = std::fs::File::open(path)
        .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", path.display()))?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(file).read_to_string(&mut text)?;
    Ok(text)
}

/// Parses CSV rows of numbers whose last column is the label.
fn parse(text: &str, skip_header: bool, scale: f32) -> anyhow::Result<Dataset> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(skip_header)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut features = Vec::new();
    let mut labels = Vec::new();
    let mut feature_count = 0;
    for (row, record) in reader.records().enumerate() {
        let record = record?;
        feature_count = record.len() - 1;
        for field in record.iter().take(feature_count) {
            features.push(field.trim().parse::<f32>()? / scale);
        }
        let label: f32 = record[feature_count].trim().parse()?;
        anyhow::ensure!(
            label.fract() == 0.0 && (0.0..=255.0).contains(&label),
            "row {row}: label {label}"
        );
        labels.push(label as u8);
    }
    let rows = (0..labels.len()).collect();
    Ok(Dataset {
        features,
        labels,
        feature_count,
        rows,
    })
}

/// The 1797 handwritten digits: 64 pixel counts scaled from `0..=16` to `0..=1`, labels
/// `0..=9`.
pub fn digits() -> anyhow::Result<Dataset> {
    parse(&read_gz(&data_dir().join("digits.csv.gz"))?, false, 16.0)
}

/// The 569 breast-cancer samples: 30 raw features, label 0 = malignant, 1 = benign.
pub fn breast_cancer() -> anyhow::Result<Dataset> {
    parse(
        &read_gz(&data_dir().join("breast_cancer.csv.gz"))?,
        true,
        1.0,
    )
}

/// One mini-batch: its features and labels, and the CSV rows they came from.
#[derive(Debug)]
pub struct Batch {
    pub features: Tensor,
    pub labels: Tensor,
    pub rows: Vec<usize>,
}

// ANCHOR: loader
impl Batch {
    /// The loader's contract: one label per row of features, and no NaN or infinity in them
    /// (a broken file or a division by a zero standard deviation shows up here, not as a NaN
    /// loss three layers later).
    #[contract(features: f32[N, F] finite, labels: u8[N])]
    pub fn new(features: Tensor, labels: Tensor, rows: Vec<usize>) -> Result<Batch> {
        Ok(Batch {
            features,
            labels,
            rows,
        })
    }
}
// ANCHOR_END: loader

/// Mini-batches of a data set in a seeded random order, the last one smaller when the batch
/// size does not divide the data set.
pub fn batches(
    data: &Dataset,
    batch_size: usize,
    seed: u64,
    device: &Device,
) -> impl Iterator<Item = Result<Batch>> {
    let mut order: Vec<usize> = (0..data.len()).collect();
    order.shuffle(&mut StdRng::seed_from_u64(seed));
    let shuffled = data.select(&order);
    let device = device.clone();
    (0..shuffled.len())
        .step_by(batch_size.max(1))
        .map(move |start| {
            let end = (start + batch_size).min(shuffled.len());
            let f = shuffled.feature_count;
            let features = Tensor::from_slice(
                &shuffled.features[start * f..end * f],
                (end - start, f),
                &device,
            )?;
            let labels = Tensor::from_slice(&shuffled.labels[start..end], end - start, &device)?;
            Batch::new(features, labels, shuffled.rows[start..end].to_vec())
        })
}
