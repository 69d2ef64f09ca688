//! candle-transformers' `qwen2.rs`: the rotary embedding, the MLP, the attention with its
//! biased q/k/v projections, kv cache and grouped heads (`repeat_kv`), the decoder layer, the
//! base model with its two masks (causal with a sliding window, and one from a padding mask),
//! and the causal LM head on the last position. The bodies are candle's;
//! `with_tracing::{linear, linear_no_bias, Linear, RmsNorm}` are candle-nn's (`RmsNorm::new(size,
//! eps, vb)` is `candle_nn::rms_norm`, `Linear::from_weights` is `Linear::new`), and `Config` is
//! not read from JSON here.

use candle_contracts::contract;
use candle_core::{DType, Device, IndexOp, Module, Result, Tensor, D};
use candle_nn::{linear, linear_no_bias, Activation, Linear, RmsNorm, VarBuilder};
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub max_position_embeddings: usize,
    pub sliding_window: usize,
    pub max_window_layers: usize,
    pub tie_word_embeddings: bool,
    pub rope_theta: f64,
    pub rms_norm_eps: f64,
    pub use_sliding_window: bool,
    pub hidden_act: Activation,
}

impl Config {
    /// Qwen2-0.5B's layout, shrunk: 2 layers, hidden 16, 4 heads of 4, 2 kv heads.
    fn small() -> Self {
        Self {
            vocab_size: 32,
            hidden_size: 16,
            intermediate_size: 32,
            num_hidden_layers: 2,
            num_attention_heads: 4,
            num_key_value_heads: 2,
            max_position_embeddings: 32,
            sliding_window: 32,
            max_window_layers: 2,
            tie_word_embeddings: true,
            rope_theta: 1_000_000.,
            rms_norm_eps: 1e-6,
            use_sliding_window: false,
            hidden_act: Activation::Silu,
        }
    }
}

/// candle-transformers' `utils::repeat_kv`.
#[contract(xs: f32[B, KVH, S, D])]
pub fn repeat_kv(xs: Tensor, n_rep: usize) -> Result<Tensor> {
    if n_rep == 1 {
        Ok(xs)
    } else {
        let (b_sz, n_kv_head, seq_len, head_dim) = xs.dims4()?;
        // Using cat is faster than a broadcast as it avoids going through a potentially
        // strided copy.
        // https://github.com/huggingface/candle/pull/2043
        Tensor::cat(&vec![&xs; n_rep], 2)?.reshape((b_sz, n_kv_head * n_rep, seq_len, head_dim))
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
        let dim = cfg.hidden_size / cfg.num_attention_heads;
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
    act_fn: Activation,
}

#[contract]
impl MLP {
    fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let hidden_sz = cfg.hidden_size;
        let intermediate_sz = cfg.intermediate_size;
        let gate_proj = linear_no_bias(hidden_sz, intermediate_sz, vb.pp("gate_proj"))?;
        let up_proj = linear_no_bias(hidden_sz, intermediate_sz, vb.pp("up_proj"))?;
        let down_proj = linear_no_bias(intermediate_sz, hidden_sz, vb.pp("down_proj"))?;
        Ok(Self {
            gate_proj,
            up_proj,
            down_proj,
            act_fn: cfg.hidden_act,
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
    hidden_size = E,
    H == KVH * G,
    E == H * HD,
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
    hidden_size: usize,
    rotary_emb: Arc<RotaryEmbedding>,
    kv_cache: Option<(Tensor, Tensor)>,
}

#[contract]
impl Attention {
    fn new(rotary_emb: Arc<RotaryEmbedding>, cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let hidden_sz = cfg.hidden_size;
        let num_heads = cfg.num_attention_heads;
        let num_kv_heads = cfg.num_key_value_heads;
        let num_kv_groups = num_heads / num_kv_heads;
        let head_dim = hidden_sz / num_heads;
        let q_proj = linear(hidden_sz, num_heads * head_dim, vb.pp("q_proj"))?;
        let k_proj = linear(hidden_sz, num_kv_heads * head_dim, vb.pp("k_proj"))?;
        let v_proj = linear(hidden_sz, num_kv_heads * head_dim, vb.pp("v_proj"))?;
        let o_proj = linear_no_bias(num_heads * head_dim, hidden_sz, vb.pp("o_proj"))?;
        Ok(Self {
            q_proj,
            k_proj,
            v_proj,
            o_proj,
            num_heads,
            num_kv_heads,
            num_kv_groups,
            head_dim,
            hidden_size: hidden_sz,
            rotary_emb,
            kv_cache: None,
        })
    }

    // `P` is the cached length (the struct's `kv_cache?` clauses), 0 before the first step
    // (`else P = 0`): the mask covers the cached positions and the new ones.
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

        let attn_output = {
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
            .reshape((b_sz, q_len, self.hidden_size))?
            .apply(&self.o_proj)
    }

    fn clear_kv_cache(&mut self) {
        self.kv_cache = None
    }
}

#[contract(input_layernorm: RmsNorm[E], post_attention_layernorm: RmsNorm[E])]
#[derive(Debug, Clone)]
struct DecoderLayer {
    self_attn: Attention,
    mlp: MLP,
    input_layernorm: RmsNorm,
    post_attention_layernorm: RmsNorm,
}

#[contract]
impl DecoderLayer {
    fn new(rotary_emb: Arc<RotaryEmbedding>, cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let self_attn = Attention::new(rotary_emb, cfg, vb.pp("self_attn"))?;
        let mlp = MLP::new(cfg, vb.pp("mlp"))?;
        let input_layernorm =
            candle_nn::rms_norm(cfg.hidden_size, cfg.rms_norm_eps, vb.pp("input_layernorm"))?;
        let post_attention_layernorm = candle_nn::rms_norm(
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

#[contract(embed_tokens: Embedding[V, E], norm: RmsNorm[E])]
#[derive(Debug, Clone)]
pub struct Model {
    embed_tokens: candle_nn::Embedding,
    layers: Vec<DecoderLayer>,
    norm: RmsNorm,
    sliding_window: usize,
    device: Device,
    dtype: DType,
}

#[contract]
impl Model {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let vb_m = vb.pp("model");
        let embed_tokens =
            candle_nn::embedding(cfg.vocab_size, cfg.hidden_size, vb_m.pp("embed_tokens"))?;
        let rotary_emb = Arc::new(RotaryEmbedding::new(vb.dtype(), cfg, vb_m.device())?);
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        let vb_l = vb_m.pp("layers");
        for layer_idx in 0..cfg.num_hidden_layers {
            let layer = DecoderLayer::new(rotary_emb.clone(), cfg, vb_l.pp(layer_idx))?;
            layers.push(layer)
        }
        let norm = candle_nn::rms_norm(cfg.hidden_size, cfg.rms_norm_eps, vb_m.pp("norm"))?;
        Ok(Self {
            embed_tokens,
            layers,
            norm,
            sliding_window: cfg.sliding_window,
            device: vb.device().clone(),
            dtype: vb.dtype(),
        })
    }

    #[contract(return: f32[{b_size}, 1, {tgt_len}, {tgt_len} + {seqlen_offset}])]
    fn prepare_causal_attention_mask(
        &self,
        b_size: usize,
        tgt_len: usize,
        seqlen_offset: usize,
    ) -> Result<Tensor> {
        // Sliding window mask?
        let mask: Vec<_> = (0..tgt_len)
            .flat_map(|i| {
                (0..tgt_len).map(move |j| {
                    if i < j || j + self.sliding_window < i {
                        f32::NEG_INFINITY
                    } else {
                        0.
                    }
                })
            })
            .collect();
        let mask = Tensor::from_slice(&mask, (tgt_len, tgt_len), &self.device)?;
        let mask = if seqlen_offset > 0 {
            let mask0 = Tensor::zeros((tgt_len, seqlen_offset), self.dtype, &self.device)?;
            Tensor::cat(&[&mask0, &mask], D::Minus1)?
        } else {
            mask
        };
        mask.expand((b_size, 1, tgt_len, tgt_len + seqlen_offset))?
            .to_dtype(self.dtype)
    }

    #[contract(attn_mask: u8 | u32 | i64 [B, T], return: f32[B, 1, T, T])]
    fn prepare_attention_mask(&self, attn_mask: &Tensor) -> Result<Tensor> {
        let (b_sz, sql_len) = attn_mask.dims2()?;
        let mut mask: Vec<Tensor> = vec![];
        for b in 0..b_sz {
            mask.push(attn_mask.i((b, ..))?.expand((1, 1, sql_len, sql_len))?);
        }
        let mask = Tensor::cat(&mask, 0)?;
        let on_true = mask.zeros_like()?.to_dtype(self.dtype)?;
        let on_false = Tensor::new(f32::NEG_INFINITY, &self.device)?
            .broadcast_as(mask.shape())?
            .to_dtype(self.dtype)?;
        mask.where_cond(&on_true, &on_false)
    }

    #[contract(
        input_ids: u32[B, T] in 0..V,
        attn_mask: u8 | u32 | i64 [B, T],
        return: f32[B, T, E],
    )]
    pub fn forward(
        &mut self,
        input_ids: &Tensor,
        seqlen_offset: usize,
        attn_mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        let (b_size, seq_len) = input_ids.dims2()?;
        let attention_mask: Option<Tensor> = match attn_mask {
            Some(mask) => Some(self.prepare_attention_mask(mask)?),
            None => {
                if seq_len <= 1 {
                    None
                } else {
                    Some(self.prepare_causal_attention_mask(b_size, seq_len, seqlen_offset)?)
                }
            }
        };
        let mut xs = self.embed_tokens.forward(input_ids)?;
        for layer in self.layers.iter_mut() {
            xs = layer.forward(&xs, attention_mask.as_ref(), seqlen_offset)?
        }
        xs.apply(&self.norm)
    }

    pub fn clear_kv_cache(&mut self) {
        for layer in self.layers.iter_mut() {
            layer.clear_kv_cache()
        }
    }
}

#[contract(lm_head: Linear[E -> V])]
#[derive(Debug, Clone)]
pub struct ModelForCausalLM {
    base_model: Model,
    lm_head: Linear,
}

#[contract]
impl ModelForCausalLM {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let base_model = Model::new(cfg, vb.clone())?;
        let lm_head = if vb.contains_tensor("lm_head.weight") {
            linear_no_bias(cfg.hidden_size, cfg.vocab_size, vb.pp("lm_head"))?
        } else {
            Linear::new(base_model.embed_tokens.embeddings().clone(), None)
        };
        Ok(Self {
            base_model,
            lm_head,
        })
    }

    #[contract(
        input_ids: u32[B, T] in 0..V,
        self.base_model.embed_tokens: Embedding[V, E],
        T >= 1,
        return: f32[B, 1, V],
    )]
    pub fn forward(&mut self, input_ids: &Tensor, seqlen_offset: usize) -> Result<Tensor> {
        let (_b_size, seq_len) = input_ids.dims2()?;
        self.base_model
            .forward(input_ids, seqlen_offset, None)?
            .narrow(1, seq_len - 1, 1)?
            .apply(&self.lm_head)
    }

    pub fn clear_kv_cache(&mut self) {
        self.base_model.clear_kv_cache()
    }
}

#[test]
fn qwen2_causal_lm_with_a_kv_cache() {
    let cfg = Config::small();
    assert!(cfg.tie_word_embeddings && !cfg.use_sliding_window);
    assert_eq!(cfg.max_window_layers, cfg.num_hidden_layers);
    let varmap = candle_nn::VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    let mut model = ModelForCausalLM::new(&cfg, vb).unwrap();

    // A prompt of 5 tokens, then one more: the cache holds 6 positions of the 2 kv heads.
    let prompt = Tensor::new(&[[3u32, 7, 1, 9, 31], [2, 4, 6, 8, 10]], &Device::Cpu).unwrap();
    let logits = model.forward(&prompt, 0).unwrap();
    assert_eq!(logits.dims(), &[2, 1, 32]);
    let next = Tensor::new(&[[5u32], [11]], &Device::Cpu).unwrap();
    let logits = model.forward(&next, 5).unwrap();
    assert_eq!(logits.dims(), &[2, 1, 32]);
    let cached = model.base_model.layers[1]
        .self_attn
        .kv_cache
        .as_ref()
        .unwrap();
    assert_eq!(cached.0.dims(), &[2, 2, 6, 4]);
    assert_eq!(cached.1.dims(), &[2, 2, 6, 4]);
    assert_eq!(
        repeat_kv(cached.0.clone(), 2).unwrap().dims(),
        &[2, 4, 6, 4]
    );
    // A chunk of two tokens after the cache: the causal mask is [2, 1, 2, 8].
    let chunk = Tensor::new(&[[12u32, 13], [14, 15]], &Device::Cpu).unwrap();
    let logits = model.forward(&chunk, 6).unwrap();
    assert_eq!(logits.dims(), &[2, 1, 32]);
    let cached = model.base_model.layers[0]
        .self_attn
        .kv_cache
        .as_ref()
        .unwrap();
    assert_eq!(cached.0.dims(), &[2, 2, 8, 4]);

    // The base model on its own, with a padding mask (no cache: it is cleared first).
    model.clear_kv_cache();
    let attn_mask = Tensor::new(&[[1u8, 1, 1, 1, 1], [1, 1, 1, 0, 0]], &Device::Cpu).unwrap();
    let base = &mut model.base_model;
    let hidden = base.forward(&prompt, 0, Some(&attn_mask)).unwrap();
    assert_eq!(hidden.dims(), &[2, 5, 16]);
    assert_eq!(
        base.prepare_attention_mask(&attn_mask).unwrap().dims(),
        &[2, 1, 5, 5]
    );
    assert_eq!(
        base.prepare_causal_attention_mask(2, 1, 5).unwrap().dims(),
        &[2, 1, 1, 6]
    );

    // The blocks on their own.
    base.clear_kv_cache();
    let xs = Tensor::randn(0f32, 1., (2, 5, 16), &Device::Cpu).unwrap();
    let mask = base.prepare_causal_attention_mask(2, 5, 0).unwrap();
    let layer = &mut base.layers[0];
    assert_eq!(layer.mlp.forward(&xs).unwrap().dims(), &[2, 5, 16]);
    assert_eq!(
        layer.forward(&xs, Some(&mask), 0).unwrap().dims(),
        &[2, 5, 16]
    );

    // A token id past the vocabulary: the guard, before the embedding's `index_select`.
    model.clear_kv_cache();
    let past = Tensor::new(&[[1u32, 32]], &Device::Cpu).unwrap();
    let error = model.forward(&past, 0).unwrap_err().to_string();
    assert!(error.contains("expected 0..V"), "{error}");
    // An offset of 30 over an empty cache: the model builds a mask for 35 positions, and the
    // empty cache holds none (`else P = 0`), so the attention names the mask.
    let error = model.forward(&prompt, 30).unwrap_err().to_string();
    assert!(
        error.contains("P + T = 5 with P = 0 (bound by `self.kv_cache?.0 is None`)"),
        "{error}"
    );
    // A prompt past the rotary table (32 positions): named before `narrow` runs off its end.
    let q = Tensor::zeros((2, 4, 5, 4), DType::F32, &Device::Cpu).unwrap();
    let k = Tensor::zeros((2, 2, 5, 4), DType::F32, &Device::Cpu).unwrap();
    let rotary = &model.base_model.layers[0].self_attn.rotary_emb;
    let error = rotary
        .apply_rotary_emb_qkv(&q, &k, 30)
        .unwrap_err()
        .to_string();
    assert!(error.contains("{seqlen_offset} + T <= P"), "{error}");
}

#[test]
fn qwen2_attention_mask_without_the_cache_offset() {
    let cfg = Config::small();
    let varmap = candle_nn::VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    let mut model = Model::new(&cfg, vb).unwrap();
    let prompt = Tensor::new(&[[3u32, 7, 1]], &Device::Cpu).unwrap();
    model.forward(&prompt, 0, None).unwrap();
    // Two more tokens, with a mask built as if there were no cache: [1, 1, 2, 2], not [1, 1, 2, 5].
    let xs = Tensor::randn(0f32, 1., (1, 2, 16), &Device::Cpu).unwrap();
    let mask = model.prepare_causal_attention_mask(1, 2, 0).unwrap();
    let error = model.layers[0]
        .self_attn
        .forward(&xs, Some(&mask), 3)
        .unwrap_err()
        .to_string();
    assert!(error.contains("P + T = 5 with P = 3"), "{error}");
    // No cache: P is 0 (`else P = 0`), and a [1, 1, 2, 2] mask passes.
    model.clear_kv_cache();
    assert_eq!(
        model.layers[0]
            .self_attn
            .forward(&xs, Some(&mask), 0)
            .unwrap()
            .dims(),
        &[1, 2, 16]
    );
    // No cache, and a mask for three queries: `T` is still checked.
    model.clear_kv_cache();
    let wrong = model.prepare_causal_attention_mask(1, 3, 0).unwrap();
    let error = model.layers[0]
        .self_attn
        .forward(&xs, Some(&wrong), 0)
        .unwrap_err()
        .to_string();
    assert!(error.contains("dim 2 is 3 but T = 2"), "{error}");
}
