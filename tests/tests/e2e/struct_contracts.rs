//! Struct contracts: `#[contract(...)]` on a struct states its layers, tensors and integer
//! fields once; every contracted method of its `#[contract] impl` takes those clauses, sharing
//! their dims, and its guard checks them on each call.

use candle_contracts::contract;
use candle_core::{DType, Device, Module, Result, Tensor, D};
use candle_nn::Linear;

fn ones(shape: &[usize]) -> Tensor {
    Tensor::ones(shape, DType::F32, &Device::Cpu).unwrap()
}

#[contract(c_attn: Linear[E -> 3 * E], c_proj: Linear[E -> E], n_head = H, head_dim = D,
           E == H * D)]
struct CausalSelfAttention {
    c_attn: Linear,
    c_proj: Linear,
    n_head: usize,
    head_dim: usize,
}

impl CausalSelfAttention {
    fn new(n_head: usize, head_dim: usize) -> Self {
        let e = n_head * head_dim;
        CausalSelfAttention {
            c_attn: Linear::new(ones(&[3 * e, e]), Some(ones(&[3 * e]))),
            c_proj: Linear::new(ones(&[e, e]), None),
            n_head,
            head_dim,
        }
    }
}

#[contract]
impl CausalSelfAttention {
    #[contract(x: f32[B, T, E], return: f32[B, T, E])]
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, t, _) = x.dims3()?;
        let qkv = self.c_attn.forward(x)?;
        let q = qkv.narrow(D::Minus1, 0, self.n_head * self.head_dim)?;
        let q = q
            .reshape((b, t, self.n_head, self.head_dim))?
            .transpose(1, 2)?;
        let att = (q.matmul(&q.t()?)? / (self.head_dim as f64).sqrt())?;
        let att = candle_nn::ops::softmax_last_dim(&att)?;
        let y = att.matmul(&q)?.transpose(1, 2)?.contiguous()?;
        let y = y.reshape((b, t, self.n_head * self.head_dim))?;
        self.c_proj.forward(&y)
    }

    /// A method without `self` takes none of the struct's clauses.
    #[contract(x: f32[N])]
    fn width(x: &Tensor) -> Result<usize> {
        x.dims1()
    }
}

#[test]
fn a_struct_whose_fields_match_its_contract_runs() {
    let attn = CausalSelfAttention::new(2, 4);
    let x = ones(&[1, 3, 8]);
    assert_eq!(attn.forward(&x).unwrap().dims(), &[1, 3, 8]);
    assert_eq!(CausalSelfAttention::width(&ones(&[5])).unwrap(), 5);
}

#[test]
fn an_input_of_another_width_is_named_against_the_field_that_bound_the_dim() {
    let attn = CausalSelfAttention::new(2, 4);
    let error = attn.forward(&ones(&[1, 3, 6])).unwrap_err().to_string();
    // The method's clauses come first: `x` binds E, and the struct's layers and fields are
    // named against it.
    assert!(error.contains("E = 6 (bound by `x` dim 2)"), "{error}");
    assert!(
        error.contains("`self.c_attn.weight()`: shape [24, 8]"),
        "{error}"
    );
    assert!(error.contains("H = 2 (bound by `self.n_head`)"), "{error}");
}

#[test]
fn integer_fields_bind_their_dims_and_a_relation_between_them_is_checked() {
    let mut attn = CausalSelfAttention::new(2, 4);
    // 3 heads of 4 do not make the layers' width of 8.
    attn.n_head = 3;
    let error = attn.forward(&ones(&[1, 3, 8])).unwrap_err().to_string();
    assert!(error.contains("E == H * D"), "{error}");
    assert!(error.contains("H = 3 (bound by `self.n_head`)"), "{error}");
}

#[test]
fn a_layer_of_other_sizes_is_named_with_its_weight() {
    let mut attn = CausalSelfAttention::new(2, 4);
    attn.c_proj = Linear::new(ones(&[8, 6]), None);
    let error = attn.forward(&ones(&[1, 3, 8])).unwrap_err().to_string();
    assert!(error.contains("`self.c_proj.weight()`"), "{error}");
}

/// A decoder's kv-cache stated once on the struct: where the `Option` is `Some`, what it holds.
#[contract(kv_cache?.0: f32[B, H, P, D], kv_cache?.1: f32[B, H, P, D])]
struct CachedAttention {
    kv_cache: Option<(Tensor, Tensor)>,
}

#[contract]
impl CachedAttention {
    #[contract(k: f32[B, H, T, D], v: f32[B, H, T, D])]
    fn step(&mut self, k: &Tensor, v: &Tensor) -> Result<Tensor> {
        let (k, v) = match &self.kv_cache {
            None => (k.clone(), v.clone()),
            Some((prev_k, prev_v)) => {
                (Tensor::cat(&[prev_k, k], 2)?, Tensor::cat(&[prev_v, v], 2)?)
            }
        };
        self.kv_cache = Some((k.clone(), v.clone()));
        k.t()?.matmul(&v)
    }
}

#[test]
fn a_cache_field_is_checked_where_it_is_some_and_skipped_where_it_is_none() {
    let mut attn = CachedAttention { kv_cache: None };
    let k = ones(&[1, 2, 3, 4]);
    attn.step(&k, &k).unwrap();
    attn.step(&k, &k).unwrap();
    let (cached, _) = attn.kv_cache.as_ref().unwrap();
    assert_eq!(cached.dims(), [1, 2, 6, 4]);
    // A cache of another head size: named before `cat` could fail.
    attn.kv_cache = Some((ones(&[1, 2, 6, 5]), ones(&[1, 2, 6, 4])));
    let error = attn.step(&k, &k).unwrap_err().to_string();
    assert!(error.contains("`self.kv_cache?.0`"), "{error}");
    assert!(error.contains("D = 4 (bound by `k` dim 3)"), "{error}");
}

#[contract(proj: Linear[I -> O])]
struct Down {
    proj: Linear,
}

#[contract]
impl Down {
    #[contract(xs: f32[B, I], return: f32[B, O])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.proj.forward(xs)
    }

    fn plain(&self, xs: &Tensor) -> Result<Tensor> {
        self.proj.forward(xs)
    }
}

#[test]
fn a_method_without_a_contract_beside_a_contracted_one_compiles_and_runs() {
    let down = Down {
        proj: Linear::new(ones(&[2, 4]), None),
    };
    let xs = ones(&[3, 4]);
    assert_eq!(down.forward(&xs).unwrap().dims(), &[3, 2]);
    assert_eq!(down.plain(&xs).unwrap().dims(), &[3, 2]);
    assert!(down.forward(&ones(&[3, 5])).is_err());
}

/// From a review: a struct generic over its layer, the layer's bound (or its type) on the
/// `impl`, and a `weight()` from a trait imported only where the `impl` is: the struct
/// contract reads its fields where its methods are, so both compile and check.
#[contract(layer: Linear[I -> O])]
struct OverLayer<L> {
    layer: L,
}

#[contract]
impl OverLayer<Linear> {
    #[contract(xs: f32[B, I], return: f32[B, O])]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.layer.forward(xs)
    }
}

mod scaled {
    use candle_core::Tensor;

    pub struct Scale {
        pub(crate) scale: Tensor,
    }

    pub trait Weighted {
        fn weight(&self) -> &Tensor;
    }

    impl Weighted for Scale {
        fn weight(&self) -> &Tensor {
            &self.scale
        }
    }
}

#[contract(norm: RmsNorm[E])]
struct Scaled {
    norm: scaled::Scale,
}

mod scaled_impl {
    use super::scaled::Weighted;
    use super::Scaled;
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};

    #[contract]
    impl Scaled {
        #[contract(xs: f32[N, E], return: f32[N, E])]
        pub(super) fn forward(&self, xs: &Tensor) -> Result<Tensor> {
            xs.broadcast_mul(self.norm.weight())
        }
    }
}

#[test]
fn a_struct_contract_s_fields_are_read_where_its_methods_are() {
    let over = OverLayer {
        layer: Linear::new(ones(&[2, 4]), None),
    };
    assert_eq!(over.forward(&ones(&[3, 4])).unwrap().dims(), &[3, 2]);
    assert!(over.forward(&ones(&[3, 5])).is_err());
    let scaled = Scaled {
        norm: scaled::Scale { scale: ones(&[4]) },
    };
    assert_eq!(scaled.forward(&ones(&[3, 4])).unwrap().dims(), &[3, 4]);
    let error = scaled.forward(&ones(&[3, 5])).unwrap_err().to_string();
    assert!(error.contains("self.norm.weight()"), "{error}");
}
