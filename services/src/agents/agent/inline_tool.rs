//! An inline tool in a binding (`{"tool": CreateToolRequest}`), checked as far as an
//! agent write needs: its name and type (never `pipeline`), its `context_keys`, and no
//! literal credential in a credential field (refused on write, masked on read as
//! `{"no_echo": true}`, a `{{secret:…}}` reference left readable).
//!
//! The tools module owns `CreateToolRequest`: [`check`] ends with its validator, so a
//! binding and `POST /api/v1/tools` refuse the same things.

use serde_json::{Map, Value};

use super::error::AgentError;
use super::validate::check_context_keys;

const TYPES: [&str; 4] = ["http", "client", "mcp", "builtin"];

/// The `auth` fields that hold a credential.
const AUTH_SECRETS: [&str; 4] = ["access_key_id", "secret_access_key", "session_token", "credentials"];

/// Checks one inline tool at `field` (`tool_bindings[2].tool`).
pub fn check(field: &str, tool: &Map<String, Value>) -> Result<(), AgentError> {
    match tool.get("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => {}
        _ => return Err(AgentError::invalid(format!("{field}.name"), format!("{field}.name is required: a non-empty string."))),
    }
    match tool.get("type") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t == "pipeline" => {
            return Err(AgentError::invalid(
                format!("{field}.type"),
                format!("{field}.type: an inline tool cannot be a pipeline; create it as a tool and bind it by tool_id."),
            ))
        }
        Some(Value::String(t)) if TYPES.contains(&t.as_str()) => {}
        Some(other) => {
            return Err(AgentError::invalid(format!("{field}.type"), format!("{field}.type must be one of http, client, mcp, builtin, not {other}.")))
        }
    }
    match tool.get("context_keys") {
        None | Some(Value::Null) => {}
        Some(Value::Array(keys)) => {
            let keys: Option<Vec<&str>> = keys.iter().map(Value::as_str).collect();
            let keys = keys
                .ok_or_else(|| AgentError::invalid(format!("{field}.context_keys"), format!("{field}.context_keys must be an array of strings.")))?;
            check_context_keys(&format!("{field}.context_keys"), keys.into_iter())?;
        }
        Some(_) => return Err(AgentError::invalid(format!("{field}.context_keys"), format!("{field}.context_keys must be an array of strings."))),
    }
    if let Some((path, _)) = credential_paths(tool).into_iter().find(|(_, v)| is_literal(v)) {
        return Err(AgentError::LiteralCredential { field: format!("{field}.{path}") });
    }
    tools_rules(field, tool)
}

/// What `POST /api/v1/tools` refuses, the tools module's own check (`agents::tools::def`),
/// without the store: the secrets a binding names are looked up when it runs.
fn tools_rules(field: &str, tool: &Map<String, Value>) -> Result<(), AgentError> {
    use crate::agents::tools::{def, ToolError};
    let mut body = tool.clone();
    body.remove("project_id");
    let d = def::parse(Value::Object(body)).map_err(|e| AgentError::invalid(field, e.to_string()))?;
    def::check(&d).map_err(|e| match e {
        ToolError::LiteralCredential(_) => AgentError::LiteralCredential { field: field.to_owned() },
        e => AgentError::invalid(field, e.to_string()),
    })
}

/// The tool as read back: every literal credential replaced by `{"no_echo": true}`.
pub fn masked(tool: &Map<String, Value>) -> Map<String, Value> {
    let mut out = tool.clone();
    for (path, value) in credential_paths(tool) {
        if is_literal(&value) {
            set_path(&mut out, &path, serde_json::json!({"no_echo": true}));
        }
    }
    out
}

/// Whether any credential field of the tool holds a literal (a version holding one
/// cannot be restored or released).
pub fn has_literal_credential(tool: &Map<String, Value>) -> bool {
    credential_paths(tool).iter().any(|(_, v)| is_literal(v))
}

/// A value with no `{{secret:…}}` or `{{context:…}}` reference in it is a literal.
fn is_literal(v: &Value) -> bool {
    match v {
        Value::String(s) => !s.trim().is_empty() && !s.contains("{{secret:") && !s.contains("{{context:"),
        Value::Object(o) => o.get("no_echo") != Some(&Value::Bool(true)) && !o.is_empty(),
        Value::Null => false,
        _ => true,
    }
}

/// A header that carries a credential by its name.
fn credential_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["authorization", "cookie", "token", "secret", "password", "api-key", "apikey", "api_key", "auth"].iter().any(|w| n.contains(w))
}

/// `(dotted path, value)` of every credential field.
fn credential_paths(tool: &Map<String, Value>) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for section in ["execute", "mcp"] {
        let Some(Value::Object(sec)) = tool.get(section) else { continue };
        if let Some(Value::Object(headers)) = sec.get("headers") {
            for (name, v) in headers.iter().filter(|(n, _)| credential_header(n)) {
                out.push((format!("{section}.headers.{name}"), v.clone()));
            }
        }
        if let Some(Value::Object(auth)) = sec.get("auth") {
            for (name, v) in auth.iter().filter(|(n, _)| AUTH_SECRETS.contains(&n.as_str())) {
                out.push((format!("{section}.auth.{name}"), v.clone()));
            }
        }
    }
    out
}

fn set_path(root: &mut Map<String, Value>, path: &str, value: Value) {
    // Paths are `section.group.name`; a header name may itself hold dots.
    let mut parts = path.splitn(3, '.');
    let (Some(a), Some(b), Some(c)) = (parts.next(), parts.next(), parts.next()) else { return };
    if let Some(Value::Object(sec)) = root.get_mut(a) {
        if let Some(Value::Object(group)) = sec.get_mut(b) {
            group.insert(c.to_owned(), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn literal_credentials_are_refused_and_masked_references_are_not() {
        let bad = tool(json!({"name": "t", "execute": {"url": "https://x", "headers": {"Authorization": "Bearer abc123", "Accept": "json"}}}));
        let e = check("tool_bindings[0].tool", &bad).unwrap_err();
        assert!(matches!(&e, AgentError::LiteralCredential { field } if field == "tool_bindings[0].tool.execute.headers.Authorization"), "{e}");
        let read = masked(&bad);
        assert_eq!(read["execute"]["headers"]["Authorization"], json!({"no_echo": true}));
        assert_eq!(read["execute"]["headers"]["Accept"], "json");
        let good = tool(
            json!({"name": "t", "execute": {"url": "https://x", "headers": {"Authorization": "Bearer {{secret:sec_1}}", "X-User": "{{context:user}}"}}}),
        );
        check("t", &good).unwrap();
        assert_eq!(masked(&good), good);
        let aws = tool(json!({"name": "t", "execute": {"url": "https://x", "auth": {"type": "aws_sigv4", "secret_access_key": "AKIA..."}}}));
        assert!(matches!(check("t", &aws), Err(AgentError::LiteralCredential { .. })));
    }

    #[test]
    fn names_types_and_context_keys() {
        assert!(check("t", &tool(json!({"type": "http"}))).is_err(), "a name is required");
        assert!(check("t", &tool(json!({"name": "p", "type": "pipeline"}))).is_err());
        assert!(check("t", &tool(json!({"name": "p", "type": "grpc"}))).is_err());
        assert!(matches!(check("t", &tool(json!({"name": "p", "context_keys": ["a b"]}))), Err(AgentError::ToolContextKey { .. })));
        check("t", &tool(json!({"name": "p", "type": "client", "context_keys": ["userId"]}))).unwrap();
    }
}
