//! Quarry's services: keys, collections and their search, agents and their generations,
//! research, extraction, evaluation, identity, and the composition root (`app`) that
//! builds each once. They stand on `quarry-core` (re-exported below under its own module
//! names, so a path reads `crate::store::…` in either crate) and know no route, handler
//! or shard: the server crate calls in here, never the other way.

pub use quarry_core::{access, clock, config, error, ids, limits, llm, metrics, names, net, plans, runtime, scrub, store, sys, version};

pub mod agents;
pub mod app;
pub mod auth;
pub mod cluster;
pub mod evaluate;
pub mod extract;
pub mod identity;
pub mod research;
pub mod search;
