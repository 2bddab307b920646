//! `GET /v1/account`: plan, this month's usage, allowances and keys. `keys` is the
//! first page of `GET /v1/keys` (50, oldest first); `keys_total` and `keys_active`
//! count them all, so a client sees when to page the rest from `/v1/keys`.

use hyper::StatusCode;
use serde::Serialize;

use super::super::Call;
use super::keys::KeyOut;
use crate::error::ApiError;
use crate::http::response::{self, Reply};
use crate::identity;
use crate::plans::Plan;

/// This month's counts; an operation not yet used is absent.
#[derive(Serialize)]
struct Usage {
    #[serde(skip_serializing_if = "is_zero")]
    search: u64,
    #[serde(skip_serializing_if = "is_zero")]
    extract: u64,
    #[serde(skip_serializing_if = "is_zero")]
    research: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pages_indexed: u64,
    stored_chars: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize)]
struct AccountOut<'a> {
    id: String,
    email: String,
    plan: String,
    usage: Usage,
    allowances: &'a Plan,
    keys: Vec<KeyOut>,
    keys_total: usize,
    keys_active: usize,
}

pub async fn account(call: Call<'_>) -> Result<Reply, ApiError> {
    let view = identity::account_view(&call.app.accounts(), &call.principal().account_id)?;
    let u = view.usage;
    let out = AccountOut {
        allowances: call.app.plan(&view.account.plan),
        id: view.account.id,
        email: view.account.email,
        plan: view.account.plan,
        usage: Usage { search: u.search, extract: u.extract, research: u.research, pages_indexed: u.pages_indexed, stored_chars: view.stored_chars },
        keys_total: view.keys.total,
        keys_active: view.keys.active,
        keys: view.keys.keys.into_iter().map(KeyOut::from).collect(),
    };
    Ok(response::json(StatusCode::OK, &out))
}
