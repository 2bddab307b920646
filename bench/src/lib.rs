//! Quarry's instruments. `load` is the HTTP/1.1 load generator that `quarry-load` drives
//! and that later search and ingest scenarios will reuse; `eval` says where the full
//! evaluation sets are.
pub mod eval;
pub mod load;
pub mod quality;
