//! Agents and their archived versions. An agent's write and the version it archives
//! are one transaction, and the closure that decides the write runs inside it: a
//! version check made there (`If-Match`, `expected_version`, or the version the
//! server read) holds when the write lands, because the store runs writes one at a time.
//! So of two writes made against the same version exactly one lands, and nothing of
//! the other is written.
//!
//! Tables: `soat_agents` (id → JSON), `soat_agents_by_project` (account and project →
//! ids), `soat_agent_versions` (`agent/version` → JSON, zero-padded so a range reads
//! them in order), `soat_agent_dependents` (agent → `kind:id` of the generations,
//! traces, shares and ingestion rules that name it, linked by their own modules).

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::kv::{Keys, Read, Rows, Sets, WriteTx};
use super::{from_json, get_json, to_json, Charge, Records, StoreError};

pub(super) const AGENTS: Rows = Rows("soat_agents");
const BY_PROJECT: Sets = Sets("soat_agents_by_project");
pub(super) const VERSIONS: Rows = Rows("soat_agent_versions");
/// Agent → the `kind:id` of what names it (generations and traces link themselves).
pub(super) const DEPENDENTS: Sets = Sets("soat_agent_dependents");

/// An agent record, as the store needs to see it.
pub trait AgentRow: Serialize + DeserializeOwned {
    fn id(&self) -> &str;
    fn account_id(&self) -> &str;
    fn project_id(&self) -> &str;
}

/// An archived version, keyed by its agent and number.
pub trait VersionRow: Serialize + DeserializeOwned {
    fn agent_id(&self) -> &str;
    fn version(&self) -> u64;
}

/// What a write's closure decides.
pub enum Write<A, V, T> {
    /// Write nothing; answer `T`.
    Keep(T),
    /// Replace the agent, and write the version if there is one (a new one, or an
    /// archived one annotated); answer `T`.
    Put { agent: A, version: Option<V>, out: T },
}

/// What records name an agent, by kind (the prefix of a dependent's `kind:id`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DependentCounts {
    pub generations: u64,
    pub traces: u64,
    pub accepted_shares: u64,
    pub ingestion_rules: u64,
}

impl DependentCounts {
    fn any(&self) -> bool {
        self.generations + self.traces + self.accepted_shares + self.ingestion_rules > 0
    }
}

/// What a delete did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    NotFound,
    /// Refused: something names the agent and `force` was not given.
    Blocked(DependentCounts),
    /// Gone, with its versions; `unlinked` are the dependents it no longer has (the
    /// ingestion rules stay linked, naming the deleted agent).
    Done {
        unlinked: DependentCounts,
    },
}

fn project_key(account_id: &str, project_id: &str) -> String {
    format!("{account_id}\u{1f}{project_id}")
}

fn version_key(agent_id: &str, version: u64) -> String {
    format!("{agent_id}/{version:020}")
}

fn owned_by<A: AgentRow>(a: &A, account_id: &str) -> bool {
    a.account_id() == account_id
}

impl Records {
    /// Adds an agent and its first version in one transaction.
    pub fn create_agent<A: AgentRow, V: VersionRow>(&self, agent: &A, first: &V) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        if txn.row(AGENTS, agent.id())?.is_some() {
            return Err(StoreError::Conflict { what: format!("agent {}", agent.id()) });
        }
        txn.put_row(AGENTS, agent.id(), &to_json(agent))?;
        txn.add_member(BY_PROJECT, &project_key(agent.account_id(), agent.project_id()), agent.id())?;
        put_version(&txn, first)?;
        self.commit_charged(txn, Charge::Capped(agent.account_id()))
    }

    /// The agent when it exists and is this account's (the caller checks its project).
    pub fn agent<A: AgentRow>(&self, account_id: &str, id: &str) -> Result<Option<A>, StoreError> {
        agent_in(&self.kv.read()?, account_id, id)
    }

    /// The project's agents (in id order; callers sort).
    pub fn agents<A: AgentRow>(&self, account_id: &str, project_id: &str) -> Result<Vec<A>, StoreError> {
        let txn = self.kv.read()?;
        let mut out = Vec::new();
        for id in txn.members(BY_PROJECT, &project_key(account_id, project_id))? {
            out.extend(get_json::<A>(&txn, AGENTS, &id, "agent")?);
        }
        Ok(out)
    }

    /// Every agent of the account, in every project.
    pub fn agents_of_account<A: AgentRow>(&self, account_id: &str) -> Result<Vec<A>, StoreError> {
        let mut out = Vec::new();
        for (_, v) in self.kv.read()?.rows(AGENTS, Keys::All)? {
            let a: A = from_json("agent", &v)?;
            if a.account_id() == account_id {
                out.push(a);
            }
        }
        Ok(out)
    }

    /// Reads the agent, lets `decide` choose the write, and makes it, in one write
    /// transaction. `None` when the account has no such agent.
    pub fn write_agent<A: AgentRow, V: VersionRow, T, E: From<StoreError>>(
        &self,
        account_id: &str,
        id: &str,
        decide: impl FnOnce(A) -> Result<Write<A, V, T>, E>,
    ) -> Result<Option<T>, E> {
        let txn = self.kv.write()?;
        let Some(current) = agent_in::<A>(&txn, account_id, id)? else { return Ok(None) };
        let (agent, version, out) = match decide(current)? {
            Write::Keep(out) => return Ok(Some(out)),
            Write::Put { agent, version, out } => (agent, version, out),
        };
        assert!(agent.id() == id && owned_by(&agent, account_id), "a write changed an agent's id or owner");
        txn.put_row(AGENTS, id, &to_json(&agent))?;
        if let Some(v) = &version {
            assert_eq!(v.agent_id(), id, "a version of another agent");
            put_version(&txn, v)?;
        }
        self.commit_charged(txn, Charge::Capped(account_id))?;
        Ok(Some(out))
    }

    pub fn agent_version<V: VersionRow>(&self, agent_id: &str, version: u64) -> Result<Option<V>, StoreError> {
        get_json(&self.kv.read()?, VERSIONS, &version_key(agent_id, version), "agent version")
    }

    /// The agent's versions, newest first.
    pub fn agent_versions<V: VersionRow>(&self, agent_id: &str) -> Result<Vec<V>, StoreError> {
        let (start, end) = (format!("{agent_id}/"), format!("{agent_id}0"));
        let rows = self.kv.read()?.rows(VERSIONS, Keys::Between(&start, &end))?;
        rows.iter().rev().map(|(_, v)| from_json("agent version", v)).collect()
    }

    /// Records that `dependent` (`generation:gen_…`, `trace:trace_…`, `share:…`,
    /// `ingestion_rule:…`) names the agent; the modules that make them call this.
    pub fn link_agent_dependent(&self, agent_id: &str, dependent: &str) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        txn.add_member(DEPENDENTS, agent_id, dependent)?;
        txn.commit()
    }

    /// What names the agent, counted by kind.
    pub fn agent_dependents(&self, agent_id: &str) -> Result<DependentCounts, StoreError> {
        Ok(count(&self.kv.read()?.members(DEPENDENTS, agent_id)?))
    }

    /// Deletes the agent and its versions, unless something names it and `force` is
    /// off; the count and the delete are one transaction.
    pub fn delete_agent<A: AgentRow>(&self, account_id: &str, id: &str, force: bool) -> Result<Deleted, StoreError> {
        let txn = self.kv.write()?;
        let Some(current) = agent_in::<A>(&txn, account_id, id)? else { return Ok(Deleted::NotFound) };
        let links = txn.members(DEPENDENTS, id)?;
        let counts = count(&links);
        if counts.any() && !force {
            return Ok(Deleted::Blocked(counts));
        }
        for link in links.iter().filter(|l| !l.starts_with("ingestion_rule:")) {
            txn.remove_member(DEPENDENTS, id, link)?;
        }
        txn.delete_row(AGENTS, id)?;
        txn.remove_member(BY_PROJECT, &project_key(account_id, current.project_id()), id)?;
        let (start, end) = (format!("{id}/"), format!("{id}0"));
        txn.delete_rows(VERSIONS, &start, &end)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(Deleted::Done { unlinked: DependentCounts { ingestion_rules: 0, ..counts } })
    }
}

/// The agent when it exists and is this account's.
fn agent_in<A: AgentRow>(txn: &impl Read, account_id: &str, id: &str) -> Result<Option<A>, StoreError> {
    Ok(get_json::<A>(txn, AGENTS, id, "agent")?.filter(|a| owned_by(a, account_id)))
}

fn put_version<V: VersionRow>(txn: &WriteTx, v: &V) -> Result<(), StoreError> {
    txn.put_row(VERSIONS, &version_key(v.agent_id(), v.version()), &to_json(v))
}

fn count(links: &[String]) -> DependentCounts {
    let mut c = DependentCounts::default();
    for link in links {
        match link.split_once(':').map_or("", |(kind, _)| kind) {
            "generation" => c.generations += 1,
            "trace" => c.traces += 1,
            "share" => c.accepted_shares += 1,
            "ingestion_rule" => c.ingestion_rules += 1,
            _ => {}
        }
    }
    c
}
