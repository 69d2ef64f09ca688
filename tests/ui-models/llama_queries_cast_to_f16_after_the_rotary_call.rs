use candle_contracts::contract;
use candle_core::{DType, Result, Tensor};
use candle_nn::{Linear, Module};

pub struct Config {
    pub hidden_size: usize,
    pub num_attention_heads: usize,
    pub use_flash_attn: bool,
}

pub struct Cache {
    cos: Tensor,
    sin: Tensor,
}

fn flash_attn(_: &Tensor, _: &Tensor, _: &Tensor, _: f32, _: bool) -> Result<Tensor> {
    unimplemented!("compile with '--features flash-attn'")
}

// Llama's attention (candle-transformers llama.rs, without the kv cache), as candle writes
// it: the rotary embedding is a method of the type, called before `if self.use_flash_attn`.
// The queries are cast to f16 in the path taken without flash attention, against f32 keys;
// `use_flash_attn` comes from the config, and `apply_rotary_emb` never names it, so that path
// runs for some construction.
#[contract(
    q_proj: Linear[E -> H * D],
    k_proj: Linear[E -> H * D],
    v_proj: Linear[E -> H * D],
    o_proj: Linear[H * D -> E],
    num_attention_heads = H,
    head_dim = D,
    E == H * D,
)]
pub struct CausalSelfAttention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
    num_attention_heads: usize,
    head_dim: usize,
    use_flash_attn: bool,
}

#[contract]
impl CausalSelfAttention {
    #[contract(
        x: f32[B, H, T, D],
        cache.cos: f32[P, D / 2],
        cache.sin: f32[P, D / 2],
        return: f32[B, H, T, D],
    )]
    fn apply_rotary_emb(&self, x: &Tensor, index_pos: usize, cache: &Cache) -> Result<Tensor> {
        let (_b_sz, _, seq_len, _hidden_size) = x.dims4()?;
        let cos = cache.cos.narrow(0, index_pos, seq_len)?;
        let sin = cache.sin.narrow(0, index_pos, seq_len)?;
        candle_nn::rotary_emb::rope(x, &cos, &sin)
    }

    #[contract(
        x: f32[B, T, E],
        cache.cos: f32[P, D / 2],
        cache.sin: f32[P, D / 2],
        return: f32[B, T, E],
    )]
    pub fn forward(&self, x: &Tensor, index_pos: usize, cache: &Cache) -> Result<Tensor> {
        let (b_sz, seq_len, hidden_size) = x.dims3()?;
        let q = self.q_proj.forward(x)?;
        let k = self.k_proj.forward(x)?;
        let v = self.v_proj.forward(x)?;

        let q = q
            .reshape((b_sz, seq_len, self.num_attention_heads, self.head_dim))?
            .transpose(1, 2)?
            .contiguous()?;
        let k = k
            .reshape((b_sz, seq_len, self.num_attention_heads, self.head_dim))?
            .transpose(1, 2)?
            .contiguous()?;
        let v = v
            .reshape((b_sz, seq_len, self.num_attention_heads, self.head_dim))?
            .transpose(1, 2)?;

        let q = self.apply_rotary_emb(&q, index_pos, cache)?;
        let k = self.apply_rotary_emb(&k, index_pos, cache)?;

        let y = if self.use_flash_attn {
            // flash-attn expects (b_sz, seq_len, nheads, head_dim)
            let q = q.transpose(1, 2)?;
            let k = k.transpose(1, 2)?;
            let v = v.transpose(1, 2)?;
            let softmax_scale = 1f32 / (self.head_dim as f32).sqrt();
            flash_attn(&q, &k, &v, softmax_scale, seq_len > 1)?.transpose(1, 2)?
        } else {
            let in_dtype = q.dtype();
            let q = q.to_dtype(DType::F16)?;
            let k = k.to_dtype(DType::F32)?;
            let v = v.to_dtype(DType::F32)?;
            let att = (q.matmul(&k.t()?)? / (self.head_dim as f64).sqrt())?;
            let att = candle_nn::ops::softmax_last_dim(&att)?;
            att.matmul(&v.contiguous()?)?.to_dtype(in_dtype)?
        };
        let y = y.transpose(1, 2)?.reshape(&[b_sz, seq_len, hidden_size])?;
        self.o_proj.forward(&y)
    }

    pub fn load(cfg: &Config, q_proj: Linear, k_proj: Linear, v_proj: Linear, o_proj: Linear) -> Self {
        Self {
            q_proj,
            k_proj,
            v_proj,
            o_proj,
            num_attention_heads: cfg.num_attention_heads,
            head_dim: cfg.hidden_size / cfg.num_attention_heads,
            use_flash_attn: cfg.use_flash_attn,
        }
    }
}

fn main() {}
