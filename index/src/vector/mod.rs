//! Semantic search over one segment's vectors: L2-normalised f32 rows, row-major in a
//! memory-mapped file, so cosine similarity is a dot product and every path reads the
//! rows through a borrowed `&[f32]` without copying them.
//!
//! A segment is searched either by the exact scan ([`exact_top_k`]) or through its HNSW
//! graph ([`HnswIndex`]), whose candidates are re-scored exactly. Small segments are
//! scanned: below [`HNSW_MIN_ROWS`] rows the scan is as fast as the graph, and exact. A
//! large segment is also scanned until its graph has been built or loaded; scans of
//! larger segments go through their int8 copy ([`Quantized`]). The choice is made per
//! view in `search::semantic`.

pub mod dot;
mod exact;
mod hnsw;
mod quantized;
pub mod sample;
mod top_k;
pub(crate) use top_k::total_order_bits;

#[cfg(test)]
mod tests;

pub use exact::{exact_top_k, Hit};
pub use hnsw::{HnswIndex, HnswParams, CANDIDATES_MIN, CANDIDATES_PER_HIT, ROWS_PER_EF};
pub use quantized::Quantized;

/// Segments with fewer rows than this are searched by the exact scan: measured in
/// bench/results/vector-crossover.md (HNSW search plus re-scoring against the scan).
pub const HNSW_MIN_ROWS: usize = 8_000;
