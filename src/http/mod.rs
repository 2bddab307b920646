//! HTTP/1.1 on glommio through hyper: connections, the route table's matcher, the
//! request context handlers get, one error renderer per surface, request and
//! response helpers. Only this module, `shard` and `main` know shards; it knows no
//! handler (the route table it is given names them).

pub mod body;
pub mod call;
pub mod conn;
mod handler;
// policies and the audit log (issue 37, policies): the one check and record of every route.
pub mod json_out;
mod oversight;
mod protocol_error;
pub mod response;
pub mod router;
pub mod server;
pub mod surface;

pub use server::{serve_shard, Shard};
