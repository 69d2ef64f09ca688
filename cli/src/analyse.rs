//! One run of the analysis over a set of targets: the files read, the index built from them,
//! and every certain mismatch found, placed in its file. `check` prints it; other front ends
//! (an editor's server, cargo's JSON messages) render the same findings.

use std::path::{Path, PathBuf};

use candle_contracts_analysis::{FileId, FnId, Function, Index, Join, walk};

use crate::read::{Reader, Trees};
use crate::report::Located;
use crate::source::{Place, Sources};
use candle_contracts_analysis::package::Target;

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
    /// The type of every name the `let`s of the contracted functions bind, sorted by place,
    /// each place once.
    pub hints: Vec<Hint>,
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

/// The type inferred for one name a `let` binds, placed in its file (what `shapes` prints).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hint {
    /// The name's token.
    pub place: Place,
    /// The name.
    pub name: String,
    /// Its type (`f32[B, 128]`), `?` where unknown; `= B` or `= _` for an integer, `float` for
    /// a float, `DType::F32` for a dtype.
    pub ty: String,
    /// The op that gave it (`matmul`, `Tensor::zeros`), empty where none stands out.
    pub op: String,
    /// Each `?N` size of `ty` with the two sizes and what picks one (see `LetHint::joins`).
    pub joins: Vec<Join>,
    /// Each size of `ty` that is 0 where an `Option` field is `None`, with the field (see
    /// `LetHint::absent`).
    pub absent: Vec<(String, String)>,
    /// Where `ty` is not fully known, the first place its value lost its shape (see
    /// `LetHint::why`).
    pub why: Option<String>,
    /// The contracted function whose body binds it.
    pub function: FnId,
}

/// Reads `targets` into `sources` (which may hold an editor's unsaved texts) and walks every
/// function: contracted ones with their clauses, the others as glue code.
pub fn analyse(targets: &[Target], sources: Sources) -> Analysis {
    analyse_again(targets, sources, &mut Trees::default())
}

/// [`analyse`], taking the syntax trees of the files whose text has not changed since an
/// earlier run from `trees` (and keeping this run's there).
pub fn analyse_again(targets: &[Target], mut sources: Sources, trees: &mut Trees) -> Analysis {
    let mut reader = Reader::new(&mut sources);
    reader.trees = std::mem::take(trees);
    let index = reader.build(targets);
    *trees = std::mem::take(&mut reader.trees);
    let (unreadable, unparsable, crate_roots) =
        (reader.unreadable, reader.unparsable, reader.crate_roots);
    let mut findings = Vec::new();
    let mut hints = Vec::new();
    let mut unread_contracts = Vec::new();
    let (mut checked, mut glue) = (0, 0);
    let no_clauses = candle_contracts_shapes::Contract::default();
    for (id, f) in index.fns.iter().enumerate() {
        // Under a `cfg` no build enables (`#[cfg(any())]`): rustc never compiles it.
        if f.never_compiled {
            continue;
        }
        let contract = match &f.contract {
            // `static = false`: the user turned the body's analysis off.
            Some(contract) if contract.analysis_off => continue,
            Some(contract) => match &contract.parsed {
                Some(parsed) => {
                    checked += 1;
                    // Said once per type: a struct's contract is each of its methods'.
                    if let Some(warning) = wrapper_accessor(&index, f, parsed) {
                        let owner = f.owner.as_deref().unwrap_or_default();
                        let shown = owner.rsplit("::").next().unwrap_or(owner);
                        let warning = format!(
                            "a contract of `{shown}` in `{}` {warning}",
                            sources.get(f.file).name
                        );
                        if !unread_contracts.contains(&warning) {
                            unread_contracts.push(warning);
                        }
                    }
                    if let Some(name) = unknown_subject(f.sig, parsed) {
                        unread_contracts.push(format!(
                            "the contract of `{}` in `{}` names `{name}`, which is none of its \
                             parameters (the macro rejects it)",
                            f.display,
                            sources.get(f.file).name
                        ));
                    }
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
            None if f.attrs.iter().any(may_be_should_panic) => {
                continue;
            }
            // A helper of tests (in a module under `cfg`, `#[cfg(test)] mod tests`, whose
            // names were all unknown before, or itself under `#[cfg(test)]`) may provoke the
            // failure its test expects (`assert!(two_dim_target().is_err())`): only the tests
            // are checked.
            None if (index.modules[f.module].conditional
                || for_tests_only(f.attrs)
                || index.in_test_crate(f.module))
                && !f.attrs.iter().any(|attr| {
                    attr.path()
                        .segments
                        .last()
                        .is_some_and(|last| last.ident == "test")
                }) =>
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
        let (found, bound) = walk(&index, &sources, function);
        findings.extend(found.into_iter().map(|x| Located::new(x, f, &sources)));
        if f.contract.is_some() {
            let source = sources.get(f.file);
            hints.extend(bound.into_iter().map(|hint| {
                let range = source.site_range(hint.site);
                Hint {
                    place: Place {
                        file: f.file,
                        start: range.start,
                        end: range.end,
                    },
                    name: hint.name,
                    ty: hint.ty,
                    op: hint.op,
                    joins: hint.joins,
                    absent: hint.absent,
                    why: hint.why,
                    function: id,
                }
            }));
        }
    }
    // A file in two crates' module trees is walked twice.
    findings.sort();
    findings.dedup();
    hints.sort_by(|a, b| a.place.cmp(&b.place));
    hints.dedup_by(|later, first| later.place == first.place);
    Analysis {
        sources,
        index,
        crate_roots,
        findings,
        hints,
        unreadable,
        unparsable,
        unread_contracts,
        checked,
        glue,
    }
}

/// Whether `tokens` (an attribute's list, nested groups too) hold the identifier `name`.
fn names(tokens: proc_macro2::TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|tree| match tree {
        proc_macro2::TokenTree::Ident(ident) => ident == name,
        proc_macro2::TokenTree::Group(group) => names(group.stream(), name),
        _ => false,
    })
}

/// Whether the attribute is `#[should_panic]`, or may be one (`#[cfg_attr(not(miri),
/// should_panic)]`).
fn may_be_should_panic(attr: &syn::Attribute) -> bool {
    attr.path().is_ident("should_panic")
        || match &attr.meta {
            syn::Meta::List(list) if attr.path().is_ident("cfg_attr") => {
                names(list.tokens.clone(), "should_panic")
            }
            _ => false,
        }
}

/// Whether a `#[cfg(..)]` among `attrs` names `test` (`#[cfg(test)]`, `#[cfg(all(test, ..))]`).
fn for_tests_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| match &attr.meta {
        syn::Meta::List(list) if attr.path().is_ident("cfg") => names(list.tokens.clone(), "test"),
        _ => false,
    })
}

/// The first root of a clause of `contract` that names no parameter of `sig` (nor `self` nor
/// `return`), where every parameter is a plain name: a contract the macro rejects, which the
/// check would otherwise pass over in silence.
fn unknown_subject(
    sig: &syn::Signature,
    contract: &candle_contracts_shapes::Contract,
) -> Option<String> {
    let mut params = vec!["self".to_string(), "return".to_string()];
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(_) => {}
            syn::FnArg::Typed(typed) => match &*typed.pat {
                syn::Pat::Ident(ident) => {
                    params.push(syn::ext::IdentExt::unraw(&ident.ident).to_string())
                }
                _ => return None,
            },
        }
    }
    contract
        .clauses
        .iter()
        .chain(&contract.sequences)
        .map(|clause| {
            let subject: String = clause.subject.split_whitespace().collect();
            subject
                .split(['.', '(', '[', '?'])
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .find(|root| !params.contains(root))
}

/// Where a clause reads `self.field.weight()` or `.embeddings()` (a layer clause, or one
/// written so) of a field whose type is the crate's own and has no such method (with_tracing's
/// `Linear` wraps candle-nn's in `inner`): what to say, since the macro's guard cannot call it
/// (rustc's "no method named `weight`", at the `#[contract]` of the `impl`).
fn wrapper_accessor(
    index: &Index,
    f: &candle_contracts_analysis::FnDef,
    contract: &candle_contracts_shapes::Contract,
) -> Option<String> {
    let key = f.owner.as_deref()?;
    let (module, item) = index.struct_item(key)?;
    contract.clauses.iter().find_map(|clause| {
        let subject: String = clause.subject.split_whitespace().collect();
        let ["self", field, accessor @ ("weight()" | "embeddings()")] =
            subject.split('.').collect::<Vec<_>>()[..]
        else {
            return None;
        };
        let method = accessor.trim_end_matches("()");
        let declared = item.fields.iter().find(|candidate| {
            candidate
                .ident
                .as_ref()
                .is_some_and(|ident| syn::ext::IdentExt::unraw(ident) == field)
        })?;
        let syn::Type::Path(path) = &declared.ty else {
            return None;
        };
        let segments: Vec<String> = path
            .path
            .segments
            .iter()
            .map(|segment| syn::ext::IdentExt::unraw(&segment.ident).to_string())
            .collect();
        let candidate_types = match index.resolve(module, &segments) {
            candle_contracts_analysis::Resolved::Type(found) => found,
            _ => return None,
        };
        let has = |name: &str| index.may_have_method(&candidate_types, name);
        let generic = index
            .struct_item(&candidate_types)
            .is_none_or(|(_, wrapper)| !wrapper.generics.params.is_empty());
        if path.qself.is_some()
            || generic
            || index.is_alias(&candidate_types)
            || has(method)
            || has("deref")
        {
            return None;
        }
        let shown = segments.last()?;
        Some(format!(
            "reads `self.{field}.{method}()`, but `{field}` is the crate's own `{shown}`, which \
             has no `{method}()`: the macro's guard cannot call it (rustc's \"no method named \
             `{method}`\"); state the candle-nn layer it holds (`{field}.inner: ..`, as \
             with_tracing's wrappers hold theirs), or put a contract on its `forward`"
        ))
    })
}
