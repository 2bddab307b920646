//! Shared by the tests: answers checked against the AgentLex spec's JSON schemas.
//!
//! Answers checked against the AgentLex spec's own schemas (the vendored
//! `tests/data/specs/agentlex.openapi.json`) and against the document Quarry serves at
//! `/openapi.json` (`quarry::api::openapi::AGENTLEX`), with a JSON-schema validator.

use std::sync::OnceLock;

use serde_json::{json, Value};

fn spec() -> &'static Value {
    static SPEC: OnceLock<Value> = OnceLock::new();
    SPEC.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/specs/agentlex.openapi.json");
        serde_json::from_str(&std::fs::read_to_string(path).expect("the vendored AgentLex spec")).expect("the spec is JSON")
    })
}

fn served() -> &'static Value {
    static SERVED: OnceLock<Value> = OnceLock::new();
    SERVED.get_or_init(|| serde_json::from_str(quarry::api::openapi::AGENTLEX).expect("the served document is JSON"))
}

/// Panics naming every violation when `value` does not match the schema `name` of the
/// spec, or of the document Quarry serves.
pub fn check(name: &str, value: &Value) {
    for (whose, doc) in [("the spec", spec()), ("/openapi.json", served())] {
        assert!(doc["components"]["schemas"].get(name).is_some(), "{whose} has no schema {name}");
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$ref": format!("#/components/schemas/{name}"),
            "components": doc["components"],
        });
        let validator = jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{whose}'s schema {name}: {e}"));
        let errors: Vec<String> = validator.iter_errors(value).map(|e| format!("{} at {}", e, e.instance_path())).collect();
        assert!(errors.is_empty(), "{name} of {whose} violated: {errors:#?}\nin {value}");
    }
}

#[test]
fn the_check_catches_a_violation() {
    let wrong = json!({"id": "doc_1", "pages": 1, "chunks": 1, "chars": 3, "chunker": "prose", "embedder": "none", "format": "text", "meta": {}, "identifiers": {}});
    let caught = std::panic::catch_unwind(|| check("DocumentCreated", &wrong));
    assert!(caught.is_err(), "identifiers {{}} lacks total and counts, which the spec requires");
}
