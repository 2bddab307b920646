//! Generations, traces, their event logs and idempotency keys. A generation's create
//! (with its trace, its idempotency claim and its agent link) is one transaction, and
//! so is every step it saves (the record, the step's events, the trace's step count):
//! a crash leaves each step either wholly written or not at all.
//!
//! Tables besides the two kinds' own (`store::owned`): `soat_generation_events`
//! (`(generation id, seq)` → the event's SSE data line), and `soat_idempotency`
//! (account, project and key → the generation it names and the fingerprint of the
//! request that claimed it), and `soat_generations_active` (the queue of generations not
//! settled, which a restart takes over). The store runs writes one at a time, so of two requests with
//! one key, across shards, exactly one claims it.

use serde::{Deserialize, Serialize};

use super::agents::DEPENDENTS as AGENT_DEPENDENTS;
use super::kv::{Logs, Names, Read, Rows, Table, WriteTx};
use super::owned::{get_in, insert_in, list_in, put_in, remove_in};
use super::{get_json, to_json, Records, StoreError};
use crate::agents::generation::record::{GenerationRecord, TraceRecord};

const EVENTS: Logs = Logs("soat_generation_events");
const IDEMPOTENCY: Rows = Rows("soat_idempotency");
/// The durable queue: every generation not yet settled (id → account), so a restart
/// finds the runs to take over without reading every generation ever made.
const ACTIVE: Names = Names("soat_generations_active");

/// The claim an idempotency key holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub generation_id: String,
    pub agent_id: String,
    pub fingerprint: String,
}

/// What a create did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    New,
    /// The key was claimed already: nothing was written.
    Claimed(Claim),
}

fn idempotency_key(account_id: &str, project_id: &str, key: &str) -> String {
    format!("{account_id}\u{1f}{project_id}\u{1f}{key}")
}

impl Records {
    pub(super) fn ensure_generations(&self) -> Result<(), StoreError> {
        self.ensure::<GenerationRecord>()?;
        self.ensure::<TraceRecord>()?;
        let txn = self.kv.write()?;
        txn.create(Table::Logs(EVENTS))?;
        txn.create(Table::Rows(IDEMPOTENCY))?;
        txn.create(Table::Names(ACTIVE))?;
        txn.commit()
    }

    /// Adds a generation, its trace when the trace is new, links both to the agent,
    /// and claims `key` (with the request's fingerprint) when given, all at once.
    pub fn create_generation(&self, g: &GenerationRecord, new_trace: Option<&TraceRecord>, key: Option<(&str, &str)>) -> Result<Created, StoreError> {
        let txn = self.kv.write()?;
        if let Some((key, fingerprint)) = key {
            let k = idempotency_key(&g.account_id, &g.project_id, key);
            if let Some(claim) = get_json(&txn, IDEMPOTENCY, &k, "idempotency claim")? {
                return Ok(Created::Claimed(claim));
            }
            let claim = Claim { generation_id: g.id.clone(), agent_id: g.agent_id.clone(), fingerprint: fingerprint.to_owned() };
            txn.put_row(IDEMPOTENCY, &k, &to_json(&claim))?;
        }
        insert_in(&txn, g)?;
        if !g.status.settled() {
            txn.put_name(ACTIVE, &g.id, &g.account_id)?;
        }
        txn.add_member(AGENT_DEPENDENTS, &g.agent_id, &format!("generation:{}", g.id))?;
        if let Some(t) = new_trace {
            insert_in(&txn, t)?;
            txn.add_member(AGENT_DEPENDENTS, &t.agent_id, &format!("trace:{}", t.id))?;
        }
        txn.commit()?;
        Ok(Created::New)
    }

    /// The claim `key` holds in the project, if any.
    pub fn idempotency_claim(&self, account_id: &str, project_id: &str, key: &str) -> Result<Option<Claim>, StoreError> {
        get_json(&self.kv.read()?, IDEMPOTENCY, &idempotency_key(account_id, project_id, key), "idempotency claim")
    }

    /// Saves a step: the run's fields of `g` (never the caller-owned `metadata`, which
    /// PATCH may have changed meanwhile), the step's events, and `steps` more on the
    /// trace. `check` sees the stored record first and may refuse the save (`false`:
    /// nothing is written). `None` when the generation is gone.
    pub fn save_step(
        &self,
        g: &GenerationRecord,
        events: &[(u64, String)],
        steps: u64,
        check: impl FnOnce(&GenerationRecord) -> bool,
    ) -> Result<Option<bool>, StoreError> {
        let txn = self.kv.write()?;
        {
            let Some(stored) = get_in::<GenerationRecord>(&txn, &g.account_id, &g.id)? else { return Ok(None) };
            if !check(&stored) {
                return Ok(Some(false));
            }
            let mut next = g.clone();
            next.metadata = stored.metadata;
            next.content_redacted_at = stored.content_redacted_at;
            // Purged while it ran: the run goes on from what it holds, writing no
            // content, and its readers still get the frame that ends their stream.
            let purged = next.content_redacted_at.clone();
            if let Some(at) = &purged {
                redact_generation(&mut next, at);
            }
            let events: Vec<&(u64, String)> =
                events.iter().filter(|(_, d)| purged.is_none() || d == "[DONE]" || d.starts_with("{\"error\"")).collect();
            put_in(&txn, &next)?;
            if next.status.settled() {
                txn.delete_name(ACTIVE, &g.id)?;
            } else {
                txn.put_name(ACTIVE, &g.id, &g.account_id)?;
            }
            if !events.is_empty() {
                txn.append(EVENTS, &g.id, events.iter().map(|(seq, data)| (*seq, data.as_str())))?;
            }
            if steps > 0 {
                if let Some(mut t) = get_in::<TraceRecord>(&txn, &g.account_id, &g.trace_id)? {
                    t.step_count += steps;
                    t.updated_at = crate::clock::now_rfc3339();
                    if g.error.is_some() && t.error.is_none() {
                        t.error = g.error.clone();
                    }
                    put_in(&txn, &t)?;
                }
            }
        }
        txn.commit()?;
        Ok(Some(true))
    }

    /// The generations not settled (the queue a restart takes over), and those of its
    /// entries that no longer need it (settled by a write that went around the queue,
    /// or gone) dropped from it.
    pub fn active_generations(&self) -> Result<Vec<GenerationRecord>, StoreError> {
        let txn = self.kv.write()?;
        let mut out = Vec::new();
        for (id, account) in txn.names(ACTIVE)? {
            match get_in::<GenerationRecord>(&txn, &account, &id)? {
                Some(g) if !g.status.settled() => out.push(g),
                _ => txn.delete_name(ACTIVE, &id)?,
            }
        }
        txn.commit()?;
        Ok(out)
    }

    /// The generation's committed events after `after`, in order.
    pub fn generation_events(&self, id: &str, after: u64) -> Result<Vec<(u64, String)>, StoreError> {
        self.kv.read()?.log(EVENTS, id, after)
    }

    /// Drops the generation's events (its content is deleted, or it is).
    pub fn drop_generation_events(&self, id: &str) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        txn.drop_log(EVENTS, id)?;
        txn.commit()
    }

    /// Removes a generation with its events and its idempotency claim.
    pub fn remove_generation(&self, account_id: &str, id: &str) -> Result<bool, StoreError> {
        let txn = self.kv.write()?;
        let Some(g) = get_in::<GenerationRecord>(&txn, account_id, id)? else { return Ok(false) };
        remove_generation_in(&txn, &g)?;
        txn.commit()?;
        Ok(true)
    }
}

// The read side's maintenance (api/soat/generations.rs and traces.rs): purges and the
// agent delete's cascade. Each is one transaction, so a purge is whole or not at all.

/// Clears what a purge erases from `g` (GenerationRecord.content_redacted_at's doc in
/// generations.yaml: `metadata`, `error`, and the run's recovery state: the transcript,
/// the calls pending, the output, the request's context) and stamps `at`, unless it was
/// purged already (the first stamp stays). Ids, timestamps, status, stop reason,
/// counters and attribution stay. A runner saving a step of a purged generation calls
/// this on what it saves (and writes no event payloads), so the purge holds.
pub fn redact_generation(g: &mut GenerationRecord, at: &str) {
    g.metadata = None;
    g.error = None;
    g.state.messages.clear();
    g.state.raw_messages.clear();
    g.state.context = None;
    g.state.pending.clear();
    g.state.output = None;
    g.state.input.tool_context.clear();
    g.state.input.guardrail_context = None;
    if g.content_redacted_at.is_none() {
        g.content_redacted_at = Some(at.to_owned());
    }
}

/// What [`Records::purge_trace_content`] touched.
#[derive(Debug, Clone, PartialEq)]
pub struct TracePurge {
    pub trace: TraceRecord,
    pub traces: usize,
    pub generations: usize,
}

/// Removes a generation with its events, its idempotency claim, its place in the queue
/// and its agent link.
fn remove_generation_in(txn: &WriteTx, g: &GenerationRecord) -> Result<(), StoreError> {
    if let Some(key) = &g.idempotency_key {
        txn.delete_row(IDEMPOTENCY, &idempotency_key(&g.account_id, &g.project_id, key))?;
    }
    txn.drop_log(EVENTS, &g.id)?;
    txn.delete_name(ACTIVE, &g.id)?;
    txn.remove_member(AGENT_DEPENDENTS, &g.agent_id, &format!("generation:{}", g.id))?;
    remove_in::<GenerationRecord>(txn, &g.account_id, &g.id)?;
    Ok(())
}

/// The ids of `root` and of every trace below it (by `parent_trace_id`), among `all`.
pub fn descendants(all: &[TraceRecord], root: &str) -> Vec<String> {
    let mut out = vec![root.to_owned()];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i].clone();
        for t in all {
            if t.parent_trace_id.as_deref() == Some(parent.as_str()) && !out.contains(&t.id) {
                out.push(t.id.clone());
            }
        }
        i += 1;
    }
    out
}

impl Records {
    /// Purges the account's generation `id` (see [`redact_generation`]) and drops its
    /// events; the purged record, or `None` when there is none.
    pub fn purge_generation_content(&self, account_id: &str, id: &str) -> Result<Option<GenerationRecord>, StoreError> {
        let txn = self.kv.write()?;
        let Some(mut g) = get_in::<GenerationRecord>(&txn, account_id, id)? else { return Ok(None) };
        redact_generation(&mut g, &crate::clock::now_rfc3339());
        put_in(&txn, &g)?;
        txn.drop_log(EVENTS, id)?;
        txn.commit()?;
        Ok(Some(g))
    }

    /// Purges trace `id` of the account and, in its project, every trace below it and
    /// every generation of those traces: traces lose their `error`, generations as
    /// [`redact_generation`], each keeping an earlier stamp. `None` when there is none.
    pub fn purge_trace_content(&self, account_id: &str, id: &str) -> Result<Option<TracePurge>, StoreError> {
        let txn = self.kv.write()?;
        let Some(root) = get_in::<TraceRecord>(&txn, account_id, id)? else { return Ok(None) };
        let at = crate::clock::now_rfc3339();
        let traces: Vec<TraceRecord> = list_in::<TraceRecord>(&txn, account_id)?.into_iter().filter(|t| t.project_id == root.project_id).collect();
        let ids = descendants(&traces, id);
        let mut purged = root.clone();
        for mut t in traces.into_iter().filter(|t| ids.contains(&t.id)) {
            t.error = None;
            if t.content_redacted_at.is_none() {
                t.content_redacted_at = Some(at.clone());
            }
            put_in(&txn, &t)?;
            if t.id == id {
                purged = t;
            }
        }
        let mut generations = 0;
        for mut g in list_in::<GenerationRecord>(&txn, account_id)? {
            if g.project_id == root.project_id && ids.contains(&g.trace_id) {
                redact_generation(&mut g, &at);
                put_in(&txn, &g)?;
                txn.drop_log(EVENTS, &g.id)?;
                generations += 1;
            }
        }
        txn.commit()?;
        Ok(Some(TracePurge { trace: purged, traces: ids.len(), generations }))
    }

    /// Deletes the agent's generations (with their events and idempotency claims) and
    /// traces in `project_id` (an agent's force delete; records another project made
    /// stay). The counts removed.
    pub fn remove_agent_runs(&self, account_id: &str, project_id: &str, agent_id: &str) -> Result<(usize, usize), StoreError> {
        let txn = self.kv.write()?;
        let mut counts = (0, 0);
        for g in list_in::<GenerationRecord>(&txn, account_id)? {
            if g.agent_id == agent_id && g.project_id == project_id {
                remove_generation_in(&txn, &g)?;
                counts.0 += 1;
            }
        }
        for t in list_in::<TraceRecord>(&txn, account_id)? {
            if t.agent_id == agent_id && t.project_id == project_id {
                txn.remove_member(AGENT_DEPENDENTS, agent_id, &format!("trace:{}", t.id))?;
                remove_in::<TraceRecord>(&txn, account_id, &t.id)?;
                counts.1 += 1;
            }
        }
        txn.commit()?;
        Ok(counts)
    }
}
