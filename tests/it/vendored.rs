//! Tests read only files inside the repository: what they need is vendored in `tests/data`.
//!
//! Tests read only files inside the repository: a fresh clone, with nothing beside it,
//! must pass. What they need is vendored in `tests/data` (NOTICE says from where); the
//! full evaluation sets are for benches and harnesses only (`bench/src/eval.rs`).

use std::path::{Path, PathBuf};

/// Where test code lives: the integration tests, the unit tests inside each crate's
/// sources. Not `bench/benches` or the shell harnesses, which read the full sets.
const TEST_SOURCES: &[&str] = &["tests", "src", "core/src", "services/src", "ingest/src", "index/src", "index/tests", "bench/src"];

/// Text that names the team's directory beside the checkout.
const OUTSIDE: &[&str] = &["../shared", "/shared/"];

/// Text that reaches the full evaluation sets; only the harness binaries may.
const FULL_SETS: &[&str] = &["EVAL_DIR", "eval_set(", "eval_dir("];

/// Files allowed to name the full sets: where their location is decided, and the
/// harness binaries that take it as a default.
const HARNESSES: &[&str] = &["bench/src/eval.rs", "bench/src/bin/"];

#[test]
fn no_test_reads_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in TEST_SOURCES {
        sources(&root.join(dir), &mut files);
    }
    // This file names what it looks for.
    let me = root.join(file!());
    let mut found = Vec::new();
    for file in files.iter().filter(|f| **f != me) {
        let rel = file.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let harness = HARNESSES.iter().any(|h| rel.starts_with(h));
        let needles = OUTSIDE.iter().chain(FULL_SETS.iter().filter(|_| !harness));
        for (n, line) in text.lines().enumerate() {
            if let Some(needle) = needles.clone().find(|needle| line.contains(*needle)) {
                found.push(format!("{rel}:{}: {needle:?} in {}", n + 1, line.trim()));
            }
        }
    }
    assert!(files.len() > 100, "only {} test sources found under {TEST_SOURCES:?}", files.len());
    assert!(found.is_empty(), "test sources that read outside the repository (vendor the file into tests/data):\n{}", found.join("\n"));
}

/// Every `.rs` and `.py` file under `dir`, except the vendored data itself.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if !path.ends_with("tests/data") {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|x| x == "rs" || x == "py") {
            out.push(path);
        }
    }
}
