//! Opening a segment: a real segment file of 2,000 SciFact abstracts (see
//! `common/scifact.rs`), mapped and checked as the engine opens it at start-up and after
//! every flush and merge, against the same open without rkyv's validation of the archive.
//!
//!     cargo bench -p quarry-bench --bench segment_open
//!
//! - `validated`: `BatchView::open`: mmap, header (magic, version, length, CRC-32 of the
//!   archive), then `rkyv::access`, which walks and checks every offset and string.
//! - `unchecked`: `BatchView::open_unchecked` (a bench hook): the same mapping and header
//!   checks, no archive validation; reads are then unchecked as they are after `open`.
//! - `view`: `View::segment`, what a collection opens per segment: the batch (validated)
//!   and its tantivy index.
//!
//! The file stays in the page cache, so this is CPU, not disk. Throughput is in bytes of
//! segment file.

#[path = "../common/scifact.rs"]
mod scifact;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use quarry_index::collection::view::View;
use quarry_index::segment::BatchView;

const DOCS: usize = 2_000;

fn open(c: &mut Criterion) {
    let corpus = scifact::corpus(DOCS);
    let path = corpus.segment.as_path();
    let bytes = std::fs::metadata(path).expect("the segment file").len();
    let docs = |v: &BatchView| v.batch().docs.len();
    assert_eq!(docs(&BatchView::open(path).expect("a valid segment")), DOCS);
    let mut g = c.benchmark_group("segment-open");
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("validated", |b| b.iter(|| BatchView::open(path).expect("open")));
    g.bench_function("unchecked", |b| {
        // SAFETY: `BatchView::open` accepted this file above and nothing writes to it.
        b.iter(|| unsafe { BatchView::open_unchecked(path) }.expect("open"))
    });
    g.bench_function("view", |b| b.iter(|| View::segment(&corpus.dir, corpus.segment_seq).expect("open")));
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = open
}
criterion_main!(benches);
