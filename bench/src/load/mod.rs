//! The HTTP/1.1 load generator behind `quarry-load`: closed-loop keep-alive connections
//! against a loopback server, each client thread running its own event loop, latency per
//! request in an HDR histogram.
//!
//! A run is a [`LoadConfig`]: a checked [`Target`], a [`Scenario`] of prepared requests to
//! cycle through, and the shape of the load. Search and ingest scenarios plug in by building
//! the `Scenario` (e.g. from evaluation queries) and calling [`run`].

mod conn;
pub mod duration;
pub mod pin;
mod read_buf;
pub mod report;
pub mod request;
pub mod response;
mod runner;
pub mod scenario;
pub mod stats;
pub mod sys;
pub mod target;

pub use pin::CpuList;
pub use report::Report;
pub use request::RequestSpec;
pub use runner::{run, LoadConfig, RunError};
pub use scenario::Scenario;
pub use target::Target;
