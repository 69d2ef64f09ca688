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
//! cargo contracts check --message-format=json [PATH] [-- CARGO_CHECK_ARGS]
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
//! # `--message-format json`: cargo's messages, for rust-analyzer
//!
//! `check --message-format json` (`human`, the default, is the report above) speaks cargo's
//! `--message-format=json`, so that rust-analyzer's `check.overrideCommand` can run it in
//! place of `cargo check`: `["cargo", "contracts", "check", "--message-format=json", "--",
//! "--workspace", "--all-targets"]`. It runs `$CARGO check --message-format=json` (`cargo`
//! without `CARGO`) in PATH's directory (a file's own) with the arguments after `--`, which
//! are cargo's only (`-p NAME`, `--workspace`, `--all-targets`, `--features F`, ...: they
//! choose what cargo checks; the analysis reads PATH whatever they say). cargo's lines go to
//! standard output as they come, its progress to standard error. Then each certain mismatch
//! is one `compiler-message` line in rustc's shape, for the package and target whose crate
//! holds its file (from `cargo metadata`): the place as primary span, the origin as a
//! labelled secondary span, a note child, and a help child whose span carries the fix as a
//! `MachineApplicable` suggestion; `rendered` is the text the human report prints. A
//! mismatch the `#[contract]` macro already reported (a rustc error at the same place with
//! the same message) is left out. A file that cannot be read or parsed (an error) and a
//! contract not read (a warning) are `compiler-message`s without spans. The last line is
//! `{"reason":"build-finished","success":..}` (cargo's own is held back), true when cargo
//! succeeded and nothing is wrong. The exit status is 0 then, cargo's where it failed (101
//! for a compile error), 101 where cargo succeeded but a mismatch or an error was found, and
//! 2 for a usage error (arguments after `--` without `json`, an unknown format, a bad PATH).
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
mod cargo;
mod lsp;
mod message;
mod read;
mod report;
mod source;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use codespan_reporting::diagnostic::Severity;
use serde::Serialize;

use candle_contracts_analysis::package;
use candle_contracts_analysis::{Function, Index, Join, walk_with_unchecked};

use crate::analyse::{Analysis, analyse};
use crate::cargo::{Checked, Metadata};
use crate::message::{BuildFinished, CompilerMessage, Diagnostic, Owner};
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
    /// Report every call certain to fail, in a contracted function or into one from code
    /// without a contract (`main`, a data loader) that takes its success: exit 1 if any.
    ///
    /// With `--message-format json`: run `cargo check --message-format=json` in PATH's
    /// directory with the arguments after `--`, forward its lines to standard output, add each
    /// certain mismatch the `#[contract]` macro has not already reported as a
    /// `compiler-message` line, and end with `build-finished`; exit as cargo does (0, or 101
    /// when it or this check fails), so that rust-analyzer's `check.overrideCommand` can run it:
    /// `cargo contracts check --message-format=json -- --workspace --all-targets`.
    Check {
        /// A package (its library, binaries, tests, examples, benches), a workspace (each
        /// member) or a single .rs file; the current package or workspace by default.
        path: Option<PathBuf>,
        /// `human`: rustc-style text on standard error; `json`: cargo check's JSON messages,
        /// with the mismatches among them, on standard output.
        #[arg(long, value_enum, value_name = "FMT", default_value_t = MessageFormat::Human)]
        message_format: MessageFormat,
        /// With `--message-format json`, after `--`: the arguments of `cargo check`
        /// (`--workspace`, `-p NAME`, `--all-targets`, `--features F`, ...).
        #[arg(last = true, value_name = "CARGO_CHECK_ARGS")]
        cargo_args: Vec<std::ffi::OsString>,
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

/// How `check` writes what it finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum MessageFormat {
    /// rustc-style diagnostics on standard error.
    Human,
    /// cargo's `--message-format=json` lines on standard output, `cargo check`'s own first.
    Json,
}

fn main() -> ExitCode {
    // `args_os`: a path that is not UTF-8 is an argument like any other, never a panic.
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `cargo contracts check` runs `cargo-contracts contracts check`.
    if args.get(1).is_some_and(|arg| arg == "contracts") {
        args.remove(1);
    }
    let cli = Cli::parse_from(args);
    // The walk recurses with the code's nesting: a chain of 2,500 calls, which rustc compiles,
    // would overflow the main thread's stack. Only the pages used are committed.
    const STACK: usize = 1 << 30;
    let run = std::thread::Builder::new()
        .name("cargo-contracts".to_string())
        .stack_size(STACK)
        .spawn(move || run(cli.command));
    match run.map(|thread| thread.join()) {
        Ok(Ok(code)) => code,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(error) => {
            eprintln!("error: cannot start the analysis: {error}");
            ExitCode::from(2)
        }
    }
}

/// Runs one command.
fn run(command: Command) -> ExitCode {
    match command {
        Command::Check {
            path,
            message_format: MessageFormat::Human,
            cargo_args,
        } if cargo_args.is_empty() => check(path.as_deref()),
        Command::Check {
            message_format: MessageFormat::Human,
            ..
        } => usage_error(
            "the arguments after `--` are for `cargo check`, which only `--message-format json` runs",
        ),
        Command::Check {
            path,
            message_format: MessageFormat::Json,
            cargo_args,
        } => check_json(path.as_deref(), &cargo_args),
        Command::Shapes { target } => shapes(&target),
        Command::Lsp => lsp::serve(),
    }
}

fn usage_error(text: &str) -> ExitCode {
    eprintln!("error: {text}");
    ExitCode::from(2)
}

fn check(path: Option<&Path>) -> ExitCode {
    let targets = match package::discover(path) {
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

/// `check --message-format json`: `cargo check`'s lines, then each finding and problem as a
/// `compiler-message` line, then `build-finished`. A finding whose error rustc already
/// printed (the `#[contract]` macro's, at the same place with the same message) is left out.
/// Problems that are no findings (a file that cannot be read or parsed, a contract not read)
/// are messages without spans: errors, and a contract not read a warning.
fn check_json(path: Option<&Path>, cargo_args: &[std::ffi::OsString]) -> ExitCode {
    let targets = match package::discover(path) {
        Ok(targets) if targets.is_empty() => return usage_error("no crate to check there"),
        Ok(targets) => targets,
        Err(error) => return usage_error(&error),
    };
    // cargo runs where PATH is (a file's directory), so that it checks that package.
    let given = match path {
        Some(path) => path.canonicalize(),
        None => std::env::current_dir(),
    };
    let given = match given {
        Ok(given) => given,
        Err(error) => return usage_error(&format!("no directory to run cargo in: {error}")),
    };
    let dir = match given.is_file() {
        true => given.parent().unwrap_or(&given).to_path_buf(),
        false => given.clone(),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let metadata = Metadata::read(&cargo, &dir);
    let root = metadata
        .as_ref()
        .map_or_else(|| dir.clone(), |m| m.workspace_root.clone());
    // Canonical as the files read are, so that their names are relative to it.
    let root = root.canonicalize().unwrap_or(root);
    let owner = |crate_root: Option<&Path>, file: &Path| {
        metadata
            .as_ref()
            .and_then(|m| m.owner(crate_root, file))
            .unwrap_or_else(|| Owner::unknown(file))
    };
    let mut out = std::io::stdout().lock();
    let checked = cargo::check(&cargo, &dir, cargo_args, &root, &mut out).unwrap_or_else(|error| {
        eprintln!("error: {error}");
        Checked::default()
    });
    let analysis = analyse(&targets, Sources::named_from(&root));
    let reporter = Reporter::new(&analysis.sources);
    let mut failed = !checked.success;
    for finding in &analysis.findings {
        let source = analysis.sources.get(finding.place.file);
        if checked.errors.iter().any(|error| error.is(finding, source)) {
            continue;
        }
        failed = true;
        let owner = owner(analysis.crate_root(finding.place.file), &source.path);
        let rendered = reporter.rendered(finding);
        let message = Diagnostic::finding(finding, &analysis.sources, rendered);
        write_line(&mut out, &CompilerMessage::new(&owner, message));
    }
    let problems = (analysis.unreadable.iter().chain(&analysis.unparsable))
        .map(|text| (Severity::Error, text))
        .chain(
            analysis
                .unread_contracts
                .iter()
                .map(|text| (Severity::Warning, text)),
        );
    for (severity, text) in problems {
        failed |= severity == Severity::Error;
        let level = match severity {
            Severity::Error => "error",
            _ => "warning",
        };
        let rendered = reporter.rendered_plain(severity, text);
        let message = Diagnostic::problem(level, text, rendered);
        write_line(
            &mut out,
            &CompilerMessage::new(&owner(None, &given), message),
        );
    }
    write_line(&mut out, &BuildFinished::new(!failed));
    match (checked.success, failed) {
        (_, false) => ExitCode::SUCCESS,
        // cargo's own status where it failed (101 for a compile error), else 101 as for one.
        (false, true) => match checked.code.and_then(|code| u8::try_from(code).ok()) {
            Some(code) if code != 0 => ExitCode::from(code),
            _ => ExitCode::from(101),
        },
        (true, true) => ExitCode::from(101),
    }
}

/// Writes `value` as one line of JSON; a closed standard output is no reason to stop.
fn write_line(out: &mut impl Write, value: &impl Serialize) {
    if serde_json::to_writer(&mut *out, value).is_ok() {
        let _ = writeln!(out);
        let _ = out.flush();
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
        .and_then(|dir| package::discover(Some(dir)).ok())
        .unwrap_or_default();
    let mut sources = Sources::default();
    let mut index = Reader::new(&mut sources).build(&targets);
    let in_tree = |index: &Index, sources: &Sources| {
        index.fns.iter().any(|f| sources.get(f.file).path == file)
    };
    if !in_tree(&index, &sources) {
        targets = match package::discover(Some(&file)) {
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
    // One function read twice, a module of both the library and a binary (`mod model;` in
    // `lib.rs` and `main.rs`): the library's, read first.
    let matches = match matches.split_first() {
        Some((first, rest))
            if !rest.is_empty()
                && rest
                    .iter()
                    .all(|&id| index.fns[id].display == index.fns[*first].display) =>
        {
            vec![*first]
        }
        _ => matches,
    };
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
    let (findings, mut hints, unchecked) =
        walk_with_unchecked(&index, &sources, Function::of(f, contract));
    let positive = certain_with_positive_sizes(&index, &sources, f, contract, &findings);
    let better = known_with_positive_sizes(&index, &sources, f, contract, &hints);
    // In the order of the text, as a reader goes (the walk gives a branch's `let`s before
    // the `let` its value goes to).
    hints.sort_by_key(|h| {
        let start = h.site.first.start();
        (start.line, start.column)
    });
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
    for hint in &hints {
        let line = format!(
            "{:>line_width$}  {:<name_width$}  {:<type_width$}  {}",
            hint.site.first.start().line,
            hint.name,
            hint.ty,
            hint.op
        );
        if writeln!(out, "{}", line.trim_end()).is_err() {
            return ExitCode::SUCCESS;
        }
    }
    // What each `?N` stands for: one size or the other, by the branch a run takes (or an
    // activation's variant).
    let mut joins: Vec<&Join> = Vec::new();
    for join in hints.iter().flat_map(|h| &h.joins) {
        if !joins.iter().any(|seen| seen.name == join.name) {
            joins.push(join);
        }
    }
    joins.sort_by_key(|join| join.name[1..].parse::<usize>().unwrap_or(usize::MAX));
    let joins_empty = joins.is_empty();
    if !joins_empty {
        let _ = writeln!(out);
    }
    for Join {
        name,
        first,
        second,
        by,
    } in joins
    {
        let line = format!("{name} is {first} or {second}, by {by}");
        if writeln!(out, "{line}").is_err() {
            return ExitCode::SUCCESS;
        }
    }
    // What a size of an absent cache is.
    let mut absent: Vec<&(String, String)> = Vec::new();
    for size in hints.iter().flat_map(|h| &h.absent) {
        if !absent.contains(&size) {
            absent.push(size);
        }
    }
    absent.sort();
    if !absent.is_empty() && joins_empty {
        let _ = writeln!(out);
    }
    let absent_empty = absent.is_empty();
    for (name, field) in absent {
        if writeln!(out, "{name} is 0 where {field} is None").is_err() {
            return ExitCode::SUCCESS;
        }
    }
    // Where each shape not fully known was lost first.
    let mut whys: Vec<(usize, &str, &str)> = hints
        .iter()
        .filter_map(|h| {
            Some((
                h.site.first.start().line,
                h.name.as_str(),
                h.why.as_deref()?,
            ))
        })
        .collect();
    // A `let` walked twice (a loop's body, a closure) says it once.
    whys.dedup();
    if (!whys.is_empty() || !unchecked.is_empty()) && joins_empty && absent_empty {
        let _ = writeln!(out);
    }
    for (line, name, why) in whys {
        if writeln!(out, "`{name}` (line {line}) is not fully known: {why}").is_err() {
            return ExitCode::SUCCESS;
        }
    }
    // Where the walk reports nothing: the branches the contract does not decide.
    for branch in unchecked {
        let line = branch.site.first.start().line;
        let (what, rest) = branch.what.split_once(": ").unwrap_or((&branch.what, ""));
        let text =
            format!("{what} (line {line}): {rest}; the contract does not decide its condition");
        if writeln!(out, "{text}").is_err() {
            break;
        }
    }
    for (line, sizes, message) in positive {
        let text = format!(
            "`{sizes}` (line {line}) in the contract would make this a compile error: {message}"
        );
        if writeln!(out, "{text}").is_err() {
            break;
        }
    }
    for (line, name, sizes, ty) in better {
        let text = format!("`{sizes}` in the contract would make `{name}` (line {line}) {ty}");
        if writeln!(out, "{text}").is_err() {
            break;
        }
    }
    ExitCode::SUCCESS
}

/// The contract's dims a `>= 1` fact could be stated for: each dim name its clauses use, but
/// those the contract already states at least 1.
fn unbounded_dims(contract: &candle_contracts_shapes::Contract) -> Vec<String> {
    use candle_contracts_shapes::Cmp;
    let mut names: Vec<String> = Vec::new();
    for clause in &contract.clauses {
        let shape = &clause.spec.shape;
        for dim in shape.front().iter().chain(shape.back()) {
            for name in dim.symbols() {
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
            }
        }
    }
    // A dim the contract already states at least 1 needs no hint of it.
    let stated = |name: &str| {
        contract.relations.iter().any(|r| {
            r.lhs.to_string() == name
                && match (r.op, r.rhs.as_literal()) {
                    (Cmp::Ge, Some(n)) => n >= 1,
                    (Cmp::Gt, Some(_)) => true,
                    _ => false,
                }
        })
    };
    names.retain(|name| !stated(name));
    names
}

/// `contract` with `S >= 1` for each of `sizes`.
fn with_positive_sizes(
    contract: &candle_contracts_shapes::Contract,
    sizes: &[&String],
) -> candle_contracts_shapes::Contract {
    use candle_contracts_shapes::{Cmp, Dim, Relation};
    let mut positive = contract.clone();
    for name in sizes {
        positive.relations.push(Relation::new(
            Dim::symbol(name.as_str()),
            Cmp::Ge,
            Dim::lit(1),
        ));
    }
    positive
}

/// Of `names`, the fewest that keep `holds` true: first those `text` names where they are
/// enough, then each dropped where `holds` stays true without it.
fn fewest_sizes<'n>(
    names: &'n [String],
    text: &str,
    holds: impl Fn(&[&String]) -> bool,
) -> Vec<&'n String> {
    let all: Vec<&String> = names.iter().collect();
    let words: std::collections::BTreeSet<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .collect();
    let mut needed: Vec<&String> = names
        .iter()
        .filter(|name| words.contains(name.as_str()))
        .collect();
    if needed.is_empty() || !holds(&needed) {
        needed = all;
    }
    let mut at = 0;
    while needed.len() > 1 && at < needed.len() {
        let mut fewer = needed.clone();
        fewer.remove(at);
        match holds(&fewer) {
            true => needed = fewer,
            false => at += 1,
        }
    }
    needed
}

/// How many sizes of a `let`'s type are not known (`_`, a `..` run, `?`), for comparing two.
fn unknown_sizes(ty: &str) -> usize {
    if ty.trim() == "?" {
        return usize::MAX;
    }
    // `_` alone, not inside a name (`cfg.d_kv`).
    let holes = ty
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| *word == "_")
        .count();
    holes + ty.matches("..").count()
}

/// The `let`s whose shape the walk knows better once the contract also states `S >= 1` for
/// its dims (a kv cache's `T` scores against a mask's `P + T`: with `T >= 1`, `P + T`): by
/// line, with the relations needed, the name and the type it would have (each `?N` in it
/// said in its own terms, as the walk with those facts numbers them). A dim is needed where
/// the `let` loses its better type without it alone; the type shown is the one a walk with
/// just those facts gives (with every dim's fact where that walk is no better). One walk per
/// dim and one per distinct set, however many `let`s.
fn known_with_positive_sizes(
    index: &Index,
    sources: &dyn candle_contracts_analysis::SourceText,
    f: &candle_contracts_analysis::FnDef,
    contract: &candle_contracts_shapes::Contract,
    hints: &[candle_contracts_analysis::LetHint],
) -> Vec<(usize, String, String, String)> {
    use candle_contracts_analysis::LetHint;
    let names = unbounded_dims(contract);
    if names.is_empty() || !hints.iter().any(|h| unknown_sizes(&h.ty) > 0) {
        return Vec::new();
    }
    let walk = |sizes: &[&String]| {
        let positive = with_positive_sizes(contract, sizes);
        walk_with_unchecked(index, sources, Function::of(f, &positive)).1
    };
    let same =
        |a: &LetHint, b: &LetHint| a.name == b.name && a.site.first.start() == b.site.first.start();
    let better_in = |walked: &[LetHint], hint: &LetHint| -> Option<LetHint> {
        walked
            .iter()
            .find(|b| same(b, hint) && unknown_sizes(&b.ty) < unknown_sizes(&hint.ty))
            .cloned()
    };
    let all: Vec<&String> = names.iter().collect();
    let with_all = walk(&all);
    let improved: Vec<&LetHint> = hints
        .iter()
        .filter(|hint| better_in(&with_all, hint).is_some())
        .collect();
    if improved.is_empty() {
        return Vec::new();
    }
    let without_each: Vec<Vec<LetHint>> = all
        .iter()
        .map(|name| {
            let rest: Vec<&String> = all.iter().copied().filter(|n| n != name).collect();
            walk(&rest)
        })
        .collect();
    let mut walked: Vec<(Vec<&String>, Vec<LetHint>)> = vec![(all.clone(), with_all.clone())];
    let mut found: Vec<(usize, String, String, String)> = Vec::new();
    for hint in improved {
        let line = hint.site.first.start().line;
        if found
            .iter()
            .any(|(l, name, _, _)| *l == line && *name == hint.name)
        {
            continue;
        }
        let mut needed: Vec<&String> = all
            .iter()
            .zip(&without_each)
            .filter(|(_, without)| better_in(without, hint).is_none())
            .map(|(name, _)| *name)
            .collect();
        if needed.is_empty() {
            needed = all.clone();
        }
        let position = match walked.iter().position(|(sizes, _)| *sizes == needed) {
            Some(at) => at,
            None => {
                walked.push((needed.clone(), walk(&needed)));
                walked.len() - 1
            }
        };
        let known = match better_in(&walked[position].1, hint) {
            Some(known) => known,
            None => {
                needed = all.clone();
                match better_in(&with_all, hint) {
                    Some(known) => known,
                    None => continue,
                }
            }
        };
        // The type in backticks, then what each `?N` in it stands for.
        let mut ty = format!("`{}`", known.ty);
        if !known.joins.is_empty() {
            let said: Vec<String> = known
                .joins
                .iter()
                .map(|j| format!("{} is {} or {}", j.name, j.first, j.second))
                .collect();
            ty = format!("{ty} ({})", said.join("; "));
        }
        let sizes: Vec<String> = needed.iter().map(|n| format!("{n} >= 1")).collect();
        found.push((line, hint.name.clone(), sizes.join(", "), ty));
    }
    found
}

/// What fails for every size of at least 1 but not for a size of 0 (`E` against `2 * E`):
/// each such mismatch the walk finds once the contract also states `S >= 1` for each of its
/// dims, by line, with the relations it needs (the dims its message names where those are
/// enough, each dropped where the mismatch stays without it) and the message. A dim the
/// contract already states at least 1 is not named.
fn certain_with_positive_sizes(
    index: &Index,
    sources: &dyn candle_contracts_analysis::SourceText,
    f: &candle_contracts_analysis::FnDef,
    contract: &candle_contracts_shapes::Contract,
    found: &[candle_contracts_analysis::Finding],
) -> Vec<(usize, String, String)> {
    let names = unbounded_dims(contract);
    if names.is_empty() {
        return Vec::new();
    }
    let with_sizes = |sizes: &[&String]| with_positive_sizes(contract, sizes);
    let same = |a: &candle_contracts_analysis::Finding, b: &candle_contracts_analysis::Finding| {
        a.message == b.message && a.site.first.start() == b.site.first.start()
    };
    let all: Vec<&String> = names.iter().collect();
    let positive = with_sizes(&all);
    candle_contracts_analysis::walk_for_findings(index, sources, Function::of(f, &positive))
        .into_iter()
        .filter(|finding| !found.iter().any(|f| same(f, finding)))
        .map(|finding| {
            let text = format!("{} {}", finding.message, finding.note);
            let needed = fewest_sizes(&names, &text, |sizes| {
                let contract = with_sizes(sizes);
                candle_contracts_analysis::walk_for_findings(
                    index,
                    sources,
                    Function::of(f, &contract),
                )
                .iter()
                .any(|f| same(f, &finding))
            });
            let sizes: Vec<String> = needed.iter().map(|n| format!("{n} >= 1")).collect();
            // A `?N` is the walk with those facts' own: its note says what each stands for.
            let names_a_join = finding
                .message
                .split('?')
                .skip(1)
                .any(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
            let message = match names_a_join {
                true => format!("{} ({})", finding.message, finding.note),
                false => finding.message,
            };
            (finding.site.first.start().line, sizes.join(", "), message)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::unknown_sizes;

    #[test]
    fn unknown_sizes_count_holes_not_underscores_in_names() {
        assert_eq!(unknown_sizes("f32[B, cfg.num_heads, T, cfg.d_kv]"), 0);
        assert_eq!(unknown_sizes("f32[B, _, T, cfg.d_kv]"), 1);
        assert_eq!(unknown_sizes("_[B, _, _]"), 3);
        assert_eq!(unknown_sizes("f32[.., _]"), 2);
        assert_eq!(unknown_sizes("?"), usize::MAX);
    }
}
