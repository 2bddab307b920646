//! Times the identifier scanner on the texts given as a JSON array of strings on
//! stdin: each text scanned for every kind, the whole list `rounds` times (first
//! argument, default 20) after one warm-up pass. Prints one JSON line: texts, bytes,
//! seconds, MB/s and the spans found per round. `bench/identify/compare.py` runs it
//! beside Presidio's recognizers on the same texts.

use std::io::Read;
use std::time::Instant;

use quarry_index::identify::{scan, Kinds};

fn main() {
    let rounds: usize = std::env::args().nth(1).map_or(20, |a| a.parse().expect("rounds is a number"));
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).expect("texts on stdin");
    let texts: Vec<String> = serde_json::from_str(&input).expect("a JSON array of strings");
    let bytes: usize = texts.iter().map(String::len).sum();
    let found: usize = texts.iter().map(|t| scan(t, Kinds::ALL).len()).sum();
    let started = Instant::now();
    let mut spans = 0;
    for _ in 0..rounds {
        for t in &texts {
            spans += std::hint::black_box(scan(t, Kinds::ALL)).len();
        }
    }
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(spans, found * rounds);
    let mb_s = (bytes * rounds) as f64 / secs / 1e6;
    println!(r#"{{"texts": {}, "bytes": {bytes}, "rounds": {rounds}, "seconds": {secs:.4}, "mb_per_s": {mb_s:.3}, "spans": {found}}}"#, texts.len());
}
