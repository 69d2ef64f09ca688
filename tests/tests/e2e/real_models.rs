//! Contracts on code ported from candle itself: candle-transformers' BERT and DistilBERT
//! embeddings, an encoder's stack of layers, a collate function, and candle-examples'
//! mnist-training MLP. Weights come from `randn` and `zeros` on the CPU. Each test runs a good
//! input with an asserted value, an injected fault whose message names the argument, the rule,
//! the value and the dims that bound it, and then a good call again in the same process.

use candle_contracts::{contract, Rule};
use candle_core::{DType, Device, Module, Result, Tensor, D};
use candle_nn::{Embedding, LayerNorm, Linear};

use crate::{contract_error, only_violation, zeros};

fn randn(shape: &[usize]) -> Tensor {
    Tensor::randn(0f32, 1f32, shape, &Device::Cpu).unwrap()
}

fn table(rows: usize, hidden_size: usize) -> Embedding {
    Embedding::new(randn(&[rows, hidden_size]), hidden_size)
}

fn layer_norm(hidden_size: usize) -> LayerNorm {
    let weight = Tensor::ones(hidden_size, DType::F32, &Device::Cpu).unwrap();
    LayerNorm::new(weight, zeros(&[hidden_size], DType::F32), 1e-12)
}

fn ids(rows: &[&[u32]]) -> Tensor {
    let rows: Vec<Tensor> = rows
        .iter()
        .map(|row| Tensor::new(*row, &Device::Cpu).unwrap())
        .collect();
    Tensor::stack(&rows, 0).unwrap()
}

/// The largest absolute mean over the last dim: LayerNorm's output has mean 0 in every row.
fn largest_row_mean(xs: &Tensor) -> f32 {
    xs.mean(D::Minus1)
        .unwrap()
        .abs()
        .unwrap()
        .flatten_all()
        .unwrap()
        .max(0)
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}

/// candle-transformers' `bert::Config`, the fields the embeddings read.
struct Config {
    vocab_size: usize,
    hidden_size: usize,
    max_position_embeddings: usize,
    type_vocab_size: usize,
}

const BERT: Config = Config {
    vocab_size: 12,
    hidden_size: 8,
    max_position_embeddings: 6,
    type_vocab_size: 2,
};

/// `bert::BertEmbeddings`: word, position (an `Option`, as in candle) and token-type tables,
/// then LayerNorm (dropout is the identity at inference and is left out).
struct BertEmbeddings {
    word_embeddings: Embedding,
    position_embeddings: Option<Embedding>,
    token_type_embeddings: Embedding,
    layer_norm: LayerNorm,
}

impl BertEmbeddings {
    fn new(config: &Config, positions: Option<usize>) -> Self {
        Self {
            word_embeddings: table(config.vocab_size, config.hidden_size),
            position_embeddings: positions.map(|rows| table(rows, config.hidden_size)),
            token_type_embeddings: table(config.type_vocab_size, config.hidden_size),
            layer_norm: layer_norm(config.hidden_size),
        }
    }

    #[contract(
        input_ids: u32[B, T] in 0..V,
        token_type_ids: u32[B, T] in 0..TYPES,
        self.word_embeddings.embeddings(): f32[V, D],
        self.position_embeddings?.embeddings(): f32[P, D],
        self.token_type_embeddings.embeddings(): f32[TYPES, D],
        self.layer_norm.weight(): f32[D],
        T <= P,
        return: f32[B, T, D],
    )]
    fn forward(&self, input_ids: &Tensor, token_type_ids: &Tensor) -> Result<Tensor> {
        let (_batch, seq_len) = input_ids.dims2()?;
        let input_embeddings = self.word_embeddings.forward(input_ids)?;
        let token_type_embeddings = self.token_type_embeddings.forward(token_type_ids)?;
        let mut embeddings = (&input_embeddings + token_type_embeddings)?;
        if let Some(position_embeddings) = &self.position_embeddings {
            let position_ids = Tensor::arange(0u32, seq_len as u32, input_ids.device())?;
            embeddings = embeddings.broadcast_add(&position_embeddings.forward(&position_ids)?)?;
        }
        self.layer_norm.forward(&embeddings)
    }
}

#[test]
fn bert_embeddings_catch_a_token_id_equal_to_the_vocab_size() {
    let embeddings = BertEmbeddings::new(&BERT, Some(BERT.max_position_embeddings));
    let good = ids(&[&[1, 5, 11], &[0, 2, 3]]);
    let types = ids(&[&[0, 0, 1], &[0, 1, 1]]);
    let out = embeddings.forward(&good, &types).unwrap();
    assert_eq!(out.dims(), [2, 3, 8]);
    assert!(largest_row_mean(&out) < 1e-4);

    // A token added to the tokenizer without resizing the table: id 12 with 12 rows.
    let bad = ids(&[&[1, 5, 11], &[0, 12, 3]]);
    let error = embeddings.forward(&bad, &types).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("input_ids", Rule::Range)
    );
    let text = error.to_string();
    assert!(
        text.contains("input_ids[1, 1] = 12, expected 0..V"),
        "{text}"
    );
    assert!(
        text.contains("V = 12 (bound by `self.word_embeddings.embeddings()` dim 0)"),
        "{text}"
    );

    assert_eq!(embeddings.forward(&good, &types).unwrap().dims(), [2, 3, 8]);
}

#[test]
fn bert_embeddings_catch_a_sequence_longer_than_the_position_table() {
    let embeddings = BertEmbeddings::new(&BERT, Some(BERT.max_position_embeddings));
    let long: Vec<u32> = (0..7).collect();
    let error = embeddings
        .forward(&ids(&[&long]), &ids(&[&[0; 7]]))
        .unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("T <= P", Rule::Relation)
    );
    let text = error.to_string();
    assert!(
        text.contains("T = 7 (bound by `input_ids` dim 1)"),
        "{text}"
    );
    assert!(
        text.contains("P = 6 (bound by `self.position_embeddings?.embeddings()` dim 0)"),
        "{text}"
    );

    let six: Vec<u32> = (0..6).collect();
    let out = embeddings.forward(&ids(&[&six]), &ids(&[&[1; 6]])).unwrap();
    assert_eq!(out.dims(), [1, 6, 8]);
}

#[test]
fn bert_embeddings_catch_token_type_two_with_two_types() {
    let embeddings = BertEmbeddings::new(&BERT, Some(BERT.max_position_embeddings));
    let input_ids = ids(&[&[1, 2, 3]]);
    let error = embeddings
        .forward(&input_ids, &ids(&[&[0, 1, 2]]))
        .unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("token_type_ids", Rule::Range)
    );
    let text = error.to_string();
    assert!(
        text.contains("token_type_ids[0, 2] = 2, expected 0..TYPES"),
        "{text}"
    );
    assert!(
        text.contains("TYPES = 2 (bound by `self.token_type_embeddings.embeddings()` dim 0)"),
        "{text}"
    );

    let out = embeddings.forward(&input_ids, &ids(&[&[0, 1, 1]])).unwrap();
    assert_eq!(out.dims(), [1, 3, 8]);
}

#[test]
fn bert_embeddings_without_a_position_table_skip_only_the_position_rule() {
    let embeddings = BertEmbeddings::new(&BERT, None);
    // Longer than any position table: with none, `T <= P` is not checked.
    let long: Vec<u32> = (0..9).collect();
    let out = embeddings
        .forward(&ids(&[&long]), &ids(&[&[0; 9]]))
        .unwrap();
    assert_eq!(out.dims(), [1, 9, 8]);
    // The word table is still checked.
    let error = embeddings
        .forward(&ids(&[&[1, 12]]), &ids(&[&[0, 0]]))
        .unwrap_err();
    assert_eq!(only_violation(&error).rule(), Rule::Range);
    assert!(
        error.to_string().contains("input_ids[0, 1] = 12"),
        "{error}"
    );

    assert!(embeddings
        .forward(&ids(&[&[1, 11]]), &ids(&[&[0, 1]]))
        .is_ok());
}

/// `bert::BertModel`'s forward, down to the embeddings: the config's limits as relations.
struct BertModel {
    embeddings: BertEmbeddings,
    config: Config,
}

impl BertModel {
    #[contract(
        input_ids: u32[B, T],
        token_type_ids: u32[B, T],
        T <= {self.config.max_position_embeddings},
        return: f32[B, T, {self.config.hidden_size}],
    )]
    fn forward(&self, input_ids: &Tensor, token_type_ids: &Tensor) -> Result<Tensor> {
        self.embeddings.forward(input_ids, token_type_ids)
    }
}

#[test]
fn a_config_relation_holds_without_a_position_table() {
    let model = BertModel {
        embeddings: BertEmbeddings::new(&BERT, None),
        config: BERT,
    };
    let out = model
        .forward(&ids(&[&[1, 2, 3]]), &ids(&[&[0, 0, 0]]))
        .unwrap();
    assert_eq!(out.dims(), [1, 3, 8]);
    let long: Vec<u32> = (0..7).collect();
    let error = model.forward(&ids(&[&long]), &ids(&[&[0; 7]])).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("T <= {self.config.max_position_embeddings}", Rule::Relation)
    );
    let text = error.to_string();
    assert!(text.contains("left side is 7, right side is 6"), "{text}");
    assert!(
        text.contains("T = 7 (bound by `input_ids` dim 1)"),
        "{text}"
    );

    assert!(model.forward(&ids(&[&[4, 5]]), &ids(&[&[1, 1]])).is_ok());
}

/// `distilbert::Embeddings`, whose forward is `candle_core::Module`'s.
struct DistilBertEmbeddings {
    word_embeddings: Embedding,
    position_embeddings: Embedding,
    layer_norm: LayerNorm,
}

impl Module for DistilBertEmbeddings {
    #[contract(
        xs: u32[B, T] in 0..V,
        self.word_embeddings.embeddings(): f32[V, D],
        self.position_embeddings.embeddings(): f32[P, D],
        T <= P,
        return: f32[B, T, D],
    )]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let (_batch, seq_len) = xs.dims2()?;
        let input_embeddings = self.word_embeddings.forward(xs)?;
        let position_ids = Tensor::arange(0u32, seq_len as u32, xs.device())?;
        let embeddings =
            input_embeddings.broadcast_add(&self.position_embeddings.forward(&position_ids)?)?;
        self.layer_norm.forward(&embeddings)
    }
}

fn distilbert() -> DistilBertEmbeddings {
    DistilBertEmbeddings {
        word_embeddings: table(12, 8),
        position_embeddings: table(4, 8),
        layer_norm: layer_norm(8),
    }
}

#[test]
fn distilbert_embeddings_as_a_module() {
    let embeddings = distilbert();
    let good = ids(&[&[3, 1, 4, 1]]);
    let out = good.apply(&embeddings).unwrap();
    assert_eq!(out.dims(), [1, 4, 8]);
    assert!(largest_row_mean(&out) < 1e-4);

    let error = ids(&[&[3, 1, 4, 1, 5]]).apply(&embeddings).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("T <= P", Rule::Relation)
    );
    assert!(
        error
            .to_string()
            .contains("P = 4 (bound by `self.position_embeddings.embeddings()` dim 0)"),
        "{error}"
    );
    let error = ids(&[&[3, 12]]).apply(&embeddings).unwrap_err();
    assert!(
        error.to_string().contains("xs[0, 1] = 12, expected 0..V"),
        "{error}"
    );

    assert_eq!(good.apply(&embeddings).unwrap().dims(), [1, 4, 8]);
}

/// An encoder as a stack of square layers, each of which must keep the hidden size.
struct Encoder {
    layers: Vec<Linear>,
}

impl Encoder {
    #[contract(
        hidden_states: f32[B, T, D],
        self.layers[..].weight(): f32[D, D],
        return: f32[B, T, D],
    )]
    fn forward(&self, hidden_states: &Tensor) -> Result<Tensor> {
        let mut xs = hidden_states.clone();
        for layer in &self.layers {
            xs = layer.forward(&xs)?.relu()?;
        }
        Ok(xs)
    }
}

fn identity(size: usize) -> Linear {
    Linear::new(Tensor::eye(size, DType::F32, &Device::Cpu).unwrap(), None)
}

#[test]
fn an_encoder_checks_every_layer() {
    let encoder = Encoder {
        layers: vec![identity(8), identity(8), identity(8)],
    };
    let xs = Tensor::ones((2, 3, 8), DType::F32, &Device::Cpu).unwrap();
    let out = encoder.forward(&xs).unwrap();
    assert_eq!(out.sum_all().unwrap().to_scalar::<f32>().unwrap(), 48.0);

    // A layer loaded with the wrong hidden size in the middle of the stack.
    let broken = Encoder {
        layers: vec![identity(8), Linear::new(randn(&[8, 6]), None), identity(8)],
    };
    let error = broken.forward(&xs).unwrap_err();
    let violations = contract_error(&error).violations();
    assert_eq!(
        (violations[0].argument(), violations[0].rule()),
        ("self.layers[..].weight()", Rule::Shape)
    );
    assert_eq!(violations[0].element(), Some(1));
    let text = error.to_string();
    assert!(
        text.contains("`self.layers[1].weight()`: shape [8, 6] does not match [D, D] = [8, 8]"),
        "{text}"
    );
    assert!(
        text.contains("dim 1 is 6 but D = 8 (bound by `hidden_states` dim 2)"),
        "{text}"
    );

    assert_eq!(encoder.forward(&xs).unwrap().dims(), [2, 3, 8]);
}

/// A collate function: same-length token sequences into one batch and its attention mask.
#[contract(items: [u32[T]; N], return.0: u32[N, T], return.1: u8[N, T])]
fn collate(items: &[Tensor]) -> Result<(Tensor, Tensor)> {
    let batch = Tensor::stack(items, 0)?;
    let mask = batch.ones_like()?.to_dtype(DType::U8)?;
    Ok((batch, mask))
}

#[test]
fn a_collate_function_catches_a_ragged_batch() {
    let items = vec![
        Tensor::new(&[1u32, 2, 3], &Device::Cpu).unwrap(),
        Tensor::new(&[4u32, 5, 6], &Device::Cpu).unwrap(),
    ];
    let (batch, mask) = collate(&items).unwrap();
    assert_eq!(batch.to_vec2::<u32>().unwrap(), [[1, 2, 3], [4, 5, 6]]);
    assert_eq!(mask.dims(), [2, 3]);

    let ragged = vec![
        Tensor::new(&[1u32, 2, 3], &Device::Cpu).unwrap(),
        Tensor::new(&[4u32, 5], &Device::Cpu).unwrap(),
    ];
    let error = collate(&ragged).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule(), violation.element()),
        ("items", Rule::Shape, Some(1))
    );
    assert!(
        error
            .to_string()
            .contains("`items[1]`: shape [2] does not match [T] = [3]"),
        "{error}"
    );

    assert_eq!(collate(&items).unwrap().0.dims(), [2, 3]);
}

/// candle-examples' mnist-training: its constants, its `Mlp` and its loss.
mod mnist {
    use super::*;

    pub const IMAGE_DIM: usize = 784;
    pub const LABELS: usize = 10;

    /// `linear_z`: zero weight and bias, as the example's linear model starts.
    fn linear_z(in_dim: usize, out_dim: usize) -> Linear {
        Linear::new(
            zeros(&[out_dim, in_dim], DType::F32),
            Some(zeros(&[out_dim], DType::F32)),
        )
    }

    pub struct Mlp {
        ln1: Linear,
        ln2: Linear,
    }

    impl Mlp {
        pub fn zeros() -> Self {
            Self {
                ln1: linear_z(IMAGE_DIM, 100),
                ln2: linear_z(100, LABELS),
            }
        }

        #[contract(
            xs: f32[B, IMAGE_DIM],
            self.ln1.weight(): f32[H, IMAGE_DIM],
            self.ln2.weight(): f32[LABELS, H],
            return: f32[B, LABELS],
        )]
        pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
            let xs = self.ln1.forward(xs)?;
            let xs = xs.relu()?;
            self.ln2.forward(&xs)
        }
    }

    #[contract(logits: f32[B, LABELS], labels: u32[B] in 0..LABELS)]
    pub fn loss(logits: &Tensor, labels: &Tensor) -> Result<Tensor> {
        let log_sm = candle_nn::ops::log_softmax(logits, D::Minus1)?;
        candle_nn::loss::nll(&log_sm, labels)
    }
}

#[test]
fn the_mnist_mlp_compares_its_constants_by_value() {
    let model = mnist::Mlp::zeros();
    let images = zeros(&[2, mnist::IMAGE_DIM], DType::F32);
    let labels = Tensor::new(&[3u32, 9], &Device::Cpu).unwrap();
    let logits = model.forward(&images).unwrap();
    assert_eq!(logits.dims(), [2, 10]);
    // Zero weights give uniform probabilities: the loss is ln 10.
    let loss = mnist::loss(&logits, &labels).unwrap();
    let loss = loss.to_scalar::<f32>().unwrap();
    assert!((loss - 10f32.ln()).abs() < 1e-5, "{loss}");

    // The bug this guards against: `IMAGE_DIM` binding to 100 and `[2, 100]` passing.
    let error = model.forward(&zeros(&[2, 100], DType::F32)).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("xs", Rule::Shape)
    );
    assert!(
        error
            .to_string()
            .contains("dim 1 is 100 but IMAGE_DIM = 784 (a constant)"),
        "{error}"
    );

    let error = mnist::loss(&logits, &Tensor::new(&[3u32, 10], &Device::Cpu).unwrap()).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("labels", Rule::Range)
    );
    assert!(
        error
            .to_string()
            .contains("labels[1] = 10, expected 0..LABELS"),
        "{error}"
    );

    let logits = model.forward(&images).unwrap();
    assert!(mnist::loss(&logits, &labels).is_ok());
}
