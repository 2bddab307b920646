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

use crate::error::{ApiError, Code};
use crate::http::call::Call;
use crate::http::response::Reply;
use crate::search::{Caller, Owned};

/// The header a write's reply carries on a cluster (`<collection>:<seq>`), and the one
/// a read sends it back in to see that write on whichever node answers.
pub const SEQ: &str = "quarry-seq";
pub const AFTER: &str = "quarry-after";

/// The account's collection `id` for a read: when the request carries `Quarry-After`
/// naming a write to this collection, once this node has applied it (read-your-writes
/// on a cluster; at once on one node). A token of another collection is ignored.
pub async fn owned_after(call: &Call<'_>, id: &str) -> Result<Owned, ApiError> {
    let owned = call.app.search.owned(&call.principal().account_id, id).await?;
    if let Some((coll, seq)) = after(call)? {
        if coll == owned.id() {
            call.app.search.caught_up(&owned, seq).await?;
        }
    }
    Ok(owned)
}

/// The request's `Quarry-After` as (collection, seq), when it carries one.
pub fn after<'c>(call: &'c Call<'_>) -> Result<Option<(&'c str, u64)>, ApiError> {
    let Some(raw) = call.parts.headers.get(AFTER) else { return Ok(None) };
    let bad = || ApiError::new(Code::InvalidSeq, "Quarry-After must be the <collection>:<seq> a write's Quarry-Seq header gave.");
    let (coll, seq) = raw.to_str().ok().and_then(|s| s.trim().rsplit_once(':')).ok_or_else(bad)?;
    Ok(Some((coll, seq.parse().map_err(|_| bad())?)))
}

/// Sets `Quarry-Seq` on a write's reply when the write went to the shared journal.
pub fn with_seq(mut reply: Reply, collection: &str, seq: u64) -> Reply {
    if seq > 0 {
        if let Ok(v) = hyper::header::HeaderValue::from_str(&format!("{collection}:{seq}")) {
            reply.headers_mut().insert(SEQ, v);
        }
    }
    reply
}

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
