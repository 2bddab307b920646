//! Limits: the per-account rate (token buckets shared by every shard), signups and open
//! connections per client address, and the monthly allowances (usage meters kept in
//! memory, durable before the work they admit).

pub mod bucket;
pub mod gate;
pub mod meters;
pub mod per_address;
pub mod per_client;
pub mod storage;

pub use bucket::{Bucket, Buckets, Decision, Pace};
pub use gate::{Gate, Slot};
pub use meters::{AccountMeters, Meter, Meters};
pub use per_address::PerAddress;
pub use per_client::{ClientSlot, PerClient};
pub use storage::StorageLedger;
