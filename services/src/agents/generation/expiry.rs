//! A pause at `requires_action` waits `[agents] approval_expiry` for its tool outputs.
//! Then the agent's `on_approval_expiry` decides: `terminate` (and the default) ends
//! it `failed` with stop_reason `approval_expired`; `react` ends it the same way and
//! spawns a continuation that tells the agent the calls expired, unless the chain has
//! spawned its limit (then the continuation is not made: stop_reason `chain_limit`).
//! The approval items it waits on expire first (`approvals::expire`): a pause that
//! waited only on them goes on, told that they expired.

use std::rc::Rc;
use std::time::Duration;

use serde_json::json;

use super::record::{Block, GenerationRecord, Message, Role, Runner, Status, Transition, GENERATION_PREFIX};
use super::run::{self, Host};
use crate::agents::agent::config::{ApprovalExpiry, StopKind};
use crate::runtime::blocking;
use crate::store::owned::Change;

/// Expires `id` after `after`, if it is still paused then.
pub fn schedule(host: Rc<Host>, account_id: String, id: String, after: Duration) {
    glommio::spawn_local(async move {
        glommio::timer::sleep(after).await;
        expire(&host, &account_id, &id).await;
    })
    .detach();
}

async fn expire(host: &Rc<Host>, account_id: &str, id: &str) {
    // approvals (issue 37): the items this pause waits on expire first, each with its
    // generation told (which resumes it when it waits for nothing else).
    let r = host.agents.records.clone();
    let (a, i) = (account_id.to_owned(), id.to_owned());
    if let Ok(Some(g)) = blocking(move || r.get::<GenerationRecord>(&a, &i)).await {
        let gates =
            g.state.pending.iter().filter(|c| c.result.is_none()).filter_map(|c| c.gate.as_ref()).chain(g.state.held.as_ref().map(|h| &h.gate));
        for gate in gates.filter(|x| !x.approved) {
            crate::agents::approvals::expire(host, account_id, &gate.approval_id).await;
        }
    }
    let (r, a, i) = (host.agents.records.clone(), account_id.to_owned(), id.to_owned());
    let ended = blocking(move || {
        r.update_generation::<GenerationRecord, Option<GenerationRecord>>(&a, &i, |g| {
            let due = g.state.expires_at.as_deref().is_some_and(crate::clock::is_past);
            if g.status() != Status::RequiresAction || !due {
                return Change::Keep(None);
            }
            g.apply(Transition::Expire);
            Change::Write(Some(g.clone()))
        })
    })
    .await;
    let g = match ended {
        Ok(Some(Some(g))) => g,
        Ok(_) => return,
        Err(e) => {
            tracing::error!(generation = id, error = %e, "expiring a paused generation failed");
            return;
        }
    };
    if g.state.config.on_approval_expiry == Some(ApprovalExpiry::React) {
        react(host, g).await;
    }
}

/// The continuation `react` spawns: the expired generation's transcript, its calls
/// answered "expired", in the same trace.
async fn react(host: &Rc<Host>, old: GenerationRecord) {
    let agent_limit = old
        .state
        .config
        .stop_conditions
        .iter()
        .flatten()
        .filter(|s| s.r#type == StopKind::MaxChainGenerations)
        .filter_map(|s| s.max_generations)
        .min();
    let deployment = host.agents.config.max_chain_generations;
    let limit = agent_limit.map_or(deployment, |n| (n.max(0) as u32).min(deployment));
    if old.state.chain + 1 > limit {
        let (r, mut g) = (host.agents.records.clone(), old);
        g.apply(Transition::ChainLimit);
        let _ = blocking(move || r.save_step(&g, &[], 0, |_| true)).await;
        return;
    }
    let mut g = old.clone();
    g.id = format!("{GENERATION_PREFIX}{}", crate::ids::random_base62(16));
    g.initiator_generation_id = Some(old.id.clone());
    g.idempotency_key = None;
    g.apply(Transition::Start { at: crate::clock::now_rfc3339() });
    g.state.chain = old.state.chain + 1;
    g.state.steps = 0;
    let results: Vec<Block> = std::mem::take(&mut g.state.pending)
        .into_iter()
        .map(|c| {
            let output = match (c.runner, c.result) {
                (_, Some(r)) => r,
                (Runner::Client, None) => json!({"error": "This call expired before the client answered it; its inputs may be stale."}),
                (Runner::Server, None) => json!({"error": "This call did not run."}),
            };
            Block::ToolResult { tool_call_id: c.id, tool_name: c.tool_name, output, is_error: true }
        })
        .collect();
    g.state.messages.push(Message { role: Role::Tool, content: results });
    let r = host.agents.records.clone();
    let rec = host.agents.content.persisted(&g);
    match blocking(move || r.create_generation(&rec, None, None)).await {
        Ok(_) => {
            run::spawn(host.clone(), g, None);
        }
        Err(e) => tracing::error!(error = %e, "spawning an expiry continuation failed"),
    }
}
