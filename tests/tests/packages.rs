//! The published packages carry what crates.io shows and what the license asks for: their own
//! README (no link in it relative to the repository, which a published README cannot follow),
//! both license texts, and no placeholder repository. `.ci/run` packages them all with
//! `cargo package --workspace`, which also builds each one from its `.crate` file.

#[path = "support/markdown.rs"]
mod markdown;

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The folders of the workspace's members, from the root manifest's `members`.
fn members() -> Vec<String> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let line = manifest
        .lines()
        .find(|line| line.starts_with("members = ["))
        .expect("a one-line `members` list");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The members without `publish = false`.
fn published() -> Vec<(String, String)> {
    members()
        .into_iter()
        .map(|member| {
            let manifest =
                std::fs::read_to_string(root().join(&member).join("Cargo.toml")).unwrap();
            (member, manifest)
        })
        .filter(|(_, manifest)| {
            !manifest
                .lines()
                .any(|line| line.trim() == "publish = false")
        })
        .collect()
}

#[test]
fn the_published_packages_are_the_library_crates_and_the_cli() {
    let mut names: Vec<String> = published().into_iter().map(|(member, _)| member).collect();
    names.sort();
    assert_eq!(names, ["analysis", "cli", "macros", "runtime", "shapes"]);
}

#[test]
fn each_published_package_has_its_own_readme_with_absolute_links() {
    for (member, manifest) in published() {
        assert!(
            manifest
                .lines()
                .any(|line| line == r#"readme = "README.md""#),
            "{member}/Cargo.toml: `readme` must be the package's own README.md"
        );
        let readme = std::fs::read_to_string(root().join(&member).join("README.md"))
            .unwrap_or_else(|error| panic!("{member}/README.md: {error}"));
        for (target, line) in markdown::links(&readme) {
            assert!(
                target.starts_with("https://") || target.starts_with("http://"),
                "{member}/README.md:{line}: `{target}` is relative to the repository; crates.io \
                 cannot follow it (use a docs.rs or crates.io link, or plain text)"
            );
        }
    }
}

#[test]
fn each_published_package_carries_both_license_texts() {
    for file in ["LICENSE-MIT", "LICENSE-APACHE"] {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        assert!(text.len() > 1000, "{file} is not the license's text");
        for (member, _) in published() {
            let copy = std::fs::read_to_string(root().join(&member).join(file))
                .unwrap_or_else(|error| panic!("{member}/{file}: {error}"));
            assert_eq!(copy, text, "{member}/{file} differs from the root's");
        }
    }
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(manifest.contains(r#"license = "MIT OR Apache-2.0""#));
}

#[test]
fn no_placeholder_repository() {
    let mut manifests = vec![("the workspace".to_string(), root().join("Cargo.toml"))];
    manifests.extend(
        members()
            .into_iter()
            .map(|member| (member.clone(), root().join(member).join("Cargo.toml"))),
    );
    for (name, path) in manifests {
        let manifest = std::fs::read_to_string(path).unwrap();
        assert!(
            !manifest.contains(".invalid"),
            "{name}: a placeholder URL in Cargo.toml"
        );
    }
}
