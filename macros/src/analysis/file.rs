//! What the macro sees: its own source file (`proc_macro::Span::local_file`, stable since Rust
//! 1.88), read into the analysis's index as one file of an unknown crate, so that the file's
//! `use`s, constants, structs, `impl`s and sibling contracts are in sight; or, where that file
//! is not to be had or does not hold the item as written, the item alone.
//!
//! Silent fallback to the item alone: no proc-macro context (unit tests), no local file
//! (rust-analyzer's server may give none), code another macro generated, a file that does not
//! parse, or a body that is not found exactly once in the file's tokens (a twin in a fn body,
//! a `const` block, a trait or a `macro_rules!` would make the lookup unsure).
//!
//! Each file is parsed once per compiler process, with proc-macro2's own tokens rather than
//! the compiler's (a compiler span cannot outlive one expansion; the index is kept by the
//! file's text across expansions). Only names, signatures and contracts are read from it; the
//! body walked, and every span a finding carries, is the macro's own input.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use candle_contracts_analysis::index::usual_externs;
use candle_contracts_analysis::{FileId, Files, FnId, Index};
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;

/// An index of what the macro can see, and each indexed function's body as token texts.
pub struct View {
    /// The index.
    pub index: Index,
    /// Each function's body tokens, by its id.
    bodies: Vec<Vec<String>>,
    /// Every token of the source (macro bodies included), to count a body's occurrences.
    tokens: Vec<String>,
}

impl View {
    /// The function named `name` whose body is `body`, where that body stands exactly once in
    /// the source and one function of the index holds it.
    pub fn locate(&self, name: &str, body: &TokenStream) -> Option<FnId> {
        let tokens = token_texts(body.clone());
        if occurrences(&self.tokens, &tokens) != 1 {
            return None;
        }
        let mut holding = self
            .index
            .fns
            .iter()
            .enumerate()
            .filter(|(id, f)| f.name == name && self.bodies[*id] == tokens);
        let (id, _) = holding.next()?;
        holding.next().is_none().then_some(id)
    }

    /// The type (its key) whose `impl` holds the method `name` with this `body`: the method
    /// whose body opens where the body does (its line and column), so that twin bodies (two
    /// methods that both read `self.proj.forward(xs)`, twin structs of one name in two
    /// modules) are told apart, whatever name the `impl` writes the type by (`impl Other` of
    /// `use a::Net as Other`); one type, or none (an `impl` the index does not hold: in a
    /// function's body, made by a macro).
    pub fn method_owner(&self, name: &str, body: &syn::Block) -> Option<String> {
        let tokens = token_texts(body.to_token_stream());
        let at = proc_macro::is_available().then(|| {
            let open = body.brace_token.span.open().unwrap();
            (open.line(), open.column())
        });
        let owners: Vec<&String> = self
            .index
            .fns
            .iter()
            .enumerate()
            .filter(|(id, f)| {
                let start = f.block.brace_token.span.open().start();
                f.name == name
                    && self.bodies[*id] == tokens
                    && at.is_none_or(|(line, column)| {
                        start.line == line && (start.column == column || start.column + 1 == column)
                    })
            })
            .filter_map(|(_, f)| f.owner.as_ref())
            .collect();
        let (first, rest) = owners.split_first()?;
        rest.iter()
            .all(|key| key == first)
            .then(|| (*first).clone())
    }

    /// The index of `items` (from the file, or the item alone), with `tokens` the source's.
    fn new(items: Vec<syn::Item>, tokens: TokenStream) -> View {
        // The index points into the syntax trees for as long as it lives: a file's lives as
        // long as the compiler process, and an item alone is small.
        let file: &'static syn::File = Box::leak(Box::new(syn::File {
            shebang: None,
            attrs: Vec::new(),
            items,
        }));
        let mut index = Index::default();
        index.add_file((0, file), usual_externs(), &mut NoFiles);
        index.finish();
        let bodies = index
            .fns
            .iter()
            .map(|f| token_texts(f.block.to_token_stream()))
            .collect();
        View {
            index,
            bodies,
            tokens: token_texts(tokens),
        }
    }
}

thread_local! {
    static FILES: RefCell<HashMap<String, Rc<View>>> = RefCell::new(HashMap::new());
}

/// The view of the source file the macro's call stands in, if it can be read and parsed.
pub fn of_file() -> Option<Rc<View>> {
    if !proc_macro::is_available() {
        return None;
    }
    let path = proc_macro::Span::call_site().local_file()?;
    let text = std::fs::read_to_string(path).ok()?;
    FILES.with(|files| {
        if let Some(view) = files.borrow().get(&text) {
            return Some(Rc::clone(view));
        }
        let mut view = with_own_tokens(|| {
            let tokens: TokenStream = text.parse().ok()?;
            let file = syn::parse2::<syn::File>(tokens.clone()).ok()?;
            Some(View::new(file.items, tokens))
        })?;
        view.index.own_tokens = true;
        let view = Rc::new(view);
        files.borrow_mut().insert(text, Rc::clone(&view));
        Some(view)
    })
}

/// The view of `item` alone (a function, an `impl` block, an inline module).
pub fn of_item(item: syn::Item) -> View {
    let tokens = item.to_token_stream();
    View::new(vec![item], tokens)
}

/// Runs `f` with proc-macro2's own tokens in place of the compiler's.
fn with_own_tokens<T>(f: impl FnOnce() -> T) -> T {
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            proc_macro2::fallback::unforce();
        }
    }
    proc_macro2::fallback::force();
    let _restore = Restore;
    f()
}

/// A file read alone has no `mod` files in sight: their modules are unknown.
struct NoFiles;

impl Files for NoFiles {
    fn load(&mut self, _: &Path) -> Option<(FileId, &'static syn::File)> {
        None
    }

    fn path(&self, _: FileId) -> &Path {
        Path::new("")
    }

    fn missing_module(&mut self, _: &str, _: FileId, _: &[PathBuf]) {}
}

/// How many times `needle` stands in `haystack`, as a run of tokens.
fn occurrences(haystack: &[String], needle: &[String]) -> usize {
    if needle.is_empty() || needle.len() > haystack.len() {
        return 0;
    }
    haystack
        .windows(needle.len())
        .filter(|window| window == &needle)
        .count()
}

/// Each token's text, groups as their delimiters around their contents: the same for the
/// body the macro was given and the body parsed from the file, whatever the spacing.
fn token_texts(tokens: TokenStream) -> Vec<String> {
    let mut texts = Vec::new();
    push_texts(tokens, &mut texts);
    texts
}

fn push_texts(tokens: TokenStream, texts: &mut Vec<String>) {
    for token in tokens {
        match token {
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::None => ("", ""),
                };
                texts.push(open.to_string());
                push_texts(group.stream(), texts);
                texts.push(close.to_string());
            }
            other => texts.push(other.to_string()),
        }
    }
}
