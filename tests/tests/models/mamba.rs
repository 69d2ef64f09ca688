//! candle-transformers' `mamba.rs`: one step of Mamba's inference (the selective state-space
//! block with its rolling convolution state and SSM state, the pre-norm residual block and the
//! model with its tied LM head). The bodies are candle's; `with_tracing::{linear,
//! linear_no_bias, Linear}` are candle-nn's, and `Config` is not read from JSON here.

use candle_contracts::contract;
use candle_core::{DType, Device, IndexOp, Module, Result, Tensor, D};
use candle_nn::{Linear, RmsNorm, VarBuilder};

const D_CONV: usize = 4;
const D_STATE: usize = 16;

#[derive(Debug, Clone)]
pub struct Config {
    pub d_model: usize,
    pub n_layer: usize,
    pub vocab_size: usize,
    pub pad_vocab_size_multiple: usize,
}

impl Config {
    /// mamba-130m's layout, shrunk.
    fn small() -> Self {
        Self {
            d_model: 16,
            n_layer: 2,
            vocab_size: 50,
            pad_vocab_size_multiple: 8,
        }
    }

    fn vocab_size(&self) -> usize {
        let pad = self.pad_vocab_size_multiple;
        self.vocab_size.div_ceil(pad) * pad
    }

    fn dt_rank(&self) -> usize {
        self.d_model.div_ceil(16)
    }

    fn d_inner(&self) -> usize {
        self.d_model * 2
    }
}

pub struct State {
    pub hs: Vec<Tensor>,
    pub prev_xs: Vec<[Tensor; D_CONV]>,
    pub pos: usize,
}

impl State {
    pub fn new(batch_size: usize, cfg: &Config, dtype: DType, device: &Device) -> Result<Self> {
        let mut hs = Vec::with_capacity(cfg.n_layer);
        let mut prev_xs = Vec::with_capacity(cfg.n_layer);
        for _i in 0..cfg.n_layer {
            let h = Tensor::zeros((batch_size, cfg.d_inner(), D_STATE), dtype, device)?;
            let x = Tensor::zeros((batch_size, cfg.d_inner()), dtype, device)?;
            hs.push(h);
            prev_xs.push([x.clone(), x.clone(), x.clone(), x.clone()]);
        }
        Ok(Self {
            hs,
            prev_xs,
            pos: 0,
        })
    }
}

#[contract(
    in_proj: Linear[E -> 2 * DI],
    conv1d_bias: f32[DI],
    conv1d_weights: [f32[DI]; D_CONV],
    x_proj: Linear[DI -> R + 2 * D_STATE],
    dt_proj: Linear[R -> DI],
    a_log: f32[DI, D_STATE],
    d: f32[DI],
    out_proj: Linear[DI -> E],
    dt_rank = R,
    d_inner = DI,
)]
#[derive(Clone, Debug)]
pub struct MambaBlock {
    in_proj: Linear,
    conv1d_bias: Tensor,
    conv1d_weights: [Tensor; D_CONV],
    x_proj: Linear,
    dt_proj: Linear,
    a_log: Tensor,
    d: Tensor,
    out_proj: Linear,
    dt_rank: usize,
    layer_index: usize,
    d_inner: usize,
}

#[contract]
impl MambaBlock {
    pub fn new(layer_index: usize, cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let d_inner = cfg.d_inner();
        let dt_rank = cfg.dt_rank();
        let in_proj = candle_nn::linear_no_bias(cfg.d_model, d_inner * 2, vb.pp("in_proj"))?;
        let x_proj = candle_nn::linear_no_bias(d_inner, dt_rank + D_STATE * 2, vb.pp("x_proj"))?;
        let dt_proj = candle_nn::linear(dt_rank, d_inner, vb.pp("dt_proj"))?;
        let a_log = vb.get((d_inner, D_STATE), "A_log")?;
        let d = vb.get(d_inner, "D")?;
        let out_proj = candle_nn::linear_no_bias(d_inner, cfg.d_model, vb.pp("out_proj"))?;
        let conv1d_bias = vb.get(d_inner, "conv1d.bias")?;
        let conv1d_weight = vb.get((d_inner, 1, D_CONV), "conv1d.weight")?;
        let conv1d_weights = [
            conv1d_weight.i((.., 0, 0))?,
            conv1d_weight.i((.., 0, 1))?,
            conv1d_weight.i((.., 0, 2))?,
            conv1d_weight.i((.., 0, 3))?,
        ];
        Ok(Self {
            in_proj,
            conv1d_bias,
            conv1d_weights,
            x_proj,
            dt_proj,
            a_log,
            d,
            out_proj,
            dt_rank,
            layer_index,
            d_inner,
        })
    }

    // One sequence at a time, as candle's mamba example runs it: `b` (`[B, D_STATE]`) is
    // broadcast to `[B, DI, D_STATE]` without an `unsqueeze(1)`, which only a batch of one
    // (or of `DI`) survives.
    #[contract(
        xs: f32[B, E],
        state.hs[..]: f32[B, DI, D_STATE],
        B == 1,
        return: f32[B, E],
    )]
    pub fn forward(&self, xs: &Tensor, state: &mut State) -> Result<Tensor> {
        let (b_sz, _dim) = xs.dims2()?;
        let li = self.layer_index;
        let mut xs = xs.apply(&self.in_proj)?.chunk(2, D::Minus1)?;
        let proj_for_silu = xs.remove(1);
        state.prev_xs[li][state.pos % D_CONV] = xs.remove(0);
        let mut proj_for_conv = self.conv1d_bias.broadcast_as((b_sz, self.d_inner))?;
        for d_c in 0..D_CONV {
            proj_for_conv = (proj_for_conv
                + self.conv1d_weights[d_c]
                    .broadcast_mul(&state.prev_xs[li][(d_c + 1 + state.pos) % D_CONV])?)?;
        }
        let proj_for_conv = candle_nn::ops::silu(&proj_for_conv)?;
        // SSM + Selection, we're doing inference here so only need the last step of
        // the sequence.
        // Algorithm 3.2 on page 6, https://arxiv.org/pdf/2312.00752.pdf

        let x_proj = self.x_proj.forward(&proj_for_conv)?;
        let delta = x_proj.narrow(D::Minus1, 0, self.dt_rank)?.contiguous()?;
        let b = x_proj.narrow(D::Minus1, self.dt_rank, D_STATE)?;
        let c = x_proj.narrow(D::Minus1, self.dt_rank + D_STATE, D_STATE)?;

        let delta = delta.apply(&self.dt_proj)?;
        // softplus
        let delta = (delta.exp()? + 1.)?.log()?;
        let a = self.a_log.to_dtype(delta.dtype())?.exp()?.neg()?;
        let d = self.d.to_dtype(delta.dtype())?;

        // Selective scan part
        // Eqn (2a), page 3, h_t = Ab h_{t-1} + Bb x_t
        let delta = delta
            .unsqueeze(D::Minus1)?
            .broadcast_as((b_sz, self.d_inner, D_STATE))?;
        let a = a.broadcast_as((b_sz, self.d_inner, D_STATE))?;
        let b = b.broadcast_as((b_sz, self.d_inner, D_STATE))?;
        let proj_for_conv_b =
            proj_for_conv
                .unsqueeze(D::Minus1)?
                .broadcast_as((b_sz, self.d_inner, D_STATE))?;
        state.hs[li] = ((&state.hs[li] * (&delta * &a)?.exp()?)? + &delta * &b * &proj_for_conv_b)?;
        let ss = (state.hs[li]
            .matmul(&c.unsqueeze(D::Minus1)?)?
            .squeeze(D::Minus1)?
            + proj_for_conv.broadcast_mul(&d)?)?;

        let ys = (ss * candle_nn::ops::silu(&proj_for_silu))?;
        ys.apply(&self.out_proj)
    }
}

#[contract(norm: RmsNorm[E])]
#[derive(Clone, Debug)]
pub struct ResidualBlock {
    mixer: MambaBlock,
    norm: RmsNorm,
}

#[contract]
impl ResidualBlock {
    pub fn new(layer_index: usize, cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let norm = candle_nn::rms_norm(cfg.d_model, 1e-5, vb.pp("norm"))?;
        let mixer = MambaBlock::new(layer_index, cfg, vb.pp("mixer"))?;
        Ok(Self { mixer, norm })
    }

    #[contract(xs: f32[B, E], return: f32[B, E])]
    fn forward(&self, xs: &Tensor, state: &mut State) -> Result<Tensor> {
        self.mixer.forward(&xs.apply(&self.norm)?, state)? + xs
    }
}

// https://github.com/johnma2006/mamba-minimal/blob/61f01953ca153f8c4a850d7111beecbf4be9cee1/model.py#L56
#[contract(embedding: Embedding[V, E], norm_f: RmsNorm[E], lm_head: Linear[E -> V])]
#[derive(Clone, Debug)]
pub struct Model {
    embedding: candle_nn::Embedding,
    layers: Vec<ResidualBlock>,
    norm_f: RmsNorm,
    lm_head: Linear,
    dtype: DType,
}

#[contract]
impl Model {
    pub fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
        let embedding = candle_nn::embedding(cfg.vocab_size(), cfg.d_model, vb.pp("embedding"))?;
        let mut layers = Vec::with_capacity(cfg.n_layer);
        let vb_l = vb.pp("layers");
        for layer_idx in 0..cfg.n_layer {
            let layer = ResidualBlock::new(layer_idx, cfg, vb_l.pp(layer_idx))?;
            layers.push(layer)
        }
        let norm_f = candle_nn::rms_norm(cfg.d_model, 1e-5, vb.pp("norm_f"))?;
        let lm_head = Linear::new(embedding.embeddings().clone(), None);
        Ok(Self {
            embedding,
            layers,
            norm_f,
            lm_head,
            dtype: vb.dtype(),
        })
    }

    #[contract(input_ids: u32[B] in 0..V, return: f32[B, V])]
    pub fn forward(&self, input_ids: &Tensor, state: &mut State) -> Result<Tensor> {
        let _b_size = input_ids.dims1()?;
        let mut xs = self.embedding.forward(input_ids)?;
        for layer in self.layers.iter() {
            xs = layer.forward(&xs, state)?
        }
        state.pos += 1;
        xs.apply(&self.norm_f)?.apply(&self.lm_head)
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }
}

#[test]
fn mamba_steps_through_a_prompt() {
    let cfg = Config::small();
    let varmap = candle_nn::VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    let model = Model::new(&cfg, vb).unwrap();
    assert_eq!(model.dtype(), DType::F32);
    // The vocabulary padded to a multiple of 8.
    assert_eq!(cfg.vocab_size(), 56);

    let mut state = State::new(1, &cfg, DType::F32, &Device::Cpu).unwrap();
    let xs = Tensor::randn(0f32, 1., (1, 16), &Device::Cpu).unwrap();
    let block = &model.layers[0];
    assert_eq!(
        block.mixer.forward(&xs, &mut state).unwrap().dims(),
        &[1, 16]
    );
    assert_eq!(state.hs[0].dims(), &[1, 32, 16]);
    assert_eq!(block.forward(&xs, &mut state).unwrap().dims(), &[1, 16]);

    // Four steps of a prompt.
    let mut state = State::new(1, &cfg, DType::F32, &Device::Cpu).unwrap();
    for id in [1u32, 2, 3, 55] {
        let input_ids = Tensor::new(&[id], &Device::Cpu).unwrap();
        let logits = model.forward(&input_ids, &mut state).unwrap();
        assert_eq!(logits.dims(), &[1, 56]);
    }
    assert_eq!(state.pos, 4);

    // A token id past the padded vocabulary.
    let past = Tensor::new(&[56u32], &Device::Cpu).unwrap();
    let error = model.forward(&past, &mut state).unwrap_err().to_string();
    assert!(error.contains("expected 0..V"), "{error}");

    // A batch of two: the guard names the relation before `broadcast_as` fails.
    let mut pair = State::new(2, &cfg, DType::F32, &Device::Cpu).unwrap();
    let xs = Tensor::randn(0f32, 1., (2, 16), &Device::Cpu).unwrap();
    let error = block.mixer.forward(&xs, &mut pair).unwrap_err().to_string();
    assert!(error.contains("B == 1"), "{error}");
    // A state built for another batch size: the guard names the SSM state.
    let xs = Tensor::randn(0f32, 1., (1, 16), &Device::Cpu).unwrap();
    let error = block.mixer.forward(&xs, &mut pair).unwrap_err().to_string();
    assert!(error.contains("state.hs"), "{error}");
}
