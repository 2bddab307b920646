//! The identifier scanner's spans for texts given as a JSON array of strings on stdin:
//! prints one JSON object, `{"seconds": s, "spans": [[[kind, start, end], …], …]}`, the
//! spans of each text for every kind with their offsets in characters (code points, as
//! Python counts them), and the seconds the scans took (the best of `rounds` passes, the
//! first argument, default 3). `bench/identify/score.py` scores them against a labelled
//! set beside Presidio's.

use std::io::Read;
use std::time::Instant;

use quarry_index::identify::{scan, Kinds, Span};

fn main() {
    let rounds: usize = std::env::args().nth(1).map_or(3, |a| a.parse().expect("rounds is a number"));
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).expect("texts on stdin");
    let texts: Vec<String> = serde_json::from_str(&input).expect("a JSON array of strings");
    let mut best = f64::MAX;
    let mut found: Vec<Vec<Span>> = Vec::new();
    for _ in 0..rounds.max(1) {
        let started = Instant::now();
        found = texts.iter().map(|t| scan(t, Kinds::ALL)).collect();
        best = best.min(started.elapsed().as_secs_f64());
    }
    let spans: Vec<Vec<(&str, usize, usize)>> =
        texts.iter().zip(&found).map(|(t, spans)| spans.iter().map(|s| (s.kind.name(), chars(t, s.start), chars(t, s.end))).collect()).collect();
    println!("{}", serde_json::json!({ "seconds": best, "spans": spans }));
}

/// The character offset of byte offset `at`.
fn chars(text: &str, at: usize) -> usize {
    text[..at].chars().count()
}
