//! Generations, traces, their event logs and idempotency keys. A generation's create
//! (with its trace, its idempotency claim and its agent link) is one transaction, and
//! so is every step it saves (the record, the step's events, the trace's step count):
//! a crash leaves each step either wholly written or not at all.
//!
//! Tables besides the two kinds' own (`store::owned`): `soat_generation_events`
//! (`(generation id, seq)` → the event's SSE data line), and `soat_idempotency`
//! (account, project and key → the generation it names and the fingerprint of the
//! request that claimed it). redb runs one writer at a time, so of two requests with
//! one key, across shards, exactly one claims it.

use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableError};
use serde::{Deserialize, Serialize};

use super::error::Op;
use super::owned::{get_in, insert_in, Owned};
use super::{from_json, to_json, Records, StoreError};
use crate::agents::generation::record::{GenerationRecord, TraceRecord};

const EVENTS: TableDefinition<(&str, u64), &str> = TableDefinition::new("soat_generation_events");
const IDEMPOTENCY: TableDefinition<&str, &[u8]> = TableDefinition::new("soat_idempotency");
const AGENT_DEPENDENTS: redb::MultimapTableDefinition<&str, &str> = redb::MultimapTableDefinition::new("soat_agent_dependents");

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
        let txn = self.db.begin_write().op("begin create tables")?;
        txn.open_table(EVENTS).op("create events")?;
        txn.open_table(IDEMPOTENCY).op("create idempotency")?;
        txn.commit().op("commit create tables")
    }

    /// Adds a generation, its trace when the trace is new, links both to the agent,
    /// and claims `key` (with the request's fingerprint) when given, all at once.
    pub fn create_generation(&self, g: &GenerationRecord, new_trace: Option<&TraceRecord>, key: Option<(&str, &str)>) -> Result<Created, StoreError> {
        let txn = self.db.begin_write().op("begin create generation")?;
        if let Some((key, fingerprint)) = key {
            let mut claims = txn.open_table(IDEMPOTENCY).op("open idempotency")?;
            let k = idempotency_key(&g.account_id, &g.project_id, key);
            if let Some(v) = claims.get(k.as_str()).op("read claim")? {
                return Ok(Created::Claimed(from_json("idempotency claim", v.value())?));
            }
            let claim = Claim { generation_id: g.id.clone(), agent_id: g.agent_id.clone(), fingerprint: fingerprint.to_owned() };
            claims.insert(k.as_str(), to_json(&claim).as_slice()).op("claim key")?;
        }
        insert_in(&txn, g)?;
        {
            let mut links = txn.open_multimap_table(AGENT_DEPENDENTS).op("open dependents")?;
            links.insert(g.agent_id.as_str(), format!("generation:{}", g.id).as_str()).op("link generation")?;
            if let Some(t) = new_trace {
                insert_in(&txn, t)?;
                links.insert(t.agent_id.as_str(), format!("trace:{}", t.id).as_str()).op("link trace")?;
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
    pub fn save_step(
        &self,
        g: &GenerationRecord,
        events: &[(u64, String)],
        steps: u64,
        check: impl FnOnce(&GenerationRecord) -> bool,
    ) -> Result<Option<bool>, StoreError> {
        let txn = self.db.begin_write().op("begin save step")?;
        {
            let Some(stored) = get_in::<GenerationRecord>(&txn, &g.account_id, &g.id)? else { return Ok(None) };
            if !check(&stored) {
                return Ok(Some(false));
            }
            let mut next = g.clone();
            next.metadata = stored.metadata;
            next.content_redacted_at = stored.content_redacted_at;
            let mut table = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new(GenerationRecord::TABLE)).op("open generations")?;
            table.insert(g.id.as_str(), to_json(&next).as_slice()).op("save generation")?;
            if !events.is_empty() {
                let mut log = txn.open_table(EVENTS).op("open events")?;
                for (seq, data) in events {
                    log.insert((g.id.as_str(), *seq), data.as_str()).op("append event")?;
                }
            }
            if steps > 0 {
                if let Some(mut t) = get_in::<TraceRecord>(&txn, &g.account_id, &g.trace_id)? {
                    t.step_count += steps;
                    t.updated_at = crate::clock::now_rfc3339();
                    if g.error.is_some() && t.error.is_none() {
                        t.error = g.error.clone();
                    }
                    let mut traces = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new(TraceRecord::TABLE)).op("open traces")?;
                    traces.insert(t.id.as_str(), to_json(&t).as_slice()).op("save trace")?;
                }
            }
        }
        txn.commit().op("commit save step")?;
        Ok(Some(true))
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

    /// Drops the generation's events (its content is deleted, or it is).
    pub fn drop_generation_events(&self, id: &str) -> Result<(), StoreError> {
        let txn = self.db.begin_write().op("begin drop events")?;
        txn.open_table(EVENTS).op("open events")?.retain_in((id, 0)..=(id, u64::MAX), |_, _| false).op("drop events")?;
        txn.commit().op("commit drop events")
    }

    /// Removes a generation with its events and its idempotency claim.
    pub fn remove_generation(&self, account_id: &str, id: &str) -> Result<bool, StoreError> {
        let txn = self.db.begin_write().op("begin remove generation")?;
        let Some(g) = get_in::<GenerationRecord>(&txn, account_id, id)? else { return Ok(false) };
        if let Some(key) = &g.idempotency_key {
            txn.open_table(IDEMPOTENCY).op("open idempotency")?.remove(idempotency_key(account_id, &g.project_id, key).as_str()).op("release key")?;
        }
        txn.open_table(EVENTS).op("open events")?.retain_in((id, 0)..=(id, u64::MAX), |_, _| false).op("drop events")?;
        txn.open_multimap_table(AGENT_DEPENDENTS)
            .op("open dependents")?
            .remove(g.agent_id.as_str(), format!("generation:{id}").as_str())
            .op("unlink")?;
        super::owned::remove_in::<GenerationRecord>(&txn, account_id, id)?;
        txn.commit().op("commit remove generation")?;
        Ok(true)
    }
}
