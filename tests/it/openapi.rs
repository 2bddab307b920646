//! The OpenAPI documents as the real binary serves them: the embedded bytes
//! (`quarry::api::openapi::DOCUMENTS`), with no key, as JSON; and schemathesis over
//! the served copies (`tests/schemathesis/served.sh`) on the read-only operations.
//! The documents' agreement with the route table is a unit test beside them
//! (`src/api/openapi/tests.rs`).

use std::path::PathBuf;
use std::process::Command;

use quarry::api::openapi::DOCUMENTS;
use serde_json::Value;

use super::server::TestServer;

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
    let Some(st) = super::schema::schemathesis() else {
        assert!(std::env::var_os("CI").is_none(), "no schemathesis in the test venv under CI (ops/setup-llm-tests installs it)");
        eprintln!("skipped: no schemathesis in the test venv (ops/setup-llm-tests installs it)");
        return;
    };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis/served.sh");
    let out = Command::new("bash").arg(&script).env("ST_BIN", super::server::bin()).env("ST_TIME_LIMIT", "60").output().expect("bash runs the script");
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
