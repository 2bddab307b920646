//! Tokenisation, single-query embedding and batch embedding for both embedders,
//! int8 beside fp32, one ort session with one intra-op thread (as a shard runs it).
//!
//!     cargo bench -p quarry-bench --bench embed
//!
//! Throughput is per text: queries/s for single calls, passages/s for batch-32 of
//! 100-word passages.

#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use quarry_index::embed::Precision;

const MODELS: [&str; 2] = ["all-MiniLM-L6-v2", "multilingual-e5-small"];
const PRECISIONS: [Precision; 2] = [Precision::Int8, Precision::Fp32];

fn tokenize(c: &mut Criterion) {
    let passages = common::passages(32, 100);
    let mut g = c.benchmark_group("tokenize");
    g.measurement_time(Duration::from_secs(3));
    for id in MODELS {
        let model = common::load(id, Precision::Int8);
        let enc = model.encoder();
        g.throughput(Throughput::Elements(1));
        g.bench_function(BenchmarkId::new("query", id), |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                enc.encode(common::QUERIES[i % common::QUERIES.len()]).unwrap()
            })
        });
        g.throughput(Throughput::Elements(passages.len() as u64));
        g.bench_function(BenchmarkId::new("passages-32x100w", id), |b| {
            b.iter(|| passages.iter().map(|p| enc.encode(p).unwrap().len()).sum::<usize>())
        });
    }
    g.finish();
}

fn query_embedding(c: &mut Criterion) {
    let mut g = c.benchmark_group("embed-query");
    g.measurement_time(Duration::from_secs(4)).throughput(Throughput::Elements(1));
    for id in MODELS {
        for p in PRECISIONS {
            let mut e = common::load(id, p).embedder().unwrap();
            g.bench_function(BenchmarkId::new(id, p.as_str()), |b| {
                let mut i = 0;
                b.iter(|| {
                    i += 1;
                    e.embed_query(common::QUERIES[i % common::QUERIES.len()]).unwrap()
                })
            });
        }
    }
    g.finish();
}

fn batch_embedding(c: &mut Criterion) {
    let passages = common::passages(32, 100);
    let refs: Vec<&str> = passages.iter().map(String::as_str).collect();
    let mut g = c.benchmark_group("embed-batch32x100w");
    g.sample_size(10).measurement_time(Duration::from_secs(8)).throughput(Throughput::Elements(refs.len() as u64));
    for id in MODELS {
        for p in PRECISIONS {
            let mut e = common::load(id, p).embedder().unwrap();
            g.bench_function(BenchmarkId::new(id, p.as_str()), |b| b.iter(|| e.embed_passages(&refs).unwrap()));
        }
    }
    g.finish();
}

criterion_group!(benches, tokenize, query_embedding, batch_embedding);
criterion_main!(benches);
