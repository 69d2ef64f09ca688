//! The walk on token input: what it reports, and the correct programs it must accept.

use proc_macro2::TokenStream;
use quote::quote;

use super::{check_function, expand_scope};
use crate::item::ContractFn;
use candle_contracts_shapes::Contract;

/// The messages of `#[contract(args)]` on `function`.
fn errors(args: TokenStream, function: TokenStream) -> Vec<String> {
    let item: ContractFn = syn::parse2(function).unwrap();
    let (contract, _) = candle_contracts_analysis::contract::read(&args).unwrap();
    check_function(&contract, &item.sig, item.body.as_ref().unwrap())
        .into_iter()
        .map(|e| e.to_string())
        .collect()
}

/// The messages of `#[contract]` on an `impl` block or module.
fn scope_errors(item: TokenStream) -> Vec<String> {
    let expanded = expand_scope(&item).unwrap().to_string();
    expanded
        .split("compile_error")
        .skip(1)
        .map(|e| e.split('"').nth(1).unwrap_or_default().replace("\\n", "\n"))
        .collect()
}

#[test]
fn the_issue_s_examples_fail() {
    let bce = errors(
        quote!(logits: f32[N, 1], target: f32[N] in 0.0..=1.0),
        quote! {
            fn loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
                candle_contracts::nn::binary_cross_entropy_with_logit(logits, target)
            }
        },
    );
    assert_eq!(
        bce,
        [
            "`nn::binary_cross_entropy_with_logit` takes `target: float[*S]`, but `target` is \
          `f32[N]` here\n= note: `*S` is [N] here, [N, 1] where it was bound"
        ]
    );
    let mlp = errors(
        quote!(xs: f32[B, 784], w1: f32[128, 784], w2: f32[10, 64]),
        quote! {
            fn mlp(xs: &Tensor, w1: &Tensor, w2: &Tensor) -> Result<Tensor> {
                let h = xs.matmul(&w1.t()?)?.relu()?;
                h.matmul(&w2.t()?)
            }
        },
    );
    assert_eq!(
        mlp,
        [
            "`Tensor::matmul` takes `rhs: f32[.., 128, _]`, but `w2.t()?` is `f32[64, 10]` \
          here\n= note: dim -2: 64 given, 128 expected"
        ]
    );
    let total = errors(
        quote!(x: f32[B, D], return: f32[B]),
        quote!(
            fn total(x: &Tensor) -> Result<Tensor> {
                x.sum_keepdim(1)
            }
        ),
    );
    assert_eq!(
        total,
        [
            "`total` returns `return: f32[B]`, but `x.sum_keepdim(1)` is `f32[B, 1]` here\n\
          = note: rank 2 given, rank 1 expected\n\
          = help: squeeze the last dim: `x.sum_keepdim(1)?.squeeze(1)`"
        ]
    );
}

#[test]
fn every_mismatch_of_a_body_is_reported() {
    let found = errors(
        quote!(a: f32[2, 3], b: f32[2, 4], return: f32[3, 3]),
        quote! {
            fn f(a: &Tensor, b: &Tensor) -> Result<Tensor> {
                let x = a.add(b)?;
                let y = b.matmul(a)?;
                let early = a.sum_all()?.to_scalar::<f32>()? > 0.0;
                let _ = early;
                return a.matmul(&a.t()?);
            }
        },
    );
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].starts_with("`Tensor::add` takes `rhs: f32[2, 3]"),
        "{}",
        found[0]
    );
    assert!(
        found[1].starts_with("`Tensor::matmul` takes `rhs: f32[.., 4, _]`"),
        "{}",
        found[1]
    );
    assert!(
        found[2]
            .starts_with("`f` returns `return: f32[3, 3]`, but `a.matmul(&a.t()?)` is `f32[2, 2]`"),
        "{}",
        found[2]
    );
}

/// Bodies that are correct, or that the walk cannot prove wrong: no error.
#[test]
fn what_is_not_certain_is_silent() {
    let silent = |args: TokenStream, body: TokenStream| {
        let function = quote!(fn f(x: &Tensor, y: &Tensor, k: usize) -> Result<Tensor> #body);
        let found = errors(args, function);
        assert!(found.is_empty(), "{found:#?}");
    };
    let args = quote!(x: f32[N, 3], y: f32[M, 4]);
    // Two names may be equal.
    silent(args.clone(), quote!({ x.t()?.matmul(&y.t()?) }));
    // Shadowed by `if let`, a `match` arm, a closure, a `for` pattern, a `let` chain.
    silent(
        args.clone(),
        quote!({
            if let Some(x) = other() {
                x.add(y)
            } else {
                Ok(y.clone())
            }
        }),
    );
    silent(
        args.clone(),
        quote!({
            match other() {
                Some(x) => x.add(y),
                None => Ok(y.clone()),
            }
        }),
    );
    silent(
        args.clone(),
        quote!({
            let g = |x: &Tensor| x.add(y);
            g(x)
        }),
    );
    silent(
        args.clone(),
        quote!({
            for x in others() {
                x.add(y)?;
            }
            Ok(y.clone())
        }),
    );
    silent(
        args.clone(),
        quote!({
            if let Some(x) = other()
                && k > 1
            {
                x.add(y)
            } else {
                Ok(y.clone())
            }
        }),
    );
    // `mut` names are never known; a macro statement may rebind what it names.
    silent(
        args.clone(),
        quote!({
            let mut z = x.clone();
            z = y.clone();
            z.add(y)
        }),
    );
    silent(
        args.clone(),
        quote!({
            rebind!(x);
            x.add(y)
        }),
    );
    // Values from unknown calls and methods, a labelled block's `break`.
    silent(
        args.clone(),
        quote!({
            let x = helper(x)?;
            x.add(y)
        }),
    );
    silent(
        args.clone(),
        quote!({
            // Indexing by a tensor: the rows are as many as its values.
            let x = x.i(y)?;
            x.add(y)
        }),
    );
    silent(
        args.clone(),
        quote!({
            let x = 'b: {
                if k > 0 {
                    break 'b y.clone();
                }
                x.clone()
            };
            x.add(y)
        }),
    );
    // A path through a module the body defines or imports from elsewhere.
    silent(
        args.clone(),
        quote!({
            use crate::mine as nn;
            nn::cross_entropy(x, y)
        }),
    );
    silent(
        args.clone(),
        quote!({
            mod ops {}
            ops::softmax(x, 7)
        }),
    );
    silent(
        args.clone(),
        quote!({
            use other::*;
            loss::mse(x, y)
        }),
    );
    // `nn::embedding` may be candle-nn's.
    silent(args.clone(), quote!({ nn::embedding(x, y) }));
    // The standard macros bind nothing: `x` stays known, and the call is correct.
    silent(
        args.clone(),
        quote!({
            println!("{:?}", x.dims());
            x.matmul(&x.t()?)
        }),
    );
    // A body that does not parse is skipped.
    silent(args.clone(), quote!({ x.add(y) + }));
}

#[test]
fn sizes_read_from_dims_are_the_dims() {
    let found = errors(
        quote!(x: f32[2, 3, 4]),
        quote! {
            fn f(x: &Tensor) -> Result<Tensor> {
                let (b, c, _) = x.dims3()?;
                let n = x.dim(D::Minus1)?;
                let same = x.reshape((b, c, n))?;
                let more = x.reshape((b, c * n + 1))?; // 26 elements: arithmetic on sizes is followed
                same.reshape((b, 5, 2))
            }
        },
    );
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found[0].contains("but `(b, c * n + 1)` is `(2, 13)` here"),
        "{}",
        found[0]
    );
    assert!(
        found[1].contains("but `(b, 5, 2)` is `(2, 5, 2)` here"),
        "{}",
        found[1]
    );
}

#[test]
fn contracts_in_an_impl_see_each_other() {
    let found = scope_errors(quote! {
        impl Model {
            #[contract(xs: f32[N, 784], return: f32[N, 10])]
            fn forward(&self, xs: &Tensor) -> Result<Tensor> { todo!() }

            #[contract(images: f32[N, 28, 28], target: u32[N])]
            fn train_step(&self, images: &Tensor, target: &Tensor) -> Result<Tensor> {
                let flat = images.flatten_from(1)?;
                let logits = self.forward(&flat)?;
                let wrong = Self::forward(self, images)?;
                candle_contracts::nn::cross_entropy(&logits.sum(1)?, target)
            }

            #[contract(xs: f32[N, 784], static = false)]
            fn unchecked(&self, xs: &Tensor) -> Result<Tensor> { xs.t()?.add(xs) }
        }
    });
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found[0].starts_with(
            "`Model::forward` takes `xs: f32[N, 784]`, but `images` is `f32[N, 28, 28]` here"
        ),
        "{}",
        found[0]
    );
    assert!(
        found[1].contains("but `logits.sum(1)?` is `f32[N]` here"),
        "{}",
        found[1]
    );
    // Each inner contract is told, so that it does not report again.
    let expanded = expand_scope(&quote! {
        impl Model {
            #[contract(xs: f32[N, 784],)]
            fn forward(&self, xs: &Tensor) -> Result<Tensor> { todo!() }
        }
    })
    .unwrap()
    .to_string();
    assert!(
        expanded.contains("# [contract (xs : f32 [N , 784] , __checked_by_scope = true)]"),
        "{expanded}"
    );
}

/// From a new-user trial: the contract's facts decide the `return` clause as they decide the
/// ops' rules (`T >= 1`: `xs.repeat((1, 2))` is `[B, 2 * T]`, never `[B, T]`).
#[test]
fn the_contracts_facts_decide_the_return_clause() {
    let function = quote! {
        fn twice(xs: &Tensor) -> Result<Tensor> {
            let out = xs.repeat((1, 2))?;
            Ok(out)
        }
    };
    let found = errors(
        quote!(xs: f32[B, T], T >= 1, return: f32[B, T]),
        function.clone(),
    );
    assert_eq!(
        found,
        [
            "`twice` returns `return: f32[B, T]`, but `out` is `f32[B, 2 * T]` here\n\
          = note: dim 1: 2 * T given, T expected"
        ],
        "{found:#?}"
    );
    // Without the fact, `T` may be 0, where `2 * T` is `T`.
    let found = errors(quote!(xs: f32[B, T], return: f32[B, T]), function);
    assert!(found.is_empty(), "{found:#?}");
}

/// From a new-user trial: a `#[contract] impl` inside a `#[contract] mod` got its methods
/// marked twice (`option `__checked_by_scope` is given twice`, a correct program rejected).
#[test]
fn an_impl_inside_a_contracted_module_is_marked_and_checked_once() {
    let module = quote! {
        mod m {
            use candle_contracts::contract;
            use candle_core::{Result, Tensor};
            #[contract(proj: f32[4, 3])]
            pub struct S { proj: Tensor }
            #[contract]
            impl S {
                #[contract(x: f32[N, 3])]
                pub fn f(&self, x: &Tensor) -> Result<Tensor> { x.t() }
                #[contract(x: f32[N, 3])]
                pub fn wrong(&self, x: &Tensor) -> Result<Tensor> { x.sum(2) }
            }
        }
    };
    let once = |expanded: &str| expanded.matches("__checked_by_scope").count();
    let by_module = expand_scope(&module).unwrap().to_string();
    // The struct's own contract and its two methods'.
    assert_eq!(once(&by_module), 3, "{by_module}");
    assert_eq!(
        by_module.matches("__struct_contract").count(),
        2,
        "{by_module}"
    );
    assert_eq!(by_module.matches("compile_error").count(), 1, "{by_module}");
    // The inner `impl`'s own expansion, of what the module handed on: nothing added, nothing
    // reported again.
    let block = by_module
        .find("impl S")
        .map(|at| &by_module[at..by_module.rfind('}').unwrap()])
        .unwrap();
    let by_impl = expand_scope(&block.parse().unwrap()).unwrap().to_string();
    assert_eq!(once(&by_impl), 2, "{by_impl}");
    assert_eq!(by_impl.matches("__struct_contract").count(), 2, "{by_impl}");
    assert_eq!(by_impl.matches("compile_error").count(), 0, "{by_impl}");
}

#[test]
fn only_an_inherent_impl_s_methods_are_certain() {
    // In a trait impl, `self.forward` may be an inherent method defined elsewhere; a bare
    // `forward(...)` in an impl is never an associated function.
    let found = scope_errors(quote! {
        impl Module for Model {
            #[contract(xs: f32[N, 784])]
            fn forward(&self, xs: &Tensor) -> Result<Tensor> { todo!() }

            #[contract(images: f32[N, 28, 28])]
            fn other(&self, images: &Tensor) -> Result<Tensor> {
                self.forward(images)?;
                forward(images)
            }
        }
    });
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn functions_of_a_module_see_each_other() {
    let found = scope_errors(quote! {
        mod model {
            use candle_core::{Result, Tensor};

            #[contract(x: f32[N, 784], return: f32[N, 10])]
            pub fn forward(x: &Tensor) -> Result<Tensor> { todo!() }

            #[contract(images: f32[N, 28, 28], other: f32[N, 784])]
            pub fn step(images: &Tensor, other: &Tensor) -> Result<Tensor> {
                let ok = forward(other)?;
                let logits = forward(images)?;
                ok.add(&logits)
            }

            #[contract(images: f32[N, 28, 28])]
            pub fn shadowed(images: &Tensor) -> Result<Tensor> {
                let forward = |x: &Tensor| x.clone();
                Ok(forward(images))
            }
        }
    });
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("`model::forward` takes `x: f32[N, 784]`"),
        "{}",
        found[0]
    );
}

#[test]
fn other_items_are_no_scope() {
    assert!(
        expand_scope(&quote!(
            struct S;
        ))
        .is_none()
    );
    assert!(
        expand_scope(&quote!(
            mod outside;
        ))
        .is_none()
    );
    assert!(
        expand_scope(&quote!(
            fn f() {}
        ))
        .is_none()
    );
}

#[test]
fn the_return_clause_is_read_only_on_a_tensor_result() {
    // `Option<Tensor>`: the tail `Ok(...)` is no tensor of the clause's type.
    let found = errors(
        quote!(x: f32[B, D], return: f32[B]),
        quote!(
            fn f(x: &Tensor) -> Result<Option<Tensor>> {
                x.sum_keepdim(1)
            }
        ),
    );
    assert!(found.is_empty(), "{found:#?}");
    let found = errors(
        quote!(x: f32[B, D], return: f32[B]),
        quote!(
            async fn f(x: &Tensor) -> candle_core::Result<Tensor> {
                return x.sum_keepdim(1);
            }
        ),
    );
    assert_eq!(found.len(), 1, "{found:#?}");
}

/// The analysis' own cost, for the compile-time figure: 100 contracted functions with the
/// bodies of `scripts/measure-compile-time.sh` (FORMS=bodies). Run with `--ignored
/// --nocapture`; a debug build of the macro, as cargo uses for proc macros.
#[test]
#[ignore]
fn analysis_cost_of_100_functions() {
    let cases = [
        (
            quote!(xs: f32[B, 784], w1: f32[128, 784], w2: f32[10, 128], target: u32[B] in 0..10),
            quote! {
                fn f(xs: &Tensor, w1: &Tensor, w2: &Tensor, target: &Tensor) -> Result<Tensor> {
                    let h = xs.matmul(&w1.t()?)?.relu()?;
                    let logits = h.matmul(&w2.t()?)?;
                    let probs = candle_nn::ops::softmax(&logits, D::Minus1)?;
                    let _predicted = probs.argmax(D::Minus1)?;
                    candle_contracts::nn::cross_entropy(&logits, target)
                }
            },
        ),
        (
            quote!(q: f32[B, T, E], k: f32[B, T, E], v: f32[B, T, E], return: f32[B, T, E]),
            quote! {
                fn f(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Tensor> {
                    let scores = q.matmul(&k.transpose(1, 2)?)?.affine(0.125, 0.0)?;
                    let attention = candle_nn::ops::softmax_last_dim(&scores)?;
                    let mixed = if scores.dims().is_empty() { attention.clone() } else { attention };
                    mixed.matmul(v)
                }
            },
        ),
        (
            quote!(images: f32[N, 28, 28], w: f32[10, 784], return: f32[N, 10]),
            quote! {
                fn f(images: &Tensor, w: &Tensor) -> Result<Tensor> {
                    let (n, _, _) = images.dims3()?;
                    let flat = images.reshape((n, 784))?;
                    let logits = flat.matmul(&w.t()?)?;
                    let mean = logits.mean_keepdim(1)?;
                    logits.broadcast_sub(&mean)
                }
            },
        ),
        (
            quote!(logits: f32[N, 1], target: f32[N, 1] in 0.0..=1.0, return: f32[]),
            quote! {
                fn f(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
                    let bce = candle_contracts::nn::binary_cross_entropy_with_logit(logits, target)?;
                    let mse = candle_nn::loss::mse(&logits.squeeze(1)?, &target.squeeze(1)?)?;
                    bce.add(&mse)
                }
            },
        ),
    ];
    let items: Vec<(Contract, ContractFn)> = cases
        .iter()
        .map(|(args, function)| {
            let (contract, _) = candle_contracts_analysis::contract::read(args).unwrap();
            (contract, syn::parse2(function.clone()).unwrap())
        })
        .collect();
    let start = std::time::Instant::now();
    for i in 0..100 {
        let (args, item) = &items[i % items.len()];
        let found = check_function(args, &item.sig, item.body.as_ref().unwrap());
        assert!(found.is_empty(), "{found:#?}");
    }
    println!("analysis of 100 functions: {:?}", start.elapsed());
}

#[test]
fn operators_are_candle_s_between_tensors() {
    let found = errors(
        quote!(a: f32[N, 3], b: f32[N, 4]),
        quote! {
            fn f(a: &Tensor, b: &Tensor, k: f64) -> Result<Tensor> {
                let scaled = ((a * 2.0)? + a)?;
                let wrong = (&scaled - b)?;
                let unknown = (a * k)?; // `k` is no value the walk knows
                b + 1.0
            }
        },
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("`Tensor::sub` takes `rhs: f32[N, 3]` (the shape of `self`), but `b` is `f32[N, 4]` here"),
        "{}",
        found[0]
    );
}

/// Names in a body that may hide a `#[contract]` module's own `features`: a `use`, a glob
/// `use`, a binding with a type annotation, a closure's parameter.
#[test]
fn a_sibling_hidden_in_a_body_is_not_its_contract() {
    let found = scope_errors(quote! {
        mod model {
            use candle_core::{Result, Tensor};

            #[contract(images: f32[N, 28, 28], return: f32[N, 784])]
            pub fn features(images: &Tensor) -> Result<Tensor> { images.flatten_from(1) }

            #[contract(x: f32[N, 784])]
            pub fn by_use(x: &Tensor) -> Result<Tensor> {
                use crate::other::features;
                features(x)
            }

            #[contract(x: f32[N, 784])]
            pub fn by_glob(x: &Tensor) -> Result<Tensor> {
                use crate::other::*;
                features(x)
            }

            #[contract(x: f32[N, 784])]
            pub fn by_annotated_let(x: &Tensor) -> Result<Tensor> {
                let features: fn(&Tensor) -> Result<Tensor> = crate::other::features;
                features(x)
            }

            #[contract(x: f32[N, 784])]
            pub fn by_closure_parameter(x: &Tensor) -> Result<Tensor> {
                let apply = |features: &dyn Fn(&Tensor) -> Result<Tensor>| features(x);
                apply(&crate::other::features)
            }

            #[contract(images: f32[N, 28, 28])]
            pub fn not_hidden(images: &Tensor) -> Result<Tensor> {
                let flat = features(images)?;
                features(&flat)
            }
        }
    });
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with(
            "`model::features` takes `images: f32[N, 28, 28]`, but `flat` is `f32[N, 784]` here"
        ),
        "{}",
        found[0]
    );
}

/// A bare `loss::`, `ops::` or `nn::` may be the file's own module (the file's `use`s are
/// out of sight); a `use` in sight, or the crate's full path, says whose it is.
#[test]
fn a_bare_module_path_is_known_only_through_a_use_in_sight() {
    let soft = quote!(log_probs: f32[N, C], soft: f32[N, C]);
    let function =
        |body: TokenStream| quote!(fn f(log_probs: &Tensor, soft: &Tensor) -> Result<Tensor> #body);
    for body in [
        quote!({ loss::nll(log_probs, soft) }),
        quote!({ ops::softmax(log_probs, 5) }),
        quote!({ nn::cross_entropy(log_probs, soft) }),
        quote!({ nn::loss::nll(log_probs, soft) }),
        quote!({ nn::embedding(soft, log_probs) }),
    ] {
        let found = errors(soft.clone(), function(body.clone()));
        assert!(found.is_empty(), "{body}: {found:#?}");
    }
    for (body, op) in [
        (
            quote!({
                use candle_nn::loss;
                loss::nll(log_probs, soft)
            }),
            "`candle_nn::loss::nll` takes `target: u8 | u32 | i64 [N]`",
        ),
        (
            quote!({ candle_nn::ops::softmax(log_probs, 5) }),
            "`candle_nn::ops::softmax` takes `dim`",
        ),
        (
            quote!({
                use candle_contracts::nn;
                nn::cross_entropy(log_probs, soft)
            }),
            "`nn::cross_entropy` takes `target: u8 | u32 | i64 [N]`",
        ),
    ] {
        let found = errors(soft.clone(), function(body.clone()));
        assert_eq!(found.len(), 1, "{body}: {found:#?}");
        assert!(found[0].starts_with(op), "{}", found[0]);
    }
    // In a `#[contract]` module its own `use`s are in sight.
    let found = scope_errors(quote! {
        mod model {
            use candle_contracts::nn;
            use candle_core::{Result, Tensor};

            #[contract(ids: u32[B, S], table: f32[V, E])]
            pub fn lookup(ids: &Tensor, table: &Tensor) -> Result<Tensor> {
                nn::embedding(table, ids)
            }
        }
    });
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("`nn::embedding` takes `ids: "),
        "{}",
        found[0]
    );
}

/// A `mut` binding is followed from its `let`, and the parameter it shadows until then.
#[test]
fn mut_bindings_are_followed_in_the_order_of_the_body() {
    let found = errors(
        quote!(x: f32[2, 3, 4], w: f32[4, 5]),
        quote! {
            fn f(x: &Tensor, w: &Tensor) -> Result<Tensor> {
                let first = x.matmul(w)?;
                let mut x = x.permute((0, 2, 1))?;
                let second = x.broadcast_matmul(w)?;
                x = x.transpose(1, 2)?;
                x.broadcast_matmul(&w.t()?)
            }
        },
    );
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].starts_with("`Tensor::matmul` takes `rhs: f32[..] of rank 3`"),
        "{}",
        found[0]
    );
    assert!(
        found[1].starts_with("`Tensor::broadcast_matmul` takes `rhs: f32[.., 3, _]`"),
        "{}",
        found[1]
    );
    assert!(
        found[2].starts_with(
            "`Tensor::broadcast_matmul` takes `rhs: f32[.., 4, _]`, but `w.t()?` is `f32[5, 4]`"
        ),
        "{}",
        found[2]
    );
    // Known until a loop or a closure that may change it, not before; branches join.
    let found = errors(
        quote!(a: f32[2, 3], b: f32[3, 2]),
        quote! {
            fn f(a: &Tensor, b: &Tensor, c: bool) -> Result<Tensor> {
                let mut h = a.clone();
                h.add(b)?; // [2, 3] and [3, 2]
                for _ in 0..2 {
                    h = h.t()?;
                }
                h.add(b)?;
                let mut g = a.clone();
                if c {
                    g = a.exp()?;
                }
                g.add(b)?; // both branches are [2, 3]
                if c {
                    g = b.clone();
                }
                g.add(b)?;
                let mut k = a.clone();
                k.add(b)?;
                let mut reset = |t: &Tensor| k = t.clone();
                reset(b);
                k.add(b)
            }
        },
    );
    let lines: Vec<&str> = found.iter().map(|e| e.lines().next().unwrap()).collect();
    assert_eq!(
        lines,
        ["`Tensor::add` takes `rhs: f32[2, 3]` (the shape of `self`), but `b` is `f32[3, 2]` here";
            3],
        "{found:#?}"
    );
}

/// A path's head is a module or a type, never a local: `let loss = loss::nll(..)` (mnist
/// training's own line) is candle-nn's `nll` where a `use` says so.
#[test]
fn a_local_does_not_hide_a_module_path() {
    let found = errors(
        quote!(logits: f32[N, C], target: f32[N, C]),
        quote! {
            fn f(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
                use candle_nn::{loss, ops};
                let log_sm = ops::log_softmax(logits, D::Minus1)?;
                let loss = loss::nll(&log_sm, target)?;
                Ok(loss)
            }
        },
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with(
            "`candle_nn::loss::nll` takes `target: u8 | u32 | i64 [N]`, but `target` is `f32[N, C]` here"
        ),
        "{}",
        found[0]
    );
}

/// A clause on a field of a parameter that cannot change (`cache.cos`) holds in the body
/// while the parameter is not shadowed.
#[test]
fn field_clauses_of_parameters_hold_in_the_body() {
    let found = errors(
        quote!(x: f32[T, H], cache.cos: f32[P, H], other.sin: f32[P, H]),
        quote! {
            fn f(x: &Tensor, cache: &Cache, other: &mut Cache) -> Result<Tensor> {
                let cos = cache.cos.narrow(0, 0, 2)?;
                let wrong = cache.cos.narrow(2, 0, 1)?;
                let sin = other.sin.narrow(2, 0, 1)?; // `&mut`: may have been replaced
                let cache = other;
                cache.cos.narrow(2, 0, 1)
            }
        },
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("`Tensor::narrow` takes `dim`: a dim of `f32[P, H]`"),
        "{}",
        found[0]
    );
}

/// After `v + self.eps` (a scalar of a type the macro cannot see), the tensor `broadcast_div`
/// gives has at least the rank of `xs`: the `mul` by `[D]` is the first certain mismatch, and
/// it is reported where it is, not as the `return` clause.
#[test]
fn the_first_certain_mismatch_is_reported_where_it_is() {
    let found = scope_errors(quote! {
        impl RmsNorm {
            #[contract(xs: f32[B, D], self.weight: f32[D], return: f32[B, D])]
            fn forward(&self, xs: &Tensor) -> Result<Tensor> {
                let v = xs.sqr()?.mean_keepdim(1)?;
                let ys = xs.broadcast_div(&(v + self.eps)?.sqrt()?)?;
                let ys = ys.mul(&self.weight)?;
                Ok(ys)
            }
        }
    });
    assert_eq!(
        found,
        [
            "`Tensor::mul` takes `rhs: f32[.., _, _]` (the shape of `self`), but `self.weight` \
             is `f32[D]` here\n= note: rank 1 given, rank 2 or more expected"
        ]
    );
}

/// candle-nn's layers in struct fields: `forward`, `apply` and `Module::forward` give the
/// layer's output, with the weight a clause states, so the head reshape and the return are
/// known and a wrong input is a compile error.
#[test]
fn candle_nn_layers_in_fields_follow_their_weights() {
    let found = scope_errors(quote! {
        mod model {
            use candle_core::{Result, Tensor};
            use candle_nn::{Linear, Module, RmsNorm};

            pub struct Attention {
                q_proj: Linear,
                norm: RmsNorm,
            }

            impl Attention {
                #[contract(xs: f32[B, T, 64], self.q_proj.weight(): f32[64, 64],
                           self.norm.weight(): f32[64], return: f32[B, 4, T, 16])]
                pub fn heads(&self, xs: &Tensor) -> Result<Tensor> {
                    let (b, t, _) = xs.dims3()?;
                    let xs = xs.apply(&self.norm)?;
                    let q = self.q_proj.forward(&xs)?;
                    let q = Module::forward(&self.q_proj, &q)?;
                    let wrong = self.q_proj.forward(&xs.sum_keepdim(2)?)?;
                    q.reshape((b, t, 4, 16))?.transpose(1, 2)
                }

                #[contract(xs: f32[B, T, 64], self.norm.weight(): f32[32])]
                pub fn normed(&self, xs: &Tensor) -> Result<Tensor> {
                    let scale = (16 as f64).sqrt();
                    let ys = (self.norm.forward(xs)? / scale)?;
                    Ok(ys)
                }
            }
        }
    });
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found[0].starts_with(
            "`Linear::forward` takes `xs: f32[.., 64]`, but `xs.sum_keepdim(2)?` is \
             `f32[B, T, 1]` here"
        ),
        "{}",
        found[0]
    );
    assert!(
        found[1].starts_with("`RmsNorm::forward` takes `xs: f32[.., 32]`, but `xs` is"),
        "{}",
        found[1]
    );
    // An unknown layer type, or a crate's own `Linear`, is no candle-nn layer.
    let found = scope_errors(quote! {
        mod model {
            use candle_core::{Result, Tensor};
            pub struct Linear;
            pub struct Head { proj: Linear }
            impl Head {
                #[contract(xs: f32[B, 64], self.proj.weight(): f32[10, 64])]
                pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
                    self.proj.forward(&xs.t()?)
                }
            }
        }
    });
    assert!(found.is_empty(), "{found:#?}");
}

/// A method's contract that ends with a comma (rustfmt's style over several lines) takes its
/// struct's contract after it: the two lists joined with one comma, so the method is checked
/// (with `,,` the joined list did not parse and the method went unchecked).
#[test]
fn a_struct_contract_joins_a_method_contract_ending_with_a_comma() {
    for attribute in [
        quote!(#[contract(xs: f32[B, 77],)]),
        quote!(#[contract(xs: f32[B, 77])]),
    ] {
        let found = scope_errors(quote! {
            mod attention {
                use candle_core::{DType, Result, Tensor};

                #[contract(head_dim = HD, HD == 64)]
                pub struct Head {
                    head_dim: usize,
                }

                impl Head {
                    #attribute
                    pub fn scores(&self, xs: &Tensor) -> Result<Tensor> {
                        let w = Tensor::zeros((self.head_dim, 5), DType::F32, xs.device())?;
                        xs.matmul(&w)
                    }
                }
            }
        });
        assert_eq!(
            found,
            [
                "`Tensor::matmul` takes `rhs: f32[.., 77, _]`, but `w` is `f32[64, 5]` here\n\
                 = note: dim -2: 64 given, 77 expected"
            ],
            "{attribute}"
        );
    }
}

/// In a `#[contract] mod`, the contracts of its `impl` blocks' methods are marked as checked
/// by the scope; a `-> impl Trait` function's body is no `impl` block.
#[test]
fn a_module_scope_marks_its_impl_methods_only() {
    let expanded = expand_scope(&quote! {
        mod model {
            pub struct M;
            impl M {
                #[contract(xs: f32[N, 4])]
                pub fn forward(&self, xs: &Tensor) -> Result<Tensor> { xs.exp() }
            }
            pub fn iter() -> impl Iterator<Item = u8> {
                #[contract(xs: f32[N])]
                fn inner(xs: &Tensor) -> Result<Tensor> { xs.exp() }
                std::iter::empty()
            }
        }
    })
    .unwrap()
    .to_string();
    assert!(
        expanded.contains("# [contract (xs : f32 [N , 4] , __checked_by_scope = true)]"),
        "{expanded}"
    );
    assert!(
        expanded.contains("# [contract (xs : f32 [N])]"),
        "{expanded}"
    );
}

/// A dim named by an integer constant in sight is its value, as the guard binds it: the
/// missing transpose is an error with `IMAGE_DIM` as with `784`; a generic parameter of the
/// same name hides the constant.
#[test]
fn constants_in_clauses_are_their_values() {
    let found = scope_errors(quote! {
        mod mlp {
            use candle_core::{Result, Tensor};
            const IMAGE_DIM: usize = 784;
            const HIDDEN: usize = 128;

            #[contract(xs: f32[B, IMAGE_DIM], w1: f32[HIDDEN, IMAGE_DIM])]
            pub fn missing_transpose(xs: &Tensor, w1: &Tensor) -> Result<Tensor> {
                xs.matmul(w1)
            }

            #[contract(xs: f32[B, IMAGE_DIM], w1: f32[HIDDEN, 784], return: f32[B, 128])]
            pub fn hidden(xs: &Tensor, w1: &Tensor) -> Result<Tensor> {
                xs.matmul(&w1.t()?)
            }

            #[contract(xs: f32[B, 784], w: f32[10, 128])]
            pub fn head(xs: &Tensor, w: &Tensor) -> Result<Tensor> {
                hidden(xs, w)
            }

            #[contract(xs: f32[B, HIDDEN], w: f32[10, 128])]
            pub fn shadowed<const HIDDEN: usize>(xs: &Tensor, w: &Tensor) -> Result<Tensor> {
                xs.matmul(&w.t()?)
            }
        }
    });
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found[0].starts_with(
            "`Tensor::matmul` takes `rhs: f32[.., 784, _]`, but `w1` is `f32[128, 784]` here"
        ),
        "{}",
        found[0]
    );
    assert!(
        found[1]
            .starts_with("`mlp::hidden` takes `w1: f32[128, 784]`, but `w` is `f32[10, 128]` here"),
        "{}",
        found[1]
    );
}

/// An equality the contract states (`E == H * D`) is a fact for the body: `E` and `H * D`
/// are the same size, so `H * D + 1` against `E` certainly differs.
#[test]
fn equalities_between_dims_are_facts() {
    let found = errors(
        quote!(x: f32[B, T, E], w: f32[H * D + 1, O], v: f32[H * D, O], E == H * D),
        quote! {
            fn f(x: &Tensor, w: &Tensor, v: &Tensor) -> Result<Tensor> {
                let fine = x.broadcast_matmul(v)?;
                x.broadcast_matmul(w)
            }
        },
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("but `w` is `f32[D * H + 1, O]` here"),
        "{}",
        found[0]
    );
    // Without the relation, `E` and `H * D + 1` may be equal.
    let silent = errors(
        quote!(x: f32[B, T, E], w: f32[H * D + 1, O]),
        quote! {
            fn f(x: &Tensor, w: &Tensor) -> Result<Tensor> {
                x.broadcast_matmul(w)
            }
        },
    );
    assert!(silent.is_empty(), "{silent:#?}");
}

/// A branch may run only for shapes other than the ones the contract states (a test of a
/// shape, a config flag for another layout): nothing in it is reported, unless its condition
/// is certain (then the branch that cannot run is dead, and the one that must run is checked).
#[test]
fn a_branch_on_a_shape_is_checked_only_where_its_condition_is_certain() {
    let args = quote!(x: f32[N, 4], w: f32[8, 2]);
    let found = |body: TokenStream| {
        errors(
            args.clone(),
            quote!(fn f(x: &Tensor, w: &Tensor) -> Result<Tensor> #body),
        )
    };
    // `x.dim(1)?` is 4: the first branch never runs.
    let dead = found(quote!({
        if x.dim(1)? == 8 {
            return x.matmul(w);
        }
        x.matmul(&w.t()?.t()?.narrow(0, 0, 4)?)
    }));
    assert!(dead.is_empty(), "{dead:#?}");
    // `N` may be 8 or not: the branch may be for other shapes than `x`'s.
    let dispatch = found(quote!({
        if x.dim(0)? == 8 {
            return x.matmul(w);
        }
        x.matmul(&w.narrow(0, 0, 4)?)
    }));
    assert!(dispatch.is_empty(), "{dispatch:#?}");
    // Certainly true: the branch runs, and its mismatch is reported.
    let live = found(quote!({
        if x.dim(1)? == 4 {
            return x.matmul(w);
        }
        x.matmul(&w.narrow(0, 0, 4)?)
    }));
    assert_eq!(live.len(), 1, "{live:#?}");
    assert!(
        live[0].contains("but `w` is `f32[8, 2]` here"),
        "{}",
        live[0]
    );
}

/// A helper without a contract is followed at its call with the arguments' types (a branch
/// its arguments rule out never runs): the head split and the scaling keep `q` known as
/// `[B, 4, T, 16]`, so the `matmul` with a matrix of rank 2 after them is an error.
#[test]
fn helpers_without_a_contract_are_followed_at_their_calls() {
    let found = scope_errors(quote! {
        mod model {
            use candle_core::{Result, Tensor};

            fn scale(x: &Tensor, d: usize) -> Result<Tensor> {
                x / (d as f64).sqrt()
            }

            fn heads(x: &Tensor, h: usize) -> Result<Tensor> {
                let (b, t, e) = x.dims3()?;
                if h == 0 {
                    return Ok(x.clone());
                }
                x.reshape((b, t, h, e / h))?.transpose(1, 2)
            }

            fn recursive(x: &Tensor, n: usize) -> Result<Tensor> {
                if n == 0 { Ok(x.clone()) } else { recursive(&x.t()?, n - 1) }
            }

            #[contract(x: f32[B, T, 64], w: f32[10, 16], return: f32[B, 4, T, 10])]
            pub fn f(x: &Tensor, w: &Tensor) -> Result<Tensor> {
                let q = heads(x, 4)?;
                let q = scale(&q, 16)?;
                let unknown = recursive(&q, 3)?;
                q.matmul(w)
            }
        }
    });
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with(
            "`Tensor::matmul` takes `rhs: f32[..] of rank 4` (the rank of `self`), but `w` is"
        ),
        "{}",
        found[0]
    );
}

/// A layer clause states a layer's sizes: `self.q_proj: Linear[64 -> 32]` is a weight
/// `[32, 64]`, so the layer's output is known and an input of the wrong width is an error.
#[test]
fn layer_clauses_state_the_weights() {
    let found = scope_errors(quote! {
        mod model {
            use candle_core::{Result, Tensor};
            use candle_nn::{LayerNorm, Linear, Module};

            pub struct Block {
                q_proj: Linear,
                ln: LayerNorm,
            }

            impl Block {
                #[contract(xs: f32[B, T, 64], self.q_proj: Linear[64 -> 32],
                           self.ln: LayerNorm[32])]
                pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
                    let q = self.q_proj.forward(xs)?;
                    let n = self.ln.forward(&q)?;
                    self.q_proj.forward(&n)
                }
            }
        }
    });
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with(
            "`Linear::forward` takes `xs: float[.., 64]`, but `n` is `f32[B, T, 32]` here"
        ),
        "{}",
        found[0]
    );
}

/// `candle_core::bail!` returns, naming what it reads; `f64::sqrt(d)` is a number.
#[test]
fn candle_bail_and_float_functions_keep_what_is_known() {
    let found = errors(
        quote!(q: f32[B, T, 64], w: f32[10, 32]),
        quote! {
            fn f(q: &Tensor, w: &Tensor) -> Result<Tensor> {
                if q.dims().is_empty() {
                    candle_core::bail!("unexpected {:?}", q.dtype())
                }
                let scale = 1f64 / f64::sqrt(64 as f64);
                let q = (q * scale)?;
                q.broadcast_matmul(&w.t()?)
            }
        },
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("but `w.t()?` is `f32[32, 10]` here"),
        "{}",
        found[0]
    );
}

/// Behind `&mut self`, a clause on a path from `self` holds until something may change that
/// path: a method of the cache changes the cache, not the projections; an assignment to a
/// field may change anything below `self`.
#[test]
fn clauses_behind_mut_self_hold_until_their_path_may_change() {
    let found = scope_errors(quote! {
        mod model {
            use candle_core::{Result, Tensor};
            use candle_nn::{Linear, Module};

            pub struct Attn {
                q: Linear,
                o: Linear,
                cache: Vec<Tensor>,
            }

            impl Attn {
                #[contract(x: f32[B, T, 64], self.q: Linear[64 -> 64], self.o: Linear[64 -> 32])]
                pub fn step(&mut self, x: &Tensor) -> Result<Tensor> {
                    let q = self.q.forward(x)?;
                    self.cache.push(q.clone());
                    self.o.forward(&q.sum_keepdim(2)?)
                }

                #[contract(x: f32[B, T, 64], self.o: Linear[64 -> 32])]
                pub fn replaced(&mut self, x: &Tensor, o: Linear) -> Result<Tensor> {
                    self.o = o;
                    self.o.forward(&x.sum_keepdim(2)?)
                }
            }
        }
    });
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0]
            .starts_with("`Linear::forward` takes `xs: float[.., 64]`, but `q.sum_keepdim(2)?` is"),
        "{}",
        found[0]
    );
}

/// A module whose `c_attn` gives `3 * HIDDEN` features to a `c_proj` that takes `HIDDEN`, as
/// its constructor shows; `field` is `c_proj`'s declaration, `more` items added to it.
fn built_attention(field: TokenStream, more: TokenStream) -> Vec<String> {
    scope_errors(quote! {
        mod model {
            use candle_core::{Module, Result, Tensor};
            use candle_nn::{linear, Linear, VarBuilder};

            const HIDDEN: usize = 768;

            struct Attention {
                c_attn: Linear,
                #field,
            }

            impl Attention {
                fn new(vb: VarBuilder) -> Result<Self> {
                    let c_attn = linear(HIDDEN, 3 * HIDDEN, vb.pp("c_attn"))?;
                    let c_proj = linear(HIDDEN, HIDDEN, vb.pp("c_proj"))?;
                    Ok(Self { c_attn, c_proj })
                }
            }

            impl Attention {
                #[contract(x: f32[B, T, E])]
                fn forward(&self, x: &Tensor) -> Result<Tensor> {
                    let qkv = self.c_attn.forward(x)?;
                    self.c_proj.forward(&qkv)
                }
            }

            #more
        }
    })
}

#[test]
fn the_macro_infers_layer_sizes_from_the_constructors_in_its_file() {
    let found = built_attention(quote!(c_proj: Linear), quote!());
    assert_eq!(
        found,
        [
            "`Linear::forward` takes `xs: _[.., 768]`, but `qkv` is `f32[B, T, 2304]` here\n\
          = note: dim -1: 2304 given, 768 expected"
        ]
    );
    // Another file of the crate may construct or assign a `pub(crate)` field.
    let found = built_attention(quote!(pub(crate) c_proj: Linear), quote!());
    assert_eq!(found, Vec::<String>::new());
    // The file of a child module, which the macro does not read, may construct it.
    let found = built_attention(
        quote!(c_proj: Linear),
        quote!(
            mod weights;
        ),
    );
    assert_eq!(found, Vec::<String>::new());
}

/// A package on disk for the crate-sight tests: `files` as (path, text), under a fresh folder.
fn package(name: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cc-sight-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir.canonicalize().unwrap()
}

#[test]
fn the_macro_sees_its_whole_crate() {
    let dir = package(
        "whole",
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"sight-demo\"\nversion = \"0.1.0\"\n\n[[bin]]\nname = \"run-it\"\npath = \"src/run.rs\"\n",
            ),
            ("src/lib.rs", "pub mod layers;\n"),
            (
                "src/layers.rs",
                "pub struct Attn;\nimpl Attn {\n    pub fn forward(&mut self) -> u32 { 7 }\n}\n",
            ),
            ("src/run.rs", "mod block;\nfn main() {}\n"),
            (
                "src/block.rs",
                "use sight_demo::layers::Attn;\npub fn step(a: &mut Attn) -> u32 { a.forward() }\n",
            ),
        ],
    );
    // The library's own file, in the library's crate: the whole crate is in sight.
    let view =
        super::file::in_crate(&dir, "sight_demo", false, &dir.join("src/layers.rs")).unwrap();
    let id = view.locate("forward", &syn::parse_quote!({ 7 })).unwrap();
    assert!(view.index.whole_crate(view.index.fns[id].module));
    // A module of the binary (named by its `[[bin]]` entry), with the library beside it.
    let view = super::file::in_crate(&dir, "run_it", true, &dir.join("src/block.rs")).unwrap();
    let id = view
        .locate("step", &syn::parse_quote!({ a.forward() }))
        .unwrap();
    assert!(view.index.whole_crate(view.index.fns[id].module));
    assert_eq!(
        view.index
            .fns
            .iter()
            .filter(|f| f.name == "forward")
            .count(),
        1
    );
    // Not a file of that crate, no such crate: no crate view (the macro reads its file alone).
    assert!(super::file::in_crate(&dir, "sight_demo", false, &dir.join("src/block.rs")).is_none());
    assert!(super::file::in_crate(&dir, "sight", false, &dir.join("src/layers.rs")).is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_crate_with_a_file_that_cannot_be_read_is_not_read() {
    // A module file that does not parse, or is missing: the crate the compiler sees is not the
    // one the macro would read, so it reads its own file alone.
    for (name, layers) in [("broken", Some("pub fn f( {")), ("missing", None)] {
        let mut files = vec![
            (
                "Cargo.toml",
                "[package]\nname = \"p\"\nversion = \"0.1.0\"\n",
            ),
            ("src/lib.rs", "pub mod layers;\npub fn g() -> u32 { 1 }\n"),
        ];
        files.extend(layers.map(|text| ("src/layers.rs", text)));
        let dir = package(name, &files);
        assert!(super::file::in_crate(&dir, "p", false, &dir.join("src/lib.rs")).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_module_file_rustc_may_never_read_leaves_the_crate_read() {
    // Under `cfg`, a file that does not parse may never be compiled; a `cfg_attr` path names
    // a file that may not be the one read. Neither is a reason to read the file alone.
    let dir = package(
        "cfg-files",
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"p\"\nversion = \"0.1.0\"\n",
            ),
            (
                "src/lib.rs",
                "#[cfg(feature = \"gpu\")]\nmod gpu;\n\
                 #[cfg_attr(feature = \"cuda\", path = \"cuda.rs\")]\nmod kernels;\n\
                 pub fn g() -> u32 { 1 }\n",
            ),
            ("src/gpu.rs", "pub fn f( {"),
        ],
    );
    let lib = dir.join("src/lib.rs");
    let view = super::file::in_crate(&dir, "p", false, &lib).unwrap();
    assert!(view.locate("g", &syn::parse_quote!({ 1 })).is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_changed_file_is_read_again() {
    let dir = package(
        "changed",
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"p\"\nversion = \"0.1.0\"\n",
            ),
            ("src/lib.rs", "pub fn g() -> u32 { 1 }\n"),
        ],
    );
    let lib = dir.join("src/lib.rs");
    assert!(
        super::file::in_crate(&dir, "p", false, &lib)
            .unwrap()
            .locate("g", &syn::parse_quote!({ 1 }))
            .is_some()
    );
    std::fs::write(&lib, "pub fn g() -> u32 { 2 + 3 }\n").unwrap();
    let view = super::file::in_crate(&dir, "p", false, &lib).unwrap();
    assert!(view.locate("g", &syn::parse_quote!({ 1 })).is_none());
    assert!(view.locate("g", &syn::parse_quote!({ 2 + 3 })).is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_module_of_the_library_and_the_binary_is_read_in_the_crate_compiled() {
    // `src/model.rs` is `mod model;` of both the library and the binary, both named `app`.
    let dir = package(
        "shared-module",
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"app\"\nversion = \"0.1.0\"\n",
            ),
            ("src/lib.rs", "pub mod model;\n"),
            ("src/main.rs", "mod model;\nfn main() {}\n"),
            ("src/model.rs", "pub fn g() -> u32 { 1 }\n"),
        ],
    );
    let model = dir.join("src/model.rs");
    for binary in [false, true] {
        let view = super::file::in_crate(&dir, "app", binary, &model).unwrap();
        let id = view.locate("g", &syn::parse_quote!({ 1 })).unwrap();
        // The binary's crate is read after the library: its number is 1.
        let krate = view.index.modules[view.index.fns[id].module].krate;
        assert_eq!(krate, usize::from(binary));
        assert_eq!(
            view.index.fns.iter().filter(|f| f.name == "g").count(),
            1 + usize::from(binary)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_crate_too_large_to_scan_per_struct_is_read_file_by_file() {
    // 1,600 structs in 3,201 lines: past five million lines times structs.
    let mut lib = String::from("pub fn g() -> u32 { 1 }\n");
    for n in 0..1600 {
        lib.push_str(&format!("pub struct S{n} {{\n    pub x: u32 }}\n"));
    }
    let dir = package(
        "large",
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"p\"\nversion = \"0.1.0\"\n",
            ),
            ("src/lib.rs", &lib),
        ],
    );
    assert!(super::file::in_crate(&dir, "p", false, &dir.join("src/lib.rs")).is_none());
    // 1,500 structs in 3,001 lines: read whole.
    let small: String = lib
        .lines()
        .take(1 + 2 * 1500)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.join("src/lib.rs"), small).unwrap();
    assert!(super::file::in_crate(&dir, "p", false, &dir.join("src/lib.rs")).is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_expression_is_quoted_as_rustfmt_writes_it() {
    let cases = [
        (quote!((key.t()? * scale)?), "(key.t()? * scale)?"),
        (quote!(&(x + y)?), "&(x + y)?"),
        (
            quote!(x.reshape((b, t, h * d))?),
            "x.reshape((b, t, h * d))?",
        ),
        (quote!(-x.neg()?), "-x.neg()?"),
        (quote!(a == -1 && !flag), "a == -1 && !flag"),
        (quote!(Vec::<Vec<u32>>::new()), "Vec::<Vec<u32>>::new()"),
        (quote!(x.i((.., 0..n))?), "x.i((.., 0..n))?"),
        (quote!(*self.scale), "*self.scale"),
        (quote!(&mut *x), "&mut *x"),
        (quote!(return -x), "return -x"),
        (quote!(x as &T), "x as &T"),
        (quote!(break 'outer), "break 'outer"),
        (quote!(x.i((.., 0))?), "x.i((.., 0))?"),
        (quote!(f(x?, y)), "f(x?, y)"),
    ];
    for (tokens, text) in cases {
        assert_eq!(super::text::compact(&tokens), text);
    }
}

#[test]
fn a_test_named_like_the_library_is_read_as_its_own_crate() {
    // `tests/p.rs` of package `p`: cargo names that crate `p` too, without `CARGO_BIN_NAME`.
    let dir = package(
        "test-like-lib",
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"p\"\nversion = \"0.1.0\"\n",
            ),
            ("src/lib.rs", "pub fn g() -> u32 { 1 }\n"),
            ("tests/p.rs", "mod helpers;\nfn t() -> u32 { 2 }\n"),
            ("tests/helpers.rs", "pub fn h() -> u32 { 3 }\n"),
        ],
    );
    let view = super::file::in_crate(&dir, "p", false, &dir.join("tests/p.rs")).unwrap();
    assert!(view.locate("t", &syn::parse_quote!({ 2 })).is_some());
    // Its module is read with it.
    let helper = super::file::in_crate(&dir, "p", false, &dir.join("tests/helpers.rs")).unwrap();
    assert!(helper.locate("h", &syn::parse_quote!({ 3 })).is_some());
    let lib = super::file::in_crate(&dir, "p", false, &dir.join("src/lib.rs")).unwrap();
    assert!(lib.locate("g", &syn::parse_quote!({ 1 })).is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A bare `#[contract]` function inside a `#[contract] mod` (a doctest's, whose file the macro
/// cannot read): the scope reads it with the module's `use`s in sight, once, and marks
/// it (`__checked_by_scope`, which adds nothing to what runs); one under `cfg` may not be
/// compiled: neither read by the scope nor marked (it checks itself where it is compiled).
#[test]
fn a_bare_contract_in_a_scope_is_read_with_the_scope() {
    let module = quote! {
        mod model {
            use candle_contracts::contract;
            use candle_core::{DType, Device, Result, Tensor};

            #[contract]
            pub fn wide() -> Result<Tensor> {
                let y = Tensor::zeros((2, 3), DType::F32, &Device::Cpu)?;
                y.narrow(1, 0, 9)
            }

            #[cfg(any())]
            #[contract]
            pub fn gone() -> Result<Tensor> {
                let y = Tensor::zeros((2, 3), DType::F32, &Device::Cpu)?;
                y.narrow(1, 0, 9)
            }

            #[contract]
            #[cfg(any())]
            pub fn gone_after(x: &Tensor) -> Result<Tensor> {
                x.narrow(1, 0, 9)
            }

            #[cfg(any())]
            #[contract(x: f32[N])]
            pub fn gone_listed(x: &Tensor) -> Result<Tensor> {
                let y = Tensor::zeros((2, 3), DType::F32, &Device::Cpu)?;
                y.narrow(1, 0, 9)
            }

            #[contract]
            pub struct Kept;
        }
    };
    // (Its error needs candle's crates, which this crate's tests cannot name: the book's
    // sample of a `Func` builder in a `#[contract] mod` is the doctest of that.)
    let expanded = expand_scope(&module).unwrap().to_string();
    // `wide` is marked; the three under `cfg` and the struct are as written.
    assert_eq!(
        expanded
            .matches("# [contract (__checked_by_scope = true)]")
            .count(),
        1,
        "{expanded}"
    );
    assert!(
        expanded.contains("# [contract (x : f32 [N])]"),
        "{expanded}"
    );
    assert_eq!(expanded.matches("# [contract]").count(), 3, "{expanded}");
}

/// An `impl` under `cfg` in a `#[contract] mod` (a breaker's): not checked by the scope (it may
/// not be compiled), but its methods still take the struct's clauses, which the macro
/// requires of every contracted method of a struct with a contract.
#[test]
fn an_impl_under_cfg_in_a_scope_takes_the_structs_clauses() {
    let module = quote! {
        mod m {
            use candle_contracts::contract;
            use candle_core::{Result, Tensor};
            #[contract(proj: f32[4, 3])]
            pub struct S { proj: Tensor }
            #[cfg(not(target_arch = "wasm32"))]
            impl S {
                #[contract(x: f32[N, 3])]
                pub fn wrong(&self, x: &Tensor) -> Result<Tensor> { x.sum(2) }
            }
        }
    };
    let expanded = expand_scope(&module).unwrap().to_string();
    assert_eq!(
        expanded.matches("__struct_contract").count(),
        1,
        "{expanded}"
    );
    // The struct's own contract is the only one the scope marks checked; nothing reported.
    assert_eq!(
        expanded.matches("__checked_by_scope").count(),
        1,
        "{expanded}"
    );
    assert_eq!(expanded.matches("compile_error").count(), 0, "{expanded}");
}
