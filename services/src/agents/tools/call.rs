//! Running a tool: the preset parameters merged under the caller's input, the input
//! checked against `parameters`, the type's executor, then `output_mapping`.

use std::collections::BTreeMap;

use bytes::Bytes;
use futures_util::future::LocalBoxFuture;
use hyper::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use hyper::{HeaderMap, Method, Uri};
use serde_json::{json, Map, Value};

use super::def::{Kind, ToolDef, SEARCH_ACTION, WRITE_MEMORY_ACTION};
use super::outbound::{self, Outbound, OutboundError, Timeouts};
use super::template::{tokens, Token};
use super::{logic, schema, ToolError, Tools};
use crate::agents::Project;
use crate::llm::secret::Secret;
use crate::scrub::Scrubber;
use crate::search::Caller;

/// How deep pipelines may call pipelines.
pub const MAX_DEPTH: usize = 4;
/// The prefix of the headers that forward `tool_context` keys.
pub const CONTEXT_HEADER_PREFIX: &str = "X-Soat-Context-";
/// Forwarded whatever a tool's `context_keys` says.
const IDENTITY_KEYS: &[&str] = &["sessionId", "actorId", "actorExternalId"];

/// What a call runs with: the shard's sessions and the services builtin actions use.
pub struct Env<'a> {
    pub search: &'a crate::search::Service,
    pub records: &'a std::sync::Arc<crate::store::Records>,
    pub embedders: &'a std::cell::RefCell<Vec<quarry_index::embed::Embedder>>,
    pub caller: Caller<'a>,
    pub timeouts: Timeouts,
}

/// One call as its type's executor runs it: the definition, the merged and checked
/// input, and how deep in pipelines it is.
#[derive(Clone, Copy)]
pub(super) struct Exec<'c> {
    pub env: &'c Env<'c>,
    pub p: Project<'c>,
    pub def: &'c ToolDef,
    pub action: Option<&'c str>,
    pub input: &'c Value,
    pub context: &'c BTreeMap<String, String>,
    pub depth: usize,
    /// Sent as `Idempotency-Key` on an http call (a generation's tool call).
    pub idempotency_key: Option<&'c str>,
}

/// One call: the action (builtin), the input, and the caller's `tool_context`.
#[derive(Debug, Clone, Default)]
pub struct CallInput {
    pub action: Option<String>,
    pub input: Map<String, Value>,
    pub context: BTreeMap<String, String>,
    /// A generation's tool call: `<generation_id>:<tool_call_id>`, sent as the
    /// `Idempotency-Key` header of an http call so a step re-run after a crash does
    /// not repeat its side effect at a service that honours the key.
    pub idempotency_key: Option<String>,
}

impl Tools {
    /// Runs `def` (a stored tool's, an inline binding's, a pipeline step's).
    pub fn run<'a>(
        &'a self,
        env: &'a Env<'a>,
        p: Project<'a>,
        def: &'a ToolDef,
        call: CallInput,
        depth: usize,
    ) -> LocalBoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            if depth == 0 {
                check_context(&call.context)?;
            }
            let mut input = def.preset_parameters.clone().unwrap_or_default();
            input.extend(call.input);
            let input = Value::Object(input);
            if let Some(params) = &def.parameters {
                schema::check_input(params, &input)?;
            }
            let CallInput { action, context, idempotency_key, .. } = call;
            let x =
                Exec { env, p, def, action: action.as_deref(), input: &input, context: &context, depth, idempotency_key: idempotency_key.as_deref() };
            let output = match def.kind {
                Kind::Client => return Err(ToolError::NotSupported("client")),
                Kind::Mcp => self.mcp(&x).await?,
                Kind::Http => self.http(&x).await?,
                Kind::Builtin => builtin(&x).await?,
                Kind::Pipeline => self.pipeline(&x).await?,
            };
            Ok(match &def.output_mapping {
                Some(m) => logic::eval(&Value::Object(m.clone()), &json!({"output": output, "input": input})),
                None => output,
            })
        })
    }

    async fn http(&self, x: &Exec<'_>) -> Result<Value, ToolError> {
        let Exec { env, p, def, input, context, idempotency_key, .. } = *x;
        let e = def.execute.as_ref().ok_or_else(|| ToolError::Invalid("an http tool needs execute.url".into()))?;
        let mut args = input.as_object().cloned().unwrap_or_default();
        let shown_url = fill_path(&e.url, &mut args);
        let mut revealed = Vec::new();
        let url = self.fill(p, &shown_url, None, &mut revealed)?;
        let method = e.method();
        let fail = |message: String, status: Option<u16>, body: String| ToolError::Http {
            message,
            status,
            body,
            url: shown_url.clone(),
            method: method.clone(),
        };
        let (uri, body) = request_parts(&url, &method, &args).map_err(|m| fail(m, None, String::new()))?;
        let mut headers = self.headers(p, def, e.headers.as_ref(), context, &mut revealed, !body.is_empty())?;
        if let Some(key) = idempotency_key {
            insert(&mut headers, "idempotency-key", key)?;
        }
        let req = Outbound { method: Method::from_bytes(method.as_bytes()).expect("checked on write"), uri, headers, body };
        let scrubber = scrubber(&revealed);
        let answer = outbound::send(req, env.timeouts, &self.remote, &self.trust).await.map_err(|e| match e {
            OutboundError::Refused => ToolError::Refused { url: shown_url.clone(), method: method.clone() },
            e => fail(scrubber.scrub(&e.to_string()), None, String::new()),
        })?;
        let text = scrubber.scrub(&String::from_utf8_lossy(&answer.body));
        if !answer.status.is_success() {
            let status = answer.status.as_u16();
            return Err(fail(format!("the tool's target answered {status}"), Some(status), text));
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        Ok(answer_value(text, &scrubber))
    }

    /// `text` with its references resolved: secrets always, context keys only where
    /// `context` is given (headers); what was revealed is remembered for scrubbing.
    pub(super) fn fill(
        &self,
        p: Project<'_>,
        text: &str,
        context: Option<&BTreeMap<String, String>>,
        revealed: &mut Vec<Secret>,
    ) -> Result<String, ToolError> {
        let mut out = String::with_capacity(text.len());
        for t in tokens(text) {
            match t {
                Token::Text(s) => out.push_str(s),
                Token::Secret(id) => {
                    let v = self.secrets.reveal(p, id)?;
                    out.push_str(v.expose());
                    revealed.push(v);
                }
                Token::Context(key) => match context {
                    Some(c) => out.push_str(context_value(c, key).ok_or_else(|| ToolError::MissingContext(key.to_owned()))?),
                    None => return Err(ToolError::Template("{{context:…}} is allowed only in header values".into())),
                },
                Token::Invalid(raw) => return Err(ToolError::Template(format!("{raw} is not a reference"))),
            }
        }
        Ok(out)
    }

    pub(super) fn headers(
        &self,
        p: Project<'_>,
        def: &ToolDef,
        templates: Option<&BTreeMap<String, String>>,
        context: &BTreeMap<String, String>,
        revealed: &mut Vec<Secret>,
        json_body: bool,
    ) -> Result<HeaderMap, ToolError> {
        let mut out = HeaderMap::new();
        if json_body {
            out.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        for (key, value) in context {
            let listed = |keys: &[String]| keys.iter().any(|k| k.eq_ignore_ascii_case(key));
            let allowed = def.context_keys.as_deref().is_none_or(listed) || IDENTITY_KEYS.iter().any(|k| k.eq_ignore_ascii_case(key));
            if allowed {
                insert(&mut out, &format!("{CONTEXT_HEADER_PREFIX}{key}"), value)?;
            }
        }
        for (name, template) in templates.into_iter().flatten() {
            let value = self.fill(p, template, Some(context), revealed)?;
            insert(&mut out, name, &value)?;
        }
        Ok(out)
    }

    async fn pipeline(&self, x: &Exec<'_>) -> Result<Value, ToolError> {
        let Exec { env, p, def, input, context, depth, .. } = *x;
        if depth >= MAX_DEPTH {
            return Err(ToolError::Depth(MAX_DEPTH));
        }
        let pipeline = def.pipeline.as_ref().ok_or_else(|| ToolError::PipelineStep("a pipeline tool needs pipeline.steps".into()))?;
        let mut steps = Map::new();
        let mut last = Value::Null;
        for s in &pipeline.steps {
            let data = json!({"input": input, "steps": steps});
            let step_input = s.input.as_ref().map_or(Value::Object(Map::new()), |i| logic::eval(i, &data));
            let Value::Object(step_input) = step_input else {
                return Err(ToolError::PipelineStep(format!("step {:?}: its input must evaluate to an object", s.id)));
            };
            let failed = |e: ToolError| ToolError::StepFailed { step: s.id.clone(), source: Box::new(e) };
            let stored;
            let step_def = match (&s.tool_id, &s.tool) {
                (Some(id), _) => {
                    stored = self.lookup_in(p, id).and_then(|t| t.ok_or_else(|| ToolError::NotFound(id.clone()))).map_err(failed)?;
                    &stored.def
                }
                (None, Some(t)) => t.as_ref(),
                (None, None) => return Err(ToolError::PipelineStep(format!("step {:?} names no tool", s.id))),
            };
            let call = CallInput {
                action: s.action.clone(),
                input: step_input,
                context: context.clone(),
                idempotency_key: x.idempotency_key.map(|k| format!("{k}:{}", s.id)),
            };
            last = self.run(env, p, step_def, call, depth + 1).await.map_err(failed)?;
            steps.insert(s.id.clone(), last.clone());
        }
        Ok(match &pipeline.output {
            Some(o) => logic::eval(o, &json!({"input": input, "steps": steps})),
            None => last,
        })
    }
}

/// A `tool_context` value by key. Keys are header names, so they match whatever
/// their case (two keys that differ only in case are refused up front).
fn context_value<'c>(c: &'c BTreeMap<String, String>, key: &str) -> Option<&'c str> {
    c.get(key).or_else(|| c.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v)).map(String::as_str)
}

/// Every key usable as a header name, and no two the same header.
pub fn check_context(c: &BTreeMap<String, String>) -> Result<(), ToolError> {
    let mut seen = std::collections::HashSet::new();
    for key in c.keys() {
        super::template::check_context_key(key)?;
        if !seen.insert(key.to_ascii_lowercase()) {
            return Err(ToolError::ContextKey(format!("tool_context keys {key:?} and another differ only in case: they would be the same header")));
        }
    }
    Ok(())
}

fn insert(h: &mut HeaderMap, name: &str, value: &str) -> Result<(), ToolError> {
    let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| ToolError::ContextKey(format!("{name:?} is not a valid header name")))?;
    let v = HeaderValue::from_str(value).map_err(|_| ToolError::Invalid(format!("the value of header {name} is not a valid header value")))?;
    h.append(n, v);
    Ok(())
}

/// `url` with each `{param}` replaced by that argument, percent-encoded, and taken
/// out of `args` (so it is not sent again in the query or body).
fn fill_path(url: &str, args: &mut Map<String, Value>) -> String {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(at) = rest.find('{') {
        if rest[at..].starts_with("{{") {
            let end = rest[at..].find("}}").map_or(rest.len(), |e| at + e + 2);
            out.push_str(&rest[..end]);
            rest = &rest[end..];
            continue;
        }
        let Some(len) = rest[at..].find('}') else { break };
        let name = &rest[at + 1..at + len];
        out.push_str(&rest[..at]);
        match args.remove(name) {
            Some(v) => out.push_str(&encode(&scalar(&v))),
            None => out.push_str(&rest[at..at + len + 1]),
        }
        rest = &rest[at + len + 1..];
    }
    out.push_str(rest);
    out
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// RFC 3986 unreserved characters as they are; everything else percent-encoded.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The URI and body: for GET, HEAD, DELETE and OPTIONS the remaining arguments go in
/// the query string; otherwise they are the JSON body.
fn request_parts(url: &str, method: &str, args: &Map<String, Value>) -> Result<(Uri, Bytes), String> {
    let in_query = matches!(method, "GET" | "HEAD" | "DELETE" | "OPTIONS");
    let mut url = url.to_owned();
    let mut body = Bytes::new();
    if in_query && !args.is_empty() {
        let pairs: Vec<String> = args.iter().map(|(k, v)| format!("{}={}", encode(k), encode(&scalar(v)))).collect();
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(&pairs.join("&"));
    } else if !in_query {
        body = Bytes::from(serde_json::to_vec(args).expect("JSON serializes"));
    }
    let uri: Uri = url.parse().map_err(|_| "the tool's URL, filled in, is not a valid URL".to_owned())?;
    Ok((uri, body))
}

/// `text` with every revealed secret value replaced in every spelling an answer can give
/// it ([`crate::scrub`]: raw, JSON-escaped, `\u`-escaped, percent-encoded; any length),
/// so a target that echoes a credential cannot hand it to the caller (or the model).
pub(super) fn scrubber(revealed: &[Secret]) -> Scrubber {
    Scrubber::new(revealed.iter().map(Secret::expose))
}

/// A target's answer as JSON when it is JSON (whatever its content type says), else
/// as text; scrubbed again once decoded, since JSON may spell a secret any way.
pub(super) fn answer_value(text: String, scrubber: &Scrubber) -> Value {
    match serde_json::from_str::<Value>(&text) {
        Ok(mut v) => {
            scrubber.scrub_value(&mut v);
            v
        }
        Err(_) => Value::String(text),
    }
}

/// Quarry's own actions.
async fn builtin(x: &Exec<'_>) -> Result<Value, ToolError> {
    let Exec { env, p, def, action, input, .. } = *x;
    let action = action.ok_or_else(|| ToolError::Invalid("action is required for builtin tools".into()))?;
    if !def.actions.iter().flatten().any(|a| a == action) {
        return Err(ToolError::Invalid(format!("action {action:?} is not available on this tool")));
    }
    match action {
        SEARCH_ACTION => super::builtin::search(env, input).await,
        WRITE_MEMORY_ACTION => super::builtin::write_memory(env, p, input).await,
        super::def::AGENT_ACTION => Err(ToolError::NotSupported("agent (agents:CreateAgentGeneration)")),
        other => Err(ToolError::NotImplemented(format!("builtin action {other:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_parameters_are_encoded_and_consumed() {
        let mut args = json!({"id": "a b/c", "q": 1}).as_object().unwrap().clone();
        let url = fill_path("http://h/users/{id}?k={{secret:sec_x}}&m={missing}", &mut args);
        assert_eq!(url, "http://h/users/a%20b%2Fc?k={{secret:sec_x}}&m={missing}");
        assert_eq!(args.len(), 1);
        let (uri, body) = request_parts("http://h/x", "GET", &args).unwrap();
        assert_eq!((uri.to_string().as_str(), body.len()), ("http://h/x?q=1", 0));
        let (uri, body) = request_parts("http://h/x", "POST", &args).unwrap();
        assert_eq!((uri.to_string().as_str(), &body[..]), ("http://h/x", &b"{\"q\":1}"[..]));
    }

    #[test]
    fn context_keys_are_header_names_and_unique_whatever_their_case() {
        let ctx = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>();
        assert!(check_context(&ctx(&[("userToken", "a"), ("tenant", "b")])).is_ok());
        assert!(matches!(check_context(&ctx(&[("userToken", "a"), ("usertoken", "b")])), Err(ToolError::ContextKey(_))));
        assert!(matches!(check_context(&ctx(&[("bad key", "a")])), Err(ToolError::ContextKey(_))));
        let c = ctx(&[("usertoken", "a")]);
        assert_eq!(context_value(&c, "userToken"), Some("a"), "headers arrive lower-case");
        assert_eq!(context_value(&c, "other"), None);
    }

    #[test]
    fn echoed_secrets_are_scrubbed() {
        assert_eq!(scrubber(&[Secret::new("abcd1234")]).scrub("token=abcd1234;"), "token=[secret];");
    }
}
