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
//! one key, across shards, exactly one claims it. A generation and its new trace link
//! themselves to their agent in `store::agents`' dependents table.
//!
//! The typed records are the agents module's: the store sees them through
//! [`GenerationRow`] and [`TraceRow`] (as `store::agents` sees agents through its row
//! traits) and keeps their JSON.

use serde::{Deserialize, Serialize};

use super::agents::DEPENDENTS as AGENT_DEPENDENTS;
use super::kv::{Logs, Names, Read, Rows, Sets, Table, WriteTx};
use super::owned::{get_in, insert_in, list_in, put_in, remove_in, Owned};
use super::{get_json, to_json, Charge, Records, StoreError};

/// The generations' and traces' own tables (`store::owned`'s records and index),
/// named here so the store creates them without knowing the typed records.
pub const GENERATIONS: &str = "soat_generations";
pub const GENERATIONS_BY_ACCOUNT: &str = "soat_generations_by_account";
pub const TRACES: &str = "soat_traces";
pub const TRACES_BY_ACCOUNT: &str = "soat_traces_by_account";

pub(super) const EVENTS: Logs = Logs("soat_generation_events");
pub(super) const IDEMPOTENCY: Rows = Rows("soat_idempotency");
/// The durable queue: every generation not yet settled (id → account), so a restart
/// finds the runs to take over without reading every generation ever made.
const ACTIVE: Names = Names("soat_generations_active");
/// The durable queue of memory extractions recorded and not yet done (id → account):
/// written with the step that settles a generation whose turn extracts, so a restart
/// resumes them (issue 36, knowledge).
const EXTRACTIONS: Names = Names("soat_generations_extracting");

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
    /// sessions: the message a settled generation's reply adds to the conversation it
    /// answers in (`store::conversations`), appended by the settle's own transaction.
    fn conversation_reply(&self) -> Option<super::ConversationMessageRecord> {
        None
    }
    /// sessions: the session this generation runs in, whose start the creating
    /// transaction claims (`Records::create_generation`).
    fn session_id(&self) -> Option<&str> {
        None
    }

    /// The events this state raises over `before` (`None`: a new generation), which
    /// the write that commits it addresses to the project's webhooks in the same
    /// transaction (`store::webhooks`' outbox). None by default.
    fn raised(&self, before: Option<&Self>) -> Vec<super::webhooks::Raised> {
        let _ = before;
        Vec::new()
    }

    /// guardrails (issue 37): the approval items this state holds, which the save
    /// that commits it files when they are not yet recorded (`store::approvals`).
    fn approvals_filed(&self) -> Vec<super::approvals::ApprovalRecord> {
        Vec::new()
    }

    /// approvals (issue 37): an item as its `approvals.created` event carries it (the
    /// reader's view), raised by the transaction that files it.
    fn approval_view(&self, a: &super::approvals::ApprovalRecord) -> serde_json::Value {
        let _ = a;
        serde_json::Value::Null
    }

    /// guardrails (issue 37): whether the generation has notes for its trace (what a
    /// guardrail decided), which each save brings to the trace through `count_steps_on`.
    fn has_trace_notes(&self) -> bool {
        false
    }

    /// Whether a memory extraction of its turn is recorded and not yet done.
    fn extraction_pending(&self) -> bool {
        false
    }
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
    /// The session runs this generation, which has not settled: nothing was written.
    SessionBusy(String),
}

fn idempotency_key(account_id: &str, project_id: &str, key: &str) -> String {
    format!("{account_id}\u{1f}{project_id}\u{1f}{key}")
}

impl Records {
    pub(super) fn ensure_generations(&self) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        for t in [
            Table::Rows(Rows(GENERATIONS)),
            Table::Rows(Rows(TRACES)),
            Table::Sets(Sets(GENERATIONS_BY_ACCOUNT)),
            Table::Sets(Sets(TRACES_BY_ACCOUNT)),
            Table::Logs(EVENTS),
            Table::Rows(IDEMPOTENCY),
            Table::Names(ACTIVE),
            Table::Names(EXTRACTIONS),
        ] {
            txn.create(t)?;
        }
        txn.commit()
    }

    /// Adds a generation, its trace when the trace is new, links both to the agent,
    /// and claims `key` (with the request's fingerprint) when given, all at once.
    pub fn create_generation<G: GenerationRow>(&self, g: &G, new_trace: Option<&G::Trace>, key: Option<(&str, &str)>) -> Result<Created, StoreError> {
        let txn = self.kv.write()?;
        if let Some((key, fingerprint)) = key {
            let k = idempotency_key(g.account_id(), g.project_id(), key);
            if let Some(claim) = get_json(&txn, IDEMPOTENCY, &k, "idempotency claim")? {
                return Ok(Created::Claimed(claim));
            }
            let claim = Claim { generation_id: g.id().to_owned(), agent_id: g.agent_id().to_owned(), fingerprint: fingerprint.to_owned() };
            txn.put_row(IDEMPOTENCY, &k, &to_json(&claim))?;
        }
        // sessions: one generation at a time, claimed in the session's record by this
        // same transaction (the store runs writes one at a time, so two starts cannot
        // both see the session free), which also marks its activity.
        if let Some(sid) = g.session_id() {
            if let Some(mut s) = get_in::<super::SessionRecord>(&txn, g.account_id(), sid)? {
                if let Some(prev) = s.generation_id.as_deref() {
                    if get_in::<G>(&txn, g.account_id(), prev)?.is_some_and(|p| !p.settled()) {
                        return Ok(Created::SessionBusy(prev.to_owned()));
                    }
                }
                s.generation_id = Some(g.id().to_owned());
                s.last_activity_at = Some(crate::clock::now_rfc3339());
                put_in(&txn, &s)?;
            }
        }
        insert_in(&txn, g)?;
        if !g.settled() {
            txn.put_name(ACTIVE, g.id(), g.account_id())?;
        }
        txn.add_member(AGENT_DEPENDENTS, g.agent_id(), &format!("generation:{}", g.id()))?;
        if let Some(t) = new_trace {
            insert_in(&txn, t)?;
            txn.add_member(AGENT_DEPENDENTS, t.agent_id(), &format!("trace:{}", t.id()))?;
        }
        // webhooks: the start's events, in the start's transaction.
        let raised = g.raised(None);
        super::webhooks::enqueue_in(&txn, g.account_id(), g.project_id(), &raised)?;
        // policies (issue 37): a failure files its exception in the same transaction.
        super::exceptions::file_in(&txn, g.account_id(), g.project_id(), &raised)?;
        self.commit_charged(txn, Charge::Capped(g.account_id()))?;
        Ok(Created::New)
    }

    /// [`Records::update`] for a generation, with the events the change raises
    /// addressed to the project's webhooks in the same transaction (an expiry).
    pub fn update_generation<G: GenerationRow, T>(
        &self,
        account_id: &str,
        id: &str,
        f: impl FnOnce(&mut G) -> super::owned::Change<T>,
    ) -> Result<Option<T>, StoreError> {
        let txn = self.kv.write()?;
        let Some(before) = get_in::<G>(&txn, account_id, id)? else { return Ok(None) };
        let mut g = before.clone();
        let out = match f(&mut g) {
            super::owned::Change::Keep(t) => return Ok(Some(t)),
            super::owned::Change::Write(t) => t,
        };
        assert!(g.id() == id && g.account_id() == account_id, "an update changed a generation's id or owner");
        put_in(&txn, &g)?;
        if g.settled() {
            txn.delete_name(ACTIVE, g.id())?;
        }
        let raised = g.raised(Some(&before));
        super::webhooks::enqueue_in(&txn, account_id, g.project_id(), &raised)?;
        // policies (issue 37): a failure files its exception in the same transaction.
        super::exceptions::file_in(&txn, account_id, g.project_id(), &raised)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(Some(out))
    }

    /// The claim `key` holds in the project, if any.
    pub fn idempotency_claim(&self, account_id: &str, project_id: &str, key: &str) -> Result<Option<Claim>, StoreError> {
        get_json(&self.kv.read()?, IDEMPOTENCY, &idempotency_key(account_id, project_id, key), "idempotency claim")
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
        self.save_step_settling(g, events, steps, check, None)
    }

    /// [`Records::save_step`] that also settles the step's quota reservation and meters
    /// its model call, in the step's own transaction (quotas, issue 37).
    pub fn save_step_settling<G: GenerationRow>(
        &self,
        g: &G,
        events: &[EventRow],
        steps: u64,
        check: impl FnOnce(&G) -> bool,
        settle: Option<&super::quotas::Settle>,
    ) -> Result<Option<bool>, StoreError> {
        let txn = self.kv.write()?;
        let Some(stored) = get_in::<G>(&txn, g.account_id(), g.id())? else { return Ok(None) };
        if !check(&stored) {
            return Ok(Some(false));
        }
        // webhooks: the events of this step's transition, in its transaction.
        let raised = g.raised(Some(&stored));
        let mut next = g.clone();
        next.keep_from_stored(stored);
        // Purged while it ran: the run goes on from what it holds, writing no
        // content, and its readers still get the frame that ends their stream.
        let purged = next.content_redacted_at().map(str::to_owned);
        if let Some(at) = &purged {
            next.redact(at);
        }
        put_in(&txn, &next)?;
        if next.settled() {
            txn.delete_name(ACTIVE, g.id())?;
            // sessions: the reply joins its conversation with the settle, once.
            if let Some(reply) = next.conversation_reply() {
                super::conversations::append_reply_in(&txn, reply)?;
            }
        } else {
            txn.put_name(ACTIVE, g.id(), g.account_id())?;
        }
        if next.extraction_pending() {
            txn.put_name(EXTRACTIONS, g.id(), g.account_id())?;
        }
        let kept = events.iter().filter(|e| purged.is_none() || e.ends_stream);
        txn.append(EVENTS, g.id(), kept.map(|e| (e.seq, e.data.as_str())))?;
        super::webhooks::enqueue_in(&txn, g.account_id(), g.project_id(), &raised)?;
        // guardrails (issue 37): the approvals a pause files, in the pause's transaction.
        super::approvals::file_in(&txn, &next)?;
        // policies (issue 37): a failure files its exception in the same transaction.
        super::exceptions::file_in(&txn, g.account_id(), g.project_id(), &raised)?;
        if steps > 0 || next.has_trace_notes() {
            if let Some(mut t) = get_in::<G::Trace>(&txn, g.account_id(), g.trace_id())? {
                g.count_steps_on(&mut t, steps, &crate::clock::now_rfc3339());
                put_in(&txn, &t)?;
            }
        }
        if let Some(settle) = settle {
            super::quotas::settle_in(&txn, settle)?;
        }
        // A run's step lands once begun: counted, never refused.
        self.commit_charged(txn, Charge::Counted(g.account_id()))?;
        Ok(Some(true))
    }

    /// The generations not settled (the queue a restart takes over), and those of its
    /// entries that no longer need it (settled by a write that went around the queue,
    /// or gone) dropped from it.
    pub fn active_generations<G: GenerationRow>(&self) -> Result<Vec<G>, StoreError> {
        let txn = self.kv.write()?;
        let mut out = Vec::new();
        for (id, account) in txn.names(ACTIVE)? {
            match get_in::<G>(&txn, &account, &id)? {
                Some(g) if !g.settled() => out.push(g),
                _ => txn.delete_name(ACTIVE, &id)?,
            }
        }
        txn.commit()?;
        Ok(out)
    }

    /// The generations whose memory extraction is recorded and not yet done; entries
    /// that no longer need it (done, or the generation gone) dropped from the queue.
    pub fn pending_extractions<G: GenerationRow>(&self) -> Result<Vec<G>, StoreError> {
        let txn = self.kv.write()?;
        let mut out = Vec::new();
        for (id, account) in txn.names(EXTRACTIONS)? {
            match get_in::<G>(&txn, &account, &id)? {
                Some(g) if g.extraction_pending() => out.push(g),
                _ => txn.delete_name(EXTRACTIONS, &id)?,
            }
        }
        txn.commit()?;
        Ok(out)
    }

    /// Takes a pending extraction for a new runner (issue 40: a dead node's, or its
    /// own last boot's): `claim` checks the stored record is still the holder's the
    /// caller saw and names the new holder; one transaction, so of the nodes that
    /// try, one gets it. The record as claimed, or `None` (done, gone or taken).
    pub fn claim_extraction<G: GenerationRow>(
        &self,
        account_id: &str,
        id: &str,
        claim: impl FnOnce(&mut G) -> bool,
    ) -> Result<Option<G>, StoreError> {
        let txn = self.kv.write()?;
        let Some(mut g) = get_in::<G>(&txn, account_id, id)? else { return Ok(None) };
        if !g.extraction_pending() || !claim(&mut g) {
            return Ok(None);
        }
        put_in(&txn, &g)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(Some(g))
    }

    /// Ends a generation's extraction: `finish` changes the stored record (its summary)
    /// and it leaves the queue, in one transaction, if `check` holds of the stored
    /// record (its holder is still the caller). `Some(false)` when another holder took
    /// it meanwhile (nothing changes), `None` when the generation is gone.
    pub fn finish_extraction<G: GenerationRow>(
        &self,
        account_id: &str,
        id: &str,
        check: impl FnOnce(&G) -> bool,
        finish: impl FnOnce(&mut G),
    ) -> Result<Option<bool>, StoreError> {
        let txn = self.kv.write()?;
        let found = match get_in::<G>(&txn, account_id, id)? {
            Some(g) if !check(&g) => return Ok(Some(false)),
            Some(mut g) => {
                finish(&mut g);
                put_in(&txn, &g)?;
                Some(true)
            }
            None => None,
        };
        txn.delete_name(EXTRACTIONS, id)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(found)
    }

    /// The generation's committed events after `after`, in order.
    pub fn generation_events(&self, id: &str, after: u64) -> Result<Vec<(u64, String)>, StoreError> {
        self.kv.read()?.log(EVENTS, id, after)
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

/// Removes a generation with its events, its idempotency claim, its place in the queue
/// and its agent link.
fn remove_generation_in<G: GenerationRow>(txn: &WriteTx, g: &G) -> Result<(), StoreError> {
    if let Some(key) = g.idempotency_key() {
        txn.delete_row(IDEMPOTENCY, &idempotency_key(g.account_id(), g.project_id(), key))?;
    }
    txn.drop_log(EVENTS, g.id())?;
    txn.delete_name(ACTIVE, g.id())?;
    txn.remove_member(AGENT_DEPENDENTS, g.agent_id(), &format!("generation:{}", g.id()))?;
    remove_in::<G>(txn, g.account_id(), g.id())?;
    Ok(())
}

impl Records {
    /// Purges the account's generation `id` (see [`GenerationRow::redact`]) and drops its
    /// events; the purged record, or `None` when there is none.
    pub fn purge_generation_content<G: GenerationRow>(&self, account_id: &str, id: &str) -> Result<Option<G>, StoreError> {
        let txn = self.kv.write()?;
        let Some(mut g) = get_in::<G>(&txn, account_id, id)? else { return Ok(None) };
        g.redact(&crate::clock::now_rfc3339());
        put_in(&txn, &g)?;
        txn.drop_log(EVENTS, id)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(Some(g))
    }

    /// Purges trace `id` of the account and, in its project, every trace below it and
    /// every generation of those traces: traces lose their `error`, generations as
    /// [`GenerationRow::redact`], each keeping an earlier stamp. `None` when there is none.
    pub fn purge_trace_content<G: GenerationRow>(&self, account_id: &str, id: &str) -> Result<Option<TracePurge<G::Trace>>, StoreError> {
        let txn = self.kv.write()?;
        let Some(root) = get_in::<G::Trace>(&txn, account_id, id)? else { return Ok(None) };
        let at = crate::clock::now_rfc3339();
        let traces: Vec<G::Trace> = list_in::<G::Trace>(&txn, account_id)?.into_iter().filter(|t| t.project_id() == root.project_id()).collect();
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
        for mut g in list_in::<G>(&txn, account_id)? {
            if g.project_id() == root.project_id() && holds(g.trace_id()) {
                g.redact(&at);
                put_in(&txn, &g)?;
                txn.drop_log(EVENTS, g.id())?;
                generations += 1;
            }
        }
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(Some(TracePurge { trace: purged.unwrap_or(root), traces: ids.len(), generations }))
    }

    /// Deletes the agent's generations (with their events and idempotency claims) and
    /// traces in `project_id` (an agent's force delete; records another project made
    /// stay). The counts removed.
    pub fn remove_agent_runs<G: GenerationRow>(&self, account_id: &str, project_id: &str, agent_id: &str) -> Result<(usize, usize), StoreError> {
        let txn = self.kv.write()?;
        let mut counts = (0, 0);
        for g in list_in::<G>(&txn, account_id)? {
            if g.agent_id() == agent_id && g.project_id() == project_id {
                remove_generation_in(&txn, &g)?;
                counts.0 += 1;
            }
        }
        for t in list_in::<G::Trace>(&txn, account_id)? {
            if t.agent_id() == agent_id && t.project_id() == project_id {
                txn.remove_member(AGENT_DEPENDENTS, agent_id, &format!("trace:{}", t.id()))?;
                remove_in::<G::Trace>(&txn, account_id, t.id())?;
                counts.1 += 1;
            }
        }
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(counts)
    }
}
