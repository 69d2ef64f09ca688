//! candle-transformers' `convnext.rs`. candle builds every layer as a closure in a `Func`, which
//! no attribute can stand on: each closure is a struct here, holding what the closure captures,
//! and its `forward` body is the closure's body with each captured value read as `self.value`.
//! A block holds one of two MLPs and one of two norms (conv MLP with a channels-first norm, or
//! a linear MLP with a channels-last one): candle's `(mlp, norm)` of two `Func`s is a pair of
//! enums here, each a `Module` that keeps its input's shape. A stage's `Vec<Func>` is candle's.
//! The constructors are candle's, returning the structs; `Config` keeps two of its sizes.

use candle_contracts::contract;
use candle_core::shape::ShapeWithOneHole;
use candle_core::{DType, Device, Module, Result, Tensor, D};
use candle_nn::{
    conv2d, layer_norm, linear, Conv2d, Conv2dConfig, Func, LayerNorm, Linear, VarBuilder,
};

#[derive(Clone)]
pub struct Config {
    blocks: [usize; 4],
    channels: [usize; 4],
    use_conv_mlp: bool,
}

impl Config {
    pub fn atto() -> Self {
        Self {
            blocks: [2, 2, 6, 2],
            channels: [40, 80, 160, 320],
            use_conv_mlp: true,
        }
    }

    pub fn tiny() -> Self {
        Self {
            blocks: [3, 3, 9, 3],
            channels: [96, 192, 384, 768],
            use_conv_mlp: false,
        }
    }
}

/// What `layer_norm_cl`'s closure captures.
#[contract(norm: LayerNorm[C])]
struct LayerNormCl {
    norm: LayerNorm,
}

// Layer norm for data in channels-last format.
fn layer_norm_cl(dim: usize, vb: VarBuilder) -> Result<LayerNormCl> {
    let norm = layer_norm(dim, 1e-6, vb)?;

    Ok(LayerNormCl { norm })
}

#[contract]
impl Module for LayerNormCl {
    #[contract(xs: f32[*S, C], return: f32[*S, C])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        xs.apply(&self.norm)
    }
}

/// What `layer_norm_cf`'s closure captures.
#[contract(norm: LayerNorm[C])]
struct LayerNormCf {
    norm: LayerNorm,
}

// Layer norm for data in channels-first format.
fn layer_norm_cf(dim: usize, vb: VarBuilder) -> Result<LayerNormCf> {
    let norm = layer_norm(dim, 1e-6, vb)?;

    Ok(LayerNormCf { norm })
}

#[contract]
impl Module for LayerNormCf {
    #[contract(xs: f32[B, C, H, W], return: f32[B, C, H, W])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let xs = xs
            .permute((0, 2, 3, 1))?
            .apply(&self.norm)?
            .permute((0, 3, 1, 2))?;
        Ok(xs)
    }
}

/// What `convnext2_grn`'s closure captures.
struct Grn {
    gamma: Tensor,
    beta: Tensor,
    spatial_dim: [usize; 2],
    channel_dim: usize,
}

// Global response normalization layer
// Based on https://github.com/huggingface/pytorch-image-models/blob/main/timm/layers/grn.py
fn convnext2_grn(dim: usize, channels_last: bool, vb: VarBuilder) -> Result<Grn> {
    let (shape, spatial_dim, channel_dim) = if channels_last {
        ((1, 1, 1, ()).into_shape(dim)?, [1, 2], 3)
    } else {
        ((1, (), 1, 1).into_shape(dim)?, [2, 3], 1)
    };

    let gamma = vb.get(dim, "weight")?.reshape(&shape)?;
    let beta = vb.get(dim, "bias")?.reshape(&shape)?;

    Ok(Grn {
        gamma,
        beta,
        spatial_dim,
        channel_dim,
    })
}

#[contract]
impl Module for Grn {
    #[contract(xs: f32[B, X, Y, Z], return: f32[B, X, Y, Z])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let residual = xs;
        let gx = xs
            .sqr()?
            .sum_keepdim(self.spatial_dim)?
            .mean_keepdim(self.spatial_dim)?
            .sqrt()?;

        let gxmean = gx.mean_keepdim(self.channel_dim)?;
        let nx = gx.broadcast_div(&(gxmean + 1e-6)?)?;
        let xs = xs
            .broadcast_mul(&nx)?
            .broadcast_mul(&self.gamma)?
            .broadcast_add(&self.beta)?;

        xs + residual
    }
}

/// What `convnext_stem`'s closure captures.
#[contract(patchify: Conv2d[3 -> C, 4] with stride = 4, padding = 0, dilation = 1)]
struct Stem {
    patchify: Conv2d,
    norm: LayerNormCf,
}

// Initial downsampling via a patchify layer.
fn convnext_stem(out_channels: usize, vb: VarBuilder) -> Result<Stem> {
    let conv2d_cfg = Conv2dConfig {
        stride: 4,
        ..Default::default()
    };
    let patchify = conv2d(3, out_channels, 4, conv2d_cfg, vb.pp(0))?;
    let norm = layer_norm_cf(out_channels, vb.pp(1))?;

    Ok(Stem { patchify, norm })
}

#[contract]
impl Module for Stem {
    #[contract(
        xs: f32[B, 3, H, W],
        return: f32[B, C, (H - 4) / 4 + 1, (W - 4) / 4 + 1],
    )]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        xs.apply(&self.patchify)?.apply(&self.norm)
    }
}

/// What `convnext_downsample`'s closure captures.
#[contract(conv: Conv2d[CIN -> COUT, 2] with stride = 2, padding = 0, dilation = 1)]
struct Downsample {
    norm: LayerNormCf,
    conv: Conv2d,
}

// Downsampling applied after the stages.
fn convnext_downsample(dim: usize, vb: VarBuilder) -> Result<Downsample> {
    let conv2d_cfg = Conv2dConfig {
        stride: 2,
        ..Default::default()
    };
    let norm = layer_norm_cf(dim / 2, vb.pp(0))?;
    let conv = conv2d(dim / 2, dim, 2, conv2d_cfg, vb.pp(1))?;

    Ok(Downsample { norm, conv })
}

#[contract]
impl Module for Downsample {
    #[contract(
        xs: f32[B, CIN, H, W],
        return: f32[B, COUT, (H - 2) / 2 + 1, (W - 2) / 2 + 1],
    )]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        xs.apply(&self.norm)?.apply(&self.conv)
    }
}

/// What `convnext_mlp`'s closure captures.
#[contract(fc1: Linear[C -> 4 * C], fc2: Linear[4 * C -> C])]
struct Mlp {
    fc1: Linear,
    fc2: Linear,
    grn: Result<Grn>,
}

// MLP block from the original paper with optional GRN layer (v2 models).
fn convnext_mlp(dim: usize, vb: VarBuilder) -> Result<Mlp> {
    let fc1 = linear(dim, 4 * dim, vb.pp("fc1"))?;
    let fc2 = linear(4 * dim, dim, vb.pp("fc2"))?;
    let grn = convnext2_grn(4 * dim, true, vb.pp("grn"));

    Ok(Mlp { fc1, fc2, grn })
}

#[contract]
impl Module for Mlp {
    #[contract(xs: f32[B, H, W, C], return: f32[B, H, W, C])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let mut xs = xs.apply(&self.fc1)?.gelu_erf()?;
        if let Ok(g) = &self.grn {
            xs = xs.apply(g)?;
        }
        xs = xs.apply(&self.fc2)?;
        Ok(xs)
    }
}

/// What `convnext_conv_mlp`'s closure captures.
#[contract(
    fc1: Conv2d[C -> 4 * C, 1] with stride = 1, padding = 0, dilation = 1,
    fc2: Conv2d[4 * C -> C, 1] with stride = 1, padding = 0, dilation = 1,
)]
struct ConvMlp {
    fc1: Conv2d,
    fc2: Conv2d,
    grn: Result<Grn>,
}

// MLP block using pointwise convolutions, with optional GRN layer (v2 models).
fn convnext_conv_mlp(dim: usize, vb: VarBuilder) -> Result<ConvMlp> {
    let conv2d_cfg = Conv2dConfig {
        ..Default::default()
    };
    let fc1 = conv2d(dim, 4 * dim, 1, conv2d_cfg, vb.pp("fc1"))?;
    let fc2 = conv2d(4 * dim, dim, 1, conv2d_cfg, vb.pp("fc2"))?;

    let grn = convnext2_grn(4 * dim, false, vb.pp("grn"));
    Ok(ConvMlp { fc1, fc2, grn })
}

#[contract]
impl Module for ConvMlp {
    #[contract(xs: f32[B, C, H, W], return: f32[B, C, H, W])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let mut xs = xs.apply(&self.fc1)?.gelu_erf()?;
        if let Ok(g) = &self.grn {
            xs = xs.apply(g)?;
        }
        xs = xs.apply(&self.fc2)?;
        Ok(xs)
    }
}

/// A block's MLP: candle's `Func` of one of the two.
enum BlockMlp {
    Conv(ConvMlp),
    Linear(Mlp),
}

#[contract]
impl Module for BlockMlp {
    #[contract(xs: f32[B, X, Y, Z], return: f32[B, X, Y, Z])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        match self {
            Self::Conv(mlp) => xs.apply(mlp),
            Self::Linear(mlp) => xs.apply(mlp),
        }
    }
}

/// A block's norm: candle's `Func` of one of the two.
enum BlockNorm {
    ChannelsFirst(LayerNormCf),
    ChannelsLast(LayerNormCl),
}

#[contract]
impl Module for BlockNorm {
    #[contract(xs: f32[B, X, Y, Z], return: f32[B, X, Y, Z])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        match self {
            Self::ChannelsFirst(norm) => xs.apply(norm),
            Self::ChannelsLast(norm) => xs.apply(norm),
        }
    }
}

/// What `convnext_block`'s closure captures.
#[contract(conv_dw: Conv2d[C -> C, 7] with stride = 1, padding = 3, dilation = 1, groups = C)]
struct Block {
    conv_dw: Conv2d,
    gamma: Result<Tensor>,
    mlp: BlockMlp,
    norm: BlockNorm,
    use_conv_mlp: bool,
}

// A block consisting of a depthwise convolution, a MLP and layer scaling (v1 models only).
fn convnext_block(dim: usize, use_conv_mlp: bool, vb: VarBuilder) -> Result<Block> {
    let conv2d_cfg = Conv2dConfig {
        groups: dim,
        padding: 3,
        ..Default::default()
    };

    let conv_dw = conv2d(dim, dim, 7, conv2d_cfg, vb.pp("conv_dw"))?;
    let gamma = vb.get(dim, "gamma");

    let (mlp, norm) = if use_conv_mlp {
        (
            BlockMlp::Conv(convnext_conv_mlp(dim, vb.pp("mlp"))?),
            BlockNorm::ChannelsFirst(layer_norm_cf(dim, vb.pp("norm"))?),
        )
    } else {
        (
            BlockMlp::Linear(convnext_mlp(dim, vb.pp("mlp"))?),
            BlockNorm::ChannelsLast(layer_norm_cl(dim, vb.pp("norm"))?),
        )
    };

    Ok(Block {
        conv_dw,
        gamma,
        mlp,
        norm,
        use_conv_mlp,
    })
}

#[contract]
impl Module for Block {
    #[contract(xs: f32[B, C, H, W], return: f32[B, C, H, W])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let residual = xs;
        let mut xs = xs.apply(&self.conv_dw)?;

        xs = if self.use_conv_mlp {
            xs.apply(&self.norm)?.apply(&self.mlp)?
        } else {
            xs.permute((0, 2, 3, 1))?
                .apply(&self.norm)?
                .apply(&self.mlp)?
                .permute((0, 3, 1, 2))?
        };

        if let Ok(g) = &self.gamma {
            xs = xs.broadcast_mul(&g.reshape((1, (), 1, 1))?)?;
        };

        xs + residual
    }
}

/// What `convnext_stage`'s closure captures: candle's `Func`s, the downsample's and the blocks'.
struct Stage {
    blocks: Vec<Func<'static>>,
}

fn func<M: Module + Send + Sync + 'static>(layer: M) -> Func<'static> {
    Func::new(move |xs| xs.apply(&layer))
}

// Each stage contains blocks and a downsampling layer for the previous stage.
fn convnext_stage(cfg: &Config, stage_idx: usize, vb: VarBuilder) -> Result<Stage> {
    let nblocks = cfg.blocks[stage_idx];
    let mut blocks = Vec::with_capacity(nblocks);

    let dim = cfg.channels[stage_idx];

    if stage_idx > 0 {
        blocks.push(func(convnext_downsample(dim, vb.pp("downsample"))?));
    }

    for block_idx in 0..nblocks {
        blocks.push(func(convnext_block(
            dim,
            cfg.use_conv_mlp,
            vb.pp(format!("blocks.{block_idx}")),
        )?));
    }

    Ok(Stage { blocks })
}

#[contract]
impl Module for Stage {
    #[contract(xs: f32[B, CIN, H, W], return: f32[B, _, _, _])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let mut xs = xs.clone();
        for block in self.blocks.iter() {
            xs = xs.apply(block)?
        }
        Ok(xs)
    }
}

/// What `convnext_head`'s closure captures.
#[contract(linear: Linear[C -> NCLASSES])]
struct Head {
    norm: LayerNormCl,
    linear: Linear,
}

// Classification head.
fn convnext_head(outputs: usize, nclasses: usize, vb: VarBuilder) -> Result<Head> {
    let norm = layer_norm_cl(outputs, vb.pp("norm"))?;
    let linear = linear(outputs, nclasses, vb.pp("fc"))?;
    Ok(Head { norm, linear })
}

#[contract]
impl Module for Head {
    #[contract(xs: f32[B, C], return: f32[B, NCLASSES])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        xs.apply(&self.norm)?.apply(&self.linear)
    }
}

/// What `convnext_model`'s closure captures.
pub struct ConvNeXt {
    stem: Stem,
    stage1: Stage,
    stage2: Stage,
    stage3: Stage,
    stage4: Stage,
    head: Option<Head>,
}

// Build a convnext model for a given configuration.
fn convnext_model(config: &Config, nclasses: Option<usize>, vb: VarBuilder) -> Result<ConvNeXt> {
    let head = match nclasses {
        None => None,
        Some(nclasses) => {
            let head = convnext_head(config.channels[3], nclasses, vb.pp("head"))?;
            Some(head)
        }
    };

    let stem = convnext_stem(config.channels[0], vb.pp("stem"))?;
    let vb = vb.pp("stages");
    let stage1 = convnext_stage(config, 0, vb.pp(0))?;
    let stage2 = convnext_stage(config, 1, vb.pp(1))?;
    let stage3 = convnext_stage(config, 2, vb.pp(2))?;
    let stage4 = convnext_stage(config, 3, vb.pp(3))?;

    Ok(ConvNeXt {
        stem,
        stage1,
        stage2,
        stage3,
        stage4,
        head,
    })
}

#[contract]
impl Module for ConvNeXt {
    #[contract(xs: f32[B, 3, H, W], return: f32[B, _])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let xs = xs
            .apply(&self.stem)?
            .apply(&self.stage1)?
            .apply(&self.stage2)?
            .apply(&self.stage3)?
            .apply(&self.stage4)?
            .mean(D::Minus2)?
            .mean(D::Minus1)?;
        match &self.head {
            None => Ok(xs),
            Some(head) => xs.apply(head),
        }
    }
}

pub fn convnext(cfg: &Config, nclasses: usize, vb: VarBuilder) -> Result<ConvNeXt> {
    convnext_model(cfg, Some(nclasses), vb)
}

pub fn convnext_no_final_layer(cfg: &Config, vb: VarBuilder) -> Result<ConvNeXt> {
    convnext_model(cfg, None, vb)
}

#[test]
fn convnext_blocks_and_the_network() {
    let varmap = candle_nn::VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    let xs = Tensor::randn(0f32, 1., (2, 8, 6, 6), &Device::Cpu).unwrap();
    // A v2 block (conv MLP, GRN) and a v1 block (linear MLP), each keeping its input's shape.
    let v2 = convnext_block(8, true, vb.pp("v2")).unwrap();
    assert_eq!(v2.forward(&xs).unwrap().dims(), &[2, 8, 6, 6]);
    let v1 = convnext_block(8, false, vb.pp("v1")).unwrap();
    assert_eq!(v1.forward(&xs).unwrap().dims(), &[2, 8, 6, 6]);
    let down = convnext_downsample(16, vb.pp("down")).unwrap();
    assert_eq!(down.forward(&xs).unwrap().dims(), &[2, 16, 3, 3]);
    // Both layouts, one block a stage, on a 32 x 32 image: 8 x 8 after the stem, 1 x 1 last.
    for use_conv_mlp in [true, false] {
        let small = Config {
            blocks: [1, 1, 1, 1],
            channels: [8, 16, 32, 64],
            use_conv_mlp,
        };
        let vb = vb.pp(format!("model{use_conv_mlp}"));
        let model = convnext(&small, 10, vb.pp("head")).unwrap();
        let images = Tensor::randn(0f32, 1., (2, 3, 32, 32), &Device::Cpu).unwrap();
        assert_eq!(model.forward(&images).unwrap().dims(), &[2, 10]);
        let features = convnext_no_final_layer(&small, vb.pp("features")).unwrap();
        assert_eq!(features.forward(&images).unwrap().dims(), &[2, 64]);
    }
    assert_eq!(Config::atto().channels[3], 320);
    assert!(!Config::tiny().use_conv_mlp);
}
