//! [`Scope`]: who is calling an `/api/v1` route and in which project it acts.
//!
//! `api::soat::scope` resolves it from the request's principal: an account key
//! (`al_…`, `/v1`'s keys) acts for its account, in the account's default project
//! unless the request names another of its projects (`project_id` in the query or the
//! body); a project key (`sk_…`, id `key_…`) acts only in its own project, and naming
//! another is 403 `API_KEY_PROJECT_SCOPE`. A record of another account, or of a
//! project the scope cannot see, reads as absent (404): [`Scope::get`] and
//! [`Scope::list`] hold that rule in one place for every kind.

use crate::agents::SoatError;
use crate::store::agents::AgentRow;
use crate::store::owned::Owned;
use crate::store::{Records, StoreError};

/// Who calls and where: every `/api/v1` service takes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub account_id: String,
    /// The project the request acts in: where a create writes, what a list shows.
    pub project_id: String,
    pub key: KeyRef,
}

/// The credential behind a [`Scope`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRef {
    /// An account key (`al_…`): spans every project of its account.
    Account { prefix: String },
    /// An `/api/v1` key (`key_…`) made without a project: spans them all, like an
    /// account key, but only on `/api/v1`.
    Unscoped { id: String },
    /// A project key (`key_…`): confined to the scope's project.
    Project { id: String },
}

/// A record kind that belongs to one project of one account.
pub trait InProject: Owned {
    fn project_id(&self) -> &str;
}

impl Scope {
    /// Whether a record of `project_id` (of this account) is visible: any of the
    /// account's projects for an account key, only its own for a project key.
    pub fn sees(&self, project_id: &str) -> bool {
        match self.key {
            KeyRef::Account { .. } | KeyRef::Unscoped { .. } => true,
            KeyRef::Project { .. } => project_id == self.project_id,
        }
    }

    /// The same caller acting in `project_id`, a record's own project (an account
    /// key reaching a record of another of its projects by id): references the record
    /// makes are checked there. A project key's scope is returned as it is (it sees no
    /// other project's record to begin with).
    pub fn within(&self, project_id: &str) -> Scope {
        match self.key {
            KeyRef::Project { .. } => self.clone(),
            _ => Scope { project_id: project_id.to_owned(), ..self.clone() },
        }
    }

    /// What this caller may read of the account's `/v1` data ([`crate::access`]):
    /// everything with an account key, nothing with an `/api/v1` key.
    pub fn reach(&self) -> crate::access::Reach {
        match self.key {
            KeyRef::Account { .. } => crate::access::Reach::Account,
            KeyRef::Unscoped { .. } | KeyRef::Project { .. } => crate::access::Reach::Agents,
        }
    }

    /// 403 `API_KEY_PROJECT_SCOPE` unless this caller reads `/v1` data; `what` names
    /// the path that asked (a field, a message).
    pub fn may_read_collections(&self, what: &str) -> Result<(), SoatError> {
        if self.reach().reads_collections() {
            return Ok(());
        }
        Err(SoatError::ProjectScope(format!("{what}: {}", crate::access::Reach::REFUSED)))
    }

    /// The scope a run acts in: its generation's project, with the reach of the key
    /// that started it (recorded as `started_by_principal_id`: an `/api/v1` key's
    /// `key_…` id, an account key's prefix), so a run, its tools, its knowledge and the
    /// agents it calls read no more than that key could.
    pub fn of_run(account_id: &str, project_id: &str, started_by: Option<&str>) -> Scope {
        let key = match started_by {
            Some(id) if id.starts_with(crate::agents::api_keys::KEY_ID_PREFIX) => KeyRef::Project { id: id.to_owned() },
            other => KeyRef::Account { prefix: other.unwrap_or_default().to_owned() },
        };
        Scope { account_id: account_id.to_owned(), project_id: project_id.to_owned(), key }
    }

    pub fn is_project_key(&self) -> bool {
        matches!(self.key, KeyRef::Project { .. })
    }

    /// SOAT's `created_by_principal_type`: `user` for a user's login token (whose
    /// principal id is the `user_…` id), else `api_key`.
    pub fn principal_type(&self) -> &'static str {
        match &self.key {
            KeyRef::Account { prefix } if prefix.starts_with(crate::agents::users::USER_ID_PREFIX) => "user",
            _ => "api_key",
        }
    }

    /// SOAT's `created_by_principal_id`: the `key_…` id, or the `al_…` key's prefix.
    pub fn principal_id(&self) -> &str {
        match &self.key {
            KeyRef::Account { prefix } => prefix,
            KeyRef::Unscoped { id } | KeyRef::Project { id } => id,
        }
    }

    /// The record `id` of kind `R` when it exists, is this account's, and is in a
    /// project this scope sees; `None` (a 404) otherwise.
    pub fn get<R: InProject>(&self, records: &Records, id: &str) -> Result<Option<R>, StoreError> {
        Ok(records.get::<R>(&self.account_id, id)?.filter(|r| self.sees(r.project_id())))
    }

    /// As [`Scope::get`], with absent as SOAT's 404: "No {kind} {id}.".
    pub fn find<R: InProject>(&self, records: &Records, kind: &'static str, id: &str) -> Result<R, SoatError> {
        self.get(records, id)?.ok_or_else(|| SoatError::not_found(kind, id))
    }

    /// The agent `id` under the same rule (agents are kept in a table of their own).
    pub fn agent<A: AgentRow>(&self, records: &Records, id: &str) -> Result<A, SoatError> {
        let agent = records.agent::<A>(&self.account_id, id)?;
        agent.filter(|a| self.sees(a.project_id())).ok_or_else(|| SoatError::not_found("agent", id))
    }

    /// The records of kind `R` in the scope's project, in the store's order.
    pub fn list<R: InProject>(&self, records: &Records) -> Result<Vec<R>, StoreError> {
        Ok(records.list::<R>(&self.account_id)?.into_iter().filter(|r| r.project_id() == self.project_id).collect())
    }
}

/// `impl InProject` for record structs with a `project_id` field.
macro_rules! in_project {
    ($($t:ty),+ $(,)?) => {
        $(impl $crate::agents::InProject for $t {
            fn project_id(&self) -> &str {
                &self.project_id
            }
        })+
    };
}
pub(crate) use in_project;

in_project!(crate::store::AiProviderRecord);
// SOAT files (issue 36).
in_project!(crate::store::FileRecord);

/// Scopes for the services' unit tests: a project key's, and the two that must not see
/// what it writes (another project of its account, the same project id in another account).
#[cfg(test)]
pub(crate) mod testing {
    use super::{KeyRef, Scope};

    /// A project key's scope: it sees its project only.
    pub fn scope(account: &str, project: &str) -> Scope {
        Scope { account_id: account.into(), project_id: project.into(), key: KeyRef::Project { id: format!("key_{project}") } }
    }

    pub fn a() -> Scope {
        scope("acct_a", "proj_a")
    }

    pub fn others() -> [Scope; 2] {
        [scope("acct_a", "proj_a2"), scope("acct_b", "proj_a")]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(key: KeyRef) -> Scope {
        Scope { account_id: "acct_a".into(), project_id: "proj_a".into(), key }
    }

    #[test]
    fn a_project_key_sees_only_its_project() {
        let account = scope(KeyRef::Account { prefix: "al_1234567".into() });
        assert!(account.sees("proj_a") && account.sees("proj_b"));
        assert_eq!((account.principal_type(), account.principal_id()), ("api_key", "al_1234567"));
        let project = scope(KeyRef::Project { id: "key_1".into() });
        assert!(project.sees("proj_a") && !project.sees("proj_b"));
        assert!(project.is_project_key() && !account.is_project_key());
        assert_eq!(project.principal_id(), "key_1");
        assert_eq!(account.within("proj_b").project_id, "proj_b");
        assert_eq!(project.within("proj_b").project_id, "proj_a", "a project key stays in its project");
    }
}
