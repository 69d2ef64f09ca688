//! Positions as the editor counts them: a line and a character offset in UTF-16 code units
//! (LSP's default) or in bytes (UTF-8, where the client offers it), to and from the byte
//! offsets the analysis places its findings at.

use lsp_types::{Position, PositionEncodingKind, Range};

/// How a position's `character` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-16 code units (LSP's default).
    Utf16,
    /// Bytes.
    Utf8,
}

impl Encoding {
    /// UTF-8 where the client lists it among the encodings it takes, else UTF-16.
    pub fn negotiate(offered: Option<&[PositionEncodingKind]>) -> Encoding {
        match offered {
            Some(kinds) if kinds.contains(&PositionEncodingKind::UTF8) => Encoding::Utf8,
            _ => Encoding::Utf16,
        }
    }

    /// The kind to announce in the server's capabilities.
    pub fn kind(self) -> PositionEncodingKind {
        match self {
            Encoding::Utf16 => PositionEncodingKind::UTF16,
            Encoding::Utf8 => PositionEncodingKind::UTF8,
        }
    }
}

/// A text with its lines found, for converting positions.
#[derive(Debug)]
pub struct Lines<'a> {
    /// The text.
    text: &'a str,
    /// The byte offset of each line's start.
    starts: Vec<usize>,
    /// How a position's `character` counts.
    encoding: Encoding,
}

impl<'a> Lines<'a> {
    /// The lines of `text` (each ends at a `\n`), counted in `encoding`.
    pub fn new(text: &'a str, encoding: Encoding) -> Lines<'a> {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines {
            text,
            starts,
            encoding,
        }
    }

    /// The position of a byte offset (clamped to the text, and back to a character's start).
    pub fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&start| start <= offset) - 1;
        let before = &self.text[self.starts[line]..offset];
        let character = match self.encoding {
            Encoding::Utf8 => before.len(),
            Encoding::Utf16 => before.chars().map(char::len_utf16).sum(),
        };
        Position::new(to_u32(line), to_u32(character))
    }

    /// The positions of a byte range.
    pub fn range(&self, bytes: std::ops::Range<usize>) -> Range {
        Range::new(self.position(bytes.start), self.position(bytes.end))
    }

    /// The byte offset of a position; `None` past the last line. A character past its line's
    /// end is the line's end; one inside a character (half of a UTF-16 pair, a byte inside a
    /// UTF-8 sequence) is that character's start.
    pub fn offset(&self, position: Position) -> Option<usize> {
        let start = *self.starts.get(usize::try_from(position.line).ok()?)?;
        let rest = &self.text[start..];
        let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
        let wanted = usize::try_from(position.character).unwrap_or(usize::MAX);
        let mut counted = 0;
        for (at, c) in line.char_indices() {
            counted += match self.encoding {
                Encoding::Utf8 => c.len_utf8(),
                Encoding::Utf16 => c.len_utf16(),
            };
            if counted > wanted {
                return Some(start + at);
            }
        }
        Some(start + line.len())
    }

    /// The byte offset of a position, the text's end where it is past the last line.
    pub fn offset_or_end(&self, position: Position) -> usize {
        self.offset(position).unwrap_or(self.text.len())
    }
}

/// A line or column count as LSP sends it (a text of more than 4 GiB saturates).
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_counts_pairs_and_utf8_counts_bytes() {
        // `é` is 2 bytes and 1 UTF-16 unit; `𝔼` is 4 bytes and 2 units.
        let text = "// é𝔼\nlet q = x;\n";
        let q = text.find('q').unwrap();
        let after = text.find('𝔼').unwrap() + '𝔼'.len_utf8();
        let utf16 = Lines::new(text, Encoding::Utf16);
        assert_eq!(utf16.position(after), Position::new(0, 6));
        assert_eq!(utf16.position(q), Position::new(1, 4));
        assert_eq!(utf16.offset(Position::new(0, 6)), Some(after));
        assert_eq!(utf16.offset(Position::new(1, 4)), Some(q));
        let utf8 = Lines::new(text, Encoding::Utf8);
        assert_eq!(utf8.position(after), Position::new(0, 9));
        assert_eq!(utf8.offset(Position::new(0, 9)), Some(after));
    }

    #[test]
    fn positions_past_the_text_are_clamped_or_none() {
        let text = "ab\ncd";
        let lines = Lines::new(text, Encoding::Utf16);
        assert_eq!(lines.offset(Position::new(0, 99)), Some(2));
        assert_eq!(lines.offset(Position::new(1, 99)), Some(5));
        assert_eq!(lines.offset(Position::new(2, 0)), None);
        assert_eq!(lines.offset(Position::new(u32::MAX, u32::MAX)), None);
        assert_eq!(lines.offset_or_end(Position::new(7, 0)), 5);
        assert_eq!(lines.position(99), Position::new(1, 2));
        // Inside `𝔼`'s surrogate pair: its start.
        let pair = Lines::new("𝔼x", Encoding::Utf16);
        assert_eq!(pair.offset(Position::new(0, 1)), Some(0));
        assert_eq!(pair.position(2), Position::new(0, 0));
    }

    #[test]
    fn the_client_decides_the_encoding() {
        let both = [PositionEncodingKind::UTF16, PositionEncodingKind::UTF8];
        assert_eq!(Encoding::negotiate(Some(&both)), Encoding::Utf8);
        assert_eq!(
            Encoding::negotiate(Some(&[PositionEncodingKind::UTF16])),
            Encoding::Utf16
        );
        assert_eq!(Encoding::negotiate(None), Encoding::Utf16);
    }
}
