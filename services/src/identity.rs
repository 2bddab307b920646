//! The identity service: accounts, their keys, and what an account may see of itself.
//! Handlers and the operator CLI call it; it calls the records store (blocking, so the
//! server runs these on a blocking pool).

use std::net::IpAddr;

use crate::auth::keys::{self, IssuedKey};
use crate::auth::Keyring;
use crate::clock::now_rfc3339;
use crate::config::{AuthConfig, ExistingEmail, SignupMode};
use crate::limits::{Meters, PerAddress};
use crate::plans::{Plan, Plans};
use crate::store::{AccountRecord, KeyRecord, MonthCounts, NewKey, Records, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("{0}")]
    InvalidEmail(String),
    #[error("An account with that email already exists; send one of its keys (Authorization: Bearer) to get another.")]
    EmailTaken,
    #[error("Public signup is closed on this server; ask its operator for an account.")]
    SignupClosed,
    #[error("No key {0} on this account.")]
    KeyNotFound(String),
    #[error("A key cannot revoke itself; revoke it with another key of this account.")]
    CannotRevokeCurrent,
    #[error("No plan `{0}`; plans: {1}.")]
    UnknownPlan(String, String),
    #[error("No account for {0}.")]
    AccountNotFound(String),
    #[error(
        "This account has {active} active keys and the {plan} plan allows {max}. Revoke one you no longer use \
         (GET /v1/keys lists them, DELETE /v1/keys/{{prefix}} revokes one) and try again, or move to a larger plan."
    )]
    KeyLimitReached { active: u64, max: u64, plan: String },
    #[error("Too many signups from this address; retry in {retry_after_secs} s.")]
    SignupRateLimited { retry_after_secs: u64 },
    #[error("{0}")]
    InvalidPaging(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A new key shown to its owner once.
pub struct ShownKey {
    pub secret: String,
    pub prefix: String,
}

pub struct SignedUp {
    pub account: AccountRecord,
    pub key: ShownKey,
}

/// What `GET /v1/account` shows: its keys' first page.
pub struct AccountView {
    pub account: AccountRecord,
    pub usage: MonthCounts,
    pub stored_chars: u64,
    pub keys: KeysPage,
}

/// Which keys a listing shows: `limit` of them after the key `after` (oldest first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paging {
    pub limit: usize,
    pub after: Option<String>,
}

impl Paging {
    pub const DEFAULT_LIMIT: usize = 50;
    pub const MAX_LIMIT: usize = 200;

    pub fn first() -> Paging {
        Paging { limit: Paging::DEFAULT_LIMIT, after: None }
    }
}

/// One page of an account's keys, with the counts of them all.
#[derive(Debug, Clone, PartialEq)]
pub struct KeysPage {
    pub keys: Vec<KeyRecord>,
    pub total: usize,
    pub active: usize,
    /// The `after` of the next page; `None` on the last.
    pub next_after: Option<String>,
}

/// What the account operations of the server read and write (`App::accounts` lends it):
/// the records, the key epoch, the meters, the signup limit and the auth settings.
pub struct Accounts<'a> {
    pub records: &'a Records,
    pub keyring: &'a Keyring,
    pub meters: &'a Meters,
    pub signups: &'a PerAddress,
    pub auth: &'a AuthConfig,
    pub plans: &'a Plans,
}

/// `POST /v1/signup`. `caller_key` is the bearer key the request carried, if any;
/// `remote` the client's address, which `auth.signup_per_ip` counts.
pub fn signup(accounts: &Accounts, email: &str, caller_key: Option<&str>, remote: IpAddr) -> Result<SignedUp, IdentityError> {
    let auth = accounts.auth;
    if auth.signup == SignupMode::Closed {
        return Err(IdentityError::SignupClosed);
    }
    let email = normalize_email(email)?;
    // Counted before the email is looked up: probing which emails have accounts is
    // as limited as making them.
    if let Some(d) = accounts.signups.spend(remote).filter(|d| !d.allowed) {
        return Err(IdentityError::SignupRateLimited { retry_after_secs: d.retry_after_secs });
    }
    if let Some(existing) = accounts.records.account_by_email(&email)? {
        let holds_key = caller_key.is_some_and(|k| key_belongs_to(accounts.records, k, &existing.id));
        if auth.existing_email == ExistingEmail::Refuse && !holds_key {
            return Err(IdentityError::EmailTaken);
        }
        let key = add_key(accounts.records, accounts.keyring.plan(&existing.plan), &existing.id)?;
        return Ok(SignedUp { account: existing, key });
    }
    match create_account(accounts.records, accounts.plans, &email, &auth.default_plan) {
        // Two signups for one email raced; the loser is told as if it came second.
        Err(IdentityError::Store(StoreError::Conflict { .. })) => Err(IdentityError::EmailTaken),
        other => other,
    }
}

/// Creates an account on `plan` with its first key (signup and `quarry accounts create`).
pub fn create_account(records: &Records, plans: &Plans, email: &str, plan: &str) -> Result<SignedUp, IdentityError> {
    let email = normalize_email(email)?;
    check_plan(plans, plan)?;
    let now = now_rfc3339();
    let account = AccountRecord { id: format!("acct_{}", crate::ids::random_base62(16)), email, plan: plan.to_owned(), created_at: now.clone() };
    let mut shown = None;
    let record = records.create_account(&account, &mut next_key(&mut shown), &now)?;
    Ok(SignedUp { account, key: shown_for(shown, &record) })
}

/// `POST /v1/keys`: refused once the account holds `plan.max_keys` active keys.
pub fn add_key(records: &Records, plan: &Plan, account_id: &str) -> Result<ShownKey, IdentityError> {
    let mut shown = None;
    let record = records.add_key(account_id, plan.max_keys, &mut next_key(&mut shown), &now_rfc3339()).map_err(|e| match e {
        StoreError::TooManyKeys { active, max } => IdentityError::KeyLimitReached { active, max, plan: plan.name.clone() },
        e => e.into(),
    })?;
    Ok(shown_for(shown, &record))
}

/// `GET /v1/keys`: one page of them.
pub fn list_keys(records: &Records, account_id: &str, paging: &Paging) -> Result<KeysPage, IdentityError> {
    page(records.keys_of(account_id)?, paging)
}

/// Cuts `all` (oldest first) to the page `paging` asks for.
fn page(all: Vec<KeyRecord>, paging: &Paging) -> Result<KeysPage, IdentityError> {
    let start = match &paging.after {
        None => 0,
        Some(after) => {
            1 + all.iter().position(|k| &k.prefix == after).ok_or_else(|| {
                IdentityError::InvalidPaging(format!("after: {after} is no key of this account; pass the next_after of the previous page."))
            })?
        }
    };
    let (total, active) = (all.len(), all.iter().filter(|k| k.revoked_at.is_none()).count());
    let end = (start + paging.limit).min(total);
    let keys: Vec<KeyRecord> = all.into_iter().skip(start).take(end - start).collect();
    let next_after = if end < total { keys.last().map(|k| k.prefix.clone()) } else { None };
    Ok(KeysPage { keys, total, active, next_after })
}

/// `DELETE /v1/keys/{prefix}`. When this returns, every shard refuses the key.
pub fn revoke_key(accounts: &Accounts, account_id: &str, prefix: &str, current: &str) -> Result<KeyRecord, IdentityError> {
    if prefix == current {
        return Err(IdentityError::CannotRevokeCurrent);
    }
    let key = accounts.records.revoke_key(account_id, prefix, &now_rfc3339())?.ok_or_else(|| IdentityError::KeyNotFound(prefix.to_owned()))?;
    accounts.keyring.bump_epoch();
    Ok(key)
}

/// `GET /v1/account`.
pub fn account_view(accounts: &Accounts, account_id: &str) -> Result<AccountView, IdentityError> {
    let account = accounts.records.account(account_id)?.ok_or_else(|| IdentityError::AccountNotFound(account_id.to_owned()))?;
    let meters = accounts.meters.account(account_id)?;
    let keys = list_keys(accounts.records, account_id, &Paging::first())?;
    Ok(AccountView { account, usage: meters.counts(), stored_chars: meters.stored_chars(), keys })
}

/// `quarry accounts set-plan`.
pub fn set_plan(records: &Records, plans: &Plans, email: &str, plan: &str) -> Result<AccountRecord, IdentityError> {
    check_plan(plans, plan)?;
    let email = normalize_email(email)?;
    records.set_plan(&email, plan)?.ok_or(IdentityError::AccountNotFound(email))
}

fn check_plan(plans: &Plans, plan: &str) -> Result<(), IdentityError> {
    if plans.get(plan).is_none() {
        let ids: Vec<&str> = plans.ids().collect();
        return Err(IdentityError::UnknownPlan(plan.to_owned(), ids.join(", ")));
    }
    Ok(())
}

/// Draws keys for the store, remembering the last secret drawn (the one it keeps).
fn next_key(shown: &mut Option<IssuedKey>) -> impl FnMut() -> NewKey + '_ {
    move || {
        let k = keys::issue();
        let new = NewKey { prefix: k.prefix.clone(), hash: k.hash.clone() };
        *shown = Some(k);
        new
    }
}

fn shown_for(shown: Option<IssuedKey>, record: &KeyRecord) -> ShownKey {
    let k = shown.expect("the store drew at least one key");
    debug_assert_eq!(k.prefix, record.prefix);
    ShownKey { secret: k.secret, prefix: k.prefix }
}

fn key_belongs_to(records: &Records, secret: &str, account_id: &str) -> bool {
    let Some(prefix) = keys::prefix_of(secret) else { return false };
    let Ok(Some(key)) = records.key(prefix) else { return false };
    let stored = keys::unhex32(&key.hash);
    key.account_id == account_id && key.revoked_at.is_none() && stored.is_some_and(|s| keys::verify(&s, &keys::digest(secret)))
}

/// Trims and lower-cases an email and checks its shape: one `@`, a local part of at
/// most 64 characters, a dotted domain, no spaces or control characters, 254 at most.
pub fn normalize_email(raw: &str) -> Result<String, IdentityError> {
    let email = raw.trim().to_lowercase();
    let bad = |why: &str| Err(IdentityError::InvalidEmail(format!("email {why}.")));
    if email.is_empty() {
        return bad("is required");
    }
    if email.chars().count() > 254 {
        return bad("is longer than 254 characters");
    }
    if email.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("must not contain spaces or control characters");
    }
    let Some((local, domain)) = email.split_once('@') else { return bad("must look like name@example.org") };
    let domain_ok = domain.contains('.')
        && !domain.contains('@')
        && domain.split('.').all(|label| !label.is_empty() && !label.starts_with('-') && !label.ends_with('-'));
    if local.is_empty() || local.chars().count() > 64 || !domain_ok {
        return bad("must look like name@example.org");
    }
    Ok(email)
}

impl crate::error::ErrorCode for IdentityError {
    fn retry_after(&self) -> Option<u64> {
        match self {
            IdentityError::SignupRateLimited { retry_after_secs } => Some(*retry_after_secs),
            _ => None,
        }
    }

    fn code(&self) -> crate::error::Code {
        use crate::error::Code;
        match self {
            IdentityError::InvalidEmail(_) => Code::InvalidEmail,
            IdentityError::EmailTaken => Code::EmailTaken,
            IdentityError::SignupClosed => Code::SignupClosed,
            IdentityError::KeyNotFound(_) => Code::KeyNotFound,
            IdentityError::CannotRevokeCurrent => Code::CannotRevokeCurrent,
            IdentityError::UnknownPlan(..) | IdentityError::AccountNotFound(_) => Code::NotFound,
            IdentityError::KeyLimitReached { .. } => Code::KeyLimitReached,
            IdentityError::InvalidPaging(_) => Code::InvalidPaging,
            IdentityError::SignupRateLimited { .. } => Code::RateLimited,
            IdentityError::Store(e) => e.code(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize, revoked: usize) -> Vec<KeyRecord> {
        (0..n)
            .map(|i| KeyRecord {
                prefix: format!("al_{i:07}"),
                account_id: "acct_a".into(),
                hash: String::new(),
                created_at: format!("t{i:04}"),
                revoked_at: (i < revoked).then(|| "t".to_owned()),
            })
            .collect()
    }

    fn prefixes(p: &KeysPage) -> Vec<&str> {
        p.keys.iter().map(|k| k.prefix.as_str()).collect()
    }

    #[test]
    fn keys_page_by_the_last_prefix_seen() {
        let first = page(keys(5, 2), &Paging { limit: 2, after: None }).unwrap();
        assert_eq!(prefixes(&first), ["al_0000000", "al_0000001"]);
        assert_eq!((first.total, first.active), (5, 3));
        let second = page(keys(5, 2), &Paging { limit: 2, after: first.next_after.clone() }).unwrap();
        assert_eq!(prefixes(&second), ["al_0000002", "al_0000003"]);
        let last = page(keys(5, 2), &Paging { limit: 2, after: second.next_after.clone() }).unwrap();
        assert_eq!((prefixes(&last), last.next_after.as_deref()), (vec!["al_0000004"], None));
        let exact = page(keys(2, 0), &Paging { limit: 2, after: None }).unwrap();
        assert_eq!(exact.next_after, None, "no empty page after a full last one");
        let bad = page(keys(2, 0), &Paging { limit: 2, after: Some("al_nothere".into()) });
        assert!(matches!(bad, Err(IdentityError::InvalidPaging(_))));
    }

    #[test]
    fn emails_are_normalized_and_checked() {
        assert_eq!(normalize_email("  You@Institute.ORG ").unwrap(), "you@institute.org");
        for bad in ["", "nobody", "a@b", "a@@b.org", "a b@c.org", "@b.org", "a@.org", "a@b..org", "a@-b.org"] {
            assert!(normalize_email(bad).is_err(), "{bad:?} accepted");
        }
        assert!(normalize_email(&format!("{}@b.org", "a".repeat(65))).is_err());
    }
}
