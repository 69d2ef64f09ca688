//! A std-only parser for the dtype and shape text of a contract clause (`u8 | u32 | i64 [N]`,
//! `float[N, C]`, `f32[B, ..]`, `f32[*B, D]`, `f32[N, {K}]`, `[N - 1]`), so that rules and
//! tests can be written as text. It reads what the macro's grammar accepts for these parts.

use std::fmt;

use crate::dim::Dim;
use crate::dtype::DTypeSet;
use crate::shape::{Run, Shape, TensorType};

/// Text that is not a dtype, shape or tensor type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// What was expected, in words.
    pub message: String,
    /// The byte offset in the text where it went wrong.
    pub offset: usize,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.offset)
    }
}

impl std::error::Error for ParseError {}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Int(u64),
    /// A braced expression's inner text.
    Braced(String),
    /// A string literal (a clause's note).
    Str,
    DotDot,
    Punct(char),
}

/// A lazy tokenizer: a spec's tail (value constraints) is never read.
struct Lexer<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str) -> Self {
        Lexer { text, at: 0 }
    }

    fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError {
            message: message.into(),
            offset: self.at,
        }
    }

    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    /// The next token without consuming it, and where it ends.
    fn peek_with_end(&mut self) -> Result<Option<(Token, usize)>, ParseError> {
        self.skip_space();
        let rest = self.rest();
        let Some(c) = rest.chars().next() else {
            return Ok(None);
        };
        let start = self.at;
        let token = if c.is_ascii_digit() {
            let len = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '_'))
                .unwrap_or(rest.len());
            let digits: String = rest[..len].chars().filter(|&c| c != '_').collect();
            let n = digits
                .parse::<u64>()
                .map_err(|_| self.error(format!("`{}` is too large for a dim", &rest[..len])))?;
            (Token::Int(n), start + len)
        } else if c.is_alphabetic() || c == '_' {
            let len = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (Token::Ident(rest[..len].to_string()), start + len)
        } else if c == '{' {
            let end = matching_close(rest).ok_or_else(|| self.error("unclosed `{`"))?;
            (Token::Braced(rest[1..end].to_string()), start + end + 1)
        } else if c == '"' {
            let end = string_end(rest).ok_or_else(|| self.error("unclosed string"))?;
            (Token::Str, start + end)
        } else if rest.starts_with("..") {
            (Token::DotDot, start + 2)
        } else {
            (Token::Punct(c), start + c.len_utf8())
        };
        Ok(Some(token))
    }

    fn peek(&mut self) -> Result<Option<Token>, ParseError> {
        Ok(self.peek_with_end()?.map(|(token, _)| token))
    }

    fn next(&mut self) -> Result<Option<Token>, ParseError> {
        let next = self.peek_with_end()?;
        Ok(next.map(|(token, end)| {
            self.at = end;
            token
        }))
    }

    fn eat_punct(&mut self, c: char) -> Result<bool, ParseError> {
        if self.peek()? == Some(Token::Punct(c)) {
            self.next()?;
            return Ok(true);
        }
        Ok(false)
    }

    fn expect_punct(&mut self, c: char) -> Result<(), ParseError> {
        if self.eat_punct(c)? {
            Ok(())
        } else {
            Err(self.error(format!("expected `{c}`")))
        }
    }

    fn expect_end(&mut self) -> Result<(), ParseError> {
        match self.peek()? {
            None => Ok(()),
            Some(_) => Err(self.error("unexpected text after the end")),
        }
    }

    /// `dtype ('|' dtype)*`.
    fn dtypes(&mut self) -> Result<DTypeSet, ParseError> {
        let mut set = DTypeSet::EMPTY;
        loop {
            let at = self.at;
            match self.next()? {
                Some(Token::Ident(name)) => match DTypeSet::from_name(&name) {
                    Some(members) => set = set.union(members),
                    None => {
                        return Err(ParseError {
                            message: format!("unknown dtype `{name}`"),
                            offset: at,
                        });
                    }
                },
                _ => {
                    return Err(ParseError {
                        message: "expected a dtype such as `f32` or a family such as `float`"
                            .to_string(),
                        offset: at,
                    });
                }
            }
            if !self.eat_punct('|')? {
                return Ok(set);
            }
        }
    }

    /// `'[' (item (',' item)*)? ','? ']'`, an item a dim, `..` or `*Name`.
    fn shape(&mut self) -> Result<Shape, ParseError> {
        self.expect_punct('[')?;
        let (mut front, mut run, mut back) = (Vec::new(), None, Vec::new());
        loop {
            if self.eat_punct(']')? {
                break;
            }
            let at = self.at;
            let item_run = match self.peek()? {
                Some(Token::DotDot) => {
                    self.next()?;
                    Some(Run::anonymous())
                }
                Some(Token::Punct('*')) => {
                    self.next()?;
                    match self.next()? {
                        Some(Token::Ident(name)) => Some(Run::named(name)),
                        _ => return Err(self.error("expected a run's name after `*`")),
                    }
                }
                _ => None,
            };
            match item_run {
                Some(_) if run.is_some() => {
                    return Err(ParseError {
                        message: "at most one run (`..` or `*B`) per shape".to_string(),
                        offset: at,
                    });
                }
                Some(item) => run = Some(item),
                None if run.is_some() => back.push(self.dim()?),
                None => front.push(self.dim()?),
            }
            if !self.eat_punct(',')? {
                self.expect_punct(']')?;
                break;
            }
        }
        Ok(match run {
            Some(run) => Shape::with_run(front, run, back),
            None => Shape::new(front),
        })
    }

    /// `term (('+' | '-') term)*`.
    fn dim(&mut self) -> Result<Dim, ParseError> {
        let mut dim = self.term()?;
        loop {
            if self.eat_punct('+')? {
                dim = dim.add(self.term()?);
            } else if self.eat_punct('-')? {
                dim = dim.sub(self.term()?);
            } else {
                return Ok(dim);
            }
        }
    }

    /// `atom (('*' | '/' | '%') atom)*`.
    fn term(&mut self) -> Result<Dim, ParseError> {
        let mut dim = self.atom()?;
        loop {
            if self.eat_punct('*')? {
                dim = dim.mul(self.atom()?);
            } else if self.eat_punct('/')? {
                dim = dim.div(self.atom()?);
            } else if self.eat_punct('%')? {
                dim = dim.rem(self.atom()?);
            } else {
                return Ok(dim);
            }
        }
    }

    fn atom(&mut self) -> Result<Dim, ParseError> {
        let at = self.at;
        match self.next()? {
            Some(Token::Int(n)) => Ok(Dim::lit(n)),
            Some(Token::Ident(name)) if name == "_" => Ok(Dim::Unknown),
            Some(Token::Ident(name)) => Ok(Dim::symbol(name)),
            Some(Token::Braced(text)) => Ok(Dim::braced(&text)),
            Some(Token::Punct('(')) => {
                let dim = self.dim()?;
                self.expect_punct(')')?;
                Ok(dim)
            }
            _ => Err(ParseError {
                message: "expected a dim: a number, a name, `_`, `{expr}` or `(expr)`".to_string(),
                offset: at,
            }),
        }
    }
}

/// The offset of the `}` closing the `{` that starts `text`, skipping strings and nesting.
fn matching_close(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            b'"' => {
                i += string_end(&text[i..])?;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The offset just past the string literal that starts `text`.
fn string_end(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// Splits `text` at the commas outside brackets, braces, parentheses and strings.
pub(crate) fn split_top_level(text: &str, separator: char) -> Vec<&str> {
    let mut pieces = Vec::new();
    let (mut depth, mut start, mut in_string, mut escaped) = (0usize, 0, false, false);
    for (i, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            c if c == separator && depth == 0 => {
                pieces.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    pieces.push(&text[start..]);
    pieces
}

/// The offset of the first `:` outside brackets that is not part of `::`.
pub(crate) fn clause_colon(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'"' => {
                i += string_end(&text[i..])?;
                continue;
            }
            b':' if depth == 0 => {
                if bytes.get(i + 1) == Some(&b':') {
                    i += 2;
                    continue;
                }
                return Some(i);
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// A dim expression: `N`, `3`, `N + 1`, `H / 2`, `{cfg.hidden}`, `_`.
pub fn parse_dim(text: &str) -> Result<Dim, ParseError> {
    let mut lexer = Lexer::new(text);
    let dim = lexer.dim()?;
    lexer.expect_end()?;
    Ok(dim)
}

/// A shape: `[N, C]`, `[]`, `[B, ..]`, `[*B, D]`, `[N - 1]`.
pub fn parse_shape(text: &str) -> Result<Shape, ParseError> {
    let mut lexer = Lexer::new(text);
    let shape = lexer.shape()?;
    lexer.expect_end()?;
    Ok(shape)
}

/// A dtype set: `f32`, `u8 | u32 | i64`, `float`, `_`.
pub fn parse_dtypes(text: &str) -> Result<DTypeSet, ParseError> {
    let mut lexer = Lexer::new(text);
    let dtypes = lexer.dtypes()?;
    lexer.expect_end()?;
    Ok(dtypes)
}

/// A tensor type: `u32[N, 1]`, `u8 | u32 | i64 [N]`, `float[N, C]`; nothing may follow.
pub fn parse_tensor_type(text: &str) -> Result<TensorType, ParseError> {
    let (tensor, rest) = parse_spec(text)?;
    Lexer::new(rest).expect_end()?;
    Ok(tensor)
}

/// A clause's spec up to its shape (`float[N, C] finite` gives `float[N, C]`), and the text
/// after the shape (its value constraints, which this crate does not read).
pub fn parse_spec(text: &str) -> Result<(TensorType, &str), ParseError> {
    let mut lexer = Lexer::new(text);
    let dtypes = lexer.dtypes()?;
    let shape = lexer.shape()?;
    Ok((TensorType::new(dtypes, shape), &text[lexer.at..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    #[test]
    fn specs_parse_and_print_back() {
        for text in [
            "u8 | u32 | i64 [N]",
            "float[N, C]",
            "f32[B, ..]",
            "f32[*B, D]",
            "f32[N, {K}]",
            "f32[N - 1]",
            "_[S, ..]",
            "f32[]",
            "f32[N * T, H / 2, 2 * C + 1]",
        ] {
            assert_eq!(parse_tensor_type(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn dims_parse_to_normal_forms() {
        assert_eq!(parse_dim("N + 1").unwrap(), parse_dim("1 + N").unwrap());
        assert_eq!(
            parse_dim("(N + 1) * 2").unwrap(),
            parse_dim("2 * N + 2").unwrap()
        );
        assert_eq!(parse_dim("_").unwrap(), Dim::Unknown);
        assert_eq!(
            parse_dim("{ cfg.hidden }").unwrap(),
            Dim::braced("cfg.hidden")
        );
        assert_eq!(parse_dim("1_000").unwrap(), Dim::lit(1000));
    }

    #[test]
    fn the_tail_of_a_spec_is_left_unread() {
        let (tensor, rest) =
            parse_spec("u8 | u32 | i64 [N] in 0..C ignore {x.y} \"a, note\"").unwrap();
        assert_eq!(tensor.dtypes, DTypeSet::INDEX);
        assert_eq!(rest.trim_start(), "in 0..C ignore {x.y} \"a, note\"");
        assert_eq!(tensor.shape.to_string(), "[N]");
    }

    #[test]
    fn bad_text_is_an_error_not_a_panic() {
        assert_eq!(
            parse_dtypes("f32 | flaot").unwrap_err().message,
            "unknown dtype `flaot`"
        );
        assert!(parse_shape("[.., ..]").is_err());
        assert!(parse_shape("[N").is_err());
        assert!(parse_shape("[N,, C]").is_err());
        assert!(parse_tensor_type("f32[N] finite").is_err());
        assert!(parse_dim("99999999999999999999999").is_err());
        assert!(parse_dim("{unclosed").is_err());
        assert!(parse_dim("").is_err());
        assert_eq!(parse_dtypes("f32").unwrap(), DTypeSet::only(DType::F32));
    }

    #[test]
    fn clauses_split_outside_brackets_and_strings() {
        let text = "a: f32[N, C] in 0..{f(x, y)}, b: u8[N] \"a, b\", N >= 1";
        assert_eq!(split_top_level(text, ',').len(), 3);
        assert_eq!(clause_colon("{x::y}: f32[N]"), Some(6));
        assert_eq!(clause_colon("N >= 1"), None);
    }
}
