//! candle-transformers' `whisper/model.rs`: the multi-head attention with its cross-attention
//! kv cache, the residual attention block, and the audio encoder's convolution front, position
//! table and blocks. The bodies are candle's, less the tracing spans;
//! `with_tracing::Linear` is candle-nn's.

use candle_contracts::contract;
use candle_core::{DType, Device, IndexOp, Result, Tensor};
use candle_nn::{Conv1d, Conv1dConfig, LayerNorm, Linear, Module, VarBuilder};

fn conv1d(
    in_channels: usize,
    out_channels: usize,
    kernel_size: usize,
    config: Conv1dConfig,
    vb: VarBuilder,
) -> Result<Conv1d> {
    let weight = vb.get((out_channels, in_channels, kernel_size), "weight")?;
    let bias = vb.get(out_channels, "bias")?;
    Ok(Conv1d::new(weight, Some(bias), config))
}

fn layer_norm(size: usize, vb: VarBuilder) -> Result<LayerNorm> {
    let weight = vb.get(size, "weight")?;
    let bias = vb.get(size, "bias")?;
    Ok(LayerNorm::new(weight, bias, 1e-5))
}

#[derive(Debug, Clone)]
struct MultiHeadAttention {
    query: Linear,
    key: Linear,
    value: Linear,
    out: Linear,
    n_head: usize,
    kv_cache: Option<(Tensor, Tensor)>,
}

impl MultiHeadAttention {
    fn load(n_state: usize, n_head: usize, vb: VarBuilder) -> Result<Self> {
        let query = candle_nn::linear(n_state, n_state, vb.pp("q_proj"))?;
        let value = candle_nn::linear(n_state, n_state, vb.pp("v_proj"))?;
        let key = candle_nn::linear_no_bias(n_state, n_state, vb.pp("k_proj"))?;
        let out = candle_nn::linear(n_state, n_state, vb.pp("out_proj"))?;
        Ok(Self {
            query,
            key,
            value,
            out,
            n_head,
            kv_cache: None,
        })
    }

    #[contract(
        x: f32[B, T, E],
        xa: f32[B, S, E],
        mask: f32[M, M],
        self.query.weight(): f32[E, E],
        self.key.weight(): f32[E, E],
        self.value.weight(): f32[E, E],
        self.out.weight(): f32[E, E],
        self.kv_cache?.0: f32[B, S, E],
        self.kv_cache?.1: f32[B, S, E],
        return: f32[B, T, E],
    )]
    fn forward(
        &mut self,
        x: &Tensor,
        xa: Option<&Tensor>,
        mask: Option<&Tensor>,
        flush_cache: bool,
    ) -> Result<Tensor> {
        let q = self.query.forward(x)?;
        let (k, v) = match xa {
            None => {
                let k = self.key.forward(x)?;
                let v = self.value.forward(x)?;
                (k, v)
            }
            Some(x) => {
                if flush_cache {
                    self.kv_cache = None;
                }
                if let Some((k, v)) = &self.kv_cache {
                    (k.clone(), v.clone())
                } else {
                    let k = self.key.forward(x)?;
                    let v = self.value.forward(x)?;
                    self.kv_cache = Some((k.clone(), v.clone()));
                    (k, v)
                }
            }
        };
        let wv = self.qkv_attention(&q, &k, &v, mask)?;
        let out = self.out.forward(&wv)?;
        Ok(out)
    }

    #[contract(x: f32[B, T, E], return: f32[B, H, T, D])]
    fn reshape_head(&self, x: &Tensor) -> Result<Tensor> {
        let (n_batch, n_ctx, n_state) = x.dims3()?;
        let target_dims = &[n_batch, n_ctx, self.n_head, n_state / self.n_head];
        x.reshape(target_dims)?.transpose(1, 2)
    }

    #[contract(
        q: f32[B, T, E],
        k: f32[B, S, E],
        v: f32[B, S, E],
        mask: f32[M, M],
        return: f32[B, T, E],
    )]
    fn qkv_attention(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        let (_, n_ctx, n_state) = q.dims3()?;
        let scale = ((n_state / self.n_head) as f64).powf(-0.25);
        let q = (self.reshape_head(q)? * scale)?;
        let k = (self.reshape_head(k)?.transpose(2, 3)? * scale)?;
        let v = self.reshape_head(v)?.contiguous()?;
        let mut qk = { q.matmul(&k)? };
        if let Some(mask) = mask {
            let mask = mask.i((0..n_ctx, 0..n_ctx))?;
            qk = qk.broadcast_add(&mask)?
        }
        let w = { candle_nn::ops::softmax_last_dim(&qk)? };
        let wv = { w.matmul(&v)? }.transpose(1, 2)?.flatten_from(2)?;
        Ok(wv)
    }
}

#[derive(Debug, Clone)]
struct ResidualAttentionBlock {
    attn: MultiHeadAttention,
    attn_ln: LayerNorm,
    cross_attn: Option<(MultiHeadAttention, LayerNorm)>,
    mlp_linear1: Linear,
    mlp_linear2: Linear,
    mlp_ln: LayerNorm,
}

impl ResidualAttentionBlock {
    fn load(n_state: usize, n_head: usize, ca: bool, vb: VarBuilder) -> Result<Self> {
        let attn = MultiHeadAttention::load(n_state, n_head, vb.pp("self_attn"))?;
        let attn_ln = layer_norm(n_state, vb.pp("self_attn_layer_norm"))?;
        let cross_attn = if ca {
            let cross_attn = MultiHeadAttention::load(n_state, n_head, vb.pp("encoder_attn"))?;
            let cross_attn_ln = layer_norm(n_state, vb.pp("encoder_attn_layer_norm"))?;
            Some((cross_attn, cross_attn_ln))
        } else {
            None
        };
        let n_mlp = n_state * 4;
        let mlp_linear1 = candle_nn::linear(n_state, n_mlp, vb.pp("fc1"))?;
        let mlp_linear2 = candle_nn::linear(n_mlp, n_state, vb.pp("fc2"))?;
        let mlp_ln = layer_norm(n_state, vb.pp("final_layer_norm"))?;
        Ok(Self {
            attn,
            attn_ln,
            cross_attn,
            mlp_linear1,
            mlp_linear2,
            mlp_ln,
        })
    }

    #[contract(
        x: f32[B, T, E],
        xa: f32[B, S, E],
        mask: f32[M, M],
        self.attn_ln.weight(): f32[E],
        self.mlp_ln.weight(): f32[E],
        self.mlp_linear1.weight(): f32[MLP, E],
        self.mlp_linear2.weight(): f32[E, MLP],
        return: f32[B, T, E],
    )]
    fn forward(
        &mut self,
        x: &Tensor,
        xa: Option<&Tensor>,
        mask: Option<&Tensor>,
        flush_kv_cache: bool,
    ) -> Result<Tensor> {
        let attn = self
            .attn
            .forward(&self.attn_ln.forward(x)?, None, mask, flush_kv_cache)?;
        let mut x = (x + attn)?;
        if let Some((attn, ln)) = &mut self.cross_attn {
            x = (&x + attn.forward(&ln.forward(&x)?, xa, None, flush_kv_cache)?)?;
        }
        let mlp = self.mlp_linear2.forward(
            &self
                .mlp_linear1
                .forward(&self.mlp_ln.forward(&x)?)?
                .gelu()?,
        )?;
        x + mlp
    }
}

fn sinusoids(length: usize, channels: usize, device: &Device) -> Result<Tensor> {
    let max_timescale = 10000f32;
    let log_timescale_increment = max_timescale.ln() / (channels / 2 - 1) as f32;
    let inv_timescales: Vec<_> = (0..channels / 2)
        .map(|i| (i as f32 * (-log_timescale_increment)).exp())
        .collect();
    let inv_timescales = Tensor::new(inv_timescales.as_slice(), device)?.unsqueeze(0)?;
    let arange = Tensor::arange(0, length as u32, device)?
        .to_dtype(candle_core::DType::F32)?
        .unsqueeze(1)?;
    let sh = (length, channels / 2);
    let scaled_time = (arange.broadcast_as(sh)? * inv_timescales.broadcast_as(sh)?)?;
    let sincos = Tensor::cat(&[scaled_time.sin()?, scaled_time.cos()?], 1)?;
    Ok(sincos)
}

pub struct Config {
    num_mel_bins: usize,
    d_model: usize,
    encoder_attention_heads: usize,
    max_source_positions: usize,
    encoder_layers: usize,
}

#[derive(Debug, Clone)]
pub struct AudioEncoder {
    conv1: Conv1d,
    conv2: Conv1d,
    positional_embedding: Tensor,
    blocks: Vec<ResidualAttentionBlock>,
    ln_post: LayerNorm,
}

impl AudioEncoder {
    fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        let n_state = cfg.d_model;
        let n_head = cfg.encoder_attention_heads;
        let n_ctx = cfg.max_source_positions;
        let cfg1 = Conv1dConfig {
            padding: 1,
            stride: 1,
            groups: 1,
            dilation: 1,
            cudnn_fwd_algo: None,
        };
        let cfg2 = Conv1dConfig {
            padding: 1,
            stride: 2,
            groups: 1,
            dilation: 1,
            cudnn_fwd_algo: None,
        };
        let conv1 = conv1d(cfg.num_mel_bins, n_state, 3, cfg1, vb.pp("conv1"))?;
        let conv2 = conv1d(n_state, n_state, 3, cfg2, vb.pp("conv2"))?;
        let positional_embedding = sinusoids(n_ctx, n_state, vb.device())?;
        let blocks = (0..cfg.encoder_layers)
            .map(|i| {
                ResidualAttentionBlock::load(n_state, n_head, false, vb.pp(format!("layers.{i}")))
            })
            .collect::<Result<Vec<_>>>()?;
        let ln_post = layer_norm(n_state, vb.pp("layer_norm"))?;
        Ok(Self {
            conv1,
            conv2,
            positional_embedding,
            blocks,
            ln_post,
        })
    }

    #[contract(
        x: f32[B, MELS, FRAMES],
        self.conv1.weight(): f32[E, MELS, 3],
        self.conv2.weight(): f32[E, E, 3],
        self.positional_embedding: f32[CTX, E],
        self.ln_post.weight(): f32[E],
        return: f32[B, T, E],
    )]
    pub fn forward(&mut self, x: &Tensor, flush_kv_cache: bool) -> Result<Tensor> {
        let x = { self.conv1.forward(x)?.gelu()? };
        let x = { self.conv2.forward(&x)?.gelu()? };
        let x = x.transpose(1, 2)?;
        let (_bsize, seq_len, _hidden) = x.dims3()?;
        let positional_embedding = self.positional_embedding.narrow(0, 0, seq_len)?;
        let mut x = x.broadcast_add(&positional_embedding)?;
        for block in self.blocks.iter_mut() {
            x = block.forward(&x, None, None, flush_kv_cache)?
        }
        let x = self.ln_post.forward(&x)?;
        Ok(x)
    }
}

#[test]
fn whisper_audio_encoder_and_a_decoder_block() {
    let cfg = Config {
        num_mel_bins: 8,
        d_model: 16,
        encoder_attention_heads: 4,
        max_source_positions: 12,
        encoder_layers: 2,
    };
    let varmap = candle_nn::VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    let mut encoder = AudioEncoder::load(vb.pp("encoder"), &cfg).unwrap();
    // 24 frames of 8 mel bins: the strided conv halves them to 12 positions.
    let mel = Tensor::randn(0f32, 1., (2, 8, 24), &Device::Cpu).unwrap();
    let audio = encoder.forward(&mel, true).unwrap();
    assert_eq!(audio.dims(), &[2, 12, 16]);
    // A decoder block: causal self-attention, then cross-attention on the audio.
    let mut block = ResidualAttentionBlock::load(16, 4, true, vb.pp("decoder")).unwrap();
    let mask: Vec<_> = (0..5)
        .flat_map(|i| (0..5).map(move |j| if j > i { f32::NEG_INFINITY } else { 0f32 }))
        .collect();
    let mask = Tensor::from_vec(mask, (5, 5), &Device::Cpu).unwrap();
    let tokens = Tensor::randn(0f32, 1., (2, 3, 16), &Device::Cpu).unwrap();
    let ys = block
        .forward(&tokens, Some(&audio), Some(&mask), true)
        .unwrap();
    assert_eq!(ys.dims(), &[2, 3, 16]);
    let cached = block
        .cross_attn
        .as_ref()
        .unwrap()
        .0
        .kv_cache
        .as_ref()
        .unwrap();
    assert_eq!(cached.0.dims(), &[2, 12, 16]);
}
