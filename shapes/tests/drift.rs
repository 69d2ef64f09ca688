//! The rules of `candle_contracts::nn`'s ops are their contracts: each table entry must equal
//! the op's `check!` in `runtime/src/nn/` (value constraints aside), and every op the
//! runtime names must have an entry.

use candle_contracts_shapes::contract::Contract;
use candle_contracts_shapes::rules::contract_ops;

/// The guarded ops' sources, `runtime/src/nn/`, one after another.
const NN: &str = concat!(
    include_str!("../../runtime/src/nn/mod.rs"),
    include_str!("../../runtime/src/nn/loss.rs"),
    include_str!("../../runtime/src/nn/embedding.rs"),
    include_str!("../../runtime/src/nn/index.rs"),
    include_str!("../../runtime/src/nn/encoding.rs"),
);

/// The function whose body holds an op's checks (`embedding` delegates to `embed`).
fn source_fn(op_name: &str) -> &str {
    match op_name {
        "embedding" => "embed",
        name => name,
    }
}

/// The body of `fn name` in `runtime/src/nn/`: from its signature to the next top-level item.
fn body(name: &str) -> &'static str {
    let start = [format!("fn {name}("), format!("fn {name}<")]
        .iter()
        .find_map(|signature| NN.find(signature.as_str()))
        .unwrap_or_else(|| panic!("no `fn {name}` in runtime/src/nn/"));
    let rest = &NN[start..];
    let end = rest.find("\n}\n").map_or(rest.len(), |end| end + 2);
    &rest[..end]
}

/// The texts inside each `check!(...)` of `code`, strings and nesting respected.
fn checks(code: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("check!(") {
        let open = at + "check!(".len();
        let bytes = rest.as_bytes();
        let (mut depth, mut i, mut in_string) = (1usize, open, false);
        while i < bytes.len() && depth > 0 {
            match (bytes[i], in_string) {
                (b'\\', true) => i += 1,
                (b'"', _) => in_string = !in_string,
                (b'(', false) => depth += 1,
                (b')', false) => depth -= 1,
                _ => {}
            }
            i += 1;
        }
        found.push(&rest[open..i - 1]);
        rest = &rest[i..];
    }
    found
}

#[test]
fn each_guarded_op_rule_is_its_check() {
    let guarded: Vec<_> = contract_ops()
        .iter()
        .filter(|op| op.path.starts_with("candle_contracts::nn::"))
        .collect();
    assert_eq!(guarded.len(), 12);
    for op in guarded {
        let name = op.path.rsplit("::").next().unwrap();
        let texts = checks(body(source_fn(name)));
        let first = texts
            .first()
            .unwrap_or_else(|| panic!("no check! in `{name}`"));
        let in_runtime = Contract::parse(first)
            .unwrap_or_else(|e| panic!("the check! of `{name}` does not parse: {e}"));
        assert_eq!(
            op.contract,
            in_runtime.signature(),
            "`{name}`: the table and runtime/src/nn/ differ"
        );
        assert_eq!(
            op.parsed().signature(),
            op.contract,
            "`{name}`: the table's text is not canonical"
        );
    }
}

#[test]
fn every_op_the_runtime_names_has_a_rule() {
    let named: Vec<&str> = NN
        .match_indices("\"nn::")
        .map(|(at, _)| {
            let text = &NN[at + 1..];
            &text[..text.find('"').unwrap()]
        })
        .collect();
    assert!(named.len() >= 12, "{named:?}");
    for op in named {
        // A method of the `Embedding` layer: found through the receiver's type, not a path.
        if op == "nn::Embedding::forward" {
            continue;
        }
        assert!(
            contract_ops().iter().any(|rule| rule.op == op),
            "`{op}` is guarded in runtime/src/nn/ but has no rule in the shapes table"
        );
    }
}

#[test]
fn a_changed_check_is_caught() {
    // The comparison itself: a contract that drifted does not equal the table's text.
    let drifted =
        Contract::parse("logits: float[N, C] finite, target: u8 | u32 [N] in 0..C").unwrap();
    let rule = contract_ops()
        .iter()
        .find(|op| op.op == "nn::cross_entropy")
        .unwrap();
    assert_ne!(drifted.signature(), rule.contract);
}
