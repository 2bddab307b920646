//! The four API surfaces and the error body each one speaks. A route's surface renders
//! every error it answers, from a 401 before the handler runs to a 405 from the table,
//! so each client meets its own API's shape:
//!
//! - AgentLex (`/v1/...`): `{"error":{"code","message"}}`;
//! - OpenAI (`/v1/chat/completions`, `/v1/models`): `{"error":{"message","type","param","code"}}`,
//!   whose `type` the openai SDKs map to `AuthenticationError`, `RateLimitError`, …;
//! - SOAT (`/api/v1/...`): `{"error":{"code","message","hint","docs_url","meta"}}` with
//!   SOAT's upper-case codes;
//! - the retrieval plugin (`/query`, `/upsert`, `/upsert-file`, `/delete`, also under
//!   `/sub/`): FastAPI's shapes, a 422 `{"detail":[{"loc","msg","type"}]}` for what
//!   the request got wrong and `{"detail": message}` for the rest.

use std::sync::OnceLock;

use bytes::Bytes;
use hyper::header::{HeaderValue, ALLOW, RETRY_AFTER};
use hyper::StatusCode;
use serde::Serialize;
use serde_json::{json, Value};

use super::response::{self, Reply};
use crate::error::{ApiError, Code};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    AgentLex,
    OpenAi,
    Soat,
    Plugin,
}

impl Surface {
    pub const ALL: [Surface; 4] = [Surface::AgentLex, Surface::OpenAi, Surface::Soat, Surface::Plugin];

    /// The surface a path belongs to, for paths the table does not hold (404s).
    pub fn of_path(path: &str) -> Surface {
        let under = |prefix: &str| path == prefix || path.strip_prefix(prefix).is_some_and(|r| r.starts_with('/'));
        if under("/v1/chat/completions") || under("/v1/models") {
            Surface::OpenAi
        } else if under("/api/v1") {
            Surface::Soat
        } else if under("/sub") || ["/query", "/upsert", "/upsert-file", "/delete"].iter().any(|p| under(p)) {
            Surface::Plugin
        } else {
            Surface::AgentLex
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Surface::AgentLex => "agentlex",
            Surface::OpenAi => "openai",
            Surface::Soat => "soat",
            Surface::Plugin => "plugin",
        }
    }

    /// `e` as this surface answers it, with `Allow` and `retry-after` when it has them.
    pub fn error(self, e: &ApiError) -> Reply {
        let (status, body) = match self {
            Surface::AgentLex => (e.status(), agentlex(e)),
            Surface::OpenAi => (e.status(), openai(e)),
            Surface::Soat => (e.status(), soat(e)),
            Surface::Plugin => plugin(e),
        };
        let mut r = response::json_bytes(status, Bytes::from(body));
        if let Some(allow) = &e.allow {
            r.headers_mut().insert(ALLOW, allow.clone());
        }
        if let Some(secs) = e.retry_after {
            r.headers_mut().insert(RETRY_AFTER, HeaderValue::from(secs));
        }
        r
    }
}

fn to_vec<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("error bodies serialize")
}

/// AgentLex's `Error`: `{"error":{"code","message"}}`.
pub fn agentlex(e: &ApiError) -> Vec<u8> {
    to_vec(&json!({"error": {"code": e.code.as_str(), "message": e.message}}))
}

/// OpenAI's error `type` for a status, the field its SDKs dispatch on.
pub fn openai_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        409 => "conflict_error",
        429 => "rate_limit_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    }
}

fn openai(e: &ApiError) -> Vec<u8> {
    to_vec(&json!({"error": {
        "message": e.message,
        "type": openai_type(e.status()),
        "param": e.field.as_deref(),
        "code": e.code.as_str(),
    }}))
}

fn soat_hint(code: Code) -> &'static str {
    match code {
        Code::ApiKeyProjectScope => return "This key acts only in its own project: name that project, or use an account key (al_).",
        Code::AiProviderHasDependents => {
            return "Delete or repoint the agents and chats meta.agent_ids and meta.chat_ids name, then delete the provider."
        }
        Code::ProjectHasDependents => return "Delete the project's records first, or send ?force=true to delete them with it.",
        Code::ModelListingUnsupported => return "Name the model yourself: this provider kind cannot list the models it serves.",
        Code::AiProviderMisconfigured => return "Set what the message names on the provider (PATCH /api/v1/ai-providers/{id}).",
        _ => {}
    }
    match code.status().as_u16() {
        400 | 413 | 422 => "Fix the request as the message says and send it again.",
        401 => "Send a valid key as Authorization: Bearer <key>.",
        403 => "Use a key that is allowed to act here.",
        404 => "Check the id and that it belongs to this key's account and project.",
        405 => "Use one of the methods the Allow header lists.",
        408 => "Send the whole request body without pausing.",
        429 => "Wait for the time retry-after gives, then retry.",
        500 => "Retry later; the server logged the failure.",
        _ => "Retry later, or ask the server's operator.",
    }
}

/// Where SOAT errors point for their documentation: the server's own `/docs`, at the
/// address `set_docs_base` was given at start-up.
static DOCS_BASE: OnceLock<String> = OnceLock::new();

pub fn set_docs_base(base: &str) {
    let _ = DOCS_BASE.set(base.trim_end_matches('/').to_owned());
}

fn soat(e: &ApiError) -> Vec<u8> {
    let code = e.code.soat();
    let base = DOCS_BASE.get().map_or("http://127.0.0.1:4400", String::as_str);
    let mut meta = json!({"quarry_code": e.code.as_str()});
    if let Some(field) = &e.field {
        meta["field"] = Value::from(field.as_ref());
    }
    for (k, v) in e.meta.iter().flat_map(|m| m.iter()) {
        meta[k.as_str()] = v.clone();
    }
    to_vec(&json!({"error": {
        "code": code,
        "message": e.message,
        "hint": soat_hint(e.code),
        "docs_url": format!("{base}/docs#error-{}", code.to_ascii_lowercase().replace('_', "-")),
        "meta": meta,
    }}))
}

/// The plugin (a FastAPI app): what the request got wrong is a 422 `HTTPValidationError`
/// whose `loc` walks from `body` to the field; anything else keeps its status with
/// `{"detail": message}` (FastAPI's `HTTPException`), plus our code.
fn plugin(e: &ApiError) -> (StatusCode, Vec<u8>) {
    if e.status() != StatusCode::BAD_REQUEST {
        return (e.status(), to_vec(&json!({"detail": e.message, "code": e.code.as_str()})));
    }
    let kind = if e.code == Code::InvalidJson { "json_invalid" } else { "value_error" };
    let detail = json!([{"loc": loc(e.field.as_deref()), "msg": e.message, "type": kind}]);
    (StatusCode::UNPROCESSABLE_ENTITY, to_vec(&json!({"detail": detail})))
}

/// `queries[0].top_k` → `["body", "queries", 0, "top_k"]`.
fn loc(field: Option<&str>) -> Vec<Value> {
    let mut out = vec![Value::from("body")];
    for part in field.unwrap_or("").split('.').filter(|p| !p.is_empty() && *p != "?") {
        let mut rest = part;
        if let Some(i) = rest.find('[') {
            if i > 0 {
                out.push(Value::from(&rest[..i]));
            }
            rest = &rest[i..];
            while let Some(end) = rest.find(']') {
                let inner = &rest[1..end];
                out.push(inner.parse::<u64>().map(Value::from).unwrap_or_else(|_| Value::from(inner)));
                rest = &rest[end + 1..];
                if !rest.starts_with('[') {
                    break;
                }
            }
        } else {
            out.push(Value::from(rest));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(r: Reply) -> (u16, Value) {
        use http_body_util::BodyExt;
        let status = r.status().as_u16();
        let bytes = futures_lite::future::block_on(r.into_body().collect()).ok().unwrap().to_bytes();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[test]
    fn paths_belong_to_their_surfaces() {
        assert_eq!(Surface::of_path("/v1/chat/completions"), Surface::OpenAi);
        assert_eq!(Surface::of_path("/v1/models/x"), Surface::OpenAi);
        assert_eq!(Surface::of_path("/v1/modelsx"), Surface::AgentLex);
        assert_eq!(Surface::of_path("/api/v1/agents"), Surface::Soat);
        assert_eq!(Surface::of_path("/sub/query"), Surface::Plugin);
        assert_eq!(Surface::of_path("/query"), Surface::Plugin);
        assert_eq!(Surface::of_path("/queryx"), Surface::AgentLex);
        assert_eq!(Surface::of_path("/v1/collections"), Surface::AgentLex);
    }

    #[test]
    fn each_surface_has_its_shape() {
        let e = ApiError::new(Code::InvalidKey, "no");
        assert_eq!(body(Surface::AgentLex.error(&e)), (401, json!({"error": {"code": "invalid_key", "message": "no"}})));
        let (s, v) = body(Surface::OpenAi.error(&e));
        assert_eq!((s, v["error"]["type"].as_str(), v["error"]["param"].is_null()), (401, Some("authentication_error"), true));
        let (s, v) = body(Surface::Soat.error(&e));
        assert_eq!((s, v["error"]["code"].as_str()), (401, Some("UNAUTHORIZED")));
        assert!(v["error"]["hint"].is_string() && v["error"]["docs_url"].as_str().unwrap().starts_with("http"));
        let (s, v) = body(Surface::Plugin.error(&e));
        assert_eq!((s, v["detail"].as_str()), (401, Some("no")));
    }

    #[test]
    fn plugin_validation_errors_are_422_with_a_location() {
        let e = ApiError::new(Code::InvalidQuery, "top_k must be positive").at("queries[0].top_k");
        let (s, v) = body(Surface::Plugin.error(&e));
        assert_eq!(s, 422);
        assert_eq!(v["detail"][0]["loc"], json!(["body", "queries", 0, "top_k"]));
        assert_eq!(v["detail"][0]["type"], "value_error");
        assert_eq!(loc(Some("a[1][2].b")), vec![json!("body"), json!("a"), json!(1), json!(2), json!("b")]);
    }
}
