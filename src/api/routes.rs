//! The route table: one row per method and path, with its surface (from the path),
//! whether it needs a key, its rate cost and its handler. Adding a route is adding a
//! row here; 404, 405 and `Allow`, the error shape and the metrics name follow from it.

use futures_util::future::LocalBoxFuture;
use hyper::Method;

use super::agentlex::{account, chunk, collections, documents, evaluate, extract, health, keys, research, sample, scan, search, signup};
use super::openai;
use super::openindex;
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
