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
        // guardrails and approvals (issue 37): v0.28's guardrails.yaml and approvals.yaml.
        row(M::POST, "/api/v1/guardrails", "soat_create_guardrail", call!(soat::guardrails::create)),
        row(M::GET, "/api/v1/guardrails", "soat_list_guardrails", call!(soat::guardrails::list)),
        row(M::GET, "/api/v1/guardrails/{guardrail_id}", "soat_get_guardrail", call!(soat::guardrails::get, guardrail_id)),
        row(M::PATCH, "/api/v1/guardrails/{guardrail_id}", "soat_update_guardrail", call!(soat::guardrails::update, guardrail_id)),
        row(M::DELETE, "/api/v1/guardrails/{guardrail_id}", "soat_delete_guardrail", call!(soat::guardrails::delete, guardrail_id)),
        row(M::GET, "/api/v1/guardrails/{guardrail_id}/versions", "soat_list_guardrail_versions", call!(soat::guardrails::versions, guardrail_id)),
        row(
            M::GET,
            "/api/v1/guardrails/{guardrail_id}/versions/{version}",
            "soat_get_guardrail_version",
            call!(soat::guardrails::version, guardrail_id, version),
        ),
        row(
            M::POST,
            "/api/v1/guardrails/{guardrail_id}/versions/{version}/restore",
            "soat_restore_guardrail_version",
            call!(soat::guardrails::restore, guardrail_id, version),
        ),
        row(M::POST, "/api/v1/guardrails/{guardrail_id}/evaluate", "soat_evaluate_guardrail", call!(soat::guardrails::evaluate, guardrail_id)),
        row(M::GET, "/api/v1/approvals", "soat_list_approvals", call!(soat::approvals::list)),
        row(M::GET, "/api/v1/approvals/recurrences", "soat_list_approval_recurrences", call!(soat::approvals::recurrences)),
        row(M::GET, "/api/v1/approvals/{approval_id}", "soat_get_approval", call!(soat::approvals::get, approval_id)),
        row(M::POST, "/api/v1/approvals/{approval_id}/approve", "soat_approve_approval", call!(soat::approvals::approve, approval_id)),
        row(M::POST, "/api/v1/approvals/{approval_id}/reject", "soat_reject_approval", call!(soat::approvals::reject, approval_id)),
        // SOAT: what agents' rules name and the spec leaves undefined (docs/agents.md).
        // evaluations (issue 37): datasets, items, evals, runs Quarry executes, results.
        row(M::GET, "/api/v1/datasets", "soat_list_datasets", call!(soat::evaluations::list_datasets)),
        row(M::POST, "/api/v1/datasets", "soat_create_dataset", call!(soat::evaluations::create_dataset)),
        row(M::GET, "/api/v1/datasets/{dataset_id}", "soat_get_dataset", call!(soat::evaluations::get_dataset, dataset_id)),
        row(M::PUT, "/api/v1/datasets/{dataset_id}", "soat_update_dataset", call!(soat::evaluations::update_dataset, dataset_id)),
        row(M::DELETE, "/api/v1/datasets/{dataset_id}", "soat_delete_dataset", call!(soat::evaluations::delete_dataset, dataset_id)),
        row(M::GET, "/api/v1/datasets/{dataset_id}/items", "soat_list_dataset_items", call!(soat::evaluations::list_items, dataset_id)),
        row(M::POST, "/api/v1/datasets/{dataset_id}/items", "soat_create_dataset_item", call!(soat::evaluations::create_item, dataset_id)),
        row(
            M::POST,
            "/api/v1/datasets/{dataset_id}/items/from-generation",
            "soat_create_dataset_item_from_generation",
            call!(soat::evaluations::create_item_from_generation, dataset_id),
        ),
        row(
            M::PUT,
            "/api/v1/datasets/{dataset_id}/items/{item_id}",
            "soat_update_dataset_item",
            call!(soat::evaluations::update_item, dataset_id, item_id),
        ),
        row(
            M::DELETE,
            "/api/v1/datasets/{dataset_id}/items/{item_id}",
            "soat_delete_dataset_item",
            call!(soat::evaluations::delete_item, dataset_id, item_id),
        ),
        row(M::POST, "/api/v1/evals", "soat_create_eval", call!(soat::evaluations::create_eval)),
        row(M::GET, "/api/v1/evals", "soat_list_evals", call!(soat::evaluations::list_evals)),
        row(M::GET, "/api/v1/evals/{eval_id}", "soat_get_eval", call!(soat::evaluations::get_eval, eval_id)),
        row(M::PUT, "/api/v1/evals/{eval_id}", "soat_update_eval", call!(soat::evaluations::update_eval, eval_id)),
        row(M::DELETE, "/api/v1/evals/{eval_id}", "soat_delete_eval", call!(soat::evaluations::delete_eval, eval_id)),
        row(M::POST, "/api/v1/evals/{eval_id}/runs", "soat_create_eval_run", call!(soat::evaluations::start_run, eval_id)),
        row(M::GET, "/api/v1/evals/{eval_id}/runs", "soat_list_eval_runs", call!(soat::evaluations::list_runs, eval_id)),
        row(M::GET, "/api/v1/evals/{eval_id}/runs/{eval_run_id}", "soat_get_eval_run", call!(soat::evaluations::get_run, eval_id, eval_run_id)),
        row(
            M::GET,
            "/api/v1/evals/{eval_id}/runs/{eval_run_id}/results",
            "soat_list_eval_results",
            call!(soat::evaluations::list_results, eval_id, eval_run_id),
        ),
        row(
            M::POST,
            "/api/v1/evals/{eval_id}/runs/{eval_run_id}/cancel",
            "soat_cancel_eval_run",
            call!(soat::evaluations::cancel_run, eval_id, eval_run_id),
        ),
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
        // SOAT (/api/v1): sessions and conversations.
        row(M::POST, "/api/v1/sessions", "soat_create_session", call!(soat::sessions::create)),
        row(M::GET, "/api/v1/sessions", "soat_list_sessions", call!(soat::sessions::list)),
        row(M::GET, "/api/v1/sessions/{session_id}", "soat_get_session", call!(soat::sessions::get, session_id)),
        row(M::PATCH, "/api/v1/sessions/{session_id}", "soat_update_session", call!(soat::sessions::update, session_id)),
        row(M::DELETE, "/api/v1/sessions/{session_id}", "soat_delete_session", call!(soat::sessions::delete, session_id)),
        row(M::POST, "/api/v1/sessions/{session_id}/messages", "soat_add_session_message", call!(soat::sessions::add_message, session_id)),
        row(M::POST, "/api/v1/sessions/{session_id}/generate", "soat_generate_session_response", call!(soat::sessions::generate, session_id)),
        row(
            M::POST,
            "/api/v1/sessions/{session_id}/tool-outputs",
            "soat_submit_session_tool_outputs",
            call!(soat::sessions::tool_outputs, session_id),
        ),
        row(M::POST, "/api/v1/sessions/{session_id}/fork", "soat_fork_session", call!(soat::sessions::fork, session_id)),
        row(M::GET, "/api/v1/sessions/{session_id}/forks", "soat_list_session_forks", call!(soat::sessions::forks, session_id)),
        row(M::GET, "/api/v1/sessions/{session_id}/tags", "soat_get_session_tags", call!(soat::sessions::tags, session_id)),
        row(M::PUT, "/api/v1/sessions/{session_id}/tags", "soat_replace_session_tags", call!(soat::sessions::replace_tags, session_id)),
        row(M::PATCH, "/api/v1/sessions/{session_id}/tags", "soat_merge_session_tags", call!(soat::sessions::merge_tags, session_id)),
        row(M::GET, "/api/v1/conversations", "soat_list_conversations", call!(soat::conversations::list)),
        row(M::POST, "/api/v1/conversations", "soat_create_conversation", call!(soat::conversations::create)),
        row(M::GET, "/api/v1/conversations/{conversation_id}", "soat_get_conversation", call!(soat::conversations::get, conversation_id)),
        row(M::PATCH, "/api/v1/conversations/{conversation_id}", "soat_update_conversation", call!(soat::conversations::update, conversation_id)),
        row(M::DELETE, "/api/v1/conversations/{conversation_id}", "soat_delete_conversation", call!(soat::conversations::delete, conversation_id)),
        row(
            M::GET,
            "/api/v1/conversations/{conversation_id}/messages",
            "soat_list_conversation_messages",
            call!(soat::conversations::messages, conversation_id),
        ),
        row(
            M::POST,
            "/api/v1/conversations/{conversation_id}/messages",
            "soat_add_conversation_message",
            call!(soat::conversations::add_message, conversation_id),
        ),
        row(
            M::POST,
            "/api/v1/conversations/{conversation_id}/generate",
            "soat_generate_conversation_message",
            call!(soat::conversations::generate, conversation_id),
        ),
        row(
            M::DELETE,
            "/api/v1/conversations/{conversation_id}/messages/{document_id}",
            "soat_remove_conversation_message",
            call!(soat::conversations::remove_message, conversation_id, document_id),
        ),
        row(M::GET, "/api/v1/conversations/{conversation_id}/tags", "soat_get_conversation_tags", call!(soat::conversations::tags, conversation_id)),
        row(
            M::PUT,
            "/api/v1/conversations/{conversation_id}/tags",
            "soat_replace_conversation_tags",
            call!(soat::conversations::replace_tags, conversation_id),
        ),
        row(
            M::PATCH,
            "/api/v1/conversations/{conversation_id}/tags",
            "soat_merge_conversation_tags",
            call!(soat::conversations::merge_tags, conversation_id),
        ),
        // SOAT (/api/v1): users and login (issue 36, users).
        public(row(M::POST, "/api/v1/users/bootstrap", "soat_bootstrap_user", call!(soat::users::bootstrap))),
        public(row(M::POST, "/api/v1/users/login", "soat_login_user", call!(soat::users::login))),
        row(M::GET, "/api/v1/users/me", "soat_get_current_user", call!(soat::users::me)),
        row(M::GET, "/api/v1/users", "soat_list_users", call!(soat::users::list)),
        row(M::POST, "/api/v1/users", "soat_create_user", call!(soat::users::create)),
        row(M::GET, "/api/v1/users/{user_id}", "soat_get_user", call!(soat::users::get, user_id)),
        row(M::DELETE, "/api/v1/users/{user_id}", "soat_delete_user", call!(soat::users::delete, user_id)),
        row(M::PUT, "/api/v1/users/{user_id}/policies", "soat_attach_user_policies", call!(soat::users::attach_policies, user_id)),
        // SOAT (/api/v1): files (issue 36, files).
        row(M::GET, "/api/v1/files", "soat_list_files", call!(soat::files::list)),
        row(M::POST, "/api/v1/files", "soat_create_file", call!(soat::files::create)),
        row(M::POST, "/api/v1/files/upload", "soat_upload_file", call!(soat::files::upload)),
        row(M::POST, "/api/v1/files/presigned-url", "soat_create_presigned_url", call!(soat::files::presign)),
        public(row(M::POST, "/api/v1/files/upload/{token}", "soat_upload_file_with_token", call!(soat::files::upload_with_token, token))),
        row(M::POST, "/api/v1/files/upload/base64", "soat_upload_file_base64", call!(soat::files::upload_base64)),
        row(M::GET, "/api/v1/files/{file_id}", "soat_get_file", call!(soat::files::get, file_id)),
        row(M::DELETE, "/api/v1/files/{file_id}", "soat_delete_file", call!(soat::files::delete, file_id)),
        row(M::GET, "/api/v1/files/{file_id}/download", "soat_download_file", call!(soat::files::download, file_id)),
        row(M::GET, "/api/v1/files/{file_id}/download/base64", "soat_download_file_base64", call!(soat::files::download_base64, file_id)),
        row(M::PATCH, "/api/v1/files/{file_id}/metadata", "soat_update_file_metadata", call!(soat::files::metadata, file_id)),
        row(M::GET, "/api/v1/files/{file_id}/tags", "soat_get_file_tags", call!(soat::files::tags, file_id)),
        row(M::PUT, "/api/v1/files/{file_id}/tags", "soat_replace_file_tags", call!(soat::files::replace_tags, file_id)),
        row(M::PATCH, "/api/v1/files/{file_id}/tags", "soat_merge_file_tags", call!(soat::files::merge_tags, file_id)),
        // SOAT: webhooks and their deliveries (issue 36).
        row(M::GET, "/api/v1/webhooks", "soat_list_webhooks", call!(soat::webhooks::list)),
        row(M::POST, "/api/v1/webhooks", "soat_create_webhook", call!(soat::webhooks::create)),
        row(M::GET, "/api/v1/webhooks/{webhook_id}", "soat_get_webhook", call!(soat::webhooks::get, webhook_id)),
        row(M::PUT, "/api/v1/webhooks/{webhook_id}", "soat_update_webhook", call!(soat::webhooks::update, webhook_id)),
        row(M::DELETE, "/api/v1/webhooks/{webhook_id}", "soat_delete_webhook", call!(soat::webhooks::delete, webhook_id)),
        row(M::GET, "/api/v1/webhooks/{webhook_id}/secret", "soat_get_webhook_secret", call!(soat::webhooks::secret, webhook_id)),
        row(M::POST, "/api/v1/webhooks/{webhook_id}/rotate-secret", "soat_rotate_webhook_secret", call!(soat::webhooks::rotate_secret, webhook_id)),
        row(M::GET, "/api/v1/webhook-deliveries", "soat_list_webhook_deliveries", call!(soat::webhooks::list_deliveries)),
        row(M::GET, "/api/v1/webhook-deliveries/{delivery_id}", "soat_get_webhook_delivery", call!(soat::webhooks::get_delivery, delivery_id)),
        row(
            M::POST,
            "/api/v1/webhook-deliveries/{delivery_id}/redeliver",
            "soat_redeliver_webhook_delivery",
            call!(soat::webhooks::redeliver, delivery_id),
        ),
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
        // SOAT (/api/v1): quotas (issue 37).
        row(M::GET, "/api/v1/quotas", "soat_list_quotas", call!(soat::quotas::list)),
        row(M::POST, "/api/v1/quotas", "soat_create_quota", call!(soat::quotas::create)),
        row(M::GET, "/api/v1/quotas/{quota_id}", "soat_get_quota", call!(soat::quotas::get, quota_id)),
        row(M::PATCH, "/api/v1/quotas/{quota_id}", "soat_update_quota", call!(soat::quotas::update, quota_id)),
        row(M::DELETE, "/api/v1/quotas/{quota_id}", "soat_delete_quota", call!(soat::quotas::delete, quota_id)),
        row(M::GET, "/api/v1/usage/receipt", "soat_get_usage_receipt", call!(soat::usage::receipt)),
        // SOAT (/api/v1): usage events and their rollup (issue 37).
        row(M::GET, "/api/v1/usage/meters", "soat_list_usage_meters", call!(soat::usage::meters)),
        row(M::GET, "/api/v1/usage", "soat_get_usage", call!(soat::usage::rollup)),
        // SOAT (/api/v1): the usage price book (issue 37).
        row(M::GET, "/api/v1/usage/prices", "soat_get_price_book", call!(soat::usage::prices)),
        row(M::PUT, "/api/v1/usage/prices", "soat_upsert_price_book", call!(soat::usage::upsert_prices)),
        // SOAT (/api/v1): usage thresholds (issue 37).
        row(M::GET, "/api/v1/usage/thresholds", "soat_list_usage_thresholds", call!(soat::usage::list_thresholds)),
        row(M::POST, "/api/v1/usage/thresholds", "soat_create_usage_threshold", call!(soat::usage::create_threshold)),
        row(M::DELETE, "/api/v1/usage/thresholds/{threshold_id}", "soat_delete_usage_threshold", call!(soat::usage::delete_threshold, threshold_id)),
        // SOAT (/api/v1): actors (issue 36, actors).
        row(M::GET, "/api/v1/actors", "soat_list_actors", call!(soat::actors::list)),
        row(M::POST, "/api/v1/actors", "soat_create_actor", call!(soat::actors::create)),
        row(M::GET, "/api/v1/actors/{actor_id}", "soat_get_actor", call!(soat::actors::get, actor_id)),
        row(M::PATCH, "/api/v1/actors/{actor_id}", "soat_update_actor", call!(soat::actors::update, actor_id)),
        row(M::DELETE, "/api/v1/actors/{actor_id}", "soat_delete_actor", call!(soat::actors::delete, actor_id)),
        row(M::GET, "/api/v1/actors/{actor_id}/tags", "soat_get_actor_tags", call!(soat::actors::tags, actor_id)),
        row(M::PUT, "/api/v1/actors/{actor_id}/tags", "soat_replace_actor_tags", call!(soat::actors::replace_tags, actor_id)),
        row(M::PATCH, "/api/v1/actors/{actor_id}/tags", "soat_merge_actor_tags", call!(soat::actors::merge_tags, actor_id)),
        // SOAT (/api/v1): chats, their completions and embeddings (issue 36).
        row(M::GET, "/api/v1/chats", "soat_list_chats", call!(soat::chats::list)),
        row(M::POST, "/api/v1/chats", "soat_create_chat", call!(soat::chats::create)),
        row(M::GET, "/api/v1/chats/{chat_id}", "soat_get_chat", call!(soat::chats::get, chat_id)),
        row(M::DELETE, "/api/v1/chats/{chat_id}", "soat_delete_chat", call!(soat::chats::delete, chat_id)),
        row(M::POST, "/api/v1/chat/completions", "soat_create_chat_completion", call!(soat::chats::completions)),
        row(M::POST, "/api/v1/embeddings", "soat_create_embeddings", call!(soat::embeddings::create)),
        // SOAT (/api/v1): policies, the audit log, activity and exceptions (issue 37, policies).
        row(M::GET, "/api/v1/policies", "soat_list_policies", call!(soat::policies::list)),
        row(M::POST, "/api/v1/policies", "soat_create_policy", call!(soat::policies::create)),
        row(M::GET, "/api/v1/policies/{policy_id}", "soat_get_policy", call!(soat::policies::get, policy_id)),
        row(M::PUT, "/api/v1/policies/{policy_id}", "soat_update_policy", call!(soat::policies::update, policy_id)),
        row(M::DELETE, "/api/v1/policies/{policy_id}", "soat_delete_policy", call!(soat::policies::delete, policy_id)),
        row(M::GET, "/api/v1/audit-log", "soat_list_audit_entries", call!(soat::audit_log::list)),
        row(M::GET, "/api/v1/audit-log/export", "soat_export_audit_entries", call!(soat::audit_log::export)),
        row(M::GET, "/api/v1/audit-log/{entry_id}", "soat_get_audit_entry", call!(soat::audit_log::get, entry_id)),
        row(M::GET, "/api/v1/activity", "soat_list_activity", call!(soat::exceptions::activity)),
        row(M::GET, "/api/v1/exceptions", "soat_list_exceptions", call!(soat::exceptions::list)),
        row(M::GET, "/api/v1/exceptions/{exception_id}", "soat_get_exception", call!(soat::exceptions::get, exception_id)),
        row(
            M::POST,
            "/api/v1/exceptions/{exception_id}/acknowledge",
            "soat_acknowledge_exception",
            call!(soat::exceptions::acknowledge, exception_id),
        ),
        row(M::POST, "/api/v1/exceptions/{exception_id}/resolve", "soat_resolve_exception", call!(soat::exceptions::resolve, exception_id)),
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
