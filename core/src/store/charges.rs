//! What an account's records hold, counted as it changes. Every write of an account's
//! records (agents and each version they keep, tools, secrets, providers, projects and
//! keys, memory stores and entries, generations with their transcripts and events,
//! traces, collections' records) commits through [`Records::commit_charged`]: the
//! characters the transaction stored less those it removed ([`WriteTx::written`]) are
//! added to the account's `record_chars` in the same transaction, so the count is exact
//! across any crash, and handed to the [`Ledger`] (the usage meters), which refuses a
//! write that would take the account past its plan's stored characters.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::agents::{AGENTS, VERSIONS};
use super::generations::{EVENTS, IDEMPOTENCY};
use super::kv::{chars, Counts, Read, Rows, WriteTx};
use super::{AccountRecord, Records, StoreError};

/// Account → the characters its records hold (keys and JSON values of rows, log entries).
pub(super) const RECORD_CHARS: Counts = Counts("record_chars");

/// Who a write is charged to, and whether it may grow the account past its allowance.
#[derive(Debug, Clone, Copy)]
pub enum Charge<'a> {
    /// A write the client asked for: refused with [`StoreError::StorageExceeded`] when it
    /// would take the account past its plan's stored characters.
    Capped(&'a str),
    /// Counted, never refused: what must land once begun (a run's step, the default
    /// project made on first use) and what gives room back (a delete, a purge).
    Counted(&'a str),
}

/// What the store tells of each charge: the usage meters, which hold every account's
/// stored characters and know its plan's allowance.
pub trait Ledger: Send + Sync {
    /// Adds `delta` characters to what `account_id` (on the plan `plan`) stores. When
    /// `capped` and `delta > 0`, refused with the allowance, nothing counted, if that
    /// would pass the plan's stored characters.
    fn charge(&self, account_id: &str, plan: Option<&str>, delta: i64, capped: bool) -> Result<(), u64>;
}

impl Records {
    /// The meters the store charges from now on (set once at start-up; without one,
    /// the counts are kept but nothing is refused).
    pub fn set_ledger(&self, ledger: Arc<dyn Ledger>) {
        let _ = self.ledger.set(ledger);
    }

    /// Commits `txn`, charging what it wrote to `charge`'s account (see the module).
    pub(super) fn commit_charged(&self, txn: WriteTx, charge: Charge<'_>) -> Result<(), StoreError> {
        let delta = txn.written();
        let (account_id, capped) = match charge {
            Charge::Capped(a) => (a, true),
            Charge::Counted(a) => (a, false),
        };
        if delta == 0 {
            return txn.commit();
        }
        let held = txn.count(RECORD_CHARS, account_id)?.unwrap_or(0);
        txn.put_count(RECORD_CHARS, account_id, held.saturating_add_signed(delta))?;
        let Some(ledger) = self.ledger.get() else { return txn.commit() };
        let plan = super::get_json::<AccountRecord>(&txn, super::ACCOUNTS, account_id, "account")?.map(|a| a.plan);
        ledger.charge(account_id, plan.as_deref(), delta, capped).map_err(|allowance| StoreError::StorageExceeded { allowance })?;
        txn.commit().inspect_err(|_| {
            let _ = ledger.charge(account_id, None, -delta, false);
        })
    }

    /// Every account's records' characters.
    pub fn record_chars(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.kv.read()?.counts(RECORD_CHARS)
    }

    /// One account's records' characters.
    pub fn record_chars_of(&self, account_id: &str) -> Result<u64, StoreError> {
        Ok(self.kv.read()?.count(RECORD_CHARS, account_id)?.unwrap_or(0))
    }
}

/// Set once the records are counted: a store written before records were counted is
/// counted whole at its first open by a build that counts them.
const COUNTED: &str = "record_chars_counted";

/// Tables of the server's own, not an account's records: never charged.
// policies (issue 37): the audit log is the platform's record of the account, not its data.
const UNCHARGED: [Rows; 4] = [super::ACCOUNTS, super::KEYS, super::MONTHS, super::audit::AUDIT];

impl Records {
    /// Counts every account's records once, if this store has not been counted: each
    /// row's key and value (an agent's versions by their agent's account, an
    /// idempotency claim by the account its key names, any other record by its
    /// `account_id`) and each generation's events. One transaction, at start-up.
    pub(super) fn count_records_once(&self) -> Result<(), StoreError> {
        let txn = self.kv.write()?;
        if txn.count(super::META, COUNTED)?.is_some() {
            return Ok(());
        }
        let mut held: BTreeMap<String, u64> = BTreeMap::new();
        let (mut agents, mut generations) = (HashMap::new(), Vec::new());
        let mut versions: Vec<(String, u64)> = Vec::new();
        txn.every_row(&mut |table, key, value| {
            let n = (chars(key.as_bytes()) + chars(value)) as u64;
            if UNCHARGED.iter().any(|t| t.0 == table) {
            } else if table == VERSIONS.0 {
                versions.push((key.split('/').next().unwrap_or_default().to_owned(), n));
            } else if table == IDEMPOTENCY.0 {
                *held.entry(key.split('\u{1f}').next().unwrap_or_default().to_owned()).or_default() += n;
            } else if let Some(account) = owner_of(value) {
                if table == AGENTS.0 {
                    agents.insert(key.to_owned(), account.clone());
                } else if table == super::generations::GENERATIONS {
                    generations.push((key.to_owned(), account.clone()));
                }
                *held.entry(account).or_default() += n;
            }
        })?;
        for (agent, n) in versions {
            if let Some(account) = agents.get(&agent) {
                *held.entry(account.clone()).or_default() += n;
            }
        }
        for (id, account) in generations {
            let events: i64 = txn.log(EVENTS, &id, 0)?.iter().map(|(_, e)| chars(e.as_bytes())).sum();
            *held.entry(account).or_default() += events as u64;
        }
        for (account, n) in &held {
            txn.put_count(RECORD_CHARS, account, *n)?;
        }
        txn.put_count(super::META, COUNTED, 1)?;
        txn.commit()?;
        if !held.is_empty() {
            tracing::info!(accounts = held.len(), "records counted toward stored characters");
        }
        Ok(())
    }
}

/// A record's owner, from its JSON's `account_id`; `None` for anything else.
fn owner_of(json: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Owner {
        account_id: String,
    }
    serde_json::from_slice::<Owner>(json).ok().map(|o| o.account_id)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicI64, Ordering};

    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::store::agents::{AgentRow, VersionRow, Write};
    use crate::store::ToolRecord;

    #[derive(Serialize, Deserialize)]
    struct Agent {
        id: String,
        account_id: String,
        project_id: String,
        config: String,
    }

    impl AgentRow for Agent {
        fn id(&self) -> &str {
            &self.id
        }
        fn account_id(&self) -> &str {
            &self.account_id
        }
        fn project_id(&self) -> &str {
            &self.project_id
        }
    }

    #[derive(Serialize, Deserialize)]
    struct Version {
        agent_id: String,
        version: u64,
        config: String,
    }

    impl VersionRow for Version {
        fn agent_id(&self) -> &str {
            &self.agent_id
        }
        fn version(&self) -> u64 {
            self.version
        }
    }

    /// A ledger with one allowance for every account, holding what it was charged.
    struct Held {
        allowance: u64,
        held: AtomicI64,
    }

    impl Ledger for Held {
        fn charge(&self, _: &str, _: Option<&str>, delta: i64, capped: bool) -> Result<(), u64> {
            if capped && delta > 0 && self.held.load(Ordering::Acquire) + delta > self.allowance as i64 {
                return Err(self.allowance);
            }
            self.held.fetch_add(delta, Ordering::AcqRel);
            Ok(())
        }
    }

    fn tool(id: &str, account: &str, text: &str) -> ToolRecord {
        ToolRecord {
            id: id.into(),
            account_id: account.into(),
            project_id: "proj_1".into(),
            def: serde_json::json!({ "description": text }),
            created_at: "t".into(),
            updated_at: "t".into(),
        }
    }

    fn agent(config: &str) -> Agent {
        Agent { id: "agent_1".into(), account_id: "acct_a".into(), project_id: "proj_1".into(), config: config.into() }
    }

    /// Forgets every count, as a store written before records were counted.
    fn forget_counts(r: &Records) {
        let txn = r.kv.write().unwrap();
        for (account, _) in txn.counts(RECORD_CHARS).unwrap() {
            txn.delete_count(RECORD_CHARS, &account).unwrap();
        }
        txn.delete_count(super::super::META, COUNTED).unwrap();
        txn.commit().unwrap();
    }

    /// Regression (issue 34, finding 7): five PATCHes of an agent grew the records from
    /// 0.1 to 270 MB, each version a full copy, with the account's stored characters
    /// unchanged. Every write of an account's records now counts what it stores, every
    /// version included, and a delete gives it back.
    #[test]
    fn every_version_an_agent_keeps_is_counted_and_a_delete_gives_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::open(dir.path()).unwrap();
        let big = "x".repeat(10_000);
        r.create_agent(&agent(&big), &Version { agent_id: "agent_1".into(), version: 1, config: big.clone() }).unwrap();
        let one = r.record_chars_of("acct_a").unwrap();
        assert!(one > 20_000, "the agent and its first version: {one}");
        for v in 2..=5 {
            let next = |_: Agent| {
                Ok::<_, StoreError>(Write::Put {
                    agent: agent(&big),
                    version: Some(Version { agent_id: "agent_1".into(), version: v, config: big.clone() }),
                    out: (),
                })
            };
            r.write_agent("acct_a", "agent_1", next).unwrap();
        }
        let five = r.record_chars_of("acct_a").unwrap();
        assert!(five > one + 4 * 10_000, "each version counted: {one} then {five}");
        r.insert(&tool("tool_1", "acct_b", "another account's")).unwrap();
        assert!(r.record_chars_of("acct_b").unwrap() > 0);
        assert_eq!(r.record_chars_of("acct_a").unwrap(), five, "charged to its own account only");
        assert!(matches!(r.delete_agent::<Agent>("acct_a", "agent_1", false).unwrap(), crate::store::agents::Deleted::Done { .. }));
        assert_eq!(r.record_chars_of("acct_a").unwrap(), 0, "the agent and all its versions given back");
    }

    #[test]
    fn a_capped_write_past_the_allowance_is_refused_and_lands_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::open(dir.path()).unwrap();
        let ledger = Arc::new(Held { allowance: 1_000, held: AtomicI64::new(0) });
        r.set_ledger(ledger.clone());
        r.insert(&tool("tool_1", "acct_a", "small")).unwrap();
        let held = ledger.held.load(Ordering::Acquire);
        assert_eq!(held as u64, r.record_chars_of("acct_a").unwrap(), "the ledger is told what the store counts");
        let err = r.insert(&tool("tool_2", "acct_a", &"y".repeat(1_000))).unwrap_err();
        assert!(matches!(err, StoreError::StorageExceeded { allowance: 1_000 }), "{err}");
        assert!(r.get::<ToolRecord>("acct_a", "tool_2").unwrap().is_none(), "nothing landed");
        assert_eq!(ledger.held.load(Ordering::Acquire), held, "nothing charged");
        assert_eq!(r.record_chars_of("acct_a").unwrap() as i64, held);
        // Shrinking is never refused, and a delete gives back.
        assert!(r.remove::<ToolRecord>("acct_a", "tool_1").unwrap());
        assert_eq!((ledger.held.load(Ordering::Acquire), r.record_chars_of("acct_a").unwrap()), (0, 0));
    }

    #[test]
    fn a_store_written_before_records_were_counted_is_counted_at_its_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let counted = {
            let r = Records::open(dir.path()).unwrap();
            r.create_agent(&agent("first"), &Version { agent_id: "agent_1".into(), version: 1, config: "first".into() }).unwrap();
            r.insert(&tool("tool_1", "acct_a", "a tool")).unwrap();
            r.insert(&tool("tool_2", "acct_b", "another")).unwrap();
            let counted = r.record_chars().unwrap();
            forget_counts(&r);
            assert!(r.record_chars().unwrap().is_empty());
            counted
        };
        let r = Records::open(dir.path()).unwrap();
        assert_eq!(r.record_chars().unwrap(), counted, "the recount finds what the writes counted");
    }
}
