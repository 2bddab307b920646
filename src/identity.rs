//! The identity service: accounts, their keys, and what an account may see of itself.
//! Handlers and the operator CLI call it; it calls the records store (blocking, so the
//! server runs these on a blocking pool).

use crate::app::App;
use crate::auth::keys::{self, IssuedKey};
use crate::clock::now_rfc3339;
use crate::config::{ExistingEmail, SignupMode};
use crate::plans::Plans;
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

/// What `GET /v1/account` shows.
pub struct AccountView {
    pub account: AccountRecord,
    pub usage: MonthCounts,
    pub stored_chars: u64,
    pub keys: Vec<KeyRecord>,
}

/// `POST /v1/signup`. `caller_key` is the bearer key the request carried, if any.
pub fn signup(app: &App, email: &str, caller_key: Option<&str>) -> Result<SignedUp, IdentityError> {
    let auth = &app.config.auth;
    if auth.signup == SignupMode::Closed {
        return Err(IdentityError::SignupClosed);
    }
    let email = normalize_email(email)?;
    if let Some(existing) = app.records.account_by_email(&email)? {
        let holds_key = caller_key.is_some_and(|k| key_belongs_to(&app.records, k, &existing.id));
        if auth.existing_email == ExistingEmail::Refuse && !holds_key {
            return Err(IdentityError::EmailTaken);
        }
        let key = add_key(&app.records, &existing.id)?;
        return Ok(SignedUp { account: existing, key });
    }
    match create_account(&app.records, &app.config.plans, &email, &auth.default_plan) {
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
    let account = AccountRecord {
        id: format!("acct_{}", keys::random_base62(16)),
        email,
        plan: plan.to_owned(),
        created_at: now.clone(),
    };
    let mut shown = None;
    let record = records.create_account(&account, &mut next_key(&mut shown), &now)?;
    Ok(SignedUp { account, key: shown_for(shown, &record) })
}

/// `POST /v1/keys`.
pub fn add_key(records: &Records, account_id: &str) -> Result<ShownKey, IdentityError> {
    let mut shown = None;
    let record = records.add_key(account_id, &mut next_key(&mut shown), &now_rfc3339())?;
    Ok(shown_for(shown, &record))
}

/// `GET /v1/keys`.
pub fn list_keys(records: &Records, account_id: &str) -> Result<Vec<KeyRecord>, IdentityError> {
    Ok(records.keys_of(account_id)?)
}

/// `DELETE /v1/keys/{prefix}`. When this returns, every shard refuses the key.
pub fn revoke_key(app: &App, account_id: &str, prefix: &str, current: &str) -> Result<KeyRecord, IdentityError> {
    if prefix == current {
        return Err(IdentityError::CannotRevokeCurrent);
    }
    let key = app
        .records
        .revoke_key(account_id, prefix, &now_rfc3339())?
        .ok_or_else(|| IdentityError::KeyNotFound(prefix.to_owned()))?;
    app.bump_key_epoch();
    Ok(key)
}

/// `GET /v1/account`.
pub fn account_view(app: &App, account_id: &str) -> Result<AccountView, IdentityError> {
    let account = app
        .records
        .account(account_id)?
        .ok_or_else(|| IdentityError::AccountNotFound(account_id.to_owned()))?;
    let meters = app.meters.account(account_id)?;
    let keys = app.records.keys_of(account_id)?;
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
    key.account_id == account_id
        && key.revoked_at.is_none()
        && stored.is_some_and(|s| keys::verify(&s, &keys::digest(secret)))
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

#[cfg(test)]
mod tests {
    use super::normalize_email;

    #[test]
    fn emails_are_normalized_and_checked() {
        assert_eq!(normalize_email("  You@Institute.ORG ").unwrap(), "you@institute.org");
        for bad in ["", "nobody", "a@b", "a@@b.org", "a b@c.org", "@b.org", "a@.org", "a@b..org", "a@-b.org"] {
            assert!(normalize_email(bad).is_err(), "{bad:?} accepted");
        }
        assert!(normalize_email(&format!("{}@b.org", "a".repeat(65))).is_err());
    }
}

impl crate::error::ErrorCode for IdentityError {
    fn code(&self) -> crate::error::Code {
        use crate::error::Code;
        match self {
            IdentityError::InvalidEmail(_) => Code::InvalidEmail,
            IdentityError::EmailTaken => Code::EmailTaken,
            IdentityError::SignupClosed => Code::SignupClosed,
            IdentityError::KeyNotFound(_) => Code::KeyNotFound,
            IdentityError::CannotRevokeCurrent => Code::CannotRevokeCurrent,
            IdentityError::UnknownPlan(..) | IdentityError::AccountNotFound(_) => Code::NotFound,
            IdentityError::Store(_) => Code::Internal,
        }
    }
}
