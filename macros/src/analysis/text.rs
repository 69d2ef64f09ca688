//! Source text of expressions as messages quote them (`w2.t()?`, `&target`), printed from
//! tokens: a span's own text needs `Span::join`, which stable proc macros lack.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use quote::ToTokens;

/// `tokens` as rustfmt writes them (`x.sum_keepdim(1)`, `(k.t()? * scale)?`): spaces between
/// words, after commas and around binary operators.
pub fn compact(tokens: &impl ToTokens) -> String {
    let mut out = String::new();
    write(tokens.to_token_stream(), &mut out);
    out
}

/// Operators rustfmt writes with a space on each side where they stand between two operands
/// (`<`, `>` and the shifts are left out: generics write them bare (`Vec<Vec<u32>>`), and
/// `|`: closures).
const BINARY: &[&str] = &[
    "+", "-", "*", "/", "%", "^", "&", "==", "!=", "<=", ">=", "&&", "||", "=", "+=", "-=", "*=",
    "/=", "%=", "^=", "&=", "|=",
];

/// Words after which an operator is unary.
const KEYWORDS: &[&str] = &[
    "as", "break", "const", "dyn", "else", "if", "impl", "in", "let", "match", "move", "mut",
    "ref", "return", "static", "unsafe", "where", "while", "yield",
];

fn write(stream: TokenStream, out: &mut String) {
    // Whether the last token ends an operand (a word, a literal, a group, a `?`): an operator
    // after it is binary.
    let mut after_operand = false;
    let mut previous_word = false;
    // The characters of an operator of several (`==`: `=` joint, then `=` alone).
    let mut pending = String::new();
    for tree in stream {
        if !pending.is_empty() && !matches!(tree, TokenTree::Punct(_)) {
            // A lifetime's `'` (`break 'outer`) stands apart from a word before it.
            if pending == "'" && previous_word {
                out.push(' ');
            }
            out.push_str(&std::mem::take(&mut pending));
            previous_word = false;
        }
        match tree {
            TokenTree::Ident(ident) => {
                if previous_word {
                    out.push(' ');
                }
                let word = ident.to_string();
                out.push_str(&word);
                previous_word = true;
                // After a keyword an operator is unary (`&mut *x`, `return -x`, `x as &T`).
                after_operand = !KEYWORDS.contains(&word.as_str());
            }
            TokenTree::Literal(literal) => {
                if previous_word {
                    out.push(' ');
                }
                out.push_str(&literal.to_string());
                previous_word = true;
                after_operand = true;
            }
            TokenTree::Punct(punct) => {
                let c = punct.as_char();
                pending.push(c);
                if punct.spacing() == Spacing::Joint {
                    continue;
                }
                let mut op = std::mem::take(&mut pending);
                // `..,` or `?,` read outside the compiler (joint to the comma).
                if op.len() > 1 && (op.ends_with(',') || op.ends_with(';')) {
                    let separator = op.pop().unwrap_or(',');
                    out.push_str(&op);
                    op = separator.to_string();
                }
                match op.as_str() {
                    "," | ";" => out.push_str(&format!("{op} ")),
                    op if after_operand && BINARY.contains(&op) => {
                        out.push_str(&format!(" {op} "));
                    }
                    // `&mut *x`, `return -x`: a unary operator after a keyword.
                    op if previous_word
                        && !after_operand
                        && !matches!(op, "." | "?" | "!" | ":" | "::") =>
                    {
                        out.push(' ');
                        out.push_str(op);
                    }
                    op => out.push_str(op),
                }
                after_operand = op == "?";
                previous_word = false;
            }
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{ ", " }"),
                    Delimiter::None => ("", ""),
                };
                if previous_word && group.delimiter() == Delimiter::Brace {
                    out.push(' ');
                }
                out.push_str(open);
                write(group.stream(), out);
                let trimmed = out.trim_end_matches(' ').len();
                out.truncate(trimmed);
                out.push_str(close);
                previous_word = group.delimiter() == Delimiter::Brace;
                after_operand = true;
            }
        }
    }
    out.push_str(&pending);
    let trimmed = out.trim_end_matches(' ').len();
    out.truncate(trimmed);
}
