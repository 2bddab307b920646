//! An HNSW graph over one segment's rows (hnsw_rs), used only to find candidates: every
//! candidate is re-scored exactly against the segment's own rows, so the scores a search
//! returns are the same as the exact scan's and only recall depends on the graph.
//!
//! Filters are applied to the candidates, not inside the graph walk: hnsw_rs's filtered
//! search never stops early (it walks the whole graph: 5.3 ms against 0.37 ms unfiltered
//! at 20k rows with 10% admitted), so a filter widens the candidate list by
//! 1 / (admitted share) instead, and a filter admitting fewer rows than [`HNSW_MIN_ROWS`]
//! sends the query to the exact scan, which then scores only the admitted rows.
//!
//! hnsw_rs keeps its own copy of every vector (in memory, and in the `.hnsw.data` file it
//! dumps), scaled to a norm just under 1: its dot distance asserts `a·b ≤ 1.000002`, which
//! a query equal to a stored unit row can break by rounding alone.

use std::fs::File;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use hnsw_rs::prelude::{AnnT, DistDot, Hnsw, HnswIo};

use super::dot::dot;
use super::exact::{check_rows, check_shape, exact_top_k, Hit};
use super::top_k::TopK;
use super::HNSW_MIN_ROWS;

/// The graph's shape and search width. Chosen by measurement (bench/results/vector-crossover.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HnswParams {
    /// Links per node per layer (M); the bottom layer keeps twice as many.
    pub max_nb_connection: usize,
    /// Candidate list width while inserting.
    pub ef_construction: usize,
    /// Least candidate list width while searching; a graph of `n` rows searches at least
    /// `n / ROWS_PER_EF` wide, and always at least as wide as the candidates it is asked for.
    pub ef_search: usize,
}

impl HnswParams {
    pub const DEFAULT: HnswParams = HnswParams { max_nb_connection: 24, ef_construction: 100, ef_search: 64 };
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams::DEFAULT
    }
}

/// Candidates asked of the graph: `max(k * CANDIDATES_PER_HIT, CANDIDATES_MIN)`.
pub const CANDIDATES_PER_HIT: usize = 4;
pub const CANDIDATES_MIN: usize = 40;
/// Search width grows with the graph: one unit of ef per this many rows (ef 250 at 100k,
/// where ef 64 found 0.88 of the exact top 10 and ef 256 0.99).
pub const ROWS_PER_EF: usize = 400;
/// The widest candidate list a filter may ask for before the scan is used instead.
const MAX_CANDIDATES: usize = 2_000;
/// Ids sampled (evenly spaced) to estimate the share of rows a filter admits.
const FILTER_SAMPLE: usize = 256;
/// Graph copies are scaled to this norm (see the module note).
const GRAPH_NORM: f32 = 1.0 - 1e-4;
/// Rows handed to hnsw_rs per parallel insert; bounds the scaled copies alive at once.
const INSERT_BATCH: usize = 8192;
/// hnsw_rs's own layer cap.
const MAX_LAYERS: usize = 16;

/// An HNSW graph built from, and searched against, one segment's rows.
pub struct HnswIndex {
    graph: Hnsw<'static, f32, DistDot>,
    dims: usize,
    len: usize,
    ef_search: usize,
    /// Filtered searches admitting fewer rows than this go to the exact scan.
    scan_below: usize,
}

impl HnswIndex {
    /// Builds the graph with [`HnswParams::DEFAULT`].
    pub fn build(rows: &[f32], dims: usize) -> HnswIndex {
        HnswIndex::build_with(rows, dims, HnswParams::DEFAULT)
    }

    /// Builds the graph over `rows` (row-major, `dims` per row; row `i` gets id `i`).
    ///
    /// Inserts run in parallel on the *current* rayon pool: the global one (one thread
    /// per CPU, normal priority) unless the caller runs this inside `ThreadPool::install`
    /// of a pool it sized and niced itself.
    pub fn build_with(rows: &[f32], dims: usize, params: HnswParams) -> HnswIndex {
        check_rows(rows, dims);
        let len = rows.len() / dims;
        let graph = Hnsw::new(params.max_nb_connection, len.max(1), MAX_LAYERS, params.ef_construction, DistDot);
        let mut scaled = Vec::with_capacity(INSERT_BATCH.min(len) * dims);
        for (batch, chunk) in rows.chunks(INSERT_BATCH * dims).enumerate() {
            scaled.clear();
            scaled.extend_from_slice(chunk);
            scaled.chunks_exact_mut(dims).for_each(scale_for_graph);
            let items: Vec<(&[f32], usize)> = scaled.chunks_exact(dims).enumerate().map(|(i, row)| (row, batch * INSERT_BATCH + i)).collect();
            graph.parallel_insert_slice(&items);
        }
        HnswIndex::ready(graph, dims, params.ef_search)
    }

    fn ready(mut graph: Hnsw<'static, f32, DistDot>, dims: usize, least_ef: usize) -> HnswIndex {
        graph.set_searching_mode(true);
        let len = graph.get_nb_point();
        HnswIndex { graph, dims, len, ef_search: least_ef.max(len / ROWS_PER_EF), scan_below: HNSW_MIN_ROWS }
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Number of rows in the graph.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Overrides the search width chosen from [`HnswParams::ef_search`] and the size.
    /// Not persisted: a loaded graph starts from the default.
    pub fn set_ef_search(&mut self, ef_search: usize) {
        self.ef_search = ef_search;
    }

    #[cfg(test)]
    pub(crate) fn set_scan_below(&mut self, rows: usize) {
        self.scan_below = rows;
    }

    /// The `k` best admitted rows, scored exactly against `rows` (the rows the graph was
    /// built from), best first, ties by id ascending.
    pub fn search(&self, rows: &[f32], query: &[f32], k: usize, allow: &dyn Fn(u32) -> bool) -> Vec<Hit> {
        check_shape(rows, self.dims, query);
        assert_eq!(rows.len() / self.dims, self.len, "rows are not the ones the graph was built from");
        if k == 0 || self.len == 0 {
            return Vec::new();
        }
        let admitted = admitted_share(self.len, allow);
        // The scan scores only admitted rows: fewer of them than HNSW_MIN_ROWS is cheaper
        // to scan than to search for through a graph that must skip the others.
        let want = ((k * CANDIDATES_PER_HIT).max(CANDIDATES_MIN) as f64 / admitted.max(1e-9)).ceil() as usize;
        if admitted * (self.len as f64) < self.scan_below as f64 || want > MAX_CANDIDATES {
            return exact_top_k(rows, self.dims, query, k, allow);
        }
        let hits = self.rescored_candidates(rows, query, k, want, allow);
        if hits.len() < k && admitted < 1.0 {
            // The filter admitted fewer candidates than the sample promised.
            return exact_top_k(rows, self.dims, query, k, allow);
        }
        hits
    }

    fn rescored_candidates(&self, rows: &[f32], query: &[f32], k: usize, want: usize, allow: &dyn Fn(u32) -> bool) -> Vec<Hit> {
        let mut graph_query = query.to_vec();
        scale_for_graph(&mut graph_query);
        let candidates = self.graph.search(&graph_query, want, want.max(self.ef_search));
        let mut top = TopK::new(k);
        for id in candidates.iter().map(|n| n.d_id as u32).filter(|&id| allow(id)) {
            let at = id as usize * self.dims;
            top.push(id, dot(&rows[at..at + self.dims], query));
        }
        top.into_sorted()
    }

    /// Writes `{basename}.hnsw.graph` (topology) and `{basename}.hnsw.data` (hnsw_rs's
    /// copy of the vectors) into `dir`, through temporary names renamed into place.
    pub fn save(&self, dir: &Path, basename: &str) -> io::Result<()> {
        let tmp = format!("{basename}.tmp");
        let dumped = catch_unwind(AssertUnwindSafe(|| self.graph.file_dump(dir, &tmp)));
        match dumped {
            Ok(Ok(name)) if name == tmp => {}
            Ok(Ok(name)) => return Err(io::Error::other(format!("dump hnsw {}: wrote {name} instead", dir.join(&tmp).display()))),
            Ok(Err(e)) => return Err(io::Error::other(format!("dump hnsw {}: {e}", dir.join(&tmp).display()))),
            Err(_) => return Err(io::Error::other(format!("dump hnsw {}: hnsw_rs panicked", dir.join(&tmp).display()))),
        }
        for suffix in ["hnsw.data", "hnsw.graph"] {
            let (from, to) = (dir.join(format!("{tmp}.{suffix}")), dir.join(format!("{basename}.{suffix}")));
            File::open(&from).and_then(|f| f.sync_all()).map_err(|e| with_path(e, "fsync", &from))?;
            std::fs::rename(&from, &to).map_err(|e| with_path(e, "rename", &to))?;
        }
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| with_path(e, "fsync", dir))
    }

    /// Reads a graph written by [`HnswIndex::save`], eagerly: the graph owns its vectors.
    pub fn load(dir: &Path, basename: &str) -> io::Result<HnswIndex> {
        for suffix in ["hnsw.graph", "hnsw.data"] {
            let path = dir.join(format!("{basename}.{suffix}"));
            std::fs::metadata(&path).map_err(|e| with_path(e, "open", &path))?;
        }
        // hnsw_rs ties the loaded graph's lifetime to its loader, which only matters when
        // the vectors are memory-mapped from the loader; we load them into memory, so the
        // small loader (two paths and a counter) is leaked to give the graph a 'static
        // lifetime without unsafe code.
        let loader: &'static HnswIo = Box::leak(Box::new(HnswIo::new(dir, basename)));
        let loaded = catch_unwind(AssertUnwindSafe(|| loader.load_hnsw_with_dist::<f32, DistDot>(DistDot)));
        let path = dir.join(format!("{basename}.hnsw.graph"));
        let graph = match loaded {
            Ok(Ok(graph)) => graph,
            Ok(Err(e)) => return Err(corrupt(&path, &e.to_string())),
            Err(_) => return Err(corrupt(&path, "hnsw_rs panicked while reading it")),
        };
        let dims = graph.get_point_indexation().get_data_dimension();
        if dims == 0 && graph.get_nb_point() > 0 {
            return Err(corrupt(&path, "vectors of zero dimensions"));
        }
        Ok(HnswIndex::ready(graph, dims, HnswParams::DEFAULT.ef_search))
    }
}

/// The share of `len` ids `allow` admits, estimated from evenly spaced ids.
fn admitted_share(len: usize, allow: &dyn Fn(u32) -> bool) -> f64 {
    let sample = len.min(FILTER_SAMPLE);
    let admitted = (0..sample).filter(|i| allow((i * len / sample) as u32)).count();
    admitted as f64 / sample as f64
}

/// Scales `v` to [`GRAPH_NORM`]; a zero or non-finite vector becomes zeros.
fn scale_for_graph(v: &mut [f32]) {
    let norm = dot(v, v).sqrt();
    let scale = if norm.is_finite() && norm > 0.0 { GRAPH_NORM / norm } else { 0.0 };
    v.iter_mut().for_each(|x| *x = if scale == 0.0 { 0.0 } else { *x * scale });
}

fn with_path(e: io::Error, op: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{op} {}: {e}", path.display()))
}

fn corrupt(path: &Path, reason: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("read hnsw {}: {reason}", path.display()))
}
