//! The source files read: their text, their display names, and the conversion of syn's spans
//! (line and character column) into byte ranges for the diagnostics.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use candle_contracts_analysis::{Site, SourceText};
use proc_macro2::{LineColumn, Span, TokenStream};

pub use candle_contracts_analysis::FileId;

/// A byte range in one file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Place {
    /// The file.
    pub file: FileId,
    /// The first byte in the file's text.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Place {
    /// The bytes covered.
    pub fn range(&self) -> Range<usize> {
        self.start..self.end
    }
}

/// One source file.
#[derive(Debug)]
pub struct Source {
    /// Where it is on disk.
    pub path: PathBuf,
    /// The name diagnostics print (relative to the current directory where it is below it).
    pub name: String,
    /// Its text.
    pub text: String,
    line_starts: Vec<usize>,
    /// The bytes of a byte-order mark the text starts with (0 or 3): rustc and syn count
    /// line 1's columns after it.
    bom: usize,
}

impl Source {
    /// A file's text, named as diagnostics print it (relative to `base` where it is below it,
    /// the current directory when `base` is `None`).
    pub fn new(path: &Path, text: String, base: Option<&Path>) -> Source {
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let bom = match text.starts_with('\u{feff}') {
            true => '\u{feff}'.len_utf8(),
            false => 0,
        };
        Source {
            path: path.to_path_buf(),
            name: display_name(path, base),
            text,
            line_starts,
            bom,
        }
    }

    /// The line (1-based) and character column (1-based, as rustc's JSON counts them) of a
    /// byte offset; an offset past the text or inside a character is moved back onto one.
    pub fn line_column(&self, offset: usize) -> (usize, usize) {
        let offset = self.char_boundary(offset);
        // `line_starts` starts with 0, so there is always a line at or before the offset.
        let line = self.line_starts.partition_point(|&start| start <= offset);
        let start = match line {
            1 => self.bom.min(offset),
            _ => self.line_starts[line - 1],
        };
        (line, self.text[start..offset].chars().count() + 1)
    }

    /// `offset`, moved back onto the start of a character and into the text.
    pub fn char_boundary(&self, offset: usize) -> usize {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
    }

    /// The text of a line (1-based), without its line break; empty past the end.
    pub fn line_text(&self, line: usize) -> &str {
        let Some(&start) = self.line_starts.get(line.wrapping_sub(1)) else {
            return "";
        };
        let rest = &self.text[start..];
        let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
        line.strip_suffix('\r').unwrap_or(line)
    }

    /// The byte offset of a line (1-based) and character column (0-based), as proc-macro2
    /// reports them; clamped to the text.
    pub fn offset(&self, at: LineColumn) -> usize {
        let Some(&start) = self.line_starts.get(at.line.saturating_sub(1)) else {
            return self.text.len();
        };
        let start = match at.line {
            1 => start + self.bom,
            _ => start,
        };
        let line = &self.text[start..];
        let end = line.find('\n').unwrap_or(line.len());
        start
            + line[..end]
                .char_indices()
                .nth(at.column)
                .map_or(end, |(i, _)| i)
    }

    /// The line (1-based) of a byte offset.
    pub fn line(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&start| start <= offset)
    }

    /// The bytes a finding's site covers.
    pub fn site_range(&self, site: Site) -> Range<usize> {
        let (start, end) = (
            self.offset(site.first.start()),
            self.offset(site.last.end()),
        );
        start..end.max(start)
    }

    /// The bytes a span covers.
    pub fn range(&self, span: Span) -> Range<usize> {
        let (start, end) = (self.offset(span.start()), self.offset(span.end()));
        start..end.max(start)
    }
}

/// Every file read in one run.
#[derive(Debug, Default)]
pub struct Sources {
    files: Vec<Source>,
    /// Texts that replace the files on disk (an editor's unsaved buffers), by canonical path.
    overlay: BTreeMap<PathBuf, String>,
    /// The directory file names are printed relative to; the current one when `None`.
    base: Option<PathBuf>,
}

impl Sources {
    /// Sources that read the text of `overlay`'s paths (canonical, as
    /// [`Path::canonicalize`] gives them) from it instead of from the disk.
    pub fn with_overlay(overlay: BTreeMap<PathBuf, String>) -> Sources {
        Sources {
            overlay,
            ..Sources::default()
        }
    }

    /// Sources whose names are printed relative to `base` (a workspace's root, as cargo
    /// prints its file names) instead of the current directory.
    pub fn named_from(base: &Path) -> Sources {
        Sources {
            base: Some(base.to_path_buf()),
            ..Sources::default()
        }
    }

    /// Reads `path`; `None` with the error when it cannot be read.
    pub fn load(&mut self, path: &Path) -> std::io::Result<FileId> {
        if let Some(id) = self.files.iter().position(|file| file.path == path) {
            return Ok(id);
        }
        let unsaved = match self.overlay.is_empty() {
            true => None,
            false => self.overlay.get(&canonical(path)).cloned(),
        };
        let text = match unsaved {
            Some(text) => text,
            None => std::fs::read_to_string(path)?,
        };
        self.files
            .push(Source::new(path, text, self.base.as_deref()));
        Ok(self.files.len() - 1)
    }

    /// The file of an id.
    pub fn get(&self, id: FileId) -> &Source {
        &self.files[id]
    }

    /// Whether `path` has an unsaved text (a file the editor holds that may not be on disk).
    pub fn has_unsaved(&self, path: &Path) -> bool {
        !self.overlay.is_empty() && self.overlay.contains_key(&canonical(path))
    }

    /// Every file, by id.
    pub fn iter(&self) -> impl Iterator<Item = (FileId, &Source)> {
        self.files.iter().enumerate()
    }
}

impl SourceText for Sources {
    /// The code as written (the site from its first token to its last).
    fn text(&self, file: FileId, tokens: &TokenStream) -> String {
        let source = self.get(file);
        source
            .text
            .get(source.site_range(Site::of(tokens)))
            .unwrap_or_default()
            .to_string()
    }
}

/// A path as diagnostics print it: relative to `base` (the current directory when `None`)
/// where it is below it.
fn display_name(path: &Path, base: Option<&Path>) -> String {
    let base = base
        .map(Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok());
    let relative = base.and_then(|base| path.strip_prefix(base).ok().map(Path::to_path_buf));
    relative
        .unwrap_or_else(|| path.to_path_buf())
        .display()
        .to_string()
}

/// A path as [`Path::canonicalize`] gives it (what the analysis's unsaved texts are keyed
/// by); for a file not on disk, its directory's canonical path and its name.
pub fn canonical(path: &Path) -> PathBuf {
    if let Ok(path) = path.canonicalize() {
        return path;
    }
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => dir
            .canonicalize()
            .map_or_else(|_| path.to_path_buf(), |dir| dir.join(name)),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters_and_lines_start_at_one() {
        let mut sources = Sources::default();
        let path = std::env::temp_dir().join(format!("cc-source-{}.rs", std::process::id()));
        std::fs::write(&path, "// [B, 128] × [64, 10]\nfn f() {}\n").unwrap();
        let id = sources.load(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let source = sources.get(id);
        // `×` is two bytes: the column after it is a character count.
        let after = source.offset(LineColumn {
            line: 1,
            column: 13,
        });
        assert_eq!(&source.text[after..after + 2], " [");
        let fn_start = source.offset(LineColumn { line: 2, column: 0 });
        assert_eq!(&source.text[fn_start..fn_start + 2], "fn");
        // Past the end of a line or of the text: clamped, never a panic.
        assert_eq!(
            source.offset(LineColumn {
                line: 2,
                column: 99
            }),
            source.text.len() - 1
        );
        assert_eq!(
            source.offset(LineColumn { line: 9, column: 0 }),
            source.text.len()
        );
    }

    #[test]
    fn byte_offsets_become_one_based_lines_and_character_columns() {
        let text = "let a = 1;\n// × [B]\r\nx\n".to_string();
        let source = Source::new(Path::new("/w/src/lib.rs"), text, Some(Path::new("/w")));
        assert_eq!(source.name, "src/lib.rs");
        assert_eq!(source.line_column(0), (1, 1));
        assert_eq!(source.line_column(4), (1, 5));
        // The end of a line is the column after its last character.
        assert_eq!(source.line_column(10), (1, 11));
        assert_eq!(source.line_column(11), (2, 1));
        // `×` is two bytes and one column; an offset inside it is moved back onto it.
        let cross = source.text.find('×').unwrap();
        assert_eq!(source.line_column(cross), (2, 4));
        assert_eq!(source.line_column(cross + 1), (2, 4));
        assert_eq!(source.line_column(cross + 2), (2, 5));
        assert_eq!(source.line_text(2), "// × [B]");
        // Past the end: the last line's end, never a panic.
        assert_eq!(source.line_column(999), (4, 1));
        assert_eq!(source.line_text(9), "");
        assert_eq!(source.line_text(0), "");
    }

    #[test]
    fn line_one_counts_its_columns_after_a_byte_order_mark() {
        let text = "\u{feff}fn f() {}\nx\n".to_string();
        let source = Source::new(Path::new("/w/src/lib.rs"), text, Some(Path::new("/w")));
        // syn's column 3 of line 1 is `f`, byte 6 (after the mark's 3 bytes), column 4 as rustc
        // counts it.
        assert_eq!(source.offset(LineColumn { line: 1, column: 3 }), 6);
        assert_eq!(source.line_column(6), (1, 4));
        assert_eq!(source.offset(LineColumn { line: 2, column: 0 }), 13);
        assert_eq!(source.line_column(1), (1, 1));
    }
}
