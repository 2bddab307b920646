//! The integration binary: every test that drives the real `quarry` binary over HTTP on loopback, one module per concern.
//!
//! Integration tests: the real `quarry` binary over real HTTP on loopback, with a
//! temporary data directory. One binary (quicker to link), one module per concern.

use quarry_test_support::{client, loopback, plans, prerequisite, scripted_llm, server};

/// The records store `s` runs on, opened beside it (redb: only while it is stopped).
pub(crate) fn records_of(s: &server::TestServer) -> quarry::store::Records {
    use quarry::store::{PostgresSettings, Records, StoreSettings};
    let settings = match s.store_url() {
        Some(url) => StoreSettings::Postgres(PostgresSettings {
            url: url.to_owned(),
            pool: 2,
            connect_timeout: std::time::Duration::from_secs(5),
            ca_pem: None,
        }),
        None => StoreSettings::Embedded,
    };
    Records::open_with(s.data(), &settings).expect("the store opens")
}

mod accounts_cli;
mod browser;
mod cluster;
mod collections;
mod compat;
mod early_answer;
mod egress;
mod embedders;
mod errors;
mod evaluate;
mod expand;
mod expand_quality;
mod extract;
mod formats;
mod gateway_clouds;
mod health;
mod identity;
mod ingest_cli;
mod install;
mod lifecycle;
mod limits;
mod models;
mod names;
mod network;
mod openapi;
mod plugin;
mod privacy;
mod quality;
mod rerank;
mod research;
mod routes;
mod sample;
mod scan;
mod schema;
mod search;
mod search_keyword;
// every script searchable (issue 38)
mod search_scripts;
mod shared_segments;
mod shared_store;
mod soat;
// SOAT actors (issue 36, actors).
mod soat_actors;
mod soat_agents;
mod soat_approvals;
mod soat_files;
mod soat_generate;
mod soat_generations;
// guardrails and approvals (issue 37)
mod soat_guardrails;
mod soat_identity;
mod soat_memory;
// policies, audit log, activity, exceptions (issue 37)
mod soat_policies;
// quotas, the model routes' circuit breaker, MCP calls' idempotency key (issue 37)
mod soat_breaker;
mod soat_mcp_idempotency;
mod soat_quotas;
// SOAT documents and knowledge in v0.28's names (issue 36, knowledge).
mod soat_documents;
mod soat_schemathesis;
mod soat_sessions;
mod soat_tenancy;
mod soat_tools;
mod soat_tutorials;
mod soat_users;
// webhooks (issue 36)
mod soat_webhooks;
// chats and embeddings (issue 36)
mod soat_chats;
// evaluations (issue 37)
mod soat_evals;
mod spec;
mod vendored;
mod web;
mod windows;
