//! The route table: one row per method and path, with its surface (from the path),
//! whether it needs a key, its rate cost and its handler. Adding a route is adding a
//! row here; 404, 405 and `Allow`, the error shape and the metrics name follow from it.

use futures_util::future::LocalBoxFuture;
use hyper::Method;

use super::agentlex::{account, chunk, collections, documents, evaluate, extract, health, keys, research, sample, scan, search, signup};
use super::openai;
use super::openapi;
use super::openindex;
use super::soat;
use super::web;
use crate::config::Config;
use crate::error::ApiError;
use crate::http::call::Call;
use crate::http::response::Reply;
use crate::http::router::{Handler, Route, Router};
use crate::http::surface::Surface;

/// A handler `async fn(Call, p1, p2, …)` as a table entry: the named path parameters
/// are taken out of the call and passed in order.
macro_rules! call {
    ($f:path $(, $p:ident)*) => {{
        #[allow(unused_mut)]
        fn handler<'a>(mut c: Call<'a>) -> LocalBoxFuture<'a, Result<Reply, ApiError>> {
            $(let $p = c.params.take(stringify!($p));)*
            Box::pin($f(c $(, $p)*))
        }
        Handler::Call(handler)
    }};
}

/// A row that needs a key and costs one token; see [`public`] and [`costs`].
fn row(method: Method, path: &'static str, name: &'static str, handler: Handler) -> Route {
    Route { method, path, name, surface: Surface::of_path(path), auth: true, cost: 1, handler }
}

fn public(r: Route) -> Route {
    Route { auth: false, ..r }
}

fn costs(cost: u64, r: Route) -> Route {
    Route { cost, ..r }
}

async fn panic_route(_: Call<'_>) -> Result<Reply, ApiError> {
    panic!("GET /v1/_panic (debug.panic_route is on)")
}

/// Every route this server serves.
pub fn table(config: &Config) -> Vec<Route> {
    use Method as M;
    let mut t = vec![
        // AgentLex: the server, accounts and keys.
        public(row(M::GET, "/v1/health", "health", Handler::Immediate(health::health))),
        public(row(M::GET, "/v1/plans", "plans", Handler::Immediate(health::plans))),
        public(row(M::GET, "/metrics", "metrics", Handler::Immediate(health::metrics))),
        // The OpenAPI documents, one per surface (src/api/openapi/).
        public(row(M::GET, "/openapi.json", "openapi_agentlex", Handler::Immediate(openapi::agentlex))),
        public(row(M::GET, "/openapi/retrieval.json", "openapi_retrieval", Handler::Immediate(openapi::retrieval))),
        public(row(M::GET, "/openapi/agents.json", "openapi_agents", Handler::Immediate(openapi::agents))),
        public(row(M::GET, "/openapi/gateway.json", "openapi_gateway", Handler::Immediate(openapi::gateway))),
        // What a person opens: the console and the API reference (src/api/web.rs).
        public(row(M::GET, "/", "root", Handler::Immediate(web::root))),
        public(row(M::GET, "/console", "console", Handler::Immediate(web::console))),
        public(row(M::GET, "/console/{file}", "console_file", call!(web::console_file, file))),
        public(row(M::GET, "/docs", "docs", Handler::Immediate(web::docs))),
        public(row(M::GET, "/docs/{file}", "docs_file", call!(web::docs_file, file))),
        public(row(M::POST, "/v1/signup", "signup", call!(signup::signup))),
        row(M::GET, "/v1/account", "account", call!(account::account)),
        row(M::POST, "/v1/keys", "create_key", call!(keys::create)),
        row(M::GET, "/v1/keys", "list_keys", call!(keys::list)),
        row(M::DELETE, "/v1/keys/{prefix}", "revoke_key", call!(keys::revoke, prefix)),
        // AgentLex: collections, documents, search.
        // The chunking of a document, previewed: no key, nothing stored.
        public(row(M::POST, "/v1/chunk", "chunk", call!(chunk::chunk))),
        row(M::GET, "/v1/collections", "list_collections", call!(collections::list)),
        row(M::POST, "/v1/collections", "create_collection", call!(collections::create)),
        row(M::GET, "/v1/collections/{id}", "get_collection", call!(collections::get, id)),
        row(M::PATCH, "/v1/collections/{id}", "update_collection", call!(collections::update, id)),
        row(M::DELETE, "/v1/collections/{id}", "delete_collection", call!(collections::delete, id)),
        row(M::GET, "/v1/collections/{id}/documents", "list_documents", call!(documents::list, id)),
        row(M::POST, "/v1/collections/{id}/documents", "add_document", call!(documents::add, id)),
        row(M::GET, "/v1/collections/{id}/documents/{doc}", "get_document", call!(documents::get, id, doc)),
        row(M::DELETE, "/v1/collections/{id}/documents/{doc}", "delete_document", call!(documents::delete, id, doc)),
        row(M::GET, "/v1/collections/{id}/documents/{doc}/pages/{n}", "get_page", call!(documents::page, id, doc, n)),
        row(M::POST, "/v1/collections/{id}/search", "search", call!(search::search, id)),
        row(M::POST, "/v1/collections/{id}/extract", "extract", call!(extract::extract, id)),
        costs(5, row(M::POST, "/v1/collections/{id}/research", "research", call!(research::research, id))),
        costs(5, row(M::POST, "/v1/collections/{id}/evaluate", "evaluate", call!(evaluate::evaluate, id))),
        row(M::POST, "/v1/collections/{id}/sample", "sample", call!(sample::sample, id)),
        // AgentLex: identifiers.
        row(M::POST, "/v1/scan", "scan", call!(scan::scan)),
        // The OpenAI-compatible gateway.
        row(M::POST, "/v1/chat/completions", "chat_completions", call!(openai::chat::completions)),
        row(M::GET, "/v1/models", "models", call!(openai::models::list)),
        // The retrieval plugin, at the root and under /sub (the seed spec's server URL).
        row(M::POST, "/query", "plugin_query", call!(openindex::query::query)),
        row(M::POST, "/upsert", "plugin_upsert", call!(openindex::upsert::upsert)),
        row(M::POST, "/upsert-file", "plugin_upsert_file", call!(openindex::upsert::upsert_file)),
        row(M::DELETE, "/delete", "plugin_delete", call!(openindex::delete::delete)),
        row(M::POST, "/delete", "plugin_delete_post", call!(openindex::delete::delete)),
        row(M::POST, "/sub/query", "plugin_sub_query", call!(openindex::query::query)),
        row(M::POST, "/sub/upsert", "plugin_sub_upsert", call!(openindex::upsert::upsert)),
        row(M::POST, "/sub/upsert-file", "plugin_sub_upsert_file", call!(openindex::upsert::upsert_file)),
        row(M::DELETE, "/sub/delete", "plugin_sub_delete", call!(openindex::delete::delete)),
        row(M::POST, "/sub/delete", "plugin_sub_delete_post", call!(openindex::delete::delete)),
        // SOAT (/api/v1): projects and keys.
        row(M::GET, "/api/v1/projects", "soat_list_projects", call!(soat::projects::list)),
        row(M::POST, "/api/v1/projects", "soat_create_project", call!(soat::projects::create)),
        row(M::GET, "/api/v1/projects/{project_id}", "soat_get_project", call!(soat::projects::get, project_id)),
        row(M::PATCH, "/api/v1/projects/{project_id}", "soat_update_project", call!(soat::projects::update, project_id)),
        row(M::DELETE, "/api/v1/projects/{project_id}", "soat_delete_project", call!(soat::projects::delete, project_id)),
        row(M::GET, "/api/v1/api-keys", "soat_list_api_keys", call!(soat::api_keys::list)),
        row(M::POST, "/api/v1/api-keys", "soat_create_api_key", call!(soat::api_keys::create)),
        row(M::GET, "/api/v1/api-keys/{api_key_id}", "soat_get_api_key", call!(soat::api_keys::get, api_key_id)),
        row(M::PUT, "/api/v1/api-keys/{api_key_id}", "soat_update_api_key", call!(soat::api_keys::update, api_key_id)),
        row(M::DELETE, "/api/v1/api-keys/{api_key_id}", "soat_delete_api_key", call!(soat::api_keys::delete, api_key_id)),
        // SOAT: agents, their versions and staged rollout.
        row(M::POST, "/api/v1/agents", "soat_create_agent", call!(soat::agents::create)),
        row(M::GET, "/api/v1/agents", "soat_list_agents", call!(soat::agents::list)),
        row(M::GET, "/api/v1/agents/{agent_id}", "soat_get_agent", call!(soat::agents::get, agent_id)),
        row(M::PUT, "/api/v1/agents/{agent_id}", "soat_update_agent", call!(soat::agents::update, agent_id)),
        row(M::PATCH, "/api/v1/agents/{agent_id}", "soat_patch_agent", call!(soat::agents::update, agent_id)),
        row(M::DELETE, "/api/v1/agents/{agent_id}", "soat_delete_agent", call!(soat::agents::delete, agent_id)),
        row(M::POST, "/api/v1/agents/{agent_id}/generate", "soat_create_agent_generation", call!(soat::generate::generate, agent_id)),
        row(
            M::POST,
            "/api/v1/agents/{agent_id}/generate/{generation_id}/tool-outputs",
            "soat_submit_agent_tool_outputs",
            call!(soat::generate::tool_outputs, agent_id, generation_id),
        ),
        row(M::GET, "/api/v1/generations/{generation_id}", "soat_get_generation", call!(soat::generate::get, generation_id)),
        row(M::GET, "/api/v1/generations/{generation_id}/events", "soat_generation_events", call!(soat::generate::events, generation_id)),
        row(M::GET, "/api/v1/agents/{agent_id}/versions", "soat_list_agent_versions", call!(soat::agents::versions, agent_id)),
        row(M::GET, "/api/v1/agents/{agent_id}/versions/{version}", "soat_get_agent_version", call!(soat::agents::version, agent_id, version)),
        row(
            M::POST,
            "/api/v1/agents/{agent_id}/versions/{version}/restore",
            "soat_restore_agent_version",
            call!(soat::agents::restore, agent_id, version),
        ),
        row(M::PUT, "/api/v1/agents/{agent_id}/release", "soat_set_agent_release", call!(soat::agents::set_release, agent_id)),
        row(M::POST, "/api/v1/agents/{agent_id}/release/promote", "soat_promote_agent_release", call!(soat::agents::promote, agent_id)),
        row(M::POST, "/api/v1/agents/{agent_id}/release/abort", "soat_abort_agent_release", call!(soat::agents::abort, agent_id)),
        // SOAT: what agents' rules name and the spec leaves undefined (docs/agents.md).
        row(M::POST, "/api/v1/guardrails", "soat_create_guardrail", call!(soat::agent_records::create_guardrail)),
        row(M::GET, "/api/v1/guardrails", "soat_list_guardrails", call!(soat::agent_records::list_guardrails)),
        row(M::GET, "/api/v1/guardrails/{guardrail_id}", "soat_get_guardrail", call!(soat::agent_records::get_guardrail, guardrail_id)),
        row(M::DELETE, "/api/v1/guardrails/{guardrail_id}", "soat_delete_guardrail", call!(soat::agent_records::delete_guardrail, guardrail_id)),
        row(M::POST, "/api/v1/evals", "soat_create_eval", call!(soat::agent_records::create_eval)),
        row(M::GET, "/api/v1/evals", "soat_list_evals", call!(soat::agent_records::list_evals)),
        row(M::GET, "/api/v1/evals/{eval_id}", "soat_get_eval", call!(soat::agent_records::get_eval, eval_id)),
        row(M::DELETE, "/api/v1/evals/{eval_id}", "soat_delete_eval", call!(soat::agent_records::delete_eval, eval_id)),
        row(M::POST, "/api/v1/evals/{eval_id}/runs", "soat_create_eval_run", call!(soat::agent_records::create_eval_run, eval_id)),
        row(M::GET, "/api/v1/evals/{eval_id}/runs", "soat_list_eval_runs", call!(soat::agent_records::list_eval_runs, eval_id)),
        row(M::POST, "/api/v1/model-routes", "soat_create_model_route", call!(soat::agent_records::create_model_route)),
        row(M::GET, "/api/v1/model-routes", "soat_list_model_routes", call!(soat::agent_records::list_model_routes)),
        row(M::GET, "/api/v1/model-routes/{route_id}", "soat_get_model_route", call!(soat::agent_records::get_model_route, route_id)),
        row(M::DELETE, "/api/v1/model-routes/{route_id}", "soat_delete_model_route", call!(soat::agent_records::delete_model_route, route_id)),
        // SOAT: AI providers.
        row(M::GET, "/api/v1/ai-providers", "soat_list_ai_providers", call!(soat::ai_providers::list)),
        row(M::POST, "/api/v1/ai-providers", "soat_create_ai_provider", call!(soat::ai_providers::create)),
        row(M::GET, "/api/v1/ai-providers/{ai_provider_id}", "soat_get_ai_provider", call!(soat::ai_providers::get, ai_provider_id)),
        row(M::PATCH, "/api/v1/ai-providers/{ai_provider_id}", "soat_update_ai_provider", call!(soat::ai_providers::update, ai_provider_id)),
        row(M::DELETE, "/api/v1/ai-providers/{ai_provider_id}", "soat_delete_ai_provider", call!(soat::ai_providers::delete, ai_provider_id)),
        row(M::GET, "/api/v1/ai-providers/{ai_provider_id}/models", "soat_ai_provider_models", call!(soat::ai_providers::models, ai_provider_id)),
        // SOAT (/api/v1): secrets and tools.
        row(M::GET, "/api/v1/secrets", "soat_list_secrets", call!(soat::secrets::list)),
        row(M::POST, "/api/v1/secrets", "soat_create_secret", call!(soat::secrets::create)),
        row(M::GET, "/api/v1/secrets/{secret_id}", "soat_get_secret", call!(soat::secrets::get, secret_id)),
        row(M::PATCH, "/api/v1/secrets/{secret_id}", "soat_update_secret", call!(soat::secrets::update, secret_id)),
        row(M::DELETE, "/api/v1/secrets/{secret_id}", "soat_delete_secret", call!(soat::secrets::delete, secret_id)),
        row(M::GET, "/api/v1/tools", "soat_list_tools", call!(soat::tools::list)),
        row(M::POST, "/api/v1/tools", "soat_create_tool", call!(soat::tools::create)),
        row(M::GET, "/api/v1/tools/{tool_id}", "soat_get_tool", call!(soat::tools::get, tool_id)),
        row(M::PATCH, "/api/v1/tools/{tool_id}", "soat_update_tool", call!(soat::tools::update, tool_id)),
        row(M::DELETE, "/api/v1/tools/{tool_id}", "soat_delete_tool", call!(soat::tools::delete, tool_id)),
        row(M::POST, "/api/v1/tools/{tool_id}/call", "soat_call_tool", call!(soat::tools::call, tool_id)),
        // SOAT (/api/v1): generations and traces, read and purged.
        row(M::GET, "/api/v1/generations", "soat_list_generations", call!(soat::generations::list)),
        row(M::PATCH, "/api/v1/generations/{generation_id}", "soat_update_generation", call!(soat::generations::update, generation_id)),
        row(M::DELETE, "/api/v1/generations/{generation_id}/content", "soat_purge_generation", call!(soat::generations::purge, generation_id)),
        row(
            M::GET,
            "/api/v1/generations/{generation_id}/transcript",
            "soat_generation_transcript",
            call!(soat::generations::transcript, generation_id),
        ),
        row(M::GET, "/api/v1/traces", "soat_list_traces", call!(soat::traces::list)),
        row(M::GET, "/api/v1/traces/{trace_id}", "soat_get_trace", call!(soat::traces::get, trace_id)),
        row(M::GET, "/api/v1/traces/{trace_id}/tree", "soat_trace_tree", call!(soat::traces::tree, trace_id)),
        row(M::DELETE, "/api/v1/traces/{trace_id}/content", "soat_purge_trace", call!(soat::traces::purge, trace_id)),
        // SOAT: memory stores and their entries.
        row(M::GET, "/api/v1/memories", "soat_list_memories", call!(soat::memories::list)),
        row(M::POST, "/api/v1/memories", "soat_create_memory", call!(soat::memories::create)),
        row(M::GET, "/api/v1/memories/{memory_id}", "soat_get_memory", call!(soat::memories::get, memory_id)),
        row(M::PUT, "/api/v1/memories/{memory_id}", "soat_update_memory", call!(soat::memories::update, memory_id)),
        row(M::DELETE, "/api/v1/memories/{memory_id}", "soat_delete_memory", call!(soat::memories::delete, memory_id)),
        row(M::GET, "/api/v1/memory-entries", "soat_list_memory_entries", call!(soat::memory_entries::list)),
        row(M::POST, "/api/v1/memory-entries", "soat_create_memory_entry", call!(soat::memory_entries::create)),
        row(M::GET, "/api/v1/memory-entries/{entry_id}", "soat_get_memory_entry", call!(soat::memory_entries::get, entry_id)),
        row(M::PUT, "/api/v1/memory-entries/{entry_id}", "soat_update_memory_entry", call!(soat::memory_entries::update, entry_id)),
        row(M::DELETE, "/api/v1/memory-entries/{entry_id}", "soat_delete_memory_entry", call!(soat::memory_entries::delete, entry_id)),
        row(M::POST, "/api/v1/knowledge/search", "soat_search_knowledge", call!(soat::knowledge::search)),
        // SOAT (/api/v1): documents (issue 36, knowledge).
        row(M::GET, "/api/v1/documents", "soat_list_documents", call!(soat::documents::list)),
        row(M::POST, "/api/v1/documents", "soat_create_document", call!(soat::documents::create)),
        row(M::POST, "/api/v1/documents/ingest", "soat_ingest_document", call!(soat::documents::ingest)),
        row(M::GET, "/api/v1/documents/{document_id}", "soat_get_document", call!(soat::documents::get, document_id)),
        row(M::PATCH, "/api/v1/documents/{document_id}", "soat_update_document", call!(soat::documents::update, document_id)),
        row(M::DELETE, "/api/v1/documents/{document_id}", "soat_delete_document", call!(soat::documents::delete, document_id)),
        row(M::GET, "/api/v1/documents/{document_id}/status", "soat_document_status", call!(soat::documents::status, document_id)),
        row(M::POST, "/api/v1/documents/{document_id}/ingest", "soat_reingest_document", call!(soat::documents::reingest, document_id)),
        row(
            M::POST,
            "/api/v1/documents/{document_id}/ingestion-callback",
            "soat_document_ingestion_callback",
            call!(soat::documents::ingestion_callback, document_id),
        ),
        row(M::GET, "/api/v1/documents/{document_id}/tags", "soat_get_document_tags", call!(soat::documents::get_tags, document_id)),
        row(M::PUT, "/api/v1/documents/{document_id}/tags", "soat_replace_document_tags", call!(soat::documents::replace_tags, document_id)),
        row(M::PATCH, "/api/v1/documents/{document_id}/tags", "soat_merge_document_tags", call!(soat::documents::merge_tags, document_id)),
    ];
    if config.panic_route {
        t.push(public(row(M::GET, "/v1/_panic", "panic", call!(panic_route))));
    }
    t
}

/// The table, compiled once for the process.
pub fn router(config: &Config) -> &'static Router {
    Router::new(table(config))
}
