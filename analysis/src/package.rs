//! What to read: the crates (library, binaries, tests, examples, benches) of the Cargo
//! packages at a path, found as cargo finds them, or one `.rs` file; and those crates read
//! into an [`Index`]. The CLI reads every crate of a workspace; the macro reads the crate it
//! expands in (cargo names it in `CARGO_CRATE_NAME`), with its package's library.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::index::{Files, Index, usual_externs};

/// One crate to read: a target of a package, or a lone file.
#[derive(Clone, Debug)]
pub struct Target {
    /// The crate's name, as cargo gives it to the compiler (`e2e` for `tests/e2e/main.rs`,
    /// the package's for `src/main.rs`, `-` as `_`).
    pub name: String,
    /// The crate's root file (`src/lib.rs`, `tests/e2e/main.rs`).
    pub root: PathBuf,
    /// The crates its paths may start with, by the name the code uses (`candle`), and the
    /// crate that name is (`candle_core`, from `package = "candle-core"` in Cargo.toml).
    pub externs: BTreeMap<String, String>,
    /// The name of the package's library crate, which the package's other targets use.
    pub lib_name: Option<String>,
    /// Whether this target is that library.
    pub is_lib: bool,
    /// Whether `root` is the crate's root: `false` for a lone file that is no target of its
    /// package (a module of some crate, read as the macro reads its own file).
    pub root_known: bool,
    /// Whether it is an integration test (`tests/*.rs`, a `[[test]]` entry): its functions
    /// other than `#[test]`s are the tests' helpers.
    pub is_test: bool,
    /// For the library: whether no Rust crate can call its functions (`crate-type` of
    /// `cdylib`, `staticlib` or `proc-macro` only).
    pub closed: bool,
}

/// The crates at `path` (the current directory's package or workspace when `None`).
pub fn discover(path: Option<&Path>) -> Result<Vec<Target>, String> {
    let given = match path {
        Some(path) => path.to_path_buf(),
        None => {
            std::env::current_dir().map_err(|error| format!("no current directory: {error}"))?
        }
    };
    let given = given
        .canonicalize()
        .map_err(|error| format!("cannot read `{}`: {error}", given.display()))?;
    if given.is_file() {
        if given.extension().is_none_or(|ext| ext != "rs") {
            return Err(format!(
                "`{}` is not a .rs file, a package or a workspace",
                given.display()
            ));
        }
        let manifest = given.ancestors().skip(1).find_map(manifest_in);
        // A file outside any package is read as if candle's crates were its dependencies,
        // under their usual names, so that it gets the same rules as in a package.
        // A package's own dependencies win; a virtual workspace's manifest is no package.
        let mut externs = usual_externs();
        if let Some((dir, table)) = manifest.as_ref().filter(|(_, t)| t.contains_key("package")) {
            externs.extend(externs_of(table));
            // One of the package's targets: a crate root, read as such.
            if let Some(target) = package_targets(dir, table)
                .into_iter()
                .find(|t| t.root.canonicalize().ok().as_ref() == Some(&given))
            {
                return Ok(vec![target]);
            }
        }
        let name = file_stem(&given);
        return Ok(vec![Target {
            name,
            root: given,
            externs,
            lib_name: None,
            is_lib: false,
            root_known: false,
            is_test: false,
            closed: false,
        }]);
    }
    let found = match path {
        Some(_) => manifest_in(&given),
        None => given.ancestors().find_map(manifest_in),
    };
    let Some((dir, table)) = found else {
        return Err(format!(
            "no Cargo.toml in `{}` (give a package, a workspace or a .rs file)",
            given.display()
        ));
    };
    let mut targets = Vec::new();
    if table.contains_key("package") {
        targets.extend(package_targets(&dir, &table));
    }
    if let Some(members) = table
        .get("workspace")
        .and_then(|w| w.get("members"))
        .and_then(|m| m.as_array())
    {
        for member in members.iter().filter_map(|m| m.as_str()) {
            for member_dir in expand_member(&dir, member) {
                if member_dir == dir {
                    continue;
                }
                if let Some((member_dir, member_table)) = manifest_in(&member_dir) {
                    targets.extend(package_targets(&member_dir, &member_table));
                }
            }
        }
    }
    Ok(targets)
}

/// The directory and parsed manifest when `dir` has a readable Cargo.toml.
fn manifest_in(dir: &Path) -> Option<(PathBuf, toml::Table)> {
    let text = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
    let table = text.parse::<toml::Table>().ok()?;
    Some((dir.to_path_buf(), table))
}

/// A workspace member, with a trailing `*` (`crates/*`) listing the directories it covers.
fn expand_member(root: &Path, member: &str) -> Vec<PathBuf> {
    match member.strip_suffix("/*") {
        Some(parent) => sorted_entries(&root.join(parent))
            .into_iter()
            .filter(|path| path.is_dir())
            .collect(),
        None => vec![root.join(member)],
    }
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    entries
}

/// The crate names a package's code may use, from its dependency tables.
fn externs_of(table: &toml::Table) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    // The package's own tables, and each `[target.'cfg(..)'.*]`'s.
    let targets = table.get("target").and_then(|t| t.as_table());
    let tables = std::iter::once(table).chain(
        targets
            .into_iter()
            .flat_map(|targets| targets.values().filter_map(|t| t.as_table())),
    );
    for table in tables {
        for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
            let Some(deps) = table.get(section).and_then(|d| d.as_table()) else {
                continue;
            };
            for (key, value) in deps {
                let real = value.get("package").and_then(|p| p.as_str()).unwrap_or(key);
                names.insert(key.replace('-', "_"), real.replace('-', "_"));
            }
        }
    }
    names
}

/// The targets of the package in `dir`, as cargo discovers them (plus explicit `path`s).
fn package_targets(dir: &Path, table: &toml::Table) -> Vec<Target> {
    let package = table
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .unwrap_or("")
        .replace('-', "_");
    let mut externs = externs_of(table);
    let lib_root = table
        .get("lib")
        .and_then(|lib| lib.get("path"))
        .and_then(|p| p.as_str())
        .map(|p| dir.join(p))
        .unwrap_or_else(|| dir.join("src/lib.rs"));
    let lib_name = lib_root.is_file().then(|| {
        table
            .get("lib")
            .and_then(|lib| lib.get("name"))
            .and_then(|n| n.as_str())
            .map_or_else(|| package.clone(), |n| n.replace('-', "_"))
    });
    if let Some(name) = &lib_name {
        externs.insert(name.clone(), name.clone());
    }
    // Each root with its crate's name; an explicit entry names its crate, wherever cargo
    // would have found its root anyway.
    let mut roots: Vec<(PathBuf, String)> = Vec::new();
    if let Some(name) = &lib_name {
        roots.push((lib_root.clone(), name.clone()));
    }
    roots.push((dir.join("src/main.rs"), package.clone()));
    // The roots of integration tests, by their path.
    let mut tests: Vec<PathBuf> = Vec::new();
    for folder in ["src/bin", "tests", "examples", "benches"] {
        for entry in sorted_entries(&dir.join(folder)) {
            let root = if entry.is_dir() {
                entry.join("main.rs")
            } else if entry.extension().is_some_and(|ext| ext == "rs") {
                entry.clone()
            } else {
                continue;
            };
            if folder == "tests" {
                tests.extend(root.canonicalize().ok());
            }
            roots.push((root, file_stem(&entry)));
        }
    }
    let mut named: Vec<(PathBuf, String)> = Vec::new();
    for kind in ["bin", "test", "example", "bench"] {
        let entries = table.get(kind).and_then(|t| t.as_array());
        for entry in entries.into_iter().flatten() {
            if let Some(path) = entry.get("path").and_then(|p| p.as_str()) {
                let path = dir.join(path);
                let name = entry
                    .get("name")
                    .and_then(|n| n.as_str())
                    .map_or_else(|| file_stem(&path), |n| n.replace('-', "_"));
                roots.push((path.clone(), name.clone()));
                if kind == "test" {
                    tests.extend(path.canonicalize().ok());
                }
                named.extend(path.canonicalize().ok().map(|path| (path, name)));
            }
        }
    }
    // A library other Rust crates cannot link: its `pub` functions have no caller out of sight.
    let lib = table.get("lib");
    let closed = lib
        .and_then(|lib| lib.get("proc-macro"))
        .and_then(|p| p.as_bool())
        == Some(true)
        || lib
            .and_then(|lib| lib.get("crate-type").or_else(|| lib.get("crate_type")))
            .and_then(|t| t.as_array())
            .is_some_and(|types| {
                !types
                    .iter()
                    .any(|t| matches!(t.as_str(), Some("lib" | "rlib" | "dylib")))
            });
    let mut targets: Vec<Target> = Vec::new();
    for (root, name) in roots {
        let Ok(root) = root.canonicalize() else {
            continue;
        };
        if !root.is_file() || targets.iter().any(|t| t.root == root) {
            continue;
        }
        let is_lib = lib_root.canonicalize().is_ok_and(|lib| lib == root);
        let name = match named.iter().find(|(path, _)| *path == root) {
            Some((_, given)) if !is_lib => given.clone(),
            _ => name,
        };
        let is_test = !is_lib && tests.contains(&root);
        targets.push(Target {
            name,
            root,
            externs: externs.clone(),
            lib_name: lib_name.clone(),
            is_lib,
            root_known: true,
            is_test,
            closed: is_lib && closed,
        });
    }
    targets
}

/// A crate's name from its root's file or folder name (`tests/e2e` → `e2e`), `-` as `_`.
fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|stem| stem.to_string_lossy().replace('-', "_"))
        .unwrap_or_default()
}

/// The crate `crate_name` of the package in `manifest_dir` (as cargo sets `CARGO_MANIFEST_DIR`
/// and `CARGO_CRATE_NAME` for the compiler), after its package's library where it is another
/// target (which may use the library). `binary`: whether cargo compiles a binary or an example
/// (it sets `CARGO_BIN_NAME`), which tells a binary from the library of the same name (a
/// package `model` with `src/lib.rs` and `src/main.rs`). Where several targets have that
/// name (a test named like the library, which cargo also compiles without `CARGO_BIN_NAME`),
/// `alternative` picks one, the likeliest first: the caller tries each until one holds its
/// file. Empty where no target (or no such alternative) has that name.
pub fn crate_targets(
    manifest_dir: &Path,
    crate_name: &str,
    binary: bool,
    alternative: usize,
) -> Vec<Target> {
    let Some((dir, table)) = manifest_in(manifest_dir).filter(|(_, t)| t.contains_key("package"))
    else {
        return Vec::new();
    };
    let targets = package_targets(&dir, &table);
    let mut named: Vec<&Target> = targets.iter().filter(|t| t.name == crate_name).collect();
    // A binary's name where cargo says a binary (or an example) is compiled, the library
    // otherwise; then the other targets of the name.
    named.sort_by_key(|t| t.is_lib == binary);
    let Some(&target) = named.get(alternative) else {
        return Vec::new();
    };
    let mut read: Vec<Target> = targets
        .iter()
        .filter(|t| t.is_lib && !target.is_lib)
        .cloned()
        .collect();
    read.push(target.clone());
    read
}

/// Reads the crates of `targets` through `files`, each root's `mod` declarations followed,
/// libraries first so that the other targets of their package can name them; with the root
/// of each crate read, in the index's order (its crate numbers: the last target read, a
/// non-library where there is one, is the last crate).
pub fn read_targets(targets: &[Target], files: &mut dyn Files) -> (Index, Vec<PathBuf>) {
    let mut index = Index::default();
    let mut roots = Vec::new();
    let mut order: Vec<&Target> = targets.iter().filter(|t| t.is_lib).collect();
    order.extend(targets.iter().filter(|t| !t.is_lib));
    for target in order {
        let Some(root) = files.load(&target.root) else {
            continue;
        };
        roots.push(target.root.clone());
        match target.root_known {
            true => {
                index.add_crate(
                    root,
                    target.externs.clone(),
                    target.lib_name.clone(),
                    target.is_lib,
                    files,
                );
                if target.is_test {
                    index.mark_test_crate();
                }
                if target.closed {
                    index.mark_closed_crate();
                }
            }
            // A lone file that is no target of its package: a module of some crate.
            false => index.add_file(root, target.externs.clone(), files),
        }
    }
    index.finish();
    (index, roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_named_as_cargo_names_their_crates() {
        let dir = std::env::temp_dir().join(format!("cc-package-names-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for path in [
            "src/lib.rs",
            "src/main.rs",
            "src/bin/fine-tune.rs",
            "tests/e2e/main.rs",
            "tests/smoke.rs",
            "examples/demo.rs",
        ] {
            std::fs::create_dir_all(dir.join(path).parent().unwrap()).unwrap();
            std::fs::write(dir.join(path), "").unwrap();
        }
        std::fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"my-model\"\n\n[lib]\nname = \"model_lib\"\n\n\
             [[test]]\nname = \"smoke-named\"\npath = \"tests/smoke.rs\"\n",
        )
        .unwrap();
        let names = |name: &str| -> Vec<(String, bool)> {
            crate_targets(&dir, name, false, 0)
                .into_iter()
                .map(|t| (t.name, t.is_lib))
                .collect()
        };
        let lib = ("model_lib".to_string(), true);
        assert_eq!(names("model_lib"), std::slice::from_ref(&lib));
        for crate_name in ["my_model", "fine_tune", "e2e", "smoke_named", "demo"] {
            assert_eq!(
                names(crate_name),
                [lib.clone(), (crate_name.to_string(), false)]
            );
        }
        // The root cargo names by its explicit entry, not its file's name.
        assert!(names("smoke").is_empty());
        // A binary of the library's name: the library, or the binary where cargo says so.
        std::fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"my-model\"\n\n[[bin]]\nname = \"my-model\"\npath = \"src/main.rs\"\n",
        )
        .unwrap();
        let read = |binary: bool| -> Vec<(String, bool)> {
            crate_targets(&dir, "my_model", binary, 0)
                .into_iter()
                .map(|t| (t.name, t.is_lib))
                .collect()
        };
        let lib = ("my_model".to_string(), true);
        assert_eq!(read(false), std::slice::from_ref(&lib));
        assert_eq!(read(true), [lib.clone(), ("my_model".to_string(), false)]);
        // The other target of the name is the second alternative, a third there is not.
        let second = |binary: bool, alternative: usize| -> Vec<(String, bool)> {
            crate_targets(&dir, "my_model", binary, alternative)
                .into_iter()
                .map(|t| (t.name, t.is_lib))
                .collect()
        };
        assert_eq!(
            second(false, 1),
            [lib.clone(), ("my_model".to_string(), false)]
        );
        assert_eq!(second(true, 1), std::slice::from_ref(&lib));
        assert!(second(false, 2).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
