//! One run of the analysis over a set of targets: the files read, the index built from them,
//! and every certain mismatch found, placed in its file. `check` prints it; other front ends
//! (an editor's server, cargo's JSON messages) render the same findings.

use std::path::{Path, PathBuf};

use candle_contracts_analysis::{FileId, Function, Index, walk};

use crate::read::Reader;
use crate::report::Located;
use crate::source::Sources;
use crate::workspace::Target;

/// What one run found.
#[derive(Debug)]
pub struct Analysis {
    /// The files read.
    pub sources: Sources,
    /// The index built from them.
    pub index: Index,
    /// The root file of each crate of the index, by its crate number.
    pub crate_roots: Vec<PathBuf>,
    /// Every certain mismatch, sorted, each once.
    pub findings: Vec<Located>,
    /// Files that cannot be read: the message, naming the file.
    pub unreadable: Vec<String>,
    /// Files that do not parse: the message, with the parser's words and place.
    pub unparsable: Vec<String>,
    /// Contracts the CLI does not read (the macro reports why): the message.
    pub unread_contracts: Vec<String>,
    /// How many contracted functions were walked.
    pub checked: usize,
    /// How many functions without a contract (`main`, a data loader) were walked.
    pub glue: usize,
}

impl Analysis {
    /// The root file of the first crate read whose module tree holds `file`: a package's
    /// library before its other targets, which read it too.
    pub fn crate_root(&self, file: FileId) -> Option<&Path> {
        let f = self.index.fns.iter().find(|f| f.file == file)?;
        let module = self.index.modules.get(f.module)?;
        self.crate_roots.get(module.krate).map(PathBuf::as_path)
    }
}

/// Reads `targets` into `sources` (which may hold an editor's unsaved texts) and walks every
/// function: contracted ones with their clauses, the others as glue code.
pub fn analyse(targets: &[Target], mut sources: Sources) -> Analysis {
    let mut reader = Reader::new(&mut sources);
    let index = reader.build(targets);
    let (unreadable, unparsable, crate_roots) =
        (reader.unreadable, reader.unparsable, reader.crate_roots);
    let mut findings = Vec::new();
    let mut unread_contracts = Vec::new();
    let (mut checked, mut glue) = (0, 0);
    let no_clauses = candle_contracts_shapes::Contract::default();
    for f in &index.fns {
        let contract = match &f.contract {
            // `static = false`: the user turned the body's analysis off.
            Some(contract) if contract.analysis_off => continue,
            Some(contract) => match &contract.parsed {
                Some(parsed) => {
                    checked += 1;
                    parsed
                }
                None => {
                    unread_contracts.push(format!(
                        "the contract of `{}` in `{}` is not read (the macro reports why)",
                        f.display,
                        sources.get(f.file).name
                    ));
                    continue;
                }
            },
            // A test that expects a panic (a guard that fires) takes nothing it calls.
            None if f
                .attrs
                .iter()
                .any(|attr| attr.path().is_ident("should_panic")) =>
            {
                continue;
            }
            // Code without a contract (`main`, a data loader): its calls into contracted
            // functions and candle's ops, with what its own body makes certain.
            None => {
                glue += 1;
                &no_clauses
            }
        };
        let function = Function {
            glue: f.contract.is_none(),
            ..Function::of(f, contract)
        };
        let (found, _) = walk(&index, &sources, function);
        findings.extend(found.into_iter().map(|x| Located::new(x, f, &sources)));
    }
    // A file in two crates' module trees is walked twice.
    findings.sort();
    findings.dedup();
    Analysis {
        sources,
        index,
        crate_roots,
        findings,
        unreadable,
        unparsable,
        unread_contracts,
        checked,
        glue,
    }
}
