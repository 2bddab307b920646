//! Authentication: `Authorization: Bearer al_…` (an account key) or `sk_…` (a
//! project-scoped key, SOAT's, for `/api/v1` only) → the key's [`Principal`].
//!
//! Each shard keeps its own cache of keys it has seen (no lock on the request path).
//! Revocation is immediate on every shard: a revoke commits to the store, then bumps
//! the process-wide key epoch before its response is sent; a shard whose cache was
//! filled under an older epoch drops it before it authenticates anything.

pub mod keys;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::limits::{Bucket, Buckets};
use crate::plans::{Plan, Plans};
use crate::store::{Records, StoreError};

/// A caller whose key checked out.
pub struct Principal {
    pub account_id: String,
    pub prefix: String,
    pub plan: String,
    hash: [u8; 32],
    pub bucket: Arc<Bucket>,
    /// Set for an `/api/v1` key (`sk_…`), which no other surface accepts.
    pub project_key: Option<ProjectKey>,
    /// The account's default project id, once `api::soat` has looked it up for this
    /// cached principal (dropped with the cache when the key epoch moves, which every
    /// project deletion bumps).
    pub default_project: std::cell::OnceCell<String>,
    /// Set for a user's login token (`ut_…`, `/api/v1` only): who logged in. Such a
    /// principal acts for the user's account like its account key, and its `prefix` is
    /// the user's id (what records name as their creator).
    pub user: Option<UserRef>,
    /// When the credential stops working (unix seconds): a login token's expiry.
    pub expires_at: Option<u64>,
}

/// The user behind a login token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRef {
    /// `user_…`.
    pub id: String,
    pub username: String,
    /// `admin` or `user`.
    pub role: String,
}

impl Principal {
    /// What this key may read of the account's `/v1` data ([`crate::access`]).
    pub fn reach(&self) -> crate::access::Reach {
        if self.user.is_some() {
            // A login token is SOAT's: `/api/v1` alone.
            return crate::access::Reach::Agents;
        }
        match self.project_key {
            None => crate::access::Reach::Account,
            Some(_) => crate::access::Reach::Agents,
        }
    }
}

/// An `/api/v1` key: its id and the project it is bound to (`None`: unscoped, any
/// project of the account).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectKey {
    /// `key_…`.
    pub id: String,
    pub project_id: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("no API key: send Authorization: Bearer al_... (or sk_... on /api/v1)")]
    Missing,
    #[error("that API key is not valid")]
    Invalid,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The most keys a shard caches before it starts afresh.
const CACHE_LIMIT: usize = 65_536;

/// What every shard's key check reads, shared by all of them: the keys in the store,
/// each key's bucket, the plans' rates, and the key epoch.
pub struct Keyring {
    records: Arc<Records>,
    buckets: Buckets,
    plans: Plans,
    default_plan: String,
    /// Bumped after every key revocation or plan change commits; a shard whose key
    /// cache is older drops it.
    epoch: AtomicU64,
}

impl Keyring {
    pub fn new(records: Arc<Records>, plans: Plans, default_plan: String) -> Keyring {
        Keyring { records, buckets: Buckets::default(), plans, default_plan, epoch: AtomicU64::new(0) }
    }

    /// Called after a revocation, a key's deletion or move, or a plan change commits:
    /// every shard drops the keys it cached before it authenticates anything more.
    pub fn bump_epoch(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Sets how many live nodes share each key's rate (`limits::bucket`); when that
    /// changes, every shard drops its cached keys and takes the new shares.
    pub fn set_cluster_nodes(&self, nodes: u64) {
        if self.buckets.set_nodes(nodes) {
            self.bump_epoch();
        }
    }

    /// The account's plan (the default one for a plan since removed).
    pub fn plan(&self, id: &str) -> &Plan {
        self.plans.get_or(id, &self.default_plan)
    }
}

pub struct ShardAuth {
    keyring: Arc<Keyring>,
    cache: RefCell<HashMap<String, Rc<Principal>>>,
    epoch: Cell<u64>,
}

impl ShardAuth {
    pub fn new(keyring: Arc<Keyring>) -> ShardAuth {
        let epoch = keyring.epoch();
        ShardAuth { keyring, cache: RefCell::new(HashMap::new()), epoch: Cell::new(epoch) }
    }

    /// Checks the `Authorization` header's value.
    pub fn authenticate(&self, authorization: Option<&[u8]>) -> Result<Rc<Principal>, AuthError> {
        let secret = bearer(authorization).ok_or(AuthError::Missing)?;
        let prefix = keys::prefix_of(secret)
            .or_else(|| keys::project_prefix_of(secret))
            .or_else(|| keys::user_token_prefix_of(secret))
            .ok_or(AuthError::Invalid)?;
        let presented = keys::digest(secret);
        let epoch = self.keyring.epoch();
        if epoch != self.epoch.get() {
            self.cache.borrow_mut().clear();
            self.epoch.set(epoch);
        }
        if let Some(p) = self.cache.borrow().get(prefix) {
            let live = p.expires_at.is_none_or(|at| unix_now() < at);
            return if live && keys::verify(&p.hash, &presented) { Ok(p.clone()) } else { Err(AuthError::Invalid) };
        }
        let principal = Rc::new(self.load(prefix, &presented)?);
        // Cache only what was read under the epoch still current: a revoke that
        // committed meanwhile has bumped it.
        if self.keyring.epoch() == epoch {
            let mut cache = self.cache.borrow_mut();
            if cache.len() >= CACHE_LIMIT {
                cache.clear();
            }
            cache.insert(prefix.to_owned(), principal.clone());
        }
        Ok(principal)
    }

    fn load(&self, prefix: &str, presented: &[u8; 32]) -> Result<Principal, AuthError> {
        if prefix.starts_with(keys::PROJECT_KEY_PREFIX) {
            return self.load_project_key(prefix, presented);
        }
        if prefix.starts_with(keys::USER_TOKEN_PREFIX) {
            return self.load_user_token(prefix, presented);
        }
        let key = self.keyring.records.key(prefix)?.ok_or(AuthError::Invalid)?;
        if key.revoked_at.is_some() {
            return Err(AuthError::Invalid);
        }
        let stored = verified(&key.hash, presented)?;
        self.principal(&key.account_id, key.prefix, stored, None)
    }

    /// A project key: found by its prefix, gone once deleted (with its project too).
    fn load_project_key(&self, prefix: &str, presented: &[u8; 32]) -> Result<Principal, AuthError> {
        let key = self.keyring.records.project_key_by_prefix(prefix)?.ok_or(AuthError::Invalid)?;
        let stored = verified(&key.hash, presented)?;
        let project_key = ProjectKey { id: key.id, project_id: key.project_id };
        self.principal(&key.account_id, key.prefix, stored, Some(project_key))
    }

    /// A user's login token: found by its prefix, gone with its user, refused once expired.
    fn load_user_token(&self, prefix: &str, presented: &[u8; 32]) -> Result<Principal, AuthError> {
        let (token, user) = self.keyring.records.user_token(prefix)?.ok_or(AuthError::Invalid)?;
        if token.expires_at <= unix_now() {
            return Err(AuthError::Invalid);
        }
        let stored = verified(&token.hash, presented)?;
        let mut p = self.principal(&token.account_id, user.id.clone(), stored, None)?;
        p.user = Some(UserRef { id: user.id, username: user.username, role: user.role });
        p.expires_at = Some(token.expires_at);
        Ok(p)
    }

    /// The principal of a verified key (either kind): its account, plan and bucket.
    fn principal(&self, account_id: &str, key_prefix: String, hash: [u8; 32], project_key: Option<ProjectKey>) -> Result<Principal, AuthError> {
        let account = self.keyring.records.account(account_id)?.ok_or(AuthError::Invalid)?;
        let rate = self.keyring.plan(&account.plan).rate;
        Ok(Principal {
            // One bucket per account: every key of it, of either kind, spends from the
            // plan's one rate (a key each would multiply it by the number of keys).
            bucket: self.keyring.buckets.get(&account.id, rate),
            account_id: account.id,
            prefix: key_prefix,
            plan: account.plan,
            hash,
            project_key,
            default_project: Default::default(),
            user: None,
            expires_at: None,
        })
    }
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The stored hash (hex) of a key, if `presented` is that key.
fn verified(hash: &str, presented: &[u8; 32]) -> Result<[u8; 32], AuthError> {
    let stored = keys::unhex32(hash).ok_or(AuthError::Invalid)?;
    if keys::verify(&stored, presented) {
        Ok(stored)
    } else {
        Err(AuthError::Invalid)
    }
}

/// The key in `Bearer <key>` (scheme case-insensitive), if there is one.
pub fn bearer(authorization: Option<&[u8]>) -> Option<&str> {
    let value = std::str::from_utf8(authorization?).ok()?.trim();
    let (scheme, rest) = value.split_once(' ')?;
    let key = rest.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !key.is_empty()).then_some(key)
}

impl crate::error::ErrorCode for AuthError {
    fn code(&self) -> crate::error::Code {
        use crate::error::Code;
        match self {
            AuthError::Missing => Code::MissingKey,
            AuthError::Invalid => Code::InvalidKey,
            AuthError::Store(e) => e.code(),
        }
    }

    fn message(&self) -> String {
        match self {
            AuthError::Missing => {
                "No API key: send Authorization: Bearer al_... (or a project key, sk_..., or a user's login token on /api/v1).".into()
            }
            AuthError::Invalid => "That API key is not valid.".into(),
            AuthError::Store(e) => e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::bearer;

    #[test]
    fn bearer_takes_the_token() {
        assert_eq!(bearer(Some(b"Bearer al_x")), Some("al_x"));
        assert_eq!(bearer(Some(b"bearer   al_x ")), Some("al_x"));
        assert_eq!(bearer(Some(b"Basic abc")), None);
        assert_eq!(bearer(Some(b"Bearer ")), None);
        assert_eq!(bearer(None), None);
    }
}
