//! candle-transformers' `gemma.rs`: RmsNorm (weight + 1), rotary embedding, MLP, attention
//! with grouped kv heads and a kv cache, decoder layer and the model. Bodies as candle writes
//! them; `crate::utils::repeat_kv` is inlined below; serde derive dropped. Ported by a
//! new-user trial from the book alone (its `head_dim` is a config field of its own: 6 heads'
//! worth is not `hidden_size`, as in gemma-7b).

use std::sync::Arc;

use candle_contracts::contract;
use candle_core::{DType, Device, Module, Result, Tensor, D};
use candle_nn::{linear_b as linear, Activation, Linear, VarBuilder};

fn default_max_position_embeddings() -> usize {
    4096
}

#[derive(Debug, Clone)]
pub struct Config {
    pub attention_bias: bool,
    pub head_dim: usize,
    pub hidden_act: Option<Activation>,
    pub hidden_activation: Option<Activation>,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_attention_heads: usize,
    pub num_hidden_layers: usize,
    pub num_key_value_heads: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    pub vocab_size: usize,
    pub max_position_embeddings: usize,
}

impl Config {
    fn hidden_act(&self) -> Result<Activation> {
        match (self.hidden_act, self.hidden_activation) {
            (None, Some(act)) | (Some(act), None) => Ok(act),
            (Some(_), Some(_)) => {
                candle_core::bail!("both hidden_act and hidden_activation are set")
            }
            (None, None) => candle_core::bail!("none of hidden_act and hidden_activation are set"),
        }
    }
}

/// candle-transformers' `utils::repeat_kv`.
#[contract(xs: f32[B, KVH, S, HD])]
pub fn repeat_kv(xs: Tensor, n_rep: usize) -> Result<Tensor> {
    if n_rep == 1 {
        Ok(xs)
    } else {
        let (b_sz, n_kv_head, seq_len, head_dim) = xs.dims4()?;
        Tensor::cat(&vec![&xs; n_rep], 2)?.reshape((b_sz, n_kv_head * n_rep, seq_len, head_dim))
    }
}

#[contract(weight: f32[E])]
#[derive(Debug, Clone)]
struct RmsNorm {
    weight: Tensor,
    eps: f64,
}

#[contract]
impl RmsNorm {
    fn new(dim: usize, eps: f64, vb: VarBuilder) -> Result<Self> {
        let weight = vb.get(dim, "weight")?;
        Ok(Self { weight, eps })
    }
}

#[contract]
impl Module for RmsNorm {
    #[contract(x: f32[B, T, E], return: f32[B, T, E])]
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x_dtype = x.dtype();
        let internal_dtype = match x_dtype {
            DType::F16 | DType::BF16 => DType::F32,
            d => d,
        };
        let hidden_size = x.dim(D::Minus1)?;
        let x = x.to_dtype(internal_dtype)?;
        let norm_x = (x.sqr()?.sum_keepdim(D::Minus1)? / hidden_size as f64)?;
        let x_normed = x.broadcast_div(&(norm_x + self.eps)?.sqrt()?)?;
        x_normed
            .to_dtype(x_dtype)?
            .broadcast_mul(&(&self.weight + 1.0)?)
    }
}

#[contract(sin: f32[P, HALF], cos: f32[P, HALF])]
#[derive(Debug, Clone)]
struct RotaryEmbedding {
    sin: Tensor,
    cos: Tensor,
}

#[contract]
impl RotaryEmbedding {
    fn new(dtype: DType, cfg: &Config, dev: &Device) -> Result<Self> {
        let dim = cfg.head_dim;
        let max_seq_len = cfg.max_position_embeddings;
        let inv_freq: Vec<_> = (0..dim)
            .step_by(2)
            .map(|i| 1f32 / cfg.rope_theta.powf(i as f64 / dim as f64) as f32)
            .collect();
        let inv_freq_len = inv_freq.len();
        let inv_freq = Tensor::from_vec(inv_freq, (1, inv_freq_len), dev)?.to_dtype(dtype)?;
        let t = Tensor::arange(0u32, max_seq_len as u32, dev)?
            .to_dtype(dtype)?
            .reshape((max_seq_len, 1))?;
        let freqs = t.matmul(&inv_freq)?;
        Ok(Self {
            sin: freqs.sin()?,
            cos: freqs.cos()?,
        })
    }

    #[contract(
        q: f32[B, H, T, HD],
        k: f32[B, KVH, T, HD],
        HD == 2 * HALF,
        {seqlen_offset} + T <= P,
        return.0: f32[B, H, T, HD],
        return.1: f32[B, KVH, T, HD],
    )]
    fn apply_rotary_emb_qkv(
        &self,
        q: &Tensor,
        k: &Tensor,
        seqlen_offset: usize,
    ) -> Result<(Tensor, Tensor)> {
        let (_b_sz, _h, seq_len, _n_embd) = q.dims4()?;
        let cos = self.cos.narrow(0, seqlen_offset, seq_len)?;
        let sin = self.sin.narrow(0, seqlen_offset, seq_len)?;
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
#[allow(clippy::upper_case_acronyms)]
struct MLP {
    gate_proj: Linear,
    up_proj: Linear,
    down_proj: Linear,
    act_fn: candle_nn::Activation,
}

#[contract]
impl MLP {
    fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let hidden_sz = cfg.hidden_size;
        let intermediate_sz = cfg.intermediate_size;
        let gate_proj = linear(hidden_sz, intermediate_sz, false, vb.pp("gate_proj"))?;
        let up_proj = linear(hidden_sz, intermediate_sz, false, vb.pp("up_proj"))?;
        let down_proj = linear(intermediate_sz, hidden_sz, false, vb.pp("down_proj"))?;
        Ok(Self {
            gate_proj,
            up_proj,
            down_proj,
            act_fn: cfg.hidden_act()?,
        })
    }
}

#[contract]
impl Module for MLP {
    #[contract(xs: f32[B, T, E], return: f32[B, T, E])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let lhs = xs.apply(&self.gate_proj)?.apply(&self.act_fn)?;
        let rhs = xs.apply(&self.up_proj)?;
        (lhs * rhs)?.apply(&self.down_proj)
    }
}

// Gemma's head_dim is its own config field: E is not H * HD (gemma-7b: 3072 vs 16 * 256).
#[contract(
    q_proj: Linear[E -> H * HD],
    k_proj: Linear[E -> KVH * HD],
    v_proj: Linear[E -> KVH * HD],
    o_proj: Linear[H * HD -> E],
    kv_cache?.0: f32[_, KVH, P, HD] else P = 0,
    kv_cache?.1: f32[_, KVH, P, HD] else P = 0,
    num_heads = H,
    num_kv_heads = KVH,
    num_kv_groups = G,
    head_dim = HD,
    H == KVH * G,
)]
#[derive(Debug, Clone)]
struct Attention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
    num_heads: usize,
    num_kv_heads: usize,
    num_kv_groups: usize,
    head_dim: usize,
    rotary_emb: Arc<RotaryEmbedding>,
    kv_cache: Option<(Tensor, Tensor)>,
    use_flash_attn: bool,
}

#[contract]
impl Attention {
    fn new(
        rotary_emb: Arc<RotaryEmbedding>,
        use_flash_attn: bool,
        cfg: &Config,
        vb: VarBuilder,
    ) -> Result<Self> {
        let hidden_sz = cfg.hidden_size;
        let num_heads = cfg.num_attention_heads;
        let num_kv_heads = cfg.num_key_value_heads;
        let num_kv_groups = num_heads / num_kv_heads;
        let head_dim = cfg.head_dim;
        let bias = cfg.attention_bias;
        let q_proj = linear(hidden_sz, num_heads * head_dim, bias, vb.pp("q_proj"))?;
        let k_proj = linear(hidden_sz, num_kv_heads * head_dim, bias, vb.pp("k_proj"))?;
        let v_proj = linear(hidden_sz, num_kv_heads * head_dim, bias, vb.pp("v_proj"))?;
        let o_proj = linear(num_heads * head_dim, hidden_sz, bias, vb.pp("o_proj"))?;
        Ok(Self {
            q_proj,
            k_proj,
            v_proj,
            o_proj,
            num_heads,
            num_kv_heads,
            num_kv_groups,
            head_dim,
            rotary_emb,
            kv_cache: None,
            use_flash_attn,
        })
    }

    // `P` is the cached length, 0 before the first step (`else P = 0`): the mask covers the
    // cached positions and the new ones.
    #[contract(
        xs: f32[B, T, E],
        attention_mask: f32[B, 1, T, P + T],
        return: f32[B, T, E],
    )]
    fn forward(
        &mut self,
        xs: &Tensor,
        attention_mask: Option<&Tensor>,
        seqlen_offset: usize,
    ) -> Result<Tensor> {
        let (b_sz, q_len, _) = xs.dims3()?;

        let query_states = self.q_proj.forward(xs)?;
        let key_states = self.k_proj.forward(xs)?;
        let value_states = self.v_proj.forward(xs)?;

        let query_states = query_states
            .reshape((b_sz, q_len, self.num_heads, self.head_dim))?
            .transpose(1, 2)?;
        let key_states = key_states
            .reshape((b_sz, q_len, self.num_kv_heads, self.head_dim))?
            .transpose(1, 2)?;
        let value_states = value_states
            .reshape((b_sz, q_len, self.num_kv_heads, self.head_dim))?
            .transpose(1, 2)?;

        let (query_states, key_states) =
            self.rotary_emb
                .apply_rotary_emb_qkv(&query_states, &key_states, seqlen_offset)?;

        let (key_states, value_states) = match &self.kv_cache {
            None => (key_states, value_states),
            Some((prev_k, prev_v)) => {
                let key_states = Tensor::cat(&[prev_k, &key_states], 2)?;
                let value_states = Tensor::cat(&[prev_v, &value_states], 2)?;
                (key_states, value_states)
            }
        };
        self.kv_cache = Some((key_states.clone(), value_states.clone()));

        let key_states = repeat_kv(key_states, self.num_kv_groups)?.contiguous()?;
        let value_states = repeat_kv(value_states, self.num_kv_groups)?.contiguous()?;

        let attn_output = if self.use_flash_attn {
            // flash-attn expects (b_sz, seq_len, nheads, head_dim)
            let q = query_states.transpose(1, 2)?;
            let k = key_states.transpose(1, 2)?;
            let v = value_states.transpose(1, 2)?;
            let scale = 1f32 / (self.head_dim as f32).sqrt();
            flash_attn(&q, &k, &v, scale, attention_mask.is_some())?.transpose(1, 2)?
        } else {
            let scale = 1f64 / f64::sqrt(self.head_dim as f64);
            let attn_weights = (query_states.matmul(&key_states.transpose(2, 3)?)? * scale)?;

            let attn_weights = match attention_mask {
                None => attn_weights,
                Some(mask) => attn_weights.broadcast_add(mask)?,
            };
            let attn_weights = candle_nn::ops::softmax_last_dim(&attn_weights)?;
            attn_weights.matmul(&value_states)?
        };
        attn_output
            .transpose(1, 2)?
            .reshape((b_sz, q_len, ()))?
            .apply(&self.o_proj)
    }

    fn clear_kv_cache(&mut self) {
        self.kv_cache = None
    }
}

fn flash_attn(_: &Tensor, _: &Tensor, _: &Tensor, _: f32, _: bool) -> Result<Tensor> {
    unimplemented!("compile with '--features flash-attn'")
}

#[contract(input_layernorm.weight: f32[E], post_attention_layernorm.weight: f32[E])]
#[derive(Debug, Clone)]
struct DecoderLayer {
    self_attn: Attention,
    mlp: MLP,
    input_layernorm: RmsNorm,
    post_attention_layernorm: RmsNorm,
}

#[contract]
impl DecoderLayer {
    fn new(
        rotary_emb: Arc<RotaryEmbedding>,
        use_flash_attn: bool,
        cfg: &Config,
        vb: VarBuilder,
    ) -> Result<Self> {
        let self_attn = Attention::new(rotary_emb, use_flash_attn, cfg, vb.pp("self_attn"))?;
        let mlp = MLP::new(cfg, vb.pp("mlp"))?;
        let input_layernorm =
            RmsNorm::new(cfg.hidden_size, cfg.rms_norm_eps, vb.pp("input_layernorm"))?;
        let post_attention_layernorm = RmsNorm::new(
            cfg.hidden_size,
            cfg.rms_norm_eps,
            vb.pp("post_attention_layernorm"),
        )?;
        Ok(Self {
            self_attn,
            mlp,
            input_layernorm,
            post_attention_layernorm,
        })
    }

    #[contract(
        xs: f32[B, T, E],
        attention_mask: f32[B, 1, T, S],
        return: f32[B, T, E],
    )]
    fn forward(
        &mut self,
        xs: &Tensor,
        attention_mask: Option<&Tensor>,
        seqlen_offset: usize,
    ) -> Result<Tensor> {
        let residual = xs;
        let xs = self.input_layernorm.forward(xs)?;
        let xs = self.self_attn.forward(&xs, attention_mask, seqlen_offset)?;
        let xs = (xs + residual)?;
        let residual = &xs;
        let xs = xs.apply(&self.post_attention_layernorm)?.apply(&self.mlp)?;
        residual + xs
    }

    fn clear_kv_cache(&mut self) {
        self.self_attn.clear_kv_cache()
    }
}

#[contract(embed_tokens: Embedding[V, E], norm.weight: f32[E], lm_head: Linear[E -> V], hidden_size = E)]
#[derive(Debug, Clone)]
pub struct Model {
    embed_tokens: candle_nn::Embedding,
    layers: Vec<DecoderLayer>,
    norm: RmsNorm,
    lm_head: Linear,
    device: Device,
    dtype: DType,
    hidden_size: usize,
}

#[contract]
impl Model {
    pub fn new(use_flash_attn: bool, cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let vb_m = vb.pp("model");
        let embed_tokens =
            candle_nn::embedding(cfg.vocab_size, cfg.hidden_size, vb_m.pp("embed_tokens"))?;
        let rotary_emb = Arc::new(RotaryEmbedding::new(vb.dtype(), cfg, vb_m.device())?);
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        let vb_l = vb_m.pp("layers");
        for layer_idx in 0..cfg.num_hidden_layers {
            let layer =
                DecoderLayer::new(rotary_emb.clone(), use_flash_attn, cfg, vb_l.pp(layer_idx))?;
            layers.push(layer)
        }
        let norm = RmsNorm::new(cfg.hidden_size, cfg.rms_norm_eps, vb_m.pp("norm"))?;
        let lm_head = Linear::new(embed_tokens.embeddings().clone(), None);
        Ok(Self {
            embed_tokens,
            layers,
            norm,
            lm_head,
            device: vb.device().clone(),
            dtype: vb.dtype(),
            hidden_size: cfg.hidden_size,
        })
    }

    pub fn embed_tokens(&self) -> &candle_nn::Embedding {
        &self.embed_tokens
    }

    #[contract(return: f32[{b_size}, 1, {tgt_len}, {tgt_len} + {seqlen_offset}])]
    fn prepare_decoder_attention_mask(
        &self,
        b_size: usize,
        tgt_len: usize,
        seqlen_offset: usize,
    ) -> Result<Tensor> {
        let mask: Vec<_> = (0..tgt_len)
            .flat_map(|i| (0..tgt_len).map(move |j| if i < j { f32::NEG_INFINITY } else { 0. }))
            .collect();
        let mask = Tensor::from_slice(&mask, (tgt_len, tgt_len), &self.device)?;
        let mask = if seqlen_offset > 0 {
            let mask0 = Tensor::zeros((tgt_len, seqlen_offset), DType::F32, &self.device)?;
            Tensor::cat(&[&mask0, &mask], D::Minus1)?
        } else {
            mask
        };
        mask.expand((b_size, 1, tgt_len, tgt_len + seqlen_offset))?
            .to_dtype(self.dtype)
    }

    #[contract(input_ids: u32[B, T] in 0..V, return: f32[B, 1, V])]
    pub fn forward(&mut self, input_ids: &Tensor, seqlen_offset: usize) -> Result<Tensor> {
        let (b_size, seq_len) = input_ids.dims2()?;
        let attention_mask = if seq_len <= 1 {
            None
        } else {
            let mask = self.prepare_decoder_attention_mask(b_size, seq_len, seqlen_offset)?;
            Some(mask)
        };
        let xs = self.embed_tokens.forward(input_ids)?;
        let mut xs = (xs * (self.hidden_size as f64).sqrt())?;
        for layer in self.layers.iter_mut() {
            xs = layer.forward(&xs, attention_mask.as_ref(), seqlen_offset)?
        }
        xs.narrow(1, seq_len - 1, 1)?
            .apply(&self.norm)?
            .apply(&self.lm_head)
    }

    #[contract(xs: f32[B, T, E], attn_mask: f32[B, 1, T, S], return: f32[B, 1, V])]
    pub fn forward_embeds(
        &mut self,
        xs: &Tensor,
        attn_mask: Option<&Tensor>,
        seqlen_offset: usize,
    ) -> Result<Tensor> {
        let (_, seq_len, _) = xs.dims3()?;
        let mut xs = (xs * (self.hidden_size as f64).sqrt())?;
        for layer in self.layers.iter_mut() {
            xs = layer.forward(&xs, attn_mask, seqlen_offset)?
        }
        xs.narrow(1, seq_len - 1, 1)?
            .apply(&self.norm)?
            .apply(&self.lm_head)
    }

    pub fn clear_kv_cache(&mut self) {
        for layer in self.layers.iter_mut() {
            layer.clear_kv_cache()
        }
    }
}

fn small_cfg() -> Config {
    Config {
        attention_bias: false,
        // head_dim * heads (24) != hidden_size (16), as in gemma-7b.
        head_dim: 6,
        hidden_act: Some(Activation::GeluPytorchTanh),
        hidden_activation: None,
        hidden_size: 16,
        intermediate_size: 32,
        num_attention_heads: 4,
        num_hidden_layers: 2,
        num_key_value_heads: 2,
        rms_norm_eps: 1e-6,
        rope_theta: 10_000.,
        vocab_size: 50,
        max_position_embeddings: default_max_position_embeddings().min(32),
    }
}

#[test]
fn gemma_model_runs_with_a_kv_cache() -> Result<()> {
    let cfg = small_cfg();
    let vb = VarBuilder::zeros(DType::F32, &Device::Cpu);
    let mut model = Model::new(false, &cfg, vb)?;
    let ids = Tensor::new(&[[1u32, 5, 7, 2], [3, 4, 9, 49]], &Device::Cpu)?;
    let logits = model.forward(&ids, 0)?;
    assert_eq!(logits.dims(), &[2, 1, 50]);
    let next = Tensor::new(&[[8u32], [9]], &Device::Cpu)?;
    let logits = model.forward(&next, 4)?;
    assert_eq!(logits.dims(), &[2, 1, 50]);
    let cached = model.layers[0].self_attn.kv_cache.as_ref().unwrap();
    assert_eq!(cached.0.dims(), &[2, 2, 5, 6]);
    model.clear_kv_cache();
    let embeds = model.embed_tokens().forward(&ids)?;
    let logits = model.forward_embeds(&embeds, None, 0)?;
    assert_eq!(logits.dims(), &[2, 1, 50]);
    // out-of-vocab id: guard
    model.clear_kv_cache();
    let bad = Tensor::new(&[[1u32, 50]], &Device::Cpu)?;
    let err = model.forward(&bad, 0).unwrap_err();
    assert!(err.to_string().contains("expected 0..V"), "{err}");
    Ok(())
}

#[test]
fn glue_attention_and_layer_straight_line() -> Result<()> {
    let cfg = small_cfg();
    let dev = Device::Cpu;
    let vb = VarBuilder::zeros(DType::F32, &dev);
    let rotary = Arc::new(RotaryEmbedding::new(DType::F32, &cfg, &dev)?);
    let mut attn = Attention::new(rotary.clone(), false, &cfg, vb.pp("a"))?;
    let x = Tensor::zeros((2, 5, 16), DType::F32, &dev)?;
    let mask = Tensor::zeros((2, 1, 5, 5), DType::F32, &dev)?;
    let y = attn.forward(&x, Some(&mask), 0)?;
    assert_eq!(y.dims(), &[2, 5, 16]);
    let x1 = Tensor::zeros((2, 1, 16), DType::F32, &dev)?;
    let mask1 = Tensor::zeros((2, 1, 1, 6), DType::F32, &dev)?;
    let y = attn.forward(&x1, Some(&mask1), 5)?;
    assert_eq!(y.dims(), &[2, 1, 16]);
    let mut layer = DecoderLayer::new(rotary.clone(), false, &cfg, vb.pp("l"))?;
    let y = layer.forward(&x, Some(&mask), 0)?;
    let y = layer.forward(&y.narrow(1, 4, 1)?, None, 5)?;
    assert_eq!(y.dims(), &[2, 1, 16]);
    let mlp = MLP::new(&cfg, vb.pp("m"))?;
    assert_eq!(y.apply(&mlp)?.dims(), &[2, 1, 16]);
    let norm = RmsNorm::new(16, 1e-6, vb.pp("n"))?;
    assert_eq!(norm.forward(&y)?.dims(), &[2, 1, 16]);
    let (q, k) = (
        Tensor::zeros((2, 4, 3, 6), DType::F32, &dev)?,
        Tensor::zeros((2, 2, 3, 6), DType::F32, &dev)?,
    );
    let (q2, k2) = rotary.apply_rotary_emb_qkv(&q, &k, 7)?;
    assert_eq!(
        (q2.dims(), k2.dims()),
        (&[2, 4, 3, 6][..], &[2, 2, 3, 6][..])
    );
    let kv = repeat_kv(k2, 2)?;
    assert_eq!(kv.dims(), &[2, 4, 3, 6]);
    Ok(())
}
