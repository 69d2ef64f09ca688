//! The crates of a workspace read into the analysis's index: each target's root file and the
//! files of its `mod`s, with what could not be read or parsed kept for the report.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_contracts_analysis::package::{Target, read_targets};
use candle_contracts_analysis::{FileId, Files, Index};

use crate::source::Sources;

/// The files of a run, as the index reads them, and their problems.
#[derive(Debug)]
pub struct Reader<'a> {
    /// The files read.
    pub sources: &'a mut Sources,
    /// Files that cannot be read, or read as UTF-8 text: the message, naming the file.
    pub unreadable: Vec<String>,
    /// Files that do not parse: the message, with the parser's words and place.
    pub unparsable: Vec<String>,
    /// The root file of each crate read, in the index's order (its crate numbers).
    pub crate_roots: Vec<PathBuf>,
    /// The syntax trees of earlier runs, taken again where a file's text is the same.
    pub trees: Trees,
}

/// Syntax trees kept from one run to the next (an editor's server runs after each change):
/// a file whose text has not changed is not parsed, nor its tree leaked, again.
#[derive(Default)]
pub struct Trees {
    /// By path: the text parsed, and one tree for each time a run loaded it (a file in two
    /// crates' module trees is loaded twice, and each load has always had a tree of its own).
    kept: HashMap<PathBuf, (String, Vec<&'static syn::File>)>,
    /// How many of each path's trees this run has taken.
    taken: HashMap<PathBuf, usize>,
}

impl std::fmt::Debug for Trees {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trees")
            .field("files", &self.kept.len())
            .finish_non_exhaustive()
    }
}

impl Trees {
    /// The tree of `text`, the file at `path`: a kept one, or a new parse, kept.
    fn parse(&mut self, path: &Path, text: &str) -> syn::Result<&'static syn::File> {
        let (kept_text, trees) = self
            .kept
            .entry(path.to_path_buf())
            .or_insert_with(|| (text.to_string(), Vec::new()));
        if kept_text != text {
            *kept_text = text.to_string();
            trees.clear();
        }
        let taken = self.taken.entry(path.to_path_buf()).or_insert(0);
        let tree = match trees.get(*taken) {
            Some(tree) => tree,
            // The syntax trees live as long as the run: the functions' bodies point into them.
            None => {
                let tree: &'static syn::File = Box::leak(Box::new(syn::parse_file(text)?));
                trees.push(tree);
                tree
            }
        };
        *taken += 1;
        Ok(tree)
    }
}

impl<'a> Reader<'a> {
    /// A reader that loads into `sources`.
    pub fn new(sources: &'a mut Sources) -> Reader<'a> {
        Reader {
            sources,
            unreadable: Vec::new(),
            unparsable: Vec::new(),
            crate_roots: Vec::new(),
            trees: Trees::default(),
        }
    }

    /// Reads the crates of `targets`, following each root's `mod` declarations.
    pub fn build(&mut self, targets: &[Target]) -> Index {
        self.trees.taken.clear();
        let (index, roots) = read_targets(targets, self);
        self.crate_roots.extend(roots);
        index
    }
}

impl Files for Reader<'_> {
    fn load(&mut self, path: &Path) -> Option<(FileId, &'static syn::File)> {
        let id = match self.sources.load(path) {
            Ok(id) => id,
            Err(error) => {
                self.unreadable
                    .push(format!("cannot read `{}`: {error}", path.display()));
                return None;
            }
        };
        match self.trees.parse(path, &self.sources.get(id).text) {
            Ok(file) => Some((id, file)),
            Err(error) => {
                let start = error.span().start();
                self.unparsable.push(format!(
                    "`{}` does not parse: {error} at {}:{}",
                    self.sources.get(id).name,
                    start.line,
                    start.column + 1
                ));
                None
            }
        }
    }

    fn exists(&self, path: &Path) -> bool {
        path.is_file() || self.sources.has_unsaved(path)
    }

    fn load_if_compiled(&mut self, path: &Path) -> Option<(FileId, &'static syn::File)> {
        let id = self.sources.load(path).ok()?;
        self.trees
            .parse(path, &self.sources.get(id).text)
            .ok()
            .map(|file| (id, file))
    }

    fn path(&self, file: FileId) -> &Path {
        &self.sources.get(file).path
    }

    fn missing_module(&mut self, name: &str, file: FileId, candidates: &[PathBuf]) {
        let looked: Vec<String> = candidates
            .iter()
            .map(|c| format!("`{}`", c.display()))
            .collect();
        self.unreadable.push(format!(
            "cannot read the file of `mod {name}` in `{}`: no {}",
            self.sources.get(file).name,
            looked.join(" or ")
        ));
    }
}
