//! CPU time of the analyser's Latin path, for before/after comparisons of a change to
//! `text/` when the criterion benches' build (thin LTO) is too slow for the machine:
//! BM25 terms, passages' held-term counts and highlight spans over the vendored SciFact
//! abstracts, in CPU time of this thread (`/proc/thread-self/schedstat`), so that other
//! load on the machine counts less. Run two builds alternately and compare medians.
//!
//!     cargo build --profile identify-bench -p quarry-index --example analyse_speed
//!     target/identify-bench/examples/analyse_speed [ROUNDS]

use quarry_index::text;

fn cpu_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    s.split_whitespace().next().and_then(|n| n.parse().ok()).expect("a number")
}

fn median(mut v: Vec<u64>) -> f64 {
    v.sort_unstable();
    v[v.len() / 2] as f64
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(15);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/scifact-500/corpus.jsonl");
    let corpus = std::fs::read_to_string(path).expect("the vendored SciFact subset");
    let texts: Vec<String> = corpus
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON"))
        .map(|d| format!("{} {}", d["title"].as_str().unwrap_or(""), d["text"].as_str().unwrap_or("")))
        .collect();
    let bytes: usize = texts.iter().map(String::len).sum();
    // A query per text: the first words of another text, some held, some not.
    let queries: Vec<Vec<String>> = (0..texts.len())
        .map(|i| {
            let other = &texts[(i * 7 + 3) % texts.len()];
            text::terms(&other[..other.char_indices().nth(60).map_or(other.len(), |(i, _)| i)])
        })
        .collect();
    let held: Vec<text::Held> = queries.iter().map(|q| text::Held::new(q)).collect();
    let mut sink = 0usize;
    let (mut analyse, mut counts, mut spans, mut phrase) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        // Each pass is repeated to last well beyond the scheduler's accounting tick.
        let t = cpu_ns();
        for s in texts.iter().cycle().take(texts.len() * 4) {
            sink += text::terms(s).len();
        }
        analyse.push((cpu_ns() - t) / 4);
        let t = cpu_ns();
        for (s, h) in texts.iter().zip(&held).cycle().take(texts.len() * 40) {
            sink += h.counts(s, u64::MAX).0.count_ones() as usize;
        }
        counts.push((cpu_ns() - t) / 40);
        let t = cpu_ns();
        for (s, q) in texts.iter().zip(&queries).cycle().take(texts.len() * 8) {
            sink += text::term_spans(s, q).len();
        }
        spans.push((cpu_ns() - t) / 8);
        let t = cpu_ns();
        for s in texts.iter().cycle().take(texts.len() * 16) {
            sink += text::normalize_for_match(s).len();
        }
        phrase.push((cpu_ns() - t) / 16);
    }
    let per_mb = |v: Vec<u64>| median(v) / 1e6 * 1e6 / bytes as f64;
    println!(
        "analyse {:.3} ms/MB  held-counts {:.3} ms/MB  spans {:.3} ms/MB  match-norm {:.3} ms/MB  ({} bytes, sink {sink})",
        per_mb(analyse),
        per_mb(counts),
        per_mb(spans),
        per_mb(phrase),
        bytes
    );
}
