//! The grammar's lowering against the engine's own reading of the same text: every contract
//! written in this workspace's sources lowers to the clauses `Contract::parse` reads from its
//! text, so moving the analysis from text to the grammar changed no contract's meaning.

use std::path::Path;

use candle_contracts_analysis::contract::read;
use candle_contracts_shapes::Contract;
use syn::visit::Visit;

/// Every `#[contract(...)]` attribute's tokens in the `.rs` files under `dir`.
fn contracts_under(dir: &Path, found: &mut Vec<(String, proc_macro2::TokenStream)>) {
    struct Attributes<'a>(&'a str, &'a mut Vec<(String, proc_macro2::TokenStream)>);
    impl<'ast> Visit<'ast> for Attributes<'_> {
        fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
            if attr
                .path()
                .segments
                .last()
                .is_some_and(|s| s.ident == "contract")
                && let syn::Meta::List(list) = &attr.meta
            {
                self.1.push((self.0.to_string(), list.tokens.clone()));
            }
        }
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && !path.ends_with("target") {
            contracts_under(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs")
            && let Ok(text) = std::fs::read_to_string(&path)
            && let Ok(file) = syn::parse_file(&text)
        {
            let name = path.display().to_string();
            Attributes(&name, found).visit_file(&file);
        }
    }
}

#[test]
fn every_contract_in_the_workspace_lowers_as_the_engine_reads_its_text() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for dir in ["tests", "examples", "runtime", "cli/tests", "macros/tests"] {
        contracts_under(&root.join(dir), &mut found);
    }
    let mut compared = 0;
    for (file, tokens) in &found {
        // The engine's text reader, as the analysis used it before the grammar.
        let Ok(mut by_text) = Contract::parse(&tokens.to_string()) else {
            continue;
        };
        for clause in &mut by_text.clauses {
            clause.subject.retain(|c| !c.is_whitespace());
            // A raw identifier is the same name: `r#type` is `type`.
            clause.subject = clause.subject.replace("r#", "");
        }
        let Some((by_grammar, _)) = read(tokens) else {
            continue;
        };
        assert_eq!(by_grammar.clauses, by_text.clauses, "in {file}: `{tokens}`");
        compared += 1;
    }
    assert!(compared > 300, "only {compared} contracts compared");
}

#[test]
fn options_and_derived_subjects_are_read_as_the_macro_reads_them() {
    let tokens = quote_tokens("x: f32[N, {cfg.hidden}], {x.sum(1)?}: f32[N], static = false");
    let (contract, off) = read(&tokens).unwrap();
    assert!(off);
    assert_eq!(contract.signature(), "x: f32[N, {cfg.hidden}]");
    assert!(read(&quote_tokens("x: [N]")).is_none());
    assert!(read(&quote_tokens("x: f33[N]")).is_none());
    let (_, off) = read(&quote_tokens("x: f32[N], static = true")).unwrap();
    assert!(!off);
    // Equalities between dims are substituted in the body; every relation is a fact.
    let (contract, _) = read(&quote_tokens(
        "x: f32[B, E], E == H * D, D % 2 == 0, T <= 8",
    ))
    .unwrap();
    let facts: Vec<String> = contract
        .facts
        .iter()
        .map(|(name, dim)| format!("{name} = {dim}"))
        .collect();
    assert_eq!(facts, ["E = D * H"]);
    // Every relation is read, for the engine's facts and for the checks at a call.
    let relations: Vec<String> = contract.relations.iter().map(ToString::to_string).collect();
    assert_eq!(relations, ["E == D * H", "D % 2 == 0", "T <= 8"]);
}

fn quote_tokens(text: &str) -> proc_macro2::TokenStream {
    text.parse().unwrap()
}
