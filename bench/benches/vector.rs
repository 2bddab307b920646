//! Semantic search per segment: the exact scan against the HNSW graph (search plus exact
//! re-scoring of its candidates) at 1k–100k rows of 384 dims, k = 10; the graph's build
//! rate; and the dot kernel against the plain loop. Prints recall@10 of the graph path
//! against the exact scan at each size, on the same rows and queries it times.
//!
//!     cargo bench -p quarry-bench --bench vector -- --warm-up-time 1 --measurement-time 3
//!
//! Rows are clustered like real embeddings: gaussian noise around 50 random unit
//! centroids, normalised; queries are drawn around the same centroids.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use quarry_index::vector::sample::{unit, Clusters, Rng};
use quarry_index::vector::{dot::dot, exact_top_k, Hit, HnswIndex, Quantized};

const DIMS: usize = 384;
const K: usize = 10;
const SIZES: [usize; 5] = [1_000, 5_000, 10_000, 20_000, 100_000];
const QUERIES: usize = 200;
const CLUSTERS: usize = 50;
const SIGMA: f32 = 0.05;

fn dot_kernel(c: &mut Criterion) {
    let mut rng = Rng::new(1);
    let (a, b) = (unit(&mut rng, DIMS), unit(&mut rng, DIMS));
    let mut g = c.benchmark_group("dot-384");
    g.bench_function(BenchmarkId::new("dispatched", quarry_index::vector::dot::kernel_name()), |bench| {
        bench.iter(|| dot(black_box(&a), black_box(&b)))
    });
    g.bench_function("plain-loop", |bench| bench.iter(|| black_box(&a).iter().zip(black_box(&b)).map(|(x, y)| x * y).sum::<f32>()));
    g.finish();
}

fn search(c: &mut Criterion) {
    let mut rng = Rng::new(11);
    let clusters = Clusters::new(&mut rng, DIMS, CLUSTERS);
    let queries = clusters.sample(&mut rng, QUERIES, SIGMA);
    let mut g = c.benchmark_group("vector-search-k10");
    g.throughput(Throughput::Elements(1));
    for n in SIZES {
        let rows = clusters.sample(&mut rng, n, SIGMA);
        let graph = HnswIndex::build(&rows, DIMS);
        let recall = recall_at_10(&rows, &queries, |q| graph.search(&rows, q, K, &|_| true));
        eprintln!("vector-search-k10/{n}: HNSW recall@10 {recall:.4}");
        let mut i = 0;
        let mut next = || {
            i = (i + 1) % QUERIES;
            &queries[i * DIMS..(i + 1) * DIMS]
        };
        g.bench_function(BenchmarkId::new("exact", n), |b| b.iter(|| exact_top_k(&rows, DIMS, next(), K, &|_| true)));
        g.bench_function(BenchmarkId::new("hnsw", n), |b| b.iter(|| graph.search(&rows, next(), K, &|_| true)));
        if n == 20_000 {
            // 10% admitted goes to the scan of admitted rows; 50% widens the graph's candidates.
            for (name, every) in [("allow10%", 10), ("allow50%", 2)] {
                let allow = move |id: u32| id % every == 1;
                g.bench_function(BenchmarkId::new(format!("exact-{name}"), n), |b| b.iter(|| exact_top_k(&rows, DIMS, next(), K, &allow)));
                g.bench_function(BenchmarkId::new(format!("hnsw-{name}"), n), |b| b.iter(|| graph.search(&rows, next(), K, &allow)));
            }
        }
    }
    g.finish();
}

/// The scan at the depth a search asks for (100 pages per list): f32 rows against the
/// int8 copy with exact re-scoring, on rows that fit in the CPU's caches (5k × 384 f32
/// = 7.7 MB) and on rows that do not (50k: 77 MB; the scan serves a large segment
/// until its graph is built).
fn scan_depth_100(c: &mut Criterion) {
    const DEPTH: usize = 100;
    let mut rng = Rng::new(17);
    let clusters = Clusters::new(&mut rng, DIMS, CLUSTERS);
    let queries = clusters.sample(&mut rng, QUERIES, SIGMA);
    let mut g = c.benchmark_group("scan-depth100");
    g.throughput(Throughput::Elements(1));
    for n in [5_000, 50_000] {
        let rows = clusters.sample(&mut rng, n, SIGMA);
        let quantized = Quantized::new(&rows, DIMS);
        let mut i = 0;
        let mut next = || {
            i = (i + 1) % QUERIES;
            &queries[i * DIMS..(i + 1) * DIMS]
        };
        g.bench_function(BenchmarkId::new("exact", n), |b| b.iter(|| exact_top_k(&rows, DIMS, next(), DEPTH, &|_| true)));
        g.bench_function(BenchmarkId::new("int8-rescored", n), |b| b.iter(|| quantized.search(&rows, next(), DEPTH, |_| true)));
    }
    g.finish();
}

fn build(c: &mut Criterion) {
    const ROWS: usize = 5_000;
    let mut rng = Rng::new(5);
    let rows = Clusters::new(&mut rng, DIMS, CLUSTERS).sample(&mut rng, ROWS, SIGMA);
    let mut g = c.benchmark_group("hnsw-build");
    g.sample_size(10).throughput(Throughput::Elements(ROWS as u64));
    g.bench_function(BenchmarkId::new("rows", ROWS), |b| b.iter(|| HnswIndex::build(&rows, DIMS)));
    g.finish();
}

fn recall_at_10(rows: &[f32], queries: &[f32], found: impl Fn(&[f32]) -> Vec<Hit>) -> f64 {
    let mut sum = 0.0;
    for q in queries.chunks_exact(DIMS) {
        let truth = exact_top_k(rows, DIMS, q, K, &|_| true);
        sum += found(q).iter().filter(|h| truth.iter().any(|t| t.id == h.id)).count() as f64 / K as f64;
    }
    sum / (queries.len() / DIMS) as f64
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = dot_kernel, search, scan_depth_100, build
}
criterion_main!(benches);
