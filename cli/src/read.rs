//! The crates of a workspace read into the analysis's index: each target's root file and the
//! files of its `mod`s, with what could not be read or parsed kept for the report.

use std::path::{Path, PathBuf};

use candle_contracts_analysis::{FileId, Files, Index};

use crate::source::Sources;
use crate::workspace::Target;

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
}

impl<'a> Reader<'a> {
    /// A reader that loads into `sources`.
    pub fn new(sources: &'a mut Sources) -> Reader<'a> {
        Reader {
            sources,
            unreadable: Vec::new(),
            unparsable: Vec::new(),
            crate_roots: Vec::new(),
        }
    }

    /// Reads the crates of `targets`, following each root's `mod` declarations.
    pub fn build(&mut self, targets: &[Target]) -> Index {
        let mut index = Index::default();
        // Libraries first, so that the other targets of their package can name them.
        let mut order: Vec<&Target> = targets.iter().filter(|t| t.is_lib).collect();
        order.extend(targets.iter().filter(|t| !t.is_lib));
        for target in order {
            let Some(root) = self.load(&target.root) else {
                continue;
            };
            self.crate_roots.push(target.root.clone());
            match target.root_known {
                true => index.add_crate(
                    root,
                    target.externs.clone(),
                    target.lib_name.clone(),
                    target.is_lib,
                    self,
                ),
                // A lone file that is no target of its package: a module of some crate.
                false => index.add_file(root, target.externs.clone(), self),
            }
        }
        index.finish();
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
        match syn::parse_file(&self.sources.get(id).text) {
            // The syntax trees live as long as the run: the functions' bodies point into them.
            Ok(file) => Some((id, Box::leak(Box::new(file)))),
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
