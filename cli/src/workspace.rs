//! What to check: the crates (library, binaries, tests, examples, benches) of the Cargo
//! packages at a path, found as cargo finds them, or one `.rs` file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use candle_contracts_analysis::index::usual_externs;

/// One crate to read: a target of a package, or a lone file.
#[derive(Clone, Debug)]
pub struct Target {
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
        return Ok(vec![Target {
            root: given,
            externs,
            lib_name: None,
            is_lib: false,
            root_known: false,
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
    for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
        let Some(deps) = table.get(section).and_then(|d| d.as_table()) else {
            continue;
        };
        for (key, value) in deps {
            let real = value.get("package").and_then(|p| p.as_str()).unwrap_or(key);
            names.insert(key.replace('-', "_"), real.replace('-', "_"));
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
    let mut roots = Vec::new();
    if lib_name.is_some() {
        roots.push(lib_root.clone());
    }
    roots.push(dir.join("src/main.rs"));
    for folder in ["src/bin", "tests", "examples", "benches"] {
        for entry in sorted_entries(&dir.join(folder)) {
            if entry.is_dir() {
                roots.push(entry.join("main.rs"));
            } else if entry.extension().is_some_and(|ext| ext == "rs") {
                roots.push(entry);
            }
        }
    }
    for kind in ["bin", "test", "example", "bench"] {
        let entries = table.get(kind).and_then(|t| t.as_array());
        for entry in entries.into_iter().flatten() {
            if let Some(path) = entry.get("path").and_then(|p| p.as_str()) {
                roots.push(dir.join(path));
            }
        }
    }
    let mut targets: Vec<Target> = Vec::new();
    for root in roots {
        let Ok(root) = root.canonicalize() else {
            continue;
        };
        if !root.is_file() || targets.iter().any(|t| t.root == root) {
            continue;
        }
        let is_lib = lib_root.canonicalize().is_ok_and(|lib| lib == root);
        targets.push(Target {
            root,
            externs: externs.clone(),
            lib_name: lib_name.clone(),
            is_lib,
            root_known: true,
        });
    }
    targets
}
