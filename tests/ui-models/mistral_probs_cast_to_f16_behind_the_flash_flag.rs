use candle_contracts::contract;
use candle_core::{DType, Result, Tensor};

pub struct Config {
    pub use_flash_attn: bool,
}

fn flash_attn(_: &Tensor, _: &Tensor, _: &Tensor, _: f32, _: bool) -> Result<Tensor> {
    unimplemented!("compile with '--features flash-attn'")
}

fn repeat_kv(xs: Tensor, n_rep: usize) -> Result<Tensor> {
    if n_rep == 1 {
        Ok(xs)
    } else {
        let (b_sz, n_kv_head, seq_len, head_dim) = xs.dims4()?;
        Tensor::cat(&vec![&xs; n_rep], 2)?.reshape((b_sz, n_kv_head * n_rep, seq_len, head_dim))
    }
}

// Mistral's attention core (candle-transformers mistral.rs, after the rotary embedding), its
// kv cache and grouped heads as candle writes them. The probabilities are cast to f16 to save
// memory before the matmul with the f32 values, in the path taken without flash attention:
// `use_flash_attn` comes from the config, so that path runs for some construction.
#[contract(
    kv_cache?.0: f32[B, KVH, P, HD],
    kv_cache?.1: f32[B, KVH, P, HD],
    num_heads = H,
    num_kv_groups = G,
    head_dim = HD,
    H == KVH * G,
)]
pub struct Attention {
    num_heads: usize,
    num_kv_groups: usize,
    head_dim: usize,
    kv_cache: Option<(Tensor, Tensor)>,
    use_flash_attn: bool,
}

impl Attention {
    pub fn new(cfg: &Config, num_heads: usize, num_kv_groups: usize, head_dim: usize) -> Self {
        Self {
            num_heads,
            num_kv_groups,
            head_dim,
            kv_cache: None,
            use_flash_attn: cfg.use_flash_attn,
        }
    }
}

#[contract]
impl Attention {
    #[contract(
        query_states: f32[B, H, T, HD],
        key_states: f32[B, KVH, T, HD],
        value_states: f32[B, KVH, T, HD],
        return: f32[B, H, T, HD],
    )]
    pub fn attend(
        &mut self,
        query_states: &Tensor,
        key_states: &Tensor,
        value_states: &Tensor,
    ) -> Result<Tensor> {
        let q_len = query_states.dim(2)?;
        let (key_states, value_states) = match &self.kv_cache {
            None => (key_states.clone(), value_states.clone()),
            Some((prev_k, prev_v)) => {
                let key_states = Tensor::cat(&[prev_k, key_states], 2)?;
                let value_states = Tensor::cat(&[prev_v, value_states], 2)?;
                (key_states, value_states)
            }
        };
        self.kv_cache = Some((key_states.clone(), value_states.clone()));

        let key_states = repeat_kv(key_states, self.num_kv_groups)?;
        let value_states = repeat_kv(value_states, self.num_kv_groups)?;

        let attn_output = if self.use_flash_attn {
            // flash-attn expects (b_sz, seq_len, nheads, head_dim)
            let q = query_states.transpose(1, 2)?;
            let k = key_states.transpose(1, 2)?;
            let v = value_states.transpose(1, 2)?;
            let softmax_scale = 1f32 / (self.head_dim as f32).sqrt();
            flash_attn(&q, &k, &v, softmax_scale, q_len > 1)?.transpose(1, 2)?
        } else {
            let scale = 1f64 / f64::sqrt(self.head_dim as f64);
            let attn_weights = (query_states.matmul(&key_states.transpose(2, 3)?)? * scale)?;
            let attn_weights = candle_nn::ops::softmax_last_dim(&attn_weights)?;
            attn_weights.to_dtype(DType::F16)?.matmul(&value_states)?
        };
        let _ = self.num_heads;
        Ok(attn_output)
    }
}

fn main() {}
