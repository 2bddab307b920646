//! After a restart: every generation the last boot left `in_progress` is taken over
//! by one shard (by a hash of its id) and resumes from its last committed step; one
//! whose content was never written (`trace_content_mode: none`) cannot, and ends
//! `failed` with stop_reason `interrupted`. Paused ones stay paused, their expiry
//! timers set again.
//!
//! With records shared by a cluster (issue 40), a run whose lease is a live node's
//! boot is that node's, and is left alone; and every node keeps looking, once per
//! `[cluster] node_timeout`, for runs whose holder stopped heartbeating, and takes
//! them over the same way. Taking over is a compare-and-set on the lease in the
//! store (one writer at a time), so of the nodes that try, one wins; and the dead
//! holder, should it come back, finds its lease gone at its next step and stops.
//! A run of this boot that stopped because the store was out of reach (past its
//! commit's patience) is resumed by the same look, once the store answers.

use std::collections::HashSet;
use std::rc::Rc;

use super::event::Event;
use super::record::{GenerationRecord, Status, Transition, BOOT};
use super::run::{self, Host};
use crate::runtime::blocking;
use crate::store::generations::EventRow;

pub(crate) fn mine(id: &str, shard: usize, shards: usize) -> bool {
    let h = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    shards <= 1 || (h % shards as u64) as usize == shard
}

/// Takes over this shard's share of the runs the last boot left. Runs at shard start;
/// with shared records it then keeps adopting the runs of nodes that died.
pub async fn take_over(host: Rc<Host>, shard: usize, shards: usize) {
    let found = look(&host).await;
    let pending = match found {
        Some(Found { runs, extractions, live }) => {
            let resumed = adopt(&host, shard, shards, true, runs, &live).await;
            if resumed > 0 {
                tracing::info!(shard, resumed, "generations resumed after a restart");
            }
            Some((extractions, live))
        }
        None => None,
    };
    // approvals (issue 37): the expiry sweeper of this shard's share of the items.
    crate::agents::approvals::sweep(host.clone(), shard, shards);
    // Memory extractions recorded and not done (issue 36, knowledge).
    if let Some((extractions, live)) = pending {
        take_up(&host, shard, shards, extractions, &live).await;
    }
    if host.agents.cluster.shared() {
        let every = host.agents.cluster.node_timeout();
        loop {
            glommio::timer::sleep(every).await;
            let Some(Found { runs, extractions, live }) = look(&host).await else { continue };
            let resumed = adopt(&host, shard, shards, false, runs, &live).await;
            if resumed > 0 {
                tracing::warn!(shard, resumed, "took over generations whose node stopped heartbeating");
            }
            take_up(&host, shard, shards, extractions, &live).await;
        }
    }
}

/// One look at the store: the runs in progress or paused, the memory extractions not
/// done, and the live boots, read in that order. The boots last: a node registers its
/// boot before it runs anything, so a holder of a run or extraction read before them
/// that was alive then is in the set (read first, a node that booted in between
/// would look dead).
struct Found {
    runs: Vec<GenerationRecord>,
    extractions: Vec<GenerationRecord>,
    live: HashSet<String>,
}

async fn look(host: &Rc<Host>) -> Option<Found> {
    let (records, cluster) = (host.agents.records.clone(), host.agents.cluster.clone());
    let found = blocking(move || -> Result<_, crate::store::StoreError> {
        let runs = records.active_generations::<GenerationRecord>()?;
        let extractions = records.pending_extractions::<GenerationRecord>()?;
        Ok(Found { runs, extractions, live: cluster.live_boots(&records)? })
    })
    .await;
    found.map_err(|e| tracing::error!(error = %e, "reading generations to resume failed")).ok()
}

/// Starts this shard's share of the pending memory extractions no live boot holds.
async fn take_up(host: &Rc<Host>, shard: usize, shards: usize, pending: Vec<GenerationRecord>, live: &HashSet<String>) {
    let started = super::extract::adopt(host, shard, shards, pending, live).await;
    if started > 0 {
        tracing::info!(shard, started, "memory extractions taken up");
    }
}

/// Resumes this shard's share of the in-progress runs no live boot holds; at the
/// first pass (`first`) also sets the paused ones' expiry timers. How many resumed.
async fn adopt(host: &Rc<Host>, shard: usize, shards: usize, first: bool, runs: Vec<GenerationRecord>, live: &HashSet<String>) -> usize {
    let mut resumed = 0usize;
    for g in runs.into_iter().filter(|g| mine(&g.id, shard, shards)) {
        match g.status() {
            // A live node's run is its own; this boot's is, while it runs here (one that
            // lost the store mid-step stopped, and is resumed like a dead node's).
            Status::InProgress
                if !g.state.lease.as_ref().is_some_and(|l| if l == BOOT.as_str() { run::running_here(&g.id) } else { live.contains(l) }) =>
            {
                if g.content_redacted_at.is_some() {
                    interrupt(host, g, "its content was purged while it ran").await;
                    continue;
                }
                if !g.store_content {
                    interrupt(host, g, "its content was kept in memory only (trace_content_mode none) and the server restarted").await;
                    continue;
                }
                let old = g.state.lease.clone();
                let mut next = g;
                // Readers may have seen ids up to `reserved`: number after them.
                next.apply(Transition::TakeOver);
                let (r, rec) = (host.agents.records.clone(), next.clone());
                match blocking(move || r.save_step(&rec, &[], 0, |stored| stored.status() == Status::InProgress && stored.state.lease == old)).await {
                    Ok(Some(true)) => {
                        resumed += 1;
                        run::spawn(host.clone(), next, None);
                    }
                    Ok(_) => {}
                    Err(e) => tracing::error!(generation = %next.id, error = %e, "taking over a generation failed"),
                }
            }
            Status::RequiresAction if first => {
                let left = g.state.expires_at.as_deref().map_or(std::time::Duration::ZERO, until);
                super::expiry::schedule(host.clone(), g.account_id.clone(), g.id.clone(), left);
            }
            _ => {}
        }
    }
    resumed
}

pub(crate) fn until(t: &str) -> std::time::Duration {
    humantime::parse_rfc3339(t).ok().and_then(|at| at.duration_since(std::time::SystemTime::now()).ok()).unwrap_or_default()
}

/// Ends `g` `failed` with stop_reason `interrupted`, saying `why`.
pub async fn interrupt(host: &Rc<Host>, mut g: GenerationRecord, why: &str) {
    let old = g.state.lease.clone();
    g.apply(Transition::Interrupt { why: why.to_owned() });
    let error = g.error.clone().expect("a failed generation records its error");
    let frame = Event::failed(&error);
    let events = vec![EventRow { seq: g.state.seq, data: frame.data(), ends_stream: frame.ends_stream() }];
    let id = g.id.clone();
    let r = host.agents.records.clone();
    if let Err(e) = blocking(move || r.save_step(&g, &events, 0, |stored| !stored.status().settled() && stored.state.lease == old)).await {
        tracing::error!(generation = %id, error = %e, "recording an interrupted generation failed");
    }
}
