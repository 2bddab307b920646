//! Semantic search over window vectors: a page ranks by its best window, depth counts
//! pages, on every path (the in-memory scan, a flushed segment's scan, its HNSW graph).

use super::*;
use crate::collection::tests::doc;
use crate::collection::{Collection, Options};
use crate::segment::WindowRec;
use crate::vector::dot::dot;
use crate::vector::sample::{unit, Rng};

const DIMS: usize = 16;

/// Words of its own, so that no two pages fold as near-duplicates.
fn text(rng: &mut Rng) -> String {
    (0..12).map(|_| format!("w{}", rng.next_u64() % 100_000)).collect::<Vec<_>>().join(" ")
}

/// Document `v{i}`: one page of `1 + i % 5` windows, random unit rows.
fn windowed(i: usize, rng: &mut Rng) -> crate::segment::Batch {
    let mut d = doc(&format!("v{i}"), &[&text(rng)]);
    d.dims = DIMS as u32;
    for w in 0..1 + i % 5 {
        d.vectors.extend(unit(rng, DIMS));
        d.windows.push(WindowRec { page: 0, first_pos: w as u32, chunks: 1 });
    }
    d
}

/// The ids of the `k` documents whose best window is nearest `q`, by brute force.
fn by_best_window(docs: &[crate::segment::Batch], q: &[f32], k: usize, skip: &[&str]) -> Vec<String> {
    let mut best: Vec<(f32, String)> = docs
        .iter()
        .filter(|d| !skip.contains(&d.docs[0].id.as_str()))
        .map(|d| (d.vectors.chunks(DIMS).map(|row| dot(row, q)).fold(f32::MIN, f32::max), d.docs[0].id.clone()))
        .collect();
    best.sort_by(|a, b| b.0.total_cmp(&a.0));
    best.into_iter().take(k).map(|(_, id)| id).collect()
}

fn found(c: &Collection, q: &Query) -> Vec<String> {
    let snap = c.snapshot();
    let hits = search(&snap, q).hits;
    hits.iter()
        .map(|h| {
            let b = snap.views[h.view].batch();
            b.docs[b.pages[h.page as usize].doc.to_native() as usize].id.as_str().to_owned()
        })
        .collect()
}

#[test]
fn a_page_ranks_by_its_best_window_and_depth_counts_pages_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { hnsw_min_rows: 200, ..Options::default() };
    let (c, _) = Collection::open("col_w", dir.path(), opts).unwrap();
    let mut rng = Rng::new(7);
    let docs: Vec<_> = (0..120).map(|i| windowed(i, &mut rng)).collect();
    for d in &docs {
        c.add(d.clone()).unwrap();
    }
    let mut q = Query::new("", Mode::Semantic);
    // Lists as deep as the answer: 10 pages out of 360 rows needs more than 10 rows.
    (q.k, q.depth) = (10, 10);
    let queries: Vec<Vec<f32>> = (0..5).map(|_| unit(&mut rng, DIMS)).collect();
    let want: Vec<Vec<String>> = queries.iter().map(|v| by_best_window(&docs, v, 10, &[])).collect();
    let check = |c: &Collection, path: &str| {
        for (v, want) in queries.iter().zip(&want) {
            let q = Query { vector: Some(v.clone()), ..q.clone() };
            assert_eq!(&found(c, &q), want, "{path}");
        }
    };
    check(&c, "in-memory scan");
    c.flush().unwrap();
    assert!(!c.snapshot().views[0].is_memory());
    check(&c, "segment scan");
    assert_eq!(c.attach_graphs().unwrap(), 1, "360 window rows are over the graph's 200");
    check(&c, "segment graph");

    // A deleted page's windows are skipped, however good.
    let top = want[0][0].clone();
    c.delete(&top).unwrap();
    let q0 = Query { vector: Some(queries[0].clone()), ..q.clone() };
    assert_eq!(found(&c, &q0), by_best_window(&docs, &queries[0], 10, &[&top]));
}

#[test]
fn a_page_found_only_by_a_later_window_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let (c, _) = Collection::open("col_t", dir.path(), Options::default()).unwrap();
    let mut rng = Rng::new(3);
    let target = unit(&mut rng, DIMS);
    // "tail": its first window is the query's opposite, its third the query itself.
    let mut tail = doc("tail", &[&text(&mut rng)]);
    tail.dims = DIMS as u32;
    for (w, row) in [target.iter().map(|x| -x).collect::<Vec<f32>>(), unit(&mut rng, DIMS), target.clone()].into_iter().enumerate() {
        tail.vectors.extend(row);
        tail.windows.push(WindowRec { page: 0, first_pos: w as u32, chunks: 1 });
    }
    c.add(tail).unwrap();
    for i in 0..30 {
        let mut d = doc(&format!("o{i}"), &[&text(&mut rng)]);
        d.dims = DIMS as u32;
        d.vectors = unit(&mut rng, DIMS);
        d.windows = vec![WindowRec { page: 0, first_pos: 0, chunks: 1 }];
        c.add(d).unwrap();
    }
    let q = Query { vector: Some(target), k: 3, depth: 3, ..Query::new("", Mode::Semantic) };
    assert_eq!(found(&c, &q)[0], "tail");
}
