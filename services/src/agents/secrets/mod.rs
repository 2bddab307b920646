//! SOAT secrets (`sec_…`): a name and a write-only value, sealed at rest
//! ([`seal`], the key from [`key`]). The value never leaves this module except through
//! [`Secrets::reveal`] and [`Secrets::resolve`], which the modules that place a
//! credential on the wire call at that moment (a tool call, a provider's `secret_id`);
//! it is held in [`Secret`], whose `Debug` prints `***` and which has no `Display` or
//! `Serialize`, so no log line or response can carry it by accident.

pub mod key;
pub mod seal;

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::{Project, Scope};
use crate::config::SecretsConfig;
use crate::error::{Code, ErrorCode};
use crate::llm::secret::Secret;
use crate::store::owned::Change;
use crate::store::{Records, SecretRecord, StoreError};
use seal::{Owner, Sealer};

pub const ID_PREFIX: &str = "sec_";
/// The longest name and value accepted.
pub const MAX_NAME: usize = 256;
pub const MAX_VALUE: usize = 64 * 1024;

/// A secret as a client reads it: never the value, only whether there is one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SecretView {
    pub id: String,
    pub project_id: String,
    pub name: String,
    pub has_value: bool,
    pub created_at: String,
    pub updated_at: String,
}

impl From<&SecretRecord> for SecretView {
    fn from(r: &SecretRecord) -> SecretView {
        SecretView {
            id: r.id.clone(),
            project_id: r.project_id.clone(),
            name: r.name.clone(),
            has_value: r.sealed.is_some(),
            created_at: r.created_at.clone(),
            updated_at: r.updated_at.clone(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The path names no secret of this project (another project's, another account's).
    #[error("secret {0} not found")]
    NotFound(String),
    /// A `{{secret:…}}` reference names no secret of this project.
    #[error("{{{{secret:{0}}}}} names no secret in this project")]
    Unknown(String),
    /// The secret exists but holds no value to use.
    #[error("secret {0} has no value")]
    NoValue(String),
    #[error("secret {0} cannot be decrypted with this server's secrets key (was [secrets] key or DATA/secrets.key changed?)")]
    Undecryptable(String),
    #[error("{0}")]
    Invalid(String),
    #[error("The secret {id} is the secret_id of {} AI provider(s); repoint or delete them first.", providers.len())]
    HasDependents { id: String, providers: Vec<String> },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ErrorCode for SecretError {
    fn code(&self) -> Code {
        match self {
            SecretError::NotFound(_) => Code::SoatNotFound,
            SecretError::Unknown(_) | SecretError::NoValue(_) => Code::SecretNotFound,
            SecretError::Undecryptable(_) => Code::SecretNotDecryptable,
            SecretError::Invalid(_) => Code::SoatValidation,
            SecretError::HasDependents { .. } => Code::SecretHasDependents,
            SecretError::Store(e) => e.code(),
        }
    }

    fn meta(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        match self {
            SecretError::HasDependents { providers, .. } => Some(serde_json::Map::from_iter([
                ("ai_provider_count".to_owned(), serde_json::Value::from(providers.len())),
                ("ai_provider_ids".to_owned(), serde_json::Value::from(providers.iter().take(10).cloned().collect::<Vec<_>>())),
            ])),
            _ => None,
        }
    }
}

pub struct Secrets {
    records: Arc<Records>,
    sealer: Sealer,
}

impl Secrets {
    /// The service, its key from the configuration or the data directory.
    pub fn open(config: &SecretsConfig, data: &Path, records: Arc<Records>) -> Result<Secrets, key::KeyError> {
        let key = key::load(config.key.as_ref(), data)?;
        Ok(Secrets { records, sealer: Sealer::new(&key) })
    }

    /// Stores a new secret in the scope's project (blocking: a write).
    pub fn create(&self, scope: &Scope, name: &str, value: Option<&Secret>) -> Result<SecretView, SecretError> {
        let p = scope.project();
        check_name(name)?;
        let now = crate::clock::now_rfc3339();
        let id = format!("{ID_PREFIX}{}", crate::ids::random_base62(16));
        let sealed = value.map(|v| check_value(v).map(|()| self.sealer.seal(&owner(p, &id), v))).transpose()?;
        let r = SecretRecord {
            id,
            account_id: p.account_id.to_owned(),
            project_id: p.project_id.to_owned(),
            name: name.to_owned(),
            sealed,
            created_at: now.clone(),
            updated_at: now,
        };
        self.records.insert(&r)?;
        Ok(SecretView::from(&r))
    }

    /// The scope's project's secrets, oldest first.
    pub fn list(&self, scope: &Scope) -> Result<Vec<SecretView>, SecretError> {
        let mut all: Vec<SecretRecord> = scope.list(&self.records)?;
        all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        Ok(all.iter().map(SecretView::from).collect())
    }

    /// A secret the scope sees.
    pub fn get(&self, scope: &Scope, id: &str) -> Result<SecretView, SecretError> {
        self.seen(scope, id).map(|r| SecretView::from(&r))
    }

    fn seen(&self, scope: &Scope, id: &str) -> Result<SecretRecord, SecretError> {
        scope.get::<SecretRecord>(&self.records, id)?.ok_or_else(|| SecretError::NotFound(id.to_owned()))
    }

    /// Renames it and/or replaces its value (blocking: a write).
    pub fn update(&self, scope: &Scope, id: &str, name: Option<&str>, value: Option<&Secret>) -> Result<SecretView, SecretError> {
        if let Some(n) = name {
            check_name(n)?;
        }
        if let Some(v) = value {
            check_value(v)?;
        }
        let current = self.seen(scope, id)?;
        let p = Project { account_id: &scope.account_id, project_id: &current.project_id };
        let sealed = value.map(|v| self.sealer.seal(&owner(p, id), v));
        let changed = self.records.update(p.account_id, id, |r: &mut SecretRecord| {
            if r.project_id != p.project_id {
                return Change::Keep(None);
            }
            if let Some(n) = name {
                r.name = n.to_owned();
            }
            if let Some(s) = &sealed {
                r.sealed = Some(s.clone());
            }
            r.updated_at = crate::clock::now_rfc3339();
            Change::Write(Some(SecretView::from(&*r)))
        })?;
        changed.flatten().ok_or_else(|| SecretError::NotFound(id.to_owned()))
    }

    /// Removes it (blocking: a write); the view it had. Refused while an AI provider
    /// names it as its `secret_id`.
    pub fn delete(&self, scope: &Scope, id: &str) -> Result<SecretView, SecretError> {
        let view = self.get(scope, id)?;
        let providers = super::refs::providers_using_secret(&self.records, &scope.account_id, id)?;
        if !providers.is_empty() {
            return Err(SecretError::HasDependents { id: id.to_owned(), providers });
        }
        if !self.records.remove::<SecretRecord>(&scope.account_id, id)? {
            return Err(SecretError::NotFound(id.to_owned()));
        }
        Ok(view)
    }

    /// Whether the project has this secret (a `{{secret:…}}` reference checked on write).
    pub fn exists(&self, p: Project<'_>, id: &str) -> Result<bool, SecretError> {
        Ok(self.record(p, id)?.is_some())
    }

    /// The value, opened: for the one place that puts it on the wire, at that moment
    /// (an AI provider's `secret_id`). A secret of another project is `Unknown`.
    pub fn reveal(&self, p: Project<'_>, id: &str) -> Result<Secret, SecretError> {
        let r = self.record(p, id)?.ok_or_else(|| SecretError::Unknown(id.to_owned()))?;
        let sealed = r.sealed.as_deref().ok_or_else(|| SecretError::NoValue(id.to_owned()))?;
        self.sealer.open(&owner(p, id), sealed).map_err(|_| {
            tracing::error!(secret = id, "a stored secret does not open with this server's secrets key");
            SecretError::Undecryptable(id.to_owned())
        })
    }

    /// `text` with every `{{secret:sec_…}}` replaced by that secret's value, at call
    /// time. Other text, `{{context:…}}` tokens included, is left as it is.
    pub fn resolve(&self, p: Project<'_>, text: &str) -> Result<Secret, SecretError> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(SECRET_OPEN) {
            out.push_str(&rest[..at]);
            let after = &rest[at + SECRET_OPEN.len()..];
            let Some(end) = after.find("}}") else {
                out.push_str(&rest[at..]);
                rest = "";
                break;
            };
            out.push_str(self.reveal(p, after[..end].trim())?.expose());
            rest = &after[end + 2..];
        }
        out.push_str(rest);
        Ok(Secret::new(out))
    }

    /// Seals a value another module keeps on its own record `id` of project `p` (a
    /// webhook's signing secret), bound to that record as this module's are.
    pub fn seal_for(&self, p: Project<'_>, id: &str, value: &Secret) -> String {
        self.sealer.seal(&owner(p, id), value)
    }

    /// Opens what [`Secrets::seal_for`] sealed for record `id` of project `p`.
    pub fn open_for(&self, p: Project<'_>, id: &str, sealed: &str) -> Result<Secret, SecretError> {
        self.sealer.open(&owner(p, id), sealed).map_err(|_| SecretError::Undecryptable(id.to_owned()))
    }

    fn record(&self, p: Project<'_>, id: &str) -> Result<Option<SecretRecord>, SecretError> {
        let r: Option<SecretRecord> = self.records.get(p.account_id, id)?;
        Ok(r.filter(|r| r.project_id == p.project_id))
    }
}

pub const SECRET_OPEN: &str = "{{secret:";

crate::agents::scope::in_project!(SecretRecord);

fn owner<'a>(p: Project<'a>, id: &'a str) -> Owner<'a> {
    Owner { account_id: p.account_id, project_id: p.project_id, secret_id: id }
}

fn check_name(name: &str) -> Result<(), SecretError> {
    crate::names::check(name, MAX_NAME).map_err(|problem| SecretError::Invalid(format!("name {problem}")))
}

fn check_value(value: &Secret) -> Result<(), SecretError> {
    if value.expose().len() > MAX_VALUE {
        return Err(SecretError::Invalid(format!("value must be at most {MAX_VALUE} bytes")));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
