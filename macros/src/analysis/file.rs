//! What the macro sees: the crate it expands in, read as the CLI reads it (cargo names the
//! package in `CARGO_MANIFEST_DIR` and the crate in `CARGO_CRATE_NAME`; the crate's root and
//! `mod` files, with its package's library), so that every `use`, constant, struct, `impl`
//! and contract of the crate is in sight; where that crate is not to be had or does not hold
//! the macro's file, that file alone (`proc_macro::Span::local_file`, stable since Rust 1.88),
//! read as one file of an unknown crate; where the file does not hold the item as written, the
//! item alone.
//!
//! Silent fallback to less: no proc-macro context (unit tests), no local file (rust-analyzer's
//! server may give none), code another macro generated, a file that does not parse, or a body
//! that is not found exactly once in the file's tokens (a twin in a fn body, a `const` block, a
//! trait or a `macro_rules!` would make the lookup unsure).
//!
//! A crate is read once per compiler process (again where one of its files changed, as in an
//! editor's server), with proc-macro2's own tokens rather than the compiler's (a compiler span
//! cannot outlive one expansion). Only names, signatures and contracts are read from it; the
//! body walked, and every span a finding carries, is the macro's own input.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::SystemTime;

use candle_contracts_analysis::index::usual_externs;
use candle_contracts_analysis::package::{crate_targets, read_targets};
use candle_contracts_analysis::{FileId, Files, FnId, Index, ModId};
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;

/// An index of what the macro can see, with the token texts of each indexed function's body
/// and of each file read.
pub struct Indexed {
    /// The index.
    pub index: Index,
    /// Each function's body tokens, by its id.
    bodies: Vec<Vec<String>>,
    /// Each file read, by its id.
    files: Vec<ReadFile>,
}

/// One file of an index: where it is, and its tokens (macro bodies included), to count a
/// body's occurrences.
struct ReadFile {
    path: PathBuf,
    tokens: Vec<String>,
}

/// A file's modification time and length, to tell whether it changed since it was read.
type Stamp = (SystemTime, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// What one expansion sees: an index, and which of its files the macro's call stands in (one,
/// or two loads of one file that two modules name).
pub struct View {
    indexed: Rc<Indexed>,
    here: Vec<FileId>,
}

impl Deref for View {
    type Target = Indexed;

    fn deref(&self) -> &Indexed {
        &self.indexed
    }
}

impl View {
    /// Whether the function `id` is written in the macro's file (one of its loads in the
    /// macro's crate).
    fn is_here(&self, id: FnId) -> bool {
        self.here.contains(&self.index.fns[id].file)
    }

    /// The function named `name` whose body is `body`, where that body stands exactly once in
    /// the macro's file and one function of the index holds it.
    pub fn locate(&self, name: &str, body: &syn::Block) -> Option<FnId> {
        let tokens = token_texts(body.to_token_stream());
        let standing: usize = self
            .here
            .iter()
            .map(|&file| occurrences(&self.files[file].tokens, &tokens))
            .sum();
        if standing == 0 {
            return None;
        }
        // Where the compiler says the body opens: its file, line and column. Twin bodies (two
        // `forward`s reading `self.proj.forward(xs)`) are told apart so, and a body a
        // `macro_rules!` brought from another file (the same tokens as one here) is no
        // function of this file.
        // (Only a crate read from its files knows its paths; a view of one file or item alone
        // holds the body once, or is told apart by position.)
        let read_from_files = self
            .here
            .iter()
            .all(|&file| self.files[file].path.is_absolute());
        let (file, at) = match proc_macro::is_available() {
            true if read_from_files || standing > 1 => {
                let open = body.brace_token.span.open().unwrap();
                let file = open
                    .local_file()
                    .and_then(|path| path.canonicalize().ok())
                    .filter(|_| read_from_files);
                (file, Some((open.line(), open.column())))
            }
            _ => (None, None),
        };
        if at.is_none() && standing > 1 {
            return None;
        }
        let mut holding = self.bodies_at(name, &tokens, file.as_deref(), at);
        let id = holding.next()?;
        holding.next().is_none().then_some(id)
    }

    /// The functions of this view named `name` whose body is `tokens`: in `file` where it is
    /// known, and opening at `at` (line, column) where that is known.
    fn bodies_at<'s>(
        &'s self,
        name: &'s str,
        tokens: &'s [String],
        file: Option<&'s std::path::Path>,
        at: Option<(usize, usize)>,
    ) -> impl Iterator<Item = FnId> + 's {
        self.index
            .fns
            .iter()
            .enumerate()
            .filter(move |(id, f)| {
                let start = f.block.brace_token.span.open().start();
                f.name == name
                    && self.is_here(*id)
                    && self.bodies[*id] == tokens
                    && file.is_none_or(|file| file == self.files[f.file].path)
                    && at.is_none_or(|(line, column)| {
                        start.line == line && (start.column == column || start.column + 1 == column)
                    })
            })
            .map(|(id, _)| id)
    }

    /// Where the method `name` with this `body` is: the method whose body opens where the body
    /// does (its line and column), so that twin bodies (two methods that both read
    /// `self.proj.forward(xs)`, twin structs of one name in two modules) are told apart. Gives
    /// the type (its key) whose `impl` holds it, whatever name the `impl` writes the type by
    /// (`impl Other` of `use a::Net as Other`), where the index resolved it (not under `cfg`),
    /// and the module it is written in; `None` where no one module holds such a method.
    pub fn method_place(&self, name: &str, body: &syn::Block) -> Option<(Option<String>, ModId)> {
        let tokens = token_texts(body.to_token_stream());
        let at = proc_macro::is_available().then(|| {
            let open = body.brace_token.span.open().unwrap();
            (open.line(), open.column())
        });
        // A body a `macro_rules!` brought from another file stands at no place of this one.
        let read_from_files = self
            .here
            .iter()
            .all(|&file| self.files[file].path.is_absolute());
        let file = proc_macro::is_available()
            .then(|| body.brace_token.span.open().unwrap().local_file())
            .flatten()
            .and_then(|path| path.canonicalize().ok())
            .filter(|_| read_from_files);
        let ids: Vec<FnId> = self.bodies_at(name, &tokens, file.as_deref(), at).collect();
        let (first, rest) = ids.split_first()?;
        let module = self.index.fns[*first].module;
        if rest.iter().any(|&id| self.index.fns[id].module != module) {
            return None;
        }
        let owners: Vec<&String> = ids
            .iter()
            .filter_map(|&id| self.index.fns[id].owner.as_ref())
            .collect();
        let owner = match owners.split_first() {
            Some((first, rest)) if rest.iter().all(|key| key == first) => Some((*first).clone()),
            _ => None,
        };
        Some((owner, module))
    }

    /// The view of `items` alone (a file, or an item), read as one file of an unknown crate,
    /// with `tokens` the source's.
    fn alone(items: Vec<syn::Item>, tokens: TokenStream) -> View {
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
        let files = vec![ReadFile {
            path: PathBuf::new(),
            tokens: token_texts(tokens),
        }];
        View {
            indexed: Rc::new(Indexed::new(index, files)),
            here: vec![0],
        }
    }
}

impl Indexed {
    fn new(index: Index, files: Vec<ReadFile>) -> Indexed {
        let bodies = index
            .fns
            .iter()
            .map(|f| token_texts(f.block.to_token_stream()))
            .collect();
        Indexed {
            index,
            bodies,
            files,
        }
    }
}

/// A crate, by its package's directory, its name, whether it is a binary, and which target of
/// that name (see `crate_targets`).
type CrateKey = (PathBuf, String, bool, usize);

/// A crate read: its index (`None` where it is not to be had) with the crate the macro expands
/// in (its number there: the index holds its package's library too), and each file tried
/// with its stamp then, to tell whether it is still what was read.
type Read = (Option<(Rc<Indexed>, usize)>, Vec<(PathBuf, Option<Stamp>)>);

thread_local! {
    /// Files read alone, by their text.
    static FILES: RefCell<HashMap<String, Rc<Indexed>>> = RefCell::new(HashMap::new());
    /// Crates read, by package directory and crate name; `None` where the crate is not to be
    /// had.
    static CRATES: RefCell<HashMap<CrateKey, Read>> = RefCell::new(HashMap::new());
}

/// The view of the source file the macro's call stands in, if it can be read and parsed: in
/// its crate where cargo names one that holds the file, alone otherwise.
pub fn of_file() -> Option<View> {
    if !proc_macro::is_available() {
        return None;
    }
    let path = proc_macro::Span::call_site().local_file()?;
    if let (Some(dir), Ok(name)) = (
        std::env::var_os("CARGO_MANIFEST_DIR"),
        std::env::var("CARGO_CRATE_NAME"),
    ) && let binary = std::env::var_os("CARGO_BIN_NAME").is_some()
        && let Some(view) = in_crate(Path::new(&dir), &name, binary, &path)
    {
        return Some(view);
    }
    let text = std::fs::read_to_string(path).ok()?;
    FILES.with(|files| {
        if let Some(indexed) = files.borrow().get(&text) {
            return Some(View {
                indexed: Rc::clone(indexed),
                here: vec![0],
            });
        }
        let mut view = with_own_tokens(|| {
            let tokens: TokenStream = text.parse().ok()?;
            let file = syn::parse2::<syn::File>(tokens.clone()).ok()?;
            Some(View::alone(file.items, tokens))
        })?;
        Rc::get_mut(&mut view.indexed)?.index.own_tokens = true;
        files.borrow_mut().insert(text, Rc::clone(&view.indexed));
        Some(view)
    })
}

/// The view of `file` in the crate `crate_name` of the package in `manifest_dir` (a binary or
/// an example where `binary`), where that crate is read and holds the file.
pub fn in_crate(manifest_dir: &Path, crate_name: &str, binary: bool, file: &Path) -> Option<View> {
    let file = file.canonicalize().ok()?;
    // Several targets may have the crate's name (a test named like the library): the one
    // that holds the file. Two of one name are rare, so at most a few are read.
    (0..4).find_map(|alternative| {
        let key = (
            manifest_dir.to_path_buf(),
            crate_name.to_string(),
            binary,
            alternative,
        );
        let (indexed, krate) = CRATES.with(|crates| {
            let kept = crates.borrow().get(&key).cloned();
            match kept {
                Some((indexed, stamps)) if stamps.iter().all(|(path, at)| stamp(path) == *at) => {
                    indexed
                }
                _ => {
                    let read = read_crate(manifest_dir, crate_name, binary, alternative);
                    let indexed = read.0.clone();
                    crates.borrow_mut().insert(key, read);
                    indexed
                }
            }
        })?;
        // The loads of the file in the macro's crate (the library's are another crate's).
        let mut here: Vec<FileId> = indexed
            .index
            .fns
            .iter()
            .filter(|f| {
                indexed.files[f.file].path == file && indexed.index.modules[f.module].krate == krate
            })
            .map(|f| f.file)
            .collect();
        here.sort_unstable();
        here.dedup();
        (!here.is_empty()).then_some(View { indexed, here })
    })
}

/// The crate `crate_name` of the package in `manifest_dir` (and its package's library),
/// indexed; `None` where no target has that name or one of its files cannot be read or parsed
/// (the crate the compiler sees would not be the one read).
fn read_crate(manifest_dir: &Path, crate_name: &str, binary: bool, alternative: usize) -> Read {
    let manifest = manifest_dir.join("Cargo.toml");
    let mut stamps = vec![(manifest.clone(), stamp(&manifest))];
    let targets = crate_targets(manifest_dir, crate_name, binary, alternative);
    if targets.is_empty() {
        return (None, stamps);
    }
    with_own_tokens(|| {
        let mut reader = CrateFiles::default();
        let (mut index, roots) = read_targets(&targets, &mut reader);
        stamps.append(&mut reader.stamps);
        // The macro's crate is the last read.
        let Some(krate) = roots.len().checked_sub(1) else {
            return (None, stamps);
        };
        if reader.failed || reader.lines * index.struct_count() > MAX_LINES_TIMES_STRUCTS {
            return (None, stamps);
        }
        index.own_tokens = true;
        let indexed = Rc::new(Indexed::new(index, reader.files));
        (Some((indexed, krate)), stamps)
    })
}

/// The view of `item` alone (a function, an `impl` block, an inline module).
pub fn of_item(item: syn::Item) -> View {
    let tokens = item.to_token_stream();
    View::alone(vec![item], tokens)
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

/// Past this many lines times structs, the macro reads its own file rather than its crate:
/// what a struct's fields hold is found from one walk of every file, replayed once per
/// struct (the CLI's cost too), which on a crate of a thousand structs in seventy thousand
/// lines costs seconds per build. About 250 structs in 20,000 lines are read whole.
const MAX_LINES_TIMES_STRUCTS: usize = 5_000_000;

/// The files of a crate, read from disk and parsed with proc-macro2's own tokens.
#[derive(Default)]
struct CrateFiles {
    files: Vec<ReadFile>,
    /// The lines of the files read.
    lines: usize,
    /// Whether a file could not be read or parsed.
    failed: bool,
    /// Every file tried (read or not, or missing) with its stamp then.
    stamps: Vec<(PathBuf, Option<Stamp>)>,
}

impl Files for CrateFiles {
    fn load(&mut self, path: &Path) -> Option<(FileId, &'static syn::File)> {
        self.stamps.push((path.to_path_buf(), stamp(path)));
        let path = path.canonicalize().ok();
        let parsed = path.as_ref().and_then(|path| {
            let text = std::fs::read_to_string(path).ok()?;
            let tokens: TokenStream = text.parse().ok()?;
            let file = syn::parse2::<syn::File>(tokens.clone()).ok()?;
            Some((tokens, file, text.lines().count()))
        });
        let (Some(path), Some((tokens, file, lines))) = (path, parsed) else {
            self.failed = true;
            return None;
        };
        self.lines += lines;
        // The syntax trees live as long as the compiler process: the index points into them.
        let file: &'static syn::File = Box::leak(Box::new(file));
        self.files.push(ReadFile {
            path,
            tokens: token_texts(tokens),
        });
        Some((self.files.len() - 1, file))
    }

    fn load_if_compiled(&mut self, path: &Path) -> Option<(FileId, &'static syn::File)> {
        let failed = self.failed;
        let loaded = self.load(path);
        // rustc may never read it: the rest of the crate is read as it compiles.
        self.failed = failed;
        loaded
    }

    fn path(&self, file: FileId) -> &Path {
        &self.files[file].path
    }

    fn missing_module(&mut self, _: &str, _: FileId, candidates: &[PathBuf]) {
        self.failed = true;
        self.stamps
            .extend(candidates.iter().map(|path| (path.clone(), stamp(path))));
    }
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
