//! `cargo contracts check --message-format json` on scratch crates that cargo really checks
//! (depending on candle and this project's runtime by path): cargo's lines and the
//! findings in one stream of cargo-shaped JSON, as rust-analyzer's `check.overrideCommand`
//! reads it. The scratch crates share one target directory, so candle is checked once.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// The project's root (the runtime is a path dependency of the scratch crates).
fn project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A package `name` in a fresh directory outside any workspace, holding `file` (`src/lib.rs`
/// or `src/main.rs`) with `source`; the project's `Cargo.lock` pins the same dependency
/// versions as the project's, so that nothing new is resolved.
fn scratch_package(name: &str, file: &str, source: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cc-json-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let runtime = project().join("runtime").canonicalize().unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
             [dependencies]\ncandle-core = \"0.11.1\"\ncandle-nn = \"0.11.1\"\n\
             candle-contracts = {{ path = {:?} }}\n\n[workspace]\n",
            runtime.display().to_string()
        ),
    )
    .unwrap();
    std::fs::copy(project().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    std::fs::write(dir.join(file), source).unwrap();
    dir
}

/// Runs `check --message-format=json` in `dir`: (exit code, each line of standard output
/// parsed, standard error). Every line must be JSON.
fn check_json(dir: &Path, extra: &[&str]) -> (i32, Vec<Value>, String) {
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("json-scratch-target");
    let output = Command::new(env!("CARGO_BIN_EXE_cargo-contracts"))
        .args(["contracts", "check", "--message-format=json"])
        .args(extra)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir)
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let lines = stdout
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("not JSON ({error}): {line}\n{stderr}"))
        })
        .collect();
    (output.status.code().unwrap_or(-1), lines, stderr)
}

/// The diagnostics of the `compiler-message` lines whose message starts with `start`.
fn messages<'a>(lines: &'a [Value], start: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|line| line["reason"] == "compiler-message")
        .filter(|line| {
            line["message"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with(start))
        })
        .collect()
}

/// The one `build-finished` line, which must be the last.
fn assert_finished(lines: &[Value], success: bool, stderr: &str) {
    let finished: Vec<&Value> = lines
        .iter()
        .filter(|line| line["reason"] == "build-finished")
        .collect();
    assert_eq!(finished.len(), 1, "{stderr}");
    assert_eq!(
        lines.last(),
        Some(&json!({"reason": "build-finished", "success": success})),
        "{stderr}"
    );
}

/// Glue code that passes a `[512, 1]` column to a contracted `target: u32[B]` (the macro sees
/// only the contracted function; the CLI sees the call), and a plain type error for rustc.
const GLUE: &str = "use candle_contracts::contract;
use candle_core::{DType, Device, Result, Tensor};

#[contract(logits: f32[B, C], target: u32[B])]
fn loss(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    candle_nn::loss::cross_entropy(logits, target)
}

fn main() -> Result<()> {
    let logits = Tensor::zeros((512, 10), DType::F32, &Device::Cpu)?;
    let target = Tensor::zeros((512, 1), DType::U32, &Device::Cpu)?;
    let value = loss(&logits, &target)?;
    let count: u32 = \"a\";
    println!(\"{value} {count}\");
    Ok(())
}
";

#[test]
fn a_mismatch_in_glue_code_and_a_type_error_arrive_as_cargo_messages() {
    let dir = scratch_package("glue", "src/main.rs", GLUE);
    let (code, lines, stderr) = check_json(&dir, &["--", "--bins"]);
    let found = messages(&lines, "`loss` takes `target: u32[B]`");
    assert_eq!(found.len(), 1, "{lines:#?}\n{stderr}");
    let line = found[0];
    let message = &line["message"];
    assert_eq!(message["$message_type"], "diagnostic");
    assert_eq!(
        message["message"],
        "`loss` takes `target: u32[B]`, but `target` is `u32[512, 1]` here"
    );
    assert_eq!(message["level"], "error");
    assert_eq!(message["code"], Value::Null);
    let place = &message["spans"][0];
    assert_eq!(place["file_name"], "src/main.rs");
    assert_eq!(
        (&place["line_start"], &place["column_start"]),
        (&json!(12), &json!(32))
    );
    assert_eq!(
        (&place["line_end"], &place["column_end"]),
        (&json!(12), &json!(38))
    );
    assert_eq!(place["is_primary"], true);
    assert_eq!(
        place["text"],
        json!([{"text": "    let value = loss(&logits, &target)?;", "highlight_start": 32, "highlight_end": 38}])
    );
    let start = GLUE.find("&target)?").unwrap() + 1;
    assert_eq!(
        (&place["byte_start"], &place["byte_end"]),
        (&json!(start), &json!(start + 6))
    );
    // The origin: where `target` is bound, labelled.
    let origin = &message["spans"][1];
    assert_eq!(origin["is_primary"], false);
    assert_eq!(origin["line_start"], 11);
    assert_eq!(origin["label"], "`target` is bound here");
    let children = message["children"].as_array().unwrap();
    assert_eq!(children[0]["level"], "note");
    assert_eq!(children[0]["message"], "rank 2 given, rank 1 expected");
    let help = &children[1];
    assert_eq!(help["level"], "help");
    assert_eq!(
        help["message"],
        "squeeze the last dim: `&target.squeeze(1)?`"
    );
    // On `target` of `&target`: applied, it reads as the help says.
    assert_eq!(
        help["spans"][0]["suggested_replacement"],
        "target.squeeze(1)?"
    );
    assert_eq!(
        help["spans"][0]["suggestion_applicability"],
        "MachineApplicable"
    );
    assert_eq!(help["spans"][0]["line_start"], 12);
    let rendered = message["rendered"].as_str().unwrap();
    assert!(
        rendered.starts_with("error: `loss` takes `target: u32[B]`"),
        "{rendered}"
    );
    assert!(rendered.contains("--> src/main.rs:12:32"), "{rendered}");
    // rustc's error, forwarded as cargo printed it, names the same package and target.
    let rustc = messages(&lines, "mismatched types");
    assert_eq!(rustc.len(), 1, "{lines:#?}");
    assert_eq!(rustc[0]["message"]["spans"][0]["file_name"], "src/main.rs");
    assert_eq!(rustc[0]["message"]["spans"][0]["line_start"], 13);
    assert_eq!(rustc[0]["message"]["spans"][0]["column_start"], 22);
    assert_eq!(rustc[0]["message"]["spans"][0]["is_primary"], true);
    for key in ["package_id", "manifest_path", "target"] {
        assert_eq!(line[key], rustc[0][key], "{key}");
    }
    assert_eq!(line["target"]["kind"], json!(["bin"]));
    assert_finished(&lines, false, &stderr);
    assert_eq!(code, 101, "{stderr}");
}

/// A return clause the body breaks: the `#[contract]` macro reports it when cargo checks the
/// crate, and so does the CLI.
const REPORTED_BY_THE_MACRO: &str = "use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[B, D], return: f32[B])]
pub fn total(x: &Tensor) -> Result<Tensor> {
    x.sum_keepdim(1)
}
";

#[test]
fn a_mismatch_the_macro_reports_arrives_once() {
    let dir = scratch_package("reported", "src/lib.rs", REPORTED_BY_THE_MACRO);
    let wrong = "`total` returns `return: f32[B]`, but `x.sum_keepdim(1)` is `f32[B, 1]` here";
    // The CLI finds it too: without cargo's line for it, it would be there twice.
    let human = Command::new(env!("CARGO_BIN_EXE_cargo-contracts"))
        .arg("check")
        .current_dir(&dir)
        .output()
        .unwrap();
    let human_stderr = String::from_utf8_lossy(&human.stderr);
    assert!(human_stderr.contains(wrong), "{human_stderr}");
    let (code, lines, stderr) = check_json(&dir, &[]);
    let found = messages(&lines, wrong);
    assert_eq!(found.len(), 1, "{lines:#?}\n{stderr}");
    // The one left is rustc's, with the macro's note in the message.
    let message = found[0]["message"]["message"].as_str().unwrap();
    assert!(message.contains("\n= note: rank 2 given"), "{message}");
    assert_eq!(found[0]["message"]["spans"][0]["line_start"], 6);
    assert_finished(&lines, false, &stderr);
    assert_eq!(code, 101, "{stderr}");
}

#[test]
fn a_clean_crate_finishes_with_success() {
    let dir = scratch_package(
        "clean",
        "src/lib.rs",
        "use candle_contracts::contract;
use candle_core::{Result, Tensor};

#[contract(x: f32[B, D], return: f32[B])]
pub fn total(x: &Tensor) -> Result<Tensor> {
    x.sum(1)
}
",
    );
    let (code, lines, stderr) = check_json(&dir, &["--", "--lib"]);
    let errors: Vec<&Value> = lines
        .iter()
        .filter(|line| line["reason"] == "compiler-message")
        .filter(|line| line["message"]["level"] == "error")
        .collect();
    assert_eq!(errors, Vec::<&Value>::new(), "{stderr}");
    assert_finished(&lines, true, &stderr);
    assert_eq!(code, 0, "{stderr}");
}

/// Without a cargo to run, the findings still come, in their shape, and the check fails.
#[test]
fn without_cargo_the_findings_still_come_and_the_check_fails() {
    let dir = project().join("cli/tests/fixtures/issue");
    let output = Command::new(env!("CARGO_BIN_EXE_cargo-contracts"))
        .args(["check", "--message-format", "json"])
        .current_dir(&dir)
        .env("CARGO", dir.join("no-such-cargo"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot run"), "{stderr}");
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let found = messages(&lines, "`");
    assert_eq!(found.len(), 3, "{lines:#?}");
    assert_eq!(found[0]["message"]["spans"][0]["file_name"], "src/lib.rs");
    assert!(found[0]["target"]["src_path"].as_str().is_some());
    assert_finished(&lines, false, &stderr);
    assert_eq!(output.status.code(), Some(101));
}

#[test]
fn message_formats_other_than_human_and_json_and_cargo_arguments_without_json_are_usage_errors() {
    let dir = project().join("cli/tests/fixtures/issue");
    for args in [
        &["check", "--message-format=xml"][..],
        &["check", "--", "--workspace"],
        &["check", "--message-format", "human", "--", "--lib"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_cargo-contracts"))
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    let human = Command::new(env!("CARGO_BIN_EXE_cargo-contracts"))
        .args(["check", "--message-format=human"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(human.status.code(), Some(1));
}
