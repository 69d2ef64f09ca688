//! Source text of expressions as messages quote them (`w2.t()?`, `&target`), printed from
//! tokens: a span's own text needs `Span::join`, which stable proc macros lack.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;

/// `tokens` as a person writes them (`x.sum_keepdim(1)`): spaces only between words and after
/// commas.
pub fn compact(tokens: &impl ToTokens) -> String {
    let mut out = String::new();
    write(tokens.to_token_stream(), &mut out);
    out
}

fn write(stream: TokenStream, out: &mut String) {
    let mut previous_word = false;
    for tree in stream {
        match tree {
            TokenTree::Ident(ident) => {
                if previous_word {
                    out.push(' ');
                }
                out.push_str(&ident.to_string());
                previous_word = true;
            }
            TokenTree::Literal(literal) => {
                if previous_word {
                    out.push(' ');
                }
                out.push_str(&literal.to_string());
                previous_word = true;
            }
            TokenTree::Punct(punct) => {
                let c = punct.as_char();
                match c {
                    ',' | ';' => out.push_str(&format!("{c} ")),
                    _ => out.push(c),
                }
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
            }
        }
    }
    let trimmed = out.trim_end_matches(' ').len();
    out.truncate(trimmed);
}
