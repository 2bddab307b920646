//! `mcp` tools: one call is one MCP `tools/call` over the Streamable HTTP transport
//! (MCP 2025-03-26 and later): `initialize`, `notifications/initialized`, then
//! `tools/call`, each a JSON-RPC POST to `mcp.url` whose answer is JSON or an event
//! stream; the server's `Mcp-Session-Id` is sent back on the later requests. The
//! action must be in `actions` when that is set and never in `denied_actions`.
//! The older HTTP+SSE transport (a `GET` event stream with a separate POST endpoint)
//! is not spoken: such a server answers the POST with an error, reported as such.
//! Every call opens its own session (three round trips); the result is MCP's
//! `CallToolResult` as the server wrote it (`content`, `structuredContent`, `isError`).
//! A generation's call carries its idempotency key (`<generation>:<step>:<call>`, the
//! one an http tool sends) as the `tools/call` POST's `Idempotency-Key` header and as
//! `params._meta["io.quarry/idempotency-key"]`, so a step re-sent after a crash is
//! recognisable by the server.

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue, ACCEPT};
use hyper::{HeaderMap, Method, Uri};
use serde_json::{json, Value};

use super::call::{scrubber, Env, Exec};
use super::outbound::{self, Outbound, OutboundError};
use super::{ToolError, Tools};
use crate::scrub::Scrubber;

const PROTOCOL_VERSION: &str = "2025-03-26";
const SESSION: &str = "mcp-session-id";
/// The `_meta` key of a `tools/call` that carries a generation's idempotency key (a
/// prefixed name, as MCP asks of keys it does not define).
pub const IDEMPOTENCY_META: &str = "io.quarry/idempotency-key";

/// One MCP session, for one call.
struct Session<'a> {
    tools: &'a Tools,
    env: &'a Env<'a>,
    uri: Uri,
    shown_url: &'a str,
    headers: HeaderMap,
    /// The secrets the session sends, out of everything it passes on.
    scrubber: Scrubber,
    next_id: u64,
}

impl Tools {
    pub(super) async fn mcp(&self, x: &Exec<'_>) -> Result<Value, ToolError> {
        let Exec { env, p, def, action, input, context, idempotency_key, .. } = *x;
        let m = def.mcp.as_ref().ok_or_else(|| ToolError::Invalid("an mcp tool needs mcp.url".into()))?;
        let action = action.ok_or_else(|| ToolError::Invalid("action is required for mcp tools: the MCP tool to call".into()))?;
        let listed = def.actions.as_ref().is_none_or(|a| a.iter().any(|x| x == action));
        let denied = def.denied_actions.iter().flatten().any(|x| x == action);
        if !listed || denied {
            return Err(ToolError::Invalid(format!("action {action:?} is not available on this tool")));
        }
        let mut revealed = Vec::new();
        let url = self.fill(p, &m.url, None, &mut revealed)?;
        let uri: Uri = url.parse().map_err(|_| ToolError::Invalid("mcp.url, filled in, is not a valid URL".into()))?;
        let mut headers = self.headers(p, def, m.headers.as_ref(), context, &mut revealed, true)?;
        headers.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        let mut s = Session { tools: self, env, uri, shown_url: &m.url, headers, scrubber: scrubber(&revealed), next_id: 1 };
        let init =
            json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "quarry", "version": crate::version::VERSION}});
        s.request("initialize", init).await?;
        s.notify("notifications/initialized").await?;
        let mut params = json!({"name": action, "arguments": input});
        // issue 37: a generation's call carries its idempotency key as an http tool's
        // does, as the `Idempotency-Key` header of the `tools/call` POST, and in the
        // request's `_meta` (MCP's place for what a client adds to a request), so a
        // server behind a proxy that drops unknown headers still sees it.
        if let Some(key) = idempotency_key {
            let value = HeaderValue::from_str(key).map_err(|_| ToolError::Invalid("the idempotency key is not a header value".into()))?;
            s.headers.insert(HeaderName::from_static("idempotency-key"), value);
            params["_meta"] = json!({IDEMPOTENCY_META: key});
        }
        s.request("tools/call", params).await
    }
}

impl Session<'_> {
    fn fail(&self, message: String, status: Option<u16>, body: &str) -> ToolError {
        ToolError::Http { message, status, body: self.scrubber.scrub(body), url: self.shown_url.to_owned(), method: "POST".into() }
    }

    async fn post(&mut self, message: &Value) -> Result<(u16, HeaderMap, Bytes), ToolError> {
        let req = Outbound { method: Method::POST, uri: self.uri.clone(), headers: self.headers.clone(), body: Bytes::from(message.to_string()) };
        let a = outbound::send(req, self.env.timeouts, &self.tools.remote, &self.tools.trust).await.map_err(|e| match e {
            OutboundError::Refused => ToolError::Refused { url: self.shown_url.to_owned(), method: "POST".into() },
            e => self.fail(self.scrubber.scrub(&e.to_string()), None, ""),
        })?;
        if let Some(id) = a.headers.get(SESSION) {
            self.headers.insert(HeaderName::from_static(SESSION), id.clone());
        }
        if !a.status.is_success() {
            let body = String::from_utf8_lossy(&a.body).into_owned();
            return Err(self.fail(format!("the MCP server answered {}", a.status.as_u16()), Some(a.status.as_u16()), &body));
        }
        Ok((a.status.as_u16(), a.headers, a.body))
    }

    async fn notify(&mut self, method: &str) -> Result<(), ToolError> {
        self.post(&json!({"jsonrpc": "2.0", "method": method})).await.map(|_| ())
    }

    /// A JSON-RPC request; its `result`, or the server's error as a tool failure.
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, ToolError> {
        let id = self.next_id;
        self.next_id += 1;
        let (status, headers, body) = self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        let text = String::from_utf8_lossy(&body).into_owned();
        let stream = headers.get(hyper::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|c| c.starts_with("text/event-stream"));
        let answer = if stream { from_events(&text, id) } else { serde_json::from_str::<Value>(&text).ok().filter(|m| m["id"] == id) };
        let Some(answer) = answer else {
            return Err(self.fail(format!("the MCP server's answer to {method} is not its JSON-RPC response"), Some(status), &text));
        };
        if let Some(e) = answer.get("error") {
            let m = format!("the MCP server refused {method}: {} {}", e["code"], e["message"].as_str().unwrap_or(""));
            return Err(self.fail(self.scrubber.scrub(&m), Some(status), &text));
        }
        let result = answer.get("result").cloned().unwrap_or(Value::Null);
        let mut result = result;
        self.scrubber.scrub_value(&mut result);
        Ok(result)
    }
}

/// The JSON-RPC response with `id` among an event stream's `data:` events.
fn from_events(text: &str, id: u64) -> Option<Value> {
    let mut data = String::new();
    for line in text.lines().chain(std::iter::once("")) {
        if let Some(d) = line.strip_prefix("data:") {
            data.push_str(d.strip_prefix(' ').unwrap_or(d));
            data.push('\n');
        } else if line.is_empty() && !data.is_empty() {
            if let Ok(m) = serde_json::from_str::<Value>(data.trim_end()) {
                if m["id"] == id && (m.get("result").is_some() || m.get("error").is_some()) {
                    return Some(m);
                }
            }
            data.clear();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_response_is_found_among_the_events() {
        let text = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\ndata: \"result\":{\"content\":[]}}\n\n";
        assert_eq!(from_events(text, 2), Some(json!({"jsonrpc": "2.0", "id": 2, "result": {"content": []}})));
        assert_eq!(from_events(text, 3), None);
    }
}
