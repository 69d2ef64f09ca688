//! Findings as cargo's JSON messages (`cargo check --message-format=json`): a
//! `compiler-message` line holds a diagnostic in the shape rustc gives its own, so that a tool
//! reading cargo's output (rust-analyzer's `check.overrideCommand`) shows them as it shows
//! rustc's.

use std::ops::Range;
use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};

use crate::report::Located;
use crate::source::{Place, Source, Sources};

/// The package and the target (crate) a message is about, as cargo names them.
#[derive(Clone, Debug)]
pub struct Owner {
    /// cargo's package id (`path+file:///work/app#app@0.1.0`).
    pub package_id: String,
    /// The package's `Cargo.toml`.
    pub manifest_path: String,
    /// The target as `cargo metadata` lists it (`kind`, `crate_types`, `name`, `src_path`, ..).
    pub target: Value,
}

impl Owner {
    /// An owner for a file no package of `cargo metadata` holds (or with no metadata at
    /// all): an empty id and a library target named after nothing, rooted at the file.
    pub fn unknown(file: &Path) -> Owner {
        Owner {
            package_id: String::new(),
            manifest_path: String::new(),
            target: json!({
                "kind": ["lib"],
                "crate_types": ["lib"],
                "name": "",
                "src_path": file.display().to_string(),
                "edition": "2021",
                "doc": false,
                "doctest": false,
                "test": false,
            }),
        }
    }
}

/// A line of cargo's output about a crate: `{"reason":"compiler-message", ..}`.
#[derive(Debug, Serialize)]
pub struct CompilerMessage<'a> {
    /// Always `compiler-message`.
    reason: &'static str,
    /// The package's id.
    package_id: &'a str,
    /// The package's `Cargo.toml`.
    manifest_path: &'a str,
    /// The target.
    target: &'a Value,
    /// The diagnostic.
    message: Diagnostic,
}

impl<'a> CompilerMessage<'a> {
    /// `message`, about a crate of `owner`.
    pub fn new(owner: &'a Owner, message: Diagnostic) -> CompilerMessage<'a> {
        CompilerMessage {
            reason: "compiler-message",
            package_id: &owner.package_id,
            manifest_path: &owner.manifest_path,
            target: &owner.target,
            message,
        }
    }
}

/// The last line of cargo's output: `{"reason":"build-finished","success":..}`.
#[derive(Debug, Serialize)]
pub struct BuildFinished {
    /// Always `build-finished`.
    reason: &'static str,
    /// Whether the build, and here the check, found nothing wrong.
    success: bool,
}

impl BuildFinished {
    /// The line for a run that succeeded or not.
    pub fn new(success: bool) -> BuildFinished {
        BuildFinished {
            reason: "build-finished",
            success,
        }
    }
}

/// A diagnostic, as rustc writes it in JSON (its children leave out `$message_type`).
#[derive(Debug, Serialize)]
pub struct Diagnostic {
    /// `diagnostic` on a top-level diagnostic; absent on a child, as in rustc's output.
    #[serde(rename = "$message_type", skip_serializing_if = "Option::is_none")]
    message_type: Option<&'static str>,
    /// The message.
    message: String,
    /// rustc's error code (`{"code":"E0308",..}`): the analysis has none, so `null`.
    code: (),
    /// `error`, `warning`, `note` or `help`.
    level: &'static str,
    /// Where: the primary span first.
    spans: Vec<Span>,
    /// The note and the help.
    children: Vec<Diagnostic>,
    /// The text as printed; `null` on a child.
    rendered: Option<String>,
}

impl Diagnostic {
    /// A child diagnostic (a note, a help) at `spans`.
    fn child(level: &'static str, message: &str, spans: Vec<Span>) -> Diagnostic {
        Diagnostic {
            message_type: None,
            message: message.to_string(),
            code: (),
            level,
            spans,
            children: Vec::new(),
            rendered: None,
        }
    }

    /// A finding as an error: its place as the primary span, the origin as a labelled
    /// secondary one, a note child and a help child, the help carrying the fix as a
    /// machine-applicable suggestion on the place. `rendered` is the text `check` prints.
    pub fn finding(finding: &Located, sources: &Sources, rendered: String) -> Diagnostic {
        let span_at = |place: &Place, primary: bool, label: Option<String>| {
            span(sources.get(place.file), place.range(), primary, label)
        };
        let mut spans = vec![span_at(&finding.place, true, None)];
        if let Some((place, text)) = &finding.origin {
            spans.push(span_at(place, false, Some(text.clone())));
        }
        let mut children = vec![Diagnostic::child("note", &finding.note, Vec::new())];
        if let Some(help) = &finding.help {
            let fix = finding.replacement.iter().map(|replacement| Span {
                suggested_replacement: Some(replacement.clone()),
                suggestion_applicability: Some("MachineApplicable"),
                ..span_at(&finding.place, true, None)
            });
            children.push(Diagnostic::child("help", help, fix.collect()));
        }
        Diagnostic {
            message_type: Some("diagnostic"),
            message: finding.message.clone(),
            code: (),
            level: "error",
            spans,
            children,
            rendered: Some(rendered),
        }
    }

    /// A problem that is no finding (a file that cannot be read or parsed, a contract not
    /// read): a message without spans, at `level` (`error` or `warning`).
    pub fn problem(level: &'static str, message: &str, rendered: String) -> Diagnostic {
        Diagnostic {
            message_type: Some("diagnostic"),
            rendered: Some(rendered),
            ..Diagnostic::child(level, message, Vec::new())
        }
    }
}

/// A span of a diagnostic: a byte range of one file, with its lines and columns.
#[derive(Debug, Serialize)]
pub struct Span {
    /// The file, as cargo names it (relative to the workspace's root where it is below it).
    file_name: String,
    /// The first byte.
    byte_start: usize,
    /// One past the last byte.
    byte_end: usize,
    /// The first line, 1-based.
    line_start: usize,
    /// The last line, 1-based.
    line_end: usize,
    /// The first character's column on the first line, 1-based.
    column_start: usize,
    /// The column after the last character, on the last line, 1-based.
    column_end: usize,
    /// Whether this is where the diagnostic points.
    is_primary: bool,
    /// Each line the span covers.
    text: Vec<SpanLine>,
    /// What the span is labelled with.
    label: Option<String>,
    /// The code that replaces the span's text to apply a suggestion.
    suggested_replacement: Option<String>,
    /// `MachineApplicable` where the suggestion may be applied as is.
    suggestion_applicability: Option<&'static str>,
    /// The macro expansion the span comes from: none (`null`), it is the user's code.
    expansion: (),
}

/// One line a span covers, and the columns (1-based, end excluded) it covers of it.
#[derive(Debug, Serialize)]
pub struct SpanLine {
    /// The whole line, without its line break.
    text: String,
    /// The first column covered.
    highlight_start: usize,
    /// The column after the last covered.
    highlight_end: usize,
}

/// The span of `range` in `source`: lines and character columns 1-based, as rustc counts them.
pub fn span(source: &Source, range: Range<usize>, primary: bool, label: Option<String>) -> Span {
    let (line_start, column_start) = source.line_column(range.start);
    let (line_end, column_end) = source.line_column(range.end.max(range.start));
    let text = (line_start..=line_end)
        .map(|line| {
            let text = source.line_text(line);
            SpanLine {
                highlight_start: if line == line_start { column_start } else { 1 },
                highlight_end: if line == line_end {
                    column_end
                } else {
                    text.chars().count() + 1
                },
                text: text.to_string(),
            }
        })
        .collect();
    Span {
        file_name: source.name.clone(),
        // Moved as the lines and columns are, where the range is inside a character or past
        // the text.
        byte_start: source.char_boundary(range.start),
        byte_end: source.char_boundary(range.end.max(range.start)),
        line_start,
        line_end,
        column_start,
        column_end,
        is_primary: primary,
        text,
        label,
        suggested_replacement: None,
        suggestion_applicability: None,
        expansion: (),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file `src/lib.rs` of a workspace at `/w`.
    fn source(text: &str) -> Source {
        Source::new(
            Path::new("/w/src/lib.rs"),
            text.to_string(),
            Some(Path::new("/w")),
        )
    }

    #[test]
    fn a_span_has_one_based_lines_and_character_columns_and_each_lines_text() {
        let source = source("fn f() {\n// é\n    h.matmul(\n        &w)\n}\n");
        let start = source.text.find("h.").unwrap();
        let end = source.text.find(")\n}").unwrap();
        let span = span(&source, start..end, true, Some("here".to_string()));
        let json = serde_json::to_value(&span).unwrap();
        assert_eq!(
            json,
            json!({
                "file_name": "src/lib.rs",
                "byte_start": start,
                "byte_end": end,
                "line_start": 3,
                "line_end": 4,
                "column_start": 5,
                "column_end": 11,
                "is_primary": true,
                "text": [
                    {"text": "    h.matmul(", "highlight_start": 5, "highlight_end": 14},
                    {"text": "        &w)", "highlight_start": 1, "highlight_end": 11},
                ],
                "label": "here",
                "suggested_replacement": null,
                "suggestion_applicability": null,
                "expansion": null,
            })
        );
        // Columns count characters: after `é` comes column 5, at byte 16.
        let after = source.text.find("é").unwrap() + 'é'.len_utf8();
        let span =
            serde_json::to_value(super::span(&source, after..after + 1, false, None)).unwrap();
        assert_eq!(
            (span["line_start"].clone(), span["column_start"].clone()),
            (json!(2), json!(5))
        );
        // A range inside a character, or past the text, is moved onto one: no panic.
        let inside =
            serde_json::to_value(super::span(&source, after - 1..999, false, None)).unwrap();
        assert_eq!(inside["byte_start"], json!(after - 2));
        assert_eq!(inside["byte_end"], json!(source.text.len()));
        assert_eq!(
            (inside["line_end"].clone(), inside["column_end"].clone()),
            (json!(6), json!(1))
        );
    }
}
