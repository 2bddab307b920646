//! Request parsing, serde_json against simd-json, on the server's own input path: the
//! body's bytes straight into the endpoint's typed body and its checks (the server's
//! `input::search::parse`, `input::document::parse` for serde_json;
//! `simd_json::serde::from_slice` into the same typed body, after the copy it needs since
//! it parses in place, then the same `build` for simd-json). Until 2026-12-01 the input
//! went through a `serde_json::Value` first; the rows kept their names, so a saved
//! criterion baseline compares the two.
//!
//!     cargo bench -p quarry-bench --bench parse
//!
//! Bodies: a small search request (query, k, mode, passages, metadata and date filters;
//! ~300 bytes), and two 1 MB bodies of the documents endpoint built from SciFact
//! abstracts: one `text` string, and the same text as `pages[]` of ~3 KB each. The
//! `simd-json-borrowed` rows parse into simd-json's own borrowed value instead: the
//! ceiling simd-json could reach if the input checks walked its values, for scale only.
//!
//! Measured 2026-11-30 (`bench/results/parse-2026-11-30.md`; 2 shared cores, so ratios
//! only), simd-json time / serde_json time, parse plus the endpoint's checks: search
//! request 1.32, 1 MB `text` document 2.67, 1 MB `pages[]` document 1.70; the JSON alone
//! 1.26 on both 1 MB bodies. simd-json lost everywhere, so the server keeps serde_json on
//! every path.
//!
//! Typed bodies, 2026-12-01 (criterion `--baseline` against the Value path, release
//! without LTO, load average ~6 on 2 cores): search request, serde_json, 4.97 µs before,
//! 3.13-3.16 µs after (0.64x the time), while the unchanged simd-json-borrowed row ran
//! 8-14% slower in the same runs; simd-json still loses (1.17-1.32x serde_json's time).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use quarry::api::agentlex::input::{document, search};
use serde_json::{json, Value};

const MB: usize = 1 << 20;

fn scifact_text(bytes: usize) -> Vec<String> {
    let path = quarry_bench::eval::eval_set("scifact").join("corpus.jsonl");
    let corpus =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (set EVAL_DIR to the directory holding scifact/)", path.display()));
    let mut out = Vec::new();
    let mut total = 0;
    for line in corpus.lines() {
        let d: Value = serde_json::from_str(line).expect("SciFact is JSON lines");
        let text = format!("{}\n\n{}", d["title"].as_str().unwrap_or(""), d["text"].as_str().unwrap_or(""));
        total += text.len();
        out.push(text);
        if total >= bytes {
            break;
        }
    }
    out
}

fn search_body() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "query": "ALDH1 expression is associated with poorer prognosis for breast cancer",
        "mode": "hybrid",
        "k": 10,
        "passages": 2,
        "filters": {
            "metadata": {"journal.name": ["Nature", "Cell"], "year": 2005},
            "date": {"from": "2001-01-01", "to": "2010-12-31"},
            "kinds": ["table"]
        }
    }))
    .expect("a body")
}

fn document_bodies() -> [(&'static str, Vec<u8>); 2] {
    let abstracts = scifact_text(MB);
    let metadata = json!({"source": "scifact", "journal": {"name": "Nature"}, "date": "2024-03-14", "tags": ["oncology"]});
    let text = json!({"title": "SciFact abstracts", "metadata": metadata, "text": abstracts.join("\n\n")});
    let mut pages = Vec::new();
    let mut page = String::new();
    for a in &abstracts {
        if page.len() > 3_000 {
            pages.push(json!({"text": std::mem::take(&mut page), "number": pages.len() + 1}));
        }
        page.push_str(a);
        page.push_str("\n\n");
    }
    pages.push(json!({"text": page, "number": pages.len() + 1}));
    let paged = json!({"title": "SciFact abstracts", "metadata": metadata, "pages": pages});
    [("document-text-1MB", serde_json::to_vec(&text).expect("a body")), ("document-pages-1MB", serde_json::to_vec(&paged).expect("a body"))]
}

fn with_serde_json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("valid JSON")
}

fn with_simd_json(bytes: &[u8]) -> Value {
    let mut copy = bytes.to_vec();
    simd_json::serde::from_slice::<Value>(&mut copy).expect("valid JSON")
}

fn parsing(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse");
    let small = search_body();
    assert_eq!(with_serde_json(&small), with_simd_json(&small));
    g.throughput(Throughput::Bytes(small.len() as u64));
    g.bench_function(BenchmarkId::new("search-request", "serde_json"), |b| b.iter(|| search::parse(black_box(&small)).expect("valid")));
    g.bench_function(BenchmarkId::new("search-request", "simd-json"), |b| {
        b.iter(|| {
            let mut copy = black_box(&small).to_vec();
            search::build(simd_json::serde::from_slice::<search::Body>(&mut copy).expect("valid JSON")).expect("valid")
        })
    });
    g.bench_function(BenchmarkId::new("search-request", "simd-json-borrowed"), |b| {
        b.iter(|| {
            let mut copy = black_box(&small).to_vec();
            simd_json::to_borrowed_value(&mut copy).map(|_| ()).expect("valid")
        })
    });
    for (name, body) in document_bodies() {
        assert_eq!(with_serde_json(&body), with_simd_json(&body), "{name}: both parsers give the same value");
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_function(BenchmarkId::new(name, "serde_json"), |b| b.iter(|| document::parse(black_box(&body)).expect("valid")));
        g.bench_function(BenchmarkId::new(name, "simd-json"), |b| {
            b.iter(|| {
                let mut copy = black_box(&body).to_vec();
                document::build(simd_json::serde::from_slice::<document::Body>(&mut copy).expect("valid JSON")).expect("valid")
            })
        });
        g.bench_function(BenchmarkId::new(name, "simd-json-borrowed"), |b| {
            b.iter(|| {
                let mut copy = black_box(&body).to_vec();
                simd_json::to_borrowed_value(&mut copy).map(|_| ()).expect("valid")
            })
        });
        // The JSON alone, without the document checks (page splitting, copies).
        g.bench_function(BenchmarkId::new(name, "serde_json-value-only"), |b| b.iter(|| with_serde_json(black_box(&body))));
        g.bench_function(BenchmarkId::new(name, "simd-json-value-only"), |b| b.iter(|| with_simd_json(black_box(&body))));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = parsing
}
criterion_main!(benches);
