//! The programs of issue 12 and the design page, walked by hand as the macro will walk them:
//! each certain mismatch is found with the message the design page shows, and the correct
//! variants pass.

use candle_contracts_shapes::{Arg, Contract, Dim, Env, function, method};

fn env(function: &str, contract: &str) -> Env {
    Env::for_function(function, &Contract::parse(contract).unwrap())
}

#[test]
fn a_column_target_for_cross_entropy() {
    let env = env("train_step", "logits: f32[N, C], target: u32[N, 1]");
    let args = [
        Arg::Tensor(env.get("logits")),
        Arg::Tensor(env.get("target")),
    ];
    let mismatch = function("nn::cross_entropy", &args).unwrap_err();
    assert_eq!(
        mismatch.message("target"),
        "`nn::cross_entropy` takes `target: u8 | u32 | i64 [N]`, but `target` is `u32[N, 1]` here"
    );
    assert_eq!(mismatch.note(), "rank 2 given, rank 1 expected");
    assert_eq!(
        mismatch.help("target").as_deref(),
        Some("squeeze the last dim: `&target.squeeze(1)?`")
    );
    // The fix the help suggests passes.
    let squeezed = method("squeeze", &env.get("target"), &[Arg::int(1)]).unwrap();
    let fixed = [Arg::Tensor(env.get("logits")), Arg::Tensor(squeezed)];
    assert_eq!(
        function("nn::cross_entropy", &fixed).unwrap().to_string(),
        "f32[]"
    );
}

#[test]
fn bce_with_logits_of_a_column_against_a_vector() {
    let env = env("loss", "logits: f32[N, 1], target: f32[N] in 0.0..=1.0");
    let args = [
        Arg::Tensor(env.get("logits")),
        Arg::Tensor(env.get("target")),
    ];
    let mismatch = function("nn::binary_cross_entropy_with_logit", &args).unwrap_err();
    assert_eq!(
        mismatch.message("target"),
        "`nn::binary_cross_entropy_with_logit` takes `target: float[*S]`, but `target` is `f32[N]` here"
    );
    assert_eq!(
        mismatch.note(),
        "`*S` is [N] here, [N, 1] where it was bound"
    );
    let candle = function("candle_nn::loss::binary_cross_entropy_with_logit", &args).unwrap_err();
    assert_eq!(
        candle.argument,
        candle_contracts_shapes::Argument::Position(1)
    );
}

#[test]
fn an_mlp_whose_second_layer_does_not_fit() {
    let env = env("mlp", "xs: f32[B, 784], w1: f32[128, 784], w2: f32[10, 64]");
    let w1_t = method("t", &env.get("w1"), &[]).unwrap();
    let h = method("matmul", &env.get("xs"), &[Arg::Tensor(w1_t)]).unwrap();
    let h = method("relu", &h, &[]).unwrap();
    let w2_t = method("t", &env.get("w2"), &[]).unwrap();
    let mismatch = method("matmul", &h, &[Arg::Tensor(w2_t)]).unwrap_err();
    assert_eq!(mismatch.note(), "dim -2: 64 given, 128 expected");
    // Without the transpose the weights are `[10, 64]`: still wrong, and no transpose helps.
    let plain = method("matmul", &h, &[Arg::Tensor(env.get("w2"))]).unwrap_err();
    assert_eq!(plain.help, None);
    // A layer of the right width passes, and the shape flows on.
    let good = self::env(
        "mlp",
        "xs: f32[B, 784], w1: f32[128, 784], w2: f32[10, 128]",
    );
    let w1_t = method("t", &good.get("w1"), &[]).unwrap();
    let h = method("matmul", &good.get("xs"), &[Arg::Tensor(w1_t)]).unwrap();
    let w2_t = method("t", &good.get("w2"), &[]).unwrap();
    let out = method("matmul", &h, &[Arg::Tensor(w2_t)]).unwrap();
    assert_eq!(out.to_string(), "f32[B, 10]");
}

#[test]
fn a_matmul_with_untransposed_weights_suggests_the_transpose() {
    let env = env("forward", "xs: f32[B, 784], w: f32[128, 784]");
    let mismatch = method("matmul", &env.get("xs"), &[Arg::Tensor(env.get("w"))]).unwrap_err();
    assert_eq!(mismatch.note(), "dim -2: 128 given, 784 expected");
    assert_eq!(
        mismatch.help("w").as_deref(),
        Some("transpose it: `&w.t()?`")
    );
}

#[test]
fn a_keepdim_sum_returned_where_a_vector_is_declared() {
    let env = env("total", "x: f32[B, D], return: f32[B]");
    let tail = method("sum_keepdim", &env.get("x"), &[Arg::int(1)]).unwrap();
    let mismatch = env.check_return(&tail).unwrap_err();
    assert_eq!(mismatch.note(), "rank 2 given, rank 1 expected");
    let tail = method("sum", &env.get("x"), &[Arg::int(1)]).unwrap();
    assert!(env.check_return(&tail).is_ok());
}

#[test]
fn gradual_cases_pass() {
    let env = env("f", "a: f32[N, C], b: f32[M, C], ids: u32[K]");
    // Two different names may be equal at run time.
    assert!(method("add", &env.get("a"), &[Arg::Tensor(env.get("b"))]).is_ok());
    let args = [Arg::Tensor(env.get("a")), Arg::Tensor(env.get("ids"))];
    assert!(function("nn::cross_entropy", &args).is_ok());
    // An unknown helper's result, a value-computed shape, an unknown method: all silent.
    let unknown = Arg::Tensor(candle_contracts_shapes::TensorType::unknown());
    assert!(
        function("my_crate::helper", std::slice::from_ref(&unknown))
            .unwrap()
            .is_unknown()
    );
    let reshaped = method(
        "reshape",
        &env.get("a"),
        &[Arg::Tuple(vec![Arg::Unknown, Arg::Tuple(vec![])])],
    )
    .unwrap();
    assert_eq!(reshaped.to_string(), "f32[_, _]");
    // Indexing with what the checker cannot see: the dtype stays, the shape is unknown.
    let indexed = method("i", &env.get("a"), &[Arg::Unknown]).unwrap();
    assert_eq!(indexed.to_string(), "f32[..]");
    assert!(function("nn::cross_entropy", &[unknown.clone(), unknown]).is_ok());
    // A one-segment path is ambiguous (candle_nn's `cross_entropy` or ours): unknown.
    assert!(function("cross_entropy", &args).unwrap().is_unknown());
}

#[test]
fn a_dtype_mismatch_suggests_converting_either_side() {
    // From a new user's trial: scores cast to f16 before `matmul(&v)` with an f32 `v`; the
    // help named only `v`'s conversion, where the cast of the receiver was the bug.
    let env = env("attend", "p: f16[T, S], v: f32[S, D]");
    let mismatch = method("matmul", &env.get("p"), &[Arg::Tensor(env.get("v"))]).unwrap_err();
    assert_eq!(
        mismatch.help("v").as_deref(),
        Some("convert it: `&v.to_dtype(DType::F16)?`, or `self` to `DType::F32`")
    );
    // A value converted already: that conversion's dtype is the one to change.
    assert_eq!(
        mismatch.help("v.to_dtype(DType::F32)?").as_deref(),
        Some("convert it: `&v.to_dtype(DType::F16)?`, or `self` to `DType::F32`")
    );
    assert_eq!(
        mismatch
            .help_for_result("v.to_dtype(DType::F32)")
            .as_deref(),
        Some("convert it: `&v.to_dtype(DType::F16)`, or `self` to `DType::F32`")
    );
    // Two dtypes the argument may have: only the argument's conversion is certain to fit.
    let env = self::env("attend", "p: f16[T, S], v: f32 | bf16 [S, D]");
    let mismatch = method("matmul", &env.get("p"), &[Arg::Tensor(env.get("v"))]).unwrap_err();
    assert_eq!(
        mismatch.help("v").as_deref(),
        Some("convert it: `&v.to_dtype(DType::F16)?`")
    );
    // `where_cond`'s branches: the other side is named by its parameter.
    let env = self::env("pick", "m: u8[N], a: f32[N], b: f16[N]");
    let mismatch = method(
        "where_cond",
        &env.get("m"),
        &[Arg::Tensor(env.get("a")), Arg::Tensor(env.get("b"))],
    )
    .unwrap_err();
    assert_eq!(
        mismatch.help("b").as_deref(),
        Some("convert it: `&b.to_dtype(DType::F32)?`, or `on_true` to `DType::F16`")
    );
}

#[test]
fn rope_checks_its_tables_against_xs() {
    use candle_contracts_shapes::function;
    let rope = |xs: &str, cos: &str, sin: &str| {
        function(
            "candle_nn::rotary_emb::rope",
            &[Arg::tensor(xs), Arg::tensor(cos), Arg::tensor(sin)],
        )
    };
    // As candle's models call it: tables narrowed to the positions, half the head size.
    assert_eq!(
        rope("f32[B, H, T, 64]", "f32[T, 32]", "f32[T, 32]")
            .unwrap()
            .to_string(),
        "f32[B, H, T, 64]"
    );
    // Symbolic sizes that may fit stay silent: `2 * (D / 2)` is `D` for an even `D`.
    assert!(rope("f16[B, H, T, D]", "f16[P, D / 2]", "f16[P, D / 2]").is_ok());
    assert!(rope("f32[B, H, T, D]", "f32[1, T, D / 2]", "f32[T, D / 2]").is_ok());
    // Tables in f32 for an f16 model: the kernels take one dtype.
    let mismatch = rope("f16[B, H, T, 64]", "f32[T, 32]", "f32[T, 32]").unwrap_err();
    assert_eq!(
        mismatch.argument,
        candle_contracts_shapes::Argument::Position(1)
    );
    assert_eq!(
        mismatch.help("cos").as_deref(),
        Some("convert it: `&cos.to_dtype(DType::F16)?`, or `xs` to `DType::F32`")
    );
    // The whole head size where half is wanted.
    let mismatch = rope("f32[B, H, T, 64]", "f32[T, 64]", "f32[T, 64]").unwrap_err();
    assert_eq!(mismatch.note(), "dim -1: 64 given, 32 expected");
    // A table of rank 1, a batched table of another batch, fewer rows than positions.
    assert!(rope("f32[B, H, T, 64]", "f32[32]", "f32[T, 32]").is_err());
    assert!(rope("f32[2, H, T, 64]", "f32[3, T, 32]", "f32[T, 32]").is_err());
    let mismatch = rope("f32[B, H, 5, 64]", "f32[4, 32]", "f32[4, 32]").unwrap_err();
    assert_eq!(
        mismatch.note(),
        "dim -2: 4 rows given, at least 5 expected (`xs`'s positions)"
    );
    assert!(rope("f32[B, H, T, 64]", "f32[T - 1, 32]", "f32[T, 32]").is_err());
    // `xs` of rank 3 (before the heads are split), or of integers.
    assert!(rope("f32[B, T, 64]", "f32[T, 32]", "f32[T, 32]").is_err());
    assert!(rope("u32[B, H, T, 64]", "f32[T, 32]", "f32[T, 32]").is_err());
    // `rope_thd`: the positions are dim 1.
    let thd = function(
        "candle_nn::rotary_emb::rope_thd",
        &[
            Arg::tensor("f32[B, 5, H, 64]"),
            Arg::tensor("f32[4, 32]"),
            Arg::tensor("f32[4, 32]"),
        ],
    );
    assert!(thd.is_err());
}

#[test]
fn the_norm_ops_check_their_weights_against_xs() {
    use candle_contracts_shapes::function;
    let rms = |xs: &str, alpha: &str| {
        function(
            "candle_nn::ops::rms_norm",
            &[Arg::tensor(xs), Arg::tensor(alpha), Arg::Float],
        )
    };
    assert_eq!(
        rms("f16[B, T, E]", "f16[E]").unwrap().to_string(),
        "f16[B, T, E]"
    );
    assert!(rms("f32[B, T, E]", "f32[D]").is_ok());
    // The weight of another width, a weight of rank 2, a weight in f32 for f16 activations.
    let mismatch = rms("f32[B, T, 768]", "f32[512]").unwrap_err();
    assert_eq!(mismatch.note(), "dim 0: 512 given, 768 expected");
    assert!(rms("f32[B, T, E]", "f32[1, E]").is_err());
    let mismatch = rms("f16[B, T, E]", "f32[E]").unwrap_err();
    assert_eq!(
        mismatch.help("alpha").as_deref(),
        Some("convert it: `&alpha.to_dtype(DType::F16)?`, or `xs` to `DType::F32`")
    );
    // `layer_norm`'s bias is checked as its weight is.
    let layer_norm = function(
        "candle_nn::ops::layer_norm",
        &[
            Arg::tensor("f32[B, 768]"),
            Arg::tensor("f32[768]"),
            Arg::tensor("f32[512]"),
            Arg::Float,
        ],
    );
    assert_eq!(
        layer_norm.unwrap_err().argument,
        candle_contracts_shapes::Argument::Position(2)
    );
}

/// candle-flash-attn's kernel reads `q`, `k` and `v` as one element type: a `k` or `v` of
/// another dtype than `q` fails on every call (a new user's trial cast only `q` to f16 in the
/// flash branch). The output is `q`'s type.
#[test]
fn flash_attn_takes_one_dtype_for_q_k_and_v() {
    use candle_contracts_shapes::function;
    let flash = |q: &str, k: &str, v: &str| {
        function(
            "candle_flash_attn::flash_attn",
            &[
                Arg::tensor(q),
                Arg::tensor(k),
                Arg::tensor(v),
                Arg::Unknown,
                Arg::Unknown,
            ],
        )
    };
    assert_eq!(
        flash("f16[B, T, H, D]", "f16[B, S, H, D]", "f16[B, S, H, D]")
            .unwrap()
            .to_string(),
        "f16[B, T, H, D]"
    );
    let mismatch = flash("f16[B, T, H, D]", "f32[B, S, H, D]", "f16[B, S, H, D]").unwrap_err();
    assert_eq!(
        mismatch.argument,
        candle_contracts_shapes::Argument::Position(1)
    );
    assert_eq!(
        mismatch.help("k").as_deref(),
        Some("convert it: `&k.to_dtype(DType::F16)?`, or `q` to `DType::F32`")
    );
    let mismatch = flash("bf16[B, T, H, D]", "bf16[B, S, H, D]", "f16[B, S, H, D]").unwrap_err();
    assert_eq!(
        mismatch.argument,
        candle_contracts_shapes::Argument::Position(2)
    );
    // A dtype not known may be `q`'s.
    assert!(flash("f16[B, T, H, D]", "_[B, S, H, D]", "f16[B, S, H, D]").is_ok());
}

/// `x.i((.., t, ..))` narrows dim 1 to `t..t + 1`: an index equal to the dim's size is past
/// its end (candle's `NarrowInvalidArgs`), as a new user's trial planted in Granite (the last
/// position indexed at `T`), and so is a range ending past it. One below it is fine.
#[test]
fn an_integer_index_at_the_dims_size_is_past_its_end() {
    use candle_contracts_shapes::method;
    let index =
        |x: &str, items: Vec<Arg>| method("i", &Arg::tensor(x).tensor_type(), &[Arg::Tuple(items)]);
    let mismatch = index(
        "f32[B, T, E]",
        vec![
            Arg::Range(None, None),
            Arg::Int(candle_contracts_shapes::Dim::symbol("T")),
            Arg::Range(None, None),
        ],
    )
    .unwrap_err();
    assert_eq!(
        mismatch.note(),
        "the slice ends at T + 1, past dim 1 of size T"
    );
    assert!(
        index(
            "f32[B, 4, E]",
            vec![
                Arg::Range(None, None),
                Arg::Int(candle_contracts_shapes::Dim::lit(4))
            ]
        )
        .is_err()
    );
    let last = index(
        "f32[B, 4, E]",
        vec![
            Arg::Range(None, None),
            Arg::Int(candle_contracts_shapes::Dim::lit(3)),
        ],
    )
    .unwrap();
    assert_eq!(last.to_string(), "f32[B, E]");
    // A range ending past the size (`t..t + 1` of `[B, T, E]`, a second trial's Phi-3 bug);
    // one ending at it is fine.
    let t = candle_contracts_shapes::Dim::symbol("T");
    let one = candle_contracts_shapes::Dim::lit(1);
    let mismatch = index(
        "f32[B, T, E]",
        vec![
            Arg::Range(None, None),
            Arg::Range(Some(t.clone()), Some(t.clone().add(one.clone()))),
        ],
    )
    .unwrap_err();
    assert_eq!(
        mismatch.note(),
        "the slice ends at T + 1, past dim 1 of size T"
    );
    let tail = index(
        "f32[B, T, E]",
        vec![
            Arg::Range(None, None),
            Arg::Range(Some(t.clone().sub(one)), Some(t)),
        ],
    )
    .unwrap();
    assert_eq!(tail.to_string(), "f32[B, 1, E]");
}

#[test]
fn indexing_past_the_rank_says_how_many_items_fit() {
    // A new user's `mask.i((0..n, 0..n, 0..n))` on a rank-2 mask: certain, with a help line.
    let env = env("mask", "mask: u8[T, T]");
    let range = || Arg::Range(Some(Dim::lit(0)), Some(Dim::symbol("T")));
    let mismatch = method(
        "i",
        &env.get("mask"),
        &[Arg::Tuple(vec![range(), range(), range()])],
    )
    .unwrap_err();
    assert_eq!(mismatch.note(), "rank 2 given, rank 3 or more expected");
    assert_eq!(
        mismatch.help("mask").as_deref(),
        Some(
            "`i(..)` takes one index or range per dim: at most 2 for a tensor of rank 2 (`..` \
             keeps a dim whole)"
        )
    );
}
