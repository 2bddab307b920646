//! Weighted reciprocal-rank fusion of a keyword and a semantic list at the server's
//! default depth (100 pages per list, `rrf_k` 60, weights 1 and 1), as hybrid search
//! runs it, and at depth 200.
//!
//!     cargo bench -p quarry-bench --bench fusion
//!
//! Fusion reads nothing but the page keys, so the lists are keys over 4 views of 2,000
//! pages each, the second list sharing 0%, 30% or 100% of the first's pages (its
//! shared pages in another order). Throughput is fusions (one per hybrid search).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use quarry_index::search::fusion::{rrf, PageKey};
use quarry_index::vector::sample::Rng;

const VIEWS: u32 = 4;
const PAGES: u32 = 2_000;

/// `depth` distinct page keys in a random order.
fn ranked(rng: &mut Rng, depth: usize, exclude: &[PageKey]) -> Vec<PageKey> {
    let mut out: Vec<PageKey> = Vec::with_capacity(depth);
    while out.len() < depth {
        let key = ((rng.next_u64() % VIEWS as u64) as u32, (rng.next_u64() % PAGES as u64) as u32);
        if !out.contains(&key) && !exclude.contains(&key) {
            out.push(key);
        }
    }
    out
}

/// Two lists of `depth`, the second holding `shared` of the first's pages.
fn lists(seed: u64, depth: usize, shared: usize) -> (Vec<PageKey>, Vec<PageKey>) {
    let mut rng = Rng::new(seed);
    let keyword = ranked(&mut rng, depth, &[]);
    let mut semantic = ranked(&mut rng, depth - shared, &keyword);
    for (n, key) in keyword.iter().rev().take(shared).enumerate() {
        // Spread the shared pages through the list, best keyword pages near the end.
        let at = (n * 7919) % (semantic.len() + 1);
        semantic.insert(at, *key);
    }
    (keyword, semantic)
}

fn fusion(c: &mut Criterion) {
    let mut g = c.benchmark_group("rrf");
    g.throughput(Throughput::Elements(1));
    for depth in [100, 200] {
        for percent in [0, 30, 100] {
            let (keyword, semantic) = lists(depth as u64 + percent as u64, depth, depth * percent / 100);
            g.bench_function(BenchmarkId::new(format!("depth{depth}"), format!("shared{percent}%")), |b| {
                b.iter(|| rrf([black_box(&keyword), black_box(&semantic)], [1.0, 1.0], 60.0))
            });
        }
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = fusion
}
criterion_main!(benches);
