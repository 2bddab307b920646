//! `POST /v1/signup`: an account and its first key. For an email that already has an
//! account, a new key only for a caller holding one of its keys (unless the operator
//! chose the spec's open behaviour); see `identity::signup`. Signups are limited per
//! client address (`auth.signup_per_ip`): past it, 429 `rate_limited` with retry-after.

use hyper::header::AUTHORIZATION;
use hyper::StatusCode;
use serde::{Deserialize, Serialize};

use super::super::{blocking, Call};
use crate::auth::bearer;
use crate::error::{ApiError, Code};
use crate::http::response::{self, Reply};
use crate::identity;

#[derive(Deserialize)]
struct SignupBody {
    email: String,
}

#[derive(Serialize)]
struct AccountOut {
    id: String,
    email: String,
    plan: String,
}

#[derive(Serialize)]
struct SignupOut {
    account: AccountOut,
    api_key: String,
    note: &'static str,
}

pub const KEY_NOTE: &str = "Store this key now; it is not shown again.";

pub async fn signup(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let body: SignupBody = call.json(Code::InvalidEmail).await?;
    let caller = bearer(call.parts.headers.get(AUTHORIZATION).map(|v| v.as_bytes())).map(str::to_owned);
    let remote = call.peer.map_or(std::net::IpAddr::from([0, 0, 0, 0]), |p| p.ip());
    let app = call.app.clone();
    let done = blocking(move || identity::signup(&app.accounts(), &body.email, caller.as_deref(), remote)).await?;
    let out = SignupOut {
        account: AccountOut { id: done.account.id, email: done.account.email, plan: done.account.plan },
        api_key: done.key.secret,
        note: KEY_NOTE,
    };
    Ok(response::json(StatusCode::CREATED, &out))
}
