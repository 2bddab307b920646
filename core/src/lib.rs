//! Quarry's core: what every service stands on. The leaves (codes and errors, ids, names, access, time,
//! plans, the OS, sockets, the executors' helpers, the per-shard counters), the provider
//! layer (`llm`), the records store, the limits and the configuration. Nothing here knows
//! a service, a route or a shard: a `use` of one does not compile. ARCHITECTURE.md draws
//! the layers; the server crate's `layers` test keeps their order inside each crate.

pub mod access;
pub mod clock;
pub mod config;
pub mod error;
pub mod ids;
pub mod limits;
pub mod llm;
pub mod metrics;
pub mod names;
pub mod net;
pub mod plans;
pub mod runtime;
pub mod scrub;
pub mod segments;
pub mod store;
pub mod sys;
pub mod version;
