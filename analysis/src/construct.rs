//! What a struct's constructors give its fields: a candle-nn layer built by candle-nn's own
//! function (`linear(cfg.hidden_size, 3 * cfg.hidden_size, vb.pp("c_attn"))?`) has the weight
//! that function asks its `VarBuilder` for, and a `usize` field set from a config
//! (`n_head: cfg.num_attention_heads`) has that size. Sizes are expressions over literals,
//! named constants, the constructor's own `let`s and the fields of its config parameters,
//! which become symbols named by their path (`cfg.hidden_size`): within one construction,
//! the one value the config held.
//!
//! Certain-or-silent: a field is inferred only where the analysis sees every construction of
//! the struct (the whole crate; the macro its own file where it cannot read its crate), every
//! one reads, and every one gives it the same sizes, and nothing the analysis sees may change the field afterwards.
//! Each bail-out below says which correct program it keeps silent.

use std::collections::{BTreeMap, BTreeSet};

use candle_contracts_shapes::Dim;
use candle_contracts_shapes::dim::Factor;
use candle_contracts_shapes::rules::layer::{ConvGeometry, Layer};
use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit::Visit;

use crate::contract::syntax::ACTIVATION_VARIANTS;
use crate::index::{
    DIVERGING_MACROS, EXPRESSION_MACROS, FnDef, FnId, Index, ModId, Resolved, generic_names,
    name_of, token_idents as idents,
};

/// What every construction of a struct gives one of its fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldFact {
    /// A candle-nn layer, with the dims of its weight (the table of an `Embedding`), as a
    /// layer clause states them (`Linear[IN -> OUT]` is a weight `[OUT, IN]`), and a
    /// convolution's geometry where its config is known.
    Layer(Layer, Vec<Dim>, Option<ConvGeometry>),
    /// A `usize` field, with its size.
    Size(Dim),
    /// A candle-nn `Activation` of this variant (`Activation::Relu`): only `Swiglu` changes
    /// the shape of what it is applied to.
    Activation(String),
    /// A config struct of the crate (the key), the constructor's parameter of that name
    /// stored whole (`config: cfg.clone()`): its `usize` fields are the sizes
    /// `cfg.hidden_size` its layers were built with.
    Config(String, String),
    /// A candle `Tensor` a `VarBuilder` gave for the shape asked (`vb.get((1, n + 1, e),
    /// "position_embeddings")?`): every backend of candle-nn checks the shape it loads.
    Tensor(Vec<Dim>),
    /// A `bool` field given a `bool` field of a config parameter (`use_flash_attn:
    /// cfg.use_flash_attn`), by that path: the config is its caller's, so each value is some
    /// construction's.
    Flag(String),
    /// A struct of the crate (the key) built by a call of its constructor
    /// (`PatchEmbeddings::new(cfg, vb.pp("patch_embeddings"))?`): what that construction
    /// gives its fields, its config's sizes named by this constructor's parameters.
    Nested(String, BTreeMap<String, FieldFact>),
    /// An enum of the crate (the key) whose variants hold layers (`Proj::Conv2d(conv2d(..)?)`
    /// or `Proj::Linear(linear(..)?)`, by a branch): for each variant a construction builds,
    /// the [`FieldFact::Layer`] it holds. A variant no construction builds has none.
    Variants(String, BTreeMap<String, FieldFact>),
    /// One of candle-nn's kv caches (its type's path, `candle_nn::kv_cache::KvCache`), with the
    /// dim its constructor gave it to grow on (`KvCache::new(2, max)`, `ConcatKvCache::new(2)`):
    /// the cache's own field, which none of its methods changes.
    KvCache(String, Dim),
    /// `Some(layer)` of an `Option` field (BERT's `position_embeddings:
    /// Some(position_embeddings)`): where the field is `Some`, it holds that layer.
    Optional(Box<FieldFact>),
}

/// candle-nn 0.11's kv caches whose `new(dim, ..)` takes the dim they grow on first.
pub const KV_CACHES: &[&str] = &[
    "candle_nn::kv_cache::KvCache",
    "candle_nn::kv_cache::ConcatKvCache",
    "candle_nn::kv_cache::RotatingKvCache",
];

/// Derives a struct may carry that construct nothing (`Clone` copies a value that was
/// constructed where the analysis sees it). Any other derive or attribute macro
/// (`Default`, `Deserialize`) may construct the struct with other sizes.
const INERT_DERIVES: &[&str] = &[
    "Clone",
    "Copy",
    "Debug",
    "PartialEq",
    "Eq",
    "Hash",
    "PartialOrd",
    "Ord",
];

/// Attributes on a struct that construct nothing.
const INERT_ATTRIBUTES: &[&str] = &[
    "doc",
    "allow",
    "warn",
    "deny",
    "forbid",
    "expect",
    "must_use",
    "repr",
    "non_exhaustive",
    "contract",
];

/// Methods that never change their receiver: called on a field (`self.c_attn.forward(..)`),
/// they leave it as constructed. Any other method may take `&mut self` (through a trait of
/// the user's) and change it.
const READING_METHODS: &[&str] = &[
    "forward",
    "forward_t",
    "weight",
    "bias",
    "embeddings",
    "hidden_size",
    "clone",
    "to_string",
    "eps",
    "iter",
    "len",
    "is_empty",
    "min",
    "max",
    "pow",
    "div_ceil",
    "saturating_sub",
    "checked_div",
    "checked_sub",
    // `Option`'s own, and `AsRef`'s (`&self` in std and candle alike).
    "as_ref",
    "is_some",
    "is_none",
    // `Option`'s and `Result`'s, taking `self` by value (`cfg.head_dim.unwrap_or(..)`).
    "unwrap_or",
    "unwrap_or_default",
];

/// Inherent methods of candle-nn 0.11's kv caches that change what a cache holds, never the dim
/// it grows on (a private field). On a field of a kv cache's type, such a call is candle's own:
/// an inherent method is found before any trait's `&mut self` one of the name.
const KV_CACHE_METHODS: &[&str] = &["append", "reset", "current_seq_len"];

/// candle-nn 0.11's layers' own methods beside [`READING_METHODS`], by the layer's type name,
/// each taking `&self` (`RmsNorm::forward_diff`, `Conv2d::config`, `BatchNorm::running_mean`):
/// on a field of that layer's type they change nothing (a trait's `&mut self` method of the
/// name comes after them). On another type (`Linear` has no `config`) a trait's may be called.
const LAYER_METHODS: &[(&str, &[&str])] = &[
    ("RmsNorm", &["forward_diff"]),
    ("LayerNorm", &["remove_mean"]),
    ("Conv1d", &["config"]),
    ("Conv2d", &["config"]),
    ("ConvTranspose1d", &["config"]),
    ("ConvTranspose2d", &["config"]),
    (
        "BatchNorm",
        &[
            "running_mean",
            "running_var",
            "weight_and_bias",
            "momentum",
            "forward_train",
        ],
    ),
];

/// Whether `method` on a candle-nn layer of type `layer` (`BatchNorm`) is one of its own
/// inherent `&self` methods ([`LAYER_METHODS`]): found before any trait's, changing nothing.
pub(crate) fn is_own_layer_method(layer: &str, method: &str) -> bool {
    LAYER_METHODS
        .iter()
        .any(|(name, methods)| *name == layer && methods.contains(&method))
}

/// Whether `method` is one of [`LAYER_METHODS`] of any layer.
fn is_layer_method(method: &str) -> bool {
    LAYER_METHODS
        .iter()
        .any(|(_, methods)| methods.contains(&method))
}
/// Methods of candle-core 0.11's `impl Tensor` that take `&self` (none changes the tensor's
/// shape; `slice_set`, `zero_set` and the like write values in place, and are left out): on a
/// `Tensor` field, such a call finds candle's method before any `&mut self` one of a trait.
const CANDLE_TENSOR_METHODS: &[&str] = &[
    "abs",
    "add",
    "affine",
    "apply",
    "apply_t",
    "argmax",
    "argmax_keepdim",
    "argmin",
    "argmin_keepdim",
    "avg_pool2d",
    "avg_pool2d_with_stride",
    "broadcast_add",
    "broadcast_as",
    "broadcast_div",
    "broadcast_eq",
    "broadcast_ge",
    "broadcast_gt",
    "broadcast_le",
    "broadcast_left",
    "broadcast_lt",
    "broadcast_matmul",
    "broadcast_maximum",
    "broadcast_minimum",
    "broadcast_mul",
    "broadcast_ne",
    "broadcast_pow",
    "broadcast_sub",
    "ceil",
    "chunk",
    "clamp",
    "cmp",
    "contiguous",
    "copy",
    "cos",
    "cumsum",
    "detach",
    "device",
    "dim",
    "dims",
    "div",
    "dot",
    "dtype",
    "elem_count",
    "elu",
    "embedding",
    "eq",
    "erf",
    "exp",
    "expand",
    "flatten",
    "flatten_all",
    "flatten_from",
    "flatten_to",
    "flip",
    "floor",
    "force_contiguous",
    "gather",
    "ge",
    "gelu",
    "gelu_erf",
    "get",
    "get_on_dim",
    "gt",
    "index_add",
    "index_select",
    "interpolate1d",
    "interpolate2d",
    "is_contiguous",
    "layout",
    "le",
    "log",
    "log_sum_exp",
    "lt",
    "matmul",
    "max",
    "max_all",
    "max_keepdim",
    "max_pool2d",
    "max_pool2d_with_stride",
    "maximum",
    "mean",
    "mean_all",
    "mean_keepdim",
    "min",
    "min_all",
    "min_keepdim",
    "minimum",
    "mul",
    "mv",
    "narrow",
    "ne",
    "neg",
    "norm",
    "ones_like",
    "pad_with_same",
    "pad_with_zeros",
    "permute",
    "pow",
    "powf",
    "rank",
    "recip",
    "relu",
    "repeat",
    "reshape",
    "roll",
    "round",
    "round_to",
    "scatter",
    "scatter_add",
    "sign",
    "silu",
    "sin",
    "slice_scatter",
    "slice_scatter0",
    "sqr",
    "sqrt",
    "squeeze",
    "stride",
    "sub",
    "sum",
    "sum_all",
    "sum_keepdim",
    "t",
    "tanh",
    "to_device",
    "to_dtype",
    "to_scalar",
    "to_vec0",
    "to_vec1",
    "to_vec2",
    "to_vec3",
    "transpose",
    "unfold",
    "unsqueeze",
    "upsample_nearest1d",
    "upsample_nearest2d",
    "var",
    "var_keepdim",
    "where_cond",
    "zeros_like",
];

/// A candle-nn function that builds a layer.
pub(crate) struct LayerFunction {
    /// The function (`conv2d_no_bias`).
    pub(crate) name: &'static str,
    /// Its module (candle-nn's root re-exports each).
    pub(crate) home: &'static str,
    /// The layer type's name (`Conv2d`).
    pub(crate) ty: &'static str,
    /// Where the construction scan reads the weight it builds: the form of its arguments and
    /// how many it takes.
    read: Option<(&'static str, usize)>,
}

/// candle-nn's functions that build a layer.
pub(crate) const LAYER_FUNCTIONS: &[LayerFunction] = &[
    LayerFunction {
        name: "linear",
        home: "linear",
        ty: "Linear",
        read: Some(("linear", 3)),
    },
    LayerFunction {
        name: "linear_no_bias",
        home: "linear",
        ty: "Linear",
        read: Some(("linear", 3)),
    },
    LayerFunction {
        name: "linear_b",
        home: "linear",
        ty: "Linear",
        read: Some(("linear_b", 4)),
    },
    LayerFunction {
        name: "embedding",
        home: "embedding",
        ty: "Embedding",
        read: Some(("embedding", 3)),
    },
    LayerFunction {
        name: "layer_norm",
        home: "layer_norm",
        ty: "LayerNorm",
        read: Some(("norm", 3)),
    },
    LayerFunction {
        name: "layer_norm_no_bias",
        home: "layer_norm",
        ty: "LayerNorm",
        read: Some(("norm", 3)),
    },
    LayerFunction {
        name: "rms_norm",
        home: "layer_norm",
        ty: "RmsNorm",
        read: Some(("norm", 3)),
    },
    LayerFunction {
        name: "conv1d",
        home: "conv",
        ty: "Conv1d",
        read: Some(("conv1d", 5)),
    },
    LayerFunction {
        name: "conv1d_no_bias",
        home: "conv",
        ty: "Conv1d",
        read: Some(("conv1d", 5)),
    },
    LayerFunction {
        name: "conv2d",
        home: "conv",
        ty: "Conv2d",
        read: Some(("conv2d", 5)),
    },
    LayerFunction {
        name: "conv2d_no_bias",
        home: "conv",
        ty: "Conv2d",
        read: Some(("conv2d", 5)),
    },
    LayerFunction {
        name: "group_norm",
        home: "group_norm",
        ty: "GroupNorm",
        read: Some(("group_norm", 4)),
    },
    LayerFunction {
        name: "conv_transpose1d",
        home: "conv",
        ty: "ConvTranspose1d",
        read: None,
    },
    LayerFunction {
        name: "conv_transpose1d_no_bias",
        home: "conv",
        ty: "ConvTranspose1d",
        read: None,
    },
    LayerFunction {
        name: "conv_transpose2d",
        home: "conv",
        ty: "ConvTranspose2d",
        read: None,
    },
    LayerFunction {
        name: "conv_transpose2d_no_bias",
        home: "conv",
        ty: "ConvTranspose2d",
        read: None,
    },
    LayerFunction {
        name: "batch_norm",
        home: "batch_norm",
        ty: "BatchNorm",
        read: None,
    },
];

/// The entry of [`LAYER_FUNCTIONS`] a path names (`candle_nn::conv2d`,
/// `candle_nn::conv::conv2d`): `candle_nn::ops::rms_norm` normalises a tensor, so only the
/// layer's own module (or the root) counts.
pub(crate) fn layer_function(path: &[String]) -> Option<&'static LayerFunction> {
    let (module, name) = match path {
        [first, name] if first == "candle_nn" => (None, name),
        [first, module, name] if first == "candle_nn" => (Some(module), name),
        _ => return None,
    };
    LAYER_FUNCTIONS
        .iter()
        .find(|f| f.name == name && module.is_none_or(|m| m == f.home))
}

/// The layer a candle-nn constructor builds whose weight the scan reads, with the form of its
/// arguments and how many it takes.
fn layer_constructor(path: &[String]) -> Option<(&'static str, Layer, usize)> {
    let function = layer_function(path)?;
    let (form, arity) = function.read?;
    let layer = Layer::from_path(&format!("candle_nn::{}::{}", function.home, function.ty))?;
    Some((form, layer, arity))
}

/// The candle-nn layers `def`'s top-level `let`s build, read as a constructor's are
/// (`let conv = conv2d_no_bias(cin, cout, 3, config, vb.pp("conv"))?;`, or a crate helper
/// that returns one): the layer, its weight's dims and a
/// convolution's geometry, by the statement's place in the body. A `usize` parameter's size
/// is named as the walk names it in the function's own walk (`{cin}`); a size of a `let` the
/// reading cannot follow is unknown.
pub(crate) fn let_layers(index: &Index, def: &FnDef) -> BTreeMap<usize, FieldFact> {
    let mut ctor = Ctor::prepare(index, def, None, 0);
    let mut layers = BTreeMap::new();
    for (at, stmt) in def.block.stmts.iter().enumerate() {
        ctor.stmt(stmt);
        let syn::Stmt::Local(local) = stmt else {
            continue;
        };
        let Some(ident) = strip_type(&local.pat) else {
            continue;
        };
        if let Some(Local::Layer(layer, dims, geometry)) = ctor.locals.get(&name_of(ident)) {
            let mut walk_names = |dim: &Dim| {
                dim.substitute(&mut |factor| match factor {
                    Factor::Symbol(name) if name.ends_with(')') => Some(
                        name.strip_prefix(&format!("{}(", def.name))
                            .and_then(|rest| rest.strip_suffix(')'))
                            .filter(|param| !param.contains(' ') && !param.contains('#'))
                            .map_or(Dim::Unknown, Dim::braced),
                    ),
                    Factor::Symbol(name) => Some(Dim::symbol(name.clone())),
                    Factor::Braced(text) => Some(Dim::braced(text)),
                    _ => None,
                })
            };
            let dims = dims.iter().map(&mut walk_names).collect();
            let geometry = geometry.as_ref().map(|g| ConvGeometry {
                padding: walk_names(&g.padding),
                stride: walk_names(&g.stride),
                dilation: walk_names(&g.dilation),
                groups: walk_names(&g.groups),
            });
            layers.insert(at, FieldFact::Layer(*layer, dims, geometry));
        }
    }
    layers
}

/// What every construction of the struct `key` gives its fields, for the fields where all
/// agree and nothing may change them after; empty where any construction is out of sight.
pub fn constructed_fields(index: &Index, key: &str) -> BTreeMap<String, FieldFact> {
    constructions(index, key).agreed
}

/// The fields of the struct `key` that hold what a construction gave them for as long as the
/// value lives: not `pub`, changed by no code in sight after it is built, every construction
/// in sight (the conditions of [`constructed_fields`], whatever the constructions give).
fn stable_fields(index: &Index, key: &str) -> BTreeSet<String> {
    constructions(index, key).stable
}

/// What the constructions of a struct leave certain.
#[derive(Clone, Default)]
struct Constructions {
    /// Each field's fact every construction agrees on (see [`constructed_fields`]).
    agreed: BTreeMap<String, FieldFact>,
    /// See [`stable_fields`].
    stable: BTreeSet<String>,
}

fn constructions(index: &Index, key: &str) -> Constructions {
    let cache_key = format!("constructed_fields {key}");
    if let Some(known) = index.derived.borrow().get(&cache_key)
        && let Some(fields) = known.downcast_ref::<Constructions>()
    {
        return fields.clone();
    }
    // A constructor that builds a value of its own type (a tree of `Node`s) asks again while
    // this scan runs: nothing is known of it then.
    index
        .derived
        .borrow_mut()
        .insert(cache_key.clone(), Box::new(Constructions::default()));
    // The scan builds token streams from the syntax it reads (the macro's file, where so).
    let fields = {
        let _file_tokens = crate::index::FileTokens::enter(index);
        scan_constructions(index, key)
    };
    index
        .derived
        .borrow_mut()
        .insert(cache_key, Box::new(fields.clone()));
    fields
}

/// [`constructed_fields`], scanning every construction of the struct in the index.
fn scan_constructions(index: &Index, key: &str) -> Constructions {
    let Some((module, item)) = index.struct_item(key) else {
        return Constructions::default();
    };
    // The layers' and tensors' shapes are the ones asked of the `VarBuilder`: only its
    // backend checks them.
    if index.var_backend_in_sight() {
        return Constructions::default();
    }
    if !inert_attributes(&item.attrs) || !constructions_in_sight(index, module, item) {
        return Constructions::default();
    }
    let name = name_of(&item.ident);
    let mut scan = Scan {
        key,
        name: &name,
        sites: Vec::new(),
        changed: BTreeSet::new(),
        out_of_sight: false,
        changing_methods: BTreeSet::new(),
        inherent_changing: BTreeSet::new(),
        inherent_owners: BTreeMap::new(),
        deref_types: BTreeSet::new(),
        aliases: BTreeSet::new(),
        crate_fields: BTreeMap::new(),
        tensor_fields: item
            .fields
            .iter()
            .filter(|f| is_tensor_type(index, module, &f.ty))
            .filter_map(|f| Some(name_of(f.ident.as_ref()?)))
            .collect(),
        kv_cache_fields: item
            .fields
            .iter()
            .filter(|f| is_kv_cache(index, module, &f.ty))
            .filter_map(|f| Some(name_of(f.ident.as_ref()?)))
            .collect(),
        kv_cache_enum_fields: item
            .fields
            .iter()
            .filter(|f| is_kv_cache_enum(index, module, &f.ty))
            .filter_map(|f| Some(name_of(f.ident.as_ref()?)))
            .collect(),
        layer_fields: item
            .fields
            .iter()
            .filter(|f| field_layer(index, module, &f.ty).is_some())
            .filter_map(|f| {
                let syn::Type::Path(p) = &f.ty else {
                    return None;
                };
                let Resolved::External(path) = index.resolve(module, &path_segments(&p.path))
                else {
                    return None;
                };
                Some((name_of(f.ident.as_ref()?), path.last()?.clone()))
            })
            .collect(),
        crate_field_readers: BTreeMap::new(),
        off_type: Vec::new(),
        reading_calls: Vec::new(),
        macro_reading_calls: Vec::new(),
    };
    for field in &item.fields {
        let (Some(ident), syn::Type::Path(p)) = (&field.ident, &field.ty) else {
            continue;
        };
        if p.qself.is_some() {
            continue;
        }
        let Resolved::Type(ty_key) = index.resolve(module, &path_segments(&p.path)) else {
            continue;
        };
        let (Some((_, ty_item)), Some(last)) = (index.struct_item(&ty_key), p.path.segments.last())
        else {
            continue;
        };
        // A struct with unnamed fields, or generic: its places are not told apart.
        if !matches!(ty_item.fields, syn::Fields::Named(_)) || !ty_item.generics.params.is_empty() {
            continue;
        }
        let names = ty_item
            .fields
            .iter()
            .filter_map(|f| Some(name_of(f.ident.as_ref()?)))
            .collect();
        scan.crate_fields
            .insert(name_of(ident), (name_of(&last.ident), names));
        // Its inherent `&self` methods, visible crate-wide (a private one is passed over
        // outside its module, see `FnDef::private_to`).
        let readers = index
            .inherent_methods(&ty_key)
            .iter()
            .map(|&id| &index.fns[id])
            .filter(|f| !f.conditional && f.private_to.is_none() && takes_ref_self(f.sig))
            .map(|f| f.name.clone())
            .collect();
        scan.crate_field_readers.insert(name_of(ident), readers);
    }
    // Only the files of a crate that can name the struct may build or change it; every file
    // may give a method name `&mut self` (a blanket `impl` of a library's trait).
    let using: Vec<*const syn::File> = index
        .sources_using(module)
        .into_iter()
        .map(|f| f as *const syn::File)
        .collect();
    let logs = file_logs(index);
    for (file, log) in index.sources().iter().zip(logs.iter()) {
        replay(&mut scan, log, using.contains(&(*file as *const syn::File)));
    }
    // A reading method's name that a method in sight gives `&mut self` may change the field.
    let calls = std::mem::take(&mut scan.reading_calls);
    // A field of another crate's type (`wi: Linear`, `act: Activation`, `n: usize`) has no
    // method of an inherent `impl` of the crate's: such a method of the name changes only
    // what holds the field.
    let external_fields: BTreeSet<String> = item
        .fields
        .iter()
        .filter(|f| {
            is_usize(&f.ty) || is_bool(&f.ty) || field_layer(index, module, &f.ty).is_some()
        })
        .filter_map(|f| Some(name_of(f.ident.as_ref()?)))
        .collect();
    // A field of one of the crate's structs (`patch_embeddings: PatchEmbeddings`) has only
    // its own type's inherent methods: one of another type changes nothing of it.
    let crate_fields: BTreeMap<String, String> = item
        .fields
        .iter()
        .filter_map(|f| {
            let syn::Type::Path(p) = &f.ty else {
                return None;
            };
            if p.qself.is_some()
                || !matches!(
                    index.resolve(module, &path_segments(&p.path)),
                    Resolved::Type(_)
                )
            {
                return None;
            }
            Some((
                name_of(f.ident.as_ref()?),
                name_of(&p.path.segments.last()?.ident),
            ))
        })
        .collect();
    // Read alone (the macro's one file), another file may give a field's type a `&mut self`
    // method of a reading name through a trait in scope: only where every trait that may be in
    // scope is in sight are reading calls reading.
    let reading_certain = (index.whole_crate(module) && index.external_traits_known(module))
        || index.crate_traits_in_sight(module);
    let aliases = scan.aliases.clone();
    let deref_types = scan.deref_types.clone();
    for (method, receiver) in calls {
        if !reading_certain || scan.changing_methods.contains(&method) {
            changes_place(&mut scan, &place_fields(receiver), None);
        } else if scan.inherent_changing.contains(&method) {
            let owners = scan.inherent_owners.get(&method).cloned();
            let not_its_own = |ty: &String| {
                owners.as_ref().is_some_and(|owners| {
                    !owners.contains(ty) && !owners.contains("*") && owners.is_disjoint(&aliases)
                }) && !deref_types.contains(ty)
                    && !deref_types.contains("*")
            };
            match strip(receiver) {
                syn::Expr::Field(f)
                    if matches!(&f.member, syn::Member::Named(field)
                        if external_fields.contains(&name_of(field))) =>
                {
                    changes_place(&mut scan, &place_fields(&f.base), None);
                }
                syn::Expr::Field(f)
                    if matches!(&f.member, syn::Member::Named(field)
                        if crate_fields.get(&name_of(field)).is_some_and(not_its_own)) => {}
                // `model.embeddings.patch_embeddings.forward(..)`: where the struct's field
                // starts the path, the type at its end, through the fields' declared types.
                receiver
                    if nested_place_type(index, module, item, receiver)
                        .is_some_and(|ty| not_its_own(&ty)) => {}
                _ => changes_place(&mut scan, &place_fields(receiver), None),
            }
        }
    }
    // In tokens only the receiver's field name is known: a trait's method of the name taking
    // `&mut self` may be any type's; an inherent one is its owner's, so a receiver field of
    // another of the crate's types, or of another crate's type, keeps its value.
    for (method, field, receiver) in std::mem::take(&mut scan.macro_reading_calls) {
        let changes = if !reading_certain || scan.changing_methods.contains(&method) {
            true
        } else if scan.inherent_changing.contains(&method) {
            let owners = scan.inherent_owners.get(&method);
            let own_type = |ty: &String| {
                owners.is_none_or(|owners| {
                    owners.contains(ty) || owners.contains("*") || !owners.is_disjoint(&aliases)
                }) || deref_types.contains(ty)
                    || deref_types.contains("*")
            };
            match crate_fields.get(&field) {
                _ if !receiver => true,
                Some(ty) => own_type(ty),
                None => !external_fields.contains(&field),
            }
        } else {
            false
        };
        if changes {
            scan.changed.insert(field);
        }
    }
    for (field, ty) in std::mem::take(&mut scan.off_type) {
        if scan.deref_types.contains(&ty) || scan.deref_types.contains("*") {
            scan.changed.insert(field);
        }
    }
    if scan.out_of_sight {
        return Constructions::default();
    }
    let mut agreed: Option<BTreeMap<String, Option<FieldFact>>> = None;
    let mut any_site = false;
    for (fn_id, literal) in scan.sites {
        let def = &index.fns[fn_id];
        // A literal of another type of the same name is not a construction of this one; a
        // path that resolves to nothing known may be this type.
        let this = match path_segments(&literal.path).as_slice() {
            [only] if only == "Self" => def.owner.as_deref() == Some(key),
            // `use crate::Model;` in the body (or an item of the name) hides the module's.
            [first, ..] if body_declares(def.block, first) => return Constructions::default(),
            segments => match index.resolve(def.module, segments) {
                Resolved::Type(found) => found == key,
                _ => return Constructions::default(),
            },
        };
        if !this {
            continue;
        }
        // Only a construction the function gives back as its value is read: one in a
        // branch, a loop or a closure may run with other sizes beside it.
        if literal.rest.is_some() || literal.qself.is_some() || !is_tail(def.block, literal) {
            return Constructions::default();
        }
        any_site = true;
        let mut ctor = Ctor::new(index, def);
        // A field under `cfg` (two of one name, one compiled in) gives nothing.
        let mut facts: BTreeMap<String, Option<FieldFact>> = BTreeMap::new();
        for field in &literal.fields {
            let syn::Member::Named(ident) = &field.member else {
                continue;
            };
            let name = name_of(ident);
            let fact = match inert_attributes(&field.attrs) && !facts.contains_key(&name) {
                true => ctor.field(&field.expr),
                false => None,
            };
            facts.insert(name, fact);
        }
        agreed = Some(match agreed {
            None => facts,
            Some(before) => before
                .into_iter()
                .map(|(field, fact)| {
                    let same = facts.get(&field).cloned().flatten();
                    let kept = match (fact, same) {
                        (Some(a), Some(b)) if a == b => Some(a),
                        // Two convolutions of one weight and different strides: the weight.
                        (
                            Some(FieldFact::Layer(layer, dims, _)),
                            Some(FieldFact::Layer(other, other_dims, _)),
                        ) if layer == other && dims == other_dims => {
                            Some(FieldFact::Layer(layer, dims, None))
                        }
                        _ => None,
                    };
                    (field, kept)
                })
                .collect(),
        });
    }
    if !any_site {
        return Constructions::default();
    }
    let stable: BTreeSet<String> = item
        .fields
        .iter()
        .filter(|f| !matches!(f.vis, syn::Visibility::Public(_)))
        .filter_map(|f| Some(name_of(f.ident.as_ref()?)))
        .filter(|field| !scan.changed.contains(field))
        .collect();
    let agreed = agreed
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(field, fact)| {
            let fact = fact?;
            // Another crate may assign a `pub` field; a field changed anywhere in sight no
            // longer holds what its constructor gave it.
            if !stable.contains(&field) {
                return None;
            }
            if matches!(fact, FieldFact::Flag(_)) && !flag_read_only_to_branch(index, key, &field) {
                return None;
            }
            fact_fits(index, module, item, &field, &fact).then_some((field, fact))
        })
        .collect();
    Constructions { agreed, stable }
}

/// Whether `fact` is one the declared type of the struct's `field` can hold (a layer fact for
/// a field of that layer's type, a size for a `usize`).
fn fact_fits(
    index: &Index,
    module: ModId,
    item: &syn::ItemStruct,
    field: &str,
    fact: &FieldFact,
) -> bool {
    let Some(declared) = item
        .fields
        .iter()
        .find(|f| f.ident.as_ref().is_some_and(|i| name_of(i) == field))
    else {
        return false;
    };
    match fact {
        FieldFact::Size(_) => is_usize(&declared.ty),
        FieldFact::Flag(_) => is_bool(&declared.ty),
        FieldFact::Activation(_) => {
            field_layer(index, module, &declared.ty) == Some(Layer::Activation)
        }
        FieldFact::Config(_, key) => match &declared.ty {
            syn::Type::Path(p) if p.qself.is_none() => {
                matches!(index.resolve(module, &path_segments(&p.path)),
                    Resolved::Type(found) if found == *key)
            }
            _ => false,
        },
        FieldFact::Layer(layer, _, _) => field_layer(index, module, &declared.ty) == Some(*layer),
        FieldFact::Optional(held) => {
            matches!((&**held, option_inner(index, module, &declared.ty)),
                (FieldFact::Layer(layer, _, _), Some(inner))
                    if field_layer(index, module, inner) == Some(*layer))
        }
        FieldFact::Tensor(_) => is_tensor_type(index, module, &declared.ty),
        FieldFact::KvCache(path, _) => match &declared.ty {
            syn::Type::Path(p) if p.qself.is_none() => {
                matches!(index.resolve(module, &path_segments(&p.path)),
                    Resolved::External(found) if found.join("::") == *path)
            }
            _ => false,
        },
        // A `Clone` derived on the struct clones the enum by the enum's own `Clone`,
        // which may build another layer where it is not derived too.
        FieldFact::Variants(key, _)
            if derives(&item.attrs, "Clone")
                && !index
                    .enum_item(key)
                    .is_some_and(|e| derives(&e.attrs, "Clone")) =>
        {
            false
        }
        FieldFact::Nested(key, _) | FieldFact::Variants(key, _) => match &declared.ty {
            syn::Type::Path(p) if p.qself.is_none() => {
                matches!(index.resolve(module, &path_segments(&p.path)),
                    Resolved::Type(found) if found == *key)
            }
            _ => false,
        },
    }
}

/// Whether the declared type is `usize` (a size as candle takes it).
pub fn is_usize(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident("usize"))
}

/// Whether the declared type is one of candle-nn's kv caches ([`KV_CACHES`]).
fn is_kv_cache(index: &Index, module: ModId, ty: &syn::Type) -> bool {
    let syn::Type::Path(p) = ty else { return false };
    p.qself.is_none()
        && matches!(index.resolve(module, &path_segments(&p.path)),
            Resolved::External(path) if KV_CACHES.contains(&path.join("::").as_str()))
}

/// The names of the inherent `&self` methods of the config type `key` that cannot read its
/// flag `flag`: each the only method of its name on the type (no trait's beside it), not
/// under `cfg`, whose body names `self` only to read one of its other fields
/// (`fn head_dim(&self) -> usize { self.hidden_size / self.num_attention_heads }`) and
/// holds no macro naming `self` or the flag.
fn flag_free_methods(index: &Index, key: &str, flag: &str) -> BTreeSet<String> {
    struct SelfUse<'f> {
        flag: &'f str,
        free: &'f BTreeSet<String>,
        other_use: bool,
    }
    impl<'ast> Visit<'ast> for SelfUse<'_> {
        // `self.head_dim()` of a method of the set.
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            let on_self = matches!(strip(&m.receiver), syn::Expr::Path(p)
                if p.qself.is_none() && p.path.is_ident("self"));
            if on_self && self.free.contains(&name_of(&m.method)) {
                m.args.iter().for_each(|arg| self.visit_expr(arg));
                return;
            }
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_field(&mut self, f: &'ast syn::ExprField) {
            let on_self = matches!(strip(&f.base), syn::Expr::Path(p)
                if p.qself.is_none() && p.path.is_ident("self"));
            match (&f.member, on_self) {
                (syn::Member::Named(field), true) => self.other_use |= field == self.flag,
                (syn::Member::Unnamed(_), true) => self.other_use = true,
                _ => syn::visit::visit_expr_field(self, f),
            }
        }
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            self.other_use |= p.path.is_ident("self") || p.path.is_ident("Self");
        }
        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            let mut names = BTreeSet::new();
            idents(&mac.tokens, &mut names);
            self.other_use |= names.contains("self") || names.contains(self.flag);
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {
            self.other_use = true;
        }
    }
    let candidates: Vec<&FnDef> = index
        .inherent_methods(key)
        .into_iter()
        .map(|id| &index.fns[id])
        .filter(|f| {
            takes_ref_self(f.sig)
                && !f.conditional
                && index.methods(key, &f.name).len() == 1
                && index.trait_impl_methods(key, &f.name).is_empty()
                && !index.may_be_foreign_method(&f.name)
                // A trait's default method of the name (`impl HeadDim for Config {}`), one
                // taking `self` by value, comes before the inherent `&self` one.
                && !index.is_provided_method(&f.name)
                && !index.may_be_any_types_method(&f.name)
        })
        .collect();
    // Each may call the others (`rotary_ndims` calls `head_dim`): drop the ones that read
    // anything else until none is left to drop.
    let mut free: BTreeSet<String> = candidates.iter().map(|f| f.name.clone()).collect();
    loop {
        let reads_else = candidates
            .iter()
            .filter(|f| free.contains(&f.name))
            .find(|f| {
                let mut uses = SelfUse {
                    flag,
                    free: &free,
                    other_use: false,
                };
                uses.visit_block(f.block);
                uses.other_use
            })
            .map(|f| f.name.clone());
        match reads_else {
            Some(name) => {
                free.remove(&name);
            }
            None => return free,
        }
    }
}

/// Whether `def` is a setter of the flag `flag` that tests nothing: its body the one
/// statement `self.flag = value` of its own parameter `value`, and no code in sight calls a
/// method or function of its name (the crate's own call may fix the value:
/// `cfg.set_use_flash_attn(false)` in a `pub` constructor).
fn plain_setter(index: &Index, def: &FnDef, flag: &str) -> bool {
    let [syn::Stmt::Expr(syn::Expr::Assign(assign), _)] = def.block.stmts.as_slice() else {
        return false;
    };
    let sets_flag = matches!(strip(&assign.left), syn::Expr::Field(f)
        if matches!(&f.member, syn::Member::Named(ident) if name_of(ident) == flag)
            && matches!(strip(&f.base), syn::Expr::Path(p)
                if p.qself.is_none() && p.path.is_ident("self")));
    let own_parameter = single_ident(&assign.right).is_some_and(|value| {
        def.sig.inputs.iter().any(|input| {
            matches!(input, syn::FnArg::Typed(typed)
            if matches!(&*typed.pat, syn::Pat::Ident(p) if name_of(&p.ident) == value))
        })
    });
    if !sets_flag || !own_parameter || !callable_by_other_crates(index, def) {
        return false;
    }
    // Named anywhere in the crates read but its own definition: a call, a path, a macro.
    struct Named<'n> {
        name: &'n str,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Named<'_> {
        fn visit_ident(&mut self, ident: &'ast proc_macro2::Ident) {
            self.found |= name_of(ident) == self.name;
        }
        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            self.found |= mac.tokens.to_string().contains(self.name);
            syn::visit::visit_macro(self, mac);
        }
    }
    let mut named = Named {
        name: &def.name,
        found: false,
    };
    for other in &index.fns {
        if !std::ptr::eq(other, def) {
            named.visit_block(other.block);
        }
    }
    !named.found
}

/// Whether `def`'s body uses the config named `config` (a parameter, or `self` in the
/// config's own method) other than by its fields but `flag`, a method of `free`, `.clone()` or as an
/// argument of a function or method of the crates read: in a macro (`format!("{cfg:?}")`),
/// an operator (`cfg == &preset`), a call of another crate's function or an unknown one, or a
/// method of another crate's trait (`serde_json::to_string(&cfg)`, `cfg.hash(..)`): any of
/// those may test its flag out of the walk's sight.
fn used_whole(
    index: &Index,
    def: &FnDef,
    config: &str,
    flag: &str,
    free: &BTreeSet<String>,
) -> bool {
    struct Whole<'a> {
        index: &'a Index,
        def: &'a FnDef,
        config: &'a str,
        flag: &'a str,
        free: &'a BTreeSet<String>,
        found: bool,
    }
    /// Whether a macro's tokens name the config other than as `config.field` of a field
    /// but the flag (`format!("{}", cfg.hidden_size)` reads one field; `"{cfg:?}"` all).
    fn whole_in_tokens(tokens: proc_macro2::TokenStream, config: &str, flag: &str) -> bool {
        let trees: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        trees.iter().enumerate().any(|(at, tree)| match tree {
            proc_macro2::TokenTree::Ident(ident) if *ident == config => {
                let dot = matches!(trees.get(at + 1),
                    Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == '.');
                let field = match trees.get(at + 2) {
                    Some(proc_macro2::TokenTree::Ident(field)) => Some(field.to_string()),
                    _ => None,
                };
                // `cfg.head_dim()`: a method, not a field.
                let called = matches!(trees.get(at + 3),
                    Some(proc_macro2::TokenTree::Group(g))
                        if g.delimiter() == proc_macro2::Delimiter::Parenthesis);
                !(dot && field.is_some_and(|f| f != flag) && !called)
            }
            proc_macro2::TokenTree::Literal(literal) => literal.to_string().contains(config),
            proc_macro2::TokenTree::Group(group) => whole_in_tokens(group.stream(), config, flag),
            _ => false,
        })
    }
    impl Whole<'_> {
        fn is_config(&self, expr: &syn::Expr) -> bool {
            let mut expr = strip(expr);
            loop {
                expr = match expr {
                    syn::Expr::Reference(r) => strip(&r.expr),
                    syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => strip(&u.expr),
                    _ => break,
                };
            }
            matches!(expr, syn::Expr::Path(p)
                if p.qself.is_none() && p.path.get_ident().is_some_and(|i| name_of(i) == self.config))
        }
        fn crate_callee(&self, func: &syn::Expr) -> bool {
            let syn::Expr::Path(p) = strip(func) else {
                return false;
            };
            p.qself.is_none()
                && matches!(
                    self.index.resolve(self.def.module, &path_segments(&p.path)),
                    Resolved::Fn(_) | Resolved::Assoc(..)
                )
        }
    }
    impl<'ast> Visit<'ast> for Whole<'_> {
        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            self.found |= whole_in_tokens(mac.tokens.clone(), self.config, self.flag);
        }
        fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
            self.found |= self.is_config(&b.left) || self.is_config(&b.right);
            syn::visit::visit_expr_binary(self, b);
        }
        // `*cfg = Config::preset(false);`: another config from here on.
        fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
            self.found |= self.is_config(&a.left);
            syn::visit::visit_expr_assign(self, a);
        }
        fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
            if call.args.iter().any(|arg| self.is_config(arg)) && !self.crate_callee(&call.func) {
                self.found = true;
            }
            syn::visit::visit_expr_call(self, call);
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            let method = name_of(&m.method);
            if self.is_config(&m.receiver) && method != "clone" && !self.free.contains(&method) {
                self.found = true;
            }
            // Handed to another crate's method (`hasher.write(cfg)`): unknown.
            let crate_method = self
                .index
                .fns
                .iter()
                .any(|f| f.name == method && f.sig.receiver().is_some());
            if m.args.iter().any(|arg| self.is_config(arg)) && !crate_method {
                self.found = true;
            }
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    let mut whole = Whole {
        index,
        def,
        config,
        flag,
        free,
        found: false,
    };
    whole.visit_block(def.block);
    whole.found
}

/// `match &mut self.kv_cache { Kind::A(c) => c.append(&k, &v)?, Kind::B(c) => .. }`: each
/// arm a variant of one name bound, which the arm names only as the receiver of a
/// [`KV_CACHE_METHODS`] call. The field's name and its place (whether it is a kv cache is the
/// scan's to say, from the field's type).
fn kv_cache_arms(m: &'static syn::ExprMatch) -> Option<(String, &'static syn::Expr)> {
    let syn::Expr::Reference(r) = strip(&m.expr) else {
        return None;
    };
    r.mutability?;
    let place = strip(&r.expr);
    let syn::Expr::Field(f) = place else {
        return None;
    };
    let syn::Member::Named(field) = &f.member else {
        return None;
    };
    let arms_only_use_caches = m.arms.iter().all(|arm| {
        let syn::Pat::TupleStruct(variant) = &arm.pat else {
            return false;
        };
        let [syn::Pat::Ident(bound)] = variant.elems.iter().collect::<Vec<_>>()[..] else {
            return false;
        };
        if arm.guard.is_some() || bound.by_ref.is_some() || bound.mutability.is_some() {
            return false;
        }
        if bound.subpat.is_some() {
            return false;
        }
        let name = name_of(&bound.ident);
        struct CacheCalls<'n> {
            name: &'n str,
            count: usize,
        }
        impl<'ast> Visit<'ast> for CacheCalls<'_> {
            fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
                if KV_CACHE_METHODS.contains(&name_of(&call.method).as_str())
                    && matches!(strip(&call.receiver), syn::Expr::Path(p)
                        if p.qself.is_none() && p.path.get_ident().is_some_and(|i| name_of(i) == self.name))
                {
                    self.count += 1;
                }
                syn::visit::visit_expr_method_call(self, call);
            }
        }
        let mut calls = CacheCalls { name: &name, count: 0 };
        calls.visit_expr(&arm.body);
        calls.count == mentions_in_expr(&arm.body, &name)
    });
    arms_only_use_caches.then(|| (name_of(field), place))
}

/// Whether the declared type is one of the crate's enums each of whose variants holds one of
/// candle-nn's kv caches, none under an attribute (gemma3's `enum KvCache { Normal(KvCache),
/// Rotating(RotatingKvCache) }`).
fn is_kv_cache_enum(index: &Index, module: ModId, ty: &syn::Type) -> bool {
    let syn::Type::Path(p) = ty else { return false };
    if p.qself.is_some() {
        return false;
    }
    let Resolved::Type(key) = index.resolve(module, &path_segments(&p.path)) else {
        return false;
    };
    index.enum_item(&key).is_some_and(|item| {
        !item.variants.is_empty()
            && item.variants.iter().all(|variant| {
                index
                    .variant_payload(&key, &name_of(&variant.ident))
                    .is_some_and(|(module, ty)| is_kv_cache(index, module, ty))
            })
    })
}

/// Whether a function takes `&self` as written (not `&mut self`, `self`, nor any `self: T`;
/// the walk's `takes_shared_self` also admits `self: &Self`).
pub(crate) fn takes_ref_self(sig: &syn::Signature) -> bool {
    sig.receiver()
        .is_some_and(|r| r.reference.is_some() && r.mutability.is_none() && r.colon_token.is_none())
}

/// Whether the declared type is `bool`.
fn is_bool(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident("bool"))
}

/// The path of another crate's type `ty` names in `module` (`candle_nn::kv_cache::KvCache`).
fn external_type_path(index: &Index, module: ModId, ty: &syn::Type) -> Option<String> {
    let syn::Type::Path(p) = ty else { return None };
    if p.qself.is_some() {
        return None;
    }
    match index.resolve(module, &path_segments(&p.path)) {
        Resolved::External(path) => Some(path.join("::")),
        _ => None,
    }
}

/// The candle-nn layer a field's declared type names.
/// The `T` of std's `Option<T>` (not of a type of the crate's so named).
fn option_inner<'t>(index: &Index, module: ModId, ty: &'t syn::Type) -> Option<&'t syn::Type> {
    let syn::Type::Path(p) = ty else { return None };
    if p.qself.is_some() {
        return None;
    }
    let segments = path_segments(&p.path);
    let std = match (segments.as_slice(), index.resolve(module, &segments)) {
        ([only], Resolved::Unknown) => only == "Option",
        (_, Resolved::External(path)) => {
            matches!(path.first().map(String::as_str), Some("std" | "core"))
                && path.last().is_some_and(|last| last == "Option")
        }
        _ => false,
    };
    if !std {
        return None;
    }
    match &p.path.segments.last()?.arguments {
        syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match a.args.first() {
            Some(syn::GenericArgument::Type(inner)) => Some(inner),
            _ => None,
        },
        _ => None,
    }
}

fn field_layer(index: &Index, module: ModId, ty: &syn::Type) -> Option<Layer> {
    let syn::Type::Path(p) = ty else { return None };
    if p.qself.is_some() {
        return None;
    }
    match index.resolve(module, &path_segments(&p.path)) {
        Resolved::External(path) => Layer::from_path(&path.join("::")),
        _ => None,
    }
}

/// The last name of the crate struct type at the end of a path of fields (`x.g.h`), for each
/// place where the path may pass through a field `g` of `item` (in `module`): from `g`'s
/// declared type on, through the declared type of each further field. `None` where the path
/// may pass through `item` and its type there is not followed so; also `None` where it never
/// does (it changes nothing of `item` then, but the caller's other rules decide).
fn nested_place_type(
    index: &Index,
    module: ModId,
    item: &syn::ItemStruct,
    place: &syn::Expr,
) -> Option<String> {
    let mut steps = Vec::new();
    let mut at = strip(place);
    while let syn::Expr::Field(f) = at {
        let syn::Member::Named(ident) = &f.member else {
            return None;
        };
        steps.push(name_of(ident));
        at = strip(&f.base);
    }
    steps.reverse();
    let type_of = |module: ModId, ty: &syn::Type| -> Option<(String, String)> {
        let syn::Type::Path(p) = ty else { return None };
        if p.qself.is_some() {
            return None;
        }
        match index.resolve(module, &path_segments(&p.path)) {
            Resolved::Type(key)
                if index
                    .struct_item(&key)
                    .is_some_and(|(_, s)| s.generics.params.is_empty()) =>
            {
                Some((key, name_of(&p.path.segments.last()?.ident)))
            }
            _ => None,
        }
    };
    let mut end: Option<String> = None;
    for (i, step) in steps.iter().enumerate() {
        let Some(field) = item
            .fields
            .iter()
            .find(|f| f.ident.as_ref().map(name_of).as_deref() == Some(step.as_str()))
        else {
            continue;
        };
        // Only a path that goes on past the field (the field itself is the caller's case).
        if i + 1 == steps.len() {
            return None;
        }
        let (mut key, mut name) = type_of(module, &field.ty)?;
        for next in &steps[i + 1..] {
            let (field_module, ty) = index.field(&key, next)?;
            (key, name) = type_of(field_module, ty)?;
        }
        match &end {
            Some(before) if *before != name => return None,
            _ => end = Some(name),
        }
    }
    end
}

/// Whether the struct `key` derives `Clone` (its `clone` copies every field; a hand-written one
/// would conflict with it), and so does every struct of the crate among its fields' types (a
/// derived `clone` calls theirs).
fn derives_clone(index: &Index, key: &str) -> bool {
    derives_clone_within(index, key, 0)
}

/// [`derives_clone`], up to a depth of nested structs.
fn derives_clone_within(index: &Index, key: &str, depth: usize) -> bool {
    let Some((module, item)) = index.struct_item(key) else {
        return false;
    };
    if depth > 4 {
        return false;
    }
    let fields_derive = item.fields.iter().all(|field| match &field.ty {
        syn::Type::Path(p) if p.qself.is_none() => {
            match index.resolve(module, &path_segments(&p.path)) {
                Resolved::Type(inner) if index.struct_item(&inner).is_some() => {
                    derives_clone_within(index, &inner, depth + 1)
                }
                _ => true,
            }
        }
        _ => true,
    });
    fields_derive && derives(&item.attrs, "Clone")
}

/// Whether an item's attributes derive `name` (`#[derive(Clone)]`, `std::clone::Clone`).
fn derives(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("derive") && {
            let mut found = false;
            let _ = attr.parse_nested_meta(|meta| {
                found |= meta.path.is_ident(name)
                    || (meta.path.segments.len() == 3
                        && meta.path.segments.last().is_some_and(|s| s.ident == name));
                Ok(())
            });
            found
        }
    })
}

/// Whether a field's type is candle's `Tensor`.
fn is_tensor_type(index: &Index, module: ModId, ty: &syn::Type) -> bool {
    let syn::Type::Path(p) = ty else { return false };
    p.qself.is_none()
        && matches!(index.resolve(module, &path_segments(&p.path)),
            Resolved::External(path) if path.len() == 2
                && matches!(path[0].as_str(), "candle_core" | "candle")
                && path[1] == "Tensor")
}

/// Whether a struct's attributes construct nothing (see [`INERT_DERIVES`]).
fn inert_attributes(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().all(|attr| {
        let Some(last) = attr.path().segments.last() else {
            return false;
        };
        if attr.path().is_ident("derive") {
            let mut inert = true;
            let parsed = attr.parse_nested_meta(|meta| {
                let derive = meta.path.segments.last().map(|s| s.ident.to_string());
                inert &= derive.is_some_and(|d| INERT_DERIVES.contains(&d.as_str()));
                Ok(())
            });
            return parsed.is_ok() && inert;
        }
        INERT_ATTRIBUTES.contains(&last.ident.to_string().as_str())
    })
}

/// Whether the struct has the fields written: its attributes are derives (which add items
/// beside it, never change it; `Deserialize` builds values, a matter for
/// [`inert_attributes`]) or inert.
fn fields_as_written(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().all(|attr| {
        attr.path().is_ident("derive")
            || attr
                .path()
                .segments
                .last()
                .is_some_and(|last| INERT_ATTRIBUTES.contains(&last.ident.to_string().as_str()))
    })
}

/// Whether every place that may construct the struct or change its fields is read: its fields
/// are seen where they are visible (private: its module and the modules inside it; otherwise
/// the crate, which the macro does not see whole), and none of those modules has a `mod x;`
/// that was not read or a macro that may define items. A struct whose every field is `pub`
/// may be constructed by another crate.
fn constructions_in_sight(index: &Index, module: ModId, item: &syn::ItemStruct) -> bool {
    let fields: Vec<&syn::Field> = item.fields.iter().collect();
    if !matches!(item.fields, syn::Fields::Named(_)) || fields.is_empty() {
        return false;
    }
    if fields
        .iter()
        .all(|f| matches!(f.vis, syn::Visibility::Public(_)))
    {
        return false;
    }
    let private = fields
        .iter()
        .all(|f| matches!(f.vis, syn::Visibility::Inherited));
    if !private && !index.whole_crate(module) {
        return false;
    }
    let krate = index.modules[module].krate;
    let inside = |mut m: ModId| loop {
        if m == module {
            return true;
        }
        match index.modules[m].parent {
            Some(parent) => m = parent,
            None => return false,
        }
    };
    index.modules.iter().enumerate().all(|(id, m)| {
        let in_scope = m.krate == krate && (!private || inside(id));
        !in_scope || (!m.opaque && !m.unread_children)
    })
}

/// Whether `literal` is what `block` gives back: its tail, alone or in `Ok(..)`.
fn is_tail(block: &syn::Block, literal: &syn::ExprStruct) -> bool {
    let Some(syn::Stmt::Expr(tail, None)) = block.stmts.last() else {
        return false;
    };
    let mut tail = tail;
    loop {
        tail = match tail {
            syn::Expr::Paren(p) => &p.expr,
            syn::Expr::Call(call)
                if call.args.len() == 1
                    && matches!(&*call.func, syn::Expr::Path(p)
                        if p.path.segments.last().is_some_and(|s| s.ident == "Ok")) =>
            {
                &call.args[0]
            }
            syn::Expr::Struct(found) => return std::ptr::eq(found, literal),
            _ => return false,
        };
    }
}

/// What the scan of every file read finds.
struct Scan<'a> {
    /// The struct's key.
    key: &'a str,
    /// The struct's name.
    name: &'a str,
    /// Struct literals that may construct it, with the function whose body holds them.
    sites: Vec<(usize, &'static syn::ExprStruct)>,
    /// Field names that some code may assign, borrow mutably or call a changing method on.
    changed: BTreeSet<String>,
    /// A construction the scan cannot read: in a function the index does not hold, in a
    /// macro's tokens, or through another name (`use Model as M`, `type M = Model`); or a
    /// write through a raw pointer in `unsafe` code, which may change any field.
    out_of_sight: bool,
    /// The names of every method in sight that takes `&mut self` or `mut self` (a trait of
    /// the user's may give `usize` or `Linear` a changing `len`).
    changing_methods: BTreeSet<String>,
    /// The names of the methods in sight that take `&mut self` or `mut self` in inherent
    /// `impl`s: only a value of their own type (one of the crate's) has them.
    inherent_changing: BTreeSet<String>,
    /// For each of those names, the types whose `impl` has it, by their last name (`*` for a
    /// type that is no plain path).
    inherent_owners: BTreeMap<String, BTreeSet<String>>,
    /// The types with a `Deref` or `DerefMut` `impl` in sight (`*` as above): a method call
    /// on one may reach another type's method.
    deref_types: BTreeSet<String>,
    /// The names of the type aliases in sight (an `impl` of one is another type's).
    aliases: BTreeSet<String>,
    /// The struct's fields of one of the crate's struct types: that type's last name and its
    /// fields' names.
    crate_fields: BTreeMap<String, (String, BTreeSet<String>)>,
    /// The struct's fields of candle's `Tensor` type.
    tensor_fields: BTreeSet<String>,
    /// The struct's fields of a candle-nn kv cache's type.
    kv_cache_fields: BTreeSet<String>,
    /// Its fields of one of the crate's enums of candle-nn kv caches (see
    /// [`is_kv_cache_enum`]): changed but by a `match` whose arms only append to or reset
    /// the cache they bind (the enum's own methods of those names may do anything).
    kv_cache_enum_fields: BTreeSet<String>,
    /// The struct's fields of a candle-nn layer's type, with the type's name (`RmsNorm`).
    layer_fields: BTreeMap<String, String>,
    /// The struct's fields of one of the crate's (non-generic, named-field) structs, each with
    /// the names of that struct's inherent methods taking `&self` (found before any trait's
    /// `&mut self` one).
    crate_field_readers: BTreeMap<String, BTreeSet<String>>,
    /// Fields left unchanged because the place changed was no field of their type (the
    /// field, its type's name): changed after all where that type has a `Deref`.
    off_type: Vec<(String, String)>,
    /// Calls of a [`READING_METHODS`] name, by the method's name and its receiver: they
    /// change the receiver where a method of that name in sight takes `&mut self`.
    reading_calls: Vec<(String, &'static syn::Expr)>,
    /// The same in macros' tokens, by the method's name, a field of the path it is called
    /// on, and whether that field is the receiver.
    macro_reading_calls: Vec<(String, String, bool)>,
}

/// What one walk of a file finds for every struct's scan: what depends on the struct (its
/// name, its fields' types, whether the file can name it), each kept once, and what holds for
/// every struct.
#[derive(Default)]
struct FileLog {
    /// Struct literals by the last name of their path (`Self` only where it is the whole
    /// path), with the function the index holds them in (`None`: one it does not).
    literals: BTreeMap<String, Vec<(Option<usize>, &'static syn::ExprStruct)>>,
    /// The names `use .. as Name` renames.
    renamed: BTreeSet<String>,
    /// The identifiers of the types `type Alias = ..` names.
    aliased: BTreeSet<String>,
    /// The places written or borrowed mutably, and the receivers of methods that may change
    /// them, as their fields (see [`place_fields`]).
    places: BTreeSet<Place>,
    /// The receivers of calls of a [`CANDLE_TENSOR_METHODS`] name (not reading) on a field:
    /// that field's name and the receiver's fields. Candle's own method where the field is a
    /// `Tensor` of the struct's.
    tensor_method_receivers: BTreeSet<(String, Place)>,
    /// Calls of a [`KV_CACHE_METHODS`] name on a field, by the field's name and the place:
    /// a change except where that field is a kv cache.
    kv_cache_receivers: BTreeSet<(String, Place)>,
    /// Fields a `match` of [`kv_cache_arms`] borrows mutably, by name and place: a change
    /// except where that field is a kv cache or an enum of them.
    kv_cache_arm_receivers: BTreeSet<(String, Place)>,
    /// Calls of a [`LAYER_METHODS`] name on a field, by the field's name, the method's and
    /// the place: a change except where that field is a candle-nn layer with that method.
    layer_method_receivers: BTreeSet<(String, String, Place)>,
    /// Calls of any other method on a field, by the field's name, the method's and the
    /// place: a change except where the field is of one of the crate's structs with an
    /// inherent `&self` method of the name (see [`Scan::crate_field_readers`]).
    field_method_receivers: BTreeSet<(String, String, Place)>,
    /// Calls of a [`READING_METHODS`] name, by the receiver's field where the name is also
    /// one of [`CANDLE_TENSOR_METHODS`], the method's name and the receiver.
    reading_calls: Vec<(Option<String>, String, &'static syn::Expr)>,
    /// The fields patterns bind.
    pattern_fields: BTreeSet<String>,
    /// Whether an `include!` brings code from a file the scan does not read.
    includes: bool,
    /// The identifiers followed by a brace group in a macro's tokens (`Model { .. }`).
    macro_braced: BTreeSet<String>,
    /// The fields macros' tokens may change (see [`macro_token_facts`]), and every
    /// identifier a macro of the user's names.
    macro_changed: BTreeSet<String>,
    /// A [`READING_METHODS`] name called in a macro's tokens on a path through a field (the
    /// method, the field, whether the field is the receiver): the field may change where a
    /// method of the name takes `&mut self`.
    macro_reading_calls: Vec<(String, String, bool)>,
    /// Whether `unsafe` code may write through a raw pointer, in a file of a crate that can
    /// name the struct, and in one that cannot (see [`unsafe_writes`]).
    unsafe_own: bool,
    unsafe_other: bool,
    /// As [`Scan::changing_methods`].
    changing_methods: BTreeSet<String>,
    /// As [`Scan::inherent_changing`].
    inherent_changing: BTreeSet<String>,
    /// As [`Scan::inherent_owners`].
    inherent_owners: BTreeMap<String, BTreeSet<String>>,
    /// As [`Scan::deref_types`].
    deref_types: BTreeSet<String>,
    /// As [`Scan::aliases`].
    aliases: BTreeSet<String>,
}

/// The named fields a place reads, outermost last, each with the field read right off it
/// (`[("g", Some("f")), ("x", Some("g"))]`-like for `x.g.f`, see [`place_fields`]).
type PlaceFields = Vec<(String, Option<String>)>;

/// A place's fields, with the key of the struct whose own field is the one read right off
/// `self` where the place starts so (see [`LogVisit::place`]).
type Place = (PlaceFields, Option<String>);

/// Walks every file of the index once, the first time any struct is scanned.
fn file_logs(index: &Index) -> std::rc::Rc<Vec<FileLog>> {
    const KEY: &str = "construction file logs";
    if let Some(known) = index.derived.borrow().get(KEY)
        && let Some(logs) = known.downcast_ref::<std::rc::Rc<Vec<FileLog>>>()
    {
        return logs.clone();
    }
    // The first function of a body (a file two crates read holds one per crate).
    let mut fn_blocks: std::collections::HashMap<*const syn::Block, usize> =
        std::collections::HashMap::new();
    for (id, f) in index.fns.iter().enumerate() {
        fn_blocks.entry(f.block as *const syn::Block).or_insert(id);
    }
    let mut stack = Vec::new();
    // Every name a `use` brings in, in any file or body (`use crate::set_it as assert;`): a
    // macro called by such a name may be the crate's, whatever std has of the name.
    let mut imported = ImportedNames(BTreeSet::new());
    for file in index.sources() {
        imported.visit_file(file);
    }
    let logs: Vec<FileLog> = index
        .sources()
        .iter()
        .map(|file| {
            let mut log = FileLog::default();
            let mut visit = LogVisit {
                index,
                log: &mut log,
                fn_blocks: &fn_blocks,
                stack: &mut stack,
                inherent: false,
                self_ty: None,
                for_mut_ref: false,
                imported: &imported.0,
            };
            visit.visit_file(file);
            log
        })
        .collect();
    let logs = std::rc::Rc::new(logs);
    index
        .derived
        .borrow_mut()
        .insert(KEY.to_string(), Box::new(logs.clone()));
    logs
}

/// Replays a file's log for one struct's scan; `own`: the file is of a crate that can name
/// the struct (only there do constructions and changes count).
fn replay(scan: &mut Scan<'_>, log: &FileLog, own: bool) {
    scan.changing_methods
        .extend(log.changing_methods.iter().cloned());
    scan.inherent_changing
        .extend(log.inherent_changing.iter().cloned());
    for (method, owners) in &log.inherent_owners {
        scan.inherent_owners
            .entry(method.clone())
            .or_default()
            .extend(owners.iter().cloned());
    }
    scan.deref_types.extend(log.deref_types.iter().cloned());
    scan.aliases.extend(log.aliases.iter().cloned());
    if !own {
        scan.out_of_sight |= log.unsafe_other;
        return;
    }
    scan.out_of_sight |= log.unsafe_own
        || log.includes
        || log.renamed.contains(scan.name)
        || log.aliased.contains(scan.name)
        || log.macro_braced.contains(scan.name)
        || log.macro_braced.contains("Self");
    for key in [scan.name, "Self"] {
        for (fn_id, literal) in log.literals.get(key).into_iter().flatten() {
            match fn_id {
                Some(id) => scan.sites.push((*id, literal)),
                None => scan.out_of_sight = true,
            }
        }
    }
    for (place, root) in &log.places {
        changes_place(scan, place, root.as_deref());
    }
    for (field, (place, root)) in &log.tensor_method_receivers {
        // `self.pos.broadcast_as(..)` of a `Tensor` field: candle's own method.
        if !scan.tensor_fields.contains(field) {
            changes_place(scan, place, root.as_deref());
        }
    }
    for (field, (place, root)) in &log.kv_cache_arm_receivers {
        // `match &mut self.kv_cache { Kind::A(c) => c.append(..)?, .. }` of an enum of caches.
        if !scan.kv_cache_fields.contains(field) && !scan.kv_cache_enum_fields.contains(field) {
            changes_place(scan, place, root.as_deref());
        }
    }
    for (field, (place, root)) in &log.kv_cache_receivers {
        // `self.kv_cache.append(..)` of a kv cache field: candle-nn's own method.
        if !scan.kv_cache_fields.contains(field) {
            changes_place(scan, place, root.as_deref());
        }
    }
    for (field, method, (place, root)) in &log.field_method_receivers {
        // `self.attn.helper(x)` of an `attn: Attention` with `fn helper(&self, ..)`: the
        // inherent `&self` method comes first, and changes nothing it holds. (Only on the
        // place's one field: `self.other.attn` may be another type's `attn`.)
        let reads = place.len() == 1
            && scan
                .crate_field_readers
                .get(field)
                .is_some_and(|readers| readers.contains(method));
        if !reads {
            changes_place(scan, place, root.as_deref());
        }
    }
    for (field, method, (place, root)) in &log.layer_method_receivers {
        // `self.inner.forward_diff(x)` of a candle-nn `RmsNorm` field: candle-nn's own.
        let own = scan.layer_fields.get(field).is_some_and(|ty| {
            LAYER_METHODS
                .iter()
                .any(|(layer, methods)| layer == ty && methods.contains(&method.as_str()))
        });
        if place.len() != 1 || !own {
            changes_place(scan, place, root.as_deref());
        }
    }
    for (field, method, receiver) in &log.reading_calls {
        // `self.pos.broadcast_as(..)` of a `Tensor` field: candle's own method.
        if !field
            .as_ref()
            .is_some_and(|f| scan.tensor_fields.contains(f))
        {
            scan.reading_calls.push((method.clone(), receiver));
        }
    }
    // `match &mut model { Model { n_head, .. } => *n_head = 4 }`: a field bound by a pattern
    // may be bound by `&mut`.
    scan.changed.extend(log.pattern_fields.iter().cloned());
    scan.changed.extend(log.macro_changed.iter().cloned());
    scan.macro_reading_calls
        .extend(log.macro_reading_calls.iter().cloned());
}

/// Marks the fields of a place (`self.cache.k`, `m.n_head[0]`) as changed; `root`: the key of
/// the struct the place's outermost field is declared in, where it is read right off `self`.
fn changes_place(scan: &mut Scan<'_>, place: &PlaceFields, root: Option<&str>) {
    for (at, (name, child)) in place.iter().enumerate() {
        // `self.kv_cache = ..` in a method of another struct that declares `kv_cache`: that
        // struct's own field, never this one's (a field is found before any `Deref`).
        if at + 1 == place.len() && root.is_some_and(|root| root != scan.key) {
            continue;
        }
        // `x.embeddings.patch_embeddings` is no place in this struct's `embeddings` where
        // its type has no field of that name (unless a `Deref` of it has: settled after the
        // scan).
        match (scan.crate_fields.get(name), child) {
            (Some((ty, fields)), Some(inner)) if !fields.contains(inner) => {
                scan.off_type.push((name.clone(), ty.clone()));
            }
            _ => {
                scan.changed.insert(name.clone());
            }
        }
    }
}

/// The named fields of a place, each with the field read right off it: `x.g.f` is `f`
/// (none read off it) and `g` (with `f` read off it).
fn place_fields(expr: &syn::Expr) -> PlaceFields {
    let mut fields = Vec::new();
    let mut expr = expr;
    let mut child: Option<String> = None;
    loop {
        expr = match expr {
            syn::Expr::Field(f) => {
                let mut member = None;
                if let syn::Member::Named(ident) = &f.member {
                    let name = name_of(ident);
                    fields.push((name.clone(), child.clone()));
                    member = Some(name);
                }
                child = member;
                &f.base
            }
            syn::Expr::Paren(p) => &p.expr,
            syn::Expr::Group(g) => &g.expr,
            syn::Expr::Index(i) => {
                child = None;
                &i.expr
            }
            syn::Expr::Unary(u) => {
                child = None;
                &u.expr
            }
            // What a reading method gives (`layer.forward(&x)` of `.forward(&x).unwrap()`)
            // is no `&mut` into its receiver; where a method of the name in sight takes
            // `&mut self`, its own call marks the receiver (see `reading_calls`).
            syn::Expr::MethodCall(m) if READING_METHODS.contains(&name_of(&m.method).as_str()) => {
                return fields;
            }
            syn::Expr::MethodCall(m) => {
                child = None;
                &m.receiver
            }
            syn::Expr::Reference(r) => {
                child = None;
                &r.expr
            }
            _ => return fields,
        };
    }
}

/// The walk of one file that writes its [`FileLog`].
struct LogVisit<'s> {
    index: &'s Index,
    log: &'s mut FileLog,
    fn_blocks: &'s std::collections::HashMap<*const syn::Block, usize>,
    /// The functions entered, innermost last (`None`: one the index does not hold).
    stack: &'s mut Vec<Option<usize>>,
    /// Within an inherent `impl` (no trait).
    inherent: bool,
    /// The type of the `impl` the visit is in, by its last name (`*` for no plain path).
    self_ty: Option<String>,
    /// Within an `impl` for `&mut T`: a method taking `self` holds `&mut T`.
    for_mut_ref: bool,
    /// The names `use`s bring in, anywhere in the files read.
    imported: &'s BTreeSet<String>,
}

/// The names `use`s bring in (`use a::b;` brings `b`, `use a::b as c;` brings `c`).
struct ImportedNames(BTreeSet<String>);

impl<'ast> Visit<'ast> for ImportedNames {
    fn visit_use_name(&mut self, name: &'ast syn::UseName) {
        self.0.insert(name_of(&name.ident));
    }

    fn visit_use_rename(&mut self, rename: &'ast syn::UseRename) {
        self.0.insert(name_of(&rename.rename));
    }
}

impl LogVisit<'_> {
    /// A place's fields, and where its outermost field is read right off `self` in a method
    /// of one of the crate's structs that declares a field of that name (`self.kv_cache` in
    /// `impl Attention`), that struct's key: the field is that struct's own.
    fn place(&self, expr: &syn::Expr) -> Place {
        let fields = place_fields(expr);
        let method = self.stack.last().copied().flatten();
        let owner = method.and_then(|id| self.index.fns[id].owner.clone());
        let mut expr = expr;
        let root = loop {
            expr = match expr {
                syn::Expr::Field(f) => match strip(&f.base) {
                    syn::Expr::Path(p) if p.qself.is_none() && p.path.is_ident("self") => {
                        let syn::Member::Named(field) = &f.member else {
                            break None;
                        };
                        let field = name_of(field);
                        break owner.filter(|key| {
                            self.index.struct_item(key).is_some_and(|(module, item)| {
                                fields_as_written(&item.attrs)
                                    && matches!(item.fields, syn::Fields::Named(_))
                                    && item.fields.iter().any(|f| {
                                        f.ident.as_ref().is_some_and(|i| name_of(i) == field)
                                            && !crate::index::is_conditional(&f.attrs)
                                            && method.is_some_and(|id| {
                                                self.field_visible(&f.vis, module, id)
                                            })
                                    })
                            })
                        });
                    }
                    _ => &f.base,
                },
                syn::Expr::Paren(p) => &p.expr,
                syn::Expr::Group(g) => &g.expr,
                syn::Expr::Index(i) => &i.expr,
                syn::Expr::Unary(u) => &u.expr,
                syn::Expr::Reference(r) => &r.expr,
                syn::Expr::MethodCall(m)
                    if !READING_METHODS.contains(&name_of(&m.method).as_str()) =>
                {
                    &m.receiver
                }
                _ => break None,
            };
        };
        (fields, root)
    }

    /// Whether a field of this visibility, declared in `module`, is visible in the function
    /// `id`: rustc looks past a field it cannot see (to a `Deref` target's field of the name).
    fn field_visible(&self, vis: &syn::Visibility, module: ModId, id: usize) -> bool {
        let within = |ancestor: Option<ModId>| {
            let mut at = Some(self.index.fns[id].module);
            while let Some(m) = at {
                if Some(m) == ancestor {
                    return true;
                }
                at = self.index.modules[m].parent;
            }
            false
        };
        match vis {
            syn::Visibility::Public(_) => true,
            syn::Visibility::Restricted(r) if r.path.is_ident("crate") => true,
            syn::Visibility::Restricted(r) if r.path.is_ident("self") => within(Some(module)),
            syn::Visibility::Restricted(r) if r.path.is_ident("super") => {
                within(self.index.modules[module].parent)
            }
            syn::Visibility::Restricted(_) => false,
            syn::Visibility::Inherited => within(Some(module)),
        }
    }

    /// The patterns of a function's parameters (`Attention { c_proj, .. }: &mut Attention`
    /// binds a field, maybe by `&mut`), as a body's are.
    fn parameters(&mut self, sig: &'static syn::Signature) {
        for input in &sig.inputs {
            if let syn::FnArg::Typed(typed) = input {
                self.visit_pat(&typed.pat);
            }
        }
    }

    fn enter(&mut self, block: &'static syn::Block) {
        let id = self.fn_blocks.get(&(block as *const syn::Block)).copied();
        self.stack.push(id);
        self.visit_block(block);
        self.stack.pop();
    }

    /// The places an assignment's left side writes: the place itself, or each part of a
    /// destructuring one (`(self.proj, self.n) = (wide, 5)`, `[a.x] = ..`, `W(a.x) = ..`,
    /// `S { f: a.x } = ..`).
    fn assigned(&mut self, left: &'static syn::Expr) {
        match strip(left) {
            syn::Expr::Tuple(t) => t.elems.iter().for_each(|e| self.assigned(e)),
            syn::Expr::Array(a) => a.elems.iter().for_each(|e| self.assigned(e)),
            syn::Expr::Call(c) => c.args.iter().for_each(|e| self.assigned(e)),
            syn::Expr::Struct(s) => {
                s.fields.iter().for_each(|f| self.assigned(&f.expr));
                if let Some(rest) = &s.rest {
                    self.assigned(rest);
                }
            }
            other => {
                self.log.places.insert(self.place(other));
            }
        }
    }

    /// A method that takes `&mut self` or `mut self`: a call of its name may change what it
    /// is called on.
    fn note_changing(&mut self, sig: &'static syn::Signature) {
        // `impl Regrow for &mut Inner { fn len(self, ..) }`: `self` is a `&mut Inner`; and a
        // trait's method taking `self` may be one of an `impl` for `&mut Inner` (a blanket one,
        // or the trait's own default).
        let trait_by_value = !self.inherent
            && sig
                .receiver()
                .is_some_and(|r| r.reference.is_none() && r.colon_token.is_none());
        if let Some(receiver) = sig.receiver()
            && (receiver.mutability.is_some()
                || self.for_mut_ref
                || trait_by_value
                || matches!(&*receiver.ty, syn::Type::Reference(r) if r.mutability.is_some())
                || (receiver.colon_token.is_some()
                    && !matches!(&*receiver.ty, syn::Type::Reference(r) if r.mutability.is_none())))
        {
            let name = name_of(&sig.ident);
            match self.inherent {
                true => {
                    let owner = self.self_ty.clone().unwrap_or_else(|| "*".to_string());
                    self.log
                        .inherent_owners
                        .entry(name.clone())
                        .or_default()
                        .insert(owner);
                    self.log.inherent_changing.insert(name)
                }
                false => self.log.changing_methods.insert(name),
            };
        }
    }

    fn unsafe_tokens(&mut self, tokens: TokenStream) {
        self.log.unsafe_own |= unsafe_writes(tokens.clone(), true);
        self.log.unsafe_other |= unsafe_writes(tokens, false);
    }
}

/// Whether `unsafe` code may write through a raw pointer (`*mut`, `ptr::write`,
/// `transmute`, `offset_of!`), which may change any field of any value. `own`: in a crate
/// that can name the struct, a dereference or a `&mut` in the block may write through a
/// pointer made outside it; elsewhere only what writes memory itself counts (a pointer the
/// struct's crate made is in sight there).
fn unsafe_writes(tokens: TokenStream, own: bool) -> bool {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    trees.iter().enumerate().any(|(at, tree)| match tree {
        TokenTree::Group(g) => unsafe_writes(g.stream(), own),
        // A dereference (`*p = v` of a pointer made outside the block, `*p` read): `*` where
        // no operand stands before it.
        TokenTree::Punct(p) if own && p.as_char() == '*' => match at.checked_sub(1) {
            None => true,
            Some(before) => match &trees[before] {
                TokenTree::Punct(q) => q.spacing() == proc_macro2::Spacing::Alone,
                _ => false,
            },
        },
        TokenTree::Ident(i) => {
            let name = i.to_string();
            // `*mut T`, and `&mut *p` of a pointer made outside the block.
            (name == "mut"
                && at > 0
                && matches!(&trees[at - 1], TokenTree::Punct(p)
                    if p.as_char() == '*' || (own && p.as_char() == '&')))
                || matches!(
                    name.as_str(),
                    "offset_of"
                        | "transmute"
                        | "transmute_copy"
                        | "write"
                        | "write_volatile"
                        | "write_unaligned"
                        | "write_bytes"
                        | "copy"
                        | "copy_nonoverlapping"
                        | "swap"
                        | "replace"
                        | "as_mut_ptr"
                        | "addr_of_mut"
                        | "get_unchecked_mut"
                        // A value read from memory is a construction out of sight
                        // (`ptr::read(&other as *const Other as *const Model)`).
                        | "read"
                        | "read_volatile"
                        | "read_unaligned"
                        | "zeroed"
                        | "assume_init"
                        | "from_raw"
                        | "cast"
                )
        }
        _ => false,
    })
}

impl Visit<'static> for LogVisit<'_> {
    fn visit_item_fn(&mut self, f: &'static syn::ItemFn) {
        if f.sig.unsafety.is_some() {
            self.unsafe_tokens(f.block.to_token_stream());
        }
        self.parameters(&f.sig);
        self.enter(&f.block);
    }

    fn visit_item_impl(&mut self, i: &'static syn::ItemImpl) {
        let self_ty = match &*i.self_ty {
            syn::Type::Path(p) if p.qself.is_none() => p
                .path
                .segments
                .last()
                .map_or_else(|| "*".to_string(), |s| name_of(&s.ident)),
            _ => "*".to_string(),
        };
        if let Some((_, trait_path, _)) = &i.trait_
            && trait_path
                .segments
                .last()
                .is_some_and(|s| s.ident == "Deref" || s.ident == "DerefMut")
        {
            self.log.deref_types.insert(self_ty.clone());
        }
        let mut self_type = &*i.self_ty;
        loop {
            self_type = match self_type {
                syn::Type::Paren(paren) => &paren.elem,
                syn::Type::Group(group) => &group.elem,
                _ => break,
            };
        }
        // Any type but a plain path may be a `&mut Inner` (`impl Regrow for (&mut Inner)`).
        let for_mut_ref = matches!(self_type, syn::Type::Reference(r) if r.mutability.is_some())
            || !matches!(self_type, syn::Type::Path(_));
        let outer = std::mem::replace(&mut self.inherent, i.trait_.is_none());
        let outer_ty = self.self_ty.replace(self_ty);
        let outer_mut = std::mem::replace(&mut self.for_mut_ref, for_mut_ref);
        syn::visit::visit_item_impl(self, i);
        self.inherent = outer;
        self.self_ty = outer_ty;
        self.for_mut_ref = outer_mut;
    }

    fn visit_impl_item_fn(&mut self, f: &'static syn::ImplItemFn) {
        self.note_changing(&f.sig);
        if f.sig.unsafety.is_some() {
            self.unsafe_tokens(f.block.to_token_stream());
        }
        self.parameters(&f.sig);
        self.enter(&f.block);
    }

    fn visit_expr_unsafe(&mut self, u: &'static syn::ExprUnsafe) {
        self.unsafe_tokens(u.block.to_token_stream());
        syn::visit::visit_expr_unsafe(self, u);
    }

    fn visit_trait_item_fn(&mut self, f: &'static syn::TraitItemFn) {
        self.note_changing(&f.sig);
        self.parameters(&f.sig);
        if let Some(block) = &f.default {
            self.enter(block);
        }
    }

    fn visit_expr_struct(&mut self, literal: &'static syn::ExprStruct) {
        let id = self.stack.last().copied().flatten();
        let segments = path_segments(&literal.path);
        let key = match segments.as_slice() {
            [.., last] if last != "Self" || segments.len() == 1 => Some(last.clone()),
            _ => None,
        };
        if let Some(key) = key {
            self.log
                .literals
                .entry(key)
                .or_default()
                .push((id, literal));
        }
        syn::visit::visit_expr_struct(self, literal);
    }

    fn visit_use_rename(&mut self, rename: &'static syn::UseRename) {
        self.log.renamed.insert(name_of(&rename.ident));
    }

    fn visit_item_type(&mut self, alias: &'static syn::ItemType) {
        self.log.aliases.insert(name_of(&alias.ident));
        idents(
            &quote::ToTokens::to_token_stream(&alias.ty),
            &mut self.log.aliased,
        );
    }

    fn visit_expr_assign(&mut self, a: &'static syn::ExprAssign) {
        self.assigned(&a.left);
        syn::visit::visit_expr_assign(self, a);
    }

    fn visit_expr_binary(&mut self, b: &'static syn::ExprBinary) {
        if is_compound_assignment(&b.op) {
            self.log.places.insert(self.place(&b.left));
        }
        syn::visit::visit_expr_binary(self, b);
    }

    fn visit_expr_reference(&mut self, r: &'static syn::ExprReference) {
        if r.mutability.is_some() {
            self.log.places.insert(self.place(&r.expr));
        }
        syn::visit::visit_expr_reference(self, r);
    }

    // A `ref mut` binding borrows the matched place mutably (`if let Proj::A(ref mut p) =
    // s.proj_in { *p = .. }`, `let ref mut proj = s.proj;`), as `&mut s.proj_in` does.
    fn visit_local(&mut self, local: &'static syn::Local) {
        if let Some(init) = &local.init
            && has_ref_mut(&local.pat)
        {
            self.log.places.insert(self.place(&init.expr));
        }
        syn::visit::visit_local(self, local);
    }

    fn visit_expr_let(&mut self, l: &'static syn::ExprLet) {
        if has_ref_mut(&l.pat) {
            self.log.places.insert(self.place(&l.expr));
        }
        syn::visit::visit_expr_let(self, l);
    }

    fn visit_expr_match(&mut self, m: &'static syn::ExprMatch) {
        // gemma3's `match &mut self.kv_cache { KvCache::Normal(c) => c.append(..)?, .. }`: each
        // arm's cache only appended to or reset, as a kv cache field's own would be.
        if let Some((field, place)) = kv_cache_arms(m) {
            self.log
                .kv_cache_arm_receivers
                .insert((field, self.place(place)));
            for arm in &m.arms {
                self.visit_expr(&arm.body);
            }
            return;
        }
        if m.arms.iter().any(|arm| has_ref_mut(&arm.pat)) {
            self.log.places.insert(self.place(&m.expr));
        }
        syn::visit::visit_expr_match(self, m);
    }

    fn visit_expr_raw_addr(&mut self, r: &'static syn::ExprRawAddr) {
        self.log.places.insert(self.place(&r.expr));
        syn::visit::visit_expr_raw_addr(self, r);
    }

    fn visit_expr_method_call(&mut self, m: &'static syn::ExprMethodCall) {
        let method = name_of(&m.method);
        let receiver_field = match strip(&m.receiver) {
            syn::Expr::Field(f) => match &f.member {
                syn::Member::Named(field) => Some(name_of(field)),
                syn::Member::Unnamed(_) => None,
            },
            _ => None,
        };
        // A call of candle's name on a field is candle's own where the field is a `Tensor`.
        let tensor_method_field = receiver_field
            .clone()
            .filter(|_| CANDLE_TENSOR_METHODS.contains(&method.as_str()));
        if READING_METHODS.contains(&method.as_str()) {
            self.log
                .reading_calls
                .push((tensor_method_field, method, &m.receiver));
        } else if let Some(field) = tensor_method_field {
            self.log
                .tensor_method_receivers
                .insert((field, self.place(&m.receiver)));
        } else if let Some(field) = receiver_field
            .clone()
            .filter(|_| KV_CACHE_METHODS.contains(&method.as_str()))
        {
            self.log
                .kv_cache_receivers
                .insert((field, self.place(&m.receiver)));
        } else if let Some(field) = receiver_field.clone().filter(|_| is_layer_method(&method)) {
            self.log
                .layer_method_receivers
                .insert((field, method, self.place(&m.receiver)));
        } else if let Some(field) = receiver_field {
            self.log
                .field_method_receivers
                .insert((field, method, self.place(&m.receiver)));
        } else {
            self.log.places.insert(self.place(&m.receiver));
        }
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_field_pat(&mut self, f: &'static syn::FieldPat) {
        if let syn::Member::Named(ident) = &f.member {
            self.log.pattern_fields.insert(name_of(ident));
        }
        syn::visit::visit_field_pat(self, f);
    }

    fn visit_macro(&mut self, mac: &'static syn::Macro) {
        // A macro (`macro_rules!` or its call) may define methods (`impl $t { fn len(&mut
        // self) }`): each name it defines may change what it is called on.
        fn fn_names(tokens: TokenStream, into: &mut BTreeSet<String>) {
            let trees: Vec<TokenTree> = tokens.into_iter().collect();
            for (at, tree) in trees.iter().enumerate() {
                match tree {
                    TokenTree::Group(group) => fn_names(group.stream(), into),
                    TokenTree::Ident(ident) if ident == "fn" => {
                        // `fn forward(&self, ..)` (or `&'a self`) changes nothing; any other
                        // receiver, a `$` in it, or generics may.
                        let shared_self = match trees.get(at + 2) {
                            Some(TokenTree::Group(params))
                                if params.delimiter() == proc_macro2::Delimiter::Parenthesis =>
                            {
                                let params: Vec<String> = params
                                    .stream()
                                    .into_iter()
                                    .take(4)
                                    .map(|t| t.to_string())
                                    .collect();
                                let params: Vec<&str> = params.iter().map(String::as_str).collect();
                                matches!(params[..], ["&", "self", ..] | ["&", "'", _, "self", ..])
                            }
                            _ => false,
                        };
                        if let (Some(TokenTree::Ident(name)), false) =
                            (trees.get(at + 1), shared_self)
                        {
                            into.insert(name.to_string());
                        }
                    }
                    _ => {}
                }
            }
        }
        fn_names(mac.tokens.clone(), &mut self.log.changing_methods);
        let name = mac
            .path
            .segments
            .last()
            .map(|s| name_of(&s.ident))
            .unwrap_or_default();
        self.log.includes |= name == "include";
        // A macro of the user's (`dec!(self, n_head)`, or a `macro_rules! assert` of the
        // crate's) may build any place from the names it is given: every field it names may
        // change.
        if !(READING_MACROS.contains(&name.as_str())
            || EXPRESSION_ARGUMENT_MACROS.contains(&name.as_str()))
            || !self.std_names_certain()
            || self.index.defines_macro(&name)
            || self.imported.contains(&name)
        {
            idents(&mac.tokens, &mut self.log.macro_changed);
        }
        // std's `assert_eq!(layer.attn.kv_cache.is_some(), true)`: its arguments are
        // expressions it evaluates as written (behind a `&`), read as the body's are.
        if let Some(arguments) = self.std_macro_arguments(mac, &name) {
            for argument in arguments {
                self.visit_expr(argument);
            }
            return;
        }
        macro_token_facts(self.log, mac.tokens.clone());
    }
}

/// std's macros whose arguments are expressions, separated by commas, that they evaluate as
/// written (a format string's `{x}` only reads `x`; `name = value` binds a name of its own).
const EXPRESSION_ARGUMENT_MACROS: &[&str] = &[
    "println",
    "print",
    "eprintln",
    "eprint",
    "format",
    "format_args",
    "panic",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "unreachable",
    "todo",
    "unimplemented",
];

impl LogVisit<'_> {
    /// Whether a bare std macro name (`assert!`) in the function visited is std's macro as far
    /// as the crate goes: read alone, a file's parent module may define a `macro_rules!` of the
    /// name before its `mod model;` (its textual scope reaches the file) out of sight.
    fn std_names_certain(&self) -> bool {
        self.stack
            .last()
            .copied()
            .flatten()
            .is_some_and(|id| self.index.whole_crate(self.index.fns[id].module))
    }

    /// The arguments of a call of one of std's [`EXPRESSION_ARGUMENT_MACROS`] by its bare
    /// name, where the name is std's (no macro of the crate's, nor an import, in the
    /// function's module names it) and they parse as expressions.
    fn std_macro_arguments(
        &self,
        mac: &syn::Macro,
        name: &str,
    ) -> Option<&'static syn::punctuated::Punctuated<syn::Expr, syn::Token![,]>> {
        let std_path = mac.path.get_ident().is_some();
        let module = self.index.fns[self.stack.last().copied().flatten()?].module;
        if !std_path
            || !self.std_names_certain()
            || !EXPRESSION_ARGUMENT_MACROS.contains(&name)
            || !self.index.std_macro_in_scope(module, name)
            || self.imported.contains(name)
        {
            return None;
        }
        let arguments = mac
            .parse_body_with(syn::punctuated::Punctuated::parse_terminated)
            .ok()?;
        // Kept with the files' syntax, which the logs point into.
        Some(Box::leak(Box::new(arguments)))
    }
}

/// A macro's tokens, which the scan cannot parse: a struct literal of the struct's name (or
/// `Self`) there is a construction out of sight; `.field =`, `.field +=` and
/// `.field.method(..)` may change the field, and a `mut` anywhere may borrow any field it
/// names mutably.
fn macro_token_facts(log: &mut FileLog, tokens: TokenStream) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let has_mut = trees
        .iter()
        .any(|t| matches!(t, TokenTree::Ident(i) if i == "mut"));
    for (at, tree) in trees.iter().enumerate() {
        match tree {
            TokenTree::Group(group) => {
                macro_token_facts(log, group.stream());
                // `(m.config).width = 0`, `(m.config.width) = 0`: every field inside may be
                // the place changed. (Not a call's arguments: `f(x)`, `.forward(&x)`, `m!(x)`.)
                let arguments = at > 0
                    && match &trees[at - 1] {
                        TokenTree::Ident(_) | TokenTree::Group(_) => true,
                        TokenTree::Punct(p) => matches!(p.as_char(), '!' | '>'),
                        TokenTree::Literal(_) => false,
                    };
                if group.delimiter() == proc_macro2::Delimiter::Parenthesis && !arguments {
                    let mut inside = BTreeSet::new();
                    idents(&group.stream(), &mut inside);
                    match token_place(&trees, at) {
                        TokenPlace::Read => {}
                        TokenPlace::Changed => log.macro_changed.extend(inside),
                        TokenPlace::Called(method, _) => log.macro_reading_calls.extend(
                            inside
                                .into_iter()
                                .map(|field| (method.clone(), field, false)),
                        ),
                    }
                }
            }
            TokenTree::Ident(ident) => {
                let name = ident.to_string();
                let next = trees.get(at + 1);
                if matches!(next, Some(TokenTree::Group(g))
                    if g.delimiter() == proc_macro2::Delimiter::Brace)
                {
                    log.macro_braced.insert(name.clone());
                }
                let after_dot =
                    at > 0 && matches!(&trees[at - 1], TokenTree::Punct(p) if p.as_char() == '.');
                if !after_dot {
                    continue;
                }
                match token_place(&trees, at) {
                    _ if has_mut => {
                        log.macro_changed.insert(name);
                    }
                    TokenPlace::Changed => {
                        log.macro_changed.insert(name);
                    }
                    TokenPlace::Called(method, receiver) => {
                        log.macro_reading_calls.push((method, name, receiver))
                    }
                    TokenPlace::Read => {}
                }
            }
            _ => {}
        }
    }
}

/// What the path of fields and indexes a macro's tokens start at `at` (`.config.sizes[0]`)
/// does with its place.
enum TokenPlace {
    /// Nothing that changes it: a read (`st.config.use_cache,`), or no path.
    Read,
    /// Assigned (`= v`, `+= v`, also where the `=` is joint to what follows, `=*&0`), or a
    /// method called on it that is no [`READING_METHODS`] one (`.cache.push(..)`).
    Changed,
    /// A [`READING_METHODS`] name called on it (`.config.len()`): a change where a method
    /// of that name in sight takes `&mut self`; with whether the name at `at` is the
    /// receiver itself (not a field on the way to it).
    Called(String, bool),
}

/// What happens to the place the tokens at `at` on name (a field `.name`, or a parenthesized
/// place `(m.config)`): see [`TokenPlace`]. A call of `.name(..)` itself is no place.
fn token_place(trees: &[TokenTree], at: usize) -> TokenPlace {
    let is_call = |i: usize| match trees.get(i) {
        Some(TokenTree::Group(g)) => g.delimiter() == proc_macro2::Delimiter::Parenthesis,
        // `.collect::<..>()`
        Some(TokenTree::Punct(p)) => p.as_char() == ':',
        _ => false,
    };
    if matches!(trees.get(at), Some(TokenTree::Ident(_))) && is_call(at + 1) {
        return TokenPlace::Read;
    }
    let mut i = at + 1;
    loop {
        match (trees.get(i), trees.get(i + 1)) {
            (Some(TokenTree::Punct(dot)), Some(TokenTree::Ident(next))) if dot.as_char() == '.' => {
                if is_call(i + 2) {
                    let method = next.to_string();
                    let receiver =
                        i == at + 1 && matches!(trees.get(at), Some(TokenTree::Ident(_)));
                    return match READING_METHODS.contains(&method.as_str()) {
                        true => TokenPlace::Called(method, receiver),
                        false => TokenPlace::Changed,
                    };
                }
                i += 2;
            }
            // `.0` of a tuple field.
            (Some(TokenTree::Punct(dot)), Some(TokenTree::Literal(_))) if dot.as_char() == '.' => {
                i += 2;
            }
            (Some(TokenTree::Group(g)), _) if g.delimiter() == proc_macro2::Delimiter::Bracket => {
                i += 1;
            }
            // `=`, not `==` nor `=>` (joint to something else, `=*&0`, it still assigns).
            (Some(TokenTree::Punct(p)), next) if p.as_char() == '=' => {
                let comparison = p.spacing() == proc_macro2::Spacing::Joint
                    && matches!(next, Some(TokenTree::Punct(q)) if matches!(q.as_char(), '=' | '>'));
                return match comparison {
                    true => TokenPlace::Read,
                    false => TokenPlace::Changed,
                };
            }
            (Some(TokenTree::Punct(p)), Some(TokenTree::Punct(q)))
                if "+-*/%^&|<>".contains(p.as_char()) && q.as_char() == '=' =>
            {
                return TokenPlace::Changed;
            }
            _ => return TokenPlace::Read,
        }
    }
}

/// Macros that only read the places they name, beside the [`EXPRESSION_ARGUMENT_MACROS`]:
/// anyhow's `bail!` and `ensure!`, std's `vec!` and `matches!`, the crate's `check!`. A field
/// they name changes only through what the tokens themselves do (`.n_head = 4`, `&mut`).
const READING_MACROS: &[&str] = &["bail", "ensure", "vec", "matches", "check"];

fn path_segments(path: &syn::Path) -> Vec<String> {
    let mut segments = Vec::new();
    if path.leading_colon.is_some() {
        segments.push("::".to_string());
    }
    segments.extend(path.segments.iter().map(|s| name_of(&s.ident)));
    segments
}

/// What a constructor's `let` holds, as far as sizes go.
#[derive(Clone, Debug)]
enum Local {
    Size(Dim),
    /// A struct of the crate its constructor built here (see [`FieldFact::Nested`]).
    Nested(String, BTreeMap<String, FieldFact>),
    Layer(Layer, Vec<Dim>, Option<ConvGeometry>),
    /// An enum of the crate whose variants hold layers (see [`FieldFact::Variants`]).
    Variants(String, BTreeMap<String, FieldFact>),
    /// A candle-nn kv cache (see [`FieldFact::KvCache`]).
    KvCache(String, Dim),
    /// A `Conv1dConfig` or `Conv2dConfig`, as far as sizes go (its groups among them).
    ConvConfig(ConvGeometry),
    /// A candle-nn `VarBuilder` (a parameter of that type, or `vb.pp("c_attn")` of one).
    VarBuilder,
    /// A tensor a `VarBuilder` gave for the shape asked (`vb.get((out, in), "weight")?`):
    /// every backend of candle-nn checks the shape it loads against that one.
    Weight(Vec<Dim>),
    /// A choice of functions by their paths (`if cfg.use_qkv_bias { linear } else {
    /// linear_no_bias }`, stable_lm's): a call of it builds the layer every one of them
    /// builds alike, where they do.
    Constructors(Vec<Vec<String>>),
    /// The prelude's `None` (a `Linear::new`'s bias handed to a helper as `None`).
    Absent,
    /// Anything else (a name the walk cannot follow).
    Unknown,
}

/// One constructor, read from its top-level statements in order up to its tail.
struct Ctor<'a> {
    index: &'a Index,
    def: &'a FnDef,
    /// Its parameters whose fields may be sizes: by name, the key of their struct.
    configs: BTreeMap<String, String>,
    /// Its `let`s so far.
    locals: BTreeMap<String, Local>,
    /// Names its body's own items and `use`s define (they hide the module's).
    local_items: BTreeSet<String>,
    /// A glob `use` in the body: any path may name something else.
    local_glob: bool,
    /// How many crate helpers deep this reading is (a helper that builds a layer is read
    /// with its arguments, up to [`HELPER_DEPTH`]).
    depth: usize,
    /// Whether this is a construction of its own (not a helper read at a call, which may run
    /// several times in one construction): its plain `let`s of sizes it cannot read are then
    /// one value each (see [`local_size`]), by how many of the name came before.
    own_lets: Option<BTreeMap<String, usize>>,
}

/// How deep the reading of crate helpers that build a layer goes (helpers calling helpers).
const HELPER_DEPTH: usize = 4;

impl<'a> Ctor<'a> {
    fn new(index: &'a Index, def: &'a FnDef) -> Ctor<'a> {
        Ctor::read(index, def, None, 0)
    }

    /// Reads `def`'s statements before its tail. `args`: a crate helper read at a call, with
    /// what each parameter holds there (its config parameters are then not symbols of its
    /// own).
    fn read(
        index: &'a Index,
        def: &'a FnDef,
        args: Option<&BTreeMap<String, Local>>,
        depth: usize,
    ) -> Ctor<'a> {
        let mut ctor = Ctor::prepare(index, def, args, depth);
        let stmts = &def.block.stmts;
        let body = stmts.len().saturating_sub(1);
        for stmt in &stmts[..body] {
            ctor.stmt(stmt);
        }
        ctor
    }

    /// A reading of `def` before its first statement: its parameters (see [`Ctor::read`]).
    fn prepare(
        index: &'a Index,
        def: &'a FnDef,
        args: Option<&BTreeMap<String, Local>>,
        depth: usize,
    ) -> Ctor<'a> {
        let mut ctor = Ctor {
            index,
            def,
            configs: BTreeMap::new(),
            locals: BTreeMap::new(),
            local_items: BTreeSet::new(),
            local_glob: false,
            depth,
            own_lets: args.is_none().then(BTreeMap::new),
        };
        // A generic parameter (`const N: usize`) shadows a constant of the same name.
        for param in &def.sig.generics.params {
            let name = match param {
                syn::GenericParam::Const(c) => name_of(&c.ident),
                syn::GenericParam::Type(t) => name_of(&t.ident),
                syn::GenericParam::Lifetime(_) => continue,
            };
            ctor.local_items.insert(name);
        }
        ctor.local_items.extend(def.impl_generics.iter().cloned());
        let stmts = &def.block.stmts;
        // Names the top level rebinds (a `let`, or a statement macro that may expand to one):
        // `cfg.hidden_size` before and after would be two values under one symbol.
        let mut rebound = BTreeSet::new();
        for stmt in stmts {
            match stmt {
                syn::Stmt::Local(local) => {
                    let mut names = PatNames::default();
                    names.visit_pat(&local.pat);
                    rebound.extend(names.0);
                }
                syn::Stmt::Macro(m) => {
                    idents(&m.mac.tokens, &mut rebound);
                    // A macro other than std's may define items (`fn conv`, `const STRIDE`)
                    // that hide the module's.
                    let std_macro = m.mac.path.get_ident().is_some_and(|name| {
                        let name = name_of(name);
                        (EXPRESSION_MACROS.contains(&name.as_str())
                            || DIVERGING_MACROS.contains(&name.as_str()))
                            && !index.defines_macro(&name)
                    });
                    ctor.local_glob |= !std_macro;
                }
                syn::Stmt::Item(item) => match item {
                    syn::Item::Use(u) => {
                        let mut names = BTreeMap::new();
                        crate::index::use_names(&u.tree, Vec::new(), &mut names);
                        ctor.local_glob |= names.contains_key("");
                        ctor.local_items.extend(names.into_keys());
                    }
                    other => {
                        let mut names = BTreeSet::new();
                        if let Some(ident) = item_ident(other) {
                            names.insert(ident);
                        } else {
                            // A macro item (`include!`) may define any name.
                            ctor.local_glob = true;
                        }
                        ctor.local_items.extend(names);
                    }
                },
                syn::Stmt::Expr(..) => {}
            }
        }
        for input in &def.sig.inputs {
            let syn::FnArg::Typed(typed) = input else {
                continue;
            };
            let syn::Pat::Ident(ident) = &*typed.pat else {
                continue;
            };
            let name = name_of(&ident.ident);
            if ident.mutability.is_some()
                || ident.by_ref.is_some()
                || rebound.contains(&name)
                || args.is_some()
            {
                continue;
            }
            let ty = match &*typed.ty {
                syn::Type::Reference(r) if r.mutability.is_none() => &*r.elem,
                ty => ty,
            };
            if let Some(key) = ctor.struct_key(ty) {
                ctor.configs.insert(name, key);
            }
        }
        // Every other parameter is a name, not a constant: a `VarBuilder`, what the call
        // gives a helper's plain (not `mut`) parameter, or unknown.
        for input in &def.sig.inputs {
            if let syn::FnArg::Typed(typed) = input {
                let mut names = PatNames::default();
                names.visit_pat(&typed.pat);
                let plain = match &*typed.pat {
                    syn::Pat::Ident(ident) => {
                        ident.mutability.is_none()
                            && ident.by_ref.is_none()
                            && ident.subpat.is_none()
                    }
                    _ => false,
                };
                let var_builder = ctor.is_var_builder_type(&typed.ty);
                for name in names.0 {
                    if ctor.configs.contains_key(&name) {
                        continue;
                    }
                    let value = match args.and_then(|args| args.get(&name)) {
                        _ if var_builder => Local::VarBuilder,
                        Some(value) if plain => value.clone(),
                        // `in_channels: usize` of the constructor itself: the one value of
                        // one construction, `new(in_channels)` (no clause can name it so).
                        None if plain && args.is_none() && is_usize(&typed.ty) => {
                            Local::Size(parameter_size(&def.name, &name))
                        }
                        _ => Local::Unknown,
                    };
                    ctor.locals.insert(name, value);
                }
            }
        }
        for name in ctor.configs.keys() {
            ctor.locals.remove(name);
        }
        ctor
    }

    /// The key of the struct a type names (in the constructor's module), where it is one of
    /// the crates read.
    fn struct_key(&self, ty: &syn::Type) -> Option<String> {
        let syn::Type::Path(p) = ty else { return None };
        if p.qself.is_some() {
            return None;
        }
        match self.resolve(&path_segments(&p.path))? {
            Resolved::Type(key) if self.index.struct_item(&key).is_some() => Some(key),
            _ => None,
        }
    }

    /// What a call's function names (`candle_nn::linear`, `KvCache::new`, a crate helper), by
    /// [`Ctor::resolve`]; `None` for a callee that is no plain path.
    fn callee(&self, call: &syn::ExprCall) -> Option<Resolved> {
        let syn::Expr::Path(func) = strip(&call.func) else {
            return None;
        };
        if func.qself.is_some() {
            return None;
        }
        self.resolve(&path_segments(&func.path))
    }

    /// What a path written in the constructor names: nothing known where the body's own
    /// items or `use`s may define it.
    fn resolve(&self, segments: &[String]) -> Option<Resolved> {
        let first = segments.first()?;
        if self.local_glob || self.local_items.contains(first) {
            return None;
        }
        // A `let` or a parameter of the name (a closure, a `fn` pointer) hides the item.
        if segments.len() == 1
            && (self.locals.contains_key(first) || self.configs.contains_key(first))
        {
            return None;
        }
        Some(self.index.resolve(self.def.module, segments))
    }

    fn stmt(&mut self, stmt: &syn::Stmt) {
        if let syn::Stmt::Local(local) = stmt {
            // `#[cfg(..)] let config = ..;` may not be compiled: its names are unknown.
            let plain = inert_attributes(&local.attrs);
            let value = match (&local.init, strip_type(&local.pat)) {
                (Some(init), Some(ident)) if init.diverge.is_none() && plain => {
                    Some((name_of(ident), self.local(&init.expr)))
                }
                _ => None,
            };
            let mut names = PatNames::default();
            names.visit_pat(&local.pat);
            for name in names.0 {
                self.locals.insert(name, Local::Unknown);
            }
            if let Some((name, mut value)) = value {
                // `let head_dim = cfg.head_dim.unwrap_or(..);`: one value, whatever it is.
                if let (Local::Size(dim), Some(lets)) = (&value, &mut self.own_lets)
                    && dim.is_unknown()
                {
                    let nth = lets.entry(name.clone()).or_insert(0);
                    *nth += 1;
                    value = Local::Size(local_size(&self.def.name, &name, *nth));
                }
                self.locals.insert(name, value);
            }
        }
        // A macro may expand to a `let` of any name it is given.
        let mut macros = MacroIdents::default();
        macros.visit_stmt(stmt);
        for name in macros.0 {
            self.locals.insert(name, Local::Unknown);
        }
    }

    /// What a `let`'s value holds.
    fn local(&self, expr: &syn::Expr) -> Local {
        if let Some(joined) = self.either_local(expr) {
            return joined;
        }
        if self.names_prelude(expr, "None") && !self.index.may_import(self.def.module, "None") {
            return Local::Absent;
        }
        if let Some((layer, dims, geometry)) = self.layer(expr).or_else(|| self.layer_new(expr)) {
            return Local::Layer(layer, dims, geometry);
        }
        if let Some((key, fields)) = self.nested(expr) {
            return Local::Nested(key, fields);
        }
        if let Some((key, variants)) = self.variants(expr) {
            return Local::Variants(key, variants);
        }
        if let Some((path, dim)) = self.kv_cache(expr) {
            return Local::KvCache(path, dim);
        }
        if let Some(config) = self.conv_config(expr) {
            return Local::ConvConfig(config);
        }
        if self.var_builder(expr) {
            return Local::VarBuilder;
        }
        if let Some(dims) = self.weight(expr) {
            return Local::Weight(dims);
        }
        if let Some(paths) = function_choice(expr) {
            return Local::Constructors(paths);
        }
        Local::Size(self.size(expr))
    }

    /// `if c { a } else { b }` (or `else if ..`) whose branches are one expression each and
    /// build the same kind of layer (or the same struct of the crate): what all build, a size
    /// where they differ unknown (helium's `lm_head`, tied to the embedding's table or its own
    /// `linear(E, V, ..)`). `None` for anything else.
    fn either_local(&self, expr: &syn::Expr) -> Option<Local> {
        let syn::Expr::If(i) = strip(expr) else {
            return None;
        };
        // `if let Some(embed_tokens) = other { .. }` binds names the branch may read in place
        // of the constructor's: not read.
        struct Binds(bool);
        impl<'ast> Visit<'ast> for Binds {
            fn visit_expr_let(&mut self, _: &'ast syn::ExprLet) {
                self.0 = true;
            }
        }
        let mut binds = Binds(false);
        binds.visit_expr(&i.cond);
        if binds.0 {
            return None;
        }
        fn only_tail(block: &syn::Block) -> Option<&syn::Expr> {
            match block.stmts.as_slice() {
                [syn::Stmt::Expr(tail, None)] => Some(tail),
                _ => None,
            }
        }
        let (_, otherwise) = i.else_branch.as_ref()?;
        let otherwise = match strip(otherwise) {
            syn::Expr::Block(b) if b.attrs.is_empty() && b.label.is_none() => only_tail(&b.block)?,
            // `else if ..`: what that `if` builds, read the same way.
            chained @ syn::Expr::If(_) => chained,
            _ => return None,
        };
        let then = only_tail(&i.then_branch)?;
        let join = |a: &[Dim], b: &[Dim]| -> Vec<Dim> {
            a.iter()
                .zip(b)
                .map(|(a, b)| if a == b { a.clone() } else { Dim::Unknown })
                .collect()
        };
        match (self.local(then), self.local(otherwise)) {
            (Local::Layer(l1, d1, g1), Local::Layer(l2, d2, g2))
                if l1 == l2 && g1 == g2 && d1.len() == d2.len() =>
            {
                Some(Local::Layer(l1, join(&d1, &d2), g1))
            }
            (Local::Nested(k1, f1), Local::Nested(k2, f2)) if k1 == k2 => {
                let fields: BTreeMap<String, FieldFact> = f1
                    .into_iter()
                    .filter_map(|(name, fact)| {
                        let other = f2.get(&name)?;
                        match (&fact, other) {
                            _ if fact == *other => Some((name, fact)),
                            (FieldFact::Layer(l1, d1, g1), FieldFact::Layer(l2, d2, g2))
                                if l1 == l2 && g1 == g2 && d1.len() == d2.len() =>
                            {
                                Some((name, FieldFact::Layer(*l1, join(d1, d2), g1.clone())))
                            }
                            _ => None,
                        }
                    })
                    .collect();
                (!fields.is_empty()).then_some(Local::Nested(k1, fields))
            }
            (Local::Weight(d1), Local::Weight(d2)) if d1.len() == d2.len() => {
                Some(Local::Weight(join(&d1, &d2)))
            }
            _ => None,
        }
    }

    /// What a field of the struct literal is given.
    fn field(&mut self, expr: &syn::Expr) -> Option<FieldFact> {
        // `Some(position_embeddings)` of a layer (std's `Some`: no glob or macro may bring
        // another).
        if let syn::Expr::Call(call) = strip(expr)
            && call.args.len() == 1
            && self.names_prelude(&call.func, "Some")
            && !self.index.may_import(self.def.module, "Some")
        {
            return match self.field(&call.args[0])? {
                layer @ FieldFact::Layer(..) => Some(FieldFact::Optional(Box::new(layer))),
                _ => None,
            };
        }
        if let Some(fact) = self.stored_config(expr) {
            return Some(fact);
        }
        if let Some(path) = self.config_flag(expr) {
            return Some(FieldFact::Flag(path));
        }
        if let Some(path) = self.parameter_flag(expr) {
            return Some(FieldFact::Flag(path));
        }
        if let Some(variant) = self.activation(expr) {
            return Some(FieldFact::Activation(variant));
        }
        if let Some(name) = single_ident(expr) {
            return match self.locals.get(&name)? {
                Local::Layer(layer, dims, geometry) => {
                    Some(FieldFact::Layer(*layer, dims.clone(), geometry.clone()))
                }
                // A size from a constructor's parameter is a layer's only: a `usize` field
                // keeps its own name (`self.in_channels`). One of its `let`s is the field's
                // too (`head_dim` of `cfg.head_dim.unwrap_or(..)` is in `q_proj`'s weight).
                Local::Size(dim) if !dim.is_unknown() && !names_a_parameter_only(dim) => {
                    Some(FieldFact::Size(dim.clone()))
                }
                Local::Nested(key, fields) => Some(FieldFact::Nested(key.clone(), fields.clone())),
                Local::Variants(key, variants) => {
                    Some(FieldFact::Variants(key.clone(), variants.clone()))
                }
                Local::KvCache(path, dim) => Some(FieldFact::KvCache(path.clone(), dim.clone())),
                Local::Weight(dims) => Some(FieldFact::Tensor(dims.clone())),
                _ => None,
            };
        }
        if let Some((key, variants)) = self.variants(expr) {
            return Some(FieldFact::Variants(key, variants));
        }
        if let Some((path, dim)) = self.kv_cache(expr) {
            return Some(FieldFact::KvCache(path, dim));
        }
        if let Some((layer, dims, geometry)) = self.layer(expr).or_else(|| self.layer_new(expr)) {
            return Some(FieldFact::Layer(layer, dims, geometry));
        }
        if let Some((key, fields)) = self.nested(expr) {
            return Some(FieldFact::Nested(key, fields));
        }
        if let Some(dims) = self.weight(expr) {
            return Some(FieldFact::Tensor(dims));
        }
        let dim = self.size(expr);
        (!dim.is_unknown() && !names_a_parameter_only(&dim)).then_some(FieldFact::Size(dim))
    }

    /// `Proj::Conv2d(conv2d(..)?)` of a crate enum whose variant holds one layer, a `let` of
    /// one, or an `if`/`else` each of whose branches gives one of the same enum: the enum's
    /// key, and the layer each variant built holds. `None` where a branch gives anything else,
    /// or two branches build one variant with other sizes.
    fn variants(&self, expr: &syn::Expr) -> Option<(String, BTreeMap<String, FieldFact>)> {
        match strip(expr) {
            syn::Expr::Call(call) if call.args.len() == 1 => {
                let syn::Expr::Path(func) = strip(&call.func) else {
                    return None;
                };
                if func.qself.is_some() {
                    return None;
                }
                let segments = path_segments(&func.path);
                let (variant, prefix) = segments.split_last()?;
                // The enum's path, unless the body's own item or `use` names another.
                let Some(Resolved::Type(key)) = self.resolve(prefix) else {
                    return None;
                };
                // The one type the variant holds (none for a variant of another enum).
                let (module, ty) = self.index.variant_payload(&key, variant)?;
                let held = &call.args[0];
                // A kv cache of candle-nn (gemma3's `KvCache::Rotating(RotatingKvCache::new(2,
                // w))`): the dim it grows on, where the variant holds that cache's type.
                let cache = match single_ident(held) {
                    Some(name) => match self.locals.get(&name) {
                        Some(Local::KvCache(path, dim)) => Some((path.clone(), dim.clone())),
                        _ => None,
                    },
                    None => self.kv_cache(held),
                };
                if let Some((path, dim)) = cache {
                    return (external_type_path(self.index, module, ty).as_deref()
                        == Some(path.as_str()))
                    .then(|| {
                        let fact = FieldFact::KvCache(path, dim);
                        (key, BTreeMap::from([(variant.clone(), fact)]))
                    });
                }
                let (layer, dims, geometry) = match single_ident(held) {
                    Some(name) => match self.locals.get(&name)? {
                        Local::Layer(layer, dims, geometry) => {
                            (*layer, dims.clone(), geometry.clone())
                        }
                        _ => return None,
                    },
                    None => self.layer(held).or_else(|| self.layer_new(held))?,
                };
                // The variant holds a layer of that type (one of another type would not
                // compile, short of a conversion the analysis does not follow).
                if field_layer(self.index, module, ty) != Some(layer) {
                    return None;
                }
                let fact = FieldFact::Layer(layer, dims, geometry);
                Some((key, BTreeMap::from([(variant.clone(), fact)])))
            }
            syn::Expr::Path(_) => match self.locals.get(&single_ident(expr)?)? {
                Local::Variants(key, variants) => Some((key.clone(), variants.clone())),
                _ => None,
            },
            syn::Expr::If(branch) => {
                let then_value = block_value(&branch.then_branch)?;
                // `if let Some(w) = sliding_window { .. }`: the names it binds may shadow the
                // constructor's own; only a cache's capacity may read them.
                if binds_names(&branch.cond) {
                    let syn::Expr::Let(binding) = strip(&branch.cond) else {
                        return None;
                    };
                    let mut bound = PatNames::default();
                    bound.visit_pat(&binding.pat);
                    if bound
                        .0
                        .iter()
                        .any(|name| self.reads_beside_capacity(then_value, name))
                    {
                        return None;
                    }
                }
                let (_, otherwise) = branch.else_branch.as_ref()?;
                let (key, mut variants) = self.variants(then_value)?;
                let (other_key, others) = match strip(otherwise) {
                    syn::Expr::Block(b) if b.attrs.is_empty() && b.label.is_none() => {
                        self.variants(block_value(&b.block)?)?
                    }
                    nested @ syn::Expr::If(_) => self.variants(nested)?,
                    _ => return None,
                };
                if key != other_key {
                    return None;
                }
                for (variant, fact) in others {
                    match variants.get(&variant) {
                        Some(known) if *known != fact => return None,
                        _ => {
                            variants.insert(variant, fact);
                        }
                    }
                }
                Some((key, variants))
            }
            _ => None,
        }
    }

    /// Whether `expr` names `name` other than in the capacity of a kv cache it builds
    /// (`KvCache::Rotating(RotatingKvCache::new(2, sliding_window))` reads it only there).
    fn reads_beside_capacity(&self, expr: &syn::Expr, name: &str) -> bool {
        if let syn::Expr::Call(call) = strip(expr) {
            if self.kv_cache(expr).is_some() {
                return call
                    .args
                    .first()
                    .is_some_and(|dim| mentions_in_expr(dim, name) > 0);
            }
            return mentions_in_expr(&call.func, name) > 0
                || call
                    .args
                    .iter()
                    .any(|arg| self.reads_beside_capacity(arg, name));
        }
        mentions_in_expr(expr, name) > 0
    }

    /// `KvCache::new(2, max)`, `ConcatKvCache::new(2)`, `RotatingKvCache::new(2, max)` of
    /// candle-nn: the cache's type path and the dim it grows on, where that size is known.
    fn kv_cache(&self, expr: &syn::Expr) -> Option<(String, Dim)> {
        let syn::Expr::Call(call) = strip(expr) else {
            return None;
        };
        let Resolved::External(mut path) = self.callee(call)? else {
            return None;
        };
        if path.pop().as_deref() != Some("new") {
            return None;
        }
        let path = path.join("::");
        let dim = self.size(call.args.first()?);
        (KV_CACHES.contains(&path.as_str()) && !dim.is_unknown()).then_some((path, dim))
    }

    /// `Activation::Relu`, `Activation::Elu(1.0)`: the variant of candle-nn's `Activation`.
    fn activation(&self, expr: &syn::Expr) -> Option<String> {
        let path = match strip(expr) {
            syn::Expr::Path(p) if p.qself.is_none() => &p.path,
            syn::Expr::Call(call) => match strip(&call.func) {
                syn::Expr::Path(p) if p.qself.is_none() => &p.path,
                _ => return None,
            },
            _ => return None,
        };
        let Resolved::External(resolved) = self.resolve(&path_segments(path))? else {
            return None;
        };
        match resolved.as_slice() {
            [first, .., ty, variant]
                if first == "candle_nn"
                    && ty == "Activation"
                    && ACTIVATION_VARIANTS.contains(&variant.as_str()) =>
            {
                Some(variant.clone())
            }
            _ => None,
        }
    }

    /// `cfg.clone()`, `cfg` (by value), `*cfg` or `cfg.to_owned()` of a config parameter:
    /// the config stored whole.
    fn stored_config(&self, expr: &syn::Expr) -> Option<FieldFact> {
        let (root, cloned) = match strip(expr) {
            syn::Expr::MethodCall(m)
                if matches!(m.method.to_string().as_str(), "clone" | "to_owned")
                    && m.args.is_empty()
                    && m.turbofish.is_none() =>
            {
                (single_ident(&m.receiver)?, true)
            }
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                (single_ident(&u.expr)?, false)
            }
            other => (single_ident(other)?, false),
        };
        if self.locals.contains_key(&root) {
            return None;
        }
        let key = self.configs.get(&root)?;
        // A `clone` of the user's own may give other sizes: only a derived one copies them.
        if cloned && !derives_clone(self.index, key) {
            return None;
        }
        Some(FieldFact::Config(root, key.clone()))
    }

    /// `linear(IN, OUT, vb)?` and the other candle-nn constructors: the layer and its weight's
    /// dims (candle-nn 0.11 asks its `VarBuilder` for exactly those), and a convolution's
    /// geometry where its config is known.
    fn layer(&self, expr: &syn::Expr) -> Option<(Layer, Vec<Dim>, Option<ConvGeometry>)> {
        let call = fallible_call(expr)?;
        self.layer_call(call)
    }

    /// A fallible call that builds a layer: a candle-nn constructor, or a crate helper that
    /// returns one (read with the call's arguments).
    fn layer_call(&self, call: &syn::ExprCall) -> Option<(Layer, Vec<Dim>, Option<ConvGeometry>)> {
        self.built_by(call, |ctor, callee| ctor.layer_of(callee, call))
    }

    /// What a call builds, by `build` of the function it calls: of a choice of functions
    /// (`linear_layer(..)` of `let linear_layer = if cfg.use_qkv_bias { linear } else {
    /// linear_no_bias };`), what every choice builds alike.
    fn built_by<T: PartialEq>(
        &self,
        call: &syn::ExprCall,
        build: impl Fn(&Self, Resolved) -> Option<T>,
    ) -> Option<T> {
        if let Some(name) = single_ident(&call.func)
            && let Some(Local::Constructors(paths)) = self.locals.get(&name)
        {
            let mut built = paths.iter().map(|path| build(self, self.resolve(path)?));
            let first = built.next()??;
            return built.all(|b| b.as_ref() == Some(&first)).then_some(first);
        }
        build(self, self.callee(call)?)
    }

    /// The layer a call of the function `callee` builds (see [`Ctor::layer_call`]).
    fn layer_of(
        &self,
        callee: Resolved,
        call: &syn::ExprCall,
    ) -> Option<(Layer, Vec<Dim>, Option<ConvGeometry>)> {
        let path = match callee {
            Resolved::External(path) => path,
            Resolved::Fn(id) => return self.helper_layer(id, call),
            _ => return None,
        };
        let (form, layer, arity) = layer_constructor(&path)?;
        let args: Vec<&syn::Expr> = call.args.iter().collect();
        if args.len() != arity {
            return None;
        }
        let dims = match form {
            "linear" | "linear_b" => vec![self.size(args[1]), self.size(args[0])],
            "embedding" => vec![self.size(args[0]), self.size(args[1])],
            "norm" => vec![self.size(args[0])],
            // `group_norm(num_groups, num_channels, eps, vb)`: the weight is `[num_channels]`.
            "group_norm" => vec![self.size(args[1])],
            _ => {
                let (cin, cout, kernel) =
                    (self.size(args[0]), self.size(args[1]), self.size(args[2]));
                let config = self.conv_config(args[3]);
                let groups = config.as_ref().map_or(Dim::Unknown, |c| c.groups.clone());
                let mut dims = vec![cout, cin.div(groups), kernel.clone()];
                if form == "conv2d" {
                    dims.push(kernel);
                }
                return Some((layer, dims, config));
            }
        };
        Some((layer, dims, None))
    }

    /// A crate helper that builds a layer (`fn conv1d(in, out, k, config, vb) ->
    /// Result<Conv1d>`), read with what the call gives its parameters: its statements, then
    /// its tail (`Ok(Conv1d::new(weight, Some(bias), config))` or a fallible constructor's
    /// call). Silent for a helper with generics, a `return` (another exit), or a tail of
    /// another form.
    fn helper_layer(
        &self,
        id: usize,
        call: &syn::ExprCall,
    ) -> Option<(Layer, Vec<Dim>, Option<ConvGeometry>)> {
        let def = &self.index.fns[id];
        let generic = def
            .sig
            .generics
            .params
            .iter()
            .any(|p| !matches!(p, syn::GenericParam::Lifetime(_)));
        if self.depth >= HELPER_DEPTH
            || generic
            || def.conditional
            || def.trait_of.is_some()
            || def.sig.receiver().is_some()
            || def.sig.inputs.len() != call.args.len()
            // `#[cfg(..)]` on a parameter: the arguments may line up with others.
            || def.sig.inputs.iter().any(|input| match input {
                syn::FnArg::Typed(typed) => !typed.attrs.is_empty(),
                syn::FnArg::Receiver(_) => true,
            })
            || has_return(def.block)
        {
            return None;
        }
        let mut args = BTreeMap::new();
        for (input, arg) in def.sig.inputs.iter().zip(&call.args) {
            if let syn::FnArg::Typed(typed) = input
                && let syn::Pat::Ident(ident) = &*typed.pat
            {
                args.insert(name_of(&ident.ident), self.local(arg));
            }
        }
        let helper = Ctor::read(self.index, def, Some(&args), self.depth + 1);
        let Some(syn::Stmt::Expr(tail, None)) = def.block.stmts.last() else {
            return None;
        };
        match strip(tail) {
            syn::Expr::Call(ok) if helper.is_ok(&ok.func) && ok.args.len() == 1 => {
                let value = &ok.args[0];
                if let Some(name) = single_ident(value) {
                    return match helper.locals.get(&name)? {
                        Local::Layer(layer, dims, geometry) => {
                            Some((*layer, dims.clone(), geometry.clone()))
                        }
                        _ => None,
                    };
                }
                helper.layer(value).or_else(|| helper.layer_new(value))
            }
            syn::Expr::Call(inner) => helper.layer_call(inner),
            _ => None,
        }
    }

    /// `Inner::new(cfg, vb.pp("inner"))?` of a struct of the crate whose constructor ends in
    /// the struct's literal (`Ok(Self { .. })`): what every construction of it gives its
    /// fields ([`constructed_fields`]), with the sizes of the constructor's config parameters
    /// (`cfg.hidden_size` there) named by what this call passes (`cfg.hidden_size`, or
    /// `cfg.vision.hidden_size` for `&cfg.vision`). A fact with a size of anything else is
    /// left out.
    fn nested(&self, expr: &syn::Expr) -> Option<(String, BTreeMap<String, FieldFact>)> {
        // A constructor that cannot fail (with_tracing's `Linear::from_weights(w, None)`)
        // ends in the literal itself.
        let (call, fallible) = match (fallible_call(expr), strip(expr)) {
            (Some(call), _) => (call, true),
            (None, syn::Expr::Call(call)) => (call, false),
            _ => return None,
        };
        if self.depth >= HELPER_DEPTH {
            return None;
        }
        // A choice of helpers (with_tracing's `linear` or `linear_no_bias`): what all build.
        self.built_by(call, |ctor, callee| ctor.nested_of(callee, call, fallible))
    }

    /// What a call of the function `callee` builds (see [`Ctor::nested`]).
    fn nested_of(
        &self,
        callee: Resolved,
        call: &syn::ExprCall,
        fallible: bool,
    ) -> Option<(String, BTreeMap<String, FieldFact>)> {
        let id = match callee {
            Resolved::Fn(id) => id,
            // `Patches::new`: the type's own function of the name (it wins over a trait's).
            Resolved::Assoc(key, name) => {
                let own: Vec<usize> = self
                    .index
                    .methods(&key, &name)
                    .iter()
                    .copied()
                    .filter(|&id| self.index.fns[id].trait_of.is_none())
                    .collect();
                match own.as_slice() {
                    [id] => *id,
                    _ => return None,
                }
            }
            _ => return None,
        };
        let def = &self.index.fns[id];
        let generic = def
            .sig
            .generics
            .params
            .iter()
            .any(|p| !matches!(p, syn::GenericParam::Lifetime(_)));
        if generic
            || def.conditional
            || def.trait_of.is_some()
            || def.sig.receiver().is_some()
            || def.sig.inputs.len() != call.args.len()
            // `#[cfg(..)]` on a parameter: the arguments may line up with others.
            || def.sig.inputs.iter().any(|input| match input {
                syn::FnArg::Typed(typed) => !typed.attrs.is_empty(),
                syn::FnArg::Receiver(_) => true,
            })
            || has_return(def.block)
        {
            return None;
        }
        // Its tail is the literal: this call is one of the constructions the facts hold for.
        let Some(syn::Stmt::Expr(tail, None)) = def.block.stmts.last() else {
            return None;
        };
        // `Ok(Self { .. })`: the call's `?`, `unwrap` or `expect` is the `Result`'s (a bare
        // `Self` may have an `unwrap` of its own). Called without them: `Self { .. }` of a
        // function that returns `Self`.
        let callee = Ctor::read(self.index, def, Some(&BTreeMap::new()), self.depth + 1);
        let literal = match strip(tail) {
            syn::Expr::Call(ok) if fallible => {
                if ok.args.len() != 1 || !callee.is_ok(&ok.func) {
                    return None;
                }
                strip(&ok.args[0])
            }
            literal @ syn::Expr::Struct(_)
                if !fallible
                    && matches!(&def.sig.output, syn::ReturnType::Type(_, ty)
                        if matches!(&**ty, syn::Type::Path(p)
                            if p.qself.is_none() && p.path.is_ident("Self"))) =>
            {
                literal
            }
            _ => return None,
        };
        let syn::Expr::Struct(literal) = literal else {
            return None;
        };
        if literal.qself.is_some() || literal.rest.is_some() {
            return None;
        }
        let key = match path_segments(&literal.path).as_slice() {
            [only] if only == "Self" => def.owner.clone()?,
            [first, ..] if body_declares(def.block, first) => return None,
            segments => match self.index.resolve(def.module, segments) {
                Resolved::Type(key) => key,
                _ => return None,
            },
        };
        let fields = constructed_fields(self.index, &key);
        // The callee's config parameters, by name: what this call passes as each.
        let mut prefixes: BTreeMap<String, String> = BTreeMap::new();
        for (input, arg) in def.sig.inputs.iter().zip(&call.args) {
            let syn::FnArg::Typed(typed) = input else {
                return None;
            };
            let syn::Pat::Ident(ident) = &*typed.pat else {
                continue;
            };
            // The parameter's type must be the config's own: a `Deref` coercion
            // (`&Config` as `&Vision`) would name another struct's sizes.
            let param_ty = match &*typed.ty {
                syn::Type::Reference(r) if r.mutability.is_none() => &*r.elem,
                ty => ty,
            };
            let Some(param_key) = callee.struct_key(param_ty) else {
                continue;
            };
            if let Some((prefix, key)) = self.config_path(arg)
                && key == param_key
            {
                prefixes.insert(name_of(&ident.ident), prefix);
            }
        }
        let mut mapped: BTreeMap<String, FieldFact> = fields
            .into_iter()
            .filter_map(|(field, fact)| Some((field, rename_fact(&fact, &prefixes)?)))
            .collect();
        // Where the constructions disagree (candle's `with_tracing::Linear`, built by
        // `linear(d1, d2, vb)`, `linear_no_bias(..)` and `from_weights(..)`), this call's own:
        // `inner` of `linear_no_bias(e, 3 * e, vb)?` is a `Linear[e -> 3 * e]` here.
        // Where both say something (one construction of the struct in all), the one that
        // knows more sizes: `linear_no_bias(d1, d2, vb)`'s own `d1` renamed is unknown.
        for (field, fact) in self.call_construction(def, call, literal, &key) {
            let better = mapped
                .get(&field)
                .is_none_or(|agreed| unknown_sizes(&fact) < unknown_sizes(agreed));
            if better {
                mapped.insert(field, fact);
            }
        }
        (!mapped.is_empty()).then_some((key, mapped))
    }

    /// What the struct literal `literal`, the tail of `def`, gives the fields that keep it
    /// ([`stable_fields`]), `def` read with what `call` passes its parameters (in this
    /// constructor's sizes).
    fn call_construction(
        &self,
        def: &FnDef,
        call: &syn::ExprCall,
        literal: &syn::ExprStruct,
        key: &str,
    ) -> BTreeMap<String, FieldFact> {
        let mut facts = BTreeMap::new();
        let stable = stable_fields(self.index, key);
        let Some((module, item)) = self.index.struct_item(key) else {
            return facts;
        };
        // `#[cfg(..)]` on a parameter: the arguments may line up with others.
        let plain_inputs = def.sig.inputs.iter().all(|input| match input {
            syn::FnArg::Typed(typed) => typed.attrs.is_empty(),
            syn::FnArg::Receiver(_) => false,
        });
        if stable.is_empty() || !plain_inputs || def.sig.inputs.len() != call.args.len() {
            return facts;
        }
        let mut args = BTreeMap::new();
        for (input, arg) in def.sig.inputs.iter().zip(&call.args) {
            if let syn::FnArg::Typed(typed) = input
                && let syn::Pat::Ident(ident) = &*typed.pat
            {
                args.insert(name_of(&ident.ident), self.local(arg));
            }
        }
        let mut helper = Ctor::read(self.index, def, Some(&args), self.depth + 1);
        // A field written twice (one under `cfg`) gives nothing.
        let mut seen = BTreeSet::new();
        let mut twice = BTreeSet::new();
        for field in &literal.fields {
            let syn::Member::Named(ident) = &field.member else {
                continue;
            };
            let name = name_of(ident);
            if !seen.insert(name.clone()) {
                twice.insert(name.clone());
            }
            if !inert_attributes(&field.attrs) || !stable.contains(&name) {
                continue;
            }
            if let Some(fact) = helper.field(&field.expr)
                && fact_fits(self.index, module, item, &name, &fact)
            {
                facts.insert(name, fact);
            }
        }
        facts.retain(|name, _| !twice.contains(name));
        facts
    }

    /// `cfg`, `&cfg`, `cfg.clone()` or `&cfg.vision` of a config parameter: the path its
    /// sizes are named by (`cfg`, `cfg.vision`), and the key of its struct.
    fn config_path(&self, expr: &syn::Expr) -> Option<(String, String)> {
        let mut steps = Vec::new();
        let mut cloned = false;
        let mut at = match strip(expr) {
            syn::Expr::Reference(r) if r.mutability.is_none() => strip(&r.expr),
            syn::Expr::MethodCall(m)
                if m.method == "clone" && m.args.is_empty() && m.turbofish.is_none() =>
            {
                cloned = true;
                strip(&m.receiver)
            }
            other => other,
        };
        let root = loop {
            at = match at {
                syn::Expr::Field(f) => match &f.member {
                    syn::Member::Named(ident) => {
                        steps.push(name_of(ident));
                        strip(&f.base)
                    }
                    syn::Member::Unnamed(_) => return None,
                },
                syn::Expr::Path(_) => break single_ident(at)?,
                _ => return None,
            };
        };
        if self.locals.contains_key(&root) {
            return None;
        }
        let mut key = self.configs.get(&root)?.clone();
        steps.reverse();
        for step in &steps {
            let (module, ty) = self.index.field(&key, step)?;
            let syn::Type::Path(p) = ty else { return None };
            key = match self.index.resolve(module, &path_segments(&p.path)) {
                Resolved::Type(key) if self.index.struct_item(&key).is_some() => key,
                _ => return None,
            };
        }
        // A `clone` of the user's own may give other sizes: only a derived one copies them.
        if cloned && !derives_clone(self.index, &key) {
            return None;
        }
        let path = std::iter::once(root)
            .chain(steps)
            .collect::<Vec<_>>()
            .join(".");
        Some((path, key))
    }

    /// `Ok`: the prelude's, unless the body or module names another.
    fn is_ok(&self, func: &syn::Expr) -> bool {
        self.names_prelude(func, "Ok")
    }

    /// Whether `expr` is the prelude's `name` (`Ok`, `Some`, `None`): that name alone, which
    /// neither the body nor the module names otherwise.
    fn names_prelude(&self, expr: &syn::Expr, name: &str) -> bool {
        let syn::Expr::Path(p) = strip(expr) else {
            return false;
        };
        p.qself.is_none()
            && p.path.is_ident(name)
            && matches!(
                self.resolve(&path_segments(&p.path)),
                Some(Resolved::Unknown)
            )
    }

    /// Whether a `Linear::new`'s bias argument is `None` or `Some` of a tensor the constructor
    /// shows is `[size]` (`optional`), or a `LayerNorm::new`'s is such a tensor.
    fn bias_fits(&self, bias: &syn::Expr, size: &Dim, optional: bool) -> bool {
        // A glob or a macro may bring another `Some` or `None`.
        let prelude = |expr, name| {
            self.names_prelude(expr, name) && !self.index.may_import(self.def.module, name)
        };
        let held = match strip(bias) {
            held if !optional => held,
            none if prelude(none, "None") => return true,
            // A helper's parameter the call gave `None`.
            name if single_ident(name)
                .is_some_and(|name| matches!(self.locals.get(&name), Some(Local::Absent))) =>
            {
                return true;
            }
            syn::Expr::Call(call) if call.args.len() == 1 && prelude(&call.func, "Some") => {
                &call.args[0]
            }
            _ => return false,
        };
        let dims = match single_ident(held) {
            Some(name) => match self.locals.get(&name) {
                Some(Local::Weight(dims)) => dims.clone(),
                _ => return false,
            },
            None => match self.weight(held) {
                Some(dims) => dims,
                None => return false,
            },
        };
        dims.len() == 1 && dims[0] == *size && !size.is_unknown()
    }

    /// `Conv1d::new(weight, bias, config)`, `Conv2d::new(..)`, `Linear::new(weight, bias)`,
    /// `LayerNorm::new(weight, bias, eps)`, `RmsNorm::new(weight, eps)` of candle-nn, with a
    /// weight of known rank from a `VarBuilder` (and a bias that fits it): the layer, its
    /// weight's dims, and a convolution's geometry where its config is known.
    fn layer_new(&self, expr: &syn::Expr) -> Option<(Layer, Vec<Dim>, Option<ConvGeometry>)> {
        let syn::Expr::Call(call) = strip(expr) else {
            return None;
        };
        let Resolved::External(path) = self.callee(call)? else {
            return None;
        };
        let [first, .., ty, method] = path.as_slice() else {
            return None;
        };
        if first != "candle_nn" || method != "new" || path.len() > 4 {
            return None;
        }
        let (layer, rank, arity) = match ty.as_str() {
            "Conv1d" => (Layer::Conv1d, 3, 3),
            "Conv2d" => (Layer::Conv2d, 4, 3),
            "Linear" => (Layer::Linear, 2, 2),
            "LayerNorm" => (Layer::LayerNorm, 1, 3),
            "RmsNorm" => (Layer::RmsNorm, 1, 2),
            _ => return None,
        };
        if call.args.len() != arity {
            return None;
        }
        let weight = match single_ident(&call.args[0]) {
            Some(name) => match self.locals.get(&name)? {
                Local::Weight(dims) => dims.clone(),
                _ => return None,
            },
            None => self.weight(&call.args[0])?,
        };
        if weight.len() != rank {
            return None;
        }
        // candle-nn's `Linear` and `LayerNorm` broadcast their bias onto the output: only a
        // bias of the weight's first dim (or none) keeps the output's shape.
        let bias_fits = match layer {
            Layer::Linear => self.bias_fits(&call.args[1], &weight[0], true),
            Layer::LayerNorm => self.bias_fits(&call.args[1], &weight[0], false),
            _ => true,
        };
        if !bias_fits {
            return None;
        }
        let geometry = match layer {
            Layer::Conv1d | Layer::Conv2d => self.conv_config(&call.args[2]),
            _ => None,
        };
        Some((layer, weight, geometry))
    }

    /// Whether a type is candle-nn's `VarBuilder` (or `&` one).
    fn is_var_builder_type(&self, ty: &syn::Type) -> bool {
        let ty = match ty {
            syn::Type::Reference(r) => &*r.elem,
            ty => ty,
        };
        let syn::Type::Path(p) = ty else {
            return false;
        };
        if p.qself.is_some() {
            return false;
        }
        matches!(self.resolve(&path_segments(&p.path)),
            Some(Resolved::External(path)) if path.first().is_some_and(|f| f == "candle_nn")
                && path.last().is_some_and(|l| l == "VarBuilder"))
    }

    /// `vb`, `vb.pp("c_attn")`, `vb.push_prefix(..)` of a `VarBuilder`.
    fn var_builder(&self, expr: &syn::Expr) -> bool {
        match strip(expr) {
            syn::Expr::Path(_) => single_ident(expr)
                .is_some_and(|name| matches!(self.locals.get(&name), Some(Local::VarBuilder))),
            syn::Expr::MethodCall(m)
                if matches!(m.method.to_string().as_str(), "pp" | "push_prefix")
                    && m.args.len() == 1
                    && m.turbofish.is_none() =>
            {
                self.var_builder(&m.receiver)
            }
            syn::Expr::Reference(r) => self.var_builder(&r.expr),
            _ => false,
        }
    }

    /// `vb.get((out, in), "weight")?` (or `get_with_hints`): the dims asked for, one per
    /// element of a tuple, or one known size.
    fn weight(&self, expr: &syn::Expr) -> Option<Vec<Dim>> {
        if let Some(table) = self.embedding_table(expr) {
            return Some(table);
        }
        let syn::Expr::Try(t) = strip(expr) else {
            return None;
        };
        let syn::Expr::MethodCall(m) = strip(&t.expr) else {
            return None;
        };
        let arity = match m.method.to_string().as_str() {
            "get" => 2,
            "get_with_hints" => 3,
            _ => return None,
        };
        if m.args.len() != arity || m.turbofish.is_some() || !self.var_builder(&m.receiver) {
            return None;
        }
        match strip(&m.args[0]) {
            syn::Expr::Tuple(tuple) => Some(tuple.elems.iter().map(|e| self.size(e)).collect()),
            // A single size: known, or it may be a shape held in a `let` (`let shape = (a,
            // b);`, which no size of a `let` the scan cannot read may stand for).
            other => {
                let dim = self.size(other);
                (!dim.is_unknown() && !names_a_let(&dim)).then(|| vec![dim])
            }
        }
    }

    /// `embed_tokens.embeddings().clone()` (or without `.clone()`) of a candle-nn `Embedding`
    /// built here: its table's dims, `[V, E]` (a tied `lm_head`'s weight).
    fn embedding_table(&self, expr: &syn::Expr) -> Option<Vec<Dim>> {
        // Candle's own methods only: a trait of the crate's may give candle-nn's `Embedding`
        // an `embeddings(self)` found first (a review's transposed table).
        let candles = |name: &str| {
            !self.index.may_be_foreign_method(name)
                && !self.index.may_be_any_types_method(name)
                && !self.index.includes_code(self.def.module)
        };
        if !candles("embeddings") || !candles("clone") {
            return None;
        }
        let mut expr = strip(expr);
        if let syn::Expr::MethodCall(m) = expr
            && m.method == "clone"
            && m.args.is_empty()
        {
            expr = strip(&m.receiver);
        }
        let syn::Expr::MethodCall(m) = expr else {
            return None;
        };
        if m.method != "embeddings" || !m.args.is_empty() || m.turbofish.is_some() {
            return None;
        }
        // `embed_tokens.embeddings()`, or `base_model.embed_tokens.embeddings()` of a struct
        // of the crate built here (qwen2's tied head).
        let table = match strip(&m.receiver) {
            syn::Expr::Field(field) => {
                let syn::Member::Named(name) = &field.member else {
                    return None;
                };
                match self.locals.get(&single_ident(&field.base)?)? {
                    Local::Nested(_, fields) => match fields.get(&name_of(name))? {
                        FieldFact::Layer(layer, dims, geometry) => {
                            (*layer, dims.clone(), geometry.clone())
                        }
                        _ => return None,
                    },
                    _ => return None,
                }
            }
            receiver => match self.locals.get(&single_ident(receiver)?)? {
                Local::Layer(layer, dims, geometry) => (*layer, dims.clone(), geometry.clone()),
                _ => return None,
            },
        };
        match table {
            (Layer::Embedding, dims, None) if dims.len() == 2 => Some(dims),
            _ => None,
        }
    }

    /// A convolution's config: `Default::default()`, `Conv2dConfig { padding: 1,
    /// ..Default::default() }`, or a `let` of one. A field it does not show is candle-nn's
    /// default where the rest is `Default::default()`, unknown otherwise.
    fn conv_config(&self, expr: &syn::Expr) -> Option<ConvGeometry> {
        let defaults = ConvGeometry::default_config;
        match strip(expr) {
            syn::Expr::Path(_) => match self.locals.get(&single_ident(expr)?)? {
                Local::ConvConfig(config) => Some(config.clone()),
                _ => None,
            },
            syn::Expr::Call(call) if call.args.is_empty() => {
                self.is_default(&call.func).then(defaults)
            }
            syn::Expr::Struct(literal) if literal.qself.is_none() => {
                let Resolved::External(path) = self.resolve(&path_segments(&literal.path))? else {
                    return None;
                };
                let last = path.last()?;
                if path.first()? != "candle_nn"
                    || !matches!(last.as_str(), "Conv1dConfig" | "Conv2dConfig")
                {
                    return None;
                }
                let rest_default = match &literal.rest {
                    Some(rest) => match strip(rest) {
                        syn::Expr::Call(call) => {
                            call.args.is_empty() && self.is_default(&call.func)
                        }
                        _ => false,
                    },
                    None => false,
                };
                let mut config = match rest_default {
                    true => defaults(),
                    false => ConvGeometry::default(),
                };
                for field in &literal.fields {
                    let syn::Member::Named(name) = &field.member else {
                        continue;
                    };
                    let size = self.size(&field.expr);
                    match name.to_string().as_str() {
                        "groups" => config.groups = size,
                        "padding" => config.padding = size,
                        "stride" => config.stride = size,
                        "dilation" => config.dilation = size,
                        _ => {}
                    }
                }
                Some(config)
            }
            _ => None,
        }
    }

    /// `Default::default` (std's, through the prelude), or `Conv2dConfig::default`.
    fn is_default(&self, func: &syn::Expr) -> bool {
        let syn::Expr::Path(p) = func else {
            return false;
        };
        let segments = path_segments(&p.path);
        match segments.as_slice() {
            [default, method] if default == "Default" && method == "default" => {
                // The prelude's `Default`, unless the crate defines or imports its own.
                matches!(self.resolve(&segments[..1]), Some(Resolved::Unknown))
            }
            [.., config, method] if method == "default" => {
                matches!(self.resolve(&segments[..segments.len() - 1]),
                    Some(Resolved::External(path)) if path.first().is_some_and(|f| f == "candle_nn")
                        && matches!(config.as_str(), "Conv1dConfig" | "Conv2dConfig"))
            }
            _ => false,
        }
    }

    /// A size: literals, named constants, `let`s, config fields and arithmetic on them.
    fn size(&self, expr: &syn::Expr) -> Dim {
        match strip(expr) {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(int),
                ..
            }) if matches!(int.suffix(), "" | "usize") => {
                int.base10_parse::<u64>().map_or(Dim::Unknown, Dim::lit)
            }
            syn::Expr::Path(p) if p.qself.is_none() => {
                let segments = path_segments(&p.path);
                if let [name] = segments.as_slice()
                    && let Some(local) = self.locals.get(name)
                {
                    return match local {
                        Local::Size(dim) => dim.clone(),
                        _ => Dim::Unknown,
                    };
                }
                match self.resolve(&segments) {
                    Some(Resolved::Const(Some(n))) => Dim::lit(n),
                    _ => Dim::Unknown,
                }
            }
            // `patch_embeddings.num_patches` of a struct built here: the size it was built with.
            syn::Expr::Field(f)
                if let (Some(base), syn::Member::Named(member)) =
                    (single_ident(&f.base), &f.member)
                    && let Some(Local::Nested(_, fields)) = self.locals.get(&base) =>
            {
                match fields.get(&name_of(member)) {
                    Some(FieldFact::Size(dim)) => dim.clone(),
                    _ => Dim::Unknown,
                }
            }
            syn::Expr::Field(_) => self.config_field(strip(expr)).unwrap_or(Dim::Unknown),
            syn::Expr::MethodCall(call) => self.config_method(call).unwrap_or(Dim::Unknown),
            syn::Expr::Binary(b) => {
                let (left, right) = (self.size(&b.left), self.size(&b.right));
                match b.op {
                    syn::BinOp::Add(_) => left.add(right),
                    syn::BinOp::Sub(_) => left.sub(right),
                    syn::BinOp::Mul(_) => left.mul(right),
                    syn::BinOp::Div(_) => left.div(right),
                    syn::BinOp::Rem(_) => left.rem(right),
                    _ => Dim::Unknown,
                }
            }
            _ => Dim::Unknown,
        }
    }

    /// `cfg.head_dim()`: a `&self` method of the config's own type that returns a `usize`
    /// and whose body is one expression over its fields (`self.hidden_size /
    /// self.num_attention_heads`), read with `cfg.` for `self.`.
    fn config_method(&self, call: &syn::ExprMethodCall) -> Option<Dim> {
        if !call.args.is_empty() || call.turbofish.is_some() {
            return None;
        }
        let root = single_ident(&call.receiver)?;
        let key = self.configs.get(&root)?;
        let [id] = self.index.methods(key, &name_of(&call.method)) else {
            return None;
        };
        let method = &self.index.fns[*id];
        let by_ref = takes_ref_self(method.sig);
        let returns_usize =
            matches!(&method.sig.output, syn::ReturnType::Type(_, ty) if is_usize(ty));
        // A trait's method may be another one where the trait is not in scope.
        if !by_ref
            || !returns_usize
            || method.sig.inputs.len() != 1
            || method.trait_of.is_some()
            || method.conditional
        {
            return None;
        }
        let [syn::Stmt::Expr(body, None)] = method.block.stmts.as_slice() else {
            return None;
        };
        let mut inner = Ctor {
            index: self.index,
            def: method,
            configs: BTreeMap::from([("self".to_string(), key.clone())]),
            locals: BTreeMap::new(),
            local_items: BTreeSet::new(),
            local_glob: false,
            depth: self.depth,
            own_lets: None,
        };
        // Its body's paths are resolved in its own module; no `let` to follow.
        inner.locals.clear();
        let dim = inner.size(body);
        let prefix = format!("{root}.");
        Some(dim.substitute(&mut |factor| {
            match factor {
                Factor::Symbol(name) => name
                    .strip_prefix("self.")
                    .map(|rest| Dim::symbol(format!("{prefix}{rest}"))),
                _ => None,
            }
        }))
    }

    /// `cfg.hidden_size` (or `cfg.vision.hidden_size`): a `usize` field of a config parameter
    /// of a struct type the index reads (no `Deref` between), as a symbol named by its path.
    fn config_field(&self, expr: &syn::Expr) -> Option<Dim> {
        let (path, ty) = self.config_member(expr)?;
        is_usize(ty).then(|| Dim::symbol(path))
    }

    /// `cfg.use_flash_attn`: a `bool` field of a config parameter, by its path, where any
    /// value may come: the config's struct and the field are `pub` (code may set it either
    /// way), and the constructor mentions the field nowhere else (no `if cfg.use_flash_attn
    /// { bail!(..) }` that leaves one value only; no macro naming it).
    fn config_flag(&self, expr: &syn::Expr) -> Option<String> {
        let (path, ty) = self.config_member(expr)?;
        if !is_bool(ty) || path.starts_with("self.") {
            return None;
        }
        let mut steps = path.split('.');
        let root_param = steps.next()?;
        let key = self.configs.get(root_param)?.clone();
        let root_key = key.clone();
        // Every call in sight hands the constructor its caller's own config (not
        // `&Config::default()`, `&Config::v1(false)` or a literal).
        let id = self
            .index
            .fns
            .iter()
            .position(|f| std::ptr::eq(f, self.def))?;
        if !config_reaches_either(self.index, id, root_param, &mut BTreeSet::new()) {
            return None;
        }
        let steps: Vec<&str> = steps.collect();
        let (last, between) = steps.split_last()?;
        // Each step a `pub` field of a `pub` struct.
        let mut key = key;
        for (i, step) in steps.iter().enumerate() {
            let (_, item) = self.index.struct_item(&key)?;
            let field = item.fields.iter().find(|f| {
                f.ident
                    .as_ref()
                    .is_some_and(|ident| name_of(ident) == *step)
            })?;
            // The flag's own field may be the crate's only (`pub(crate) use_flash_attn`, as
            // Mixtral's and StableLM's configs hold it) where a function others may call
            // sets it from its own parameter (`Config::v0_1_8x7b(use_flash_attn)`).
            let settable = matches!(field.vis, syn::Visibility::Public(_))
                || (i == between.len() && set_from_a_parameter(self.index, &key, step));
            if !matches!(item.vis, syn::Visibility::Public(_)) || !settable {
                return None;
            }
            if i < between.len() {
                let (module, ty) = self.index.field(&key, step)?;
                let syn::Type::Path(p) = ty else { return None };
                key = match self.index.resolve(module, &path_segments(&p.path)) {
                    Resolved::Type(key) => key,
                    _ => return None,
                };
            }
        }
        // The flag read once, and its config otherwise only read field by field: passed on
        // (`check(cfg)?`, `cfg.validate()?`), dereferenced or renamed, it may be tested
        // where the walk does not look.
        struct Mentions<'p> {
            path: &'p str,
            root: &'p str,
            last: &'p str,
            count: usize,
            /// The config's own `&self` methods that read no flag (`cfg.head_dim()`).
            reading: &'p BTreeSet<String>,
        }
        fn pure_chain(f: &syn::ExprField) -> bool {
            match &*f.base {
                syn::Expr::Field(inner) => pure_chain(inner),
                syn::Expr::Path(p) => p.qself.is_none() && p.path.get_ident().is_some(),
                _ => false,
            }
        }
        impl<'ast> Visit<'ast> for Mentions<'_> {
            fn visit_expr_field(&mut self, f: &'ast syn::ExprField) {
                let text: String = f.to_token_stream().to_string().split_whitespace().collect();
                if text == self.path {
                    self.count += 1;
                    return;
                }
                if pure_chain(f) {
                    if self.path.starts_with(&format!("{text}.")) {
                        self.count += 2;
                    }
                    return;
                }
                syn::visit::visit_expr_field(self, f);
            }
            fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
                // `config: cfg.clone()`: a copy tests nothing.
                let bare_root = matches!(&*m.receiver, syn::Expr::Path(p)
                    if p.qself.is_none()
                        && p.path.get_ident().is_some_and(|ident| name_of(ident) == self.root));
                if bare_root && m.method == "clone" && m.args.is_empty() {
                    return;
                }
                // StableLM's `cfg.head_dim()`: reads other fields only.
                if bare_root && self.reading.contains(&name_of(&m.method)) {
                    m.args.iter().for_each(|arg| self.visit_expr(arg));
                    return;
                }
                syn::visit::visit_expr_method_call(self, m);
            }
            fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
                if p.qself.is_none()
                    && p.path
                        .get_ident()
                        .is_some_and(|ident| name_of(ident) == self.root)
                {
                    self.count += 2;
                }
            }
            fn visit_macro(&mut self, mac: &'ast syn::Macro) {
                let mut names = BTreeSet::new();
                idents(&mac.tokens, &mut names);
                if names.contains(self.last) || names.contains(self.root) {
                    self.count += 2;
                }
            }
        }
        let root = path.split('.').next().unwrap_or_default().to_string();
        // Only for a flag of the config itself: a method may read a nested struct whole.
        let reading = match between.is_empty() {
            true => flag_free_methods(self.index, &root_key, last),
            false => BTreeSet::new(),
        };
        let mut mentions = Mentions {
            path: &path,
            root: &root,
            last,
            count: 0,
            reading: &reading,
        };
        mentions.visit_block(self.def.block);
        if mentions.count == 1 && self.flag_read_elsewhere(last, &[&root_key, &key]) {
            return None;
        }
        (mentions.count == 1).then_some(path)
    }

    /// `use_flash_attn` of the constructor's own `bool` parameter that either value may reach
    /// (see [`parameter_either`]): candle's `Model::new(use_flash_attn, ..)` handing it to a
    /// private `DecoderLayer::new`, and that to a private `Attention::new`. Named by the
    /// function and parameter (`Attention::new(use_flash_attn)`), which no caller renames.
    fn parameter_flag(&self, expr: &syn::Expr) -> Option<String> {
        let name = single_ident(expr)?;
        // (A `let` of the name is ruled out there: the parameter is never rebound.)
        if self.own_lets.is_none() || self.configs.contains_key(&name) {
            return None;
        }
        let id = self
            .index
            .fns
            .iter()
            .position(|f| std::ptr::eq(f, self.def))?;
        parameter_either(self.index, id, &name, &mut BTreeSet::new())
            .then(|| format!("{}({name})", self.def.display))
    }

    /// Whether code that may build this type or test its config, but this constructor's one
    /// read and the type's methods testing their own field (`self.use_flash_attn`), reads a
    /// field named `name` (`cfg.use_flash_attn`, `self.cfg.use_flash_attn`, a pattern), sets
    /// one to a literal (`Config { use_flash_attn: false, ..cfg.clone() }`) or has a macro
    /// naming it: a caller that bails on one value (`Model::new` testing the config before it
    /// builds a private layer), a config built with one value, a stored copy or a closure may
    /// rule a value out where this constructor cannot see. That code: the functions of the
    /// constructor's module and its descendants, those naming the type, those taking the
    /// config (or a type holding one: `Arc<Config>`, `ModelConfig { inner: Config }`), and
    /// the methods of the config, of such holders and of the type, wherever written.
    fn flag_read_elsewhere(&self, name: &str, configs: &[&str]) -> bool {
        struct Reads<'n> {
            name: &'n str,
            own_methods: bool,
            /// A method of the config other crates may call with any value: its
            /// `self.use_flash_attn = use_flash_attn` sets the flag, testing nothing.
            public_setter: bool,
            reads: usize,
        }
        impl<'ast> Visit<'ast> for Reads<'_> {
            fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
                let sets_flag = matches!(strip(&a.left), syn::Expr::Field(f)
                    if matches!(&f.member, syn::Member::Named(ident) if name_of(ident) == self.name)
                        && matches!(strip(&f.base), syn::Expr::Path(p)
                            if p.qself.is_none() && p.path.is_ident("self")));
                if self.public_setter && sets_flag && single_ident(&a.right).is_some() {
                    self.visit_expr(&a.right);
                    return;
                }
                syn::visit::visit_expr_assign(self, a);
            }
            fn visit_expr_field(&mut self, f: &'ast syn::ExprField) {
                let named = matches!(&f.member, syn::Member::Named(ident)
                    if name_of(ident) == self.name);
                let on_self = matches!(&*f.base, syn::Expr::Path(p)
                    if p.qself.is_none() && p.path.is_ident("self"));
                if named && !(self.own_methods && on_self) {
                    self.reads += 1;
                }
                syn::visit::visit_expr_field(self, f);
            }
            // `Config { use_flash_attn: false, ..cfg.clone() }`: a config built with one
            // value, which may be the only one the type is ever built from.
            fn visit_field_value(&mut self, f: &'ast syn::FieldValue) {
                let named = matches!(&f.member, syn::Member::Named(ident)
                    if name_of(ident) == self.name);
                if named
                    && matches!(
                        &f.expr,
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Bool(_),
                            ..
                        })
                    )
                {
                    self.reads += 1;
                }
                syn::visit::visit_field_value(self, f);
            }
            fn visit_field_pat(&mut self, f: &'ast syn::FieldPat) {
                if matches!(&f.member, syn::Member::Named(ident) if name_of(ident) == self.name) {
                    self.reads += 1;
                }
                syn::visit::visit_field_pat(self, f);
            }
            fn visit_macro(&mut self, mac: &'ast syn::Macro) {
                let mut names = BTreeSet::new();
                idents(&mac.tokens, &mut names);
                if names.contains(self.name) {
                    self.reads += 1;
                }
            }
        }
        // The functions that may build this type: its module's and their descendants' (a
        // private constructor's callers), and any naming the type (`Inner::new(cfg)`).
        let home = self.def.module;
        let within = |mut module: ModId| loop {
            if module == home {
                return true;
            }
            match self.index.modules[module].parent {
                Some(parent) => module = parent,
                None => return false,
            }
        };
        let type_name = self
            .def
            .owner
            .as_deref()
            .and_then(|key| self.index.struct_item(key))
            .map(|(_, item)| name_of(&item.ident));
        struct Names(BTreeSet<String>);
        impl<'ast> Visit<'ast> for Names {
            fn visit_ident(&mut self, ident: &'ast proc_macro2::Ident) {
                self.0.insert(name_of(ident));
            }
            fn visit_macro(&mut self, mac: &'ast syn::Macro) {
                idents(&mac.tokens, &mut self.0);
            }
        }
        let names_type = |def: &FnDef| {
            let mut names = Names(BTreeSet::new());
            names.visit_block(def.block);
            type_name.as_ref().is_none_or(|name| names.0.contains(name))
        };
        // A type that names the config anywhere (`&Config`, `Arc<Config>`), or a struct with
        // a field of such a type (`ModelConfig { inner: Config }`).
        struct TypePaths(Vec<Vec<String>>);
        impl<'ast> Visit<'ast> for TypePaths {
            fn visit_type_path(&mut self, p: &'ast syn::TypePath) {
                self.0.push(path_segments(&p.path));
                syn::visit::visit_type_path(self, p);
            }
        }
        let mentions_config = |module: ModId, ty: &syn::Type, depth: usize| -> bool {
            fn go(
                ctor: &Ctor<'_>,
                configs: &[&str],
                module: ModId,
                ty: &syn::Type,
                depth: usize,
            ) -> bool {
                let mut paths = TypePaths(Vec::new());
                paths.visit_type(ty);
                paths
                    .0
                    .iter()
                    .any(|path| match ctor.index.resolve(module, path) {
                        Resolved::Type(key) if configs.contains(&key.as_str()) => true,
                        Resolved::Type(key) if depth > 0 => ctor
                            .index
                            .struct_item(&key)
                            .is_some_and(|(field_module, item)| {
                                item.fields
                                    .iter()
                                    .any(|f| go(ctor, configs, field_module, &f.ty, depth - 1))
                            }),
                        _ => false,
                    })
            }
            go(self, configs, module, ty, depth)
        };
        // Taking the config, or a method of it, of a holder or of this type wherever written
        // (`cfg.flash()`, `impl super::attention::Attention { .. Self::new(cfg) .. }`).
        let takes_config = |def: &FnDef| {
            def.owner.as_deref().is_some_and(|owner| {
                configs.contains(&owner) || Some(owner) == self.def.owner.as_deref()
            }) || def.sig.inputs.iter().any(|input| match input {
                syn::FnArg::Typed(typed) => mentions_config(def.module, &typed.ty, 1),
                syn::FnArg::Receiver(_) => def.owner.as_deref().is_some_and(|owner| {
                    self.index.struct_item(owner).is_some_and(|(module, item)| {
                        item.fields
                            .iter()
                            .any(|f| mentions_config(module, &f.ty, 0))
                    })
                }),
            })
        };
        // The config's own methods that cannot read the flag (`cfg.head_dim()`).
        let free: BTreeSet<String> = configs
            .iter()
            .flat_map(|key| flag_free_methods(self.index, key, name))
            .collect();
        let mut total = 0;
        for def in &self.index.fns {
            // (The cheap tests first: `names_type` reads the whole body.)
            let takes = takes_config(def);
            if !within(def.module) && !takes && !names_type(def) {
                continue;
            }
            let mut reads = Reads {
                name,
                own_methods: def.owner.is_some() && def.owner == self.def.owner,
                public_setter: def
                    .owner
                    .as_deref()
                    .is_some_and(|owner| configs.contains(&owner))
                    && plain_setter(self.index, def, name),
                reads: 0,
            };
            reads.visit_block(def.block);
            total += reads.reads;
            // A config used whole where the walk does not look (`format!("{cfg:?}")`, `cfg ==
            // &preset`, `serde_json::to_string(cfg)`) may be tested on its flag.
            if takes && !std::ptr::eq(def, self.def) {
                let mut names: Vec<String> = def
                    .sig
                    .inputs
                    .iter()
                    .filter_map(|input| match input {
                        syn::FnArg::Typed(typed) if mentions_config(def.module, &typed.ty, 1) => {
                            let mut bound = PatNames::default();
                            bound.visit_pat(&typed.pat);
                            Some(bound.0)
                        }
                        _ => None,
                    })
                    .flatten()
                    .collect();
                // A method of the config that uses itself whole may set another field from
                // the flag (`fn fixed(mut self)` testing `format!("{self:?}")`).
                if def
                    .owner
                    .as_deref()
                    .is_some_and(|owner| configs.contains(&owner))
                {
                    names.push("self".to_string());
                }
                if names
                    .iter()
                    .any(|config| used_whole(self.index, def, config, name, &free))
                {
                    total += 2;
                }
            }
        }
        // The one read of the constructor itself.
        total > 1
    }

    /// A field of a config parameter (`cfg.vision.hidden_size`), by its path, with its
    /// declared type.
    fn config_member(&self, expr: &syn::Expr) -> Option<(String, &'a syn::Type)> {
        let mut steps = Vec::new();
        let mut at = expr;
        let root = loop {
            at = match strip(at) {
                syn::Expr::Field(f) => match &f.member {
                    syn::Member::Named(ident) => {
                        steps.push(name_of(ident));
                        &f.base
                    }
                    syn::Member::Unnamed(_) => return None,
                },
                syn::Expr::Path(p) if p.qself.is_none() && p.path.is_ident("self") => {
                    break "self".to_string();
                }
                syn::Expr::Path(_) => break single_ident(at)?,
                _ => return None,
            };
        };
        steps.reverse();
        let mut key = self.configs.get(&root)?.clone();
        let (last, path) = steps.split_last()?;
        for step in path {
            let (module, ty) = self.index.field(&key, step)?;
            let syn::Type::Path(p) = ty else { return None };
            key = match self.index.resolve(module, &path_segments(&p.path)) {
                Resolved::Type(key) if self.index.struct_item(&key).is_some() => key,
                _ => return None,
            };
        }
        let (_, ty) = self.index.field(&key, last)?;
        let text: Vec<&str> = std::iter::once(root.as_str())
            .chain(steps.iter().map(String::as_str))
            .collect();
        Some((text.join("."), ty))
    }
}

/// The size a constructor's `usize` parameter gives (`new(in_channels)` of `fn new(..,
/// in_channels: usize, ..)`): one value within one construction, as a config's field is. The
/// parentheses keep it apart from any dim a contract names; a nested construction's sizes
/// rename only config fields, so such a size never leaves its own constructor.
fn parameter_size(function: &str, parameter: &str) -> Dim {
    Dim::symbol(format!("{function}({parameter})"))
}

/// The size a constructor's plain top-level `let` holds where the analysis cannot read its
/// value (`let head_dim = cfg.head_dim.unwrap_or(hidden_size / num_heads);`): one value
/// within one construction, as a parameter's (see [`parameter_size`]), `new(let head_dim)`;
/// the `nth` of that name (a `let` shadowing another) is `new(let head_dim#2)`. Only where
/// it stands as a size does the analysis take it: where only a `usize` stands (not
/// `vb.get(shape, ..)`'s shape, which may be a tuple; see [`names_a_let`]).
fn local_size(function: &str, name: &str, nth: usize) -> Dim {
    match nth {
        1 => Dim::symbol(format!("{function}(let {name})")),
        _ => Dim::symbol(format!("{function}(let {name}#{nth})")),
    }
}

/// Whether a size names a constructor's own value: a parameter's (see [`parameter_size`]) or
/// a `let`'s (see [`local_size`]).
pub(crate) fn names_a_constructor_value(dim: &Dim) -> bool {
    dim.symbols().iter().any(|name| name.ends_with(')'))
}

/// Whether a size names a constructor's `let` the scan cannot read (see [`local_size`]),
/// which may hold any type where Rust takes more than a `usize` (`vb.get(shape, ..)`).
fn names_a_let(dim: &Dim) -> bool {
    dim.symbols().iter().any(|name| name.contains("(let "))
}

/// Whether a size names a constructor's parameter (not one of its `let`s).
fn names_a_parameter_only(dim: &Dim) -> bool {
    dim.symbols()
        .iter()
        .any(|name| name.ends_with(')') && !name.contains("(let "))
}

/// The call whose success `expr` takes: `f(..)?`, `f(..).unwrap()`, `f(..).expect(..)`.
fn fallible_call(expr: &syn::Expr) -> Option<&syn::ExprCall> {
    match success_of(expr)? {
        syn::Expr::Call(call) => Some(call),
        _ => None,
    }
}

/// The expression whose success `expr` takes: `e` of `e?`, `e.unwrap()`, `e.expect(..)`.
pub(crate) fn success_of(expr: &syn::Expr) -> Option<&syn::Expr> {
    match strip(expr) {
        syn::Expr::Try(t) => Some(strip(&t.expr)),
        syn::Expr::MethodCall(m)
            if m.method == "unwrap" || (m.method == "expect" && m.args.len() == 1) =>
        {
            Some(strip(&m.receiver))
        }
        _ => None,
    }
}

/// A fact of a nested construction with the sizes of its constructor's config parameters
/// renamed to what the call passed (`config.hidden_size` → `cfg.hidden_size`); `None` where a
/// size names anything else (a parameter the call does not pass a config for, a constant).
/// How many of a fact's sizes are unknown (a nested struct's, all of its fields').
fn unknown_sizes(fact: &FieldFact) -> usize {
    let count = |dims: &[Dim]| dims.iter().filter(|d| d.is_unknown()).count();
    match fact {
        FieldFact::Layer(_, dims, geometry) => {
            count(dims)
                + geometry.as_ref().map_or(0, |g| {
                    count(&[
                        g.padding.clone(),
                        g.stride.clone(),
                        g.dilation.clone(),
                        g.groups.clone(),
                    ])
                })
        }
        FieldFact::Size(dim) | FieldFact::KvCache(_, dim) => usize::from(dim.is_unknown()),
        FieldFact::Tensor(dims) => count(dims),
        FieldFact::Nested(_, fields) | FieldFact::Variants(_, fields) => {
            fields.values().map(unknown_sizes).sum()
        }
        FieldFact::Activation(_) | FieldFact::Config(..) | FieldFact::Flag(_) => 0,
        FieldFact::Optional(held) => unknown_sizes(held),
    }
}

/// The paths an `if` or a `match` chooses between where each branch is a plain path and
/// nothing else (`if c { linear } else { linear_no_bias }`), two or more.
fn function_choice(expr: &syn::Expr) -> Option<Vec<Vec<String>>> {
    fn branch(block: &syn::Block, into: &mut Vec<Vec<String>>) -> Option<()> {
        let [syn::Stmt::Expr(value, None)] = block.stmts.as_slice() else {
            return None;
        };
        plain(value, into)
    }
    fn plain(expr: &syn::Expr, into: &mut Vec<Vec<String>>) -> Option<()> {
        match strip(expr) {
            syn::Expr::Path(p)
                if p.qself.is_none()
                    && p.path
                        .segments
                        .iter()
                        .all(|s| matches!(s.arguments, syn::PathArguments::None)) =>
            {
                into.push(path_segments(&p.path));
                Some(())
            }
            syn::Expr::Block(b) if b.label.is_none() => branch(&b.block, into),
            syn::Expr::If(i) => {
                branch(&i.then_branch, into)?;
                plain(&i.else_branch.as_ref()?.1, into)
            }
            syn::Expr::Match(m) => m.arms.iter().try_for_each(|arm| plain(&arm.body, into)),
            _ => None,
        }
    }
    if !matches!(strip(expr), syn::Expr::If(_) | syn::Expr::Match(_)) {
        return None;
    }
    let mut paths = Vec::new();
    plain(expr, &mut paths)?;
    (paths.len() >= 2).then_some(paths)
}

/// Whether the `bool` field `field` of the struct `key` is read only by the type's own methods
/// (`if self.use_flash_attn { .. }`), so that no code tests it to rule a value out after
/// construction. The field is private to a module (and its descendants, all read): there, no
/// read of it through another value (`attn.use_flash_attn`, `m.attn.use_flash_attn`, a
/// pattern; a read of another struct's field of the name, `cfg.use_flash_attn` of a `cfg:
/// &Config`, is not one) and no macro naming it; and no `macro_rules!` of the crate names it.
/// (Which of the type's own methods may test it before another runs is the walk's to say:
/// see `Walker::called_where_field_is_read`.)
fn flag_read_only_to_branch(index: &Index, key: &str, field: &str) -> bool {
    let Some((module, item)) = index.struct_item(key) else {
        return false;
    };
    let Some(declared) = item
        .fields
        .iter()
        .find(|f| f.ident.as_ref().is_some_and(|i| name_of(i) == field))
    else {
        return false;
    };
    // Where code may read the field: its module, or its parent's for `pub(super)`.
    let scope = match &declared.vis {
        syn::Visibility::Inherited => module,
        syn::Visibility::Restricted(r) if r.in_token.is_none() && r.path.is_ident("super") => {
            match index.modules[module].parent {
                Some(parent) => parent,
                None => return false,
            }
        }
        _ => return false,
    };
    let in_scope = |m: ModId| index.within(m, scope);
    if index
        .modules
        .iter()
        .enumerate()
        .any(|(id, m)| in_scope(id) && (m.opaque || m.unread_children))
    {
        return false;
    }
    // A `macro_rules!` of the crate that names it may read it wherever it expands (a macro
    // called where the field is visible is read with the body there).
    struct Macros<'f>(&'f str, bool);
    impl<'ast> Visit<'ast> for Macros<'_> {
        fn visit_item_macro(&mut self, mac: &'ast syn::ItemMacro) {
            self.1 |= mac.mac.tokens.to_string().contains(self.0);
        }
    }
    let mut macros = Macros(field, false);
    for file in index.crate_sources(module) {
        macros.visit_file(file);
    }
    if macros.1 {
        return false;
    }
    struct Reads<'f> {
        field: &'f str,
        key: &'f str,
        index: &'f Index,
        def: &'f FnDef,
        other: bool,
        /// A `Deref` in the crate: `model.use_flash_attn` may reach through to the field.
        derefs: bool,
    }
    impl Reads<'_> {
        /// Whether `base` is certainly of another struct than `key` (`cfg` of a parameter
        /// `cfg: &Config`, `*cfg`, `self.cfg` of a field declared `Config`, `self` in a method
        /// of another type): its field of the name is not the flag.
        fn of_another_struct(&self, base: &syn::Expr) -> bool {
            let (index, def) = (self.index, self.def);
            if self.derefs {
                return false;
            }
            let mut base = strip(base);
            while let syn::Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Deref(_),
                expr,
                ..
            }) = base
            {
                base = strip(expr);
            }
            let ty = match base {
                syn::Expr::Path(p) if p.qself.is_none() && p.path.is_ident("self") => {
                    return def.owner.as_deref().is_some_and(|owner| {
                        owner != self.key && index.struct_item(owner).is_some()
                    });
                }
                syn::Expr::Path(p) if p.qself.is_none() => {
                    let Some(name) = p.path.get_ident().map(name_of) else {
                        return false;
                    };
                    if binds_anywhere(def.block, &name) {
                        return false;
                    }
                    def.sig.inputs.iter().find_map(|input| match input {
                        syn::FnArg::Typed(t)
                            if matches!(&*t.pat, syn::Pat::Ident(i)
                            if name_of(&i.ident) == name) =>
                        {
                            Some(&*t.ty)
                        }
                        _ => None,
                    })
                }
                syn::Expr::Field(f)
                    if matches!(strip(&f.base), syn::Expr::Path(p)
                    if p.qself.is_none() && p.path.is_ident("self")) =>
                {
                    let (Some(owner), syn::Member::Named(ident)) = (&def.owner, &f.member) else {
                        return false;
                    };
                    index.field(owner, &name_of(ident)).map(|(_, ty)| ty)
                }
                _ => None,
            };
            let Some(mut ty) = ty else {
                return false;
            };
            while let syn::Type::Reference(r) = ty {
                ty = &r.elem;
            }
            let syn::Type::Path(p) = ty else {
                return false;
            };
            p.qself.is_none()
                && matches!(index.resolve(def.module, &path_segments(&p.path)),
                    Resolved::Type(other) if other != self.key
                        && index.struct_item(&other).is_some()
                        && !index.is_alias(&other))
        }
    }
    impl<'ast> Visit<'ast> for Reads<'_> {
        fn visit_expr_field(&mut self, f: &'ast syn::ExprField) {
            if matches!(&f.member, syn::Member::Named(ident) if name_of(ident) == self.field) {
                let own = self.def.owner.as_deref() == Some(self.key)
                    && matches!(strip(&f.base), syn::Expr::Path(p)
                        if p.qself.is_none() && p.path.is_ident("self"));
                if !own && !self.of_another_struct(&f.base) {
                    self.other = true;
                }
            }
            syn::visit::visit_expr_field(self, f);
        }
        fn visit_field_pat(&mut self, f: &'ast syn::FieldPat) {
            self.other |=
                matches!(&f.member, syn::Member::Named(ident) if name_of(ident) == self.field);
            syn::visit::visit_field_pat(self, f);
        }
        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            self.other |= mac.tokens.to_string().contains(self.field);
        }
    }
    struct Derefs(bool);
    impl<'ast> Visit<'ast> for Derefs {
        fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
            self.0 |= i.trait_.as_ref().is_some_and(|(_, path, _)| {
                path.segments
                    .last()
                    .is_some_and(|s| s.ident == "Deref" || s.ident == "DerefMut")
            });
            syn::visit::visit_item_impl(self, i);
        }
    }
    let mut derefs = Derefs(false);
    for file in index.crate_sources(module) {
        derefs.visit_file(file);
    }
    index
        .fns
        .iter()
        .filter(|def| in_scope(def.module))
        .all(|def| {
            let mut reads = Reads {
                field,
                key,
                index,
                def,
                other: false,
                derefs: derefs.0,
            };
            reads.visit_block(def.block);
            !reads.other
        })
}

/// How many calls up from a constructor a `bool` parameter is followed (see
/// [`parameter_either`]).
const FLAG_CHAIN_DEPTH: usize = 8;

/// Whether either value of the `bool` parameter `param` of `index.fns[id]` may reach the one
/// place its body reads it, so that a method testing what it was given (`if
/// self.use_flash_attn`) runs either branch for some caller: the parameter is a plain
/// `param: bool` its body names exactly once and never rebinds (no test before that may rule a
/// value out, no macro naming it); every call of the function in its crate is in sight and
/// passes, there, a parameter of its caller of which the same holds, and it has a caller; or
/// other crates may call it (`pub`, of a `pub` type, in a `pub` module path from the root of a
/// library or of a file read alone), with either value whatever the calls in sight pass. A
/// call of a function of the first kind that passes anything else (`false`, `!flag`,
/// `cfg.flash`), the function named other than as a call's (`.map(Attention::new)`,
/// `<Attention>::new`), through an alias or a renaming `use`, or by a macro, leaves the
/// parameter the callers' choice: no. A method (called by method syntax) is never one.
fn parameter_either(
    index: &Index,
    id: FnId,
    param: &str,
    seen: &mut BTreeSet<(FnId, String)>,
) -> bool {
    let Some((f, position, ty)) = chain_link(index, id, param, seen) else {
        return false;
    };
    if !is_bool(ty) || mentions_of(f.block, param) != 1 {
        return false;
    }
    // Other crates may call it with either value, whatever the calls in sight pass (a test's
    // `Model::new(false, ..)`).
    if callable_by_other_crates(index, f) {
        return true;
    }
    // Every call is in sight: the crate's (a `pub(crate)` function's), or the module's and its
    // descendants' (a private one's, in one file the macro reads).
    let callers_in_sight = match f.private_to {
        _ if index.whole_crate(f.module) => index
            .modules
            .iter()
            .all(|m| m.krate != index.modules[f.module].krate || (!m.opaque && !m.unread_children)),
        Some(home) => index.modules.iter().enumerate().all(|(m, module)| {
            !index.within(m, home) || (!module.opaque && !module.unread_children)
        }),
        None => false,
    };
    let Some(sites) = call_sites(index, id, position) else {
        return false;
    };
    if !callers_in_sight || sites.is_empty() {
        return false;
    }
    sites.into_iter().all(|(caller, arg)| {
        single_ident(arg).is_some_and(|name| parameter_either(index, caller, &name, seen))
    })
}

/// Whether a function of the crate builds the struct `key` with its `bool` field `field` from
/// its own parameter that either value may reach (see [`parameter_either`]): `pub fn
/// v0_1_8x7b(use_flash_attn: bool) -> Self { Self { .., use_flash_attn } }`.
fn set_from_a_parameter(index: &Index, key: &str, field: &str) -> bool {
    let Some((module, _)) = index.struct_item(key) else {
        return false;
    };
    let krate = index.modules[module].krate;
    index.fns.iter().enumerate().any(|(id, def)| {
        if index.modules[def.module].krate != krate {
            return false;
        }
        struct Literals<'a> {
            index: &'a Index,
            def: &'a FnDef,
            key: &'a str,
            field: &'a str,
            params: Vec<String>,
        }
        impl<'ast> Visit<'ast> for Literals<'_> {
            fn visit_expr_struct(&mut self, literal: &'ast syn::ExprStruct) {
                let segments = path_segments(&literal.path);
                let this = match segments.as_slice() {
                    [only] if only == "Self" => self.def.owner.as_deref() == Some(self.key),
                    _ => matches!(self.index.resolve(self.def.module, &segments),
                        Resolved::Type(found) if found == self.key),
                };
                if this && literal.qself.is_none() {
                    for value in &literal.fields {
                        if matches!(&value.member, syn::Member::Named(ident)
                            if name_of(ident) == self.field)
                            && let Some(name) = single_ident(&value.expr)
                        {
                            self.params.push(name);
                        }
                    }
                }
                syn::visit::visit_expr_struct(self, literal);
            }
        }
        let mut literals = Literals {
            index,
            def,
            key,
            field,
            params: Vec::new(),
        };
        literals.visit_block(def.block);
        literals
            .params
            .iter()
            .any(|param| parameter_either(index, id, param, &mut BTreeSet::new()))
    })
}

/// Whether the config parameter `param` of `index.fns[id]` may be any config the callers
/// choose: the function is never rebound, and each call of it in sight passes its caller's
/// own parameter (`cfg`, `&cfg`, `cfg.clone()`) of which the same holds, or the function has
/// no call in sight, or other crates may call it (see [`parameter_either`]). A call that
/// passes anything else (`&Config::default()`, a preset, a literal) fixes what the flag is.
fn config_reaches_either(
    index: &Index,
    id: FnId,
    param: &str,
    seen: &mut BTreeSet<(FnId, String)>,
) -> bool {
    let Some((f, position, _)) = chain_link(index, id, param, seen) else {
        return false;
    };
    if callable_by_other_crates(index, f) {
        return true;
    }
    let Some(sites) = call_sites(index, id, position) else {
        return false;
    };
    sites.into_iter().all(|(caller, arg)| {
        let mut arg = strip(arg);
        loop {
            arg = match arg {
                syn::Expr::Reference(r) if r.mutability.is_none() => strip(&r.expr),
                syn::Expr::MethodCall(m) if m.method == "clone" && m.args.is_empty() => {
                    strip(&m.receiver)
                }
                _ => break,
            };
        }
        single_ident(arg).is_some_and(|name| config_reaches_either(index, caller, &name, seen))
    })
}

/// One link of a chain of calls that hands a value down (see [`parameter_either`],
/// [`config_reaches_either`]): the function, and the place and type of its parameter `param`,
/// where the function is neither under `cfg`, a trait's, nor a method (called by method
/// syntax, which the scan of calls does not read: `factory.make(flag)`), the parameter is a
/// plain name its body never rebinds, and the chain is neither a cycle nor too deep.
fn chain_link<'i>(
    index: &'i Index,
    id: FnId,
    param: &str,
    seen: &mut BTreeSet<(FnId, String)>,
) -> Option<(&'i FnDef, usize, &'i syn::Type)> {
    let f = &index.fns[id];
    if f.conditional
        || f.sig.receiver().is_some()
        || f.trait_of.is_some()
        || !seen.insert((id, param.to_string()))
        || seen.len() > FLAG_CHAIN_DEPTH
    {
        return None;
    }
    let (position, ty) = plain_parameter(f, param)?;
    (!binds_anywhere(f.block, param)).then_some((f, position, ty))
}

/// The place and type of `f`'s parameter `param`, where it is a plain name (`param: T`, not
/// `mut`, `ref`, a pattern or under an attribute).
fn plain_parameter<'f>(f: &'f FnDef, param: &str) -> Option<(usize, &'f syn::Type)> {
    f.sig
        .inputs
        .iter()
        .enumerate()
        .find_map(|(at, input)| match input {
            syn::FnArg::Typed(typed)
                if typed.attrs.is_empty()
                    && matches!(&*typed.pat, syn::Pat::Ident(p)
                    if p.by_ref.is_none() && p.mutability.is_none() && p.subpat.is_none()
                        && name_of(&p.ident) == param) =>
            {
                Some((at, &*typed.ty))
            }
            _ => None,
        })
}

/// Whether other crates may call `f` (see [`callable_by_other_crates`]), and, for a method,
/// build a value of its type to call it on.
pub(crate) fn root_for_other_crates(index: &Index, f: &FnDef) -> bool {
    callable_by_other_crates(index, f)
        && (f.sig.receiver().is_none()
            || f.owner
                .as_deref()
                .is_some_and(|key| type_buildable(index, key, 0)))
}

/// Whether other crates may call `f` with any arguments: `pub`, of a `pub` type (a method's,
/// the type's module and the `impl`'s both on a `pub` path from the root) of a library other
/// Rust crates link (or of a file read alone), each of its parameters of a type they can build
/// (a `pub fn new(flag: bool, token: Token)` whose `Token` only the crate makes is not).
fn callable_by_other_crates(index: &Index, f: &FnDef) -> bool {
    on_a_public_path(index, f) && arguments_buildable_by_other_crates(index, f, 0)
}

/// Whether `f` is `pub`, of a `pub` type, on a `pub` path of a library other Rust crates link.
fn on_a_public_path(index: &Index, f: &FnDef) -> bool {
    // The type itself on a `pub` path too: an `impl hidden::Maker` outside `mod hidden`.
    let owner_public = match &f.owner {
        Some(key) => index.struct_item(key).is_some_and(|(module, item)| {
            matches!(item.vis, syn::Visibility::Public(_)) && index.modules[module].exported
        }),
        None => true,
    };
    f.public
        && owner_public
        && index.modules[f.module].exported
        && index.callable_from_other_crates(f.module)
}

/// How deep [`buildable_by_other_crates`] follows fields, variants and constructors before it
/// answers no.
const BUILDABLE_DEPTH: usize = 4;

/// Whether other crates can build a value of each of `f`'s parameters' types. A generic
/// function, or a method of a generic `impl`, is never taken to be (its bounds may be sealed).
fn arguments_buildable_by_other_crates(index: &Index, f: &FnDef, depth: usize) -> bool {
    generic_names(&f.sig.generics).is_empty()
        && f.impl_generics.is_empty()
        && f.sig.inputs.iter().all(|input| match input {
            syn::FnArg::Receiver(_) => true,
            syn::FnArg::Typed(typed) => {
                buildable_by_other_crates(index, f.module, &typed.ty, depth)
            }
        })
}

/// The type arguments of a path's last segment (lifetimes left out); `None` for other
/// arguments (`Fn(A) -> B`, associated types, constants).
fn type_arguments(path: &syn::Path) -> Option<Vec<&syn::Type>> {
    match &path.segments.last()?.arguments {
        syn::PathArguments::None => Some(Vec::new()),
        syn::PathArguments::AngleBracketed(args) => args
            .args
            .iter()
            .filter(|arg| !matches!(arg, syn::GenericArgument::Lifetime(_)))
            .map(|arg| match arg {
                syn::GenericArgument::Type(ty) => Some(ty),
                _ => None,
            })
            .collect(),
        syn::PathArguments::Parenthesized(_) => None,
    }
}

/// Whether other crates can build a value of `ty`, written in `module`. Only what is sure to
/// be: std's primitives and `String`; an `Option` (`None`), a `Vec`, a map or a set (empty),
/// a slice behind a reference (`&[]`), `PhantomData`; a `Box`, `Arc`, `Rc`, `RefCell`,
/// `Cell`, `Mutex` or `RwLock` of such, a reference to, tuple or array of such; a type of
/// candle's crates without type arguments (`VarBuilder`, `Device`); a type of the crate read
/// for which [`type_buildable`] holds. Anything else (a generic, `impl Trait`, another
/// crate's type, `Infallible`): no.
fn buildable_by_other_crates(index: &Index, module: ModId, ty: &syn::Type, depth: usize) -> bool {
    if depth > BUILDABLE_DEPTH {
        return false;
    }
    let again = |ty: &syn::Type| buildable_by_other_crates(index, module, ty, depth + 1);
    match ty {
        syn::Type::Reference(r) => match &*r.elem {
            syn::Type::Slice(_) => true,
            elem => again(elem),
        },
        syn::Type::Paren(p) => again(&p.elem),
        syn::Type::Group(g) => again(&g.elem),
        syn::Type::Tuple(t) => t.elems.iter().all(again),
        syn::Type::Array(a) => again(&a.elem),
        syn::Type::Path(p) if p.qself.is_none() => {
            let Some(arguments) = type_arguments(&p.path) else {
                return false;
            };
            let segments = path_segments(&p.path);
            let resolved = index.resolve(module, &segments);
            // std's prelude, where the module brings no other item of the name.
            let prelude = matches!(resolved, Resolved::Unknown)
                && segments.len() == 1
                && !index.may_import(module, &segments[0]);
            let std_path = match (&resolved, prelude) {
                (_, true) => Some(segments[0].as_str()),
                (Resolved::External(path), _)
                    if matches!(
                        path.first().map(String::as_str),
                        Some("std" | "core" | "alloc")
                    ) =>
                {
                    path.last().map(String::as_str)
                }
                _ => None,
            };
            if let Some(name) = std_path {
                const PRIMITIVES: &[&str] = &[
                    "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16",
                    "i32", "i64", "i128", "isize", "f32", "f64", "String", "PathBuf", "Path",
                ];
                const EMPTY: &[&str] = &[
                    "Option",
                    "Vec",
                    "VecDeque",
                    "HashMap",
                    "BTreeMap",
                    "HashSet",
                    "BTreeSet",
                    "PhantomData",
                ];
                const HOLDERS: &[&str] =
                    &["Box", "Arc", "Rc", "RefCell", "Cell", "Mutex", "RwLock"];
                return match name {
                    _ if PRIMITIVES.contains(&name) => arguments.is_empty(),
                    _ if EMPTY.contains(&name) => true,
                    _ if HOLDERS.contains(&name) => {
                        matches!(arguments.as_slice(), [held] if again(held))
                    }
                    _ => false,
                };
            }
            match resolved {
                Resolved::External(path) => {
                    matches!(
                        path.first().map(String::as_str),
                        Some(
                            "candle_core"
                                | "candle_nn"
                                | "candle_transformers"
                                | "candle_contracts"
                        )
                    ) && arguments.is_empty()
                }
                Resolved::Type(key) => {
                    arguments.is_empty() && type_buildable(index, &key, depth + 1)
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether a body may stop before it returns a value: a panicking macro (`panic!`,
/// `unimplemented!`, `todo!`, `unreachable!`, `assert!`..) or a `loop`.
fn may_diverge(block: &syn::Block) -> bool {
    struct Diverges(bool);
    impl<'ast> Visit<'ast> for Diverges {
        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            self.0 |= mac.path.segments.last().is_some_and(|last| {
                matches!(
                    name_of(&last.ident).as_str(),
                    "panic"
                        | "unimplemented"
                        | "todo"
                        | "unreachable"
                        | "assert"
                        | "assert_eq"
                        | "assert_ne"
                )
            });
        }
        fn visit_expr_loop(&mut self, _: &'ast syn::ExprLoop) {
            self.0 = true;
        }
    }
    let mut diverges = Diverges(false);
    diverges.visit_block(block);
    diverges.0
}

/// Whether an attribute list holds `#[non_exhaustive]`: other crates build no such value.
fn non_exhaustive(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("non_exhaustive"))
}

/// Whether other crates can build a value of the crate's type `key`, one of no generic
/// parameters, `pub` on a `pub` path and not `#[non_exhaustive]`: a struct of `pub` fields of
/// types they can build, an enum with a variant of no fields or of one such (not
/// `#[non_exhaustive]`), a `Default` (derived, or a std `Default` impl that cannot panic) or a
/// serde `Deserialize` derive, or an associated `pub` function of no generics, without
/// `self`, that cannot panic, takes what they can build and gives the type itself (`Self`,
/// `Result<Self>`, `Option<Self>`).
fn type_buildable(index: &Index, key: &str, depth: usize) -> bool {
    if depth > BUILDABLE_DEPTH {
        return false;
    }
    let (module, attrs, vis, generics) = match (index.struct_item(key), index.enum_def(key)) {
        (Some((module, item)), _) => (module, &item.attrs, &item.vis, &item.generics),
        (None, Some((module, item))) => (module, &item.attrs, &item.vis, &item.generics),
        (None, None) => return false,
    };
    if !matches!(vis, syn::Visibility::Public(_))
        || !index.modules[module].exported
        || !generics.params.is_empty()
        || non_exhaustive(attrs)
    {
        return false;
    }
    // `#[derive(Default)]`, serde's `#[derive(Deserialize)]`.
    let derives_a_builder = attrs.iter().any(|attr| {
        let mut found = false;
        if attr.path().is_ident("derive") {
            let _ = attr.parse_nested_meta(|meta| {
                found |= meta.path.segments.last().is_some_and(|last| {
                    matches!(name_of(&last.ident).as_str(), "Default" | "Deserialize")
                });
                Ok(())
            });
        }
        found
    });
    if derives_a_builder {
        return true;
    }
    let std_default = index.trait_impl_methods(key, "default").iter().any(|&id| {
        let f = &index.fns[id];
        let std_trait = match &f.trait_of {
            Some(Resolved::External(path)) => {
                matches!(path.first().map(String::as_str), Some("std" | "core"))
                    && path.last().is_some_and(|last| last == "Default")
            }
            // The prelude's `Default`, which nothing in the module renames.
            Some(Resolved::Unknown) => !index.may_import(f.module, "Default"),
            _ => false,
        };
        std_trait && f.sig.inputs.is_empty() && !may_diverge(f.block)
    });
    if std_default {
        return true;
    }
    if let Some((_, item)) = index.struct_item(key)
        && item.fields.iter().all(|field| {
            matches!(field.vis, syn::Visibility::Public(_))
                && buildable_by_other_crates(index, module, &field.ty, depth)
        })
    {
        return true;
    }
    if let Some((_, item)) = index.enum_def(key)
        && item.variants.iter().any(|variant| {
            !non_exhaustive(&variant.attrs)
                && (variant.fields.is_empty()
                    || index
                        .variant_payload(key, &name_of(&variant.ident))
                        .is_some_and(|(module, ty)| {
                            buildable_by_other_crates(index, module, ty, depth)
                        }))
        })
    {
        return true;
    }
    // A constructor: `Self`, the type's own name (resolving to it), or either as the first
    // type argument of a `Result` or an `Option`.
    let gives_the_type = |f: &FnDef| {
        let syn::ReturnType::Type(_, ty) = &f.sig.output else {
            return false;
        };
        let is_the_type = |ty: &syn::Type| match ty {
            syn::Type::Path(p) if p.qself.is_none() => {
                p.path.is_ident("Self")
                    || (type_arguments(&p.path).is_some_and(|a| a.is_empty())
                        && matches!(index.resolve(f.module, &path_segments(&p.path)),
                            Resolved::Type(found) if found == key))
            }
            _ => false,
        };
        if is_the_type(ty) {
            return true;
        }
        let syn::Type::Path(p) = &**ty else {
            return false;
        };
        let outer = p.path.segments.last().map(|s| name_of(&s.ident));
        matches!(outer.as_deref(), Some("Result" | "Option"))
            && type_arguments(&p.path)
                .is_some_and(|args| args.first().is_some_and(|t| is_the_type(t)))
    };
    index.inherent_methods(key).into_iter().any(|id| {
        let f = &index.fns[id];
        f.sig.receiver().is_none()
            && !f.conditional
            && gives_the_type(f)
            && !may_diverge(f.block)
            && on_a_public_path(index, f)
            && arguments_buildable_by_other_crates(index, f, depth + 1)
    })
}

/// Every call of `index.fns[id]` in its crate's files in sight, by caller and the argument at
/// `position`; `None` where one may be hidden: the function named but not called, or through
/// a path the index cannot tell apart from it, an alias of its type (`type A = Attention;`,
/// `use Attention as A;`), a macro naming it, or a mention outside the functions read.
fn call_sites(index: &Index, id: FnId, position: usize) -> Option<Vec<(FnId, &'static syn::Expr)>> {
    let f = &index.fns[id];
    let krate = index.modules[f.module].krate;
    let type_name = match &f.owner {
        Some(key) => Some(name_of(&index.struct_item(key)?.1.ident)),
        None => None,
    };
    /// A path that may name the function by its last two segments' names.
    struct Named<'n> {
        name: &'n str,
        type_name: Option<&'n str>,
        paths: usize,
        hidden: bool,
    }
    impl Named<'_> {
        fn may_name(&self, path: &syn::Path) -> bool {
            let segments: Vec<String> = path.segments.iter().map(|s| name_of(&s.ident)).collect();
            match (segments.split_last(), self.type_name) {
                (Some((last, _)), _) if last != self.name => false,
                (Some((_, before)), Some(type_name)) => {
                    before.last().is_some_and(|t| t == type_name || t == "Self")
                }
                (Some(_), None) => true,
                (None, _) => false,
            }
        }
    }
    impl<'ast> Visit<'ast> for Named<'_> {
        fn visit_path(&mut self, path: &'ast syn::Path) {
            self.paths += usize::from(self.may_name(path));
            syn::visit::visit_path(self, path);
        }
        // `<Attention>::new(..)`: a type written apart from the path.
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            if let Some(qself) = &p.qself
                && p.path.segments.last().is_some_and(|s| s.ident == self.name)
            {
                let mut names = BTreeSet::new();
                idents(&qself.ty.to_token_stream(), &mut names);
                self.hidden |= match self.type_name {
                    Some(t) => names.contains(t) || names.contains("Self"),
                    None => true,
                };
            }
            syn::visit::visit_expr_path(self, p);
        }
        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            let mut names = BTreeSet::new();
            idents(&mac.tokens, &mut names);
            self.hidden |= names.contains(self.name)
                && self
                    .type_name
                    .is_none_or(|t| names.contains(t) || names.contains("Self"));
            syn::visit::visit_macro(self, mac);
        }
        fn visit_use_rename(&mut self, rename: &'ast syn::UseRename) {
            let renamed = name_of(&rename.ident);
            self.hidden |= Some(renamed.as_str()) == self.type_name || renamed == self.name;
        }
        fn visit_item_type(&mut self, alias: &'ast syn::ItemType) {
            let mut names = BTreeSet::new();
            idents(&alias.ty.to_token_stream(), &mut names);
            self.hidden |= self.type_name.is_some_and(|t| names.contains(t));
            syn::visit::visit_item_type(self, alias);
        }
    }
    let mut whole = Named {
        name: &f.name,
        type_name: type_name.as_deref(),
        paths: 0,
        hidden: false,
    };
    for file in index.crate_sources(f.module) {
        whole.visit_file(file);
    }
    if whole.hidden {
        return None;
    }
    /// The calls in one function's body (its nested items apart).
    struct Calls<'i> {
        index: &'i Index,
        caller: FnId,
        callee: FnId,
        named: Named<'i>,
        position: usize,
        sites: Vec<(FnId, &'static syn::Expr)>,
        unsure: bool,
    }
    impl Calls<'_> {
        /// Whether the path names the callee: `Some(false)` where it certainly does not.
        fn names_callee(&self, path: &syn::Path) -> Option<bool> {
            if !self.named.may_name(path) {
                return Some(false);
            }
            let caller = &self.index.fns[self.caller];
            let callee = &self.index.fns[self.callee];
            let segments = path_segments(path);
            let (_, before) = segments.split_last()?;
            // A generic parameter of the name (`fn make<Attention: Build>`) is another type.
            let first = before.first()?;
            let generic =
                caller.sig.generics.params.iter().any(
                    |p| matches!(p, syn::GenericParam::Type(t) if name_of(&t.ident) == *first),
                ) || caller.impl_generics.contains(first);
            if generic {
                return None;
            }
            if before.len() == 1 && before[0] == "Self" {
                return Some(caller.owner.is_some() && caller.owner == callee.owner);
            }
            match self.index.resolve(caller.module, &segments) {
                Resolved::Fn(found) => Some(found == self.callee),
                Resolved::Assoc(key, _) if Some(&key) == callee.owner.as_ref() => Some(true),
                Resolved::Assoc(key, _) if !self.index.is_alias(&key) => Some(false),
                Resolved::External(_) => Some(false),
                _ => None,
            }
        }
    }
    // The bodies the index reads live as long as the program: a call's argument is kept.
    impl Visit<'static> for Calls<'_> {
        fn visit_expr_call(&mut self, call: &'static syn::ExprCall) {
            if let syn::Expr::Path(func) = strip(&call.func)
                && func.qself.is_none()
                && self.named.may_name(&func.path)
            {
                self.named.paths += 1;
                match self.names_callee(&func.path) {
                    Some(true) => match call.args.iter().nth(self.position) {
                        Some(arg) => self.sites.push((self.caller, arg)),
                        None => self.unsure = true,
                    },
                    Some(false) => {}
                    None => self.unsure = true,
                }
                for arg in &call.args {
                    self.visit_expr(arg);
                }
                return;
            }
            syn::visit::visit_expr_call(self, call);
        }
        fn visit_path(&mut self, path: &'static syn::Path) {
            if self.named.may_name(path) {
                self.named.paths += 1;
                // Named other than as a call's function: it may be called anywhere.
                self.unsure |= self.names_callee(path) != Some(false);
            }
            syn::visit::visit_path(self, path);
        }
        // A nested item's mentions are its own (read where the index holds it).
        fn visit_item(&mut self, _: &'static syn::Item) {}
    }
    let mut sites = Vec::new();
    let mut counted = 0;
    for (caller, def) in index.fns.iter().enumerate() {
        if index.modules[def.module].krate != krate {
            continue;
        }
        let mut calls = Calls {
            index,
            caller,
            callee: id,
            named: Named {
                name: &f.name,
                type_name: type_name.as_deref(),
                paths: 0,
                hidden: false,
            },
            position,
            sites: Vec::new(),
            unsure: false,
        };
        calls.visit_block(def.block);
        if calls.unsure {
            return None;
        }
        counted += calls.named.paths;
        sites.extend(calls.sites);
    }
    // Every mention in the crate's files is one of a body read above.
    (counted == whole.paths).then_some(sites)
}

/// How many times a body names `name` as a path (a macro naming it counts twice: it may read
/// it any number of times).
fn mentions_of(block: &syn::Block, name: &str) -> usize {
    let mut mentions = Mentions { name, count: 0 };
    mentions.visit_block(block);
    mentions.count
}

/// [`mentions_of`] in one expression.
fn mentions_in_expr(expr: &syn::Expr, name: &str) -> usize {
    let mut mentions = Mentions { name, count: 0 };
    mentions.visit_expr(expr);
    mentions.count
}

/// Counts the paths that are `name` alone; a macro whose tokens hold it counts twice.
struct Mentions<'n> {
    name: &'n str,
    count: usize,
}

impl<'ast> Visit<'ast> for Mentions<'_> {
    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        if p.qself.is_none() && p.path.get_ident().is_some_and(|i| name_of(i) == self.name) {
            self.count += 1;
        }
        syn::visit::visit_expr_path(self, p);
    }
    // `format!("{use_flash_attn}")` names it inside a string literal.
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        if mac.tokens.to_string().contains(self.name) {
            self.count += 2;
        }
    }
}

/// Whether a pattern anywhere in `block` (a `let`, an arm, a closure's or a nested function's
/// parameter) binds `name`, or an item there is named so.
pub(crate) fn binds_anywhere(block: &syn::Block, name: &str) -> bool {
    struct Binds<'n> {
        name: &'n str,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Binds<'_> {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.found |= name_of(&p.ident) == self.name;
            syn::visit::visit_pat_ident(self, p);
        }
        fn visit_item(&mut self, item: &'ast syn::Item) {
            self.found |= item_ident(item).as_deref() == Some(self.name);
            syn::visit::visit_item(self, item);
        }
    }
    let mut binds = Binds { name, found: false };
    binds.visit_block(block);
    binds.found || body_declares(block, name)
}

fn rename_fact(fact: &FieldFact, prefixes: &BTreeMap<String, String>) -> Option<FieldFact> {
    let dim = |dim: &Dim| -> Option<Dim> {
        let mut whole = true;
        let renamed = dim.substitute(&mut |factor| match factor {
            Factor::Symbol(name) => {
                let renamed = name.split_once('.').and_then(|(root, rest)| {
                    prefixes
                        .get(root)
                        .map(|p| Dim::symbol(format!("{p}.{rest}")))
                });
                whole &= renamed.is_some();
                renamed
            }
            _ => {
                whole = false;
                None
            }
        });
        (whole && !renamed.is_unknown()).then_some(renamed)
    };
    // In a layer, a size that cannot be renamed is unknown.
    let or_unknown = |d: &Dim| dim(d).unwrap_or(Dim::Unknown);
    Some(match fact {
        FieldFact::Size(d) => FieldFact::Size(dim(d)?),
        FieldFact::Activation(variant) => FieldFact::Activation(variant.clone()),
        FieldFact::Flag(path) => {
            let (root, rest) = path.split_once('.')?;
            FieldFact::Flag(format!("{}.{rest}", prefixes.get(root)?))
        }
        FieldFact::Layer(layer, ds, geometry) => {
            let geometry = geometry.as_ref().map(|g| ConvGeometry {
                padding: or_unknown(&g.padding),
                stride: or_unknown(&g.stride),
                dilation: or_unknown(&g.dilation),
                groups: or_unknown(&g.groups),
            });
            FieldFact::Layer(*layer, ds.iter().map(or_unknown).collect(), geometry)
        }
        FieldFact::Tensor(ds) => FieldFact::Tensor(ds.iter().map(or_unknown).collect()),
        // `config: cfg.clone()` of the callee's parameter: the caller's config, where the
        // call passed one whole.
        FieldFact::Config(param, key) => {
            let prefix = prefixes.get(param)?;
            if prefix.contains('.') {
                return None;
            }
            FieldFact::Config(prefix.clone(), key.clone())
        }
        FieldFact::Nested(key, fields) => FieldFact::Nested(
            key.clone(),
            fields
                .iter()
                .filter_map(|(field, fact)| Some((field.clone(), rename_fact(fact, prefixes)?)))
                .collect(),
        ),
        FieldFact::KvCache(path, d) => FieldFact::KvCache(path.clone(), dim(d)?),
        FieldFact::Optional(held) => FieldFact::Optional(Box::new(rename_fact(held, prefixes)?)),
        FieldFact::Variants(key, variants) => FieldFact::Variants(
            key.clone(),
            variants
                .iter()
                .filter_map(|(variant, fact)| Some((variant.clone(), rename_fact(fact, prefixes)?)))
                .collect(),
        ),
    })
}

/// A `return`, or a macro whose tokens say `return`; in a closure or an item of the code
/// read too, unless `own` (then only the code's own).
#[derive(Default)]
struct Returns {
    own: bool,
    found: bool,
}

impl<'ast> Visit<'ast> for Returns {
    fn visit_expr_return(&mut self, _: &'ast syn::ExprReturn) {
        self.found = true;
    }
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let mut names = BTreeSet::new();
        idents(&mac.tokens, &mut names);
        self.found |= names.contains("return");
    }
    fn visit_expr_closure(&mut self, closure: &'ast syn::ExprClosure) {
        if !self.own {
            syn::visit::visit_expr_closure(self, closure);
        }
    }
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !self.own {
            syn::visit::visit_item(self, item);
        }
    }
}

/// Whether a body may leave other than through its tail: a `return` anywhere (in a closure
/// too, to stay simple), or a macro whose tokens say `return`.
fn has_return(block: &syn::Block) -> bool {
    let mut returns = Returns::default();
    returns.visit_block(block);
    returns.found
}

/// Whether a closure's body may leave other than through its tail: a `return` of its own (not
/// of a closure or an item in it), or a macro whose tokens say `return`.
pub(crate) fn closure_returns(body: &syn::Expr) -> bool {
    let mut returns = Returns {
        own: true,
        found: false,
    };
    returns.visit_expr(body);
    returns.found
}

/// Whether a pattern binds by `ref mut` (a `&mut` of the matched place).
pub(crate) fn has_ref_mut(pat: &syn::Pat) -> bool {
    #[derive(Default)]
    struct RefMut(bool);
    impl<'ast> Visit<'ast> for RefMut {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0 |= p.by_ref.is_some() && p.mutability.is_some();
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut found = RefMut::default();
    found.visit_pat(pat);
    found.0
}

/// Whether a condition binds names (`if let Some(inner) = width`, a `let` chain): they may
/// hide the constructor's own in the branch it guards.
fn binds_names(cond: &syn::Expr) -> bool {
    #[derive(Default)]
    struct Lets(bool);
    impl<'ast> Visit<'ast> for Lets {
        fn visit_expr_let(&mut self, _: &'ast syn::ExprLet) {
            self.0 = true;
        }
        fn visit_macro(&mut self, _: &'ast syn::Macro) {
            self.0 = true;
        }
    }
    let mut lets = Lets::default();
    lets.visit_expr(cond);
    lets.0
}

/// The value of a block that is only a tail expression (`{ Proj::Linear(..) }`).
fn block_value(block: &syn::Block) -> Option<&syn::Expr> {
    match block.stmts.as_slice() {
        [syn::Stmt::Expr(expr, None)] => Some(expr),
        _ => None,
    }
}

/// The expression inside parentheses and invisible groups.
fn strip(expr: &syn::Expr) -> &syn::Expr {
    match expr {
        syn::Expr::Paren(p) => strip(&p.expr),
        syn::Expr::Group(g) => strip(&g.expr),
        _ => expr,
    }
}

/// Whether `op` assigns to its left side (`+=`, `<<=`, ..).
pub(crate) fn is_compound_assignment(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitXorAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

/// The name a path of one identifier names.
fn single_ident(expr: &syn::Expr) -> Option<String> {
    match strip(expr) {
        syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(name_of),
        _ => None,
    }
}

/// The identifier a plain `let name` (or `let name: T`) binds.
fn strip_type(pat: &syn::Pat) -> Option<&syn::Ident> {
    match pat {
        syn::Pat::Type(t) => strip_type(&t.pat),
        syn::Pat::Ident(i)
            if i.by_ref.is_none() && i.mutability.is_none() && i.subpat.is_none() =>
        {
            Some(&i.ident)
        }
        _ => None,
    }
}

/// The name an item in a body defines.
/// Whether a `use` or an item anywhere in `block` (an inner block's too) names `name`, or a
/// macro item may: within its scope the module's item of the name is hidden.
fn body_declares(block: &syn::Block, name: &str) -> bool {
    struct Declared<'n> {
        name: &'n str,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Declared<'_> {
        fn visit_item(&mut self, item: &'ast syn::Item) {
            match item {
                syn::Item::Use(u) => {
                    let mut names = BTreeMap::new();
                    crate::index::use_names(&u.tree, Vec::new(), &mut names);
                    // `use other::*;` may bring any name.
                    self.found |= names.contains_key(self.name) || names.contains_key("");
                }
                syn::Item::Macro(_) => self.found = true,
                other => self.found |= item_ident(other).as_deref() == Some(self.name),
            }
        }
    }
    let mut declared = Declared { name, found: false };
    declared.visit_block(block);
    declared.found
}

fn item_ident(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Mod(i) => &i.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        syn::Item::Impl(_) => return Some(String::new()),
        _ => return None,
    };
    Some(name_of(ident))
}

/// The names a pattern binds.
#[derive(Default)]
struct PatNames(Vec<String>);

impl<'ast> Visit<'ast> for PatNames {
    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        self.0.push(name_of(&p.ident));
        syn::visit::visit_pat_ident(self, p);
    }

    fn visit_expr(&mut self, _: &'ast syn::Expr) {}
}

/// The identifiers of the macros in a statement (outside nested items).
#[derive(Default)]
struct MacroIdents(BTreeSet<String>);

impl<'ast> Visit<'ast> for MacroIdents {
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        idents(&mac.tokens, &mut self.0);
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::index::{FileId, Files, usual_externs};

    struct NoFiles;

    impl Files for NoFiles {
        fn load(&mut self, _: &Path) -> Option<(FileId, &'static syn::File)> {
            None
        }

        fn path(&self, _: FileId) -> &Path {
            Path::new("lib.rs")
        }

        fn missing_module(&mut self, _: &str, _: FileId, _: &[PathBuf]) {}
    }

    /// What the constructors in `source` (a whole crate) give the fields of `Model`, as
    /// `field: Layer[dims]` or `field = size`.
    fn inferred(source: &str) -> Vec<String> {
        let file: &'static syn::File = Box::leak(Box::new(syn::parse_file(source).unwrap()));
        let mut index = Index::default();
        index.add_crate((0, file), usual_externs(), None, false, &mut NoFiles);
        index.finish();
        let key = index.type_key(0, "Model");
        constructed_fields(&index, &key)
            .iter()
            .map(|(field, fact)| describe(field, fact))
            .collect()
    }

    /// A field's fact as `field: Layer[dims]`, `field = size`, or `field: Type { .. }`.
    fn describe(field: &str, fact: &FieldFact) -> String {
        match fact {
            FieldFact::Layer(layer, dims, geometry) => {
                let dims: Vec<String> = dims.iter().map(ToString::to_string).collect();
                let geometry = geometry.as_ref().map_or(String::new(), |g| {
                    format!(
                        " padding = {}, stride = {}, dilation = {}, groups = {}",
                        g.padding, g.stride, g.dilation, g.groups
                    )
                });
                format!("{field}: {layer:?}[{}]{geometry}", dims.join(", "))
            }
            FieldFact::Size(dim) => format!("{field} = {dim}"),
            FieldFact::Flag(path) => format!("{field} = {path}"),
            FieldFact::Config(param, _) => format!("{field} = {param}"),
            FieldFact::Activation(variant) => format!("{field}: Activation::{variant}"),
            FieldFact::Tensor(dims) => {
                let dims: Vec<String> = dims.iter().map(ToString::to_string).collect();
                format!("{field}: Tensor[{}]", dims.join(", "))
            }
            FieldFact::Nested(key, fields) => {
                let inner: Vec<String> = fields.iter().map(|(f, x)| describe(f, x)).collect();
                let ty = key.rsplit("::").next().unwrap_or(key);
                format!("{field}: {ty} {{ {} }}", inner.join("; "))
            }
            FieldFact::KvCache(path, dim) => {
                let ty = path.rsplit("::").next().unwrap_or(path);
                format!("{field}: {ty} on dim {dim}")
            }
            FieldFact::Variants(key, variants) => {
                let inner: Vec<String> = variants.iter().map(|(v, x)| describe(v, x)).collect();
                let ty = key.rsplit("::").next().unwrap_or(key);
                format!("{field}: {ty} {{ {} }}", inner.join(" | "))
            }
            FieldFact::Optional(held) => describe(&format!("{field}?"), held),
        }
    }

    const LAYERS: &str = "
        use candle_nn::{Conv1dConfig, Conv2dConfig, Embedding, LayerNorm, Linear, RmsNorm, VarBuilder};
        use candle_nn::{Conv1d, Conv2d};
        const VOCAB: usize = 50257;
        struct Config { hidden_size: usize, num_attention_heads: usize, channels: usize, text: Text }
        struct Text { width: usize }
        impl Config {
            fn head_dim(&self) -> usize { self.hidden_size / self.num_attention_heads }
        }
        struct Model {
            wte: Embedding,
            ln: LayerNorm,
            norm: RmsNorm,
            q_proj: Linear,
            lm_head: Linear,
            head: Linear,
            conv1: Conv1d,
            conv2: Conv2d,
            grouped: Conv2d,
            head_dim: usize,
            width: usize,
        }
        impl Model {
            fn new(cfg: &Config, vb: VarBuilder) -> candle_core::Result<Self> {
                let hidden = cfg.hidden_size;
                let wte = candle_nn::embedding(VOCAB, hidden, vb.pp(\"wte\"))?;
                let ln = candle_nn::layer_norm(hidden, 1e-5, vb.pp(\"ln\"))?;
                let norm = candle_nn::rms_norm(hidden, 1e-6, vb.pp(\"norm\"))?;
                let q_proj = candle_nn::linear_no_bias(hidden, cfg.num_attention_heads * cfg.head_dim(), vb.pp(\"q\"))?;
                let lm_head = candle_nn::linear_b(hidden, VOCAB, false, vb.pp(\"lm_head\"))?;
                let conv_cfg = Conv2dConfig { padding: 1, ..Default::default() };
                let conv2 = candle_nn::conv2d(cfg.channels, 64, 3, conv_cfg, vb.pp(\"conv2\"))?;
                let grouped_cfg = Conv2dConfig { groups: 4, ..Default::default() };
                Ok(Self {
                    wte,
                    ln,
                    norm,
                    q_proj,
                    lm_head,
                    head: candle_nn::linear(hidden, 2 * hidden + 1, vb.pp(\"head\")).unwrap(),
                    conv1: candle_nn::conv1d(80, hidden, 3, Conv1dConfig::default(), vb.pp(\"c1\"))?,
                    conv2,
                    grouped: candle_nn::conv2d_no_bias(64, 64, 3, grouped_cfg, vb.pp(\"g\"))?,
                    head_dim: cfg.head_dim(),
                    width: cfg.text.width,
                })
            }
        }
    ";

    #[test]
    fn every_candle_nn_constructor_gives_its_weight() {
        assert_eq!(
            inferred(LAYERS),
            [
                "conv1: Conv1d[cfg.hidden_size, 80, 3] padding = 0, stride = 1, dilation = 1, groups = 1",
                "conv2: Conv2d[64, cfg.channels, 3, 3] padding = 1, stride = 1, dilation = 1, groups = 1",
                "grouped: Conv2d[64, 16, 3, 3] padding = 0, stride = 1, dilation = 1, groups = 4",
                "head: Linear[2 * cfg.hidden_size + 1, cfg.hidden_size]",
                "head_dim = cfg.hidden_size / cfg.num_attention_heads",
                "lm_head: Linear[50257, cfg.hidden_size]",
                "ln: LayerNorm[cfg.hidden_size]",
                "norm: RmsNorm[cfg.hidden_size]",
                "q_proj: Linear[cfg.num_attention_heads * (cfg.hidden_size / cfg.num_attention_heads), cfg.hidden_size]",
                "width = cfg.text.width",
                "wte: Embedding[50257, cfg.hidden_size]",
            ]
        );
    }

    /// `Some(layer)` of an `Option` field holds the layer where it is `Some`; `Some` of
    /// anything else, or of a layer in a field of another type, gives nothing.
    #[test]
    fn some_of_a_layer_in_an_option_field_gives_its_weight() {
        let source = "
            use candle_nn::{embedding, Embedding, VarBuilder, Linear};
            pub struct Model { pe: Option<Embedding>, other: Option<Linear>, n: Option<usize> }
            impl Model {
                pub fn new(vb: VarBuilder, p: usize, e: usize) -> candle_core::Result<Self> {
                    let pe = embedding(p, e, vb.pp(\"pe\"))?;
                    let other = embedding(p, e, vb.pp(\"other\"))?;
                    Ok(Self { pe: Some(pe), other: Some(other), n: Some(e) })
                }
            }
        ";
        assert_eq!(inferred(source), ["pe?: Embedding[new(p), new(e)]"]);
    }

    #[test]
    fn what_is_not_a_candle_nn_constructor_or_a_plain_size_is_not_inferred() {
        let source = LAYERS
            // Another function of the name, the tensor op of candle-nn, a method that is
            // not one expression, a mutable `let`, a field typed otherwise.
            .replace("candle_nn::embedding(", "my::embedding(")
            .replace("candle_nn::rms_norm(", "candle_nn::ops::rms_norm(")
            .replace(
                "fn head_dim(&self) -> usize { self.hidden_size / self.num_attention_heads }",
                "fn head_dim(&self) -> usize { let h = self.hidden_size; h / self.num_attention_heads }",
            )
            .replace("let hidden = cfg.hidden_size;", "let mut hidden = cfg.hidden_size;")
            .replace("    ln: LayerNorm,", "    ln: RmsNorm,");
        assert_eq!(
            inferred(&source),
            [
                "conv1: Conv1d[_, 80, 3] padding = 0, stride = 1, dilation = 1, groups = 1",
                "conv2: Conv2d[64, cfg.channels, 3, 3] padding = 1, stride = 1, dilation = 1, groups = 1",
                "grouped: Conv2d[64, 16, 3, 3] padding = 0, stride = 1, dilation = 1, groups = 4",
                "head: Linear[_, _]",
                "lm_head: Linear[50257, _]",
                "q_proj: Linear[_, _]",
                "width = cfg.text.width",
            ]
        );
    }

    #[test]
    fn convolutions_built_with_different_strides_keep_their_weight_only() {
        let source = "
            use candle_nn::{Conv1d, Conv1dConfig, VarBuilder};
            struct Model { conv: Conv1d, same: Conv1d }
            impl Model {
                fn new(vb: VarBuilder) -> candle_core::Result<Self> {
                    let halving = Conv1dConfig { stride: 2, ..Default::default() };
                    let conv = candle_nn::conv1d(8, 16, 3, halving, vb.pp(\"a\"))?;
                    let same = candle_nn::conv1d(8, 16, 3, Default::default(), vb.pp(\"b\"))?;
                    Ok(Self { conv, same })
                }
                fn plain(vb: VarBuilder) -> candle_core::Result<Self> {
                    let conv = candle_nn::conv1d(8, 16, 3, Default::default(), vb.pp(\"a\"))?;
                    let same = candle_nn::conv1d(8, 16, 3, Default::default(), vb.pp(\"b\"))?;
                    Ok(Self { conv, same })
                }
            }
        ";
        assert_eq!(
            inferred(source),
            [
                "conv: Conv1d[16, 8, 3]",
                "same: Conv1d[16, 8, 3] padding = 0, stride = 1, dilation = 1, groups = 1",
            ]
        );
    }

    const HELPERS: &str = "
        use candle_nn::{Conv1d, Conv1dConfig, Conv2d, LayerNorm, Linear, VarBuilder};
        use candle_core::Result;
        struct Config { d_model: usize, n_mels: usize }
        fn conv1d(cin: usize, cout: usize, k: usize, config: Conv1dConfig, vb: VarBuilder) -> Result<Conv1d> {
            let weight = vb.get((cout, cin, k), \"weight\")?;
            let bias = vb.get(cout, \"bias\")?;
            Ok(Conv1d::new(weight, Some(bias), config))
        }
        fn conv2d(c_in: usize, c_out: usize, ksize: usize, padding: usize, stride: usize, vb: VarBuilder) -> Result<Conv2d> {
            let conv2d_cfg = candle_nn::Conv2dConfig { stride, padding, ..Default::default() };
            candle_nn::conv2d_no_bias(c_in, c_out, ksize, conv2d_cfg, vb)
        }
        fn square(c: usize, vb: VarBuilder) -> Result<Conv2d> {
            let conv = conv2d(c, c, 3, 1, 1, vb.pp(\"inner\"))?;
            Ok(conv)
        }
        fn layer_norm(size: usize, vb: VarBuilder) -> Result<LayerNorm> {
            let weight = vb.get(size, \"weight\")?;
            let bias = vb.get(size, \"bias\")?;
            Ok(LayerNorm::new(weight, bias, 1e-5))
        }
        struct Model { conv1: Conv1d, conv2: Conv1d, stem: Conv2d, block: Conv2d, ln: LayerNorm, head: Linear }
        impl Model {
            fn new(cfg: &Config, vb: VarBuilder) -> Result<Self> {
                let n_state = cfg.d_model;
                let cfg2 = Conv1dConfig { padding: 1, stride: 2, groups: 1, dilation: 1, cudnn_fwd_algo: None };
                let conv1 = conv1d(cfg.n_mels, n_state, 3, Default::default(), vb.pp(\"conv1\"))?;
                let conv2 = conv1d(n_state, n_state, 3, cfg2, vb.pp(\"conv2\"))?;
                let w = vb.pp(\"head\").get((10, n_state), \"weight\")?;
                Ok(Self {
                    conv1,
                    conv2,
                    stem: conv2d(3, 64, 7, 3, 2, vb.pp(\"stem\"))?,
                    block: square(64, vb.pp(\"block\"))?,
                    ln: layer_norm(n_state, vb.pp(\"ln\"))?,
                    head: Linear::new(w, None),
                })
            }
        }
    ";

    #[test]
    fn crate_helpers_that_build_a_layer_are_read_with_their_arguments() {
        assert_eq!(
            inferred(HELPERS),
            [
                "block: Conv2d[64, 64, 3, 3] padding = 1, stride = 1, dilation = 1, groups = 1",
                "conv1: Conv1d[cfg.d_model, cfg.n_mels, 3] padding = 0, stride = 1, dilation = 1, groups = 1",
                "conv2: Conv1d[cfg.d_model, cfg.d_model, 3] padding = 1, stride = 2, dilation = 1, groups = 1",
                "head: Linear[10, cfg.d_model]",
                "ln: LayerNorm[cfg.d_model]",
                "stem: Conv2d[64, 3, 7, 7] padding = 3, stride = 2, dilation = 1, groups = 1",
            ]
        );
    }

    const NESTED: &str = "
        use candle_nn::{Conv2d, Linear, VarBuilder};
        struct Config { hidden_size: usize, patch_size: usize, vision: Vision }
        struct Vision { width: usize }
        struct Patches { projection: Conv2d, num_patches: usize }
        impl Patches {
            fn new(config: &Config, vb: VarBuilder) -> candle_core::Result<Self> {
                let conv_cfg = candle_nn::Conv2dConfig { stride: config.patch_size, ..Default::default() };
                let projection = candle_nn::conv2d(3, config.hidden_size, config.patch_size, conv_cfg, vb.pp(\"p\"))?;
                Ok(Self { projection, num_patches: config.hidden_size / config.patch_size })
            }
        }
        struct Head { proj: Linear }
        impl Head {
            fn new(v: &Vision, vb: VarBuilder) -> candle_core::Result<Self> {
                Ok(Head { proj: candle_nn::linear(v.width, 10, vb)? })
            }
        }
        struct Model { patches: Patches, head: Head }
        impl Model {
            fn new(cfg: &Config, vb: VarBuilder) -> candle_core::Result<Self> {
                let patches = Patches::new(cfg, vb.pp(\"patches\"))?;
                Ok(Self { patches, head: Head::new(&cfg.vision, vb.pp(\"head\"))? })
            }
        }
    ";

    #[test]
    fn a_struct_its_constructor_builds_in_a_field_has_the_callers_sizes() {
        assert_eq!(
            inferred(NESTED),
            [
                "head: Head { proj: Linear[10, cfg.vision.width] }",
                "patches: Patches { num_patches = cfg.hidden_size / cfg.patch_size; \
                 projection: Conv2d[cfg.hidden_size, 3, cfg.patch_size, cfg.patch_size] \
                 padding = 0, stride = cfg.patch_size, dilation = 1, groups = 1 }",
            ]
        );
        // Passed something other than a config, the sizes named by it are not known.
        let other = NESTED.replace("Patches::new(cfg,", "Patches::new(&make(),");
        assert_eq!(
            inferred(&format!("{other} fn make() -> Config {{ todo!() }}")),
            [
                "head: Head { proj: Linear[10, cfg.vision.width] }",
                "patches: Patches { projection: Conv2d[_, 3, _, _] padding = 0, stride = _, \
                 dilation = 1, groups = 1 }",
            ]
        );
    }

    #[test]
    fn helpers_that_may_build_another_layer_are_not_read() {
        let source = HELPERS
            // Another exit.
            .replace(
                "let bias = vb.get(cout, \"bias\")?;",
                "let bias = vb.get(cout, \"bias\")?;\n if k == 1 { return Ok(Conv1d::new(bias.clone(), None, config)); }",
            )
            // A parameter the helper may change.
            .replace("padding: usize, stride", "mut padding: usize, stride")
            .replace("let conv2d_cfg", "padding += 1; let conv2d_cfg")
            // A generic helper, a shape the analysis cannot see the rank of, a weight of
            // another rank than the layer's.
            .replace("fn square(", "fn square<const N: usize>(")
            .replace("let weight = vb.get(size,", "let shape = (size,); let weight = vb.get(shape,")
            .replace("get((10, n_state)", "get((1, 10, n_state)");
        assert_eq!(
            inferred(&source),
            ["stem: Conv2d[64, 3, 7, 7] padding = _, stride = 2, dilation = 1, groups = 1"],
        );
    }

    #[test]
    fn a_closure_a_parameter_or_a_cfg_let_of_the_name_hides_the_helper() {
        // A closure named like the crate's helper is called instead of it.
        let closure = HELPERS.replace(
            "let n_state = cfg.d_model;",
            "let n_state = cfg.d_model;\n let conv1d = |a: usize, b: usize, k: usize, c: Conv1dConfig, vb: VarBuilder| -> Result<Conv1d> { todo!() };",
        );
        // A `fn` parameter of the name, in a helper that calls it.
        let pointer = HELPERS
            .replace(
                "fn square(c: usize, vb: VarBuilder)",
                "fn square(c: usize, vb: VarBuilder, conv2d: fn(usize, usize, usize, usize, usize, VarBuilder) -> Result<Conv2d>)",
            )
            .replace("square(64, vb.pp(\"block\"))", "square(64, vb.pp(\"block\"), other)");
        // A `let` under `cfg` may not be compiled: the config it shadows may be the one used.
        let cfg_let = HELPERS.replace(
            "let conv2d_cfg = candle_nn::Conv2dConfig { stride, padding, ..Default::default() };",
            "let conv2d_cfg = candle_nn::Conv2dConfig { stride, padding: 0, ..Default::default() };\n #[cfg(feature = \"same\")]\n let conv2d_cfg = candle_nn::Conv2dConfig { stride, padding, ..Default::default() };",
        );
        let without = |source: &str, field: &str| {
            inferred(source)
                .into_iter()
                .filter(|fact| !fact.starts_with(field))
                .collect::<Vec<_>>()
        };
        let all = inferred(HELPERS);
        let all_but = |field: &str| {
            all.iter()
                .filter(|fact| !fact.starts_with(field))
                .cloned()
                .collect::<Vec<_>>()
        };
        assert!(
            inferred(&closure).iter().all(|f| !f.starts_with("conv")),
            "{:?}",
            inferred(&closure)
        );
        assert_eq!(inferred(&pointer), all_but("block"));
        // The groups are unknown too, and so the weight's input channels.
        assert_eq!(
            without(&cfg_let, "conv"),
            [
                "block: Conv2d[64, _, 3, 3]",
                "head: Linear[10, cfg.d_model]",
                "ln: LayerNorm[cfg.d_model]",
                "stem: Conv2d[64, _, 7, 7]",
            ]
        );
    }

    #[test]
    fn a_config_stored_whole_and_an_activation_variant_are_facts() {
        let source = "
            use candle_nn::{Activation, Linear, VarBuilder};
            #[derive(Clone)]
            struct Config { hidden_size: usize }
            struct Model { proj: Linear, act: Activation, gate: Activation, config: Config }
            impl Model {
                fn new(cfg: &Config, vb: VarBuilder) -> candle_core::Result<Self> {
                    let proj = candle_nn::linear(cfg.hidden_size, cfg.hidden_size, vb)?;
                    Ok(Self { proj, act: Activation::Relu, gate: Activation::Elu(1.0), config: cfg.clone() })
                }
            }
        ";
        assert_eq!(
            inferred(source),
            [
                "act: Activation::Relu",
                "config = cfg",
                "gate: Activation::Elu",
                "proj: Linear[cfg.hidden_size, cfg.hidden_size]",
            ]
        );
        // A config changed after it is stored, or an activation from the config: no fact.
        let from_config = source
            .replace("act: Activation::Relu", "act: cfg.act")
            .replace(
                "struct Config { hidden_size: usize }",
                "struct Config { hidden_size: usize, act: Activation }",
            );
        assert_eq!(
            inferred(&from_config),
            [
                "config = cfg",
                "gate: Activation::Elu",
                "proj: Linear[cfg.hidden_size, cfg.hidden_size]",
            ]
        );
    }

    /// Stable Diffusion's `Proj`: a crate enum whose variants hold a `Conv2d` or a `Linear`,
    /// built by a branch on the config.
    const VARIANTS: &str = "
        use candle_nn::{Conv2d, Linear, VarBuilder};
        enum Proj { Conv2d(Conv2d), Linear(Linear) }
        struct Model { proj_in: Proj, proj_out: Proj }
        impl Model {
            fn new(vb: VarBuilder, in_channels: usize, inner: usize, linear: bool) -> candle_core::Result<Self> {
                let proj_in = if linear {
                    Proj::Linear(candle_nn::linear(in_channels, inner, vb.pp(\"proj_in\"))?)
                } else {
                    Proj::Conv2d(candle_nn::conv2d(in_channels, inner, 1, Default::default(), vb.pp(\"proj_in\"))?)
                };
                let proj_out = Proj::Linear(candle_nn::linear(inner, in_channels, vb.pp(\"proj_out\"))?);
                Ok(Self { proj_in, proj_out })
            }
        }
    ";

    #[test]
    fn an_enum_of_layers_gives_each_variant_its_layer() {
        assert_eq!(
            inferred(VARIANTS),
            [
                "proj_in: Proj { Conv2d: Conv2d[new(inner), new(in_channels), 1, 1] padding = 0, \
                 stride = 1, dilation = 1, groups = 1 | Linear: Linear[new(inner), new(in_channels)] }",
                "proj_out: Proj { Linear: Linear[new(in_channels), new(inner)] }",
            ]
        );
    }

    /// Qwen3's attention: a cache built on dim 2 by the constructor, appended to and reset by
    /// the forward pass.
    const KV_CACHE: &str = "
        use candle_nn::kv_cache::{ConcatKvCache, KvCache};
        struct Model { kv_cache: ConcatKvCache, rotating: KvCache, other: KvCache }
        impl Model {
            fn new(max: usize) -> Self {
                let rotating = KvCache::new(1, max);
                Self { kv_cache: ConcatKvCache::new(2), rotating, other: KvCache::new(max, 8) }
            }
            fn forward(&mut self, k: &candle_core::Tensor) {
                let _ = self.kv_cache.append(k, k);
                let _ = self.rotating.append(k, k);
                self.kv_cache.reset();
                let _ = self.kv_cache.current_seq_len();
            }
        }
    ";

    #[test]
    fn a_kv_cache_keeps_the_dim_its_constructor_gave_through_its_own_methods() {
        assert_eq!(
            inferred(KV_CACHE),
            [
                "kv_cache: ConcatKvCache on dim 2",
                "other: KvCache on dim new(max)",
                "rotating: KvCache on dim 1",
            ]
        );
        // On a field of another type, a kv cache's method name may be a trait's `&mut self`
        // one (a dependency's `Reset for Linear` that builds another layer): a change.
        let reset = "
            use candle_nn::{Linear, VarBuilder};
            use other::Reset as _;
            struct Model { proj: Linear }
            impl Model {
                fn new(vb: VarBuilder) -> candle_core::Result<Self> {
                    Ok(Self { proj: candle_nn::linear(4, 8, vb)? })
                }
                fn clear(&mut self) { self.proj.reset(); }
            }
        ";
        assert_eq!(inferred(reset), Vec::<String>::new());
        assert_eq!(
            inferred(&reset.replace("self.proj.reset();", "")),
            ["proj: Linear[8, 4]"]
        );
        // Replaced, or its inner caches lent out `&mut`: another dim may follow.
        for change in [
            "impl Model { fn swap(&mut self) { self.rotating = KvCache::new(2, 4); } }",
            "impl Model { fn swap(&mut self) { let _ = self.rotating.k_cache_mut(); } }",
        ] {
            let fields = inferred(&format!("{KV_CACHE} {change}"));
            assert!(
                fields.iter().all(|f| !f.starts_with("rotating")),
                "{fields:?}"
            );
        }
    }

    #[test]
    fn an_enum_deriving_clone_keeps_its_variants_through_a_derived_clone() {
        let source = VARIANTS
            .replace("struct Model", "#[derive(Clone)] struct Model")
            .replace("enum Proj", "#[derive(Clone)] enum Proj");
        assert_eq!(inferred(&source).len(), 2);
    }

    #[test]
    fn a_hand_built_linear_or_norm_is_read_only_with_a_bias_of_its_out_size() {
        let source = "
            use candle_nn::{LayerNorm, Linear, VarBuilder};
            struct Model { proj: Linear, norm: LayerNorm }
            impl Model {
                fn new(vb: VarBuilder) -> candle_core::Result<Self> {
                    let w = vb.get((4, 8), \"weight\")?;
                    let b = vb.get(4, \"bias\")?;
                    let nw = vb.get(8, \"norm\")?;
                    let nb = vb.get(8, \"norm_bias\")?;
                    Ok(Self { proj: Linear::new(w, Some(b)), norm: LayerNorm::new(nw, nb, 1e-5) })
                }
            }
        ";
        assert_eq!(
            inferred(source),
            ["norm: LayerNorm[8]", "proj: Linear[4, 8]"]
        );
        // A bias of another shape broadcasts the output: neither layer is read.
        let wide = source
            .replace("let b = vb.get(4,", "let b = vb.get((3, 4),")
            .replace("let nb = vb.get(8,", "let nb = vb.get((2, 8),");
        assert_ne!(wide, source);
        assert_eq!(inferred(&wide), Vec::<String>::new());
        assert_eq!(
            inferred(&source.replace("Some(b)", "None")),
            ["norm: LayerNorm[8]", "proj: Linear[4, 8]"]
        );
    }

    #[test]
    fn a_ref_mut_binding_of_a_field_changes_it() {
        let source = "
            use candle_nn::{Linear, VarBuilder};
            struct Model { proj: Linear }
            impl Model {
                fn new(vb: VarBuilder) -> candle_core::Result<Self> {
                    Ok(Self { proj: candle_nn::linear(4, 8, vb)? })
                }
            }
        ";
        assert_eq!(inferred(source), ["proj: Linear[8, 4]"]);
        for change in [
            "fn small(mut m: Model, l: Linear) { let ref mut proj = m.proj; *proj = l; }",
            "fn small(mut m: Model, l: Linear) { match m.proj { ref mut p => *p = l } }",
            "fn small(mut m: Model, l: Linear) { if let ref mut p = m.proj { *p = l } }",
        ] {
            assert_eq!(
                inferred(&format!("{source} {change}")),
                Vec::<String>::new(),
                "{change}"
            );
        }
    }

    #[test]
    fn an_enum_of_layers_the_analysis_cannot_tell_apart_gives_nothing() {
        let gone = |source: &str| {
            let fields = inferred(source);
            assert!(
                fields.iter().all(|f| !f.starts_with("proj_in")),
                "{fields:?}"
            );
        };
        // A generic enum may hold any type in a variant.
        gone(&VARIANTS.replace(
            "enum Proj { Conv2d(Conv2d), Linear(Linear) }",
            "enum Proj<L = Linear> { Conv2d(Conv2d), Linear(L) }",
        ));
        // Two branches that build one variant with other sizes.
        gone(&VARIANTS.replace(
            "candle_nn::conv2d(in_channels, inner, 1,",
            "candle_nn::conv2d(in_channels, inner, 3,",
        ).replace(
            "Proj::Linear(candle_nn::linear(in_channels, inner, vb.pp(\"proj_in\"))?)",
            "Proj::Conv2d(candle_nn::conv2d(in_channels, inner, 1, Default::default(), vb.pp(\"x\"))?)",
        ));
        // A variant under `cfg` may be another of the name; so may an enum.
        gone(&VARIANTS.replace(
            "enum Proj { Conv2d(Conv2d), Linear(Linear) }",
            "enum Proj { Conv2d(Conv2d), #[cfg(feature = \"x\")] Linear(Linear) }",
        ));
        gone(&VARIANTS.replace(
            "enum Proj { Conv2d(Conv2d), Linear(Linear) }",
            "#[cfg(feature = \"x\")] enum Proj { Conv2d(Conv2d), Linear(Linear) }
             #[cfg(not(feature = \"x\"))] enum Proj { Conv2d(Conv2d), Linear(Conv2d) }",
        ));
        // A branch that gives something else (a value from elsewhere).
        gone(
            &(VARIANTS
                .replace(
                    "} else {\n                    Proj::Conv2d(",
                    "} else if inner > 3 { make() } else {\n                    Proj::Conv2d(",
                )
                .to_string()
                + "fn make() -> Proj { todo!() }"),
        );
        // The field assigned after its construction.
        gone(
            &(VARIANTS.to_string()
                + "impl Model { fn swap(&mut self, p: Proj) { self.proj_in = p; } }"),
        );
        // A `ref mut` binding of the field, and an `if let` whose pattern hides a size.
        gone(
            &(VARIANTS.to_string()
                + "impl Model { fn swap(&mut self, l: Linear) {
                   if let Proj::Linear(ref mut p) = self.proj_in { *p = l; } } }"),
        );
        gone(
            &(VARIANTS.to_string()
                + "impl Model { fn swap(&mut self, l: Linear) {
                   match self.proj_in { Proj::Linear(ref mut p) => *p = l, _ => {} } } }"),
        );
        gone(&VARIANTS.replace(
            "let proj_in = if linear {",
            "let proj_in = if let Some(inner) = Some(3) {",
        ));
        // A `Clone` of the struct that is derived, of an enum whose `Clone` is not.
        gone(&VARIANTS.replace("struct Model", "#[derive(Clone)] struct Model"));
        // A body's own enum of the name.
        gone(&VARIANTS.replace(
            "let proj_in = if linear {",
            "enum Proj { Conv2d(Conv2d), Linear(Linear) }\n let proj_in = if linear {",
        ));
    }
}
