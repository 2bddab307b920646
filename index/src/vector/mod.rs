//! Semantic search over one segment's vectors: L2-normalised f32 rows, row-major in a
//! memory-mapped file, so cosine similarity is a dot product.

pub mod dot;
