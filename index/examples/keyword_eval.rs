//! Keyword nDCG@10 of the engine alone on a BEIR-layout set: no server, no HTTP, no
//! embedder, so a change to query analysis or BM25 is measured in seconds in a debug
//! build. The numbers that count come from `bench/quality/run.sh` (release, through the
//! API); this is the development loop.
//!
//!     cargo run -p quarry-index --example keyword_eval -- DIR [DIR…]
//!
//! Each document is one page of its `text` with its `title`, added and flushed into one
//! segment; each judged query of `qrels/test.tsv` is parsed as the server parses it and
//! searched in keyword mode (10 pages, lists 100 deep). nDCG@10 uses linear gains, as
//! quarry-quality and bm25s_peer.py do.

use std::collections::HashMap;
use std::path::Path;

use quarry_index::chunk::ChunkOptions;
use quarry_index::collection::{Collection, Options};
use quarry_index::ingest::{self, DocDraft, PageDraft};
use quarry_index::search::{self, Mode, Query};
use quarry_index::text;

fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).expect("JSON lines")).collect()
}

fn qrels(path: &Path) -> HashMap<String, HashMap<String, i64>> {
    let mut out: HashMap<String, HashMap<String, i64>> = HashMap::new();
    for line in std::fs::read_to_string(path).expect("qrels").lines().skip(1) {
        let parts: Vec<&str> = line.split('\t').collect();
        if let [q, d, s] = parts[..] {
            out.entry(q.to_owned()).or_default().insert(d.to_owned(), s.parse().expect("a grade"));
        }
    }
    out
}

fn ndcg10(ranked: &[String], rels: &HashMap<String, i64>) -> f64 {
    let dcg: f64 = ranked.iter().take(10).enumerate().map(|(i, d)| rels.get(d).copied().unwrap_or(0).max(0) as f64 / (i as f64 + 2.0).log2()).sum();
    let mut ideal: Vec<i64> = rels.values().copied().filter(|&r| r > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal.iter().take(10).enumerate().map(|(i, &g)| g as f64 / (i as f64 + 2.0).log2()).sum();
    if idcg > 0.0 {
        dcg / idcg
    } else {
        0.0
    }
}

fn str_of(v: &serde_json::Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_owned()
}

fn evaluate(dir: &Path) {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let (collection, _) = Collection::open("col_eval", tmp.path(), Options::default()).expect("a collection");
    let opts = ChunkOptions::default();
    for d in jsonl(&dir.join("corpus.jsonl")) {
        let title = Some(str_of(&d, "title")).filter(|t| !t.is_empty());
        let page = PageDraft { text: str_of(&d, "text"), ..PageDraft::default() };
        let draft =
            DocDraft { id: str_of(&d, "_id"), title, format: "text".into(), embedder: "none".into(), pages: vec![page], ..DocDraft::default() };
        collection.add(ingest::prepare(draft, &opts)).expect("add");
    }
    collection.flush().expect("flush");
    let snap = collection.snapshot();
    let queries: HashMap<String, String> = jsonl(&dir.join("queries.jsonl")).iter().map(|q| (str_of(q, "_id"), str_of(q, "text"))).collect();
    let judged = qrels(&dir.join("qrels/test.tsv"));
    let mut ids: Vec<&String> = judged.keys().filter(|q| queries.contains_key(*q)).collect();
    ids.sort();
    let (mut total, mut warned) = (0.0, 0);
    for id in &ids {
        let parsed = text::parse(&queries[*id]);
        let q = Query { phrases: parsed.phrases, emphasis: parsed.emphasis, ..Query::new(parsed.text, Mode::Keyword) };
        let results = search::search(&snap, &q);
        warned += usize::from(!results.warnings.is_empty());
        let ranked: Vec<String> = results.hits.iter().map(|h| snap.hit_view(h).doc.id.to_owned()).collect();
        total += ndcg10(&ranked, &judged[*id]);
    }
    println!("{}: keyword nDCG@10 {:.4} over {} queries ({} with warnings)", dir.display(), total / ids.len() as f64, ids.len(), warned);
}

fn main() {
    for dir in std::env::args().skip(1) {
        evaluate(Path::new(&dir));
    }
}
