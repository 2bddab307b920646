//! Times the identifier scanner on the texts given as a JSON array of strings on
//! stdin: each text scanned for every kind, the whole list `rounds` times (first
//! argument, default 20) after one warm-up pass. Prints one JSON line: texts, bytes,
//! seconds, MB/s, the CPU seconds the timed rounds took (this thread's, from
//! `/proc/thread-self/schedstat`, so that a machine loaded by other work does not
//! count against the scanner; null where that file does not exist) and the spans found
//! per round. `bench/identify/compare.py` runs it
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
    let cpu_started = cpu_seconds();
    let started = Instant::now();
    let mut spans = 0;
    for _ in 0..rounds {
        for t in &texts {
            spans += std::hint::black_box(scan(t, Kinds::ALL)).len();
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds().zip(cpu_started).map_or("null".to_string(), |(b, a)| format!("{:.4}", b - a));
    assert_eq!(spans, found * rounds);
    let mb_s = (bytes * rounds) as f64 / secs / 1e6;
    println!(
        r#"{{"texts": {}, "bytes": {bytes}, "rounds": {rounds}, "seconds": {secs:.4}, "mb_per_s": {mb_s:.3}, "cpu_seconds": {cpu}, "spans": {found}}}"#,
        texts.len()
    );
}

/// The CPU time this thread has run, in seconds: the first field of
/// `/proc/thread-self/schedstat` (nanoseconds on a CPU), Linux only.
fn cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}
