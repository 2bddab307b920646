//! Quarry's server crate: HTTP, the API surfaces, the shards and the command line.
//! `main.rs` parses the command line and calls in here; see ARCHITECTURE.md for the map.
//! The layers below are crates of their own (`quarry-core`, `quarry-services`,
//! `quarry-ingest`), re-exported under their module names so `crate::store::…` and
//! `quarry::store::…` read as before.

pub use quarry_core::{access, clock, config, error, ids, limits, llm, metrics, names, net, plans, runtime, scrub, store, sys, version};
pub use quarry_ingest as ingest_cli;
pub use quarry_services::{agents, app, auth, evaluate, extract, identity, research, search};

pub mod api;
pub mod cli;
pub mod http;
#[cfg(test)]
mod layers;
pub mod shard;
pub mod telemetry;
