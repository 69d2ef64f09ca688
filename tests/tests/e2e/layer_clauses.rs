//! Layer clauses: `self.proj: Linear[E -> C]` states a candle-nn layer's sizes, is checked at
//! run time on the layer's weight, and gives the compile-time check the layer's output.

use candle_contracts::contract;
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear};

struct Classifier {
    embed: Embedding,
    norm: LayerNorm,
    head: Linear,
}

impl Classifier {
    fn new(vocab: usize, hidden: usize, classes: usize) -> Classifier {
        let ones = |shape: &[usize]| Tensor::ones(shape, DType::F32, &Device::Cpu).unwrap();
        Classifier {
            embed: Embedding::new(ones(&[vocab, hidden]), hidden),
            norm: LayerNorm::new(ones(&[hidden]), ones(&[hidden]).zeros_like().unwrap(), 1e-5),
            head: Linear::new(ones(&[classes, hidden]), None),
        }
    }

    #[contract(
        ids: u32[B, T] in 0..V,
        self.embed: Embedding[V, E],
        self.norm: LayerNorm[E],
        self.head: Linear[E -> C],
        return: f32[B, T, C],
    )]
    fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        let xs = self.embed.forward(ids)?;
        let xs = self.norm.forward(&xs)?;
        self.head.forward(&xs)
    }
}

#[test]
fn a_model_whose_layers_match_its_clauses_runs() {
    let model = Classifier::new(50, 16, 4);
    let ids = Tensor::new(&[[1u32, 2, 3], [4, 5, 49]], &Device::Cpu).unwrap();
    assert_eq!(model.forward(&ids).unwrap().dims(), &[2, 3, 4]);
}

#[test]
fn a_layer_of_other_sizes_is_named_with_its_weight() {
    let mut model = Classifier::new(50, 16, 4);
    // A head built for another width: its weight is [4, 8], not [C, E] with E = 16.
    let ones = Tensor::ones((4, 8), DType::F32, &Device::Cpu).unwrap();
    model.head = Linear::new(ones, None);
    let ids = Tensor::new(&[[1u32, 2, 3]], &Device::Cpu).unwrap();
    let error = model.forward(&ids).unwrap_err().to_string();
    assert!(error.contains("`self.head.weight()`"), "{error}");
    assert!(error.contains("E = 16"), "{error}");
    // An id past the table the clause states.
    let model = Classifier::new(50, 16, 4);
    let ids = Tensor::new(&[[50u32]], &Device::Cpu).unwrap();
    let error = model.forward(&ids).unwrap_err().to_string();
    assert!(error.contains("expected 0..V with V = 50"), "{error}");
}

#[test]
fn an_embedding_whose_hidden_size_is_not_its_tables_width_is_named() {
    // `Embedding::new(table, hidden_size)` with a `hidden_size` apart from the table's width:
    // candle's `forward` would reshape `[3, 16]` rows to `[1, 3, 12]` and fail; the clause
    // `Embedding[V, E]` states both.
    let mut model = Classifier::new(50, 16, 4);
    let table = Tensor::ones((50, 16), DType::F32, &Device::Cpu).unwrap();
    model.embed = Embedding::new(table, 12);
    let ids = Tensor::new(&[[1u32, 2, 3]], &Device::Cpu).unwrap();
    let error = model.forward(&ids).unwrap_err().to_string();
    assert!(error.contains("self.embed.hidden_size()"), "{error}");
    assert!(error.contains("E = 12"), "{error}");
}

/// A residual block's convolution, its settings stated after `with`.
struct Downsample {
    conv: candle_nn::Conv2d,
}

impl Downsample {
    fn new(stride: usize, padding: usize) -> Downsample {
        let weight = Tensor::ones((8, 4, 3, 3), DType::F32, &Device::Cpu).unwrap();
        let config = candle_nn::Conv2dConfig {
            stride,
            padding,
            ..Default::default()
        };
        Downsample {
            conv: candle_nn::Conv2d::new(weight, None, config),
        }
    }

    #[contract(
        xs: f32[B, CIN, H, W],
        self.conv: Conv2d[CIN -> COUT, 3] with stride = S, padding = 1,
        dilation = 1,
        return: f32[B, COUT, (H - 1) / S + 1, (W - 1) / S + 1],
    )]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        xs.apply(&self.conv)
    }
}

#[test]
fn a_convolutions_settings_are_checked_and_give_its_output_size() {
    let xs = Tensor::ones((2, 4, 9, 7), DType::F32, &Device::Cpu).unwrap();
    let ys = Downsample::new(2, 1).forward(&xs).unwrap();
    assert_eq!(ys.dims(), &[2, 8, 5, 4]);
    // Another padding than the clause's: named, with its value, before the convolution runs.
    let error = Downsample::new(2, 0).forward(&xs).unwrap_err().to_string();
    assert!(error.contains("self.conv.config().padding"), "{error}");
    assert!(error.contains('0'), "{error}");
}

/// A depthwise convolution: `groups = C` makes its weight `[C, C / C, 3, 3]`.
struct Depthwise {
    conv: candle_nn::Conv2d,
}

impl Depthwise {
    #[contract(
        xs: f32[B, C, H, W],
        self.conv: Conv2d[C -> C, 3] with groups = G, padding = 1, stride = 1, dilation = 1,
        return: f32[B, C, H, W],
    )]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        xs.apply(&self.conv)
    }
}

#[test]
fn a_grouped_convolutions_weight_has_its_channels_per_group() {
    let depthwise = |channels: usize, per_group: usize, groups: usize| Depthwise {
        conv: candle_nn::Conv2d::new(
            Tensor::ones((channels, per_group, 3, 3), DType::F32, &Device::Cpu).unwrap(),
            None,
            candle_nn::Conv2dConfig {
                padding: 1,
                groups,
                ..Default::default()
            },
        ),
    };
    let xs = Tensor::ones((2, 4, 5, 5), DType::F32, &Device::Cpu).unwrap();
    assert_eq!(
        depthwise(4, 1, 4).forward(&xs).unwrap().dims(),
        &[2, 4, 5, 5]
    );
    // Two groups of two channels: the weight is `[4, 2, 3, 3]`, and so is `C / G`.
    assert_eq!(
        depthwise(4, 2, 2).forward(&xs).unwrap().dims(),
        &[2, 4, 5, 5]
    );
    // A weight of one channel a group, in two groups: not `C / G`.
    let error = depthwise(4, 1, 2).forward(&xs).unwrap_err().to_string();
    assert!(error.contains("self.conv.weight()"), "{error}");
}

/// A weight clause written by hand beside a relation on the groups: the weight is as written
/// (only a `with groups = G` divides the clause it follows).
struct HandWritten {
    conv: candle_nn::Conv2d,
}

impl HandWritten {
    #[contract(
        xs: f32[B, 4, H, W],
        self.conv.weight(): f32[4, 2, 3, 3],
        {self.conv.config().groups} == 2,
    )]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.conv.forward(xs)
    }
}

#[test]
fn a_relation_on_the_groups_leaves_a_hand_written_weight_clause_as_written() {
    let layer = HandWritten {
        conv: candle_nn::Conv2d::new(
            Tensor::ones((4, 2, 3, 3), DType::F32, &Device::Cpu).unwrap(),
            None,
            candle_nn::Conv2dConfig {
                padding: 1,
                groups: 2,
                ..Default::default()
            },
        ),
    };
    let xs = Tensor::ones((1, 4, 8, 8), DType::F32, &Device::Cpu).unwrap();
    assert_eq!(layer.forward(&xs).unwrap().dims(), &[1, 4, 8, 8]);
}
