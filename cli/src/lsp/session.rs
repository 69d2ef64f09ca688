//! What the editor has open, the crates of its workspace, and the last analysis of them with
//! the open files' unsaved texts: run again after a change, before anything is answered.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lsp_types::Url;

use crate::analyse::{Analysis, analyse_again};
use crate::lsp::text::Encoding;
use crate::read::Trees;
use crate::source::{FileId, Sources, canonical};
use candle_contracts_analysis::package::{self, Target};

/// A file the editor has open.
#[derive(Debug)]
struct Document {
    /// The URI the editor names it by.
    uri: Url,
    /// The editor's version of its text.
    version: i32,
    /// The text in the editor, saved or not.
    text: String,
}

/// The server's state between messages.
#[derive(Debug)]
pub struct Session {
    /// How positions count characters.
    pub encoding: Encoding,
    /// The workspace folders the editor gave (none: each open file's package is read).
    roots: Vec<PathBuf>,
    /// The open files, by canonical path.
    open: BTreeMap<PathBuf, Document>,
    /// The syntax trees of files unchanged since the last run.
    trees: Trees,
    /// The last analysis.
    analysis: Option<Analysis>,
    /// Its files, by canonical path.
    files: HashMap<PathBuf, FileId>,
    /// Whether a text has changed since the last analysis.
    stale: bool,
}

/// One run of the analysis, for the log.
#[derive(Debug)]
pub struct Run {
    /// How long it took.
    pub took: Duration,
    /// How many files it read.
    pub files: usize,
    /// How many certain mismatches it found.
    pub findings: usize,
    /// The files it could not read or parse, each with why.
    pub problems: Vec<String>,
}

impl Session {
    /// A session over the workspace folders `roots` (none when the editor gave none).
    pub fn new(encoding: Encoding, roots: Vec<PathBuf>) -> Session {
        Session {
            encoding,
            roots: roots.iter().map(|root| canonical(root)).collect(),
            open: BTreeMap::new(),
            trees: Trees::default(),
            analysis: None,
            files: HashMap::new(),
            stale: true,
        }
    }

    /// The editor opened `uri` (or sent its whole new text): that text replaces the disk's.
    /// Ignored for a URI that is no file.
    pub fn set_text(&mut self, uri: &Url, version: i32, text: String) {
        let Ok(path) = uri.to_file_path() else {
            return;
        };
        let path = canonical(&path);
        // A file opened as it is on disk: the last analysis read that text already.
        let analysed = self.files.get(&path).zip(self.analysis.as_ref());
        if analysed.is_none_or(|(&id, analysis)| analysis.sources.get(id).text != text) {
            self.stale = true;
        }
        let uri = uri.clone();
        self.open.insert(path, Document { uri, version, text });
    }

    /// The editor's text of `uri`, if it has it open.
    pub fn text(&self, uri: &Url) -> Option<&str> {
        let path = uri.to_file_path().ok()?;
        self.open.get(&canonical(&path)).map(|d| d.text.as_str())
    }

    /// The editor closed `uri`: the disk's text counts again.
    pub fn close(&mut self, uri: &Url) {
        if let Ok(path) = uri.to_file_path() {
            self.open.remove(&canonical(&path));
        }
        self.stale = true;
    }

    /// Something on disk may have changed (a file saved): analyse again.
    pub fn touch(&mut self) {
        self.stale = true;
    }

    /// Whether a text has changed since the last analysis.
    pub fn is_stale(&self) -> bool {
        self.stale
    }

    /// Analyses the workspace again if a text changed since the last run: what it did, or
    /// `None` when nothing changed.
    pub fn refresh(&mut self) -> Option<Run> {
        if !self.stale {
            return None;
        }
        let started = Instant::now();
        let overlay = self
            .open
            .iter()
            .map(|(path, document)| (path.clone(), document.text.clone()))
            .collect();
        let mut targets = self.targets();
        let overlay: BTreeMap<PathBuf, String> = overlay;
        let mut analysis = analyse_again(
            &targets,
            Sources::with_overlay(overlay.clone()),
            &mut self.trees,
        );
        // An open file no crate read reaches (a sample beside a package, a file not yet in a
        // `mod`): read alone, as `check FILE` reads it.
        let read: Vec<PathBuf> = analysis
            .sources
            .iter()
            .map(|(_, source)| canonical(&source.path))
            .collect();
        let kept = kept_sources();
        let alone: Vec<Target> = self
            .open
            .keys()
            .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
            .filter(|path| !read.contains(path) && !kept.iter().any(|home| path.starts_with(home)))
            .flat_map(|path| package::discover(Some(path)).unwrap_or_default())
            .filter(|target| !targets.iter().any(|t| t.root == target.root))
            .collect();
        if !alone.is_empty() {
            targets.extend(alone);
            analysis = analyse_again(&targets, Sources::with_overlay(overlay), &mut self.trees);
        }
        self.files = analysis
            .sources
            .iter()
            .map(|(id, source)| (canonical(&source.path), id))
            .collect();
        let run = Run {
            took: started.elapsed(),
            files: self.files.len(),
            findings: analysis.findings.len(),
            problems: [&analysis.unreadable[..], &analysis.unparsable[..]].concat(),
        };
        self.analysis = Some(analysis);
        self.stale = false;
        Some(run)
    }

    /// The last analysis (`None` before the first).
    pub fn analysis(&self) -> Option<&Analysis> {
        self.analysis.as_ref()
    }

    /// The file of `uri` in the last analysis, if it read it.
    pub fn file(&self, uri: &Url) -> Option<FileId> {
        let path = uri.to_file_path().ok()?;
        self.files.get(&canonical(&path)).copied()
    }

    /// The URI of a file of the last analysis: the editor's own where it has it open.
    pub fn uri(&self, file: FileId) -> Option<Url> {
        let path = canonical(&self.analysis.as_ref()?.sources.get(file).path);
        match self.open.get(&path) {
            Some(document) => Some(document.uri.clone()),
            None => Url::from_file_path(&path).ok(),
        }
    }

    /// The editor's version of an open file's text.
    pub fn version(&self, uri: &Url) -> Option<i32> {
        let path = uri.to_file_path().ok()?;
        self.open.get(&canonical(&path)).map(|d| d.version)
    }

    /// The crates to read: each workspace folder's (as `cargo contracts check FOLDER` reads
    /// them), and for an open file in none of them, its package's (or the file alone, as
    /// `check FILE` reads it), unless it is a dependency's source that cargo or rustup keep.
    fn targets(&self) -> Vec<Target> {
        let mut targets: Vec<Target> = Vec::new();
        for root in &self.roots {
            if let Ok(found) = package::discover(Some(root)) {
                targets.extend(found);
            }
        }
        // The package of a file: the nearest directory above it with a `Cargo.toml`.
        let package_of = |path: &Path| {
            path.ancestors()
                .skip(1)
                .find(|dir| dir.join("Cargo.toml").is_file())
                .map(Path::to_path_buf)
        };
        // A file is read with the folders' crates where its package is one of theirs (a
        // package below a folder but outside its workspace is read on its own).
        let covered: Vec<PathBuf> = targets.iter().filter_map(|t| package_of(&t.root)).collect();
        let kept = kept_sources();
        let mut packages: Vec<PathBuf> = Vec::new();
        for path in self.open.keys() {
            if package_of(path).is_some_and(|package| covered.contains(&package))
                || kept.iter().any(|home| path.starts_with(home))
                || path.extension().is_none_or(|ext| ext != "rs")
            {
                continue;
            }
            let package = path
                .ancestors()
                .skip(1)
                .find(|dir| dir.join("Cargo.toml").is_file());
            let at = package.unwrap_or(path);
            if packages.iter().any(|seen| seen == at) {
                continue;
            }
            packages.push(at.to_path_buf());
            // A package none of whose crates reaches the file (a lone script): the file.
            let mut found = package::discover(Some(at)).unwrap_or_default();
            if found.is_empty() {
                found = package::discover(Some(path)).unwrap_or_default();
            }
            targets.extend(found);
        }
        let mut seen = Vec::new();
        targets.retain(|target| {
            let new = !seen.contains(&target.root);
            seen.push(target.root.clone());
            new
        });
        targets
    }
}

/// Where cargo and rustup keep the sources of dependencies and of std: a file opened there (by
/// going to a definition) is not read as a crate of the workspace.
fn kept_sources() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let at = |var: &str, default: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|home| home.join(default)))
            .map(|dir| canonical(&dir))
    };
    [at("CARGO_HOME", ".cargo"), at("RUSTUP_HOME", ".rustup")]
        .into_iter()
        .flatten()
        .flat_map(|dir| {
            [
                dir.join("registry"),
                dir.join("git"),
                dir.join("toolchains"),
            ]
        })
        .collect()
}
