//! Limits: the per-key rate (token buckets shared by every shard), signups per client
//! address, and the monthly allowances (usage meters kept in memory and flushed to the
//! store).

pub mod bucket;
pub mod gate;
pub mod meters;
pub mod per_address;

pub use bucket::{Bucket, Buckets, Decision, Pace};
pub use gate::{Gate, Slot};
pub use meters::{AccountMeters, Meter, Meters};
pub use per_address::PerAddress;
