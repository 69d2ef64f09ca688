//! The findings as rustc-style diagnostics with source snippets (codespan-reporting, with
//! rustc's ASCII characters).

use std::io::IsTerminal;

use codespan_reporting::diagnostic::{Diagnostic, Label, Severity};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::termcolor::{ColorChoice, NoColor, StandardStream};
use codespan_reporting::term::{self, Chars, Config};

use candle_contracts_analysis::{Finding, FnDef, Origin};

use crate::source::{FileId, Place, Sources};

/// A finding placed in its file, as printed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Located {
    /// The expression that is wrong.
    pub place: Place,
    /// The message.
    pub message: String,
    /// Why.
    pub note: String,
    /// A likely fix.
    pub help: Option<String>,
    /// The code that replaces the place's text to apply the fix.
    pub replacement: Option<String>,
    /// Where the wrong value's type was declared, and what it was declared as.
    pub origin: Option<(Place, String)>,
}

impl Located {
    /// `finding`, found in the body of `f`.
    pub fn new(finding: Finding, f: &FnDef, sources: &Sources) -> Located {
        let source = sources.get(f.file);
        let place = |range: std::ops::Range<usize>| Place {
            file: f.file,
            start: range.start,
            end: range.end,
        };
        let origin = finding.origin.and_then(|(origin, text)| {
            let at = match origin {
                Origin::Binding(site) => place(source.site_range(site)),
                Origin::Clause(subject) => clause_place(f, sources, &subject)?,
            };
            Some((at, text))
        });
        let range = source.site_range(finding.site);
        Located {
            place: place(range),
            message: finding.message,
            note: finding.note,
            help: finding.help,
            replacement: finding.replacement,
            origin,
        }
    }
}

/// Where `subject`'s clause is written in the contract of `f` (spaces in the source do not
/// count: `self . head` is `self.head`).
pub fn clause_place(f: &FnDef, sources: &Sources, subject: &str) -> Option<Place> {
    let source = sources.get(f.file);
    f.attrs.iter().find_map(|attr| {
        if attr.path().segments.last()?.ident != "contract" {
            return None;
        }
        let syn::Meta::List(list) = &attr.meta else {
            return None;
        };
        let range = source.range(list.delimiter.span().join());
        let start = range.start + 1;
        let text = source
            .text
            .get(start..range.end.saturating_sub(1).max(start))?;
        let bytes = text.as_bytes();
        let mut from = 0;
        while let Some(found) = text[from..].find(subject) {
            let at = from + found;
            let before_ok = at == 0 || matches!(bytes[at - 1], b' ' | b'\n' | b'\t' | b',' | b'(');
            let after = text[at + subject.len()..].trim_start();
            if before_ok && after.starts_with(':') && !after.starts_with("::") {
                return Some(Place {
                    file: f.file,
                    start: start + at,
                    end: start + at + subject.len(),
                });
            }
            from = at + subject.len();
        }
        None
    })
}

/// Writes diagnostics to standard error.
pub struct Reporter {
    files: SimpleFiles<String, String>,
    ids: Vec<usize>,
    config: Config,
    out: StandardStream,
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reporter").finish_non_exhaustive()
    }
}

impl Reporter {
    /// A reporter for the files read; colors when standard error is a terminal.
    pub fn new(sources: &Sources) -> Reporter {
        let mut files = SimpleFiles::new();
        let ids = sources
            .iter()
            .map(|(_, source)| files.add(source.name.clone(), source.text.clone()))
            .collect();
        let color = if std::io::stderr().is_terminal() {
            ColorChoice::Auto
        } else {
            ColorChoice::Never
        };
        Reporter {
            files,
            ids,
            config: Config {
                chars: Chars::ascii(),
                ..Config::default()
            },
            out: StandardStream::stderr(color),
        }
    }

    fn id(&self, file: FileId) -> usize {
        self.ids[file]
    }

    /// Prints one finding as an error.
    pub fn error(&mut self, finding: &Located) {
        let diagnostic = self.diagnostic(finding);
        self.emit(&diagnostic);
    }

    /// The text [`Reporter::error`] prints for a finding, without colors (cargo's JSON
    /// messages carry it as `rendered`).
    pub fn rendered(&self, finding: &Located) -> String {
        self.render(&self.diagnostic(finding))
    }

    /// The text of an error or a warning without a snippet, without colors.
    pub fn rendered_plain(&self, severity: Severity, text: &str) -> String {
        self.render(&Diagnostic::new(severity).with_message(text))
    }

    /// Writes `diagnostic` into a string, as it would print.
    fn render(&self, diagnostic: &Diagnostic<usize>) -> String {
        let mut out = NoColor::new(Vec::new());
        // Only a file id of these files could fail, and all come from them.
        let _ = term::emit(&mut out, &self.config, &self.files, diagnostic);
        String::from_utf8_lossy(&out.into_inner()).into_owned()
    }

    /// A finding as codespan's diagnostic: the place, the origin's label, the note and help.
    fn diagnostic(&self, finding: &Located) -> Diagnostic<usize> {
        let mut labels = vec![Label::primary(
            self.id(finding.place.file),
            finding.place.range(),
        )];
        if let Some((place, text)) = &finding.origin {
            labels.push(Label::secondary(self.id(place.file), place.range()).with_message(text));
        }
        let mut notes = vec![format!("note: {}", finding.note)];
        notes.extend(finding.help.iter().map(|help| format!("help: {help}")));
        Diagnostic::error()
            .with_message(&finding.message)
            .with_labels(labels)
            .with_notes(notes)
    }

    fn emit(&mut self, diagnostic: &Diagnostic<usize>) {
        // A closed standard error is no reason to stop checking.
        let _ = term::emit(&mut self.out.lock(), &self.config, &self.files, diagnostic);
    }

    /// Prints an error without a snippet.
    pub fn plain_error(&mut self, text: &str) {
        self.emit(&Diagnostic::error().with_message(text));
    }

    /// Prints a warning without a snippet.
    pub fn warning(&mut self, text: &str) {
        self.emit(&Diagnostic::warning().with_message(text));
    }
}
