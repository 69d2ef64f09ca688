//! Names from the function's scope (the book's reference has a section on each): constants,
//! braced dims, values from scope in relations, optional and indexed paths, tuple returns,
//! sequences and raw identifiers. Each passes on good input and names what is wrong on bad
//! input.

use candle_contracts::{contract, Rule};
use candle_core::{DType, Device, Result, Tensor};

use crate::{contract_error, only_violation, zeros};

const IMAGE_DIM: usize = 784;
const LABELS: usize = 10;
const MAX_LEN: u32 = 8;
const OFFSET: i64 = 2;

#[contract(xs: f32[N, IMAGE_DIM], ys: u32[N] in 0..LABELS)]
fn mnist_step(xs: &Tensor, ys: &Tensor) -> Result<usize> {
    Ok(xs.dim(0)? + ys.dim(0)?)
}

#[test]
fn a_constant_in_a_shape_is_its_value_never_a_new_dim() {
    let ys = Tensor::new(&[1u32, 9], &Device::Cpu).unwrap();
    assert_eq!(mnist_step(&zeros(&[2, 784], DType::F32), &ys).unwrap(), 4);
    // The bug this guards against: `[2, 100]` passing because `IMAGE_DIM` bound to 100.
    let error = mnist_step(&zeros(&[2, 100], DType::F32), &ys).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("xs", Rule::Shape)
    );
    assert!(
        error
            .to_string()
            .contains("dim 1 is 100 but IMAGE_DIM = 784 (a constant)"),
        "{error}"
    );
}

#[test]
fn a_constant_bounds_a_range() {
    let ys = Tensor::new(&[1u32, 10], &Device::Cpu).unwrap();
    let error = mnist_step(&zeros(&[2, 784], DType::F32), &ys).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("ys", Rule::Range)
    );
    assert!(
        error.to_string().contains("ys[1] = 10, expected 0..LABELS"),
        "{error}"
    );
}

#[contract(ids: i64[B, T] in 0..V, table: f32[V, D], T <= MAX_LEN, T <= max_len)]
fn embed(ids: &Tensor, table: &Tensor, max_len: usize) -> Result<()> {
    let _ = (ids, table);
    Ok(())
}

#[test]
fn constants_and_parameters_in_relations() {
    let table = zeros(&[5, 3], DType::F32);
    embed(&zeros(&[1, 8], DType::I64), &table, 8).unwrap();
    let error = embed(&zeros(&[1, 9], DType::I64), &table, 9).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("`T <= MAX_LEN`: does not hold"), "{text}");
    let error = embed(&zeros(&[1, 6], DType::I64), &table, 5).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.argument(), "T <= max_len");
    assert!(
        error.to_string().contains("max_len = 5"),
        "the message shows the parameter's value: {error}"
    );
}

struct Config {
    hidden_size: usize,
    max_position_embeddings: usize,
    pad_token_id: usize,
}

struct Encoder {
    cfg: Config,
}

impl Encoder {
    #[contract(
        xs: f32[B, T, {self.cfg.hidden_size}],
        T <= {self.cfg.max_position_embeddings} - {self.cfg.pad_token_id} - 1,
    )]
    fn forward(&self, xs: &Tensor) -> Result<usize> {
        xs.dim(1)
    }
}

#[test]
fn braced_dims_and_braced_values_in_relations() {
    let encoder = Encoder {
        cfg: Config {
            hidden_size: 4,
            max_position_embeddings: 10,
            pad_token_id: 1,
        },
    };
    assert_eq!(encoder.forward(&zeros(&[2, 8, 4], DType::F32)).unwrap(), 8);
    let error = encoder.forward(&zeros(&[2, 8, 5], DType::F32)).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("dim 2 is 5 but {self.cfg.hidden_size} = 4"),
        "{error}"
    );
    let error = encoder.forward(&zeros(&[2, 9, 4], DType::F32)).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("`T <= {self.cfg.max_position_embeddings} - {self.cfg.pad_token_id} - 1`"),
        "{text}"
    );
    assert!(text.contains("left side is 9, right side is 8"), "{text}");
}

#[contract(x: f32[N, {dim}])]
fn braced_parameter(x: &Tensor, dim: usize) -> Result<()> {
    let _ = x;
    Ok(())
}

#[test]
fn a_braced_dim_is_checked_in_shapes_mode_too() {
    braced_parameter(&zeros(&[2, 3], DType::F32), 3).unwrap();
    let error = braced_parameter(&zeros(&[2, 3], DType::F32), 4).unwrap_err();
    assert_eq!(only_violation(&error).rule(), Rule::Shape);
}

#[contract(x: f32[N, K])]
fn const_generic<const K: usize>(x: &Tensor) -> Result<()> {
    let _ = x;
    Ok(())
}

#[test]
fn a_const_generic_is_a_constant() {
    const_generic::<3>(&zeros(&[2, 3], DType::F32)).unwrap();
    let error = const_generic::<4>(&zeros(&[2, 3], DType::F32)).unwrap_err();
    assert!(
        error.to_string().contains("dim 1 is 3 but K = 4"),
        "{error}"
    );
}

#[contract(ids: i64[N] in OFFSET..{OFFSET + 3})]
fn offset_ids(ids: &Tensor) -> Result<()> {
    let _ = ids;
    Ok(())
}

#[test]
fn constants_of_other_integer_types_bound_ranges() {
    offset_ids(&Tensor::new(&[2i64, 4], &Device::Cpu).unwrap()).unwrap();
    let error = offset_ids(&Tensor::new(&[1i64, 4], &Device::Cpu).unwrap()).unwrap_err();
    assert_eq!(only_violation(&error).rule(), Rule::Range);
}

struct Embeddings {
    word_embeddings: candle_nn::Embedding,
    position_embeddings: Option<candle_nn::Embedding>,
}

impl Embeddings {
    #[contract(
        input_ids: u32[B, T] in 0..V,
        self.word_embeddings.embeddings(): f32[V, D],
        self.position_embeddings?.embeddings(): f32[P, D],
        T <= P,
    )]
    fn forward(&self, input_ids: &Tensor) -> Result<Tensor> {
        let (_, t) = input_ids.dims2()?;
        let mut xs = candle_core::Module::forward(&self.word_embeddings, input_ids)?;
        if let Some(pos) = &self.position_embeddings {
            let positions = Tensor::arange(0u32, t as u32, input_ids.device())?;
            xs = xs.broadcast_add(&candle_core::Module::forward(pos, &positions)?)?;
        }
        Ok(xs)
    }
}

fn embeddings(positions: Option<usize>) -> Embeddings {
    let table = |rows| candle_nn::Embedding::new(zeros(&[rows, 4], DType::F32), 4);
    Embeddings {
        word_embeddings: table(10),
        position_embeddings: positions.map(table),
    }
}

#[test]
fn an_optional_step_checks_the_table_when_present() {
    let ids = Tensor::new(&[[1u32, 2, 3]], &Device::Cpu).unwrap();
    assert_eq!(embeddings(Some(3)).forward(&ids).unwrap().dims(), [1, 3, 4]);
    let error = embeddings(Some(2)).forward(&ids).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("T <= P", Rule::Relation)
    );
    assert!(
        error
            .to_string()
            .contains("P = 2 (bound by `self.position_embeddings?.embeddings()` dim 0)"),
        "{error}"
    );
}

#[test]
fn a_none_step_skips_the_clause_and_every_rule_needing_its_dims() {
    let ids = Tensor::new(&[[1u32, 2, 3]], &Device::Cpu).unwrap();
    assert_eq!(embeddings(None).forward(&ids).unwrap().dims(), [1, 3, 4]);
    // Still checked: the ids against the word table.
    let bad = Tensor::new(&[[1u32, 2, 10]], &Device::Cpu).unwrap();
    let violation = only_violation(&embeddings(None).forward(&bad).unwrap_err()).clone();
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("input_ids", Rule::Range)
    );
}

#[contract(x: f32[N, C], target: u32[N] in 0..K, scores: f32[K])]
fn none_argument_binds_k(
    x: &Tensor,
    mask: Option<&Tensor>,
    target: &Tensor,
    scores: Option<&Tensor>,
) -> Result<()> {
    let _ = (x, mask, target, scores);
    Ok(())
}

#[test]
fn a_none_argument_that_alone_binds_a_dim_skips_the_range_needing_it() {
    let x = zeros(&[2, 3], DType::F32);
    let target = Tensor::new(&[0u32, 7], &Device::Cpu).unwrap();
    none_argument_binds_k(&x, None, &target, None).unwrap();
    let scores = zeros(&[4], DType::F32);
    let error = none_argument_binds_k(&x, None, &target, Some(&scores)).unwrap_err();
    assert_eq!(only_violation(&error).rule(), Rule::Range);
}

struct Mlp {
    layers: Vec<candle_nn::Linear>,
}

impl Mlp {
    #[contract(
        xs: f32[B, D],
        self.layers[0].weight(): f32[H, D],
        self.layers[..].weight(): f32[H, _],
    )]
    fn first(&self, xs: &Tensor) -> Result<usize> {
        xs.dim(0)
    }
}

fn linear(out: usize, inp: usize) -> candle_nn::Linear {
    candle_nn::Linear::new(zeros(&[out, inp], DType::F32), None)
}

#[test]
fn indexed_paths_name_the_element() {
    let mlp = Mlp {
        layers: vec![linear(4, 3), linear(4, 4)],
    };
    assert_eq!(mlp.first(&zeros(&[2, 3], DType::F32)).unwrap(), 2);
    let error = mlp.first(&zeros(&[2, 5], DType::F32)).unwrap_err();
    assert_eq!(
        contract_error(&error).violations()[0].argument(),
        "self.layers[0].weight()"
    );
    let empty = Mlp { layers: vec![] };
    let error = empty.first(&zeros(&[2, 3], DType::F32)).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.rule(), Rule::Missing);
    assert!(
        error
            .to_string()
            .contains("`self.layers[0].weight()`: is past the end"),
        "{error}"
    );
}

/// Llama's cache: one optional pair of key and value tensors per block.
struct Cache {
    kvs: Vec<Option<(Tensor, Tensor)>>,
}

#[contract(
    k: f32[B, T, D],
    cache.kvs[block_idx]?.0: f32[B, P, D],
    cache.kvs[block_idx]?.1: f32[B, P, D],
)]
fn append_kv(k: &Tensor, block_idx: usize, cache: &mut Cache) -> Result<usize> {
    let k = match &cache.kvs[block_idx] {
        Some((prev_k, _)) => Tensor::cat(&[prev_k, k], 1)?,
        None => k.clone(),
    };
    cache.kvs[block_idx] = Some((k.clone(), k.clone()));
    k.dim(1)
}

/// The same, by an index of another integer type: a negative one is past the end.
#[contract(cache.kvs[block]?.0: f32[B, P, D])]
fn cached_len(block: i64, cache: &Cache) -> Result<usize> {
    let block = usize::try_from(block).map_err(candle_core::Error::wrap)?;
    Ok(cache.kvs[block].as_ref().map_or(0, |(k, _)| k.dims()[1]))
}

#[test]
fn a_parameter_indexes_a_path() {
    let pair =
        |t: usize, d: usize| Some((zeros(&[1, t, d], DType::F32), zeros(&[1, t, d], DType::F32)));
    let mut cache = Cache {
        kvs: vec![pair(5, 4), None, pair(2, 3)],
    };
    let k = zeros(&[1, 1, 4], DType::F32);
    assert_eq!(append_kv(&k, 0, &mut cache).unwrap(), 6);
    // The element at that index only: `kvs[2]`'s other width is not looked at.
    assert_eq!(append_kv(&k, 1, &mut cache).unwrap(), 1);
    let error = append_kv(&k, 2, &mut cache).unwrap_err();
    assert_eq!(
        contract_error(&error).violations()[0].argument(),
        "cache.kvs[block_idx]?.0"
    );
    assert!(
        error.to_string().contains("does not match [B, P, D]"),
        "{error}"
    );
    // Past the end: both clauses say so, before the body would panic.
    let error = append_kv(&k, 3, &mut cache).unwrap_err();
    let violations = contract_error(&error).violations();
    assert_eq!(violations.len(), 2);
    assert!(violations.iter().all(|v| v.rule() == Rule::Missing));
    assert_eq!(cached_len(0, &cache).unwrap(), 6);
    let negative = cached_len(-1, &cache).unwrap_err();
    assert_eq!(only_violation(&negative).rule(), Rule::Missing);
    assert!(
        error
            .to_string()
            .contains("`cache.kvs[block_idx]?.0`: is past the end"),
        "{error}"
    );
}

/// An attention step over candle-nn's `KvCache`: `P` is how many steps it holds before this one.
struct Step {
    kv_cache: candle_nn::kv_cache::KvCache,
}

impl Step {
    #[contract(
        k: f32[B, H, T, D],
        v: f32[B, H, T, D],
        mask: u8[T, P + T],
        self.kv_cache.current_seq_len() = P,
    )]
    fn attend(&mut self, k: &Tensor, v: &Tensor, mask: &Tensor) -> Result<usize> {
        let (k, _v) = self.kv_cache.append(k, v)?;
        let _ = mask;
        k.dim(2)
    }
}

#[test]
fn a_kv_cache_length_binds_a_dim() {
    let mut step = Step {
        kv_cache: candle_nn::kv_cache::KvCache::new(2, 16),
    };
    let k = zeros(&[1, 2, 3, 4], DType::F32);
    assert_eq!(step.attend(&k, &k, &zeros(&[3, 3], DType::U8)).unwrap(), 3);
    let one = zeros(&[1, 2, 1, 4], DType::F32);
    assert_eq!(
        step.attend(&one, &one, &zeros(&[1, 4], DType::U8)).unwrap(),
        4
    );
    // A mask of the first step's length, given at the third.
    let error = step
        .attend(&one, &one, &zeros(&[1, 4], DType::U8))
        .unwrap_err();
    assert!(error.to_string().contains("P = 4"), "{error}");
}

#[contract(items: [f32[E]; N], target: u32[N])]
fn collate(items: &[Tensor], target: &Tensor) -> Result<Tensor> {
    let _ = target;
    Tensor::stack(items, 0)
}

#[test]
fn sequences_bind_their_count_and_share_dims() {
    let items = vec![zeros(&[3], DType::F32), zeros(&[3], DType::F32)];
    let target = Tensor::new(&[0u32, 1], &Device::Cpu).unwrap();
    assert_eq!(collate(&items, &target).unwrap().dims(), [2, 3]);
    let ragged = vec![zeros(&[3], DType::F32), zeros(&[4], DType::F32)];
    let error = collate(&ragged, &target).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.element(), Some(1));
    assert!(
        error
            .to_string()
            .contains("`items[1]`: shape [4] does not match [E] = [3]"),
        "{error}"
    );
    let three = Tensor::new(&[0u32, 1, 2], &Device::Cpu).unwrap();
    let error = collate(&items, &three).unwrap_err();
    assert!(
        error.to_string().contains("N = 2 (the number of `items`)"),
        "{error}"
    );
}

#[contract(items: [u32[T] in 0..V; _], table: f32[V, D])]
fn sequence_values(items: Vec<Tensor>, table: &Tensor) -> Result<usize> {
    let _ = table;
    Ok(items.len())
}

#[test]
fn value_rules_apply_to_every_element() {
    let table = zeros(&[5, 2], DType::F32);
    let items = vec![
        Tensor::new(&[1u32, 2], &Device::Cpu).unwrap(),
        Tensor::new(&[4u32, 5], &Device::Cpu).unwrap(),
    ];
    let error = sequence_values(items, &table).unwrap_err();
    assert!(
        error.to_string().contains("items[1][1] = 5, expected 0..V"),
        "{error}"
    );
}

#[contract(logits: f32[N, C], return.0: f32[], return.1: u32[N])]
fn loss_and_predictions(logits: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((logits.sum_all()?, logits.argmax(1)?))
}

#[contract(logits: f32[N, C], return.0: f32[], return.1: u32[N])]
fn wrong_predictions(logits: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((logits.sum_all()?, logits.argmax_keepdim(1)?))
}

#[test]
fn tuple_returns_check_each_element() {
    let logits = zeros(&[3, 4], DType::F32);
    let (loss, predictions) = loss_and_predictions(&logits).unwrap();
    assert_eq!((loss.dims(), predictions.dims()), (&[][..], &[3][..]));
    let error = wrong_predictions(&logits).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(
        (violation.argument(), violation.rule()),
        ("return.1", Rule::Rank)
    );
}

#[contract(r#type: u32[N] in 0..2, type_ids: u32[N])]
fn raw_identifier(r#type: &Tensor, type_ids: &Tensor) -> Result<()> {
    let _ = (r#type, type_ids);
    Ok(())
}

#[test]
fn raw_identifiers_name_their_parameter() {
    let ok = Tensor::new(&[0u32, 1], &Device::Cpu).unwrap();
    raw_identifier(&ok, &ok).unwrap();
    let bad = Tensor::new(&[0u32, 2], &Device::Cpu).unwrap();
    let error = raw_identifier(&bad, &ok).unwrap_err();
    assert_eq!(only_violation(&error).argument(), "type");
}

struct Layer {
    linear: candle_nn::Linear,
}

impl Layer {
    #[contract(
        xs: f32[B, I],
        self.linear.weight(): f32[O, I],
        self.linear.bias()?: f32[O],
    )]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        candle_core::Module::forward(&self.linear, xs)
    }
}

#[test]
fn an_optional_step_after_a_method_returning_an_option() {
    let with_bias = |rows| Layer {
        linear: candle_nn::Linear::new(
            zeros(&[2, 3], DType::F32),
            Some(zeros(&[rows], DType::F32)),
        ),
    };
    let xs = zeros(&[4, 3], DType::F32);
    assert_eq!(with_bias(2).forward(&xs).unwrap().dims(), [4, 2]);
    let error = with_bias(5).forward(&xs).unwrap_err();
    assert_eq!(only_violation(&error).argument(), "self.linear.bias()?");
    let no_bias = Layer {
        linear: candle_nn::Linear::new(zeros(&[2, 3], DType::F32), None),
    };
    assert_eq!(no_bias.forward(&xs).unwrap().dims(), [4, 2]);
}

#[contract(x: f32[T], T > lim, T >= {floor} - 5)]
fn signed_relations(x: &Tensor, lim: i64, floor: usize) -> Result<()> {
    let _ = x;
    Ok(())
}

#[test]
fn relations_compare_signed_values() {
    signed_relations(&zeros(&[3], DType::F32), -1, 3).unwrap();
    let error = signed_relations(&zeros(&[3], DType::F32), 3, 3).unwrap_err();
    assert_eq!(only_violation(&error).argument(), "T > lim");
}

#[test]
fn a_braced_dim_mismatch_shows_its_value_once_and_no_batch_help() {
    let encoder = Encoder {
        cfg: Config {
            hidden_size: 4,
            max_position_embeddings: 10,
            pad_token_id: 1,
        },
    };
    let error = encoder.forward(&zeros(&[2, 8, 5], DType::F32)).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("dim 2 is 5 but {self.cfg.hidden_size} = 4"),
        "{text}"
    );
    assert!(!text.contains("= 4 with"), "{text}");
    assert!(!text.contains("batch sizes differ"), "{text}");
}

#[contract(items: [f32[E]; 2])]
fn pair(items: &[Tensor]) -> Result<usize> {
    Ok(items.len())
}

#[test]
fn a_sequence_of_the_wrong_length_says_how_many() {
    let error = pair(&[zeros(&[3], DType::F32)]).unwrap_err();
    let violation = only_violation(&error);
    assert_eq!(violation.rule(), Rule::Count);
    assert!(
        error
            .to_string()
            .contains("`items`: 1 elements, expected 2"),
        "{error}"
    );
}

mod sizes {
    pub const IMAGE_DIM: usize = 3;
}

// The body's own items are not in the contract's scope: `D` and `C` are dims here, as they
// would be in the signature.
#[contract(x: f32[N, D])]
fn body_const(x: &Tensor) -> Result<usize> {
    const D: usize = 3;
    Ok(x.dim(1)? + D)
}

#[contract(x: f32[N, D], return: f32[N, D])]
fn body_const_with_return(x: &Tensor) -> Result<Tensor> {
    const D: usize = 3;
    let _ = D;
    x.exp()
}

#[contract(x: f32[N, C])]
fn body_use(x: &Tensor) -> Result<usize> {
    use sizes::IMAGE_DIM as C;
    Ok(x.dim(1)? + C)
}

#[contract(x: f32[N, C], return: f32[N, C])]
async fn body_use_async(x: &Tensor) -> Result<Tensor> {
    use sizes::IMAGE_DIM as C;
    let _ = C;
    x.exp()
}

#[test]
fn a_constant_of_the_body_is_not_in_the_contracts_scope() {
    let x = zeros(&[2, 5], DType::F32);
    assert_eq!(body_const(&x).unwrap(), 8);
    assert_eq!(body_const_with_return(&x).unwrap().dims(), [2, 5]);
    assert_eq!(body_use(&x).unwrap(), 8);
    let out = futures_executor::block_on(body_use_async(&x)).unwrap();
    assert_eq!(out.dims(), [2, 5]);
    // The dims still bind and are checked: a wrong dtype is still caught.
    let error = body_const(&zeros(&[2, 5], DType::F64)).unwrap_err();
    assert_eq!(only_violation(&error).rule(), Rule::DType);
}

#[contract(x: f32[N, {k}], y: f32[{m}], z: f32[{n}])]
fn braced_dim_forms(
    x: &Tensor,
    y: &Tensor,
    z: &Tensor,
    k: &Option<usize>,
    m: &&usize,
    n: std::num::NonZeroUsize,
) -> Result<()> {
    let _ = (x, y, z, k, m, n);
    Ok(())
}

#[test]
fn a_braced_dim_takes_references_options_and_non_zero_sizes() {
    let nz = std::num::NonZeroUsize::new(2).unwrap();
    let (x, y, z) = (
        zeros(&[1, 3], DType::F32),
        zeros(&[4], DType::F32),
        zeros(&[2], DType::F32),
    );
    braced_dim_forms(&x, &y, &z, &Some(3), &&4, nz).unwrap();
    // `None` skips the dim it gives.
    braced_dim_forms(&zeros(&[1, 9], DType::F32), &y, &z, &None, &&4, nz).unwrap();
    let error = braced_dim_forms(&x, &y, &zeros(&[5], DType::F32), &Some(3), &&4, nz).unwrap_err();
    assert_eq!(only_violation(&error).argument(), "z");
}

/// Where a bound dim came from is a public type a user can match on.
#[test]
fn a_dims_source_is_nameable() {
    use candle_contracts::DimSource;
    let error = mnist_step(
        &zeros(&[2, 100], DType::F32),
        &Tensor::new(&[1u32, 9], &Device::Cpu).unwrap(),
    )
    .unwrap_err();
    let binding = only_violation(&error)
        .bound_dims()
        .iter()
        .find(|b| b.name == "IMAGE_DIM")
        .expect("IMAGE_DIM is among the bound dims");
    assert_eq!((binding.source, binding.value), (DimSource::Constant, 784));
}
