//! The OpenAPI documents the binary serves, and schemathesis over their read-only operations.
//!
//! The OpenAPI documents as the real binary serves them: the embedded bytes
//! (`quarry::api::openapi::DOCUMENTS`), with no key, as JSON; and schemathesis over
//! the served copies (`tests/schemathesis/served.sh`) on the read-only operations.
//! The documents' agreement with the route table is a unit test beside them
//! (`src/api/openapi/tests.rs`).

use std::path::PathBuf;
use std::process::Command;

use quarry::api::openapi::{DOCUMENTS, GATEWAY};
use serde_json::{json, Value};

use super::scripted_llm::{self, Scripted};
use super::server::TestServer;

/// Panics naming every violation when `value` does not match the schema `name` of the
/// OpenAPI 3.1 document `doc` (its schemas are JSON Schema 2020-12).
fn holds(doc: &str, name: &str, value: &Value) {
    let doc: Value = serde_json::from_str(doc).expect("JSON");
    assert!(doc["components"]["schemas"].get(name).is_some(), "no schema {name}");
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": format!("#/components/schemas/{name}"),
        "components": doc["components"],
    });
    let validator = jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("schema {name}: {e}"));
    let errors: Vec<String> = validator.iter_errors(value).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{name} violated: {errors:#?}\nin {value}");
}

/// The gateway's POST answers, which schemathesis does not send (they call a model):
/// a request as the document describes it, answered with text, with tool calls, and
/// refused, each in the document's shape; and the model list.
#[test]
fn the_gateways_answers_are_as_its_document_says() {
    let llm = Scripted::start();
    llm.on("weather", scripted_llm::tools(&[("get_weather", json!({"city": "Paris"}))])).otherwise(scripted_llm::text("Hello there."));
    let s = TestServer::with_config(&llm.provider_config());
    let (_, key) = s.signup("gateway-doc@example.com");
    let ask = |body: &Value| {
        holds(GATEWAY, "ChatCompletionRequest", body);
        s.request("POST", "/v1/chat/completions", Some(&key), Some(&body.to_string()))
    };
    let r = ask(
        &json!({"model": "fake/reader", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], "temperature": 0.2}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    holds(GATEWAY, "ChatCompletion", &r.json());
    let tool = json!({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}});
    let r = ask(
        &json!({"model": "fake/reader", "messages": [{"role": "user", "content": "The weather in Paris?"}], "tools": [tool], "tool_choice": "auto"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let answer = r.json();
    holds(GATEWAY, "ChatCompletion", &answer);
    assert_eq!(answer["choices"][0]["finish_reason"], "tool_calls", "{answer}");
    let r = ask(&json!({"model": "nobody/nothing", "messages": [{"role": "user", "content": "Hi"}]}));
    assert_eq!(r.status, 404, "{}", r.text());
    holds(GATEWAY, "Error", &r.json());
    let r = s.get("/v1/models", Some(&key));
    assert_eq!(r.status, 200, "{}", r.text());
    holds(GATEWAY, "ModelList", &r.json());
}

#[test]
fn the_documents_are_served_as_embedded_without_a_key() {
    let s = TestServer::start();
    for (path, embedded) in DOCUMENTS {
        let r = s.get(path, None);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        assert!(r.header("content-type").is_some_and(|t| t.starts_with("application/json")), "{path}: {:?}", r.header("content-type"));
        assert!(r.body == embedded.as_bytes(), "{path}: the served bytes differ from the embedded document");
        let doc: Value = r.json();
        assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with('3')), "{path}: {}", doc["openapi"]);
        assert!(doc["paths"].as_object().is_some_and(|p| !p.is_empty()), "{path}: no paths");
    }
    // A key is not needed, and a wrong one is not looked at: the route is public.
    let r = s.get("/openapi.json", Some("al_not_a_key"));
    assert_eq!(r.status, 200, "{}", r.text());
    // The document lists itself, so a client that found it can find the others.
    let doc: Value = s.get("/openapi.json", None).json();
    for (path, _) in DOCUMENTS {
        assert!(doc["paths"][path]["get"]["security"] == Value::Array(vec![]), "{path} is not listed as public in /openapi.json");
    }
}

/// `tests/schemathesis/served.sh`: each served document under schemathesis, GETs only
/// (and the plugin's POST /query, a read), over seeded records; no server error, no
/// response outside its schema. Skipped without the test venv (a failure under CI).
#[test]
fn the_served_documents_hold_under_schemathesis() {
    let Some(st) = super::schema::schemathesis() else { return };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis/served.sh");
    let out =
        Command::new("bash").arg(&script).env("ST_BIN", super::server::bin()).env("ST_TIME_LIMIT", "60").output().expect("bash runs the script");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{} failed ({}):\n{stdout}\n{stderr}", st.display(), out.status);
    let runs: Vec<&str> = stdout.split("[schemathesis] document /").skip(1).collect();
    let expected = ["openapi.json", "openapi/agents.json", "openapi/retrieval.json", "openapi/gateway.json"];
    assert_eq!(runs.len(), expected.len(), "{stdout}");
    for (doc, run) in expected.iter().zip(&runs) {
        assert!(run.starts_with(doc), "expected {doc}'s run:\n{run}");
        let (generated, all_passed) = super::schema::generated_and_passed(run).unwrap_or_else(|| panic!("no test-case count for {doc} in:\n{run}"));
        assert!(generated >= 5 && all_passed, "{doc}: {generated} cases:\n{run}");
    }
}

/// `tests/browser/docs_flow.py`: /docs renders each of the four documents whole in the
/// bundled Swagger UI (every operation, every schema, no parser error), with no host
/// but 127.0.0.1 reachable. Skipped as the other browser flows are without chromium.
#[test]
fn browser_reference_page_renders_every_document_whole() {
    let Some(python) = super::browser::browser() else { return };
    let s = TestServer::start();
    super::browser::run_flow(&python, "docs_flow", &s, &[], std::time::Duration::from_secs(180));
}
