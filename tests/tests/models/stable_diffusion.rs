//! candle-transformers' `stable_diffusion`: the UNet's `ResnetBlock2D` (`resnet.rs`), the
//! attention pieces (`GeGlu`, `FeedForward`, `CrossAttention`, `BasicTransformerBlock`,
//! `SpatialTransformer` and the VAE's `AttentionBlock`, `attention.rs`), `Downsample2D`,
//! `Upsample2D`, `DownEncoderBlock2D` and `UpDecoderBlock2D` (`unet_2d_blocks.rs`) and
//! `Timesteps`, `TimestepEmbedding` (`embeddings.rs`). The bodies are candle's;
//! `with_tracing::{conv2d, Conv2d}` are candle-nn's, the `tracing` spans are left out, and the
//! `flash-attn` feature's `flash_attn` is the one candle builds without that feature (its body
//! one `unimplemented!`), not under `cfg`, so the contract states `use_flash_attn = false`.
//!
//! One change to a body: candle's `CrossAttention::sliced_attention` ends in
//! `Tensor::stack(&hidden_states, 0)?`, a `[n, slice, T, D]` tensor that its
//! `reshape_batch_dim_to_heads` (`dims3`) rejects on every call; the macro rejects it at compile
//! time (`takes xs: f32[BH, T, HD], but hidden_states is f32[_, _, T, HD]: rank 4 given, rank 3
//! expected`). It is `Tensor::cat(&hidden_states, 0)?` here, as diffusers concatenates the
//! slices; `candle_sliced_attention_stacks_to_rank_4` runs candle's body as written.

use candle_contracts::contract;
use candle_core::{DType, Device, IndexOp, Module, Result, Tensor, D};
use candle_nn as nn;
use candle_nn::{Conv2d, VarBuilder};

// ---------------------------------------------------------------------------------------------
// resnet.rs

/// Configuration for a ResNet block.
#[derive(Debug, Clone, Copy)]
pub struct ResnetBlock2DConfig {
    /// The number of output channels, defaults to the number of input channels.
    pub out_channels: Option<usize>,
    pub temb_channels: Option<usize>,
    /// The number of groups to use in group normalization.
    pub groups: usize,
    pub groups_out: Option<usize>,
    /// The epsilon to be used in the group normalization operations.
    pub eps: f64,
    /// Whether to use a 2D convolution in the skip connection. When using None,
    /// such a convolution is used if the number of input channels is different from
    /// the number of output channels.
    pub use_in_shortcut: Option<bool>,
    // non_linearity: silu
    /// The final output is scaled by dividing by this value.
    pub output_scale_factor: f64,
}

impl Default for ResnetBlock2DConfig {
    fn default() -> Self {
        Self {
            out_channels: None,
            temb_channels: Some(512),
            groups: 32,
            groups_out: None,
            eps: 1e-6,
            use_in_shortcut: None,
            output_scale_factor: 1.,
        }
    }
}

#[derive(Debug)]
#[contract(
    conv1: Conv2d[CIN -> COUT, 3] with stride = 1, padding = 1, dilation = 1,
    conv2: Conv2d[COUT -> COUT, 3] with stride = 1, padding = 1, dilation = 1,
    time_emb_proj?: Linear[TEMB -> COUT],
    conv_shortcut?: Conv2d[CIN -> COUT, 1],
)]
pub struct ResnetBlock2D {
    norm1: nn::GroupNorm,
    conv1: Conv2d,
    norm2: nn::GroupNorm,
    conv2: Conv2d,
    time_emb_proj: Option<nn::Linear>,
    conv_shortcut: Option<Conv2d>,
    config: ResnetBlock2DConfig,
}

#[contract]
impl ResnetBlock2D {
    pub fn new(
        vs: nn::VarBuilder,
        in_channels: usize,
        config: ResnetBlock2DConfig,
    ) -> Result<Self> {
        let out_channels = config.out_channels.unwrap_or(in_channels);
        let conv_cfg = nn::Conv2dConfig {
            stride: 1,
            padding: 1,
            groups: 1,
            dilation: 1,
            cudnn_fwd_algo: None,
        };
        let norm1 = nn::group_norm(config.groups, in_channels, config.eps, vs.pp("norm1"))?;
        let conv1 = nn::conv2d(in_channels, out_channels, 3, conv_cfg, vs.pp("conv1"))?;
        let groups_out = config.groups_out.unwrap_or(config.groups);
        let norm2 = nn::group_norm(groups_out, out_channels, config.eps, vs.pp("norm2"))?;
        let conv2 = nn::conv2d(out_channels, out_channels, 3, conv_cfg, vs.pp("conv2"))?;
        let use_in_shortcut = config
            .use_in_shortcut
            .unwrap_or(in_channels != out_channels);
        let conv_shortcut = if use_in_shortcut {
            let conv_cfg = nn::Conv2dConfig {
                stride: 1,
                padding: 0,
                groups: 1,
                dilation: 1,
                cudnn_fwd_algo: None,
            };
            Some(nn::conv2d(
                in_channels,
                out_channels,
                1,
                conv_cfg,
                vs.pp("conv_shortcut"),
            )?)
        } else {
            None
        };
        let time_emb_proj = match config.temb_channels {
            None => None,
            Some(temb_channels) => Some(nn::linear(
                temb_channels,
                out_channels,
                vs.pp("time_emb_proj"),
            )?),
        };
        Ok(Self {
            norm1,
            conv1,
            norm2,
            conv2,
            time_emb_proj,
            config,
            conv_shortcut,
        })
    }

    #[contract(
        xs: f32[B, CIN, H, W],
        temb: f32[B, TEMB],
        return: f32[B, COUT, H, W],
    )]
    pub fn forward(&self, xs: &Tensor, temb: Option<&Tensor>) -> Result<Tensor> {
        let shortcut_xs = match &self.conv_shortcut {
            Some(conv_shortcut) => conv_shortcut.forward(xs)?,
            None => xs.clone(),
        };
        let xs = self.norm1.forward(xs)?;
        let xs = self.conv1.forward(&nn::ops::silu(&xs)?)?;
        let xs = match (temb, &self.time_emb_proj) {
            (Some(temb), Some(time_emb_proj)) => time_emb_proj
                .forward(&nn::ops::silu(temb)?)?
                .unsqueeze(D::Minus1)?
                .unsqueeze(D::Minus1)?
                .broadcast_add(&xs)?,
            _ => xs,
        };
        let xs = self
            .conv2
            .forward(&nn::ops::silu(&self.norm2.forward(&xs)?)?)?;
        (shortcut_xs + xs)? / self.config.output_scale_factor
    }
}

// ---------------------------------------------------------------------------------------------
// attention.rs

#[derive(Debug)]
#[contract(proj: Linear[DIN -> P2], P2 % 2 == 0)]
struct GeGlu {
    proj: nn::Linear,
}

impl GeGlu {
    fn new(vs: nn::VarBuilder, dim_in: usize, dim_out: usize) -> Result<Self> {
        let proj = nn::linear(dim_in, dim_out * 2, vs.pp("proj"))?;
        Ok(Self { proj })
    }
}

#[contract]
impl Module for GeGlu {
    #[contract(xs: f32[B, T, DIN], return: f32[B, T, P2 / 2])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let hidden_states_and_gate = self.proj.forward(xs)?.chunk(2, D::Minus1)?;
        &hidden_states_and_gate[0] * hidden_states_and_gate[1].gelu()?
    }
}

/// A feed-forward layer.
#[derive(Debug)]
#[contract(project_in.proj: Linear[DIM -> P2], linear: Linear[P2 / 2 -> DOUT])]
struct FeedForward {
    project_in: GeGlu,
    linear: nn::Linear,
}

impl FeedForward {
    // The glu parameter in the python code is unused?
    // https://github.com/huggingface/diffusers/blob/d3d22ce5a894becb951eec03e663951b28d45135/src/diffusers/models/attention.py#L347
    /// Creates a new feed-forward layer based on some given input dimension, some
    /// output dimension, and a multiplier to be used for the intermediary layer.
    fn new(vs: nn::VarBuilder, dim: usize, dim_out: Option<usize>, mult: usize) -> Result<Self> {
        let inner_dim = dim * mult;
        let dim_out = dim_out.unwrap_or(dim);
        let vs = vs.pp("net");
        let project_in = GeGlu::new(vs.pp("0"), dim, inner_dim)?;
        let linear = nn::linear(inner_dim, dim_out, vs.pp("2"))?;
        Ok(Self { project_in, linear })
    }
}

#[contract]
impl Module for FeedForward {
    #[contract(xs: f32[B, T, DIM], return: f32[B, T, DOUT])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let xs = self.project_in.forward(xs)?;
        self.linear.forward(&xs)
    }
}

// candle's `flash_attn` without the `flash-attn` feature.
fn flash_attn(_: &Tensor, _: &Tensor, _: &Tensor, _: f32, _: bool) -> Result<Tensor> {
    unimplemented!("compile with '--features flash-attn'")
}

#[derive(Debug)]
#[contract(
    to_q: Linear[QD -> I],
    to_k: Linear[CD -> I],
    to_v: Linear[CD -> I],
    to_out: Linear[I -> QD],
    heads = H,
    use_flash_attn = false,
    I % H == 0,
)]
pub struct CrossAttention {
    to_q: nn::Linear,
    to_k: nn::Linear,
    to_v: nn::Linear,
    to_out: nn::Linear,
    heads: usize,
    scale: f64,
    slice_size: Option<usize>,
    use_flash_attn: bool,
}

#[contract]
impl CrossAttention {
    // Defaults should be heads = 8, dim_head = 64, context_dim = None
    pub fn new(
        vs: nn::VarBuilder,
        query_dim: usize,
        context_dim: Option<usize>,
        heads: usize,
        dim_head: usize,
        slice_size: Option<usize>,
        use_flash_attn: bool,
    ) -> Result<Self> {
        let inner_dim = dim_head * heads;
        let context_dim = context_dim.unwrap_or(query_dim);
        let scale = 1.0 / f64::sqrt(dim_head as f64);
        let to_q = nn::linear_no_bias(query_dim, inner_dim, vs.pp("to_q"))?;
        let to_k = nn::linear_no_bias(context_dim, inner_dim, vs.pp("to_k"))?;
        let to_v = nn::linear_no_bias(context_dim, inner_dim, vs.pp("to_v"))?;
        let to_out = nn::linear(inner_dim, query_dim, vs.pp("to_out.0"))?;
        Ok(Self {
            to_q,
            to_k,
            to_v,
            to_out,
            heads,
            scale,
            slice_size,
            use_flash_attn,
        })
    }

    #[contract(xs: f32[B, T, I], return: f32[B * H, T, I / H])]
    fn reshape_heads_to_batch_dim(&self, xs: &Tensor) -> Result<Tensor> {
        let (batch_size, seq_len, dim) = xs.dims3()?;
        xs.reshape((batch_size, seq_len, self.heads, dim / self.heads))?
            .transpose(1, 2)?
            .reshape((batch_size * self.heads, seq_len, dim / self.heads))
    }

    #[contract(xs: f32[BH, T, HD], return: f32[BH / H, T, HD * H])]
    fn reshape_batch_dim_to_heads(&self, xs: &Tensor) -> Result<Tensor> {
        let (batch_size, seq_len, dim) = xs.dims3()?;
        xs.reshape((batch_size / self.heads, self.heads, seq_len, dim))?
            .transpose(1, 2)?
            .reshape((batch_size / self.heads, seq_len, dim * self.heads))
    }

    #[contract(
        query: f32[BH, T, HD],
        key: f32[BH, S, HD],
        value: f32[BH, S, HD],
        return: f32[_, T, HD * H],
    )]
    fn sliced_attention(
        &self,
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        slice_size: usize,
    ) -> Result<Tensor> {
        let batch_size_attention = query.dim(0)?;
        let mut hidden_states = Vec::with_capacity(batch_size_attention / slice_size);
        let in_dtype = query.dtype();
        let query = query.to_dtype(DType::F32)?;
        let key = key.to_dtype(DType::F32)?;
        let value = value.to_dtype(DType::F32)?;

        for i in 0..batch_size_attention / slice_size {
            let start_idx = i * slice_size;
            let end_idx = (i + 1) * slice_size;

            let xs = query
                .i(start_idx..end_idx)?
                .matmul(&(key.i(start_idx..end_idx)?.t()? * self.scale)?)?;
            let xs = nn::ops::softmax(&xs, D::Minus1)?.matmul(&value.i(start_idx..end_idx)?)?;
            hidden_states.push(xs)
        }
        let hidden_states = Tensor::cat(&hidden_states, 0)?.to_dtype(in_dtype)?;
        self.reshape_batch_dim_to_heads(&hidden_states)
    }

    #[contract(
        query: f32[BH, T, HD],
        key: f32[BH, S, HD],
        value: f32[BH, S, HD],
        return: f32[BH / H, T, HD * H],
    )]
    fn attention(&self, query: &Tensor, key: &Tensor, value: &Tensor) -> Result<Tensor> {
        let xs = if self.use_flash_attn {
            let init_dtype = query.dtype();
            let q = query
                .to_dtype(candle_core::DType::F16)?
                .unsqueeze(0)?
                .transpose(1, 2)?;
            let k = key
                .to_dtype(candle_core::DType::F16)?
                .unsqueeze(0)?
                .transpose(1, 2)?;
            let v = value
                .to_dtype(candle_core::DType::F16)?
                .unsqueeze(0)?
                .transpose(1, 2)?;
            flash_attn(&q, &k, &v, self.scale as f32, false)?
                .transpose(1, 2)?
                .squeeze(0)?
                .to_dtype(init_dtype)?
        } else {
            let in_dtype = query.dtype();
            let query = query.to_dtype(DType::F32)?;
            let key = key.to_dtype(DType::F32)?;
            let value = value.to_dtype(DType::F32)?;
            let xs = query.matmul(&(key.t()? * self.scale)?)?;
            let xs = { nn::ops::softmax_last_dim(&xs)? };
            xs.matmul(&value)?.to_dtype(in_dtype)?
        };
        self.reshape_batch_dim_to_heads(&xs)
    }

    #[contract(
        xs: f32[B, T, QD],
        context: f32[B, S, CD],
        return: f32[B, T, QD],
    )]
    pub fn forward(&self, xs: &Tensor, context: Option<&Tensor>) -> Result<Tensor> {
        let query = self.to_q.forward(xs)?;
        let context = context.unwrap_or(xs).contiguous()?;
        let key = self.to_k.forward(&context)?;
        let value = self.to_v.forward(&context)?;
        let query = self.reshape_heads_to_batch_dim(&query)?;
        let key = self.reshape_heads_to_batch_dim(&key)?;
        let value = self.reshape_heads_to_batch_dim(&value)?;
        let dim0 = query.dim(0)?;
        let slice_size = self.slice_size.filter(|&slice_size| dim0 >= slice_size);
        let xs = match slice_size {
            None => self.attention(&query, &key, &value)?,
            Some(slice_size) => self.sliced_attention(&query, &key, &value, slice_size)?,
        };
        self.to_out.forward(&xs)
    }
}

/// A basic Transformer block.
#[derive(Debug)]
#[contract(norm1: LayerNorm[DIM], norm2: LayerNorm[DIM], norm3: LayerNorm[DIM])]
struct BasicTransformerBlock {
    attn1: CrossAttention,
    ff: FeedForward,
    attn2: CrossAttention,
    norm1: nn::LayerNorm,
    norm2: nn::LayerNorm,
    norm3: nn::LayerNorm,
}

#[contract]
impl BasicTransformerBlock {
    fn new(
        vs: nn::VarBuilder,
        dim: usize,
        n_heads: usize,
        d_head: usize,
        context_dim: Option<usize>,
        sliced_attention_size: Option<usize>,
        use_flash_attn: bool,
    ) -> Result<Self> {
        let attn1 = CrossAttention::new(
            vs.pp("attn1"),
            dim,
            None,
            n_heads,
            d_head,
            sliced_attention_size,
            use_flash_attn,
        )?;
        let ff = FeedForward::new(vs.pp("ff"), dim, None, 4)?;
        let attn2 = CrossAttention::new(
            vs.pp("attn2"),
            dim,
            context_dim,
            n_heads,
            d_head,
            sliced_attention_size,
            use_flash_attn,
        )?;
        let norm1 = nn::layer_norm(dim, 1e-5, vs.pp("norm1"))?;
        let norm2 = nn::layer_norm(dim, 1e-5, vs.pp("norm2"))?;
        let norm3 = nn::layer_norm(dim, 1e-5, vs.pp("norm3"))?;
        Ok(Self {
            attn1,
            ff,
            attn2,
            norm1,
            norm2,
            norm3,
        })
    }

    #[contract(xs: f32[B, T, DIM], context: f32[B, S, CD], return: f32[B, T, DIM])]
    fn forward(&self, xs: &Tensor, context: Option<&Tensor>) -> Result<Tensor> {
        let xs = (self.attn1.forward(&self.norm1.forward(xs)?, None)? + xs)?;
        let xs = (self.attn2.forward(&self.norm2.forward(&xs)?, context)? + xs)?;
        self.ff.forward(&self.norm3.forward(&xs)?)? + xs
    }
}

#[derive(Debug, Clone, Copy)]
pub struct SpatialTransformerConfig {
    pub depth: usize,
    pub num_groups: usize,
    pub context_dim: Option<usize>,
    pub sliced_attention_size: Option<usize>,
    pub use_linear_projection: bool,
}

impl Default for SpatialTransformerConfig {
    fn default() -> Self {
        Self {
            depth: 1,
            num_groups: 32,
            context_dim: None,
            sliced_attention_size: None,
            use_linear_projection: false,
        }
    }
}

#[derive(Debug)]
enum Proj {
    Conv2d(nn::Conv2d),
    Linear(nn::Linear),
}

// Aka Transformer2DModel
#[derive(Debug)]
pub struct SpatialTransformer {
    norm: nn::GroupNorm,
    proj_in: Proj,
    transformer_blocks: Vec<BasicTransformerBlock>,
    proj_out: Proj,
    pub config: SpatialTransformerConfig,
}

impl SpatialTransformer {
    pub fn new(
        vs: nn::VarBuilder,
        in_channels: usize,
        n_heads: usize,
        d_head: usize,
        use_flash_attn: bool,
        config: SpatialTransformerConfig,
    ) -> Result<Self> {
        let inner_dim = n_heads * d_head;
        let norm = nn::group_norm(config.num_groups, in_channels, 1e-6, vs.pp("norm"))?;
        let proj_in = if config.use_linear_projection {
            Proj::Linear(nn::linear(in_channels, inner_dim, vs.pp("proj_in"))?)
        } else {
            Proj::Conv2d(nn::conv2d(
                in_channels,
                inner_dim,
                1,
                Default::default(),
                vs.pp("proj_in"),
            )?)
        };
        let mut transformer_blocks = vec![];
        let vs_tb = vs.pp("transformer_blocks");
        for index in 0..config.depth {
            let tb = BasicTransformerBlock::new(
                vs_tb.pp(index.to_string()),
                inner_dim,
                n_heads,
                d_head,
                config.context_dim,
                config.sliced_attention_size,
                use_flash_attn,
            )?;
            transformer_blocks.push(tb)
        }
        let proj_out = if config.use_linear_projection {
            Proj::Linear(nn::linear(in_channels, inner_dim, vs.pp("proj_out"))?)
        } else {
            Proj::Conv2d(nn::conv2d(
                inner_dim,
                in_channels,
                1,
                Default::default(),
                vs.pp("proj_out"),
            )?)
        };
        Ok(Self {
            norm,
            proj_in,
            transformer_blocks,
            proj_out,
            config,
        })
    }

    #[contract(
        xs: f32[B, C, H, W],
        context: f32[B, S, CD],
        return: f32[B, C, H, W],
    )]
    pub fn forward(&self, xs: &Tensor, context: Option<&Tensor>) -> Result<Tensor> {
        let (batch, _channel, height, weight) = xs.dims4()?;
        let residual = xs;
        let xs = self.norm.forward(xs)?;
        let (inner_dim, xs) = match &self.proj_in {
            Proj::Conv2d(p) => {
                let xs = p.forward(&xs)?;
                let inner_dim = xs.dim(1)?;
                let xs = xs
                    .transpose(1, 2)?
                    .t()?
                    .reshape((batch, height * weight, inner_dim))?;
                (inner_dim, xs)
            }
            Proj::Linear(p) => {
                let inner_dim = xs.dim(1)?;
                let xs = xs
                    .transpose(1, 2)?
                    .t()?
                    .reshape((batch, height * weight, inner_dim))?;
                (inner_dim, p.forward(&xs)?)
            }
        };
        let mut xs = xs;
        for block in self.transformer_blocks.iter() {
            xs = block.forward(&xs, context)?
        }
        let xs = match &self.proj_out {
            Proj::Conv2d(p) => p.forward(
                &xs.reshape((batch, height, weight, inner_dim))?
                    .t()?
                    .transpose(1, 2)?,
            )?,
            Proj::Linear(p) => p
                .forward(&xs)?
                .reshape((batch, height, weight, inner_dim))?
                .t()?
                .transpose(1, 2)?,
        };
        xs + residual
    }
}

/// Configuration for an attention block.
#[derive(Debug, Clone, Copy)]
pub struct AttentionBlockConfig {
    pub num_head_channels: Option<usize>,
    pub num_groups: usize,
    pub rescale_output_factor: f64,
    pub eps: f64,
}

impl Default for AttentionBlockConfig {
    fn default() -> Self {
        Self {
            num_head_channels: None,
            num_groups: 32,
            rescale_output_factor: 1.,
            eps: 1e-5,
        }
    }
}

#[derive(Debug)]
#[contract(
    query: Linear[C -> C],
    key: Linear[C -> C],
    value: Linear[C -> C],
    proj_attn: Linear[C -> C],
    channels = C,
    num_heads = NH,
    C % NH == 0,
)]
pub struct AttentionBlock {
    group_norm: nn::GroupNorm,
    query: nn::Linear,
    key: nn::Linear,
    value: nn::Linear,
    proj_attn: nn::Linear,
    channels: usize,
    num_heads: usize,
    config: AttentionBlockConfig,
}

// In the .safetensor weights of official Stable Diffusion 3 Medium Huggingface repo
// https://huggingface.co/stabilityai/stable-diffusion-3-medium
// Linear layer may use a different dimension for the weight in the linear, which is
// incompatible with the current implementation of the nn::linear constructor.
// This is a workaround to handle the different dimensions.
fn get_qkv_linear(channels: usize, vs: nn::VarBuilder) -> Result<nn::Linear> {
    match vs.get((channels, channels), "weight") {
        Ok(_) => nn::linear(channels, channels, vs),
        Err(_) => {
            let weight = vs
                .get((channels, channels, 1, 1), "weight")?
                .reshape((channels, channels))?;
            let bias = vs.get((channels,), "bias")?;
            Ok(nn::Linear::new(weight, Some(bias)))
        }
    }
}

#[contract]
impl AttentionBlock {
    pub fn new(vs: nn::VarBuilder, channels: usize, config: AttentionBlockConfig) -> Result<Self> {
        let num_head_channels = config.num_head_channels.unwrap_or(channels);
        let num_heads = channels / num_head_channels;
        let group_norm =
            nn::group_norm(config.num_groups, channels, config.eps, vs.pp("group_norm"))?;
        let (q_path, k_path, v_path, out_path) = if vs.contains_tensor("to_q.weight") {
            ("to_q", "to_k", "to_v", "to_out.0")
        } else {
            ("query", "key", "value", "proj_attn")
        };
        let query = get_qkv_linear(channels, vs.pp(q_path))?;
        let key = get_qkv_linear(channels, vs.pp(k_path))?;
        let value = get_qkv_linear(channels, vs.pp(v_path))?;
        let proj_attn = get_qkv_linear(channels, vs.pp(out_path))?;
        Ok(Self {
            group_norm,
            query,
            key,
            value,
            proj_attn,
            channels,
            num_heads,
            config,
        })
    }

    #[contract(xs: f32[B, T, C], return: f32[B, NH, T, C / NH])]
    fn transpose_for_scores(&self, xs: Tensor) -> Result<Tensor> {
        let (batch, t, h_times_d) = xs.dims3()?;
        xs.reshape((batch, t, self.num_heads, h_times_d / self.num_heads))?
            .transpose(1, 2)
    }
}

#[contract]
impl Module for AttentionBlock {
    #[contract(xs: f32[B, C, H, W], return: f32[B, C, H, W])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let in_dtype = xs.dtype();
        let residual = xs;
        let (batch, channel, height, width) = xs.dims4()?;
        let xs = self
            .group_norm
            .forward(xs)?
            .reshape((batch, channel, height * width))?
            .transpose(1, 2)?;

        let query_proj = self.query.forward(&xs)?;
        let key_proj = self.key.forward(&xs)?;
        let value_proj = self.value.forward(&xs)?;

        let query_states = self
            .transpose_for_scores(query_proj)?
            .to_dtype(DType::F32)?;
        let key_states = self.transpose_for_scores(key_proj)?.to_dtype(DType::F32)?;
        let value_states = self
            .transpose_for_scores(value_proj)?
            .to_dtype(DType::F32)?;

        // scale is applied twice, hence the -0.25 here rather than -0.5.
        // https://github.com/huggingface/diffusers/blob/d3d22ce5a894becb951eec03e663951b28d45135/src/diffusers/models/attention.py#L87
        let scale = f64::powf(self.channels as f64 / self.num_heads as f64, -0.25);
        let attention_scores = (query_states * scale)?.matmul(&(key_states.t()? * scale)?)?;
        let attention_probs = nn::ops::softmax(&attention_scores, D::Minus1)?;

        // TODO: revert the call to force_contiguous once the three matmul kernels have been
        // adapted to handle layout with some dims set to 1.
        let xs = attention_probs.matmul(&value_states)?;
        let xs = xs.to_dtype(in_dtype)?;
        let xs = xs.transpose(1, 2)?.contiguous()?;
        let xs = xs.flatten_from(D::Minus2)?;
        let xs = self
            .proj_attn
            .forward(&xs)?
            .t()?
            .reshape((batch, channel, height, width))?;
        (xs + residual)? / self.config.rescale_output_factor
    }
}

// ---------------------------------------------------------------------------------------------
// unet_2d_blocks.rs

#[derive(Debug)]
#[contract(
    padding = P,
    conv?: Conv2d[CIN -> COUT, 3],
)]
struct Downsample2D {
    conv: Option<Conv2d>,
    padding: usize,
}

impl Downsample2D {
    fn new(
        vs: nn::VarBuilder,
        in_channels: usize,
        use_conv: bool,
        out_channels: usize,
        padding: usize,
    ) -> Result<Self> {
        let conv = if use_conv {
            let config = nn::Conv2dConfig {
                stride: 2,
                padding,
                ..Default::default()
            };
            let conv = nn::conv2d(in_channels, out_channels, 3, config, vs.pp("conv"))?;
            Some(conv)
        } else {
            None
        };
        Ok(Self { conv, padding })
    }
}

#[contract]
impl Module for Downsample2D {
    #[contract(xs: f32[B, CIN, H, W], return: f32[B, _, _, _])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        match &self.conv {
            None => xs.avg_pool2d(2),
            Some(conv) => {
                if self.padding == 0 {
                    let xs = xs
                        .pad_with_zeros(D::Minus1, 0, 1)?
                        .pad_with_zeros(D::Minus2, 0, 1)?;
                    conv.forward(&xs)
                } else {
                    conv.forward(xs)
                }
            }
        }
    }
}

// This does not support the conv-transpose mode.
#[derive(Debug)]
#[contract(conv: Conv2d[CIN -> COUT, 3] with stride = 1, padding = 1, dilation = 1)]
struct Upsample2D {
    conv: Conv2d,
}

#[contract]
impl Upsample2D {
    fn new(vs: nn::VarBuilder, in_channels: usize, out_channels: usize) -> Result<Self> {
        let config = nn::Conv2dConfig {
            padding: 1,
            ..Default::default()
        };
        let conv = nn::conv2d(in_channels, out_channels, 3, config, vs.pp("conv"))?;
        Ok(Self { conv })
    }

    #[contract(xs: f32[B, CIN, H, W], return: f32[B, COUT, _, _])]
    fn forward(&self, xs: &Tensor, size: Option<(usize, usize)>) -> Result<Tensor> {
        let xs = match size {
            None => {
                let (_bsize, _channels, h, w) = xs.dims4()?;
                xs.upsample_nearest2d(2 * h, 2 * w)?
            }
            Some((h, w)) => xs.upsample_nearest2d(h, w)?,
        };
        self.conv.forward(&xs)
    }
}

#[derive(Debug, Clone, Copy)]
pub struct DownEncoderBlock2DConfig {
    pub num_layers: usize,
    pub resnet_eps: f64,
    pub resnet_groups: usize,
    pub output_scale_factor: f64,
    pub add_downsample: bool,
    pub downsample_padding: usize,
}

impl Default for DownEncoderBlock2DConfig {
    fn default() -> Self {
        Self {
            num_layers: 1,
            resnet_eps: 1e-6,
            resnet_groups: 32,
            output_scale_factor: 1.,
            add_downsample: true,
            downsample_padding: 1,
        }
    }
}

#[derive(Debug)]
pub struct DownEncoderBlock2D {
    resnets: Vec<ResnetBlock2D>,
    downsampler: Option<Downsample2D>,
    pub config: DownEncoderBlock2DConfig,
}

impl DownEncoderBlock2D {
    pub fn new(
        vs: nn::VarBuilder,
        in_channels: usize,
        out_channels: usize,
        config: DownEncoderBlock2DConfig,
    ) -> Result<Self> {
        let resnets: Vec<_> = {
            let vs = vs.pp("resnets");
            let conv_cfg = ResnetBlock2DConfig {
                eps: config.resnet_eps,
                out_channels: Some(out_channels),
                groups: config.resnet_groups,
                output_scale_factor: config.output_scale_factor,
                temb_channels: None,
                ..Default::default()
            };
            (0..(config.num_layers))
                .map(|i| {
                    let in_channels = if i == 0 { in_channels } else { out_channels };
                    ResnetBlock2D::new(vs.pp(i.to_string()), in_channels, conv_cfg)
                })
                .collect::<Result<Vec<_>>>()?
        };
        let downsampler = if config.add_downsample {
            let downsample = Downsample2D::new(
                vs.pp("downsamplers").pp("0"),
                out_channels,
                true,
                out_channels,
                config.downsample_padding,
            )?;
            Some(downsample)
        } else {
            None
        };
        Ok(Self {
            resnets,
            downsampler,
            config,
        })
    }
}

#[contract]
impl Module for DownEncoderBlock2D {
    #[contract(xs: f32[B, CIN, H, W], return: f32[B, _, _, _])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let mut xs = xs.clone();
        for resnet in self.resnets.iter() {
            xs = resnet.forward(&xs, None)?
        }
        match &self.downsampler {
            Some(downsampler) => downsampler.forward(&xs),
            None => Ok(xs),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct UpDecoderBlock2DConfig {
    pub num_layers: usize,
    pub resnet_eps: f64,
    pub resnet_groups: usize,
    pub output_scale_factor: f64,
    pub add_upsample: bool,
}

impl Default for UpDecoderBlock2DConfig {
    fn default() -> Self {
        Self {
            num_layers: 1,
            resnet_eps: 1e-6,
            resnet_groups: 32,
            output_scale_factor: 1.,
            add_upsample: true,
        }
    }
}

#[derive(Debug)]
pub struct UpDecoderBlock2D {
    resnets: Vec<ResnetBlock2D>,
    upsampler: Option<Upsample2D>,
    pub config: UpDecoderBlock2DConfig,
}

impl UpDecoderBlock2D {
    pub fn new(
        vs: nn::VarBuilder,
        in_channels: usize,
        out_channels: usize,
        config: UpDecoderBlock2DConfig,
    ) -> Result<Self> {
        let resnets: Vec<_> = {
            let vs = vs.pp("resnets");
            let conv_cfg = ResnetBlock2DConfig {
                out_channels: Some(out_channels),
                eps: config.resnet_eps,
                groups: config.resnet_groups,
                output_scale_factor: config.output_scale_factor,
                temb_channels: None,
                ..Default::default()
            };
            (0..(config.num_layers))
                .map(|i| {
                    let in_channels = if i == 0 { in_channels } else { out_channels };
                    ResnetBlock2D::new(vs.pp(i.to_string()), in_channels, conv_cfg)
                })
                .collect::<Result<Vec<_>>>()?
        };
        let upsampler = if config.add_upsample {
            let upsample =
                Upsample2D::new(vs.pp("upsamplers").pp("0"), out_channels, out_channels)?;
            Some(upsample)
        } else {
            None
        };
        Ok(Self {
            resnets,
            upsampler,
            config,
        })
    }
}

#[contract]
impl Module for UpDecoderBlock2D {
    #[contract(xs: f32[B, CIN, H, W], return: f32[B, _, _, _])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let mut xs = xs.clone();
        for resnet in self.resnets.iter() {
            xs = resnet.forward(&xs, None)?
        }
        match &self.upsampler {
            Some(upsampler) => upsampler.forward(&xs, None),
            None => Ok(xs),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// embeddings.rs

#[derive(Debug)]
#[contract(linear_1: Linear[CH -> TE], linear_2: Linear[TE -> TE])]
pub struct TimestepEmbedding {
    linear_1: nn::Linear,
    linear_2: nn::Linear,
}

impl TimestepEmbedding {
    // act_fn: "silu"
    pub fn new(vs: nn::VarBuilder, channel: usize, time_embed_dim: usize) -> Result<Self> {
        let linear_1 = nn::linear(channel, time_embed_dim, vs.pp("linear_1"))?;
        let linear_2 = nn::linear(time_embed_dim, time_embed_dim, vs.pp("linear_2"))?;
        Ok(Self { linear_1, linear_2 })
    }
}

#[contract]
impl Module for TimestepEmbedding {
    #[contract(xs: f32[B, CH], return: f32[B, TE])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let xs = nn::ops::silu(&self.linear_1.forward(xs)?)?;
        self.linear_2.forward(&xs)
    }
}

#[derive(Debug)]
#[contract(num_channels = NC)]
pub struct Timesteps {
    num_channels: usize,
    flip_sin_to_cos: bool,
    downscale_freq_shift: f64,
}

impl Timesteps {
    pub fn new(num_channels: usize, flip_sin_to_cos: bool, downscale_freq_shift: f64) -> Self {
        Self {
            num_channels,
            flip_sin_to_cos,
            downscale_freq_shift,
        }
    }
}

#[contract]
impl Module for Timesteps {
    #[contract(xs: f32[B], return: f32[B, NC])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let half_dim = (self.num_channels / 2) as u32;
        let exponent = (Tensor::arange(0, half_dim, xs.device())?
            .to_dtype(candle_core::DType::F32)?
            * -f64::ln(10000.))?;
        let exponent = (exponent / (half_dim as f64 - self.downscale_freq_shift))?;
        let emb = exponent.exp()?.to_dtype(xs.dtype())?;
        // emb = timesteps[:, None].float() * emb[None, :]
        let emb = xs.unsqueeze(D::Minus1)?.broadcast_mul(&emb.unsqueeze(0)?)?;
        let (cos, sin) = (emb.cos()?, emb.sin()?);
        let emb = if self.flip_sin_to_cos {
            Tensor::cat(&[&cos, &sin], D::Minus1)?
        } else {
            Tensor::cat(&[&sin, &cos], D::Minus1)?
        };
        if self.num_channels % 2 == 1 {
            emb.pad_with_zeros(D::Minus2, 0, 1)
        } else {
            Ok(emb)
        }
    }
}

// ---------------------------------------------------------------------------------------------

#[test]
fn stable_diffusion_blocks() {
    let varmap = nn::VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    let randn = |dims: &[usize]| Tensor::randn(0f32, 1., dims, &Device::Cpu).unwrap();

    // A resnet block from 8 to 16 channels (shortcut conv), with a time embedding of 12.
    let config = ResnetBlock2DConfig {
        out_channels: Some(16),
        temb_channels: Some(12),
        groups: 4,
        ..Default::default()
    };
    let resnet = ResnetBlock2D::new(vb.pp("resnet"), 8, config).unwrap();
    let xs = randn(&[2, 8, 6, 6]);
    let temb = randn(&[2, 12]);
    assert_eq!(
        resnet.forward(&xs, Some(&temb)).unwrap().dims(),
        &[2, 16, 6, 6]
    );
    assert_eq!(resnet.forward(&xs, None).unwrap().dims(), &[2, 16, 6, 6]);
    // Same channels, no time embedding: the identity shortcut.
    let config = ResnetBlock2DConfig {
        temb_channels: None,
        groups: 4,
        ..Default::default()
    };
    let same = ResnetBlock2D::new(vb.pp("same"), 8, config).unwrap();
    assert_eq!(same.forward(&xs, None).unwrap().dims(), &[2, 8, 6, 6]);

    // Cross attention: 16 wide, 2 heads of 8, a context of 5 tokens 10 wide.
    let attn = CrossAttention::new(vb.pp("xattn"), 16, Some(10), 2, 8, None, false).unwrap();
    let tokens = randn(&[2, 7, 16]);
    let context = randn(&[2, 5, 10]);
    assert_eq!(
        attn.forward(&tokens, Some(&context)).unwrap().dims(),
        &[2, 7, 16]
    );
    let sliced = CrossAttention::new(vb.pp("sliced"), 16, Some(10), 2, 8, Some(2), false).unwrap();
    assert_eq!(
        sliced.forward(&tokens, Some(&context)).unwrap().dims(),
        &[2, 7, 16]
    );
    let ff = FeedForward::new(vb.pp("ff"), 16, None, 4).unwrap();
    assert_eq!(ff.forward(&tokens).unwrap().dims(), &[2, 7, 16]);
    let block =
        BasicTransformerBlock::new(vb.pp("block"), 16, 2, 8, Some(10), None, false).unwrap();
    assert_eq!(
        block.forward(&tokens, Some(&context)).unwrap().dims(),
        &[2, 7, 16]
    );

    // A spatial transformer on 16 channels of 4 x 3, both projections.
    let images = randn(&[2, 16, 4, 3]);
    for use_linear_projection in [false, true] {
        let config = SpatialTransformerConfig {
            num_groups: 4,
            context_dim: Some(10),
            use_linear_projection,
            ..Default::default()
        };
        let vb = vb.pp(format!("st{use_linear_projection}"));
        let st = SpatialTransformer::new(vb, 16, 2, 8, false, config).unwrap();
        assert_eq!(st.config.use_linear_projection, use_linear_projection);
        assert_eq!(
            st.forward(&images, Some(&context)).unwrap().dims(),
            &[2, 16, 4, 3]
        );
    }

    // The VAE's attention block: one head, as stable diffusion's VAE has. With two, candle's
    // CPU `matmul` rejects the non-contiguous values (the TODO in candle's body).
    let attention_block = |heads: usize| {
        let config = AttentionBlockConfig {
            num_head_channels: Some(16 / heads),
            num_groups: 4,
            ..Default::default()
        };
        AttentionBlock::new(vb.pp(format!("ab{heads}")), 16, config).unwrap()
    };
    let one_head = attention_block(1).forward(&images).unwrap();
    assert_eq!(one_head.dims(), &[2, 16, 4, 3]);
    assert!(attention_block(2).forward(&images).is_err());

    // Down and up blocks of the VAE.
    let config = DownEncoderBlock2DConfig {
        resnet_groups: 4,
        ..Default::default()
    };
    let down = DownEncoderBlock2D::new(vb.pp("down"), 8, 16, config).unwrap();
    assert_eq!(down.forward(&xs).unwrap().dims(), &[2, 16, 3, 3]);
    let config = DownEncoderBlock2DConfig {
        resnet_groups: 4,
        downsample_padding: 0,
        ..Default::default()
    };
    let down = DownEncoderBlock2D::new(vb.pp("down0"), 8, 16, config).unwrap();
    assert_eq!(down.config.downsample_padding, 0);
    assert_eq!(down.forward(&xs).unwrap().dims(), &[2, 16, 3, 3]);
    let pool = Downsample2D::new(vb.pp("pool"), 8, false, 8, 1).unwrap();
    assert_eq!(pool.forward(&xs).unwrap().dims(), &[2, 8, 3, 3]);
    let config = UpDecoderBlock2DConfig {
        resnet_groups: 4,
        ..Default::default()
    };
    let up = UpDecoderBlock2D::new(vb.pp("up"), 16, 8, config).unwrap();
    assert!(up.config.add_upsample);
    assert_eq!(up.forward(&images).unwrap().dims(), &[2, 8, 8, 6]);

    // The time embedding: 4 timesteps, 6 sinusoidal channels, then 12 wide.
    let timesteps = Tensor::new(&[1f32, 10., 100., 999.], &Device::Cpu).unwrap();
    let emb = Timesteps::new(6, true, 1.).forward(&timesteps).unwrap();
    assert_eq!(emb.dims(), &[4, 6]);
    let proj = TimestepEmbedding::new(vb.pp("temb"), 6, 12).unwrap();
    assert_eq!(proj.forward(&emb).unwrap().dims(), &[4, 12]);
    // An odd channel count: candle pads `D::Minus2`, the batch, not the channels, so 4
    // timesteps of 5 channels come out `[5, 4]`; the return clause names it.
    let error = Timesteps::new(5, true, 1.).forward(&timesteps).unwrap_err();
    assert!(error.to_string().contains("return"), "{error}");
}

/// candle's `sliced_attention` as written (no contract): the stacked slices are rank 4.
fn candle_sliced_attention(
    attn: &CrossAttention,
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    slice_size: usize,
) -> Result<Tensor> {
    let batch_size_attention = query.dim(0)?;
    let mut hidden_states = Vec::with_capacity(batch_size_attention / slice_size);
    let in_dtype = query.dtype();
    let query = query.to_dtype(DType::F32)?;
    let key = key.to_dtype(DType::F32)?;
    let value = value.to_dtype(DType::F32)?;

    for i in 0..batch_size_attention / slice_size {
        let start_idx = i * slice_size;
        let end_idx = (i + 1) * slice_size;

        let xs = query
            .i(start_idx..end_idx)?
            .matmul(&(key.i(start_idx..end_idx)?.t()? * attn.scale)?)?;
        let xs = nn::ops::softmax(&xs, D::Minus1)?.matmul(&value.i(start_idx..end_idx)?)?;
        hidden_states.push(xs)
    }
    let hidden_states = Tensor::stack(&hidden_states, 0)?.to_dtype(in_dtype)?;
    attn.reshape_batch_dim_to_heads(&hidden_states)
}

#[test]
fn candle_sliced_attention_stacks_to_rank_4() {
    let varmap = nn::VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    let attn = CrossAttention::new(vb, 16, None, 2, 8, Some(2), false).unwrap();
    let query = Tensor::randn(0f32, 1., (4, 7, 8), &Device::Cpu).unwrap();
    let error = candle_sliced_attention(&attn, &query, &query, &query, 2).unwrap_err();
    assert!(error.to_string().contains("rank"), "{error}");
}
