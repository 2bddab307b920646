//! `POST /v1/keys`, `GET /v1/keys`, `DELETE /v1/keys/{prefix}`.
//!
//! The listing is paged, oldest key first: `?limit=` (1–200, default 50) and
//! `?after=` (the `next_after` of the previous page: the last prefix it held). Beside
//! the spec's `keys` it says how many there are (`total`), how many are unrevoked
//! (`active`), the plan's cap on those (`max_active`, null for none) and `next_after`
//! (null on the last page).

use hyper::StatusCode;
use serde::Serialize;

use super::super::{blocking, Call};
use super::signup::KEY_NOTE;
use crate::error::{ApiError, Code};
use crate::http::response::{self, Reply};
use crate::identity::{self, Paging};
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
    total: usize,
    active: usize,
    max_active: Option<u64>,
    next_after: Option<String>,
}

#[derive(Serialize)]
struct Revoked {
    revoked: String,
    revoked_at: Option<String>,
}

pub async fn create(call: Call<'_>) -> Result<Reply, ApiError> {
    let app = call.app.clone();
    let account = call.principal().account_id.clone();
    let plan = app.plan(&call.principal().plan).clone();
    let key = blocking(move || identity::add_key(&app.records, &plan, &account)).await?;
    Ok(response::json(StatusCode::CREATED, &Created { api_key: key.secret, prefix: key.prefix, note: KEY_NOTE }))
}

pub async fn list(call: Call<'_>) -> Result<Reply, ApiError> {
    let paging = paging(call.parts.uri.query())?;
    let page = identity::list_keys(&call.app.records, &call.principal().account_id, &paging)?;
    Ok(response::json(
        StatusCode::OK,
        &List {
            keys: page.keys.into_iter().map(KeyOut::from).collect(),
            total: page.total,
            active: page.active,
            max_active: call.app.plan(&call.principal().plan).max_keys,
            next_after: page.next_after,
        },
    ))
}

/// `limit` and `after` from the query; other parameters are ignored.
fn paging(query: Option<&str>) -> Result<Paging, ApiError> {
    let mut paging = Paging::first();
    for (name, value) in query.unwrap_or("").split('&').filter_map(|p| p.split_once('=')) {
        match name {
            "limit" => {
                paging.limit = value.parse().ok().filter(|n| (1..=Paging::MAX_LIMIT).contains(n)).ok_or_else(|| {
                    ApiError::new(Code::InvalidPaging, format!("limit must be a whole number from 1 to {}, not \"{value}\".", Paging::MAX_LIMIT))
                })?
            }
            // Prefixes are `al_` and base62: nothing in them is percent-encoded.
            "after" if !value.is_empty() => paging.after = Some(value.to_owned()),
            _ => {}
        }
    }
    Ok(paging)
}

pub async fn revoke(call: Call<'_>, prefix: String) -> Result<Reply, ApiError> {
    let app = call.app.clone();
    let p = call.principal();
    let (account, current) = (p.account_id.clone(), p.prefix.clone());
    let key = blocking(move || identity::revoke_key(&app.accounts(), &account, &prefix, &current)).await?;
    Ok(response::json(StatusCode::OK, &Revoked { revoked: key.prefix, revoked_at: key.revoked_at }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paging_reads_limit_and_after_and_refuses_a_bad_limit() {
        assert_eq!(paging(None).unwrap(), Paging::first());
        assert_eq!(paging(Some("after=al_abc1234&limit=7&x=1")).unwrap(), Paging { limit: 7, after: Some("al_abc1234".into()) });
        assert_eq!(paging(Some("limit=200")).unwrap().limit, 200);
        for bad in ["limit=0", "limit=201", "limit=ten", "limit="] {
            assert_eq!(paging(Some(bad)).unwrap_err().code, Code::InvalidPaging, "{bad}");
        }
    }
}
