//! cargo's side of `check --message-format json`: `cargo metadata`, for the package and
//! target each finding's file belongs to, and `cargo check --message-format=json`, whose lines
//! are forwarded as they come, with rustc's errors kept so that a finding the `#[contract]`
//! macro already reported is not reported twice.

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;
use serde_json::Value;

use crate::message::Owner;
use crate::report::Located;
use crate::source::Source;

/// The packages of a workspace, as `cargo metadata --format-version 1 --no-deps` lists them.
#[derive(Debug, Deserialize)]
pub struct Metadata {
    /// The workspace's root directory: cargo's file names are relative to it.
    pub workspace_root: PathBuf,
    /// Its packages.
    packages: Vec<Package>,
}

/// A package of the workspace.
#[derive(Debug, Deserialize)]
struct Package {
    /// Its id.
    id: String,
    /// Its `Cargo.toml`.
    manifest_path: PathBuf,
    /// Its targets, kept as cargo writes them: a message carries one unchanged.
    targets: Vec<Value>,
}

impl Metadata {
    /// Runs `cargo metadata` in `dir`; `None` when it fails (no package there, no cargo): the
    /// messages then name no package.
    pub fn read(cargo: &OsStr, dir: &Path) -> Option<Metadata> {
        let output = Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        if !output.status.success() {
            return None;
        }
        serde_json::from_slice(&output.stdout).ok()
    }

    /// The package and target whose crate has its root at `root` (the crate the analysis
    /// read `file` in); else the package whose directory holds `file`, with its library or
    /// its first target; else the first package.
    pub fn owner(&self, root: Option<&Path>, file: &Path) -> Option<Owner> {
        let owner = |package: &Package, target: &Value| Owner {
            package_id: package.id.clone(),
            manifest_path: package.manifest_path.display().to_string(),
            target: target.clone(),
        };
        if let Some(root) = root.map(canonical) {
            for package in &self.packages {
                let target = package.targets.iter().find(|target| {
                    target
                        .get("src_path")
                        .and_then(Value::as_str)
                        .is_some_and(|src| canonical(Path::new(src)) == root)
                });
                if let Some(target) = target {
                    return Some(owner(package, target));
                }
            }
        }
        let file = canonical(file);
        let holds = |package: &&Package| {
            package
                .manifest_path
                .parent()
                .is_some_and(|dir| file.starts_with(canonical(dir)))
        };
        let package = self
            .packages
            .iter()
            .filter(holds)
            .max_by_key(|package| package.manifest_path.components().count())
            .or(self.packages.first())?;
        let is_lib = |target: &&Value| {
            target
                .get("kind")
                .and_then(Value::as_array)
                .is_some_and(|kinds| kinds.iter().any(|kind| kind == "lib"))
        };
        let target = package
            .targets
            .iter()
            .find(is_lib)
            .or(package.targets.first())?;
        Some(owner(package, target))
    }
}

/// What `cargo check` said.
#[derive(Debug, Default)]
pub struct Checked {
    /// Whether it succeeded (its `build-finished` line, or its exit status without one).
    pub success: bool,
    /// Its exit status, where it ran and exited.
    pub code: Option<i32>,
    /// The errors rustc reported.
    pub errors: Vec<Reported>,
}

/// An error rustc reported: the first line of its message, at its primary span.
#[derive(Debug, PartialEq, Eq)]
pub struct Reported {
    /// The file, absolute (canonical where it can be).
    file: PathBuf,
    /// The bytes of the primary span.
    bytes: (usize, usize),
    /// Its first line and column, 1-based.
    start: (usize, usize),
    /// The message's first line (the macro puts its note and help on the next lines).
    message: String,
}

impl Reported {
    /// The errors of one line of cargo's output: none unless it is a `compiler-message` of
    /// level `error`; one per primary span. `root` is the workspace's root, which cargo's file
    /// names are relative to.
    fn of_line(line: &Value, root: &Path) -> Vec<Reported> {
        let message = &line["message"];
        if line["reason"] != "compiler-message" || message["level"] != "error" {
            return Vec::new();
        }
        let Some(text) = message["message"].as_str() else {
            return Vec::new();
        };
        let first_line = text.lines().next().unwrap_or_default();
        let spans = message["spans"].as_array().map(Vec::as_slice);
        let number = |span: &Value, key: &str| {
            span[key]
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0)
        };
        spans
            .unwrap_or_default()
            .iter()
            .filter(|span| span["is_primary"] == true)
            .filter_map(|span| {
                Some(Reported {
                    file: canonical(&root.join(span["file_name"].as_str()?)),
                    bytes: (number(span, "byte_start"), number(span, "byte_end")),
                    start: (number(span, "line_start"), number(span, "column_start")),
                    message: first_line.to_string(),
                })
            })
            .collect()
    }

    /// Whether this error is `finding` (in `source`), as the macro reports it: the same file,
    /// the same bytes or the same first line and column, the same message. The code the
    /// message quotes does not count past its first quote (the op's name): the macro quotes
    /// it from its tokens (`(a*b)?` for `(a * b)?`, no comments), the CLI from the source.
    pub fn is(&self, finding: &Located, source: &Source) -> bool {
        let words = |text: &str| {
            let unspaced: String = text.split_whitespace().collect();
            unspaced
                .split('`')
                .enumerate()
                .filter(|(i, _)| i % 2 == 0 || *i == 1)
                .map(|(_, part)| part.to_string())
                .collect::<Vec<_>>()
        };
        let bytes = (finding.place.start, finding.place.end);
        self.file == canonical(&source.path)
            && (self.bytes == bytes || self.start == source.line_column(finding.place.start))
            && words(&self.message) == words(&finding.message)
    }
}

/// Runs `cargo check --message-format=json` with `args` in `dir`, writing each line of its
/// standard output to `out` as it comes, except its `build-finished` line (the caller writes
/// its own last). Its standard error passes through. `root` is the workspace's root, which
/// cargo's file names are relative to. `Err` when cargo cannot be started.
pub fn check(
    cargo: &OsStr,
    dir: &Path,
    args: &[OsString],
    root: &Path,
    out: &mut dyn Write,
) -> Result<Checked, String> {
    let mut child = Command::new(cargo)
        .args(["check", "--message-format=json"])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot run `{} check`: {error}", Path::new(cargo).display()))?;
    let mut checked = Checked::default();
    let mut finished = None;
    // A closed standard output stops the forwarding, not the reading: cargo must not block.
    let mut forwarding = true;
    if let Some(stdout) = child.stdout.take() {
        let mut lines = BufReader::new(stdout);
        let mut line = Vec::new();
        while lines
            .read_until(b'\n', &mut line)
            .is_ok_and(|read| read > 0)
        {
            let parsed: Option<Value> = serde_json::from_slice(&line).ok();
            match parsed {
                Some(value) if value["reason"] == "build-finished" => {
                    finished = value["success"].as_bool();
                }
                parsed => {
                    if let Some(value) = &parsed {
                        checked.errors.extend(Reported::of_line(value, root));
                    }
                    if !line.ends_with(b"\n") {
                        line.push(b'\n');
                    }
                    forwarding =
                        forwarding && out.write_all(&line).and_then(|_| out.flush()).is_ok();
                }
            }
            line.clear();
        }
    }
    let status = child
        .wait()
        .map_err(|error| format!("`cargo check` did not finish: {error}"))?;
    checked.code = status.code();
    checked.success = status.success() && finished.unwrap_or(true);
    Ok(checked)
}

/// `path`, canonical where it exists.
fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_rustcs_errors_are_kept_at_their_primary_span_and_first_line() {
        let line: Value = serde_json::from_str(
            r#"{"reason":"compiler-message","message":{"level":"error",
            "message":"`f` takes `x: f32[B]`, but `y` is `f32[B, 1]` here\n= note: rank 2 given",
            "spans":[
              {"file_name":"src/lib.rs","byte_start":5,"byte_end":6,"line_start":2,"column_start":3,"is_primary":true},
              {"file_name":"src/lib.rs","byte_start":1,"byte_end":2,"line_start":1,"column_start":2,"is_primary":false}]}}"#,
        )
        .expect("valid JSON");
        let root = Path::new("/nowhere");
        assert_eq!(
            Reported::of_line(&line, root),
            [Reported {
                file: root.join("src/lib.rs"),
                bytes: (5, 6),
                start: (2, 3),
                message: "`f` takes `x: f32[B]`, but `y` is `f32[B, 1]` here".to_string(),
            }]
        );
        let mut warning = line.clone();
        warning["message"]["level"] = "warning".into();
        assert_eq!(Reported::of_line(&warning, root), []);
        let artifact: Value = serde_json::from_str(r#"{"reason":"compiler-artifact"}"#).unwrap();
        assert_eq!(Reported::of_line(&artifact, root), []);
    }

    #[test]
    fn the_macros_error_is_the_finding_whatever_comments_the_source_quotes() {
        let text = "fn f() {\n    x /* keep */ .sum_keepdim(1)\n}\n".to_string();
        let source = Source::new(Path::new("/w/src/lib.rs"), text, Some(Path::new("/w")));
        let start = source.text.find('x').unwrap();
        let end = source.text.find(")\n}").unwrap() + 1;
        let finding = |message: &str| Located {
            place: crate::source::Place {
                file: 0,
                start,
                end,
            },
            message: message.to_string(),
            note: String::new(),
            help: None,
            replacement: None,
            origin: None,
        };
        let reported = Reported {
            file: Path::new("/w/src/lib.rs").to_path_buf(),
            bytes: (start, end),
            start: source.line_column(start),
            message: "`total` returns `return: f32[B]`, but `x.sum_keepdim(1)` is `f32[B, 1]` here"
                .to_string(),
        };
        let quoted = "`total` returns `return: f32[B]`, but `x /* keep */ .sum_keepdim(1)` is `f32[B, 1]` here";
        assert!(reported.is(&finding(quoted), &source));
        // Another op's message at the same place is another finding.
        let other = "`other` returns `return: f32[B]`, but `x` is `f32[B, 1]` here";
        assert!(!reported.is(&finding(other), &source));
    }
}
