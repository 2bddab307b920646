//! `GET /v1/health`, `GET /v1/plans` (public) and `GET /metrics`.

use hyper::header::HeaderValue;
use hyper::StatusCode;

use crate::app::App;
use crate::http::response::{self, Reply};
use crate::metrics;

pub fn health(app: &App) -> Reply {
    response::json_bytes(StatusCode::OK, app.health_json())
}

pub fn plans(app: &App) -> Reply {
    response::json_bytes(StatusCode::OK, app.plans_json.clone())
}

pub fn metrics(app: &App) -> Reply {
    let mut gauges = app.search.gauges();
    gauges.extend(app.cluster.gauges());
    let text = metrics::render(&app.metrics, &app.route_names, &gauges);
    response::bytes(StatusCode::OK, HeaderValue::from_static("text/plain; version=0.0.4"), text.into())
}
