//! The macro and the CLI run one analysis: on every compile-fail case of the trybuild suite
//! (`tests/ui/*.rs` and the bugs planted in model code, `tests/ui-models/*.rs`, each a
//! single-file program), `cargo contracts check` reports exactly the mismatches the macro
//! reported when the case was compiled (its `.stderr` snapshot): the same message, note and
//! help, at the same line and column. Each case is checked as trybuild compiles it, the root
//! of a binary crate of a package with the test package's dependencies (the macro reads the
//! crate it expands in).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// One mismatch: (line, column, message, note and help lines).
type Mismatch = (usize, usize, String, Vec<String>);

/// Whether an error's first line is one of the analysis's (`` `op` takes `..`, but `x` is
/// `..` here `` or `` `f` returns `..`, but ``), not a contract's own error or rustc's.
fn is_analysis_message(message: &str) -> bool {
    (message.contains("` takes `") || message.contains("` returns `"))
        && message.contains(", but `")
        && message.ends_with(" here")
}

/// The location `path:line:column` after `-->`.
fn location(line: &str) -> Option<(usize, usize)> {
    let at = line.trim().strip_prefix("--> ")?;
    let mut parts = at.rsplitn(3, ':');
    let column = parts.next()?.parse().ok()?;
    let line = parts.next()?.parse().ok()?;
    Some((line, column))
}

/// The analysis's errors in rustc's output (the `.stderr` snapshot): the message's notes are
/// its own lines (`= note: ..`), before the location.
fn from_rustc(stderr: &str) -> BTreeSet<Mismatch> {
    let mut found = BTreeSet::new();
    let lines: Vec<&str> = stderr.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let Some(message) = line.strip_prefix("error: ") else {
            continue;
        };
        if !is_analysis_message(message) {
            continue;
        }
        let mut notes = Vec::new();
        for next in &lines[i + 1..] {
            let next = next.trim();
            if let Some((line, column)) = location(next) {
                found.insert((line, column, message.to_string(), notes));
                break;
            }
            notes.push(next.to_string());
        }
    }
    found
}

/// The CLI's errors (codespan's output): notes after the snippet, up to the next error.
fn from_cli(stderr: &str) -> BTreeSet<Mismatch> {
    let mut found = BTreeSet::new();
    let lines: Vec<&str> = stderr.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let Some(message) = line.strip_prefix("error: ") else {
            continue;
        };
        if !is_analysis_message(message) {
            continue;
        }
        let Some((line, column)) = lines.get(i + 1).and_then(|l| location(l)) else {
            panic!("no location under `{message}`");
        };
        let notes = lines[i + 1..]
            .iter()
            .take_while(|l| !l.starts_with("error"))
            .filter_map(|l| l.trim().strip_prefix("= "))
            .map(|l| format!("= {l}"))
            .collect();
        found.insert((line, column, message.to_string(), notes));
    }
    found
}

#[test]
fn the_cli_reports_exactly_the_macros_mismatches_on_every_trybuild_case() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
    let mut cases: Vec<_> = ["ui", "ui-models"]
        .iter()
        .flat_map(|dir| std::fs::read_dir(tests.join(dir)).expect(dir))
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    cases.sort();
    // A package of one binary crate, as trybuild makes: the test package's dependencies.
    let package = std::env::temp_dir().join(format!("cc-agreement-{}", std::process::id()));
    std::fs::create_dir_all(package.join("src")).unwrap();
    let manifest = std::fs::read_to_string(tests.join("Cargo.toml")).unwrap();
    let dependencies = manifest
        .split("\n[")
        .find(|section| section.starts_with("dependencies]"))
        .expect("the test package's dependencies");
    std::fs::write(
        package.join("Cargo.toml"),
        format!("[package]\nname = \"case\"\nversion = \"0.0.0\"\n\n[{dependencies}"),
    )
    .unwrap();
    let (mut compared, mut with_mismatches) = (0, 0);
    for case in &cases {
        let Ok(snapshot) = std::fs::read_to_string(case.with_extension("stderr")) else {
            continue;
        };
        std::fs::copy(case, package.join("src/main.rs")).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_cargo-contracts"))
            .arg("check")
            .arg(&package)
            .output()
            .expect("the binary runs");
        let mut cli = from_cli(&String::from_utf8_lossy(&output.stderr));
        let mut macro_ = from_rustc(&snapshot);
        // The macro writes an expression from its tokens, without the source's spaces
        // (`(lhs*rhs)?` for `(lhs * rhs)?`); the model cases' longer expressions meet it.
        if case.parent().is_some_and(|dir| dir.ends_with("ui-models")) {
            let unspaced = |found: BTreeSet<Mismatch>| -> BTreeSet<Mismatch> {
                found
                    .into_iter()
                    .map(|(line, column, message, notes)| {
                        (line, column, message.replace(' ', ""), notes)
                    })
                    .collect()
            };
            (cli, macro_) = (unspaced(cli), unspaced(macro_));
        }
        assert_eq!(cli, macro_, "{}", case.display());
        compared += 1;
        with_mismatches += usize::from(!macro_.is_empty());
    }
    std::fs::remove_dir_all(&package).unwrap();
    assert!(compared >= 85, "{compared} cases");
    assert!(
        with_mismatches >= 25,
        "{with_mismatches} cases with mismatches"
    );
}
