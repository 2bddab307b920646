//! `POST /v1/collections/{id}/evaluate`: parse, resolve the gold, spend one search of
//! the monthly allowance per question per variant up front (or refuse with 429 before
//! anything runs), run, serialize. The five rate tokens are spent by the handler
//! ([`crate::http::router::Route::cost`]).

use hyper::StatusCode;

use super::super::Call;
use super::input::evaluate as input;
use crate::evaluate;
use crate::error::{ApiError, Code};
use crate::http::response::{self, Reply};
use crate::limits::Meter;
use crate::search;

pub async fn evaluate(mut call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let account = call.principal().account_id.clone();
    let (record, coll) = search::owned(call.app, &account, &id)?;
    let body = call.json_value().await?;
    let req = input::parse(&body)?;
    let prepared = evaluate::prepare(call.app, &record, &coll, &req).await;
    let searches = prepared.searches();
    let plan = call.app.plan(&call.principal().plan);
    let meters = call.app.meters.account(&account)?;
    if searches > 0 {
        meters.try_spend(Meter::Search, searches, plan.search).map_err(|e| {
            let left = e.allowance.saturating_sub(meters.counts().search);
            ApiError::new(
                Code::AllowanceExceeded,
                format!(
                    "This evaluation needs {searches} searches ({} questions × {} variants) and {left} of this month's {} searches of the {} plan are left.",
                    prepared.questions(),
                    prepared.variants(),
                    e.allowance,
                    plan.name
                ),
            )
        })?;
    }
    let report = evaluate::run(call.app, call.embedders, &record, &coll, &req, prepared).await;
    if report.is_err() {
        // A failed evaluation is not charged.
        meters.refund(Meter::Search, searches);
    }
    Ok(response::json(StatusCode::OK, &report?))
}
