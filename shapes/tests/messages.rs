//! The words of certain mismatches: code in backticks, never backticks inside backticks, the
//! argument named as candle names it.

use candle_contracts_shapes::{Arg, Contract, Env, method};

fn env(contract: &str) -> Env {
    Env::for_function("f", &Contract::parse(contract).unwrap())
}

#[test]
fn an_expected_clause_with_code_of_its_own_quotes_only_the_code() {
    let env = env("a: f32[2, 3], b: f32[3, 2]");
    let add = method("add", &env.get("a"), &[Arg::Tensor(env.get("b"))]).unwrap_err();
    assert_eq!(
        add.message("b"),
        "`Tensor::add` takes `rhs: f32[2, 3]` (the shape of `self`), but `b` is `f32[3, 2]` here"
    );
    let sum = method("sum", &env.get("a"), &[Arg::int(2)]).unwrap_err();
    assert_eq!(
        sum.message("2"),
        "`Tensor::sum` takes `dims`: dims of `f32[2, 3]`, but `2` is given here"
    );
    let squeeze = method("squeeze", &env.get("a"), &[Arg::int(2)]).unwrap_err();
    assert_eq!(
        squeeze.message("2"),
        "`Tensor::squeeze` takes `dim`: a dim of `f32[2, 3]`, but `2` is given here"
    );
}

#[test]
fn where_cond_names_the_branch_that_is_wrong() {
    let env = env("m: u8[2, 3], a: f32[2, 3], c: f32[2, 1]");
    let args = [Arg::Tensor(env.get("a")), Arg::Tensor(env.get("c"))];
    let mismatch = method("where_cond", &env.get("m"), &args).unwrap_err();
    assert_eq!(
        mismatch.message("c"),
        "`Tensor::where_cond` takes `on_false: _[2, 3]` (the shape of the mask), but `c` is \
         `f32[2, 1]` here"
    );
}
