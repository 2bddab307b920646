//! `quarry ingest`, the bulk-load command, sending corpora and files to a real server.
//!
//! `quarry ingest`: the real binary sending a BEIR corpus (the vendored SciFact subset), a JSONL
//! file and a directory of mixed files to the real server on loopback. Every server here runs
//! with `QUARRY_API_KEY` in its environment, the variable ingest reads its key from.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::server::{bin, Options, TestServer};

/// The default plan with its limits raised, so 500 adds run at the server's own pace.
use super::plans::RAISED;

fn server(config: &str) -> (TestServer, String) {
    let env = vec![("QUARRY_API_KEY".to_owned(), "al_for_ingest_not_the_server".to_owned())];
    let s = TestServer::with(Options { config: config.into(), env, ..Options::default() });
    let (_, key) = s.signup("ingest@example.com");
    (s, key)
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    /// The id in the summary's `collection col_…:`.
    fn collection(&self) -> String {
        let at = self.stdout.find("collection col_").unwrap_or_else(|| panic!("no collection in {}", self.stdout));
        self.stdout[at + "collection ".len()..].split(':').next().unwrap().to_owned()
    }

    /// The number before `what` in the summary (`12 added`, `3 rate refusals`).
    fn count(&self, what: &str) -> u64 {
        let before = self.stdout.split(what).next().unwrap_or_else(|| panic!("no {what:?} in {}", self.stdout));
        before
            .rsplit([' ', '('])
            .find(|w| !w.is_empty())
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("no count before {what:?}: {}", self.stdout))
    }
}

/// `quarry ingest ARGS --server …` with the key in the environment, as a user would.
fn ingest(s: &TestServer, key: &str, args: &[&str]) -> Run {
    let out =
        Command::new(bin()).arg("ingest").args(args).args(["--server", &format!("http://{}", s.addr)]).env("QUARRY_API_KEY", key).output().unwrap();
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
    };
    println!("exit {}\n--- stdout\n{}--- stderr\n{}", run.code, run.stdout, run.stderr);
    run
}

/// The collection's documents, waiting out the rate if the run spent it.
fn documents(s: &TestServer, key: &str, collection: &str) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let r = s.get(&format!("/v1/collections/{collection}/documents"), Some(key));
        if r.status != 429 || started.elapsed() > Duration::from_secs(30) {
            assert_eq!(r.status, 200, "{}", r.text());
            return r.json()["documents"].as_array().unwrap().clone();
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn source_ids(docs: &[Value]) -> BTreeSet<String> {
    docs.iter().map(|d| d["metadata"]["source_id"].as_str().expect("every document has its source id").to_owned()).collect()
}

fn scifact() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scifact-500")
}

fn corpus_ids(path: &Path) -> BTreeSet<String> {
    let text = fs::read_to_string(path).unwrap();
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str::<Value>(l).unwrap()["_id"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn scifact_is_indexed_and_a_second_run_adds_nothing() {
    let (s, key) = server(RAISED);
    let dir = scifact();
    let first = ingest(&s, &key, &[dir.to_str().unwrap(), "--create", "scifact", "-j", "4"]);
    assert_eq!(first.code, 0);
    assert_eq!((first.count(" added"), first.count(" already present"), first.count(" failed")), (500, 0, 0));
    // Stderr is a pipe here: plain progress lines, the last one complete.
    assert!(first.stderr.contains("quarry ingest: 500/500 documents"), "{}", first.stderr);
    assert!(first.stderr.contains("500 pages"), "{}", first.stderr);
    let collection = first.collection();
    let docs = documents(&s, &key, &collection);
    assert_eq!(source_ids(&docs), corpus_ids(&dir.join("corpus.jsonl")));
    let d = docs.iter().find(|d| d["metadata"]["source_id"] == "4983").unwrap();
    assert!(d["title"].as_str().unwrap().starts_with("Microstructural development of human newborn"), "{d}");

    let second = ingest(&s, &key, &[dir.to_str().unwrap(), "--collection", &collection]);
    assert_eq!(second.code, 0);
    assert_eq!((second.count(" added"), second.count(" already present")), (0, 500));
    assert_eq!(documents(&s, &key, &collection).len(), 500);
}

fn write(root: &Path, name: &str, text: &str) {
    let path = root.join(name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

#[test]
fn a_mixed_directory_is_indexed_and_refused_documents_are_reported_while_the_rest_continue() {
    let (s, key) = server(&format!("{RAISED}[index]\nmax_document_bytes = 1024\n"));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "notes.txt", "Water rights are allocated by seniority.\n\nJunior rights are cut first in a drought.");
    write(root, "guide/intro.md", "# Irrigation\n\nDistricts deliver water to farms.\n\n- canals\n- pumps\n");
    write(root, "guide/deep/page.markdown", "# Wells\n\nGroundwater is pumped from aquifers.");
    write(root, "empty.txt", "");
    write(root, "big.txt", &"A sentence that repeats until the file passes the limit. ".repeat(40));
    write(root, "scan.pdf", "%PDF-1.7 not sent");
    write(root, ".DS_Store", "hidden");
    let path = root.to_str().unwrap();

    let first = ingest(&s, &key, &[path, "--create", "mixed", "-j", "3"]);
    assert_eq!(first.code, 1, "a failed document makes the exit non-zero");
    assert_eq!((first.count(" added"), first.count(" skipped"), first.count(" failed")), (3, 1, 2));
    assert!(first.stderr.contains("failed empty.txt: HTTP 400 invalid_document: The document has no text."), "{}", first.stderr);
    assert!(first.stderr.contains("failed big.txt: HTTP 413 document_too_large"), "{}", first.stderr);
    assert!(first.stderr.contains("skipped scan.pdf: not a format quarry ingest sends"), "{}", first.stderr);
    assert!(first.stdout.contains("failed big.txt: HTTP 413 document_too_large"), "the summary lists failures again: {}", first.stdout);
    let collection = first.collection();
    let docs = documents(&s, &key, &collection);
    let expected: BTreeSet<String> = ["guide/deep/page.markdown", "guide/intro.md", "notes.txt"].map(String::from).into();
    assert_eq!(source_ids(&docs), expected);
    let notes = docs.iter().find(|d| d["metadata"]["source_id"] == "notes.txt").unwrap();
    assert_eq!(notes["title"], "notes");
    let page = s.get(&format!("/v1/collections/{collection}/documents/{}/pages/0", notes["id"].as_str().unwrap()), Some(&key)).json();
    assert!(page["page"]["text"].as_str().unwrap().contains("Junior rights are cut first"), "{page}");

    // Again: what is there is passed over, the refused ones are refused again.
    let second = ingest(&s, &key, &[path, "--collection", &collection]);
    assert_eq!(second.code, 1);
    assert_eq!((second.count(" added"), second.count(" already present"), second.count(" failed")), (0, 3, 2));
    // With the two fixed (removed), a run succeeds and still adds nothing.
    fs::remove_file(root.join("empty.txt")).unwrap();
    fs::remove_file(root.join("big.txt")).unwrap();
    let third = ingest(&s, &key, &[path, "--collection", &collection]);
    assert_eq!(third.code, 0);
    assert_eq!((third.count(" added"), third.count(" already present")), (0, 3));
    assert_eq!(documents(&s, &key, &collection).len(), 3);
}

/// A new account's plan: a burst of 20, then one call a second. 25 adds and the collection's
/// creation spend 26 tokens, so the run must wait out refusals for about six seconds.
#[test]
fn a_run_at_the_default_plans_rate_waits_out_429s_and_finishes() {
    let (s, key) = server("");
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<&str> = include_str!("../data/scifact-500/corpus.jsonl").lines().take(25).collect();
    let corpus = dir.path().join("first-25.jsonl");
    fs::write(&corpus, lines.join("\n")).unwrap();
    let started = Instant::now();
    let run = ingest(&s, &key, &[corpus.to_str().unwrap(), "--create", "paced", "-j", "4"]);
    assert_eq!(run.code, 0);
    assert_eq!((run.count(" added"), run.count(" failed")), (25, 0));
    assert!(run.count(" rate refusals waited out") >= 1, "{}", run.stdout);
    assert!(started.elapsed() >= Duration::from_secs(4), "26 tokens from a burst of 20 at one a second take about 6 s");
    assert_eq!(source_ids(&documents(&s, &key, &run.collection())), corpus_ids(&corpus));
}

#[test]
fn a_bad_key_or_collection_stops_the_run_with_exit_2() {
    let (s, key) = server("");
    assert_eq!(s.get("/v1/health", None).status, 200, "the server started with QUARRY_API_KEY set");
    let dir = scifact();
    let run = ingest(&s, "al_not_a_real_key", &[dir.to_str().unwrap(), "--create", "x"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("invalid_key"), "{}", run.stderr);
    let run = ingest(&s, &key, &[dir.to_str().unwrap(), "--collection", "col_nope"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("collection_not_found"), "{}", run.stderr);
    // --embedder goes with --create as settings.embedder: one the server does not load
    // stops the run before anything is added.
    let run = ingest(&s, &key, &[dir.to_str().unwrap(), "--create", "y", "--embedder", "bge-small"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("unknown_embedder") && run.stderr.contains("bge-small"), "{}", run.stderr);
    assert_eq!(s.get("/v1/collections", Some(&key)).json()["collections"].as_array().unwrap().len(), 0);
}
