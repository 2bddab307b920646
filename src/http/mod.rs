//! HTTP/1.1 on glommio through hyper: connections, routing, the one error table,
//! request and response helpers, metrics. Only this module and `main` know shards.

pub mod body;
pub mod conn;
pub mod error;
mod handler;
pub mod io;
pub mod json_out;
pub mod metrics;
pub mod response;
pub mod router;
pub mod server;

pub use server::{serve_shard, Shard};
