//! Real model code under the compile-time analysis: candle-transformers' BERT self-attention
//! and layer norm, DistilBERT's masked attention, llama's rotary embeddings, causal mask, kv
//! cache and grouped heads, and candle-examples' mnist-training step, ported with the contracts
//! a user would write. Each must compile (the analysis must not reject correct code) and runs a
//! forward pass on small random tensors with its real shapes asserted.

use candle_contracts::contract;
use candle_core::{DType, Device, Module, Result, Tensor, D};
use candle_nn::{Optimizer, VarMap};

fn randn(shape: &[usize]) -> Tensor {
    Tensor::randn(0f32, 1f32, shape, &Device::Cpu).unwrap()
}

/// candle-nn's `LayerNorm::forward`, written out: statistics in f32 whatever the input dtype.
#[contract(xs: float[*B, H], weight: f32[H], bias: f32[H], return: float[*B, H])]
fn layer_norm(xs: &Tensor, weight: &Tensor, bias: &Tensor, eps: f64) -> Result<Tensor> {
    let x_dtype = xs.dtype();
    let internal_dtype = match x_dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    };
    let hidden_size = xs.dim(D::Minus1)?;
    let xs = xs.to_dtype(internal_dtype)?;
    let mean_x = (xs.sum_keepdim(D::Minus1)? / hidden_size as f64)?;
    let xs = xs.broadcast_sub(&mean_x)?;
    let norm_x = (xs.sqr()?.sum_keepdim(D::Minus1)? / hidden_size as f64)?;
    let xs_normed = xs.broadcast_div(&(norm_x + eps)?.sqrt()?)?;
    let xs = xs_normed.to_dtype(x_dtype)?.broadcast_mul(weight)?;
    xs.broadcast_add(bias)
}

/// BERT's self-attention (candle-transformers' `BertSelfAttention`), its projections as
/// weights.
struct BertSelfAttention {
    query: Tensor,
    key: Tensor,
    value: Tensor,
    num_attention_heads: usize,
    attention_head_size: usize,
}

#[contract]
impl BertSelfAttention {
    #[contract(xs: f32[B, S, H], self.query: f32[H, H], return: f32[B, S, H])]
    fn project(&self, xs: &Tensor, weight: &Tensor) -> Result<Tensor> {
        xs.broadcast_matmul(&weight.t()?)
    }

    #[contract(xs: f32[B, S, H])]
    fn transpose_for_scores(&self, xs: &Tensor) -> Result<Tensor> {
        let mut new_x_shape = xs.dims().to_vec();
        new_x_shape.pop();
        new_x_shape.push(self.num_attention_heads);
        new_x_shape.push(self.attention_head_size);
        let xs = xs.reshape(new_x_shape.as_slice())?.transpose(1, 2)?;
        xs.contiguous()
    }

    #[contract(
        hidden_states: f32[B, S, H],
        attention_mask: f32[B, 1, 1, S],
        self.query: f32[H, H],
        self.key: f32[H, H],
        self.value: f32[H, H],
        return: f32[B, S, H],
    )]
    fn forward(&self, hidden_states: &Tensor, attention_mask: &Tensor) -> Result<Tensor> {
        let query_layer = self.project(hidden_states, &self.query)?;
        let key_layer = self.project(hidden_states, &self.key)?;
        let value_layer = self.project(hidden_states, &self.value)?;

        let query_layer = self.transpose_for_scores(&query_layer)?;
        let key_layer = self.transpose_for_scores(&key_layer)?;
        let value_layer = self.transpose_for_scores(&value_layer)?;

        let attention_scores = query_layer.matmul(&key_layer.t()?)?;
        let attention_scores = (attention_scores / (self.attention_head_size as f64).sqrt())?;
        let attention_scores = attention_scores.broadcast_add(attention_mask)?;
        let attention_probs = { candle_nn::ops::softmax(&attention_scores, D::Minus1)? };

        let context_layer = attention_probs.matmul(&value_layer)?;
        let context_layer = context_layer.transpose(1, 2)?.contiguous()?;
        let context_layer = context_layer.flatten_from(D::Minus2)?;
        Ok(context_layer)
    }
}

#[test]
fn bert_self_attention_and_layer_norm() {
    let attention = BertSelfAttention {
        query: randn(&[8, 8]),
        key: randn(&[8, 8]),
        value: randn(&[8, 8]),
        num_attention_heads: 2,
        attention_head_size: 4,
    };
    let hidden = randn(&[2, 5, 8]);
    let mask = Tensor::zeros((2, 1, 1, 5), DType::F32, &Device::Cpu).unwrap();
    let context = attention.forward(&hidden, &mask).unwrap();
    assert_eq!(context.dims(), &[2, 5, 8]);
    let weight = Tensor::ones(8, DType::F32, &Device::Cpu).unwrap();
    let bias = Tensor::zeros(8, DType::F32, &Device::Cpu).unwrap();
    let normed = layer_norm(&context, &weight, &bias, 1e-12).unwrap();
    assert_eq!(normed.dims(), &[2, 5, 8]);
    let largest_mean = normed
        .mean(D::Minus1)
        .unwrap()
        .abs()
        .unwrap()
        .max_all()
        .unwrap()
        .to_scalar::<f32>()
        .unwrap();
    assert!(largest_mean < 1e-5, "{largest_mean}");
}

/// DistilBERT's `masked_fill` and its attention (candle-transformers' `MultiHeadSelfAttention`).
fn masked_fill(on_false: &Tensor, mask: &Tensor, on_true: f32) -> Result<Tensor> {
    let shape = mask.shape();
    let on_true = Tensor::new(on_true, on_false.device())?.broadcast_as(shape.dims())?;
    let m = mask.where_cond(&on_true, on_false)?;
    Ok(m)
}

#[contract(
    q: f32[B, NH, S, HD],
    k: f32[B, NH, S, HD],
    v: f32[B, NH, S, HD],
    mask: u8[B, S],
    return: f32[B, S, NH * HD],
)]
fn distilbert_attention(q: &Tensor, k: &Tensor, v: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let (bs, n_heads, q_length, dim_per_head) = q.dims4()?;
    let q = (q / (dim_per_head as f64).sqrt())?;
    let scores = q.matmul(&k.transpose(2, 3)?.contiguous()?)?;
    let mask = mask
        .reshape((bs, 1, 1, q_length))?
        .broadcast_as(scores.shape())?;
    let scores = masked_fill(&scores.to_dtype(DType::F32)?, &mask, f32::NEG_INFINITY)?;
    let weights = candle_nn::ops::softmax(&scores, D::Minus1)?;
    let context = weights.matmul(v)?;
    let context = context
        .transpose(1, 2)?
        .reshape((bs, q_length, n_heads * dim_per_head))?;
    Ok(context)
}

#[test]
fn distilbert_masked_attention() {
    let (q, k, v) = (
        randn(&[2, 2, 3, 4]),
        randn(&[2, 2, 3, 4]),
        randn(&[2, 2, 3, 4]),
    );
    // Mask the last position of the second sequence: its weight is 0 everywhere.
    let mask = Tensor::new(&[[0u8, 0, 0], [0, 0, 1]], &Device::Cpu).unwrap();
    let context = distilbert_attention(&q, &k, &v, &mask).unwrap();
    assert_eq!(context.dims(), &[2, 3, 8]);
    let only_first_two = distilbert_attention(
        &q,
        &k,
        &Tensor::cat(
            &[
                v.narrow(2, 0, 2).unwrap(),
                v.zeros_like().unwrap().narrow(2, 2, 1).unwrap(),
            ],
            2,
        )
        .unwrap(),
        &mask,
    )
    .unwrap();
    let second = |t: &Tensor| {
        t.get(1)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    };
    for (a, b) in second(&context).iter().zip(second(&only_first_two)) {
        assert!((a - b).abs() < 1e-5, "{a} vs {b}");
    }
}

/// llama's rotary embeddings, both candle-nn's `rope` and the `rotate_half` form.
#[contract(
    x: f32[B, NH, S, HD],
    cos: f32[P, HD / 2],
    sin: f32[P, HD / 2],
    return: f32[B, NH, S, HD],
)]
fn apply_rotary_emb(x: &Tensor, index_pos: usize, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    let (_b_sz, _, seq_len, _hidden_size) = x.dims4()?;
    let cos = cos.narrow(0, index_pos, seq_len)?;
    let sin = sin.narrow(0, index_pos, seq_len)?;
    candle_nn::rotary_emb::rope(&x.contiguous()?, &cos, &sin)
}

#[contract(xs: f32[B, NH, S, HD], return: f32[B, NH, S, HD])]
fn rotate_half(xs: &Tensor) -> Result<Tensor> {
    let last_dim = xs.dim(D::Minus1)?;
    let xs1 = xs.narrow(D::Minus1, 0, last_dim / 2)?;
    let xs2 = xs.narrow(D::Minus1, last_dim / 2, last_dim - last_dim / 2)?;
    Tensor::cat(&[&xs2.neg()?, &xs1], D::Minus1)
}

#[contract(
    x: f32[B, NH, S, HD],
    cos: f32[S, HD],
    sin: f32[S, HD],
    return: f32[B, NH, S, HD],
)]
fn rope_slow(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    let cos = cos.unsqueeze(0)?.unsqueeze(0)?;
    let sin = sin.unsqueeze(0)?.unsqueeze(0)?;
    x.broadcast_mul(&cos)? + rotate_half(x)?.broadcast_mul(&sin)?
}

/// The cos and sin tables (llama's `Cache::new`).
#[contract(inv_freq: f32[HALF], return.0: f32[P, HALF], return.1: f32[P, HALF])]
fn rotary_tables(inv_freq: &Tensor, max_positions: usize) -> Result<(Tensor, Tensor)> {
    let idx_theta = Tensor::arange(0, max_positions as u32, inv_freq.device())?
        .to_dtype(DType::F32)?
        .reshape((max_positions, 1))?
        .matmul(&inv_freq.reshape((1, inv_freq.elem_count()))?)?;
    Ok((idx_theta.cos()?, idx_theta.sin()?))
}

/// llama's causal mask (`utils::build_causal_mask` with no offset).
fn causal_mask(t: usize, device: &Device) -> Result<Tensor> {
    let mask: Vec<_> = (0..t)
        .flat_map(|i| (0..t).map(move |j| u8::from(j > i)))
        .collect();
    Tensor::from_slice(&mask, (t, t), device)
}

/// candle-transformers' `utils::repeat_kv`: grouped key and value heads repeated `n_rep` times.
#[contract(xs: f32[B, KVH, S, HD])]
fn repeat_kv(xs: Tensor, n_rep: usize) -> Result<Tensor> {
    if n_rep == 1 {
        Ok(xs)
    } else {
        let (b_sz, n_kv_head, seq_len, head_dim) = xs.dims4()?;
        Tensor::cat(&vec![&xs; n_rep], 2)?.reshape((b_sz, n_kv_head * n_rep, seq_len, head_dim))
    }
}

/// llama's attention with its kv cache: `cached` holds earlier keys and values.
#[contract(
    q: f32[B, NH, S, HD],
    k: f32[B, KVH, S, HD],
    v: f32[B, KVH, S, HD],
    return: f32[B, S, NH * HD],
)]
fn llama_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    cached: &mut Option<(Tensor, Tensor)>,
    max_position_embeddings: usize,
) -> Result<Tensor> {
    let (b_sz, n_heads, seq_len, head_dim) = q.dims4()?;
    let mut k = k.clone();
    let mut v = v.clone();
    if let Some((cache_k, cache_v)) = &cached {
        k = Tensor::cat(&[cache_k, &k], 2)?.contiguous()?;
        v = Tensor::cat(&[cache_v, &v], 2)?.contiguous()?;
        let k_seq_len = k.dims()[1];
        if k_seq_len > max_position_embeddings {
            k = k
                .narrow(
                    D::Minus1,
                    k_seq_len - max_position_embeddings,
                    max_position_embeddings,
                )?
                .contiguous()?
        }
    }
    *cached = Some((k.clone(), v.clone()));
    let n_rep = n_heads / k.dim(1)?;
    let k = repeat_kv(k, n_rep)?;
    let v = repeat_kv(v, n_rep)?;
    let in_dtype = q.dtype();
    let q = q.to_dtype(DType::F32)?;
    let att = (q.matmul(&k.t()?)? / (head_dim as f64).sqrt())?;
    let att = if seq_len == 1 {
        att
    } else {
        let mask = causal_mask(seq_len, q.device())?.broadcast_as(att.shape())?;
        masked_fill(&att, &mask, f32::NEG_INFINITY)?
    };
    let att = candle_nn::ops::softmax_last_dim(&att)?;
    let y = att.matmul(&v.contiguous()?)?.to_dtype(in_dtype)?;
    y.transpose(1, 2)?
        .reshape(&[b_sz, seq_len, n_heads * head_dim])
}

/// llama's MLP: `silu(x W1) * (x W2)`, then `W3`.
#[contract(x: f32[B, S, H], w1: f32[I, H], w2: f32[I, H], w3: f32[H, I], return: f32[B, S, H])]
fn llama_mlp(x: &Tensor, w1: &Tensor, w2: &Tensor, w3: &Tensor) -> Result<Tensor> {
    let gate = candle_nn::ops::silu(&x.broadcast_matmul(&w1.t()?)?)?;
    let up = x.broadcast_matmul(&w2.t()?)?;
    (gate * up)?.broadcast_matmul(&w3.t()?)
}

#[test]
fn llama_rotary_attention_with_a_kv_cache() {
    let inv_freq = Tensor::new(&[1f32, 0.1], &Device::Cpu).unwrap();
    let (cos, sin) = rotary_tables(&inv_freq, 16).unwrap();
    assert_eq!(cos.dims(), &[16, 2]);
    let q = randn(&[1, 4, 3, 4]);
    let k = randn(&[1, 2, 3, 4]);
    let v = randn(&[1, 2, 3, 4]);
    let q = apply_rotary_emb(&q, 0, &cos, &sin).unwrap();
    let k = apply_rotary_emb(&k, 0, &cos, &sin).unwrap();
    // candle-nn's fused `rope` is the `rotate_half` form on the tables repeated twice.
    let full = |t: &Tensor| {
        Tensor::cat(&[t, t], D::Minus1)
            .unwrap()
            .narrow(0, 0, 3)
            .unwrap()
    };
    let slow = rope_slow(
        &randn(&[1, 1, 3, 4]).zeros_like().unwrap(),
        &full(&cos),
        &full(&sin),
    );
    assert_eq!(slow.unwrap().dims(), &[1, 1, 3, 4]);
    let mut cache = None;
    let y = llama_attention(&q, &k, &v, &mut cache, 16).unwrap();
    assert_eq!(y.dims(), &[1, 3, 16]);
    // One more token: the cache grows to 4 positions.
    let next = |heads: usize| randn(&[1, heads, 1, 4]);
    let y = llama_attention(&next(4), &next(2), &next(2), &mut cache, 16).unwrap();
    assert_eq!(y.dims(), &[1, 1, 16]);
    assert_eq!(cache.as_ref().unwrap().0.dims(), &[1, 2, 4, 4]);
    let h = llama_mlp(
        &randn(&[1, 3, 16]),
        &randn(&[32, 16]),
        &randn(&[32, 16]),
        &randn(&[16, 32]),
    )
    .unwrap();
    assert_eq!(h.dims(), &[1, 3, 16]);
}

#[test]
fn rotate_half_matches_candle_nns_rope() {
    let inv_freq = Tensor::new(&[1f32, 0.1], &Device::Cpu).unwrap();
    let (cos, sin) = rotary_tables(&inv_freq, 3).unwrap();
    let x = randn(&[1, 2, 3, 4]);
    let fused = apply_rotary_emb(&x, 0, &cos, &sin).unwrap();
    let full = |t: &Tensor| Tensor::cat(&[t, t], D::Minus1).unwrap();
    let slow = rope_slow(&x, &full(&cos), &full(&sin)).unwrap();
    let gap = (fused - slow)
        .unwrap()
        .abs()
        .unwrap()
        .max_all()
        .unwrap()
        .to_scalar::<f32>()
        .unwrap();
    assert!(gap < 1e-5, "{gap}");
}

/// candle-examples' mnist-training: the MLP and one SGD step.
struct Mlp {
    ln1: candle_nn::Linear,
    ln2: candle_nn::Linear,
}

const IMAGE_DIM: usize = 784;
const LABELS: usize = 10;

#[contract]
impl Mlp {
    #[contract(xs: f32[N, IMAGE_DIM], return: f32[N, LABELS])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let xs = self.ln1.forward(xs)?;
        let xs = xs.relu()?;
        self.ln2.forward(&xs)
    }

    #[contract(
        train_images: f32[N, IMAGE_DIM],
        train_labels: u32[N] in 0..LABELS,
        return: f32[],
    )]
    fn train_step(
        &self,
        train_images: &Tensor,
        train_labels: &Tensor,
        sgd: &mut candle_nn::SGD,
    ) -> Result<Tensor> {
        let logits = self.forward(train_images)?;
        let log_sm = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
        let loss = candle_nn::loss::nll(&log_sm, train_labels)?;
        sgd.backward_step(&loss)?;
        Ok(loss)
    }

    #[contract(test_images: f32[N, IMAGE_DIM], test_labels: u32[N] in 0..LABELS)]
    fn accuracy(&self, test_images: &Tensor, test_labels: &Tensor) -> Result<f32> {
        let test_logits = self.forward(test_images)?;
        let sum_ok = test_logits
            .argmax(D::Minus1)?
            .eq(test_labels)?
            .to_dtype(DType::F32)?
            .sum_all()?
            .to_scalar::<f32>()?;
        Ok(sum_ok / test_labels.dims1()? as f32)
    }
}

#[test]
fn mnist_training_step_lowers_the_loss() {
    let varmap = VarMap::new();
    let vs = candle_nn::VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    let model = Mlp {
        ln1: candle_nn::linear(IMAGE_DIM, 16, vs.pp("ln1")).unwrap(),
        ln2: candle_nn::linear(16, LABELS, vs.pp("ln2")).unwrap(),
    };
    let mut sgd = candle_nn::SGD::new(varmap.all_vars(), 0.05).unwrap();
    let images = randn(&[8, IMAGE_DIM]);
    let labels = Tensor::new(&[0u32, 1, 2, 3, 4, 5, 6, 7], &Device::Cpu).unwrap();
    let first = model.train_step(&images, &labels, &mut sgd).unwrap();
    assert_eq!(first.dims(), &[] as &[usize]);
    let mut last = first.to_scalar::<f32>().unwrap();
    for _ in 0..20 {
        last = model
            .train_step(&images, &labels, &mut sgd)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
    }
    assert!(last < first.to_scalar::<f32>().unwrap(), "{last}");
    let accuracy = model.accuracy(&images, &labels).unwrap();
    assert!((0.0..=1.0).contains(&accuracy), "{accuracy}");
}
