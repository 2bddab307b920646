//! Limits: the per-key rate (token buckets shared by every shard) and the monthly
//! allowances (usage meters kept in memory and flushed to the store).

pub mod bucket;
pub mod meters;

pub use bucket::{Bucket, Buckets, Decision};
pub use meters::{Meter, Meters};
