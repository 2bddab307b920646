//! AgentLex (`/v1/...`): one file per resource.

pub mod account;
pub mod chunk;
pub mod collections;
pub mod documents;
pub mod evaluate;
pub mod extract;
pub mod health;
pub mod input;
pub mod keys;
pub mod research;
pub mod sample;
pub mod scan;
pub mod search;
pub mod signup;

use crate::http::call::Call;
use crate::search::Caller;

/// The caller of an authenticated route, as the services take it.
pub fn caller<'a>(call: &'a Call<'_>) -> Caller<'a> {
    let p = call.principal();
    Caller { account_id: &p.account_id, plan: call.app.plan(&p.plan), reach: p.reach() }
}

/// The search service as AgentLex's search asks it, with this shard's sessions.
pub fn searcher<'a>(call: &'a Call<'_>) -> crate::search::searcher::Searcher<'a> {
    let app = call.app;
    crate::search::searcher::Searcher {
        service: &app.search,
        embedders: call.embedders,
        rerankers: &app.rerankers,
        sessions: call.rerankers,
        llm: app.llm.as_deref(),
        expand: &app.config.expand,
    }
}
