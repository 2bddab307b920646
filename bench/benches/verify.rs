//! The verifier (`quarry_index::verify`) on pages of 2, 8 and 32 kB made of the fixture
//! pages (tests/data/verify/excerpts.json: English, Arabic with harakat, CJK, emoji),
//! for its cost per byte of page: it should stay flat as pages grow (linear time).
//!
//!     cargo bench -p quarry-bench --bench verify
//!
//! - `exact`: the page's last sentence as printed (the exact search scans the page).
//! - `normalized`: the same sentence upper-cased with its whitespace changed (the exact
//!   search fails, then the normalised copy is built and searched).
//! - `near_miss`: that sentence with a number changed (both searches fail).
//!
//! Each iteration builds the `Page` afresh, as extraction does once per page read.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use quarry_index::verify::Page;

fn pages(size: usize) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/verify/excerpts.json");
    let f: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let texts: Vec<&str> = f["pages"].as_object().unwrap().values().filter_map(|v| v.as_str()).collect();
    let mut page = String::new();
    while page.len() < size {
        for t in &texts {
            page.push_str(t);
            page.push_str("\n\n");
        }
    }
    page
}

const LAST: &str = "Closing clause: the parties sign this agreement on 12 March 2024 in Boston.";

fn verify(c: &mut Criterion) {
    let mut g = c.benchmark_group("verify");
    for kb in [2, 8, 32] {
        let text = format!("{}{LAST}", pages(kb * 1024));
        g.throughput(Throughput::Bytes(text.len() as u64));
        let varied = LAST.to_uppercase().replace(' ', "\n ");
        let miss = LAST.replace("12", "13");
        for (name, excerpt) in [("exact", LAST.to_owned()), ("normalized", varied), ("near_miss", miss)] {
            g.bench_with_input(BenchmarkId::new(name, format!("{kb}kB")), &excerpt, |b, e| {
                b.iter(|| Page::new(&text).locate(e));
            });
        }
    }
    g.finish();
}

criterion_group!(benches, verify);
criterion_main!(benches);
