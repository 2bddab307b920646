//! Agents and their archived versions. An agent's write and the version it archives
//! are one transaction, and the closure that decides the write runs inside it: a
//! version check made there (`If-Match`, `expected_version`, or the version the
//! server read) holds when the write lands, because redb runs one writer at a time.
//! So of two writes made against the same version exactly one lands, and nothing of
//! the other is written.
//!
//! Tables: `soat_agents` (id → JSON), `soat_agents_by_project` (account and project →
//! ids), `soat_agent_versions` (`agent/version` → JSON, zero-padded so a range reads
//! them in order), `soat_agent_dependents` (agent → `kind:id` of the generations,
//! traces, shares and ingestion rules that name it, linked by their own modules).

use redb::{MultimapTableDefinition, ReadableDatabase, ReadableMultimapTable, ReadableTable, TableDefinition, TableError, WriteTransaction};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::error::Op;
use super::{from_json, to_json, Records, StoreError};

const AGENTS: TableDefinition<&str, &[u8]> = TableDefinition::new("soat_agents");
const BY_PROJECT: MultimapTableDefinition<&str, &str> = MultimapTableDefinition::new("soat_agents_by_project");
const VERSIONS: TableDefinition<&str, &[u8]> = TableDefinition::new("soat_agent_versions");
/// Also written by `store::generations` (a generation and its trace link themselves).
pub(super) const DEPENDENTS: MultimapTableDefinition<&str, &str> = MultimapTableDefinition::new("soat_agent_dependents");

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
        let txn = self.db.begin_write().op("begin create agent")?;
        {
            let mut agents = txn.open_table(AGENTS).op("open agents")?;
            if agents.get(agent.id()).op("look up agent id")?.is_some() {
                return Err(StoreError::Conflict { what: format!("agent {}", agent.id()) });
            }
            agents.insert(agent.id(), to_json(agent).as_slice()).op("insert agent")?;
            let mut index = txn.open_multimap_table(BY_PROJECT).op("open agents index")?;
            index.insert(project_key(agent.account_id(), agent.project_id()).as_str(), agent.id()).op("index agent")?;
            put_version(&txn, first)?;
        }
        txn.commit().op("commit create agent")
    }

    /// The agent when it exists and is this account's (the caller checks its project).
    pub fn agent<A: AgentRow>(&self, account_id: &str, id: &str) -> Result<Option<A>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let table = match txn.open_table(AGENTS) {
            Err(TableError::TableDoesNotExist(_)) => return Ok(None),
            t => t.op("open agents")?,
        };
        let found = table.get(id).op("read agent")?.map(|v| from_json::<A>("agent", v.value())).transpose()?;
        Ok(found.filter(|a| owned_by(a, account_id)))
    }

    /// The project's agents (in id order; callers sort).
    pub fn agents<A: AgentRow>(&self, account_id: &str, project_id: &str) -> Result<Vec<A>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let (index, table) = match (txn.open_multimap_table(BY_PROJECT), txn.open_table(AGENTS)) {
            (Err(TableError::TableDoesNotExist(_)), _) | (_, Err(TableError::TableDoesNotExist(_))) => return Ok(Vec::new()),
            (i, t) => (i.op("open agents index")?, t.op("open agents")?),
        };
        let mut out = Vec::new();
        for id in index.get(project_key(account_id, project_id).as_str()).op("list agents")? {
            let id = id.op("read agents index")?;
            if let Some(v) = table.get(id.value()).op("read agent")? {
                out.push(from_json::<A>("agent", v.value())?);
            }
        }
        Ok(out)
    }

    /// Every agent of the account, in every project.
    pub fn agents_of_account<A: AgentRow>(&self, account_id: &str) -> Result<Vec<A>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let table = match txn.open_table(AGENTS) {
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            t => t.op("open agents")?,
        };
        let mut out = Vec::new();
        for row in table.iter().op("list agents")? {
            let a: A = from_json("agent", row.op("read agent")?.1.value())?;
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
        let txn = self.db.begin_write().op("begin write agent")?;
        let out = {
            let mut agents = txn.open_table(AGENTS).op("open agents")?;
            let current = agents.get(id).op("read agent")?.map(|v| from_json::<A>("agent", v.value())).transpose()?;
            let Some(current) = current.filter(|a| owned_by(a, account_id)) else { return Ok(None) };
            match decide(current)? {
                Write::Keep(out) => return Ok(Some(out)),
                Write::Put { agent, version, out } => {
                    assert!(agent.id() == id && owned_by(&agent, account_id), "a write changed an agent's id or owner");
                    agents.insert(id, to_json(&agent).as_slice()).op("write agent")?;
                    if let Some(v) = &version {
                        assert_eq!(v.agent_id(), id, "a version of another agent");
                        put_version(&txn, v)?;
                    }
                    out
                }
            }
        };
        txn.commit().op("commit write agent")?;
        Ok(Some(out))
    }

    pub fn agent_version<V: VersionRow>(&self, agent_id: &str, version: u64) -> Result<Option<V>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let table = match txn.open_table(VERSIONS) {
            Err(TableError::TableDoesNotExist(_)) => return Ok(None),
            t => t.op("open versions")?,
        };
        let found = table.get(version_key(agent_id, version).as_str()).op("read version")?;
        found.map(|v| from_json("agent version", v.value())).transpose()
    }

    /// The agent's versions, newest first.
    pub fn agent_versions<V: VersionRow>(&self, agent_id: &str) -> Result<Vec<V>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let table = match txn.open_table(VERSIONS) {
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            t => t.op("open versions")?,
        };
        let (start, end) = (format!("{agent_id}/"), format!("{agent_id}0"));
        let mut out = Vec::new();
        for row in table.range(start.as_str()..end.as_str()).op("list versions")?.rev() {
            out.push(from_json("agent version", row.op("read version")?.1.value())?);
        }
        Ok(out)
    }

    /// Records that `dependent` (`generation:gen_…`, `trace:trace_…`, `share:…`,
    /// `ingestion_rule:…`) names the agent; the modules that make them call this.
    pub fn link_agent_dependent(&self, agent_id: &str, dependent: &str) -> Result<(), StoreError> {
        let txn = self.db.begin_write().op("begin link dependent")?;
        txn.open_multimap_table(DEPENDENTS).op("open dependents")?.insert(agent_id, dependent).op("link dependent")?;
        txn.commit().op("commit link dependent")
    }

    /// What names the agent, counted by kind.
    pub fn agent_dependents(&self, agent_id: &str) -> Result<DependentCounts, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        match txn.open_multimap_table(DEPENDENTS) {
            Err(TableError::TableDoesNotExist(_)) => Ok(DependentCounts::default()),
            t => {
                let table = t.op("open dependents")?;
                let mut links = Vec::new();
                for d in table.get(agent_id).op("list dependents")? {
                    links.push(d.op("read dependent")?.value().to_owned());
                }
                Ok(count(&links))
            }
        }
    }

    /// Deletes the agent and its versions, unless something names it and `force` is
    /// off; the count and the delete are one transaction.
    pub fn delete_agent<A: AgentRow>(&self, account_id: &str, id: &str, force: bool) -> Result<Deleted, StoreError> {
        let txn = self.db.begin_write().op("begin delete agent")?;
        let done = {
            let mut agents = txn.open_table(AGENTS).op("open agents")?;
            let current = agents.get(id).op("read agent")?.map(|v| from_json::<A>("agent", v.value())).transpose()?;
            let Some(current) = current.filter(|a| owned_by(a, account_id)) else { return Ok(Deleted::NotFound) };
            let mut dependents = txn.open_multimap_table(DEPENDENTS).op("open dependents")?;
            let mut links = Vec::new();
            for d in dependents.get(id).op("list dependents")? {
                links.push(d.op("read dependent")?.value().to_owned());
            }
            let counts = count(&links);
            if counts.any() && !force {
                return Ok(Deleted::Blocked(counts));
            }
            for link in links.iter().filter(|l| !l.starts_with("ingestion_rule:")) {
                dependents.remove(id, link.as_str()).op("unlink dependent")?;
            }
            agents.remove(id).op("remove agent")?;
            txn.open_multimap_table(BY_PROJECT)
                .op("open agents index")?
                .remove(project_key(account_id, current.project_id()).as_str(), id)
                .op("unindex agent")?;
            let mut versions = txn.open_table(VERSIONS).op("open versions")?;
            let (start, end) = (format!("{id}/"), format!("{id}0"));
            versions.retain_in(start.as_str()..end.as_str(), |_, _| false).op("remove versions")?;
            Deleted::Done { unlinked: DependentCounts { ingestion_rules: 0, ..counts } }
        };
        txn.commit().op("commit delete agent")?;
        Ok(done)
    }
}

fn put_version<V: VersionRow>(txn: &WriteTransaction, v: &V) -> Result<(), StoreError> {
    let mut versions = txn.open_table(VERSIONS).op("open versions")?;
    versions.insert(version_key(v.agent_id(), v.version()).as_str(), to_json(v).as_slice()).op("write version")?;
    Ok(())
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
