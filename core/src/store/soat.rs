//! SOAT identity records (`/api/v1`): projects, project-scoped keys and AI providers,
//! each a kind on the generic account-owned table ([`Owned`]), plus two small indexes
//! of their own: an account's default project, and a project key's secret prefix →
//! its id (what authentication looks a presented `sk_` key up by).
//!
//! Writes that touch more than one table (the first use of an account's default
//! project, a key and its prefix, a project and everything in it) are one write
//! transaction each.

use serde::{Deserialize, Serialize};

use super::kv::{Names, Read, Table, WriteTx};
use super::owned::{get_in, insert_in, list_in, owned_record, records, remove_in};
use super::{get_json, Charge, Records, StoreError};

/// Account id → the id of its default project.
const DEFAULT_PROJECTS: Names = Names("soat_default_projects");
/// A project key's prefix (`sk_` and 7 more characters) → its `key_…` id.
const KEY_PREFIXES: Names = Names("soat_project_key_prefixes");

/// A project (`proj_…`): every `/api/v1` record belongs to one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectRecord {
    pub id: String,
    pub account_id: String,
    pub name: String,
    #[serde(default)]
    pub guardrail_ids: Option<Vec<String>>,
    #[serde(default)]
    pub max_concurrent_runs: Option<u64>,
    #[serde(default)]
    pub default_model_route_id: Option<String>,
    #[serde(default)]
    pub audit_reads_enabled: bool,
    #[serde(default)]
    pub trace_content_retention_days: Option<u64>,
    /// `full` or `none` (agents may tighten it, never loosen it).
    #[serde(default = "full")]
    pub trace_content_mode: String,
    /// The account's default project (made on its first `/api/v1` request).
    #[serde(default)]
    pub is_default: bool,
    pub created_at: String,
    pub updated_at: String,
}

fn full() -> String {
    "full".into()
}

/// An `/api/v1` key (`key_…`): with a `project_id` it acts only in that project,
/// without one in any of the account's. Its secret (`sk_…`) is shown once; the store
/// keeps its prefix and SHA-256, as for `al_` keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectKeyRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: Option<String>,
    pub name: String,
    /// The secret's first 10 characters, which identify it.
    pub prefix: String,
    /// SHA-256 of the whole secret, hex.
    pub hash: String,
    #[serde(default)]
    pub policy_ids: Vec<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// An AI provider (`aip_…`): a kind of upstream, where it is, which model by default
/// and which secret (`sec_…`, the secrets module's) holds its credential.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AiProviderRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    pub name: String,
    /// openai, anthropic, google, xai, groq, ollama, azure, gateway, custom, local.
    pub provider: String,
    pub default_model: String,
    pub secret_id: Option<String>,
    /// `None`: the kind's own address.
    pub base_url: Option<String>,
    #[serde(default)]
    pub config: serde_json::Map<String, serde_json::Value>,
    pub created_at: String,
    pub updated_at: String,
}

owned_record!(ProjectRecord, "soat_projects", "soat_projects_by_account");
owned_record!(ProjectKeyRecord, "soat_project_keys", "soat_project_keys_by_account");
owned_record!(AiProviderRecord, "soat_ai_providers", "soat_ai_providers_by_account");

impl Records {
    /// Creates the SOAT identity tables (at start-up, with the others).
    pub(super) fn ensure_soat(&self) -> Result<(), StoreError> {
        self.ensure::<ProjectRecord>()?;
        self.ensure::<ProjectKeyRecord>()?;
        self.ensure::<AiProviderRecord>()?;
        let txn = self.kv.write()?;
        txn.create(Table::Names(DEFAULT_PROJECTS))?;
        txn.create(Table::Names(KEY_PREFIXES))?;
        txn.commit()
    }

    /// The id of the account's default project, if it has one yet.
    pub fn default_project_id(&self, account_id: &str) -> Result<Option<String>, StoreError> {
        self.kv.read()?.name(DEFAULT_PROJECTS, account_id)
    }

    /// The account's default project, made from `make` when it has none (one write
    /// transaction, so two shards' first requests make one project between them).
    pub fn default_project(&self, account_id: &str, make: impl FnOnce() -> ProjectRecord) -> Result<ProjectRecord, StoreError> {
        if let Some(p) = self.default_project_id(account_id)?.map(|id| self.get::<ProjectRecord>(account_id, &id)).transpose()?.flatten() {
            return Ok(p);
        }
        let txn = self.kv.write()?;
        let found = match txn.name(DEFAULT_PROJECTS, account_id)? {
            Some(id) => get_in::<ProjectRecord>(&txn, account_id, &id)?,
            None => None,
        };
        if let Some(p) = found {
            return Ok(p);
        }
        let p = make();
        assert_eq!(p.account_id, account_id, "a default project of another account");
        txn.put_name(DEFAULT_PROJECTS, account_id, &p.id)?;
        insert_in(&txn, &p)?;
        // Made on first use, not asked for: counted, never refused.
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(p)
    }

    /// Adds a project key and its prefix, drawing another key from `next` while the
    /// prefix is taken. Returns the record written.
    pub fn insert_project_key(&self, next: &mut dyn FnMut() -> ProjectKeyRecord) -> Result<ProjectKeyRecord, StoreError> {
        let txn = self.kv.write()?;
        let key = loop {
            let k = next();
            if txn.name(KEY_PREFIXES, &k.prefix)?.is_none() {
                break k;
            }
        };
        txn.put_name(KEY_PREFIXES, &key.prefix, &key.id)?;
        insert_in(&txn, &key)?;
        self.commit_charged(txn, Charge::Capped(&key.account_id))?;
        Ok(key)
    }

    /// The project key a presented secret's prefix names (authentication's lookup).
    pub fn project_key_by_prefix(&self, prefix: &str) -> Result<Option<ProjectKeyRecord>, StoreError> {
        let txn = self.kv.read()?;
        let Some(id) = txn.name(KEY_PREFIXES, prefix)? else { return Ok(None) };
        get_json(&txn, records::<ProjectKeyRecord>(), &id, <ProjectKeyRecord as super::owned::Owned>::TABLE)
    }

    /// Removes a project key and its prefix; whether the account had it.
    pub fn remove_project_key(&self, account_id: &str, id: &str) -> Result<bool, StoreError> {
        let txn = self.kv.write()?;
        let Some(key) = get_in::<ProjectKeyRecord>(&txn, account_id, id)? else { return Ok(false) };
        remove_key_in(&txn, &key)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(true)
    }

    /// Removes a project with its keys and providers, in one transaction (the other
    /// kinds a project holds are removed by their own modules first). `false` when the
    /// account has no such project.
    pub fn remove_project(&self, account_id: &str, id: &str) -> Result<bool, StoreError> {
        let txn = self.kv.write()?;
        let Some(project) = get_in::<ProjectRecord>(&txn, account_id, id)? else { return Ok(false) };
        for key in list_in::<ProjectKeyRecord>(&txn, account_id)?.into_iter().filter(|k| k.project_id.as_deref() == Some(id)) {
            remove_key_in(&txn, &key)?;
        }
        for p in list_in::<AiProviderRecord>(&txn, account_id)?.into_iter().filter(|p| p.project_id == id) {
            remove_in::<AiProviderRecord>(&txn, account_id, &p.id)?;
        }
        if txn.name(DEFAULT_PROJECTS, account_id)?.is_some_and(|d| d == id) {
            txn.delete_name(DEFAULT_PROJECTS, account_id)?;
        }
        remove_in::<ProjectRecord>(&txn, account_id, &project.id)?;
        self.commit_charged(txn, Charge::Counted(account_id))?;
        Ok(true)
    }
}

fn remove_key_in(txn: &WriteTx, key: &ProjectKeyRecord) -> Result<(), StoreError> {
    txn.delete_name(KEY_PREFIXES, &key.prefix)?;
    remove_in::<ProjectKeyRecord>(txn, &key.account_id, &key.id)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(id: &str, account: &str) -> ProjectRecord {
        ProjectRecord {
            id: id.into(),
            account_id: account.into(),
            name: "Default".into(),
            guardrail_ids: None,
            max_concurrent_runs: None,
            default_model_route_id: None,
            audit_reads_enabled: false,
            trace_content_retention_days: None,
            trace_content_mode: full(),
            is_default: true,
            created_at: "t".into(),
            updated_at: "t".into(),
        }
    }

    fn key(id: &str, prefix: &str, project: &str) -> ProjectKeyRecord {
        ProjectKeyRecord {
            id: id.into(),
            account_id: "acct_a".into(),
            project_id: Some(project.into()),
            name: "ci".into(),
            prefix: prefix.into(),
            hash: "h".into(),
            policy_ids: vec![],
            created_at: "t".into(),
            updated_at: "t".into(),
        }
    }

    #[test]
    fn the_default_project_is_made_once() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::open(dir.path()).unwrap();
        let first = r.default_project("acct_a", || project("proj_1", "acct_a")).unwrap();
        let again = r.default_project("acct_a", || project("proj_2", "acct_a")).unwrap();
        assert_eq!((first.id.as_str(), again.id.as_str()), ("proj_1", "proj_1"));
        assert_eq!(r.default_project("acct_b", || project("proj_3", "acct_b")).unwrap().id, "proj_3");
        assert!(r.remove_project("acct_a", "proj_1").unwrap());
        assert_eq!(r.default_project("acct_a", || project("proj_4", "acct_a")).unwrap().id, "proj_4", "deleted: made afresh");
    }

    #[test]
    fn racing_first_requests_make_one_default_project() {
        let dir = tempfile::tempdir().unwrap();
        let r = std::sync::Arc::new(Records::open(dir.path()).unwrap());
        let ids: std::collections::BTreeSet<String> = (0..8)
            .map(|i| {
                let r = r.clone();
                std::thread::spawn(move || r.default_project("acct_a", || project(&format!("proj_{i}"), "acct_a")).unwrap().id)
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect();
        assert_eq!(ids.len(), 1, "{ids:?}");
        assert_eq!(r.list::<ProjectRecord>("acct_a").unwrap().len(), 1);
    }

    #[test]
    fn project_keys_are_found_by_prefix_until_removed_with_their_project() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::open(dir.path()).unwrap();
        r.insert(&project("proj_1", "acct_a")).unwrap();
        let mut drawn = vec![key("key_2", "sk_bbbbbbb", "proj_1"), key("key_1", "sk_aaaaaaa", "proj_1")];
        r.insert_project_key(&mut || drawn.pop().unwrap()).unwrap();
        let mut taken = vec![key("key_2", "sk_bbbbbbb", "proj_1"), key("key_x", "sk_aaaaaaa", "proj_1")];
        let second = r.insert_project_key(&mut || taken.pop().unwrap()).unwrap();
        assert_eq!(second.id, "key_2", "a taken prefix is drawn again");
        assert_eq!(r.project_key_by_prefix("sk_aaaaaaa").unwrap().unwrap().id, "key_1");
        assert!(!r.remove_project_key("acct_b", "key_1").unwrap(), "another account cannot remove it");
        assert!(r.remove_project_key("acct_a", "key_1").unwrap());
        assert_eq!(r.project_key_by_prefix("sk_aaaaaaa").unwrap(), None);
        assert!(r.remove_project("acct_a", "proj_1").unwrap());
        assert_eq!(r.project_key_by_prefix("sk_bbbbbbb").unwrap(), None, "the project's keys go with it");
        assert!(r.list::<ProjectKeyRecord>("acct_a").unwrap().is_empty());
    }
}
