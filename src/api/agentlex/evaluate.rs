//! `POST /v1/collections/{id}/evaluate`: parse, resolve the gold, spend one search of
//! the monthly allowance per question per variant up front (or refuse with 429 before
//! anything runs), run, serialize. The five rate tokens are the route's cost.

use hyper::StatusCode;

use super::super::Call;
use super::caller;
use super::input::evaluate as input;
use crate::error::{ApiError, Code};
use crate::evaluate;
use crate::http::response::{self, Reply};
use crate::search::SearchError;

pub async fn evaluate(mut call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let owned = call.app.search.owned(&call.principal().account_id, &id).await?;
    let req = input::parse(&call.bytes().await?)?;
    let prepared = evaluate::prepare(&call.app.evaluation(), &owned.record, &owned.coll, &req).await;
    let searches = prepared.searches();
    let who = caller(&call);
    if searches > 0 {
        call.app.search.spend_search(who, searches).await.map_err(|e| match e {
            SearchError::Searches { left, allowance, plan, .. } => ApiError::new(
                Code::AllowanceExceeded,
                format!(
                    "This evaluation needs {searches} searches ({} questions × {} variants) and {left} of this month's {allowance} searches of the {plan} plan are left.",
                    prepared.questions(),
                    prepared.variants(),
                ),
            ),
            e => e.into(),
        })?;
    }
    let report = evaluate::run(&call.app.evaluation(), call.embedders, call.rerankers, &owned.record, &owned.coll, &req, prepared).await;
    if report.is_err() {
        // A failed evaluation is not charged.
        call.app.search.refund_searches(who, searches);
    }
    Ok(response::json(StatusCode::OK, &report?))
}
