//! Quarry's server crate. `main.rs` parses the command line and calls in here; see
//! ARCHITECTURE.md for the map.

pub mod agents;
pub mod api;
pub mod app;
pub mod auth;
pub mod cli;
pub mod clock;
pub mod config;
pub mod error;
pub mod evaluate;
pub mod extract;
pub mod http;
pub mod identity;
pub mod ids;
pub mod ingest_cli;
#[cfg(test)]
mod layers;
pub mod limits;
pub mod llm;
pub mod metrics;
pub mod net;
pub mod plans;
pub mod research;
pub mod runtime;
pub mod search;
pub mod shard;
pub mod store;
pub mod sys;
pub mod telemetry;
pub mod version;
