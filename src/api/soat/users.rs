//! `/api/v1/users` (users.yaml): bootstrap (no key, once), login (no key, a token for
//! `/api/v1`), me, and an admin's create, list, get, delete and policies. Hashing
//! passwords is slow by design, so every call that hashes or verifies one runs on the
//! blocking pool, never on the shard. Failed logins are limited per client address.

use hyper::StatusCode;
use serde::Serialize;

use super::{body, Page};
use crate::agents::users::{self, Credentials, NewUser, Policies, UserError};
use crate::api::{blocking, Call};
use crate::error::ApiError;
use crate::http::response::{self, Reply};
use crate::store::UserRecord;

/// UserRecord as the spec writes it, with the policies attached (Quarry's addition).
#[derive(Serialize)]
pub struct UserOut {
    id: String,
    username: String,
    role: String,
    policy_ids: Vec<String>,
    created_at: String,
    updated_at: String,
}

impl From<UserRecord> for UserOut {
    fn from(u: UserRecord) -> UserOut {
        UserOut { id: u.id, username: u.username, role: u.role, policy_ids: u.policy_ids, created_at: u.created_at, updated_at: u.updated_at }
    }
}

#[derive(Serialize)]
struct LoginOut {
    id: String,
    username: String,
    role: String,
    token: String,
    /// When the token stops working (Quarry's addition), RFC 3339.
    expires_at: String,
}

fn client(call: &Call<'_>) -> std::net::IpAddr {
    call.peer.map_or(std::net::IpAddr::from([0, 0, 0, 0]), |p| p.ip())
}

pub async fn bootstrap(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let c: Credentials = body::read(&mut call).await?;
    let app = call.app.clone();
    let user = blocking(move || users::bootstrap(&app.records, &app.config.auth.default_plan, c)).await?;
    Ok(response::json(StatusCode::CREATED, &UserOut::from(user)))
}

pub async fn login(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let c: Credentials = body::read(&mut call).await?;
    let ip = client(&call);
    // Checked before the password, spent only by a failure: a guesser past the limit
    // learns nothing more, a person who logs in often is never slowed.
    if let Some(d) = call.app.logins.peek(ip).filter(|d| !d.allowed) {
        return Err(UserError::LoginRateLimited { retry_after_secs: d.retry_after_secs }.into());
    }
    let app = call.app.clone();
    let done = blocking(move || users::login(&app.records, &c)).await;
    let done = match done {
        Err(UserError::InvalidCredentials) => {
            call.app.logins.spend(ip);
            return Err(UserError::InvalidCredentials.into());
        }
        other => other?,
    };
    let expires = std::time::UNIX_EPOCH + std::time::Duration::from_secs(crate::auth::unix_now() + users::TOKEN_TTL_SECS);
    let out = LoginOut {
        id: done.user.id,
        username: done.user.username,
        role: done.user.role,
        token: done.token,
        expires_at: humantime::format_rfc3339_seconds(expires).to_string(),
    };
    Ok(response::json(StatusCode::OK, &out))
}

pub async fn me(call: Call<'_>) -> Result<Reply, ApiError> {
    let Some(u) = call.principal().user.clone() else { return Err(UserError::NotAUser.into()) };
    let user = users::get(&call.app.records, &call.principal().account_id, &u.id)?;
    Ok(response::json(StatusCode::OK, &UserOut::from(user)))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    users::require_admin(call.principal())?;
    let page = Page::from_query(call.parts.uri.query(), super::list::DEFAULT_LIMIT)?;
    let all: Vec<UserOut> = users::list(&call.app.records, &call.principal().account_id)?.into_iter().map(UserOut::from).collect();
    Ok(page.reply(&all))
}

pub async fn create(mut call: Call<'_>) -> Result<Reply, ApiError> {
    users::require_admin(call.principal())?;
    let new: NewUser = body::read(&mut call).await?;
    let held = crate::agents::policies::held_to(&call.app.records, call.principal())?;
    let (app, account) = (call.app.clone(), call.principal().account_id.clone());
    let user = blocking(move || users::create(&app.records, &account, new, held)).await?;
    Ok(response::json(StatusCode::CREATED, &UserOut::from(user)))
}

pub async fn get(call: Call<'_>, user_id: String) -> Result<Reply, ApiError> {
    users::require_admin(call.principal())?;
    Ok(response::json(StatusCode::OK, &UserOut::from(users::get(&call.app.records, &call.principal().account_id, &user_id)?)))
}

pub async fn delete(call: Call<'_>, user_id: String) -> Result<Reply, ApiError> {
    users::require_admin(call.principal())?;
    let (app, account) = (call.app.clone(), call.principal().account_id.clone());
    blocking(move || {
        let done = users::delete(&app.records, &account, &user_id);
        // Its tokens are refused on every shard before the answer.
        app.bump_key_epoch();
        done
    })
    .await?;
    Ok(super::no_content())
}

pub async fn attach_policies(mut call: Call<'_>, user_id: String) -> Result<Reply, ApiError> {
    users::require_admin(call.principal())?;
    let p: Policies = body::read(&mut call).await?;
    let held = crate::agents::policies::held_to(&call.app.records, call.principal())?;
    let (app, account) = (call.app.clone(), call.principal().account_id.clone());
    blocking(move || users::attach_policies(&app.records, &account, &user_id, p, held)).await?;
    Ok(super::no_content())
}
