//! The OpenAPI documents Quarry serves, one per surface, embedded at build time:
//! `GET /openapi.json` (AgentLex as Quarry implements it, with its error codes, its
//! extensions, /metrics, these routes and the console's), `/openapi/retrieval.json`,
//! `/openapi/agents.json` (SOAT, /api/v1) and `/openapi/gateway.json` (OpenAI's shapes).
//! `ops/build-openapi-documents` writes the JSON files beside this one from the specs
//! as given; the tests below hold them to the route table, so that no route exists
//! without its documentation and no documented operation without its route.

use bytes::Bytes;
use hyper::StatusCode;

use crate::app::App;
use crate::http::response::{self, Reply};

pub const AGENTLEX: &str = include_str!("agentlex.json");
pub const RETRIEVAL: &str = include_str!("retrieval.json");
pub const AGENTS: &str = include_str!("agents.json");
pub const GATEWAY: &str = include_str!("gateway.json");

/// Every document with the path it is served at, AgentLex's first.
pub const DOCUMENTS: [(&str, &str); 4] =
    [("/openapi.json", AGENTLEX), ("/openapi/retrieval.json", RETRIEVAL), ("/openapi/agents.json", AGENTS), ("/openapi/gateway.json", GATEWAY)];

fn serve(doc: &'static str) -> Reply {
    response::json_bytes(StatusCode::OK, Bytes::from_static(doc.as_bytes()))
}

pub fn agentlex(_: &App) -> Reply {
    serve(AGENTLEX)
}

pub fn retrieval(_: &App) -> Reply {
    serve(RETRIEVAL)
}

pub fn agents(_: &App) -> Reply {
    serve(AGENTS)
}

pub fn gateway(_: &App) -> Reply {
    serve(GATEWAY)
}

#[cfg(test)]
mod tests;
