//! `else P = 0` on a clause through an optional step (an empty kv cache holds no positions),
//! a `ConcatKvCache`'s values stated with it, and `self.act_fn != Swiglu` (an activation that
//! keeps its input's shape): each checked before the body runs.

use candle_contracts::contract;
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::kv_cache::ConcatKvCache;
use candle_nn::Activation;

fn zeros(shape: &[usize]) -> Tensor {
    Tensor::zeros(shape, DType::F32, &Device::Cpu).unwrap()
}

/// Mistral's attention, cut down: the mask covers the cached positions and the new ones.
#[contract(
    kv_cache?.0: f32[B, H, P, D] else P = 0,
    kv_cache?.1: f32[B, H, P, D] else P = 0,
)]
struct CachedAttention {
    kv_cache: Option<(Tensor, Tensor)>,
}

#[contract]
impl CachedAttention {
    #[contract(
        q: f32[B, H, T, D],
        k: f32[B, H, T, D],
        mask: f32[T, P + T],
        return: f32[B, H, T, P + T],
    )]
    fn scores(&mut self, q: &Tensor, k: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let k = match &self.kv_cache {
            None => k.clone(),
            Some((prev_k, _)) => Tensor::cat(&[prev_k, k], 2)?,
        };
        self.kv_cache = Some((k.clone(), k.clone()));
        q.matmul(&k.t()?)?.broadcast_add(mask)
    }
}

#[test]
fn an_empty_cache_binds_its_length_to_0() {
    let mut attn = CachedAttention { kv_cache: None };
    // The first step: no cache, a `[T, T]` mask.
    let scores = attn
        .scores(
            &zeros(&[1, 2, 3, 4]),
            &zeros(&[1, 2, 3, 4]),
            &zeros(&[3, 3]),
        )
        .unwrap();
    assert_eq!(scores.dims(), &[1, 2, 3, 3]);
    // The next: 3 cached positions and one new one.
    let scores = attn
        .scores(
            &zeros(&[1, 2, 1, 4]),
            &zeros(&[1, 2, 1, 4]),
            &zeros(&[1, 4]),
        )
        .unwrap();
    assert_eq!(scores.dims(), &[1, 2, 1, 4]);
}

#[test]
fn a_mask_for_a_cache_that_is_empty_is_named_before_the_body_runs() {
    let mut attn = CachedAttention { kv_cache: None };
    // A mask built as if 5 positions were cached: without `else P = 0` nothing binds `P`.
    let error = attn
        .scores(
            &zeros(&[1, 2, 3, 4]),
            &zeros(&[1, 2, 3, 4]),
            &zeros(&[3, 8]),
        )
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("dim 1 is 8 but P + T = 3 with P = 0 (bound by `self.kv_cache?.0 is None`)"),
        "{error}"
    );
    assert!(attn.kv_cache.is_none(), "the body did not run");
    // With a cache, its length binds `P` as before.
    attn.kv_cache = Some((zeros(&[1, 2, 5, 4]), zeros(&[1, 2, 5, 4])));
    let error = attn
        .scores(
            &zeros(&[1, 2, 3, 4]),
            &zeros(&[1, 2, 3, 4]),
            &zeros(&[3, 3]),
        )
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("P = 5 (bound by `self.kv_cache?.0` dim 2)"),
        "{error}"
    );
}

/// Qwen3's attention, cut down: a candle-nn `ConcatKvCache` on the sequence dim.
struct Concat {
    cache: ConcatKvCache,
}

impl Concat {
    #[contract(
        k: f32[B, H, T, D],
        v: f32[B, H, T, D],
        self.cache.current_seq_len() = P,
        self.cache.v()?: f32[B, H, P, D] else P = 0,
        return.0: f32[B, H, P + T, D],
        return.1: f32[B, H, P + T, D],
    )]
    fn step(&mut self, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        self.cache.append(k, v)
    }
}

#[test]
fn a_concat_cache_states_its_values() {
    let mut concat = Concat {
        cache: ConcatKvCache::new(2),
    };
    let (k, v) = concat
        .step(&zeros(&[1, 2, 3, 4]), &zeros(&[1, 2, 3, 4]))
        .unwrap();
    assert_eq!((k.dims(), v.dims()), (&[1, 2, 3, 4][..], &[1, 2, 3, 4][..]));
    let (k, v) = concat
        .step(&zeros(&[1, 2, 1, 4]), &zeros(&[1, 2, 1, 4]))
        .unwrap();
    assert_eq!((k.dims(), v.dims()), (&[1, 2, 4, 4][..], &[1, 2, 4, 4][..]));
    // Values appended apart from the keys: named before the next step.
    *concat.cache.v_mut().unwrap() = zeros(&[1, 2, 7, 4]);
    let error = concat
        .step(&zeros(&[1, 2, 1, 4]), &zeros(&[1, 2, 1, 4]))
        .unwrap_err()
        .to_string();
    assert!(error.contains("`self.cache.v()?`"), "{error}");
    assert!(
        error.contains("P = 4 (bound by `self.cache.current_seq_len()`)"),
        "{error}"
    );
}

struct Mlp {
    act_fn: Activation,
}

#[contract]
impl Mlp {
    #[contract(xs: f32[B, I], self.act_fn != Swiglu, return: f32[B, I])]
    fn gate(&self, xs: &Tensor) -> Result<Tensor> {
        (xs.apply(&self.act_fn)? * xs)?.contiguous()
    }

    /// The variant by its path, as a `match` names it.
    #[contract(xs: f32[B, I], self.act_fn != candle_nn::Activation::Swiglu)]
    fn gate_by_path(&self, xs: &Tensor) -> Result<Tensor> {
        xs.apply(&self.act_fn)? * xs
    }
}

#[contract(act_fn != Activation::Swiglu)]
struct Gated {
    act_fn: Activation,
}

#[contract]
impl Gated {
    #[contract(xs: f32[B, I], return: f32[B, I])]
    fn gate(&self, xs: &Tensor) -> Result<Tensor> {
        xs.apply(&self.act_fn)? * xs
    }
}

#[test]
fn an_activation_other_than_swiglu_runs() {
    for act_fn in [
        Activation::Silu,
        Activation::GeluPytorchTanh,
        Activation::Relu,
    ] {
        let mlp = Mlp { act_fn };
        assert_eq!(mlp.gate(&zeros(&[2, 6])).unwrap().dims(), &[2, 6]);
        assert_eq!(mlp.gate_by_path(&zeros(&[2, 6])).unwrap().dims(), &[2, 6]);
        let gated = Gated { act_fn };
        assert_eq!(gated.gate(&zeros(&[2, 6])).unwrap().dims(), &[2, 6]);
    }
}

#[test]
fn swiglu_is_named_before_the_body_runs() {
    let mlp = Mlp {
        act_fn: Activation::Swiglu,
    };
    let error = mlp.gate(&zeros(&[2, 6])).unwrap_err().to_string();
    assert!(error.contains("self.act_fn != Swiglu"), "{error}");
    let error = mlp.gate_by_path(&zeros(&[2, 6])).unwrap_err().to_string();
    assert!(error.contains("`self.act_fn` is `Swiglu`"), "{error}");
    assert!(
        error.contains("`self.act_fn` is `Swiglu`, which halves the last dim"),
        "{error}"
    );
    let gated = Gated {
        act_fn: Activation::Swiglu,
    };
    let error = gated.gate(&zeros(&[2, 6])).unwrap_err().to_string();
    assert!(error.contains("`self.act_fn` is `Swiglu`"), "{error}");
}

/// A dim named like a constant in scope is the constant's value, never a new dim: where the
/// only tensor that names it alone is absent, the expressions that use it still compare with
/// it, and `else P = 0` cannot make it 0.
mod constant_dim {
    use super::zeros;
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};

    const P: usize = 3;

    #[contract(mask: f32[T, P + T], past: f32[P])]
    fn with_past(mask: &Tensor, past: Option<&Tensor>) -> Result<usize> {
        let _ = past;
        mask.dim(1)
    }

    struct Cached {
        kv_cache: Option<(Tensor, Tensor)>,
    }

    impl Cached {
        #[contract(mask: f32[T, P + T], self.kv_cache?.0: f32[P, D] else P = 0)]
        fn scores(&self, mask: &Tensor) -> Result<usize> {
            let _ = &self.kv_cache;
            mask.dim(1)
        }
    }

    /// A field binding names the constant: the field's value is compared with it.
    #[contract(n = P)]
    struct Sized {
        n: usize,
    }

    #[contract]
    impl Sized {
        #[contract(xs: f32[P])]
        fn count(&self, xs: &Tensor) -> Result<usize> {
            xs.dim(0)
        }
    }

    #[test]
    fn a_field_binding_compares_with_a_constant() {
        assert_eq!(Sized { n: 3 }.count(&zeros(&[3])).unwrap(), 3);
        let error = Sized { n: 4 }.count(&zeros(&[4])).unwrap_err().to_string();
        assert!(
            error.contains("`self.n = P`: does not hold: left side is 4, right side is 3"),
            "{error}"
        );
    }

    #[test]
    fn a_constant_is_its_value_where_the_tensor_naming_it_is_absent() {
        assert_eq!(with_past(&zeros(&[2, 5]), None).unwrap(), 5);
        let error = with_past(&zeros(&[2, 2]), None).unwrap_err().to_string();
        assert!(error.contains("dim 1 is 2 but P + T = 5"), "{error}");
        assert!(error.contains("P = 3 (a constant)"), "{error}");
    }

    #[test]
    fn else_cannot_rebind_a_constant() {
        let cached = Cached { kv_cache: None };
        let error = cached.scores(&zeros(&[2, 2])).unwrap_err().to_string();
        assert!(
            error.contains("`self.kv_cache?.0` is `None`, and `P` is 3 with P = 3 (a constant)"),
            "{error}"
        );
        assert!(!error.contains("is None} = 0"), "{error}");
        let cached = Cached {
            kv_cache: Some((zeros(&[3, 4]), zeros(&[3, 4]))),
        };
        assert_eq!(cached.scores(&zeros(&[2, 5])).unwrap(), 5);
    }
}

/// `!= Swiglu` after a dim is a relation: `Swiglu` may be a constant of the user's.
mod constant_named_swiglu {
    use super::zeros;
    use candle_contracts::contract;
    use candle_core::{Result, Tensor};

    #[allow(non_upper_case_globals)]
    const Swiglu: usize = 3;

    #[contract(x: f32[N], N != Swiglu)]
    fn not_three(x: &Tensor) -> Result<usize> {
        x.dim(0)
    }

    #[test]
    fn a_dim_compares_with_a_constant_named_swiglu() {
        assert_eq!(not_three(&zeros(&[4])).unwrap(), 4);
        let error = not_three(&zeros(&[3])).unwrap_err().to_string();
        assert!(error.contains("N != Swiglu"), "{error}");
        assert!(!error.contains("halves"), "{error}");
    }
}
