//! The hover over a name of a contracted function: the type its `let` (or its clause) gives
//! it, the op and the line that bound it, and the clause that names each of its dims. Over a
//! call a `let` binds, the same for what the call gives.
//!
//! The analysis gives each name one type and the `let`'s outermost op, not where each dim was
//! computed: a dim is traced to the clause of the contract that names it (`B` to
//! `x: f32[B, T, E]`), and a dim the contracts do not name (`_`, `3 * E` from a layer's size)
//! only to the op.

use lsp_types::{Hover, HoverContents, MarkupContent, MarkupKind, Position, Url};
use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

use candle_contracts_analysis::{FnDef, FnId, Index, Site};

use crate::analyse::{Analysis, Hint};
use crate::lsp::session::Session;
use crate::lsp::text::Lines;
use crate::source::{FileId, Source};

/// The hover at `position` of `uri`, if it is over a name or a call something is known of.
pub fn hover(session: &Session, uri: &Url, position: Position) -> Option<Hover> {
    let analysis = session.analysis()?;
    let file = session.file(uri)?;
    let source = analysis.sources.get(file);
    let lines = Lines::new(&source.text, session.encoding);
    let offset = lines.offset(position)?;
    let word = word_at(&source.text, offset)?;
    let (id, f) = enclosing_fn(&analysis.index, source, file, offset)?;
    let text = &source.text;
    let after_dot = text[..word.start].trim_end().ends_with('.');
    let called = {
        let rest = text[word.end..].trim_start();
        rest.starts_with('(') || rest.starts_with("::<")
    };
    let name = &text[word.clone()];
    let markdown = if called {
        call(analysis, source, id, f, name, offset)?
    } else if after_dot {
        return None;
    } else {
        binding(analysis, source, id, f, name, word.start)?
    };
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: markdown,
        }),
        range: Some(lines.range(word)),
    })
}

/// The identifier at `offset`, or just before it (a cursor at a name's end).
fn word_at(text: &str, offset: usize) -> Option<std::ops::Range<usize>> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let at = |i: usize| text.get(i..).and_then(|rest| rest.chars().next());
    let mut start = offset;
    if !at(start).is_some_and(is_word) {
        let previous = text.get(..offset)?.chars().next_back()?;
        if !is_word(previous) {
            return None;
        }
        start -= previous.len_utf8();
    }
    while let Some(c) = text[..start].chars().next_back().filter(|&c| is_word(c)) {
        start -= c.len_utf8();
    }
    let end = start
        + text[start..]
            .find(|c: char| !is_word(c))
            .unwrap_or(text.len() - start);
    let first = text[start..].chars().next()?;
    (!first.is_ascii_digit()).then_some(start..end)
}

/// The innermost contracted function of `file` whose signature or body holds `offset`.
fn enclosing_fn<'a>(
    index: &'a Index,
    source: &Source,
    file: FileId,
    offset: usize,
) -> Option<(FnId, &'a FnDef)> {
    index
        .fns
        .iter()
        .enumerate()
        .filter(|(_, f)| f.file == file && f.contract.is_some())
        .filter_map(|(id, f)| {
            let range =
                source.site_range(Site::of(f.sig)).start..source.site_range(Site::of(f.block)).end;
            range.contains(&offset).then_some((range.len(), id, f))
        })
        .min_by_key(|(len, ..)| *len)
        .map(|(_, id, f)| (id, f))
}

/// The hover of a name: its nearest `let` before `at` in the function, or its clause.
fn binding(
    analysis: &Analysis,
    source: &Source,
    id: FnId,
    f: &FnDef,
    name: &str,
    at: usize,
) -> Option<String> {
    let bound = analysis
        .hints
        .iter()
        .rfind(|hint| hint.function == id && hint.name == name && hint.place.start <= at);
    if let Some(hint) = bound {
        if hint.ty == "?" || hint.ty == "= _" {
            return None;
        }
        let mut text = format!("```text\n{}\n```\n\n", typed(hint));
        text.push_str(&format!("{}\n", bound_at(hint, source)));
        text.push_str(&dims(&analysis.index, source, f, &hint.ty));
        text.push_str(&joins(hint));
        for (name, field) in &hint.absent {
            text.push_str(&format!("\n`{name}` is 0 where `{field}` is `None`\n"));
        }
        if let Some(why) = &hint.why {
            text.push_str(&format!("\nnot fully known: {why}\n"));
        }
        return Some(text);
    }
    let clause = f
        .contract
        .as_ref()?
        .parsed
        .as_ref()?
        .clauses
        .iter()
        .find(|clause| clause.subject == name)?;
    let place = crate::report::clause_place(f, &analysis.sources, name)?;
    let line = source.line(place.start);
    let spec = clause.spec.to_string();
    Some(format!(
        "```text\n{name}: {spec}\n```\n\ndeclared by the contract, line {line}\n"
    ))
}

/// The hover of a call: what the `let` around `at` binds, where the call is its op.
fn call(
    analysis: &Analysis,
    source: &Source,
    id: FnId,
    f: &FnDef,
    name: &str,
    at: usize,
) -> Option<String> {
    let mut lets = Lets::default();
    lets.visit_block(f.block);
    let pattern = lets
        .0
        .iter()
        .map(|(whole, pat)| (source.site_range(*whole), source.site_range(*pat)))
        .filter(|(whole, pat)| whole.contains(&at) && !pat.contains(&at))
        .min_by_key(|(whole, _)| whole.len())
        .map(|(_, pat)| pat)?;
    let hints: Vec<&Hint> = analysis
        .hints
        .iter()
        .filter(|hint| hint.function == id && pattern.contains(&hint.place.start))
        .filter(|hint| hint.op.rsplit("::").next() == Some(name) && hint.ty != "?")
        .collect();
    let first = hints.first()?;
    let names: Vec<String> = hints
        .iter()
        .map(|hint| format!("`{}`", hint.name))
        .collect();
    let types: Vec<String> = hints.iter().map(|hint| typed(hint)).collect();
    let mut text = format!("```text\n{}\n```\n\n", types.join("\n"));
    text.push_str(&format!(
        "`{}` binds {}, line {}\n",
        first.op,
        names.join(", "),
        source.line(first.place.start)
    ));
    for hint in hints {
        text.push_str(&dims(&analysis.index, source, f, &hint.ty));
        text.push_str(&joins(hint));
    }
    Some(text)
}

/// A line for each `?N` size of a hint's type: the two sizes branches give.
fn joins(hint: &Hint) -> String {
    hint.joins
        .iter()
        .map(|join| {
            format!(
                "\n`{}` is `{}` or `{}`, by {}\n",
                join.name, join.first, join.second, join.by
            )
        })
        .collect()
}

/// `q: f32[B, T, E]`, `b = B`.
fn typed(hint: &Hint) -> String {
    match hint.ty.starts_with("= ") {
        true => format!("{} {}", hint.name, hint.ty),
        false => format!("{}: {}", hint.name, hint.ty),
    }
}

/// `bound at line 12 by `matmul``.
fn bound_at(hint: &Hint, source: &Source) -> String {
    let line = source.line(hint.place.start);
    match hint.op.is_empty() {
        true => format!("bound at line {line}"),
        false => format!("bound at line {line} by `{}`", hint.op),
    }
}

/// Where the dims a type names come from: each with the clause of the function's contract
/// (or its struct's) that names it, as a list; empty where no dim is named by one.
fn dims(index: &Index, source: &Source, f: &FnDef, ty: &str) -> String {
    let mut clauses = clauses_of(f.attrs.iter().filter_map(|attr| {
        let syn::Meta::List(list) = &attr.meta else {
            return None;
        };
        (attr.path().segments.last()?.ident == "contract").then(|| list.tokens.clone())
    }));
    let struct_clauses = f.owner.as_deref().and_then(|key| index.struct_clauses(key));
    clauses.extend(clauses_of(struct_clauses.cloned()));
    // A parameter's clause (`x: f32[B, T, E]`) before the return's, before a relation
    // (`E == H * D`) or an integer field's (`n_head = H`).
    clauses.sort_by_key(|tokens| match tensor_clause_subject(tokens) {
        Some(subject) if subject != "return" => 0,
        Some(_) => 1,
        None => 2,
    });
    let mut found: Vec<(Vec<String>, &TokenStream)> = Vec::new();
    for symbol in symbols(ty) {
        let Some(clause) = clauses.iter().find(|clause| names(clause, &symbol)) else {
            continue;
        };
        match found.iter_mut().find(|(_, c)| std::ptr::eq(*c, clause)) {
            Some((symbols, _)) => symbols.push(symbol),
            None => found.push((vec![symbol], clause)),
        }
    }
    let mut text = String::new();
    for (symbols, clause) in found {
        let symbols: Vec<String> = symbols.iter().map(|s| format!("`{s}`")).collect();
        text.push_str(&format!(
            "\n- {}: {}",
            symbols.join(", "),
            clause_text(clause, source)
        ));
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text
}

/// The clauses of contracts' tokens: the token runs between their top-level commas.
fn clauses_of(contracts: impl IntoIterator<Item = TokenStream>) -> Vec<TokenStream> {
    let mut clauses = Vec::new();
    for tokens in contracts {
        let mut clause = Vec::new();
        for token in tokens {
            match &token {
                TokenTree::Punct(punct) if punct.as_char() == ',' => {
                    clauses.push(clause.drain(..).collect());
                }
                _ => clause.push(token),
            }
        }
        if !clause.is_empty() {
            clauses.push(clause.into_iter().collect());
        }
    }
    clauses
}

/// The subject of a tensor's clause (`x` of `x: f32[B, T, E]`); `None` for a relation
/// (`E == H * D`) or an integer field's clause (`n_head = H`).
fn tensor_clause_subject(clause: &TokenStream) -> Option<String> {
    let text = clause.to_string();
    let (subject, _) = text.split_once(':')?;
    (!subject.contains('=')).then(|| subject.split_whitespace().collect())
}

/// Whether a clause names the dim `symbol` (as an identifier of its own).
fn names(clause: &TokenStream, symbol: &str) -> bool {
    clause.clone().into_iter().any(|token| match token {
        TokenTree::Ident(ident) => ident == symbol,
        TokenTree::Group(group) => names(&group.stream(), symbol),
        _ => false,
    })
}

/// `` `x: f32[B, T, E]`, line 12 `` where the clause is in `source` as written, else its tokens
/// (a struct's contract in another file). A struct's clause on a field comes with `self.` put
/// before it (`self.n_head = H`), which is not in the source.
fn clause_text(clause: &TokenStream, source: &Source) -> String {
    let tokens: Vec<TokenTree> = clause.clone().into_iter().collect();
    let written = match tokens.as_slice() {
        [TokenTree::Ident(this), TokenTree::Punct(dot), rest @ ..]
            if this == "self" && dot.as_char() == '.' =>
        {
            as_written(&rest.iter().cloned().collect(), source)
                .or_else(|| as_written(clause, source))
        }
        _ => as_written(clause, source),
    };
    written.unwrap_or_else(|| format!("`{clause}`"))
}

/// `` `x: f32[B, T, E]`, line 12 `` if `tokens` are in `source` where their spans say.
fn as_written(tokens: &TokenStream, source: &Source) -> Option<String> {
    let range = source.site_range(Site::of(tokens));
    let squeezed = |text: &str| text.split_whitespace().collect::<String>();
    let written = source.text.get(range.clone())?;
    if range.is_empty() || squeezed(written) != squeezed(&tokens.to_string()) {
        return None;
    }
    let written: Vec<&str> = written.split_whitespace().collect();
    Some(format!(
        "`{}`, line {}",
        written.join(" "),
        source.line(range.start)
    ))
}

/// The dim names a type holds (`B`, `T` of `f32[B, T, 3 * E]`), each once: not its dtypes,
/// nor the fields a size was read from (`cfg.hidden_size`, which no contract names).
fn symbols(ty: &str) -> Vec<String> {
    const DTYPES: &[&str] = &[
        "u8", "u32", "i16", "i32", "i64", "bf16", "f16", "f32", "f64", "f8e4m3", "float", "int",
        "uint", "sint", "_",
    ];
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
    let mut symbols: Vec<String> = Vec::new();
    let mut rest = ty;
    while let Some(start) = rest.find(|c: char| c.is_alphabetic() || c == '_') {
        let len = rest[start..]
            .find(|c: char| !is_word(c))
            .unwrap_or(rest.len() - start);
        let word = &rest[start..start + len];
        if !DTYPES.contains(&word) && !word.contains('.') && !symbols.iter().any(|s| s == word) {
            symbols.push(word.to_string());
        }
        rest = &rest[start + len..];
    }
    symbols
}

/// The `let`s of a body: each whole statement's site and its pattern's.
#[derive(Default)]
struct Lets(Vec<(Site, Site)>);

impl Visit<'static> for Lets {
    fn visit_local(&mut self, local: &'static syn::Local) {
        self.0.push((Site::of(local), Site::of(&local.pat)));
        syn::visit::visit_local(self, local);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_is_found_under_or_just_after_the_cursor() {
        let text = "let qk = q.matmul(&k)?;";
        let at = |needle: &str| text.find(needle).unwrap();
        assert_eq!(word_at(text, at("qk")), Some(4..6));
        assert_eq!(word_at(text, at("qk") + 2), Some(4..6));
        assert_eq!(word_at(text, at("matmul") + 3), Some(11..17));
        assert_eq!(word_at(text, at("(&")), Some(11..17));
        assert_eq!(word_at(text, at("&")), None);
        assert_eq!(word_at(text, 0), Some(0..3));
        assert_eq!(word_at(text, text.len()), None);
        assert_eq!(word_at("x = 12", 5), None);
        assert_eq!(word_at("é", 1), None);
    }

    #[test]
    fn the_symbols_of_a_type_leave_out_dtypes_and_unknowns() {
        assert_eq!(symbols("f32[B, T, 3 * E]"), ["B", "T", "E"]);
        assert_eq!(symbols("u8 | u32 | i64 [N, _]"), ["N"]);
        assert_eq!(symbols("_[B, H * D, ..]"), ["B", "H", "D"]);
        assert_eq!(symbols("= B * T"), ["B", "T"]);
        assert_eq!(symbols("f32[B, cfg.hidden_size / cfg.n_head]"), ["B"]);
    }
}
