//! Every contract the project itself writes (examples, end-to-end tests, the book, the
//! runtime's `check!`s) parses: the engine reads the language the macro accepts.

use std::path::Path;

use candle_contracts_shapes::Contract;

/// The texts inside `open(...)` in `code`, strings and nesting respected.
fn attributes<'a>(code: &'a str, open: &str) -> Vec<&'a str> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(open) {
        let start = at + open.len();
        let bytes = rest.as_bytes();
        let (mut depth, mut i, mut in_string) = (1usize, start, false);
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
        found.push(&rest[start..i.saturating_sub(1).max(start)]);
        rest = &rest[i.min(rest.len())..];
    }
    found
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "md") {
            out.push(path);
        }
    }
}

#[test]
fn the_projects_contracts_parse() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["examples/src", "tests/tests", "runtime/src", "book/src"] {
        sources(&root.join(dir), &mut files);
    }
    let (mut parsed, mut failures) = (0, Vec::new());
    // The chapter of compile errors shows contracts the macro rejects.
    files.retain(|file| !file.ends_with("compile-errors.md"));
    for file in &files {
        let code = std::fs::read_to_string(file).unwrap();
        for open in ["#[contract(", "check!("] {
            for text in attributes(&code, open) {
                // Prose that names the macro (`check!(...)`), and macro_rules templates
                // (`$dtype`), are not contracts.
                if !text.contains(':') || text.contains('$') {
                    continue;
                }
                // Layer clauses (`self.proj: Linear[E -> C]`) are the macro's grammar alone:
                // this text reader serves the rule tables.
                let layer_clause = [
                    "Linear[",
                    "Embedding[",
                    "LayerNorm[",
                    "RmsNorm[",
                    "Conv1d[",
                    "Conv2d[",
                ]
                .iter()
                .any(|layer| text.contains(layer));
                if layer_clause {
                    continue;
                }
                match Contract::parse(text) {
                    Ok(contract) => parsed += contract.clauses.len(),
                    Err(e) => failures.push(format!("{}: `{text}`: {e}", file.display())),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(parsed > 200, "only {parsed} clauses found");
}
