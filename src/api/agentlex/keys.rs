//! `POST /v1/keys`, `GET /v1/keys`, `DELETE /v1/keys/{prefix}`.

use hyper::StatusCode;
use serde::Serialize;

use super::super::{blocking, Call};
use super::signup::KEY_NOTE;
use crate::error::ApiError;
use crate::http::response::{self, Reply};
use crate::identity;
use crate::store::KeyRecord;

#[derive(Serialize)]
pub struct KeyOut {
    prefix: String,
    created_at: String,
    revoked_at: Option<String>,
}

impl From<KeyRecord> for KeyOut {
    fn from(k: KeyRecord) -> KeyOut {
        KeyOut { prefix: k.prefix, created_at: k.created_at, revoked_at: k.revoked_at }
    }
}

#[derive(Serialize)]
struct Created {
    api_key: String,
    prefix: String,
    note: &'static str,
}

#[derive(Serialize)]
struct List {
    keys: Vec<KeyOut>,
}

#[derive(Serialize)]
struct Revoked {
    revoked: String,
    revoked_at: Option<String>,
}

pub async fn create(call: Call<'_>) -> Result<Reply, ApiError> {
    let app = call.app.clone();
    let account = call.principal().account_id.clone();
    let key = blocking(move || identity::add_key(&app.records, &account)).await?;
    Ok(response::json(StatusCode::CREATED, &Created { api_key: key.secret, prefix: key.prefix, note: KEY_NOTE }))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let keys = identity::list_keys(&call.app.records, &call.principal().account_id)?;
    Ok(response::json(StatusCode::OK, &List { keys: keys.into_iter().map(KeyOut::from).collect() }))
}

pub async fn revoke(call: Call<'_>, prefix: String) -> Result<Reply, ApiError> {
    let app = call.app.clone();
    let p = call.principal();
    let (account, current) = (p.account_id.clone(), p.prefix.clone());
    let key = blocking(move || identity::revoke_key(&app, &account, &prefix, &current)).await?;
    Ok(response::json(StatusCode::OK, &Revoked { revoked: key.prefix, revoked_at: key.revoked_at }))
}
