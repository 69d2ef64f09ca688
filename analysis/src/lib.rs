//! The compile-time analysis of contracted candle code, shared by the `#[contract]` macro and
//! the `cargo contracts` CLI: one walk over a function's body ([`walk`](fn@walk)) with the
//! engine of `candle-contracts-shapes`, over an [`Index`] of what the caller can see.
//!
//! What differs between the two is only what is indexed: the CLI reads every crate of a
//! workspace from disk; the macro reads the crate it expands in the same way ([`package`]), or,
//! where that crate cannot be read, the one source file it stands in (or its item alone). Names resolve the same way in both, and the findings are data
//! ([`Finding`]) that each renders in its own way with the same words.
//!
//! Soundness: a value is known only where it is certain; anything the walk does not model is
//! unknown, and nothing unknown is ever reported.

pub mod construct;
pub mod contract;
mod finding;
pub mod index;
pub mod package;
mod walk;

pub use finding::{Finding, Join, LetHint, Origin, Site, Unchecked};
pub use index::{ContractText, FileId, Files, FnDef, FnId, Index, ModId, Resolved};
pub use walk::{Function, SourceText, walk, walk_for_findings, walk_with_unchecked};

#[cfg(test)]
mod layering {
    /// The modules from the bottom up: each uses only modules listed before it.
    const LAYERS: &[(&str, &str)] = &[
        ("contract::syntax", include_str!("contract/syntax.rs")),
        ("contract::suggest", include_str!("contract/suggest.rs")),
        ("contract::ctxt", include_str!("contract/ctxt.rs")),
        ("contract::parse", include_str!("contract/parse.rs")),
        ("contract::lower", include_str!("contract/lower.rs")),
        ("contract", include_str!("contract/mod.rs")),
        ("finding", include_str!("finding.rs")),
        ("index", include_str!("index.rs")),
        ("package", include_str!("package.rs")),
        ("construct", include_str!("construct.rs")),
        ("walk", include_str!("walk.rs")),
    ];

    /// The modules a source names through `crate::` (or, inside `contract/`, `super::`),
    /// outside comments.
    fn used(module: &str, source: &str) -> Vec<String> {
        let mut used = Vec::new();
        for line in source.lines() {
            let code = line.split("//").next().unwrap_or_default();
            for (prefix, parent) in [("crate::", ""), ("super::", "contract::")] {
                if prefix == "super::" && !module.starts_with("contract::") {
                    continue;
                }
                for (at, _) in code.match_indices(prefix) {
                    let rest = &code[at + prefix.len()..];
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                        .collect();
                    let mut segments = name.split("::").filter(|s| !s.is_empty());
                    let Some(first) = segments.next() else {
                        continue;
                    };
                    let full = match (first, segments.next()) {
                        ("contract", Some(second))
                            if LAYERS
                                .iter()
                                .any(|(n, _)| *n == format!("contract::{second}")) =>
                        {
                            format!("contract::{second}")
                        }
                        (first, _) => format!("{parent}{first}"),
                    };
                    used.push(full);
                }
            }
        }
        used
    }

    #[test]
    fn imports_run_one_way() {
        let rank = |module: &str| LAYERS.iter().position(|(name, _)| *name == module);
        let mut checked = 0;
        for (position, (module, source)) in LAYERS.iter().enumerate() {
            for used in used(module, source) {
                // `super::*` in a test module, a type's own module path.
                let Some(used_rank) = rank(&used) else {
                    continue;
                };
                assert!(
                    used_rank <= position,
                    "`{module}` uses `crate::{used}`, which is not below it"
                );
                checked += 1;
            }
        }
        assert!(checked >= 8, "{checked} uses read");
    }

    #[test]
    fn uses_are_read_through_crate_and_super_paths() {
        assert_eq!(
            used(
                "contract::ctxt",
                "use super::syntax::SpanRange; // crate::walk"
            ),
            ["contract::syntax"]
        );
        assert_eq!(
            used(
                "index",
                "match crate::contract::read(&t) { crate::walk::x }"
            ),
            ["contract", "walk"]
        );
    }
}
