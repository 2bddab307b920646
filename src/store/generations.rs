//! Generations, traces, their event logs and idempotency keys. A generation's create
//! (with its trace, its idempotency claim and its agent link) is one transaction, and
//! so is every step it saves (the record, the step's events, the trace's step count):
//! a crash leaves each step either wholly written or not at all.
//!
//! Tables besides the two kinds' own (`store::owned`): `soat_generation_events`
//! (`(generation id, seq)` → the event's SSE data line), and `soat_idempotency`
//! (account, project and key → the generation it names and the fingerprint of the
//! request that claimed it), and `soat_generations_active` (the queue of generations not
//! settled, which a restart takes over). redb runs one writer at a time, so of two requests with
//! one key, across shards, exactly one claims it. A generation and its new trace link
//! themselves to their agent in `store::agents`' dependents table.
//!
//! The typed records are the agents module's: the store sees them through
//! [`GenerationRow`] and [`TraceRow`] (as `store::agents` sees agents through its row
//! traits) and keeps their JSON.

use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableError};
use serde::{Deserialize, Serialize};

use super::agents::DEPENDENTS as AGENT_DEPENDENTS;
use super::error::Op;
use super::owned::{get_in, insert_in, Owned};
use super::{from_json, to_json, Records, StoreError};

/// The generations' and traces' own tables (`store::owned`'s records and index),
/// named here so the store creates them without knowing the typed records.
pub const GENERATIONS: &str = "soat_generations";
pub const GENERATIONS_BY_ACCOUNT: &str = "soat_generations_by_account";
pub const TRACES: &str = "soat_traces";
pub const TRACES_BY_ACCOUNT: &str = "soat_traces_by_account";

const EVENTS: TableDefinition<(&str, u64), &str> = TableDefinition::new("soat_generation_events");
const IDEMPOTENCY: TableDefinition<&str, &[u8]> = TableDefinition::new("soat_idempotency");
/// The durable queue: every generation not yet settled (id → account), so a restart
/// finds the runs to take over without reading every generation ever made.
const ACTIVE: TableDefinition<&str, &str> = TableDefinition::new("soat_generations_active");

/// A generation record, as the store needs to see it (the typed record is
/// `agents::generation::GenerationRecord`; the store keeps its JSON).
pub trait GenerationRow: Owned + Clone {
    /// The kind of trace that groups generations.
    type Trace: TraceRow;
    fn project_id(&self) -> &str;
    fn agent_id(&self) -> &str;
    fn trace_id(&self) -> &str;
    fn idempotency_key(&self) -> Option<&str>;
    /// Completed or failed: it leaves the queue a restart takes over.
    fn settled(&self) -> bool;
    /// When its content was purged, if it was.
    fn content_redacted_at(&self) -> Option<&str>;
    /// What a step's save keeps of the stored record rather than the runner's copy:
    /// the caller-owned fields (`metadata`, which PATCH may have changed meanwhile)
    /// and the purge stamp.
    fn keep_from_stored(&mut self, stored: Self);
    /// Clears what a purge erases and stamps `at`, unless it was purged already.
    fn redact(&mut self, at: &str);
    /// Counts `steps` more model calls of this generation on its trace.
    fn count_steps_on(&self, trace: &mut Self::Trace, steps: u64, now: &str);
}

/// A trace record, as the store needs to see it.
pub trait TraceRow: Owned {
    fn project_id(&self) -> &str;
    fn agent_id(&self) -> &str;
    fn parent_trace_id(&self) -> Option<&str>;
    /// Clears what a purge erases (its `error`) and stamps `at`, keeping an earlier stamp.
    fn redact(&mut self, at: &str);
}

/// One event a step's save appends: its id, its SSE `data:` payload, and whether it
/// ends its stream (a purged generation's save writes only those).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow {
    pub seq: u64,
    pub data: String,
    pub ends_stream: bool,
}

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
        let txn = self.db.begin_write().op("begin create tables")?;
        for table in [GENERATIONS, TRACES] {
            txn.open_table(TableDefinition::<&str, &[u8]>::new(table)).op("create records table")?;
        }
        for index in [GENERATIONS_BY_ACCOUNT, TRACES_BY_ACCOUNT] {
            txn.open_multimap_table(redb::MultimapTableDefinition::<&str, &str>::new(index)).op("create index table")?;
        }
        txn.open_table(EVENTS).op("create events")?;
        txn.open_table(IDEMPOTENCY).op("create idempotency")?;
        txn.open_table(ACTIVE).op("create active")?;
        txn.commit().op("commit create tables")
    }

    /// Adds a generation, its trace when the trace is new, links both to the agent,
    /// and claims `key` (with the request's fingerprint) when given, all at once.
    pub fn create_generation<G: GenerationRow>(&self, g: &G, new_trace: Option<&G::Trace>, key: Option<(&str, &str)>) -> Result<Created, StoreError> {
        let txn = self.db.begin_write().op("begin create generation")?;
        if let Some((key, fingerprint)) = key {
            let mut claims = txn.open_table(IDEMPOTENCY).op("open idempotency")?;
            let k = idempotency_key(g.account_id(), g.project_id(), key);
            if let Some(v) = claims.get(k.as_str()).op("read claim")? {
                return Ok(Created::Claimed(from_json("idempotency claim", v.value())?));
            }
            let claim = Claim { generation_id: g.id().to_owned(), agent_id: g.agent_id().to_owned(), fingerprint: fingerprint.to_owned() };
            claims.insert(k.as_str(), to_json(&claim).as_slice()).op("claim key")?;
        }
        insert_in(&txn, g)?;
        if !g.settled() {
            txn.open_table(ACTIVE).op("open active")?.insert(g.id(), g.account_id()).op("queue generation")?;
        }
        {
            let mut links = txn.open_multimap_table(AGENT_DEPENDENTS).op("open dependents")?;
            links.insert(g.agent_id(), format!("generation:{}", g.id()).as_str()).op("link generation")?;
            if let Some(t) = new_trace {
                insert_in(&txn, t)?;
                links.insert(t.agent_id(), format!("trace:{}", t.id()).as_str()).op("link trace")?;
            }
        }
        txn.commit().op("commit create generation")?;
        Ok(Created::New)
    }

    /// The claim `key` holds in the project, if any.
    pub fn idempotency_claim(&self, account_id: &str, project_id: &str, key: &str) -> Result<Option<Claim>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let table = match txn.open_table(IDEMPOTENCY) {
            Err(TableError::TableDoesNotExist(_)) => return Ok(None),
            t => t.op("open idempotency")?,
        };
        table
            .get(idempotency_key(account_id, project_id, key).as_str())
            .op("read claim")?
            .map(|v| from_json("idempotency claim", v.value()))
            .transpose()
    }

    /// Saves a step: the run's fields of `g` (never the caller-owned `metadata`, which
    /// PATCH may have changed meanwhile), the step's events, and `steps` more on the
    /// trace. `check` sees the stored record first and may refuse the save (`false`:
    /// nothing is written). `None` when the generation is gone.
    pub fn save_step<G: GenerationRow>(
        &self,
        g: &G,
        events: &[EventRow],
        steps: u64,
        check: impl FnOnce(&G) -> bool,
    ) -> Result<Option<bool>, StoreError> {
        let txn = self.db.begin_write().op("begin save step")?;
        {
            let Some(stored) = get_in::<G>(&txn, g.account_id(), g.id())? else { return Ok(None) };
            if !check(&stored) {
                return Ok(Some(false));
            }
            let mut next = g.clone();
            next.keep_from_stored(stored);
            // Purged while it ran: the run goes on from what it holds, writing no
            // content, and its readers still get the frame that ends their stream.
            let purged = next.content_redacted_at().map(str::to_owned);
            if let Some(at) = &purged {
                next.redact(at);
            }
            let events: Vec<&EventRow> = events.iter().filter(|e| purged.is_none() || e.ends_stream).collect();
            let mut table = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new(G::TABLE)).op("open generations")?;
            table.insert(g.id(), to_json(&next).as_slice()).op("save generation")?;
            let mut active = txn.open_table(ACTIVE).op("open active")?;
            if next.settled() {
                active.remove(g.id()).op("dequeue generation")?;
            } else {
                active.insert(g.id(), g.account_id()).op("queue generation")?;
            }
            if !events.is_empty() {
                let mut log = txn.open_table(EVENTS).op("open events")?;
                for e in events {
                    log.insert((g.id(), e.seq), e.data.as_str()).op("append event")?;
                }
            }
            if steps > 0 {
                if let Some(mut t) = get_in::<G::Trace>(&txn, g.account_id(), g.trace_id())? {
                    g.count_steps_on(&mut t, steps, &crate::clock::now_rfc3339());
                    put_in(&txn, &t)?;
                }
            }
        }
        txn.commit().op("commit save step")?;
        Ok(Some(true))
    }

    /// The generations not settled (the queue a restart takes over), and those of its
    /// entries that no longer need it (settled by a write that went around the queue,
    /// or gone) dropped from it.
    pub fn active_generations<G: GenerationRow>(&self) -> Result<Vec<G>, StoreError> {
        let txn = self.db.begin_write().op("begin read queue")?;
        let mut out = Vec::new();
        {
            let mut active = txn.open_table(ACTIVE).op("open active")?;
            let mut stale = Vec::new();
            for row in active.iter().op("read queue")? {
                let (id, account) = row.op("read queue entry")?;
                match get_in::<G>(&txn, account.value(), id.value())? {
                    Some(g) if !g.settled() => out.push(g),
                    _ => stale.push(id.value().to_owned()),
                }
            }
            for id in stale {
                active.remove(id.as_str()).op("dequeue generation")?;
            }
        }
        txn.commit().op("commit read queue")?;
        Ok(out)
    }

    /// The generation's committed events after `after`, in order.
    pub fn generation_events(&self, id: &str, after: u64) -> Result<Vec<(u64, String)>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let table = match txn.open_table(EVENTS) {
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            t => t.op("open events")?,
        };
        let mut out = Vec::new();
        for row in table.range((id, after.saturating_add(1))..=(id, u64::MAX)).op("read events")? {
            let (k, v) = row.op("read event")?;
            out.push((k.value().1, v.value().to_owned()));
        }
        Ok(out)
    }
}

// The read side's maintenance (api/soat/generations.rs and traces.rs): purges and the
// agent delete's cascade. Each is one transaction, so a purge is whole or not at all.

/// What [`Records::purge_trace_content`] touched.
#[derive(Debug, Clone, PartialEq)]
pub struct TracePurge<T> {
    pub trace: T,
    pub traces: usize,
    pub generations: usize,
}

fn drop_events_in(txn: &redb::WriteTransaction, id: &str) -> Result<(), StoreError> {
    txn.open_table(EVENTS).op("open events")?.retain_in((id, 0)..=(id, u64::MAX), |_, _| false).op("drop events")?;
    Ok(())
}

fn put_in<R: Owned>(txn: &redb::WriteTransaction, r: &R) -> Result<(), StoreError> {
    let mut table = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new(R::TABLE)).op("open records")?;
    table.insert(r.id(), to_json(r).as_slice()).op("write record")?;
    Ok(())
}

/// The ids of `root` and of every trace below it (by `parent_trace_id`), among `all`.
pub fn descendants<T: TraceRow>(all: &[T], root: &str) -> Vec<String> {
    let mut out = vec![root.to_owned()];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i].clone();
        for t in all {
            if t.parent_trace_id() == Some(parent.as_str()) && !out.iter().any(|id| id == t.id()) {
                out.push(t.id().to_owned());
            }
        }
        i += 1;
    }
    out
}

impl Records {
    /// Purges the account's generation `id` (see [`GenerationRow::redact`]) and drops its
    /// events; the purged record, or `None` when there is none.
    pub fn purge_generation_content<G: GenerationRow>(&self, account_id: &str, id: &str) -> Result<Option<G>, StoreError> {
        let txn = self.db.begin_write().op("begin purge generation")?;
        let Some(mut g) = get_in::<G>(&txn, account_id, id)? else { return Ok(None) };
        g.redact(&crate::clock::now_rfc3339());
        put_in(&txn, &g)?;
        drop_events_in(&txn, id)?;
        txn.commit().op("commit purge generation")?;
        Ok(Some(g))
    }

    /// Purges trace `id` of the account and, in its project, every trace below it and
    /// every generation of those traces: traces lose their `error`, generations as
    /// [`GenerationRow::redact`], each keeping an earlier stamp. `None` when there is none.
    pub fn purge_trace_content<G: GenerationRow>(&self, account_id: &str, id: &str) -> Result<Option<TracePurge<G::Trace>>, StoreError> {
        let txn = self.db.begin_write().op("begin purge trace")?;
        let Some(root) = get_in::<G::Trace>(&txn, account_id, id)? else { return Ok(None) };
        let at = crate::clock::now_rfc3339();
        let traces: Vec<G::Trace> =
            super::owned::list_in::<G::Trace>(&txn, account_id)?.into_iter().filter(|t| t.project_id() == root.project_id()).collect();
        let ids = descendants(&traces, id);
        let holds = |trace_id: &str| ids.iter().any(|i| i == trace_id);
        let mut purged = None;
        for mut t in traces.into_iter().filter(|t| holds(t.id())) {
            t.redact(&at);
            put_in(&txn, &t)?;
            if t.id() == id {
                purged = Some(t);
            }
        }
        let mut generations = 0;
        for mut g in super::owned::list_in::<G>(&txn, account_id)? {
            if g.project_id() == root.project_id() && holds(g.trace_id()) {
                g.redact(&at);
                put_in(&txn, &g)?;
                drop_events_in(&txn, g.id())?;
                generations += 1;
            }
        }
        txn.commit().op("commit purge trace")?;
        Ok(Some(TracePurge { trace: purged.unwrap_or(root), traces: ids.len(), generations }))
    }

    /// Deletes the agent's generations (with their events and idempotency claims) and
    /// traces in `project_id` (an agent's force delete; records another project made
    /// stay). The counts removed.
    pub fn remove_agent_runs<G: GenerationRow>(&self, account_id: &str, project_id: &str, agent_id: &str) -> Result<(usize, usize), StoreError> {
        let txn = self.db.begin_write().op("begin remove agent runs")?;
        let mut counts = (0, 0);
        {
            let mut links = txn.open_multimap_table(AGENT_DEPENDENTS).op("open dependents")?;
            for g in super::owned::list_in::<G>(&txn, account_id)? {
                if g.agent_id() != agent_id || g.project_id() != project_id {
                    continue;
                }
                if let Some(key) = g.idempotency_key() {
                    txn.open_table(IDEMPOTENCY)
                        .op("open idempotency")?
                        .remove(idempotency_key(account_id, g.project_id(), key).as_str())
                        .op("release key")?;
                }
                drop_events_in(&txn, g.id())?;
                txn.open_table(ACTIVE).op("open active")?.remove(g.id()).op("dequeue generation")?;
                links.remove(agent_id, format!("generation:{}", g.id()).as_str()).op("unlink")?;
                super::owned::remove_in::<G>(&txn, account_id, g.id())?;
                counts.0 += 1;
            }
            for t in super::owned::list_in::<G::Trace>(&txn, account_id)? {
                if t.agent_id() == agent_id && t.project_id() == project_id {
                    links.remove(agent_id, format!("trace:{}", t.id()).as_str()).op("unlink")?;
                    super::owned::remove_in::<G::Trace>(&txn, account_id, t.id())?;
                    counts.1 += 1;
                }
            }
        }
        txn.commit().op("commit remove agent runs")?;
        Ok(counts)
    }
}
