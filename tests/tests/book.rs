//! The book holds together: every chapter in `SUMMARY.md` exists and is doctested, every
//! relative link and `#anchor` resolves, and every `{{#include}}` names a file and anchor that
//! exist. (`.ci/run` also builds it with mdBook.)

#[path = "support/markdown.rs"]
mod markdown;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn book_src() -> PathBuf {
    root().join("book/src")
}

/// mdBook's id for a heading: lower case, spaces to dashes, other punctuation dropped.
fn heading_id(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn headings(markdown: &str) -> HashSet<String> {
    let mut in_code = false;
    let mut ids = HashSet::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            ids.insert(heading_id(line.trim_start_matches('#')));
        }
    }
    ids
}

fn chapters() -> Vec<String> {
    let summary = std::fs::read_to_string(book_src().join("SUMMARY.md")).unwrap();
    markdown::links(&summary)
        .into_iter()
        .map(|(target, _)| target)
        .collect()
}

/// The introduction lists every chapter of the book, in the summary's order.
#[test]
fn the_introduction_lists_every_chapter() {
    let introduction = std::fs::read_to_string(book_src().join("introduction.md")).unwrap();
    let listed: Vec<String> = markdown::links(&introduction)
        .into_iter()
        .map(|(target, _)| target)
        .filter(|target| target.ends_with(".md"))
        .collect();
    let chapters: Vec<String> = chapters()
        .into_iter()
        .filter(|chapter| chapter != "introduction.md")
        .collect();
    assert_eq!(listed, chapters);
}

#[test]
fn every_chapter_exists_and_is_doctested() {
    let chapters = chapters();
    assert!(chapters.len() >= 11, "{chapters:?}");
    for chapter in &chapters {
        let path = book_src().join(chapter);
        assert!(
            path.exists(),
            "SUMMARY.md names a missing chapter {chapter}"
        );
        let relative = format!("book/src/{chapter}");
        assert!(
            candle_contracts_tests::DOCTESTED.contains(&relative.as_str()),
            "{relative} is not doctested: add it to tests/src/lib.rs"
        );
    }
    let mut on_disk: Vec<String> = std::fs::read_dir(book_src())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md") && name != "SUMMARY.md")
        .collect();
    on_disk.sort();
    for file in on_disk {
        assert!(chapters.contains(&file), "{file} is not in SUMMARY.md");
    }
}

#[test]
fn every_link_and_anchor_resolves() {
    for chapter in chapters() {
        let path = book_src().join(&chapter);
        let text = std::fs::read_to_string(&path).unwrap();
        for (target, line) in markdown::links(&text) {
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((file, anchor)) => (file.to_string(), Some(anchor.to_string())),
                None => (target.clone(), None),
            };
            let linked = if file.is_empty() {
                path.clone()
            } else {
                path.parent().unwrap().join(&file)
            };
            assert!(linked.exists(), "{chapter}:{line}: broken link to {target}");
            if let Some(anchor) = anchor {
                let linked_text = std::fs::read_to_string(&linked).unwrap();
                assert!(
                    headings(&linked_text).contains(&anchor),
                    "{chapter}:{line}: no heading `#{anchor}` in {file}"
                );
            }
        }
    }
}

#[test]
fn every_include_names_an_existing_file_and_anchor() {
    let mut includes = 0;
    for chapter in chapters() {
        let path = book_src().join(&chapter);
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            let Some(start) = line.find("{{#include ") else {
                continue;
            };
            let spec = line[start + "{{#include ".len()..]
                .split("}}")
                .next()
                .unwrap()
                .trim();
            let (file, anchor) = match spec.split_once(':') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (spec, None),
            };
            let included = path.parent().unwrap().join(file);
            assert!(
                included.exists(),
                "{chapter}:{}: missing include {file}",
                number + 1
            );
            let source = std::fs::read_to_string(&included).unwrap();
            if let Some(anchor) =
                anchor.filter(|a| !a.chars().all(|c| c.is_ascii_digit() || c == ':'))
            {
                assert!(
                    source.contains(&format!("ANCHOR: {anchor}"))
                        && source.contains(&format!("ANCHOR_END: {anchor}")),
                    "{chapter}:{}: no anchor `{anchor}` in {file}",
                    number + 1
                );
            }
            includes += 1;
        }
    }
    assert!(
        includes > 0,
        "the tutorial includes its listings from examples/"
    );
}

#[test]
fn heading_ids_follow_mdbook() {
    assert_eq!(heading_id(" Reading a violation"), "reading-a-violation");
    assert_eq!(heading_id(" `in`: value ranges"), "in-value-ranges");
}

/// The compile-time errors chapter shows every case of the trybuild suite, as it is: regenerate
/// it with `scripts/write-compile-errors-chapter.py` after re-blessing the snapshots.
#[test]
fn the_compile_errors_chapter_matches_the_suite() {
    let chapter = std::fs::read_to_string(book_src().join("compile-errors.md")).unwrap();
    let mut cases = 0;
    for entry in std::fs::read_dir(root().join("tests/ui")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let source = std::fs::read_to_string(&path).unwrap();
            assert!(
                chapter.contains(source.trim_end()),
                "{} is not in the chapter",
                path.display()
            );
            let stderr = std::fs::read_to_string(path.with_extension("stderr")).unwrap();
            assert!(
                chapter.contains(stderr.trim_end()),
                "{} changed: regenerate the chapter",
                path.display()
            );
            cases += 1;
        }
    }
    assert!(cases >= 20, "{cases} diagnostics");
}

/// The example output quoted in the README and the book names the contract's location as the
/// examples print it (`examples/src/digits.rs:85:5`): each such location must still point at
/// the first clause of a `#[contract(...)]`, so an edit that moves the contract fails here.
#[test]
fn quoted_contract_locations_point_at_contracts() {
    let mut documents = vec![root().join("README.md")];
    documents.extend(chapters().iter().map(|chapter| book_src().join(chapter)));
    let mut checked = 0;
    for document in documents {
        let text = std::fs::read_to_string(&document).unwrap();
        for quoted in text.split("(examples/src/").skip(1) {
            let Some(end) = quoted.find(')') else {
                continue;
            };
            let mut parts = quoted[..end].split(':');
            let (Some(file), Some(line), Some(column)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let (line, column): (usize, usize) = (line.parse().unwrap(), column.parse().unwrap());
            let source = std::fs::read_to_string(root().join("examples/src").join(file)).unwrap();
            let lines: Vec<&str> = source.lines().collect();
            let (before, at) = lines[line - 1].split_at(column - 1);
            let first_clause = !at.trim().is_empty()
                && (before.trim_end().ends_with("#[contract(")
                    || before.trim().is_empty()
                        && lines[line - 2].trim_end().ends_with("#[contract("));
            assert!(
                first_clause,
                "{}: examples/src/{file}:{line}:{column} no longer points at a contract; rerun the example and update the quote",
                document.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 3, "{checked} quoted locations");
}
