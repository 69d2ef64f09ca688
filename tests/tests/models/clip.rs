//! candle-transformers' `clip/text_model.rs`: the quick-GELU activation, the token and position
//! embeddings, the attention with its causal mask, the MLP, the pre-norm encoder layer, the
//! encoder and the text transformer with its pooled output (the hidden state at each sequence's
//! largest token id, the end-of-text token). The bodies are candle's; `EncoderConfig` is
//! `clip/mod.rs`'s, with only its text variant (the vision model is not ported).

use candle_contracts::contract;
use candle_core::{DType, Device, IndexOp, Result, Tensor, D};
use candle_nn as nn;
use candle_nn::Module;

#[derive(Debug, Clone, Copy)]
pub enum Activation {
    QuickGelu,
}

impl Module for Activation {
    #[contract(xs: f32[*S], return: f32[*S])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        match self {
            Activation::QuickGelu => xs * nn::ops::sigmoid(&(xs * 1.702f64)?)?,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ClipTextConfig {
    pub vocab_size: usize,
    pub embed_dim: usize,
    #[allow(dead_code)] // `EncoderConfig::activation` gives quick GELU for text
    pub activation: Activation,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[allow(dead_code)] // read by stable diffusion's tokenizer, not ported
    pub pad_with: Option<String>,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    #[allow(dead_code)]
    pub projection_dim: usize,
}

impl ClipTextConfig {
    /// `vit_base_patch32`'s text config, shrunk.
    fn small() -> Self {
        Self {
            vocab_size: 50,
            embed_dim: 16,
            intermediate_size: 32,
            max_position_embeddings: 8,
            pad_with: None,
            num_hidden_layers: 2,
            num_attention_heads: 4,
            projection_dim: 16,
            activation: Activation::QuickGelu,
        }
    }
}

/// `clip/mod.rs`'s, text side only.
#[derive(Clone, Debug)]
pub enum EncoderConfig {
    Text(ClipTextConfig),
}

impl EncoderConfig {
    pub fn embed_dim(&self) -> usize {
        match self {
            Self::Text(c) => c.embed_dim,
        }
    }

    pub fn num_attention_heads(&self) -> usize {
        match self {
            Self::Text(c) => c.num_attention_heads,
        }
    }

    pub fn intermediate_size(&self) -> usize {
        match self {
            Self::Text(c) => c.intermediate_size,
        }
    }

    pub fn num_hidden_layers(&self) -> usize {
        match self {
            Self::Text(c) => c.num_hidden_layers,
        }
    }

    pub fn activation(&self) -> Activation {
        match self {
            Self::Text(_c) => Activation::QuickGelu,
        }
    }
}

// ClipTextEmbeddings mostly based on the existing implementation in the stable diffision model.
#[contract(
    token_embedding: Embedding[V, E],
    position_embedding: Embedding[P, E],
    position_ids: u32[1, P],
)]
#[derive(Clone, Debug)]
struct ClipTextEmbeddings {
    token_embedding: candle_nn::Embedding,
    position_embedding: candle_nn::Embedding,
    position_ids: Tensor,
}

#[contract]
impl ClipTextEmbeddings {
    fn new(vs: candle_nn::VarBuilder, c: &ClipTextConfig) -> Result<Self> {
        let token_embedding =
            candle_nn::embedding(c.vocab_size, c.embed_dim, vs.pp("token_embedding"))?;
        let position_embedding: nn::Embedding = candle_nn::embedding(
            c.max_position_embeddings,
            c.embed_dim,
            vs.pp("position_embedding"),
        )?;
        let position_ids =
            Tensor::arange(0u32, c.max_position_embeddings as u32, vs.device())?.unsqueeze(0)?;
        Ok(Self {
            token_embedding,
            position_embedding,
            position_ids,
        })
    }
}

#[contract]
impl Module for ClipTextEmbeddings {
    #[contract(input_ids: u32[B, T] in 0..V, T <= P, return: f32[B, T, E])]
    fn forward(&self, input_ids: &Tensor) -> Result<Tensor> {
        let seq_length = input_ids.dim(D::Minus1)?;
        let inputs_embeds = self.token_embedding.forward(input_ids)?;
        let position_ids = self.position_ids.narrow(1, 0, seq_length)?;
        let position_embedding = self.position_embedding.forward(&position_ids)?;
        inputs_embeds.broadcast_add(&position_embedding)
    }
}

#[contract(
    k_proj: Linear[E -> E],
    v_proj: Linear[E -> E],
    q_proj: Linear[E -> E],
    out_proj: Linear[E -> E],
    head_dim = HD,
    num_attention_heads = H,
    E == H * HD,
)]
#[derive(Clone, Debug)]
struct ClipAttention {
    k_proj: candle_nn::Linear,
    v_proj: candle_nn::Linear,
    q_proj: candle_nn::Linear,
    out_proj: candle_nn::Linear,
    head_dim: usize,
    scale: f64,
    num_attention_heads: usize,
}

#[contract]
impl ClipAttention {
    fn new(vs: candle_nn::VarBuilder, c: &EncoderConfig) -> Result<Self> {
        let embed_dim = c.embed_dim();
        let num_attention_heads = c.num_attention_heads();
        let k_proj = candle_nn::linear(embed_dim, embed_dim, vs.pp("k_proj"))?;
        let v_proj = candle_nn::linear(embed_dim, embed_dim, vs.pp("v_proj"))?;
        let q_proj = candle_nn::linear(embed_dim, embed_dim, vs.pp("q_proj"))?;
        let out_proj = candle_nn::linear(embed_dim, embed_dim, vs.pp("out_proj"))?;
        let head_dim = embed_dim / num_attention_heads;
        let scale = (head_dim as f64).powf(-0.5);

        Ok(ClipAttention {
            k_proj,
            v_proj,
            q_proj,
            out_proj,
            head_dim,
            scale,
            num_attention_heads,
        })
    }

    #[contract(xs: f32[B, T, E], return: f32[B, H, T, HD])]
    fn shape(&self, xs: &Tensor, seq_len: usize, bsz: usize) -> Result<Tensor> {
        xs.reshape((bsz, seq_len, self.num_attention_heads, self.head_dim))?
            .transpose(1, 2)?
            .contiguous()
    }

    #[contract(
        xs: f32[B, T, E],
        causal_attention_mask: f32[B, 1, T, T],
        return: f32[B, T, E],
    )]
    fn forward(&self, xs: &Tensor, causal_attention_mask: Option<&Tensor>) -> Result<Tensor> {
        let in_dtype = xs.dtype();
        let (bsz, seq_len, embed_dim) = xs.dims3()?;

        let query_states = (self.q_proj.forward(xs)? * self.scale)?;
        let proj_shape = (bsz * self.num_attention_heads, seq_len, self.head_dim);
        let query_states = self
            .shape(&query_states, seq_len, bsz)?
            .reshape(proj_shape)?
            .to_dtype(DType::F32)?;
        let key_states = self
            .shape(&self.k_proj.forward(xs)?, seq_len, bsz)?
            .reshape(proj_shape)?
            .to_dtype(DType::F32)?;
        let value_states = self
            .shape(&self.v_proj.forward(xs)?, seq_len, bsz)?
            .reshape(proj_shape)?
            .to_dtype(DType::F32)?;
        let attn_weights = query_states.matmul(&key_states.transpose(1, 2)?)?;

        let src_len = key_states.dim(1)?;

        let attn_weights = if let Some(causal_attention_mask) = causal_attention_mask {
            attn_weights
                .reshape((bsz, self.num_attention_heads, seq_len, src_len))?
                .broadcast_add(causal_attention_mask)?
                .reshape((bsz * self.num_attention_heads, seq_len, src_len))?
        } else {
            attn_weights
        };

        let attn_weights = candle_nn::ops::softmax(&attn_weights, D::Minus1)?;

        let attn_output = attn_weights.matmul(&value_states)?.to_dtype(in_dtype)?;
        let attn_output = attn_output
            .reshape((bsz, self.num_attention_heads, seq_len, self.head_dim))?
            .transpose(1, 2)?
            .reshape((bsz, seq_len, embed_dim))?;
        self.out_proj.forward(&attn_output)
    }
}

#[contract(fc1: Linear[E -> I], fc2: Linear[I -> E])]
#[derive(Clone, Debug)]
struct ClipMlp {
    fc1: candle_nn::Linear,
    fc2: candle_nn::Linear,
    activation: Activation,
}

#[contract]
impl ClipMlp {
    fn new(vs: candle_nn::VarBuilder, c: &EncoderConfig) -> Result<Self> {
        let fc1 = candle_nn::linear(c.embed_dim(), c.intermediate_size(), vs.pp("fc1"))?;
        let fc2 = candle_nn::linear(c.intermediate_size(), c.embed_dim(), vs.pp("fc2"))?;

        Ok(ClipMlp {
            fc1,
            fc2,
            activation: c.activation(),
        })
    }
}

#[contract]
impl ClipMlp {
    #[contract(xs: f32[B, T, E], return: f32[B, T, E])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let xs = self.fc1.forward(xs)?;
        self.fc2.forward(&self.activation.forward(&xs)?)
    }
}

#[contract(layer_norm1: LayerNorm[E], layer_norm2: LayerNorm[E])]
#[derive(Clone, Debug)]
struct ClipEncoderLayer {
    self_attn: ClipAttention,
    layer_norm1: candle_nn::LayerNorm,
    mlp: ClipMlp,
    layer_norm2: candle_nn::LayerNorm,
}

#[contract]
impl ClipEncoderLayer {
    fn new(vs: candle_nn::VarBuilder, c: &EncoderConfig) -> Result<Self> {
        let self_attn = ClipAttention::new(vs.pp("self_attn"), c)?;
        let layer_norm1 = candle_nn::layer_norm(c.embed_dim(), 1e-5, vs.pp("layer_norm1"))?;
        let mlp = ClipMlp::new(vs.pp("mlp"), c)?;
        let layer_norm2 = candle_nn::layer_norm(c.embed_dim(), 1e-5, vs.pp("layer_norm2"))?;

        Ok(ClipEncoderLayer {
            self_attn,
            layer_norm1,
            mlp,
            layer_norm2,
        })
    }

    #[contract(
        xs: f32[B, T, E],
        causal_attention_mask: f32[B, 1, T, T],
        return: f32[B, T, E],
    )]
    fn forward(&self, xs: &Tensor, causal_attention_mask: Option<&Tensor>) -> Result<Tensor> {
        let residual = xs;
        let xs = self.layer_norm1.forward(xs)?;
        let xs = self.self_attn.forward(&xs, causal_attention_mask)?;
        let xs = (xs + residual)?;

        let residual = &xs;
        let xs = self.layer_norm2.forward(&xs)?;
        let xs = self.mlp.forward(&xs)?;
        xs + residual
    }
}

#[derive(Clone, Debug)]
pub struct ClipEncoder {
    layers: Vec<ClipEncoderLayer>,
}

impl ClipEncoder {
    pub fn new(vs: candle_nn::VarBuilder, c: &EncoderConfig) -> Result<Self> {
        let vs = vs.pp("layers");
        let mut layers: Vec<ClipEncoderLayer> = Vec::new();
        for index in 0..c.num_hidden_layers() {
            let layer = ClipEncoderLayer::new(vs.pp(index.to_string()), c)?;
            layers.push(layer)
        }
        Ok(ClipEncoder { layers })
    }

    #[contract(
        xs: f32[B, T, E],
        causal_attention_mask: f32[B, 1, T, T],
        return: f32[B, T, E],
    )]
    pub fn forward(&self, xs: &Tensor, causal_attention_mask: Option<&Tensor>) -> Result<Tensor> {
        let mut xs = xs.clone();
        for layer in self.layers.iter() {
            xs = layer.forward(&xs, causal_attention_mask)?;
        }
        Ok(xs)
    }

    // required by LLaVA
    #[contract(
        xs: f32[B, T, E],
        causal_attention_mask: f32[B, 1, T, T],
        return: [f32[B, T, E]; L],
    )]
    pub fn output_hidden_states(
        &self,
        xs: &Tensor,
        causal_attention_mask: Option<&Tensor>,
    ) -> Result<Vec<Tensor>> {
        let mut xs = xs.clone();
        let mut hidden_states = Vec::new();
        for layer in self.layers.iter() {
            xs = layer.forward(&xs, causal_attention_mask)?;
            hidden_states.push(xs.clone());
        }
        Ok(hidden_states)
    }
}

/// A CLIP transformer based model.
#[contract(final_layer_norm: LayerNorm[E])]
#[derive(Clone, Debug)]
pub struct ClipTextTransformer {
    embeddings: ClipTextEmbeddings,
    encoder: ClipEncoder,
    final_layer_norm: candle_nn::LayerNorm,
}

#[contract]
impl ClipTextTransformer {
    pub fn new(vs: candle_nn::VarBuilder, c: &ClipTextConfig) -> Result<Self> {
        let embeddings = ClipTextEmbeddings::new(vs.pp("embeddings"), c)?;
        let encoder = ClipEncoder::new(vs.pp("encoder"), &EncoderConfig::Text(c.clone()))?;
        let final_layer_norm = candle_nn::layer_norm(c.embed_dim, 1e-5, vs.pp("final_layer_norm"))?;
        Ok(ClipTextTransformer {
            embeddings,
            encoder,
            final_layer_norm,
        })
    }

    // TODO: rewrite to newer version
    fn build_causal_attention_mask(
        bsz: usize,
        seq_len: usize,
        mask_after: usize,
        device: &Device,
    ) -> Result<Tensor> {
        let mask: Vec<_> = (0..seq_len)
            .flat_map(|i| {
                (0..seq_len).map(move |j| {
                    if j > i || j > mask_after {
                        f32::MIN
                    } else {
                        0.
                    }
                })
            })
            .collect();
        let mask = Tensor::from_slice(&mask, (seq_len, seq_len), device)?;
        mask.broadcast_as((bsz, 1, seq_len, seq_len))
    }

    #[contract(input_ids: u32[B, T], return: f32[B, T, E])]
    pub fn forward_with_mask(&self, input_ids: &Tensor, mask_after: usize) -> Result<Tensor> {
        let (bsz, seq_len) = input_ids.dims2()?;
        let input_ids = self.embeddings.forward(input_ids)?;
        let causal_attention_mask =
            Self::build_causal_attention_mask(bsz, seq_len, mask_after, input_ids.device())?;
        let input_ids = self
            .encoder
            .forward(&input_ids, Some(&causal_attention_mask))?;
        self.final_layer_norm.forward(&input_ids)
    }
}

#[contract]
impl Module for ClipTextTransformer {
    #[contract(input_ids: u32[B, T], return: f32[B, E])]
    fn forward(&self, input_ids: &Tensor) -> Result<Tensor> {
        let output = self.forward_with_mask(input_ids, usize::MAX)?;
        let sequence_max_indices = input_ids.argmax(D::Minus1)?.to_dtype(DType::I64)?;

        let mut indices = Vec::new();
        for (batch_idx, &seq_idx) in sequence_max_indices.to_vec1::<i64>()?.iter().enumerate() {
            let index = output.i((batch_idx, seq_idx as usize))?.unsqueeze(0)?;
            indices.push(index);
        }
        Tensor::cat(&indices, 0)
    }
}

#[test]
fn clip_text_transformer_pools_each_sequence() {
    let cfg = ClipTextConfig::small();
    let varmap = candle_nn::VarMap::new();
    let vb = candle_nn::VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    let model = ClipTextTransformer::new(vb, &cfg).unwrap();
    // Two sequences of six tokens; the largest id (the end of text) at 4 and at 5.
    let input_ids = Tensor::new(
        &[[3u32, 7, 1, 9, 49, 0], [2, 4, 6, 8, 10, 12]],
        &Device::Cpu,
    )
    .unwrap();
    let embeddings = model.embeddings.forward(&input_ids).unwrap();
    assert_eq!(embeddings.dims(), &[2, 6, 16]);
    let mask =
        ClipTextTransformer::build_causal_attention_mask(2, 6, usize::MAX, &Device::Cpu).unwrap();
    assert_eq!(mask.dims(), &[2, 1, 6, 6]);
    let layer = &model.encoder.layers[0];
    let attended = layer.self_attn.forward(&embeddings, Some(&mask)).unwrap();
    assert_eq!(attended.dims(), &[2, 6, 16]);
    assert_eq!(layer.mlp.forward(&attended).unwrap().dims(), &[2, 6, 16]);
    let hidden = model
        .encoder
        .output_hidden_states(&embeddings, Some(&mask))
        .unwrap();
    assert_eq!(hidden.len(), 2);
    let states = model.forward_with_mask(&input_ids, usize::MAX).unwrap();
    assert_eq!(states.dims(), &[2, 6, 16]);
    let pooled = model.forward(&input_ids).unwrap();
    assert_eq!(pooled.dims(), &[2, 16]);
    // The pooled rows are the hidden states at the end-of-text tokens.
    let row = states.i((0, 4)).unwrap().to_vec1::<f32>().unwrap();
    assert_eq!(pooled.i(0).unwrap().to_vec1::<f32>().unwrap(), row);

    // Nine tokens where the position table has eight rows: the guard, before `narrow` fails.
    let long = Tensor::zeros((1, 9), DType::U32, &Device::Cpu).unwrap();
    let error = model.embeddings.forward(&long).unwrap_err().to_string();
    assert!(error.contains("T <= P"), "{error}");
    // A token id past the vocabulary.
    let past = Tensor::new(&[[1u32, 50]], &Device::Cpu).unwrap();
    let error = model.embeddings.forward(&past).unwrap_err().to_string();
    assert!(error.contains("expected 0..V"), "{error}");
}
