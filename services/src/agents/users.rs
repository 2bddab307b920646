//! SOAT users (users.yaml): the first admin's bootstrap, login, and the account's users
//! an admin manages. A user acts for one account: bootstrap makes a new account whose
//! admin it is; the users an admin makes belong to that admin's account. Login answers
//! a token (`ut_…`, 256 random bits, kept as its prefix and SHA-256 like the keys) that
//! authenticates on `/api/v1` as the account, for [`TOKEN_TTL_SECS`] (SOAT's JWTs last
//! 7 days too); deleting the user ends its tokens (the caller bumps the key epoch).
//!
//! Passwords are kept as argon2id PHC strings (argon2's defaults: 19 MiB, 2 passes),
//! slow by design: every function here that hashes runs on the blocking pool. A login
//! for an unknown username verifies against a fixed hash all the same, so neither the
//! answer nor its time tells a wrong name from a wrong password.

use std::sync::OnceLock;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;

use super::SoatError;
use crate::auth::{keys, unix_now, Principal};
use crate::clock::now_rfc3339;
use crate::error::{Code, ErrorCode};
use crate::ids::random_base62;
use crate::store::{AccountRecord, Records, StoreError, UserRecord, UserTokenRecord};

/// How long a login token works: seven days, as SOAT's tokens.
pub const TOKEN_TTL_SECS: u64 = 7 * 24 * 3600;
/// The id of a user.
pub const USER_ID_PREFIX: &str = "user_";
const MIN_PASSWORD: usize = 8;
/// Bounds what one login makes argon2 read.
const MAX_PASSWORD: usize = 256;
const MAX_USERNAME: usize = 64;
const MAX_POLICIES: usize = 100;

/// `POST /users/bootstrap` and `POST /users/login`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

/// `POST /users`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    pub username: String,
    pub password: String,
    #[serde(default)]
    pub role: Option<String>,
}

/// `PUT /users/{id}/policies`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policies {
    pub policy_ids: Vec<String>,
}

/// A login: the user and its token's secret (shown this once).
pub struct LoggedIn {
    pub user: UserRecord,
    pub token: String,
}

#[derive(Debug, thiserror::Error)]
pub enum UserError {
    #[error("This server's first admin was made already; log in (POST /api/v1/users/login), or ask an admin for a user.")]
    BootstrapDone,
    #[error("The username {0} is taken; choose another.")]
    UsernameTaken(String),
    /// One answer for a wrong username or a wrong password.
    #[error("Invalid username or password.")]
    InvalidCredentials,
    #[error("Too many failed logins from this address; retry in {retry_after_secs} s.")]
    LoginRateLimited { retry_after_secs: u64 },
    #[error("GET /users/me answers for a user's login token (POST /api/v1/users/login); this request carries an API key.")]
    NotAUser,
    #[error(transparent)]
    Soat(#[from] SoatError),
}

impl From<StoreError> for UserError {
    fn from(e: StoreError) -> UserError {
        UserError::Soat(e.into())
    }
}

impl ErrorCode for UserError {
    fn code(&self) -> Code {
        match self {
            UserError::BootstrapDone => Code::BootstrapAlreadyCompleted,
            UserError::UsernameTaken(_) => Code::UsernameTaken,
            UserError::InvalidCredentials | UserError::NotAUser => Code::InvalidCredentials,
            UserError::LoginRateLimited { .. } => Code::RateLimited,
            UserError::Soat(e) => e.code(),
        }
    }

    fn retry_after(&self) -> Option<u64> {
        match self {
            UserError::LoginRateLimited { retry_after_secs } => Some(*retry_after_secs),
            _ => None,
        }
    }

    fn meta(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        match self {
            UserError::Soat(e) => e.meta(),
            _ => None,
        }
    }
}

/// Who may manage the account's users: its account key, an `/api/v1` key not bound to
/// a project, or an admin user. A project-bound key or a plain user: 403.
pub fn require_admin(p: &Principal) -> Result<(), SoatError> {
    match (&p.user, &p.project_key) {
        (Some(u), _) if u.role != "admin" => Err(SoatError::Forbidden("Only an admin user manages users.".into())),
        (None, Some(k)) if k.project_id.is_some() => {
            Err(SoatError::Forbidden("A project-bound key cannot manage users; use an account key or an admin's login.".into()))
        }
        _ => Ok(()),
    }
}

fn check_username(name: &str) -> Result<(), SoatError> {
    let ok = !name.is_empty()
        && name.chars().count() <= MAX_USERNAME
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '@' | '+'));
    if ok {
        return Ok(());
    }
    Err(SoatError::invalid("username", format!("1 to {MAX_USERNAME} letters, digits or _ - . @ +.")))
}

/// At least 8 characters (at most 256), with a letter and a digit or symbol, and not the
/// username.
fn check_password(password: &str, username: &str) -> Result<(), SoatError> {
    let n = password.chars().count();
    let problem = if n < MIN_PASSWORD {
        Some(format!("too short: at least {MIN_PASSWORD} characters."))
    } else if n > MAX_PASSWORD {
        Some(format!("too long: at most {MAX_PASSWORD} characters."))
    } else if !password.chars().any(char::is_alphabetic) || password.chars().all(char::is_alphabetic) {
        Some("too weak: use letters and at least one digit or symbol.".into())
    } else if password.eq_ignore_ascii_case(username) {
        Some("too weak: it is the username.".into())
    } else {
        None
    };
    problem.map_or(Ok(()), |p| Err(SoatError::invalid("password", p)))
}

fn hash_password(password: &str) -> String {
    let salt = SaltString::encode_b64(&random_bytes()).expect("16 bytes encode as a salt");
    Argon2::default().hash_password(password.as_bytes(), &salt).expect("argon2 hashes a bounded password").to_string()
}

fn random_bytes() -> [u8; 16] {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the OS random source");
    b
}

fn verify_password(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc).is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
}

/// A hash no password is known for: what a login for an unknown username verifies against.
fn decoy_hash() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| hash_password(&random_base62(32)))
}

fn user_record(account_id: &str, username: String, password: &str, role: &str) -> UserRecord {
    let now = now_rfc3339();
    UserRecord {
        id: format!("{USER_ID_PREFIX}{}", random_base62(16)),
        account_id: account_id.to_owned(),
        username,
        role: role.to_owned(),
        password_hash: hash_password(password),
        policy_ids: Vec::new(),
        created_at: now.clone(),
        updated_at: now,
    }
}

/// `POST /users/bootstrap`: the appliance's first admin, on a new account of `plan`.
pub fn bootstrap(records: &Records, plan: &str, c: Credentials) -> Result<UserRecord, UserError> {
    check_username(&c.username)?;
    check_password(&c.password, &c.username)?;
    let account_id = format!("acct_{}", random_base62(16));
    let user = user_record(&account_id, c.username, &c.password, "admin");
    let account = AccountRecord {
        id: account_id.clone(),
        email: format!("{}@{account_id}.users.invalid", user.id),
        plan: plan.to_owned(),
        created_at: user.created_at.clone(),
    };
    if !records.bootstrap_user(&account, &user)? {
        return Err(UserError::BootstrapDone);
    }
    Ok(user)
}

/// `POST /users/login`: a fresh token for the user, or [`UserError::InvalidCredentials`].
pub fn login(records: &Records, c: &Credentials) -> Result<LoggedIn, UserError> {
    let found = records.user_by_username(&c.username)?;
    let phc: &str = match &found {
        Some(u) => &u.password_hash,
        None => decoy_hash(),
    };
    // Verified either way: an unknown name costs what a wrong password does.
    let good = c.password.chars().count() <= MAX_PASSWORD && verify_password(&c.password, phc);
    let Some(user) = found.filter(|_| good) else { return Err(UserError::InvalidCredentials) };
    let mut shown = None;
    let expires_at = unix_now() + TOKEN_TTL_SECS;
    let token = records.insert_user_token(&mut || {
        let k = keys::issue_user_token();
        let record = UserTokenRecord {
            prefix: k.prefix,
            hash: k.hash,
            user_id: user.id.clone(),
            account_id: user.account_id.clone(),
            expires_at,
            created_at: now_rfc3339(),
        };
        shown = Some(k.secret);
        record
    })?;
    match (token, shown) {
        (Some(_), Some(token)) => Ok(LoggedIn { user, token }),
        // Deleted between the check and the write.
        _ => Err(UserError::InvalidCredentials),
    }
}

/// `POST /users`: a user of the caller's account (role `user` unless it says `admin`).
/// A caller `held` to policies (issue 37) makes only plain users, held to the same.
pub fn create(records: &Records, account_id: &str, new: NewUser, held: Option<Vec<String>>) -> Result<UserRecord, UserError> {
    check_username(&new.username)?;
    let role = match new.role.as_deref() {
        None | Some("user") => "user",
        Some("admin") => "admin",
        Some(other) => return Err(SoatError::invalid("role", format!("{other} is no role; admin or user.")).into()),
    };
    if held.is_some() && role == "admin" {
        return Err(SoatError::Forbidden("A credential held to policies makes no admin.".into()).into());
    }
    check_password(&new.password, &new.username)?;
    let mut user = user_record(account_id, new.username, &new.password, role);
    user.policy_ids = held.unwrap_or_default();
    match records.insert_user(&user) {
        Err(StoreError::Conflict { .. }) => Err(UserError::UsernameTaken(user.username)),
        other => Ok(other.map(|()| user)?),
    }
}

/// The account's users, oldest first.
pub fn list(records: &Records, account_id: &str) -> Result<Vec<UserRecord>, UserError> {
    let mut all = records.list::<UserRecord>(account_id)?;
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

pub fn get(records: &Records, account_id: &str, id: &str) -> Result<UserRecord, UserError> {
    Ok(records.get::<UserRecord>(account_id, id)?.ok_or_else(|| SoatError::not_found("user", id))?)
}

/// `DELETE /users/{id}`: the user and its tokens; the caller bumps the key epoch next.
pub fn delete(records: &Records, account_id: &str, id: &str) -> Result<(), UserError> {
    if records.remove_user(account_id, id)? {
        return Ok(());
    }
    Err(SoatError::not_found("user", id).into())
}

/// `PUT /users/{id}/policies`: recorded as given (replacing the list); checked on every
/// `/api/v1` request by `agents::policies` (an id naming no policy is skipped).
/// A caller `held` to policies (issue 37) attaches exactly its own.
pub fn attach_policies(records: &Records, account_id: &str, id: &str, p: Policies, held: Option<Vec<String>>) -> Result<UserRecord, UserError> {
    if held.as_ref().is_some_and(|own| !super::policies::same_set(own, &p.policy_ids)) {
        return Err(SoatError::Forbidden("A credential held to policies attaches exactly its own.".into()).into());
    }
    if p.policy_ids.len() > MAX_POLICIES {
        return Err(SoatError::invalid("policy_ids", format!("at most {MAX_POLICIES}.")).into());
    }
    if let Some(i) = p.policy_ids.iter().position(|id| id.is_empty() || id.len() > 64) {
        return Err(SoatError::invalid(format!("policy_ids[{i}]"), "a policy id of 1 to 64 characters.").into());
    }
    let now = now_rfc3339();
    let changed = records.update::<UserRecord, UserRecord>(account_id, id, |u| {
        u.policy_ids = p.policy_ids;
        u.updated_at = now;
        crate::store::owned::Change::Write(u.clone())
    })?;
    Ok(changed.ok_or_else(|| SoatError::not_found("user", id))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weak_passwords_are_refused_with_the_reason() {
        assert!(check_password("Admin1234!", "admin").is_ok());
        for (weak, why) in [("short1!", "short"), ("onlyletters", "weak"), ("12345678", "weak"), ("admin123", "username")] {
            let e = check_password(weak, if why == "username" { "ADMIN123" } else { "x" }).unwrap_err().to_string();
            assert!(e.contains(why), "{weak}: {e}");
        }
    }

    #[test]
    fn a_password_verifies_against_its_own_hash_only() {
        let h = hash_password("Admin1234!");
        assert!(h.starts_with("$argon2id$"), "{h}");
        assert!(verify_password("Admin1234!", &h));
        assert!(!verify_password("Admin1234?", &h));
        assert!(!verify_password("Admin1234!", decoy_hash()));
    }
}
