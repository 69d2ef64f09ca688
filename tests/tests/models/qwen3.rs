//! candle-transformers' `qwen3.rs`: rotary embedding, MLP, attention (q/k norms, GQA,
//! ConcatKvCache, CPU flash / standard attention dispatch) and decoder layer.
//! `with_tracing::{linear_b, linear_no_bias, Linear, RmsNorm}` are candle-nn's. Ported by a
//! new user from the book alone (its known shapes and planted bugs are in the closing notes).

// candle's `flash-attn` feature, which this crate does not have: its `cfg`s stay as written.
#![allow(unexpected_cfgs)]

use candle_contracts::contract;
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{
    kv_cache::ConcatKvCache, linear_b, linear_no_bias, Activation, Linear, RmsNorm, VarBuilder,
};
use std::sync::Arc;

#[cfg(not(feature = "flash-attn"))]
use candle_nn::attention::{flash_attn, AttnMask};

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub head_dim: usize,
    pub attention_bias: bool,
    pub num_key_value_heads: usize,
    pub max_position_embeddings: usize,
    pub sliding_window: Option<usize>,
    pub max_window_layers: usize,
    pub tie_word_embeddings: bool,
    pub rope_theta: f64,
    pub rms_norm_eps: f64,
    pub use_sliding_window: bool,
    pub hidden_act: Activation,
}

/// candle-transformers' `utils::repeat_kv`.
#[contract(xs: f32[B, KVH, S, D])]
pub fn repeat_kv(xs: Tensor, n_rep: usize) -> Result<Tensor> {
    if n_rep == 1 {
        Ok(xs)
    } else {
        let (b_sz, n_kv_head, seq_len, head_dim) = xs.dims4()?;
        Tensor::cat(&vec![&xs; n_rep], 2)?.reshape((b_sz, n_kv_head * n_rep, seq_len, head_dim))
    }
}

/// candle-transformers' `utils::build_additive_causal_mask`.
#[contract(return: f32[1, 1, {tgt}, {tgt} + {offset}])]
pub fn build_additive_causal_mask(
    tgt: usize,
    offset: usize,
    sw: Option<usize>,
    device: &Device,
    dtype: DType,
) -> Result<Tensor> {
    let minf = f32::NEG_INFINITY;
    let mask: Vec<_> = (0..tgt)
        .flat_map(|i| {
            (0..(tgt + offset)).map(move |j| {
                let past_ok = j <= i + offset;
                let sw_ok = match sw {
                    Some(w) => j + w >= i + offset,
                    None => true,
                };
                if past_ok && sw_ok {
                    0.
                } else {
                    minf
                }
            })
        })
        .collect();
    Tensor::from_slice(&mask, (1, 1, tgt, tgt + offset), device)?.to_dtype(dtype)
}

#[contract(sin: f32[P, HALF], cos: f32[P, HALF])]
#[derive(Debug, Clone)]
pub(crate) struct Qwen3RotaryEmbedding {
    sin: Tensor,
    cos: Tensor,
}

#[contract]
impl Qwen3RotaryEmbedding {
    pub(crate) fn new(dtype: DType, cfg: &Config, dev: &Device) -> Result<Self> {
        let dim = cfg.head_dim;
        let max_seq_len = cfg.max_position_embeddings;
        let inv_freq: Vec<_> = (0..dim)
            .step_by(2)
            .map(|i| 1f32 / cfg.rope_theta.powf(i as f64 / dim as f64) as f32)
            .collect();
        let inv_freq_len = inv_freq.len();
        let inv_freq = Tensor::from_vec(inv_freq, (1, inv_freq_len), dev)?.to_dtype(DType::F32)?;
        let t = Tensor::arange(0u32, max_seq_len as u32, dev)?
            .to_dtype(DType::F32)?
            .reshape((max_seq_len, 1))?;
        let freqs = t.matmul(&inv_freq)?;
        Ok(Self {
            sin: freqs.sin()?.to_dtype(dtype)?,
            cos: freqs.cos()?.to_dtype(dtype)?,
        })
    }

    /// Apply RoPE (q, k shape: B x H x L x D)
    #[contract(
        q: f32[B, H, T, HD],
        k: f32[B, KVH, T, HD],
        HD == 2 * HALF,
        {offset} + T <= P,
        return.0: f32[B, H, T, HD],
        return.1: f32[B, KVH, T, HD],
    )]
    pub(crate) fn apply(&self, q: &Tensor, k: &Tensor, offset: usize) -> Result<(Tensor, Tensor)> {
        let (_, _, seq_len, _) = q.dims4()?;
        let cos = self.cos.narrow(0, offset, seq_len)?;
        let sin = self.sin.narrow(0, offset, seq_len)?;
        let q_embed = candle_nn::rotary_emb::rope(&q.contiguous()?, &cos, &sin)?;
        let k_embed = candle_nn::rotary_emb::rope(&k.contiguous()?, &cos, &sin)?;
        Ok((q_embed, k_embed))
    }
}

#[contract(
    gate_proj: Linear[E -> I],
    up_proj: Linear[E -> I],
    down_proj: Linear[I -> E],
    act_fn != Swiglu,
)]
#[derive(Debug, Clone)]
pub(crate) struct Qwen3MLP {
    gate_proj: Linear,
    up_proj: Linear,
    down_proj: Linear,
    act_fn: Activation,
}

#[contract]
impl Qwen3MLP {
    pub(crate) fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            gate_proj: linear_no_bias(cfg.hidden_size, cfg.intermediate_size, vb.pp("gate_proj"))?,
            up_proj: linear_no_bias(cfg.hidden_size, cfg.intermediate_size, vb.pp("up_proj"))?,
            down_proj: linear_no_bias(cfg.intermediate_size, cfg.hidden_size, vb.pp("down_proj"))?,
            act_fn: cfg.hidden_act,
        })
    }
}

#[contract]
impl Module for Qwen3MLP {
    #[contract(x: f32[B, T, E], return: f32[B, T, E])]
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let lhs = x.apply(&self.gate_proj)?.apply(&self.act_fn)?;
        let rhs = x.apply(&self.up_proj)?;
        (lhs * rhs)?.apply(&self.down_proj)
    }
}

#[contract(
    q_proj: Linear[E -> H * HD],
    k_proj: Linear[E -> KVH * HD],
    v_proj: Linear[E -> KVH * HD],
    o_proj: Linear[H * HD -> E],
    q_norm: RmsNorm[HD],
    k_norm: RmsNorm[HD],
    num_heads = H,
    num_kv_heads = KVH,
    num_kv_groups = G,
    head_dim = HD,
    hidden_size = Q,
    H == KVH * G,
    Q == H * HD,
)]
#[derive(Debug, Clone)]
pub(crate) struct Qwen3Attention {
    // projections
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
    // norms
    q_norm: RmsNorm,
    k_norm: RmsNorm,
    // hyper params
    num_heads: usize,
    num_kv_heads: usize,
    num_kv_groups: usize,
    head_dim: usize,
    hidden_size: usize,
    // utils
    rotary_emb: Arc<Qwen3RotaryEmbedding>,
    kv_cache: ConcatKvCache,
}

#[contract]
impl Qwen3Attention {
    pub(crate) fn new(
        cfg: &Config,
        rotary_emb: Arc<Qwen3RotaryEmbedding>,
        vb: VarBuilder,
    ) -> Result<Self> {
        if cfg.use_sliding_window {
            candle_core::bail!("sliding window is not supported")
        }

        let head_dim = cfg.head_dim;
        let num_heads = cfg.num_attention_heads;
        let num_kv_heads = cfg.num_key_value_heads;
        let num_kv_groups = num_heads / num_kv_heads;

        let q_proj = linear_b(
            cfg.hidden_size,
            num_heads * head_dim,
            cfg.attention_bias,
            vb.pp("q_proj"),
        )?;
        let k_proj = linear_b(
            cfg.hidden_size,
            num_kv_heads * head_dim,
            cfg.attention_bias,
            vb.pp("k_proj"),
        )?;
        let v_proj = linear_b(
            cfg.hidden_size,
            num_kv_heads * head_dim,
            cfg.attention_bias,
            vb.pp("v_proj"),
        )?;
        let o_proj = linear_b(
            num_heads * head_dim,
            cfg.hidden_size,
            cfg.attention_bias,
            vb.pp("o_proj"),
        )?;

        let q_norm = candle_nn::rms_norm(head_dim, cfg.rms_norm_eps, vb.pp("q_norm"))?;
        let k_norm = candle_nn::rms_norm(head_dim, cfg.rms_norm_eps, vb.pp("k_norm"))?;

        // Necessary because the hidden_size in the config isn't always accurate
        let hidden_size = head_dim * cfg.num_attention_heads;

        // dim=2 because we concatenate along the sequence dimension
        // For tensors of shape [batch, heads, seq, head_dim]
        let kv_cache = ConcatKvCache::new(2);

        Ok(Self {
            q_proj,
            k_proj,
            v_proj,
            o_proj,
            q_norm,
            k_norm,
            num_heads,
            num_kv_heads,
            num_kv_groups,
            head_dim,
            hidden_size,
            rotary_emb,
            kv_cache,
        })
    }

    #[contract(
        x: f32[B, T, E],
        attn_mask: f32[1, 1, T, {offset} + T],
        self.kv_cache.current_seq_len() = P,
        self.kv_cache.v()?: f32[B, KVH, P, HD] else P = 0,
        P == {offset},
        return: f32[B, T, E],
    )]
    pub(crate) fn forward(
        &mut self,
        x: &Tensor,
        attn_mask: Option<&Tensor>,
        offset: usize,
    ) -> Result<Tensor> {
        let (b, l, _) = x.dims3()?;

        // 1. Proj
        let q = self.q_proj.forward(x)?;
        let k = self.k_proj.forward(x)?;
        let v = self.v_proj.forward(x)?;

        // 2. Reshape: (B, L, H, D) -> (B, H, L, D)
        let q = q
            .reshape((b, l, self.num_heads, self.head_dim))?
            .transpose(1, 2)?;
        let k = k
            .reshape((b, l, self.num_kv_heads, self.head_dim))?
            .transpose(1, 2)?;
        let v = v
            .reshape((b, l, self.num_kv_heads, self.head_dim))?
            .transpose(1, 2)?;

        // 3. Per-head RMSNorm
        let q_flat = q.flatten(0, 2)?;
        let k_flat = k.flatten(0, 2)?;
        let q_flat = self.q_norm.forward(&q_flat)?;
        let k_flat = self.k_norm.forward(&k_flat)?;
        let q = q_flat.reshape((b, self.num_heads, l, self.head_dim))?;
        let k = k_flat.reshape((b, self.num_kv_heads, l, self.head_dim))?;

        // 4. RoPE
        let (q, k) = self.rotary_emb.apply(&q, &k, offset)?;

        // 5. Accumulate KV cache
        let (k, v) = self.kv_cache.append(&k, &v)?;

        // 6. Attention dispatch
        let on_cpu = x.device().is_cpu();

        #[cfg(not(feature = "flash-attn"))]
        if on_cpu {
            return self.forward_cpu_flash_attn(&q, &k, &v, offset, b, l);
        }
        #[cfg(feature = "flash-attn")]
        if !on_cpu {
            return self.forward_flash_attn(&q, &k, &v, offset, b, l);
        }

        self.forward_standard_attn(&q, &k, &v, attn_mask, b, l)
    }

    /// CPU flash attention - optimized fused kernel for CPU
    #[cfg(not(feature = "flash-attn"))]
    #[contract(
        q: f32[{b}, H, {l}, HD],
        k: f32[{b}, KVH, S, HD],
        v: f32[{b}, KVH, S, HD],
        return: f32[{b}, {l}, E],
    )]
    fn forward_cpu_flash_attn(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        offset: usize,
        b: usize,
        l: usize,
    ) -> Result<Tensor> {
        // CPU flash attention expects (B, S, H, D) format
        let q = q.transpose(1, 2)?.contiguous()?;
        let k = k.transpose(1, 2)?.contiguous()?;
        let v = v.transpose(1, 2)?.contiguous()?;

        let scale = 1.0 / (self.head_dim as f32).sqrt();

        let ctx = match q.dtype() {
            DType::F32 => flash_attn::<f32>(
                &q,
                &k,
                &v,
                scale,
                AttnMask::causal_with_offset(offset),
                None,
                None,
            )?,
            other => {
                let q_f32 = q.to_dtype(DType::F32)?;
                let k_f32 = k.to_dtype(DType::F32)?;
                let v_f32 = v.to_dtype(DType::F32)?;
                let ctx_f32 = flash_attn::<f32>(
                    &q_f32,
                    &k_f32,
                    &v_f32,
                    scale,
                    AttnMask::causal_with_offset(offset),
                    None,
                    None,
                )?;
                ctx_f32.to_dtype(other)?
            }
        };

        // Output from CPU flash attention is (B, H, S, D), transpose to (B, S, H, D)
        let ctx = ctx.transpose(1, 2)?;

        ctx.reshape((b, l, self.hidden_size))?.apply(&self.o_proj)
    }

    /// Standard matmul-based attention (works on any device)
    #[contract(
        q: f32[{b}, H, {l}, HD],
        k: f32[{b}, KVH, S, HD],
        v: f32[{b}, KVH, S, HD],
        attn_mask: f32[1, 1, {l}, S],
        return: f32[{b}, {l}, E],
    )]
    fn forward_standard_attn(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        attn_mask: Option<&Tensor>,
        b: usize,
        l: usize,
    ) -> Result<Tensor> {
        // GQA repeat_kv
        let k = repeat_kv(k.clone(), self.num_kv_groups)?.contiguous()?;
        let v = repeat_kv(v.clone(), self.num_kv_groups)?.contiguous()?;

        // Attention score
        let scale = 1.0 / (self.head_dim as f64).sqrt();
        let mut scores = (q.matmul(&k.transpose(2, 3)?)? * scale)?;
        if let Some(m) = attn_mask {
            scores = scores.broadcast_add(m)?;
        }
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        let ctx = probs.matmul(&v)?; // (B, H, L, D)

        // Output proj
        ctx.transpose(1, 2)?
            .reshape((b, l, self.hidden_size))?
            .apply(&self.o_proj)
    }

    pub(crate) fn clear_kv_cache(&mut self) {
        self.kv_cache.reset();
    }
}

#[contract(ln1: RmsNorm[E], ln2: RmsNorm[E])]
#[derive(Debug, Clone)]
pub(crate) struct DecoderLayer {
    self_attn: Qwen3Attention,
    mlp: Qwen3MLP,
    ln1: RmsNorm,
    ln2: RmsNorm,
}

#[contract]
impl DecoderLayer {
    pub(crate) fn new(
        cfg: &Config,
        rotary: Arc<Qwen3RotaryEmbedding>,
        vb: VarBuilder,
    ) -> Result<Self> {
        let self_attn = Qwen3Attention::new(cfg, rotary, vb.pp("self_attn"))?;
        let mlp = Qwen3MLP::new(cfg, vb.pp("mlp"))?;
        let ln1 = candle_nn::rms_norm(cfg.hidden_size, cfg.rms_norm_eps, vb.pp("input_layernorm"))?;
        let ln2 = candle_nn::rms_norm(
            cfg.hidden_size,
            cfg.rms_norm_eps,
            vb.pp("post_attention_layernorm"),
        )?;
        Ok(Self {
            self_attn,
            mlp,
            ln1,
            ln2,
        })
    }

    #[contract(
        x: f32[B, T, E],
        mask: f32[1, 1, T, {offset} + T],
        return: f32[B, T, E],
    )]
    pub(crate) fn forward(
        &mut self,
        x: &Tensor,
        mask: Option<&Tensor>,
        offset: usize,
    ) -> Result<Tensor> {
        let h = self.ln1.forward(x)?;
        let h = self.self_attn.forward(&h, mask, offset)?;
        let x = (x + h)?;
        let h2 = self.ln2.forward(&x)?;
        let h2 = h2.apply(&self.mlp)?;
        x + h2
    }

    pub(crate) fn clear_kv_cache(&mut self) {
        self.self_attn.clear_kv_cache();
    }
}

#[cfg(test)]
mod tests {
    // Named, not `super::*`: a glob may bring a trait whose `&mut self` method of a reading name
    // (`append`) the file read alone cannot rule out, and the cache's dim would be lost.
    use super::{build_additive_causal_mask, Config, DecoderLayer, Qwen3RotaryEmbedding};
    use candle_core::{DType, Device, Result, Tensor};
    use candle_nn::{Activation, VarBuilder};
    use std::sync::Arc;

    fn small() -> Config {
        Config {
            vocab_size: 32,
            hidden_size: 16,
            intermediate_size: 32,
            num_hidden_layers: 1,
            num_attention_heads: 4,
            head_dim: 8,
            attention_bias: false,
            num_key_value_heads: 2,
            max_position_embeddings: 32,
            sliding_window: None,
            max_window_layers: 1,
            tie_word_embeddings: true,
            rope_theta: 1_000_000.,
            rms_norm_eps: 1e-6,
            use_sliding_window: false,
            hidden_act: Activation::Silu,
        }
    }

    fn layer() -> Result<DecoderLayer> {
        let cfg = small();
        let dev = Device::Cpu;
        let vb = VarBuilder::zeros(DType::F32, &dev);
        let rotary = Arc::new(Qwen3RotaryEmbedding::new(DType::F32, &cfg, &dev)?);
        DecoderLayer::new(&cfg, rotary, vb.pp("model.layers.0"))
    }

    #[test]
    fn decoder_layer_twice() -> Result<()> {
        let dev = Device::Cpu;
        let mut layer = layer()?;
        let x = Tensor::randn(0f32, 1f32, (2, 5, 16), &dev)?;
        let mask = build_additive_causal_mask(5, 0, None, &dev, DType::F32)?;
        let y = layer.forward(&x, Some(&mask), 0)?;
        assert_eq!(y.dims(), &[2, 5, 16]);
        let x2 = Tensor::randn(0f32, 1f32, (2, 1, 16), &dev)?;
        let y2 = layer.forward(&x2, None, 5)?;
        assert_eq!(y2.dims(), &[2, 1, 16]);
        assert_eq!(layer.self_attn.kv_cache.current_seq_len(), 6);
        layer.clear_kv_cache();
        Ok(())
    }

    #[test]
    fn standard_attention() -> Result<()> {
        let dev = Device::Cpu;
        let layer = layer()?;
        let q = Tensor::randn(0f32, 1f32, (2, 4, 3, 8), &dev)?;
        let k = Tensor::randn(0f32, 1f32, (2, 2, 7, 8), &dev)?;
        let v = Tensor::randn(0f32, 1f32, (2, 2, 7, 8), &dev)?;
        let mask = build_additive_causal_mask(3, 4, None, &dev, DType::F32)?;
        let y = layer
            .self_attn
            .forward_standard_attn(&q, &k, &v, Some(&mask), 2, 3)?;
        assert_eq!(y.dims(), &[2, 3, 16]);
        let y = layer
            .self_attn
            .forward_standard_attn(&q, &k, &v, None, 2, 3)?;
        assert_eq!(y.dims(), &[2, 3, 16]);
        Ok(())
    }
}
