//! Every path against a naive reference: the exact scan against sort-everything, the
//! graph (with re-scoring) against the exact scan, the filter on both, and save → load.

use proptest::prelude::*;

use super::sample::{Clusters, Rng};
use super::*;

/// Mean share of the exact top-10 ids that `found` returns.
pub(crate) fn recall_at_10(rows: &[f32], dims: usize, queries: &[f32], found: impl Fn(&[f32]) -> Vec<Hit>) -> f64 {
    let mut sum = 0.0;
    for q in queries.chunks_exact(dims) {
        let truth: Vec<u32> = exact_top_k(rows, dims, q, 10, &|_| true).iter().map(|h| h.id).collect();
        let got = found(q);
        sum += got.iter().filter(|h| truth.contains(&h.id)).count() as f64 / truth.len() as f64;
    }
    sum / (queries.len() / dims) as f64
}

fn naive_top_k(rows: &[f32], dims: usize, query: &[f32], k: usize, allow: &dyn Fn(u32) -> bool) -> Vec<Hit> {
    let mut all: Vec<Hit> = (0u32..)
        .zip(rows.chunks_exact(dims))
        .filter(|(id, _)| allow(*id))
        .map(|(id, row)| Hit { id, score: row.iter().zip(query).map(|(a, b)| a * b).sum() })
        .collect();
    all.sort_by(super::top_k::best_first);
    all.truncate(k);
    all
}

proptest! {
    #[test]
    fn exact_top_k_equals_sorting_everything(
        dims in 1usize..24,
        n in 0usize..200,
        k in 0usize..30,
        modulus in 1u32..5,
        seed in any::<u64>(),
        // Small integer values make many exact ties, which the id order must break.
        small_ints in any::<bool>(),
    ) {
        let mut rng = Rng::new(seed);
        let mut value = || if small_ints { (rng.next_u64() % 3) as f32 - 1.0 } else { rng.gaussian() };
        let rows: Vec<f32> = (0..n * dims).map(|_| value()).collect();
        let query: Vec<f32> = (0..dims).map(|_| value()).collect();
        let allow = |id: u32| id.is_multiple_of(modulus);
        let got = exact_top_k(&rows, dims, &query, k, &allow);
        let want = naive_top_k(&rows, dims, &query, k, &allow);
        prop_assert_eq!(got.iter().map(|h| h.id).collect::<Vec<_>>(), want.iter().map(|h| h.id).collect::<Vec<_>>());
        for (g, w) in got.iter().zip(&want) {
            prop_assert!((g.score - w.score).abs() <= 1e-4 * (1.0 + w.score.abs()));
        }
    }
}

#[test]
fn ties_come_back_by_id_ascending() {
    let rows = [1.0, 0.0, 0.5, 0.0, 1.0, 0.0, 1.0, 0.0];
    let hits = exact_top_k(&rows, 2, &[1.0, 0.0], 3, &|_| true);
    assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), [0, 2, 3]);
}

#[test]
fn negative_zero_score_ties_with_zero_and_falls_back_to_id_order() {
    // A -1 row against a 0 query scores -0.0, which `total_cmp` alone ranks below 0.0.
    let rows = [-1.0, 1.0, -1.0, 0.0];
    let hits = exact_top_k(&rows, 1, &[0.0], 4, &|_| true);
    assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), [0, 1, 2, 3]);
}

#[test]
fn zero_k_and_no_rows_give_nothing() {
    assert!(exact_top_k(&[1.0, 0.0], 2, &[1.0, 0.0], 0, &|_| true).is_empty());
    assert!(exact_top_k(&[], 2, &[1.0, 0.0], 5, &|_| true).is_empty());
}

const DIMS: usize = 384;
const SMALL_ROWS: usize = 1_000;
const SIGMA: f32 = 0.05;

/// Rows, queries and a graph small enough to build in a debug test, built once.
fn small_fixture() -> &'static (Vec<f32>, Vec<f32>, HnswIndex) {
    static FIXTURE: std::sync::OnceLock<(Vec<f32>, Vec<f32>, HnswIndex)> = std::sync::OnceLock::new();
    FIXTURE.get_or_init(|| {
        let mut rng = Rng::new(7);
        let clusters = Clusters::new(&mut rng, DIMS, 50);
        let rows = clusters.sample(&mut rng, SMALL_ROWS, SIGMA);
        let queries = clusters.sample(&mut rng, 50, SIGMA);
        let graph = HnswIndex::build(&rows, DIMS);
        (rows, queries, graph)
    })
}

#[test]
fn graph_search_respects_the_filter_and_finds_the_exact_scores() {
    let (rows, queries, _) = small_fixture();
    let (rows, queries) = (rows.as_slice(), queries.as_slice());
    // Its own graph, so the filtered graph path runs at this size too (not just the scan).
    let mut graph = HnswIndex::build(rows, DIMS);
    graph.set_scan_below(100);
    for (share, allow) in [(50, &(|id: u32| id % 2 == 1) as &dyn Fn(u32) -> bool), (1, &|id: u32| id % 100 == 3)] {
        for q in queries.chunks_exact(DIMS).take(10) {
            let hits = graph.search(rows, q, 10, allow);
            assert_eq!(hits.len(), 10, "{share}% admitted");
            assert!(hits.iter().all(|h| allow(h.id)), "{share}% admitted: a disallowed id came back");
            for h in &hits {
                let row = &rows[h.id as usize * DIMS..][..DIMS];
                assert_eq!(h.score, dot::dot(row, q), "scores are re-scored exactly");
            }
        }
    }
}

#[test]
fn small_graph_recall_at_10() {
    let (rows, queries, graph) = small_fixture();
    let (rows, queries) = (rows.as_slice(), queries.as_slice());
    let recall = recall_at_10(rows, DIMS, queries, |q| graph.search(rows, q, 10, &|_| true));
    assert!(recall >= 0.98, "recall@10 {recall}");
}

fn recall_at_10_filtered(rows: &[f32], queries: &[f32], allow: &dyn Fn(u32) -> bool, found: impl Fn(&[f32]) -> Vec<Hit>) -> f64 {
    let mut sum = 0.0;
    for q in queries.chunks_exact(DIMS) {
        let truth: Vec<u32> = exact_top_k(rows, DIMS, q, 10, allow).iter().map(|h| h.id).collect();
        sum += found(q).iter().filter(|h| truth.contains(&h.id)).count() as f64 / 10.0;
    }
    sum / (queries.len() / DIMS) as f64
}

#[test]
#[cfg_attr(debug_assertions, ignore = "builds a 20k-row graph: run with --release")]
fn graph_recall_at_10_on_20k_clustered_rows() {
    let mut rng = Rng::new(11);
    let clusters = Clusters::new(&mut rng, DIMS, 50);
    let rows = &clusters.sample(&mut rng, 20_000, SIGMA)[..];
    let queries = &clusters.sample(&mut rng, 200, SIGMA)[..];
    let graph = HnswIndex::build(rows, DIMS);
    let recall = recall_at_10(rows, DIMS, queries, |q| graph.search(rows, q, 10, &|_| true));
    eprintln!("recall@10 on 20k clustered rows: {recall:.4}");
    assert!(recall >= 0.98, "recall@10 {recall}");
    // 10k admitted rows: over HNSW_MIN_ROWS, so this is the graph with widened candidates.
    let half = |id: u32| id.is_multiple_of(2);
    let recall = recall_at_10_filtered(rows, queries, &half, |q| graph.search(rows, q, 10, &half));
    eprintln!("recall@10 on 20k clustered rows, half admitted: {recall:.4}");
    assert!(recall >= 0.98, "recall@10 with half the rows admitted {recall}");
}

#[test]
fn both_paths_respect_the_filter() {
    let (rows, queries, _) = small_fixture();
    let (rows, q) = (&rows[..500 * DIMS], &queries[..DIMS]);
    let graph = HnswIndex::build(rows, DIMS);
    let allow = |id: u32| !id.is_multiple_of(3);
    let exact = exact_top_k(rows, DIMS, q, 10, &allow);
    let approx = graph.search(rows, q, 10, &allow);
    assert!(exact.iter().chain(&approx).all(|h| allow(h.id)));
    let ids = |hits: &[Hit]| hits.iter().map(|h| h.id).collect::<Vec<_>>();
    assert_eq!(ids(&exact), ids(&naive_top_k(rows, DIMS, q, 10, &allow)));
    assert_eq!(approx.len(), 10);
}

#[test]
fn save_then_load_gives_identical_results() {
    let (rows, queries, graph) = small_fixture();
    let (rows, queries) = (rows.as_slice(), queries.as_slice());
    let dir = std::env::temp_dir().join(format!("quarry-vector-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    graph.save(&dir, "seg-1").unwrap();
    let loaded = HnswIndex::load(&dir, "seg-1").unwrap();
    assert_eq!((loaded.dims(), loaded.len()), (graph.dims(), graph.len()));
    for q in queries.chunks_exact(DIMS) {
        assert_eq!(loaded.search(rows, q, 10, &|_| true), graph.search(rows, q, 10, &|_| true));
    }
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["seg-1.hnsw.data", "seg-1.hnsw.graph"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn loading_a_missing_graph_is_an_error_naming_the_file() {
    let err = HnswIndex::load(std::path::Path::new("/nonexistent-quarry"), "seg").err().unwrap();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    assert!(err.to_string().contains("/nonexistent-quarry/seg.hnsw.graph"), "{err}");
}

/// Not a test: prints recall@10 and timings for a grid of graph parameters.
///     cargo test --release -p quarry-index --lib tune_hnsw -- --ignored --nocapture
#[test]
#[ignore = "parameter sweep, run by hand with --release"]
fn tune_hnsw_params() {
    use std::time::Instant;
    let rows_n: usize = std::env::var("TUNE_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let mut rng = Rng::new(11);
    let clusters = Clusters::new(&mut rng, DIMS, 50);
    let rows = clusters.sample(&mut rng, rows_n, SIGMA);
    let queries = clusters.sample(&mut rng, 200, SIGMA);
    let nq = queries.len() / DIMS;
    let t = Instant::now();
    for q in queries.chunks_exact(DIMS) {
        std::hint::black_box(exact_top_k(&rows, DIMS, q, 10, &|_| true));
    }
    eprintln!("rows {rows_n}: exact {:.1} us/query", t.elapsed().as_secs_f64() * 1e6 / nq as f64);
    // TUNE_GRID="16:100,24:200" picks (M, ef_construction) pairs; TUNE_EF="64,128" the widths.
    let list = |var: &str, default: &str| -> Vec<String> { std::env::var(var).unwrap_or(default.into()).split(',').map(str::to_owned).collect() };
    let grid: Vec<(usize, usize)> = list("TUNE_GRID", "12:100,16:100,16:200,24:200,32:200")
        .iter()
        .map(|p| p.split_once(':').map(|(m, e)| (m.parse().unwrap(), e.parse().unwrap())).unwrap())
        .collect();
    let efs: Vec<usize> = list("TUNE_EF", "40,64,100,160").iter().map(|e| e.parse().unwrap()).collect();
    for (m, efc) in grid {
        let t = Instant::now();
        let mut graph = HnswIndex::build_with(&rows, DIMS, HnswParams { max_nb_connection: m, ef_construction: efc, ef_search: 40 });
        let build = t.elapsed().as_secs_f64();
        for &ef in &efs {
            graph.set_ef_search(ef);
            let recall = recall_at_10(&rows, DIMS, &queries, |q| graph.search(&rows, q, 10, &|_| true));
            let t = Instant::now();
            for q in queries.chunks_exact(DIMS) {
                std::hint::black_box(graph.search(&rows, q, 10, &|_| true));
            }
            let us = t.elapsed().as_secs_f64() * 1e6 / nq as f64;
            eprintln!("M {m:2} efc {efc:3} build {build:6.2}s  ef {ef:3}: recall@10 {recall:.4}  {us:7.1} us/query");
        }
    }
}
