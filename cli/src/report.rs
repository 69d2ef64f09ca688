//! The findings as rustc-style diagnostics with source snippets (codespan-reporting, with
//! rustc's ASCII characters).

use std::io::IsTerminal;

use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::termcolor::{ColorChoice, StandardStream};
use codespan_reporting::term::{self, Chars, Config};

use crate::source::{FileId, Sources};
use crate::walk::Finding;

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
    pub fn error(&mut self, finding: &Finding) {
        let mut labels = vec![Label::primary(
            self.id(finding.place.file),
            finding.place.range(),
        )];
        if let Some((place, text)) = &finding.origin {
            labels.push(Label::secondary(self.id(place.file), place.range()).with_message(text));
        }
        let mut notes = vec![format!("note: {}", finding.note)];
        notes.extend(finding.help.iter().map(|help| format!("help: {help}")));
        let diagnostic = Diagnostic::error()
            .with_message(&finding.message)
            .with_labels(labels)
            .with_notes(notes);
        self.emit(&diagnostic);
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
