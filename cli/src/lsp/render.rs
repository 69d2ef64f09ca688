//! The last analysis in the editor's terms: each certain mismatch as a diagnostic (the same
//! words `check` prints) and its fix as a quick fix, and each tensor a `let` binds as an inlay
//! hint.

use std::collections::{BTreeMap, HashMap};

use lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, Diagnostic, DiagnosticRelatedInformation,
    DiagnosticSeverity, InlayHint, InlayHintKind, InlayHintLabel, InlayHintTooltip, Location,
    Range, TextEdit, Url, WorkspaceEdit,
};

use crate::analyse::Hint;
use crate::lsp::session::Session;
use crate::lsp::text::Lines;
use crate::report::Located;
use crate::source::{FileId, Place};

/// What the diagnostics of this server say they come from.
pub const SOURCE: &str = "candle-contracts";

/// The files' lines, each found once.
struct LineCache<'a> {
    /// Whose analysis's files.
    session: &'a Session,
    /// The lines of each file asked for so far.
    lines: HashMap<FileId, Lines<'a>>,
}

impl<'a> LineCache<'a> {
    /// An empty cache for `session`'s files.
    fn new(session: &'a Session) -> LineCache<'a> {
        LineCache {
            session,
            lines: HashMap::new(),
        }
    }

    /// The editor's range of a place (`None` before the first analysis).
    fn range(&mut self, place: &Place) -> Option<Range> {
        let session = self.session;
        let analysis = session.analysis()?;
        let lines = self.lines.entry(place.file).or_insert_with(|| {
            Lines::new(&analysis.sources.get(place.file).text, session.encoding)
        });
        Some(lines.range(place.range()))
    }
}

/// A finding as a diagnostic: its message with the note and the help under it, the place its
/// type was declared as related information.
fn diagnostic(finding: &Located, cache: &mut LineCache<'_>) -> Option<Diagnostic> {
    let mut message = format!("{}\nnote: {}", finding.message, finding.note);
    if let Some(help) = &finding.help {
        message.push_str(&format!("\nhelp: {help}"));
    }
    let related = match &finding.origin {
        Some((place, text)) => Some(vec![DiagnosticRelatedInformation {
            location: Location::new(cache.session.uri(place.file)?, cache.range(place)?),
            message: text.clone(),
        }]),
        None => None,
    };
    Some(Diagnostic {
        range: cache.range(&finding.place)?,
        severity: Some(DiagnosticSeverity::ERROR),
        source: Some(SOURCE.to_string()),
        message,
        related_information: related,
        ..Diagnostic::default()
    })
}

/// The diagnostics of every file that has a finding, by URI.
pub fn diagnostics(session: &Session) -> BTreeMap<Url, Vec<Diagnostic>> {
    let mut by_uri: BTreeMap<Url, Vec<Diagnostic>> = BTreeMap::new();
    let Some(analysis) = session.analysis() else {
        return by_uri;
    };
    let mut cache = LineCache::new(session);
    for finding in &analysis.findings {
        let (Some(uri), Some(diagnostic)) = (
            session.uri(finding.place.file),
            diagnostic(finding, &mut cache),
        ) else {
            continue;
        };
        by_uri.entry(uri).or_default().push(diagnostic);
    }
    by_uri
}

/// Whether a hint's type says something about a tensor (its dtype, some of its dims): the
/// integers (`= B`), floats, dtypes, host numbers (`Vec<f32>`), empty lists (`Vec`) and `None`s
/// a `let` binds are left to the hover, rust-analyzer already shows their Rust types.
pub fn is_tensor(ty: &str) -> bool {
    let scalar = ty == "?"
        || ty.starts_with("= ")
        || ty == "float"
        || ty == "Vec"
        || ty == "None"
        || ty.starts_with("Vec<")
        || ty.starts_with("DType::")
        || (ty.starts_with('(') && !ty.contains('['))
        || is_type_name(ty);
    !scalar
}

/// Whether a hint names a type that is no tensor: a candle-nn layer (`Conv2d`, or as its
/// clause states it, `Linear[E -> 10]`) or a value of the crate's own type (`Config`).
fn is_type_name(ty: &str) -> bool {
    let name: String = ty
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && name != "Option"
        && (ty.len() == name.len() || ty[name.len()..].starts_with('['))
}

/// The inlay hints of `uri` whose place lies in `range`: `: f32[B, T, E]` after each name a
/// `let` of a contracted function binds to a tensor something is known of.
pub fn inlay_hints(session: &Session, uri: &Url, range: Range) -> Vec<InlayHint> {
    let (Some(analysis), Some(file)) = (session.analysis(), session.file(uri)) else {
        return Vec::new();
    };
    let lines = Lines::new(&analysis.sources.get(file).text, session.encoding);
    let start = lines.offset_or_end(range.start);
    let end = lines.offset_or_end(range.end);
    analysis
        .hints
        .iter()
        .filter(|hint| hint.place.file == file && is_tensor(&hint.ty))
        .filter(|hint| (start..=end).contains(&hint.place.end))
        .map(|hint| inlay_hint(hint, &lines))
        .collect()
}

/// A hint as the editor shows it: its type after the name, the op in its tooltip.
fn inlay_hint(hint: &Hint, lines: &Lines<'_>) -> InlayHint {
    InlayHint {
        position: lines.position(hint.place.end),
        label: InlayHintLabel::String(format!(": {}", hint.ty)),
        kind: Some(InlayHintKind::TYPE),
        text_edits: None,
        tooltip: (!hint.op.is_empty())
            .then(|| InlayHintTooltip::String(format!("`{}` gives `{}`", hint.op, hint.ty))),
        padding_left: Some(false),
        padding_right: Some(false),
        data: None,
    }
}

/// The quick fixes of the findings of `uri` that touch `range`: each replaces the wrong code
/// with the help's code.
pub fn code_actions(session: &Session, uri: &Url, range: Range) -> Vec<CodeActionOrCommand> {
    let (Some(analysis), Some(file)) = (session.analysis(), session.file(uri)) else {
        return Vec::new();
    };
    let lines = Lines::new(&analysis.sources.get(file).text, session.encoding);
    let (start, end) = (
        lines.offset_or_end(range.start),
        lines.offset_or_end(range.end),
    );
    let mut cache = LineCache::new(session);
    let mut actions = Vec::new();
    for finding in &analysis.findings {
        let place = &finding.place;
        let Some(replacement) = &finding.replacement else {
            continue;
        };
        if place.file != file || place.end < start || place.start > end {
            continue;
        }
        let Some(diagnostic) = diagnostic(finding, &mut cache) else {
            continue;
        };
        let edit = TextEdit::new(diagnostic.range, replacement.clone());
        let title = match &finding.help {
            Some(help) => help.clone(),
            None => format!("replace with `{replacement}`"),
        };
        actions.push(CodeActionOrCommand::CodeAction(CodeAction {
            title,
            kind: Some(CodeActionKind::QUICKFIX),
            diagnostics: Some(vec![diagnostic]),
            edit: Some(WorkspaceEdit::new(
                [(uri.clone(), vec![edit])].into_iter().collect(),
            )),
            is_preferred: Some(true),
            ..CodeAction::default()
        }));
    }
    actions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_are_hinted_and_scalars_are_not() {
        for ty in ["f32[B, T, E]", "_[B, _]", "f32[..]", "(f32[B], = T)"] {
            assert!(is_tensor(ty), "{ty}");
        }
        for ty in [
            "?",
            "Conv2d",
            "Linear[{cin} -> 10]",
            "Config",
            "= B",
            "= _",
            "float",
            "DType::F32",
            "(= B, = T)",
            "Vec",
            "Vec<f32>",
        ] {
            assert!(!is_tensor(ty), "{ty}");
        }
    }
}
