//! Parser, validator and expansion tests on token streams, outside a compiler run.

use std::str::FromStr;

use proc_macro2::TokenStream;
use proptest::prelude::*;

use crate::expand;

/// Expands every `#[contract]` in a source file, for the golden files in `tests/expand`.
fn expand_file(source: &str) -> String {
    /// Removes the `#[contract(...)]` attribute and returns its arguments.
    fn take_contract(attrs: &mut Vec<syn::Attribute>) -> Option<TokenStream> {
        let position = attrs.iter().position(|a| a.path().is_ident("contract"))?;
        match attrs.remove(position).meta {
            syn::Meta::List(list) => Some(list.tokens),
            _ => Some(TokenStream::new()),
        }
    }
    let mut file: syn::File = syn::parse_str(source).expect("a sample parses");
    let mut items = Vec::new();
    for item in file.items.drain(..) {
        match item {
            syn::Item::Fn(mut function) => {
                for stmt in &mut function.block.stmts {
                    if let syn::Stmt::Local(local) = stmt
                        && let Some(init) = &mut local.init
                        && let syn::Expr::Macro(call) = &*init.expr
                        && call.mac.path.is_ident("check")
                    {
                        let expanded = expand::check(call.mac.tokens.clone());
                        *init.expr = syn::parse2(expanded).expect("an expression");
                    }
                }
                let args = take_contract(&mut function.attrs);
                match args {
                    Some(args) => {
                        let expanded = expand::contract(args, quote::quote!(#function));
                        items.push(syn::parse2::<syn::Item>(expanded).expect("an item"));
                    }
                    None => items.push(syn::Item::Fn(function)),
                }
            }
            syn::Item::Impl(mut block) => {
                for impl_item in &mut block.items {
                    if let syn::ImplItem::Fn(method) = impl_item
                        && let Some(args) = take_contract(&mut method.attrs)
                    {
                        let expanded = expand::contract(args, quote::quote!(#method));
                        *impl_item = syn::parse2(expanded).expect("a method");
                    }
                }
                items.push(syn::Item::Impl(block));
            }
            other => items.push(other),
        }
    }
    file.items = items;
    prettyplease::unparse(&file)
}

/// Golden expansions: `tests/expand/X.rs` expands to `tests/expand/X.expanded.rs`. Re-bless
/// with `BLESS_EXPANSIONS=1 cargo test -p candle-contracts-macros` and read the diff.
#[test]
fn expansions_match_their_golden_files() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expand");
    let mut samples: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension().is_some_and(|e| e == "rs")
                && !path.to_string_lossy().ends_with(".expanded.rs")
        })
        .collect();
    samples.sort();
    assert!(!samples.is_empty());
    for sample in samples {
        let expanded = expand_file(&std::fs::read_to_string(&sample).unwrap());
        let golden = sample.with_extension("expanded.rs");
        if std::env::var_os("BLESS_EXPANSIONS").is_some() {
            std::fs::write(&golden, &expanded).unwrap();
        }
        let expected = std::fs::read_to_string(&golden)
            .unwrap_or_else(|_| panic!("{} is missing: bless it", golden.display()));
        assert_eq!(
            expanded,
            expected,
            "{} changed: re-bless and read the diff",
            golden.display()
        );
    }
}

const ITEM: &str = "fn loss(&self, logits: &Tensor, target: Option<&Tensor>, num_classes: usize) \
                    -> Result<Tensor> { body() }";

fn tokens(text: &str) -> TokenStream {
    TokenStream::from_str(text).expect("test input lexes")
}

/// The error messages `#[contract(args)]` gives on `ITEM`, in order.
fn errors(args: &str) -> Vec<String> {
    let output = expand::contract(tokens(args), tokens(ITEM)).to_string();
    output
        .split("compile_error !")
        .skip(1)
        .map(|rest| {
            let start = rest.find('"').expect("a message") + 1;
            let end = rest[start..].find("\" }").expect("end of message") + start;
            rest[start..end].replace("\\\"", "\"")
        })
        .collect()
}

#[test]
fn a_valid_contract_expands_to_a_guard_and_keeps_the_body() {
    let output = expand::contract(
        tokens(
            "logits: float[N, C], target: u8 | u32 | i64 [N] in 0..C ignore -100, \
             self.weight: f32[C, D], return: f32[], N >= 1",
        ),
        tokens(&format!("/// The loss.\n{ITEM}")),
    )
    .to_string();
    assert!(!output.contains("compile_error"), "{output}");
    assert!(output.contains("check_inputs"));
    assert!(output.contains("check_output"));
    assert!(output.contains("body ()"));
    assert!(output.contains("# Contract"));
    assert!(output.contains("\"target: u8 | u32 | i64 [N] in 0..C ignore -100\""));
}

/// A doc section of ours on an undocumented item would silence `missing_docs` on it.
#[test]
fn only_a_documented_function_gets_the_contract_doc_section() {
    let undocumented = expand::contract(tokens("logits: f32[N, C]"), tokens(ITEM)).to_string();
    assert!(!undocumented.contains("doc"), "{undocumented}");
    let documented = expand::contract(
        tokens("logits: f32[N, C]"),
        tokens(&format!("#[doc = \" The loss.\"] {ITEM}")),
    )
    .to_string();
    assert_eq!(documented.matches("# Contract").count(), 1, "{documented}");
}

/// The inner attributes stay on the function's block; the body, its items included, goes into a
/// block of its own after the guard.
#[test]
fn the_guard_goes_after_the_inner_attributes_and_outside_the_bodys_own_block() {
    let body: proc_macro2::Group = syn::parse_str(
        "{ #![allow(unused)] use std::fmt; const K: usize = 3; println!(\"x\"); body() }",
    )
    .unwrap();
    let parts = crate::item::BodyParts::of(&body);
    assert_eq!(parts.inner_attrs.to_string(), "#! [allow (unused)]");
    assert_eq!(
        parts.with(quote::quote!(guard();), true).to_string(),
        "{ #! [allow (unused)] guard () ; { use std :: fmt ; const K : usize = 3 ; println ! (\"x\") ; body () } }"
    );
    assert_eq!(
        parts.with(quote::quote!(guard();), false).to_string(),
        "{ guard () ; { use std :: fmt ; const K : usize = 3 ; println ! (\"x\") ; body () } }"
    );
}

#[test]
fn all_errors_of_one_attribute_come_together() {
    let found = errors("tagret: u32[N] in 0..C, logits: f23[N, C], num_classes: u32[N]");
    assert_eq!(found.len(), 3, "{found:?}");
    assert_eq!(
        found[0],
        "unknown parameter `tagret`; did you mean `target`?"
    );
    assert!(
        found[1].starts_with("`num_classes` is a `usize`, not a tensor"),
        "{found:?}"
    );
    assert_eq!(found[2], "unknown dtype `f23`; did you mean `f32`?");
}

#[test]
fn value_rules_are_checked_against_the_dtypes() {
    assert_eq!(
        errors("target: u32[N] in 0..2.5"),
        ["float bound `2.5` on an integer clause (`u32`): write an integer bound"]
    );
    assert_eq!(
        errors("target: u8 | u32 [N] in -1..10"),
        ["negative bound `-1` on an unsigned clause (`u8 | u32`): its values are never negative"]
    );
    assert_eq!(
        errors("target: int[N] finite"),
        ["`finite` on an integer clause (`int`) always holds: integers are never NaN or infinite"]
    );
    assert_eq!(
        errors("target: i64[N] in 5..3"),
        ["empty range `5..3`: no value satisfies it"]
    );
    assert_eq!(
        errors("target: i64[N] in 0..0"),
        ["empty range `0..0`: no value satisfies it"]
    );
    assert_eq!(
        errors("target: u8[N] in 300.."),
        ["`300..` can never hold for `u8`: `u8` holds 0..=255"]
    );
    // A union may mix signedness: a negative bound is fine when one dtype can hold it.
    assert!(errors("target: u8 | i64 [N] in -1..10").is_empty());
    assert!(errors("logits: f32[N, C] in 0.0..=1.0 finite").is_empty());
}

#[test]
fn names_outside_the_contract_are_values_from_scope() {
    // A name that is no dim and no parameter is a constant in scope; rustc reports it where it
    // stands when there is none (the expansion names it with the user's span).
    assert!(errors("target: i64[N] in 0..num_clases").is_empty());
    assert!(errors("target: i64[N] in 0..num_classes").is_empty());
    assert!(errors("logits: f32[N, H / 2]").is_empty());
    assert!(errors("logits: f32[B, T], T <= MAX_LEN, T <= {cfg.max_len} - 2").is_empty());
    assert_eq!(
        errors("logits: f32[.., C, ..]"),
        [
            "a shape can hold only one `..` or `*name`: with two, the dims between them are ambiguous"
        ]
    );
    assert_eq!(
        errors("logits: f32[N], return: f32[N], return.1: f32[N]"),
        [
            "`return` and `return.0` in one contract: a `return` clause checks a tensor, \
          `return.0`, `return.1`, ... the elements of a returned tuple; use one form",
            "`return.1` names an element of a returned tuple, but `loss` returns `Tensor`, \
          not a tuple: write `return: ...`"
        ]
    );
}

#[test]
fn signature_rules() {
    let const_fn = expand::contract(
        tokens("x: f32[N]"),
        tokens("const fn f(x: &Tensor) -> Tensor { todo() }"),
    )
    .to_string();
    assert!(const_fn.contains("cannot go on a `const fn`"), "{const_fn}");
    let declaration =
        expand::contract(tokens("x: f32[N]"), tokens("fn f(&self, x: &Tensor);")).to_string();
    assert!(
        declaration.contains("needs a function body"),
        "{declaration}"
    );
    let not_result = expand::contract(
        tokens("x: f32[N], on_violation = error"),
        tokens("fn f(x: &Tensor) -> Tensor { todo() }"),
    )
    .to_string();
    assert!(
        not_result.contains("needs a function that returns a `Result`"),
        "{not_result}"
    );
    let no_fn = expand::contract(tokens("x: f32[N]"), tokens("enum S { A }")).to_string();
    assert!(no_fn.contains("goes on a function"), "{no_fn}");
}

/// The clauses of a struct contract are its fields' (and dims'): anything else is an error
/// at the clause.
#[test]
fn struct_contract_rules() {
    let item = "struct Block { proj: Linear, n_head: usize, bias: Tensor }";
    let expand = |args: &str| expand::contract(tokens(args), tokens(item)).to_string();
    let valid = expand("proj: Linear[E -> E], bias: f32[E], n_head = H, E % H == 0");
    assert!(!valid.contains("compile_error"), "{valid}");
    assert!(valid.contains("StructContract for Block"), "{valid}");
    assert!(valid.contains("struct Block"), "{valid}");
    let unknown = expand("proj: Linear[E -> E], out_proj: Linear[E -> E]");
    assert!(
        unknown.contains("`out_proj` is no named field of this struct (`proj`, `n_head`, `bias`)"),
        "{unknown}"
    );
    let both = expand("out_proj: Linear[E -> E], n_heads = H");
    assert!(both.contains("`out_proj` is no named field"), "{both}");
    assert!(both.contains("`n_heads` is no named field"), "{both}");
    let returns = expand("return: f32[N]");
    assert!(
        returns.contains("a `return` clause goes on a method"),
        "{returns}"
    );
    let option = expand("proj: Linear[E -> E], on_violation = panic");
    assert!(
        option.contains("goes on the methods' contracts"),
        "{option}"
    );
    let twice = expand("n_head = H, n_head = D");
    assert!(twice.contains("names a dim twice"), "{twice}");
    let bad_dtype = expand("bias: f99[E]");
    assert!(bad_dtype.contains("f99"), "{bad_dtype}");
    assert!(bad_dtype.contains("struct Block"), "{bad_dtype}");
    let empty = expand::contract(TokenStream::new(), tokens(item)).to_string();
    assert!(empty.contains("states its fields"), "{empty}");
}

/// `self.n_head = H` in a method's contract binds `H` from the field; a function without
/// `self` has no field to read.
#[test]
fn a_field_names_a_dim_only_in_a_method() {
    let method = expand::contract(
        tokens("x: f32[N, H], self.n_head = H"),
        tokens("fn f(&self, x: &Tensor) -> Result<Tensor> { body() }"),
    )
    .to_string();
    assert!(!method.contains("compile_error"), "{method}");
    assert!(method.contains("binds : true"), "{method}");
    let free = expand::contract(
        tokens("x: f32[N, H], self.n_head = H"),
        tokens("fn f(x: &Tensor) -> Result<Tensor> { body() }"),
    )
    .to_string();
    assert!(
        free.contains("`self.n_head = H` names a field of `self`, and `f` takes no `self`"),
        "{free}"
    );
    let indexed = errors("logits: f32[N, C], self.heads[0] = H");
    assert_eq!(
        indexed,
        [
            "a field's value, a dim (`self.n_head = H`) or a `bool` (`self.multi_query = true`), is stated on a path of fields from `self`; a size of another parameter's field goes in a relation (`P == {cache.len}`)"
        ]
    );
}

#[test]
fn the_original_item_survives_an_error() {
    let output = expand::contract(tokens("x: f99[N]"), tokens(ITEM)).to_string();
    assert!(output.contains("compile_error"));
    assert!(output.contains("fn loss"));
    assert!(!output.contains("check_inputs"));
}

#[test]
fn check_rejects_function_only_clauses() {
    let output =
        expand::check(tokens("x: f32[N], return: f32[N], on_violation = panic")).to_string();
    assert!(output.contains("`check!` has no return value"), "{output}");
    assert!(
        output.contains("`check!` always returns a `Result`"),
        "{output}"
    );
}

/// Tokens of the contract grammar, to build random attribute bodies from.
fn grammar_token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("N".to_string()),
        Just("C".to_string()),
        Just("logits".to_string()),
        Just("target".to_string()),
        Just("num_classes".to_string()),
        Just("f32".to_string()),
        Just("u8".to_string()),
        Just("float".to_string()),
        Just("_".to_string()),
        Just("in".to_string()),
        Just("ignore".to_string()),
        Just("finite".to_string()),
        Just("contiguous".to_string()),
        Just("allow_all".to_string()),
        Just("MAX".to_string()),
        Just("self".to_string()),
        Just("return".to_string()),
        Just("on_violation".to_string()),
        Just("panic".to_string()),
        Just(":".to_string()),
        Just(",".to_string()),
        Just("|".to_string()),
        Just("..".to_string()),
        Just("..=".to_string()),
        Just("*".to_string()),
        Just("+".to_string()),
        Just("-".to_string()),
        Just("/".to_string()),
        Just("%".to_string()),
        Just("=".to_string()),
        Just("==".to_string()),
        Just("<=".to_string()),
        Just(">".to_string()),
        Just(".".to_string()),
        Just("0".to_string()),
        Just("3".to_string()),
        Just("1.5".to_string()),
        Just("1e400".to_string()),
        Just("340282366920938463463374607431768211457".to_string()),
        Just("\"a note\"".to_string()),
    ]
}

fn grammar_tokens() -> impl Strategy<Value = String> {
    let leaf = prop::collection::vec(grammar_token(), 0..8).prop_map(|t| t.join(" "));
    leaf.prop_recursive(3, 48, 6, |inner| {
        prop::collection::vec(
            prop_oneof![
                grammar_token(),
                inner.clone().prop_map(|s| format!("[{s}]")),
                inner.clone().prop_map(|s| format!("{{{s}}}")),
                inner.prop_map(|s| format!("({s})")),
            ],
            0..10,
        )
        .prop_map(|t| t.join(" "))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Whatever the tokens, the macro returns errors or an expansion; it never panics.
    #[test]
    fn the_macro_never_panics(body in grammar_tokens()) {
        let args = tokens(&body);
        let _ = expand::contract(args.clone(), tokens(ITEM));
        let _ = expand::check(args);
    }

    /// Well-formed tensor clauses with random dims and ranges always give a plan or errors.
    #[test]
    fn random_well_formed_clauses_never_panic(
        dtype in prop_oneof![Just("f32"), Just("u8"), Just("i64"), Just("int"), Just("_")],
        dims in prop::collection::vec(prop_oneof![Just("N"), Just("C"), Just("3"), Just("_"), Just(".."), Just("*B"), Just("N + 1"), Just("C / 0")], 0..4),
        lo in -300i64..300,
        hi in -300i64..300,
        inclusive in any::<bool>(),
    ) {
        let dots = if inclusive { "..=" } else { ".." };
        let body = format!("logits: {dtype}[{}] in {lo}{dots}{hi}", dims.join(", "));
        let _ = expand::contract(tokens(&body), tokens(ITEM));
    }
}

#[test]
fn a_flag_given_twice_is_named_without_suggesting_alternatives() {
    assert_eq!(
        errors("logits: f32[N] finite finite"),
        ["`finite` appears twice in this clause; remove one"]
    );
    assert_eq!(
        errors("logits: f32[N] in 0.0..1.0 in 2.0..3.0"),
        ["`in` appears twice in this clause; join the values with `|`"]
    );
}

#[test]
fn the_crate_option_takes_a_path_or_a_string_once() {
    let output = expand::contract(tokens("crate = ::cc, logits: f32[N, C]"), tokens(ITEM));
    let output = output.to_string();
    assert!(
        output.contains(":: cc :: __private :: Guard ::"),
        "{output}"
    );
    assert!(!output.contains("candle_contracts"), "{output}");
    let quoted = expand::contract(
        tokens("crate = \"my::cc\", logits: f32[N, C]"),
        tokens(ITEM),
    );
    assert!(quoted.to_string().contains("my :: cc :: __private :: one"));
    assert_eq!(
        errors("crate = 3, logits: f32[N, C]"),
        ["expected the path of the `candle-contracts` crate, e.g. `crate = ::cc`"]
    );
    assert_eq!(
        errors("crate = ::a, crate = ::b, logits: f32[N, C]"),
        ["option `crate` names two different paths; give it once"]
    );
    // Two joined contracts of a renamed crate each name it.
    assert!(errors("crate = ::cc, logits: f32[N, C], crate = ::cc").is_empty());
    assert_eq!(
        errors("krate = cc, logits: f32[N, C]"),
        ["unknown option `krate`; did you mean `crate`?"]
    );
}

#[test]
#[should_panic(expected = "dropped without checking its errors")]
fn a_ctxt_dropped_with_its_errors_unchecked_panics() {
    let errors = crate::ctxt::Ctxt::new();
    errors.error_at(proc_macro2::Span::call_site(), "unknown dtype `f23`");
}

#[test]
fn a_ctxt_gives_every_error_once_in_order() {
    let errors = crate::ctxt::Ctxt::new();
    assert!(!errors.has_errors());
    errors.error_at(proc_macro2::Span::call_site(), "first");
    errors.error_at(proc_macro2::Span::call_site(), "second");
    assert!(errors.has_errors());
    let combined = errors.check().unwrap_err();
    let messages: Vec<String> = combined.into_iter().map(|e| e.to_string()).collect();
    assert_eq!(messages, ["first", "second"]);
    assert!(crate::ctxt::Ctxt::new().check().is_ok());
}

/// A clause, parsed on its own.
fn clause(text: &str) -> crate::syntax::Clause {
    syn::parse_str(text).unwrap_or_else(|e| panic!("`{text}` does not parse: {e}"))
}

fn ident(name: &str) -> syn::Ident {
    syn::Ident::new(name, proc_macro2::Span::call_site())
}

fn at() -> crate::syntax::SpanRange {
    proc_macro2::Span::call_site().into()
}

#[test]
fn a_tensor_clause_parses_to_its_subject_dtypes_shape_and_rules() {
    use crate::syntax::*;
    let expected = Clause::Tensor(TensorClause {
        subject: Subject::Param(ident("target")),
        spec: TensorSpec {
            dtypes: vec![
                DTypeName {
                    name: "u8".into(),
                    span: at(),
                },
                DTypeName {
                    name: "i64".into(),
                    span: at(),
                },
            ],
            shape: Shape {
                span: at(),
                dims: vec![Dim::Named(ident("N")), Dim::Fixed(3), Dim::Any],
            },
            constraints: vec![
                Constraint::In {
                    keyword: at(),
                    patterns: vec![Pattern::Range {
                        lo: Some(BoundExpr::Int {
                            value: 0,
                            span: at(),
                        }),
                        hi: Some(BoundExpr::Name(ident("C"))),
                        inclusive: false,
                        span: at(),
                    }],
                },
                Constraint::Ignore {
                    keyword: at(),
                    values: vec![IgnoreValue::Int {
                        value: -100,
                        span: at(),
                    }],
                    allow_all: None,
                },
            ],
            sequence: None,
        },
        span: at(),
        absent_zero: None,
    });
    assert_eq!(
        clause("target: u8 | i64 [N, 3, _] in 0..C ignore -100"),
        expected
    );
}

#[test]
fn dims_relations_and_options_parse_to_values() {
    use crate::syntax::*;
    let shape: Shape = syn::parse_str("[*B, .., T + 1]").unwrap();
    assert_eq!(
        shape.dims,
        [
            Dim::Run {
                star: at(),
                name: ident("B")
            },
            Dim::Rest(at()),
            Dim::Expr(DimExpr::Binary {
                lhs: Box::new(DimExpr::Name(ident("T"))),
                op: ArithOp::Add,
                op_span: at(),
                rhs: Box::new(DimExpr::Lit(1)),
            }),
        ]
    );
    assert_eq!(
        clause("T <= {cfg.max_len}"),
        Clause::Relation(Relation {
            lhs: DimExpr::Name(ident("T")),
            op: CmpOp::Le,
            rhs: DimExpr::Block {
                tokens: Tokens(tokens("cfg.max_len")),
                span: at(),
            },
        })
    );
    assert_eq!(
        clause("on_violation = panic"),
        Clause::Option(OptionClause {
            name: ident("on_violation"),
            value: ident("panic"),
        })
    );
    assert_eq!(
        clause("crate = \"::cc\""),
        Clause::Crate(CratePath {
            keyword: at(),
            path: syn::parse_str("::cc").unwrap(),
        })
    );
    let finite: Constraint = syn::parse_str("finite").unwrap();
    assert_eq!(finite, Constraint::Finite(at()));
}

/// The doc section's text is the canonical one, whatever the spacing of the tokens.
#[test]
fn canonical_text_has_no_token_spacing() {
    assert_eq!(
        clause("ids: u32[B, T] in 0..{ self . vocab_size }").to_string(),
        "ids: u32[B, T] in 0..{self.vocab_size}"
    );
    assert_eq!(
        clause("target: i64[N] ignore -100 allow_all { reduction != Reduction :: Mean }")
            .to_string(),
        "target: i64[N] ignore -100 allow_all {reduction != Reduction::Mean}"
    );
}

/// Derived subjects, masks and `integral` print back canonically, spaced as a person writes
/// them.
#[test]
fn derived_subjects_and_masks_print_canonically() {
    assert_eq!(
        clause("{ target . sum (1) ? }: f32[N] in 0.999..=1.001").to_string(),
        "{target.sum(1)?}: f32[N] in 0.999..=1.001"
    );
    assert_eq!(
        clause("ids: i64[B, T] in 0..V where attention_mask").to_string(),
        "ids: i64[B, T] in 0..V where attention_mask"
    );
    assert_eq!(
        clause("ids: i64[B, T] in 0.. where { ids . ge (2) ? }").to_string(),
        "ids: i64[B, T] in 0.. where {ids.ge(2)?}"
    );
    assert_eq!(
        clause("mask: float[H, W] in 0.0..{ n as f64 } integral").to_string(),
        "mask: float[H, W] in 0.0..{n as f64} integral"
    );
}

/// The rules of §11 that a contract can break at compile time.
#[test]
fn derived_subjects_masks_and_integral_are_checked_at_compile_time() {
    assert_eq!(
        errors("target: i64[N] in 0..C integral"),
        [
            "`integral` on an integer clause (`i64`) always holds: it is for floats that must be \
          whole numbers"
        ]
    );
    assert_eq!(
        errors("logits: f32[N, C] where target"),
        [
            "`where` exempts positions from the value rules, and this clause has none: add `in`, \
          `ignore`, `finite` or `integral` before it"
        ]
    );
    assert_eq!(
        errors("logits: f32[N, C] in 0.0.. where mask"),
        [
            "unknown parameter `mask`: the parameters of `loss` are `logits`, `target`, \
          `num_classes`"
        ]
    );
    assert_eq!(
        errors("logits: f32[N, C], return: f32[N] in 0.0.. where target"),
        [
            "a `return` clause takes no `where` mask: check the masked values in the caller, or \
          with `check!` in the body"
        ]
    );
    assert_eq!(
        errors("logits: f32[N, C] finite where target where target"),
        ["`where` appears twice in this clause; remove one"]
    );
    assert_eq!(
        errors("{}: f32[N]"),
        [
            "empty braces: a derived subject is a Rust expression whose value is a tensor, e.g. \
          `{target.sum(1)?}: f32[N] in 0.999..=1.001`"
        ]
    );
    assert_eq!(
        errors("logits: f32[N, C] finite where"),
        [
            "unexpected end of input, expected a mask after `where`: a parameter (`where \
             attention_mask`) or a braced expression (`where {input_ids.ge(2)?}`, `where \
             {&self.mask}`)"
        ]
    );
    assert!(errors("{logits.sum(1)?}: f32[N] in 0.0.. where {target.is_some()}").is_empty());
}

/// The constraint words come from one table; the message lists them as before.
#[test]
fn an_unknown_constraint_lists_the_constraint_words() {
    assert_eq!(
        errors("logits: f32[N, C] finit"),
        [
            "unknown constraint `finit`: expected `in`, `ignore`, `finite`, `integral`, \
             `contiguous`, `where` or a note string after the shape; did you mean `finite`?"
        ]
    );
}

/// The spec carries the contract's text once: each clause's dtypes, shape, ranges and ignored
/// values are spans of it, canonical whatever the spacing of the tokens.
#[test]
fn clause_parts_are_spans_of_the_contract_text() {
    use crate::item::Output;
    use crate::valid::Context;
    let cx = Context {
        inline: true,
        function: "check!".to_string(),
        params: Vec::new(),
        has_receiver: true,
        output: Output::Unit,
        name_span: proc_macro2::Span::call_site(),
        const_generics: Vec::new(),
    };
    let errors = crate::ctxt::Ctxt::new();
    let analyzed = expand::analyze(
        tokens(
            "logits: f32[B, T - 1, V], ids: u32 | i64 [B, T] in 0..{ self . vocab_size } \
             ignore -100, T <= 512",
        ),
        &cx,
        &errors,
    );
    assert!(errors.check().is_ok());
    let (plan, contract) = analyzed.unwrap();
    // The tensor clauses, lowered once for the body's analysis.
    assert_eq!(
        contract.unwrap().signature(),
        "logits: f32[B, T - 1, V], ids: u32 | i64 [B, T]"
    );
    assert_eq!(
        plan.text.text,
        "logits: f32[B, T - 1, V]\nids: u32 | i64 [B, T] in 0..{self.vocab_size} ignore -100\n\
         T <= 512"
    );
    let [logits, ids] = &plan.inputs[..] else {
        panic!("two input clauses");
    };
    let text = &plan.text;
    assert_eq!(text.of(logits.dtypes_span), "f32");
    assert_eq!(text.of(logits.shape_span), "[B, T - 1, V]");
    let crate::plan::DimSpec::Expr(expr) = &logits.shape[1] else {
        panic!("`T - 1` is a dim expression");
    };
    assert_eq!(text.of(expr.text), "T - 1");
    assert_eq!(text.of(plan.relations[0].text), "T <= 512");
    assert_eq!(text.of(ids.dtypes_span), "u32 | i64");
    assert_eq!(text.of(ids.shape_span), "[B, T]");
    let values = ids.values.as_ref().expect("value rules");
    assert_eq!(text.of(values.ranges_span), "0..{self.vocab_size}");
    assert_eq!(text.of(values.ignore_span), "-100");
    // The spans point into the clause's own line, not at the same text elsewhere.
    assert_eq!(
        ids.shape_span.start as usize,
        text.text.find("[B, T]").unwrap()
    );
    assert!(ids.dtypes_span.start as usize > text.text.find('\n').unwrap());
}

/// Against Python's `Decimal(float)` expansions: 0.1 -> 0.1000000000000000055..., 0.3 ->
/// 0.2999999999999999888..., 1e23 -> 99999999999999991611392.
#[test]
fn a_float_literal_is_compared_with_its_f64_exactly() {
    use std::cmp::Ordering::*;
    let side = |text: &str| crate::parse::literal_vs_f64(text, text.parse().unwrap());
    assert_eq!(side("0.1"), Less);
    assert_eq!(side("0.3"), Greater);
    assert_eq!(side("-0.1"), Greater);
    assert_eq!(side("-0.3"), Less);
    assert_eq!(side("1e23"), Greater);
    assert_eq!(side("2.3"), Greater);
    for exact in ["0.5", "0.0", "-0.0", "100.0", "2.5e10", "0.125", "1e0"] {
        if let Ok(value) = exact.parse::<f64>() {
            assert_eq!(crate::parse::literal_vs_f64(exact, value), Equal, "{exact}");
        }
    }
    // 2^-1074, the smallest subnormal, written out in full; and one digit more.
    let tiny = format!("{:.1100e}", 5e-324f64);
    assert_eq!(crate::parse::literal_vs_f64(&tiny, 5e-324), Equal);
    let beyond = tiny.replace("e-324", "1e-324");
    assert_eq!(crate::parse::literal_vs_f64(&beyond, 5e-324), Greater);
    let (one_above, one_below) = (
        "0.10000000000000000555111512312578270211815834045410156251",
        "0.10000000000000000555111512312578270211815834045410156249",
    );
    assert_eq!(crate::parse::literal_vs_f64(one_above, 0.1), Greater);
    assert_eq!(crate::parse::literal_vs_f64(one_below, 0.1), Less);
    assert_eq!(
        crate::parse::literal_vs_f64(
            "0.1000000000000000055511151231257827021181583404541015625",
            0.1
        ),
        Equal
    );
}

#[test]
fn a_layer_clause_takes_its_sizes_in_the_layers_own_form() {
    let found = errors("self.proj: Linear[64], logits: f32[N, 64]");
    assert!(
        found
            .iter()
            .any(|e| e.contains("`Linear` takes its sizes as `Linear[IN -> OUT]`")),
        "{found:?}"
    );
    let found = errors("self.table: Embedding[V -> E], logits: f32[N, V]");
    assert!(
        found
            .iter()
            .any(|e| e.contains("`Embedding` takes its sizes as `Embedding[V, E]`")),
        "{found:?}"
    );
    let found = errors("self.proj: Linear[64 -> 10] in 0.0..1.0, logits: f32[N, 64]");
    assert!(
        found
            .iter()
            .any(|e| e.contains("a layer clause states the layer's sizes only")),
        "{found:?}"
    );
    // A valid one is a clause on the layer's weight: nothing to report.
    let valid = errors("self.proj: bf16 Linear[64 -> 10], logits: bf16[N, 64]");
    assert!(valid.is_empty(), "{valid:?}");
}

#[test]
fn a_convolutions_settings_follow_with_and_each_is_checked() {
    let valid = errors(
        "self.conv: Conv2d[C -> 8, 3] with stride = S, padding = 1, dilation = 1, \
         groups = 1, logits: f32[N, C]",
    );
    assert!(valid.is_empty(), "{valid:?}");
    let cases = [
        (
            "self.proj: Linear[64 -> 10] with stride = 2",
            "only a `Conv1d` or `Conv2d` clause",
        ),
        (
            "logits: f32[N, C] with stride = 2",
            "gives a convolution's settings",
        ),
        (
            "self.conv: Conv2d[C -> 8, 3] with stride = 2, stride = 1",
            "`stride` is set twice",
        ),
        (
            "self.conv: Conv2d[C -> 8, 3] with strides = 2",
            "`strides` is none of them",
        ),
        (
            "self.conv: Conv2d[C -> 8, 3] with stride = 2 * S",
            "after the setting's value",
        ),
        (
            "self.conv: Conv2d[C -> 8, 3] with padding = (1, 1)",
            "a dim's name or a number",
        ),
        (
            "self.conv: Conv2d[C -> 8, 3] with stride = _",
            "a dim's name or a number",
        ),
        (
            "self.conv: Conv2d[C -> 8, 3] with stride = -1",
            "a whole number of 0 or more",
        ),
        (
            "self.conv: Conv2d[C -> 8, 3] with stride = Self",
            "a dim's name or a number",
        ),
        (
            "self.conv: Conv2d[C -> 8, 3] with stride = crate",
            "a dim's name or a number",
        ),
    ];
    for (args, message) in cases {
        let found = errors(&format!("{args}, logits: f32[N, C]"));
        assert!(
            found.iter().any(|e| e.contains(message)),
            "{args}: {found:?}"
        );
    }
    // Through an optional step: one error, which says what to write (the settings after it
    // are not each an unknown option).
    let optional = errors(
        "self.conv_shortcut?: Conv2d[C -> 8, 1] with stride = 1, padding = 0, dilation = 1, \
         logits: f32[N, C]",
    );
    assert_eq!(optional.len(), 1, "{optional:?}");
    assert!(
        optional[0].contains("not read through an optional step"),
        "{optional:?}"
    );
    // A number parameter given a clause: what to write instead.
    let number = errors("x: f32[N, 4], n: usize");
    assert!(
        number
            .iter()
            .any(|e| e.contains("a number parameter needs no clause")),
        "{number:?}"
    );
    // Without `with`, `padding = 1` is no setting of a convolution (an unknown option).
    let alone = errors("self.conv: Conv2d[C -> 8, 3], padding = 1");
    assert!(!alone.is_empty(), "{alone:?}");
    // In a struct contract the settings stay the convolution's, not a field's.
    let item = "struct Block { conv: Conv2d, padding: usize }";
    let expanded = expand::contract(
        tokens("conv: Conv2d[C -> 8, 3] with stride = 2, padding = P"),
        tokens(item),
    )
    .to_string();
    assert!(!expanded.contains("compile_error"), "{expanded}");
}

/// A `Vec` of the crate's structs (`[Block; L]`) is no tensor sequence: the error says what
/// to write instead, not that a dtype is missing its shape.
#[test]
fn a_sequence_of_structs_is_an_error_that_names_the_element_form() {
    let found = errors("self.layers: [Block; L], logits: f32[N, C]");
    assert!(
        found
            .iter()
            .any(|e| e.contains("a sequence of `Block`s is not checked as a whole")),
        "{found:?}"
    );
    let valid = errors("self.layers[..].proj: Linear[C -> C], logits: f32[N, C]");
    assert!(valid.is_empty(), "{valid:?}");
}
