//! A collection of SciFact abstracts (the full set, `scifact` in `$EVAL_DIR`; see
//! `quarry_bench::eval`) built the way the server
//! builds one: each document's JSON body parsed by the documents endpoint's own parser,
//! chunked by `ingest::prepare`, added to a `Collection` (WAL, fsync, in-memory tail),
//! then flushed into one segment with its tantivy index. The benches that search, filter,
//! pick passages, open segments or serialize results share it.
//!
//! SciFact has no metadata, so each document gets a small made-up object, a pure function
//! of its position: `journal.name` (one of [`JOURNALS`]), `year`, `tags` (a list) and a
//! `date`, which the parser flattens into dotted keys and filter dates as for any client.

// Each bench uses part of this module.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use quarry::api::agentlex::input::document;
use quarry_index::chunk::ChunkOptions;
use quarry_index::collection::{view, Collection, Options, Snapshot};
use quarry_index::ingest::{self, DocDraft};
use serde_json::{json, Value};

pub const JOURNALS: [&str; 8] = ["Nature", "Cell", "Lancet", "BMJ", "JAMA", "PLoS One", "Science", "NEJM"];
const TAGS: [&str; 5] = ["clinical", "genetics", "immunology", "oncology", "neuroscience"];

fn jsonl(name: &str) -> Vec<Value> {
    let path = quarry_bench::eval::eval_set("scifact").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (set EVAL_DIR to the directory holding scifact/)", path.display()));
    text.lines().map(|l| serde_json::from_str(l).expect("SciFact is JSON lines")).collect()
}

/// The first `n` documents as the documents endpoint receives them.
pub fn bodies(n: usize) -> Vec<Value> {
    jsonl("corpus.jsonl")
        .into_iter()
        .take(n)
        .enumerate()
        .map(|(i, d)| {
            json!({
                "title": d["title"],
                "text": d["text"],
                "metadata": {
                    "source": d["_id"],
                    "journal": { "name": JOURNALS[i % JOURNALS.len()] },
                    "year": 1990 + (i % 30),
                    "tags": [TAGS[i % TAGS.len()], TAGS[(i / 3) % TAGS.len()]],
                    "date": format!("{}-{:02}-{:02}", 1990 + (i % 30), 1 + i % 12, 1 + i % 28),
                },
            })
        })
        .collect()
}

/// SciFact's claims, the queries its qrels judge.
pub fn queries(n: usize) -> Vec<String> {
    jsonl("queries.jsonl").iter().take(n).map(|q| q["text"].as_str().expect("a query text").to_owned()).collect()
}

/// The draft the documents endpoint makes of a parsed body (`documents::add`).
fn draft(i: usize, body: &Value) -> DocDraft {
    let doc = document::parse(body.to_string().as_bytes()).expect("a valid document body");
    doc.into_draft(format!("doc_{i:06}"), "none".into(), "2026-11-30T00:00:00Z".into(), "auto")
}

pub struct Corpus {
    /// The collection's directory, removed on drop.
    _dir: tempfile::TempDir,
    pub collection: Collection,
    pub snapshot: Arc<Snapshot>,
    /// The collection's directory.
    pub dir: PathBuf,
    /// The one segment: its sequence number and data file.
    pub segment_seq: u64,
    pub segment: PathBuf,
}

/// `n` SciFact documents in a collection of one flushed segment (no vectors).
pub fn corpus(n: usize) -> Corpus {
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (collection, _) = Collection::open("col_bench", dir.path(), Options::default()).expect("a new collection");
    let opts = ChunkOptions::default();
    for (i, body) in bodies(n).iter().enumerate() {
        collection.add(ingest::prepare(draft(i, body), &opts)).expect("add");
    }
    collection.flush().expect("flush");
    // The server's background thread warms a segment once it is flushed or opened
    // (narrow columns of the fields searches read per match); searches are measured
    // as the server runs them, not on the cold first ones.
    let snapshot = collection.snapshot();
    snapshot.views.iter().for_each(|v| v.warm());
    let seq = match snapshot.views.as_slice() {
        [v] => match v.source {
            view::Source::Segment(seq) => seq,
            view::Source::Memory { .. } => panic!("the flush left an in-memory view"),
        },
        views => panic!("expected one segment, found {} views", views.len()),
    };
    let segment = view::segment_path(dir.path(), seq);
    let b = snapshot.views[0].batch();
    eprintln!(
        "scifact corpus: {n} documents, {} pages, {} chunks, segment {} KiB, built in {:.1} s",
        b.pages.len(),
        b.chunks.len(),
        std::fs::metadata(&segment).map(|m| m.len() / 1024).unwrap_or(0),
        started.elapsed().as_secs_f64()
    );
    Corpus { dir: dir.path().to_owned(), _dir: dir, collection, snapshot, segment_seq: seq, segment }
}
