//! `cargo contracts`: the shapes and dtypes of a crate's contracted candle functions, checked
//! before anything runs, with the analysis the `#[contract]` macro runs
//! (`candle-contracts-analysis`), over the whole crate instead of one file: `read` builds its
//! index from the crate's files, `report` prints its findings.
//!
//! Every function with a `#[contract(...)]` is read (free functions, methods in `impl`
//! blocks, in inline and file modules): its parameters start with their clauses' types, and
//! its body is walked through `let`s, shadowing, `?`, `&`, `.clone()`, blocks, branches
//! (joined) and loops and closures (what they may change is forgotten), with the transfer
//! rules of `candle-contracts-shapes` for candle's `Tensor` methods, candle-nn's functions and
//! `candle_contracts::nn`, and the contracts of the crate's own functions it calls (resolved
//! by path across modules and `use`s, methods by the receiver's declared type). A call that
//! is certain to fail at run time is printed as an error with its source; anything the
//! walk does not know is unknown and never reported.
//!
//! ```text
//! cargo install --path cli                 # once; then, in a crate or workspace:
//! cargo contracts check [PATH]             # PATH: a package, a workspace or a .rs file
//! cargo contracts shapes src/model.rs:forward
//! cargo contracts lsp                      # a language server, started by the editor
//! cargo run -p candle-contracts-cli -- check examples
//! ```
//!
//! `check` exits with 0 when nothing is certainly wrong, 1 when something is or a file does not
//! parse (its name and the parser's message are printed), and 2 when a path cannot be read, or
//! read as UTF-8 text. A single `.rs` file outside any package is read with candle's crates
//! under their usual names (`candle` or `candle_core`, `candle_nn`, `candle_contracts`). `shapes FILE:FUNCTION` prints the type inferred for every name a
//! `let` binds in that function (`12  h  f32[B, 128]`; `?` where unknown), as inlay hints do.
//! `lsp` serves an editor over stdin and stdout, beside rust-analyzer, on its unsaved texts:
//! `check`'s findings as diagnostics with quick fixes, the tensors' types as inlay hints and on
//! hover (see the book's chapter "In the editor").
//!
//! # What is resolved, and what is left unknown
//!
//! Paths resolve through the module tree (`crate::`, `super::`, `self::`, file and inline
//! modules, `#[path]`), `use`s (groups, renames, re-exports, globs of the crate's modules and
//! of one other crate), a body's own `use`s and items, renamed dependencies
//! (`candle = { package = "candle-core" }`) and the package's library from its other
//! targets. Methods resolve by the receiver's declared type: `self` in an `impl`, a
//! parameter typed `&Model`, a field of a struct of the crate, a struct literal, a function
//! returning `Self`; `Self::f(self, ..)` and `Model::f(&m, ..)` too. A callee's clauses on
//! `self.*` are checked against the caller's clauses on the receiver. `Embedding::forward`
//! of `candle_contracts::nn` and of candle-nn resolve by the receiver's type.
//!
//! Unknown (and so never reported): what a call the rules and the crate's contracts do not
//! know returns; methods on anything not known to be a `Tensor`; a name defined twice (once
//! per `cfg`), or that a macro among the items or statements may define; values a loop, a
//! closure, an async block, a `&mut` or a macro may change; fields behind `&mut self` or
//! through a cell or a lock; `.await`; labeled blocks; sequence and tuple clauses.

mod analyse;
mod lsp;
mod read;
mod report;
mod source;
mod workspace;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use candle_contracts_analysis::{Function, Index, walk};

use crate::analyse::{Analysis, analyse};
use crate::read::Reader;
use crate::report::Reporter;
use crate::source::Sources;

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "cargo-contracts",
    bin_name = "cargo contracts",
    version,
    about = "Checks the shapes and dtypes of a crate's contracted candle functions before anything runs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What to do.
#[derive(Debug, Subcommand)]
enum Command {
    /// Report every call in a contracted function that is certain to fail: exit 1 if any.
    Check {
        /// A package (its library, binaries, tests, examples, benches), a workspace (each
        /// member) or a single .rs file; the current package or workspace by default.
        path: Option<PathBuf>,
    },
    /// Print the type inferred for each `let` of a function.
    Shapes {
        /// The file and the function: `src/model.rs:forward` (or `src/model.rs:Model::forward`).
        target: String,
    },
    /// Serve an editor over stdin and stdout (a language server beside rust-analyzer): the
    /// certain mismatches as diagnostics with quick fixes, tensors' types as inlay hints and
    /// on hover, on the editor's unsaved texts.
    Lsp,
}

fn main() -> ExitCode {
    // `args_os`: a path that is not UTF-8 is an argument like any other, never a panic.
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `cargo contracts check` runs `cargo-contracts contracts check`.
    if args.get(1).is_some_and(|arg| arg == "contracts") {
        args.remove(1);
    }
    let cli = Cli::parse_from(args);
    match cli.command {
        Command::Check { path } => check(path.as_deref()),
        Command::Shapes { target } => shapes(&target),
        Command::Lsp => lsp::serve(),
    }
}

fn usage_error(text: &str) -> ExitCode {
    eprintln!("error: {text}");
    ExitCode::from(2)
}

fn check(path: Option<&Path>) -> ExitCode {
    let targets = match workspace::discover(path) {
        Ok(targets) if targets.is_empty() => return usage_error("no crate to check there"),
        Ok(targets) => targets,
        Err(error) => return usage_error(&error),
    };
    let Analysis {
        sources,
        findings,
        unreadable,
        unparsable,
        unread_contracts,
        checked,
        glue,
        ..
    } = analyse(&targets, Sources::default());
    let mut reporter = Reporter::new(&sources);
    // A file that cannot be read is a usage error; one that does not parse, an error of the
    // crate: either way nothing about it is certain, so no "no certain mismatch".
    for problem in &unreadable {
        reporter.plain_error(problem);
    }
    for problem in &unparsable {
        reporter.plain_error(problem);
    }
    for problem in &unread_contracts {
        reporter.warning(problem);
    }
    for finding in &findings {
        reporter.error(finding);
    }
    let files = sources.iter().count();
    let others = match glue {
        0 => String::new(),
        n => format!(" and {n} without a contract"),
    };
    let scope = format!(
        "{}{others} in {}",
        counted(checked, "contracted function"),
        counted(files, "file")
    );
    if !unreadable.is_empty() {
        return ExitCode::from(2);
    }
    if !unparsable.is_empty() {
        let n = unparsable.len();
        let mismatches = match findings.len() {
            1 => "1 certain mismatch".to_string(),
            n => format!("{n} certain mismatches"),
        };
        let files = if n == 1 {
            "1 file does".to_string()
        } else {
            format!("{n} files do")
        };
        eprintln!("error: {files} not parse; {mismatches} found in {scope}");
        return ExitCode::from(1);
    }
    match findings.len() {
        0 => {
            eprintln!("checked {scope}: no certain mismatch");
            ExitCode::SUCCESS
        }
        n => {
            let plural = if n == 1 { "" } else { "es" };
            eprintln!("error: {n} certain mismatch{plural} in {scope}");
            ExitCode::from(1)
        }
    }
}

/// `1 file`, `2 files`.
fn counted(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn shapes(target: &str) -> ExitCode {
    let Some((file, function)) = target.split_once(':') else {
        return usage_error("expected FILE:FUNCTION, such as `src/model.rs:forward`");
    };
    let file = match Path::new(file).canonicalize() {
        Ok(file) => file,
        Err(error) => return usage_error(&format!("cannot read `{file}`: {error}")),
    };
    // The package the file belongs to, so that calls resolve as they do in `check`.
    let package = file
        .ancestors()
        .skip(1)
        .find(|dir| dir.join("Cargo.toml").is_file());
    let mut targets = package
        .and_then(|dir| workspace::discover(Some(dir)).ok())
        .unwrap_or_default();
    let mut sources = Sources::default();
    let mut index = Reader::new(&mut sources).build(&targets);
    let in_tree = |index: &Index, sources: &Sources| {
        index.fns.iter().any(|f| sources.get(f.file).path == file)
    };
    if !in_tree(&index, &sources) {
        targets = match workspace::discover(Some(&file)) {
            Ok(targets) => targets,
            Err(error) => return usage_error(&error),
        };
        sources = Sources::default();
        index = Reader::new(&mut sources).build(&targets);
    }
    let matches: Vec<usize> = index
        .fns
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            sources.get(f.file).path == file
                && (f.name == function
                    || f.display == function
                    || f.display.ends_with(&format!("::{function}")))
        })
        .map(|(id, _)| id)
        .collect();
    // `forward` is the free function when there is one, before `Other::forward`.
    let exact: Vec<usize> = matches
        .iter()
        .copied()
        .filter(|&id| index.fns[id].display == function)
        .collect();
    let matches = if exact.len() == 1 { exact } else { matches };
    let id = match matches.as_slice() {
        [id] => *id,
        [] => return usage_error(&format!("no function `{function}` in `{}`", file.display())),
        several => {
            let names: Vec<&str> = several
                .iter()
                .map(|&id| index.fns[id].display.as_str())
                .collect();
            return usage_error(&format!(
                "`{function}` names {} functions there ({}); write `Type::{function}`",
                several.len(),
                names.join(", ")
            ));
        }
    };
    let f = &index.fns[id];
    let no_clauses = candle_contracts_shapes::Contract::default();
    let contract = match &f.contract {
        Some(contract) => contract.parsed.as_ref(),
        None => Some(&no_clauses),
    };
    let Some(contract) = contract else {
        return ExitCode::SUCCESS;
    };
    let (_, hints) = walk(&index, &sources, Function::of(f, contract));
    let line_width = hints
        .iter()
        .map(|h| h.site.first.start().line.to_string().len())
        .max()
        .unwrap_or(1);
    let name_width = hints.iter().map(|h| h.name.len()).max().unwrap_or(1);
    let type_width = hints
        .iter()
        .map(|h| h.ty.chars().count())
        .max()
        .unwrap_or(1);
    // A closed pipe (`shapes .. | head`) ends the listing, never a panic.
    let mut out = std::io::stdout().lock();
    for hint in hints {
        let line = format!(
            "{:>line_width$}  {:<name_width$}  {:<type_width$}  {}",
            hint.site.first.start().line,
            hint.name,
            hint.ty,
            hint.op
        );
        if writeln!(out, "{}", line.trim_end()).is_err() {
            break;
        }
    }
    ExitCode::SUCCESS
}
