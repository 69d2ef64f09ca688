use candle_contracts::contract;
use candle_core::{Module, Result, Tensor, D};
use candle_nn::Linear;

// BERT's self-attention (candle-transformers bert.rs). `transpose_for_scores` splits the
// projections into `[B, H, T, D]`, H and D the struct's own fields; the context is merged
// back with `transpose(1, 2)` and `flatten_from(D::Minus2)` into `[B, T, H * D]`.
// `flatten_from(1)` merges the heads, the tokens and the head dims into one.
#[contract(
    query: Linear[E -> H * D],
    key: Linear[E -> H * D],
    value: Linear[E -> H * D],
    num_attention_heads = H,
    attention_head_size = D,
)]
struct BertSelfAttention {
    query: Linear,
    key: Linear,
    value: Linear,
    num_attention_heads: usize,
    attention_head_size: usize,
}

#[contract]
impl BertSelfAttention {
    #[contract(xs: f32[B, T, H * D], return: f32[B, H, T, D])]
    fn transpose_for_scores(&self, xs: &Tensor) -> Result<Tensor> {
        let mut new_x_shape = xs.dims().to_vec();
        new_x_shape.pop();
        new_x_shape.push(self.num_attention_heads);
        new_x_shape.push(self.attention_head_size);
        let xs = xs.reshape(new_x_shape.as_slice())?.transpose(1, 2)?;
        xs.contiguous()
    }

    #[contract(hidden_states: f32[B, T, E], return: f32[B, T, H * D])]
    fn forward(&self, hidden_states: &Tensor) -> Result<Tensor> {
        let query_layer = self.transpose_for_scores(&self.query.forward(hidden_states)?)?;
        let key_layer = self.transpose_for_scores(&self.key.forward(hidden_states)?)?;
        let value_layer = self.transpose_for_scores(&self.value.forward(hidden_states)?)?;
        let attention_scores = query_layer.matmul(&key_layer.t()?)?;
        let attention_scores = (attention_scores / (self.attention_head_size as f64).sqrt())?;
        let attention_probs = candle_nn::ops::softmax(&attention_scores, D::Minus1)?;
        let context_layer = attention_probs.matmul(&value_layer)?;
        let context_layer = context_layer.transpose(1, 2)?.contiguous()?;
        context_layer.flatten_from(1)
    }
}

fn main() {}
