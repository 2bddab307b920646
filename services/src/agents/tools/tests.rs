use serde_json::json;

use super::*;
use crate::config::SecretsConfig;
use crate::llm::secret::Secret;

use crate::agents::scope::testing::{a, others};

fn service(dir: &std::path::Path) -> Tools {
    let records = Arc::new(Records::open(dir).unwrap());
    let secrets = Arc::new(Secrets::open(&SecretsConfig { key: None }, dir, records.clone()).unwrap());
    Tools::new(records, secrets, crate::llm::config::TlsRoots::Bundled, Arc::new(crate::net::egress::Policy::new(Vec::new())))
}

fn weather() -> Value {
    json!({
        "name": "get-weather",
        "type": "http",
        "description": "Fetches current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        "execute": {"url": "https://api.weather.example/v1/current?city={city}"}
    })
}

fn code(r: Result<Tool, ToolError>) -> Code {
    r.map(|_| ()).unwrap_err().code()
}

#[test]
fn crud_keeps_each_tool_in_its_project() {
    let dir = tempfile::tempdir().unwrap();
    let t = service(dir.path());
    let tool = t.create(&a(), weather()).unwrap();
    assert!(tool.record.id.starts_with("tool_"));
    let view = tool.view();
    assert_eq!(view["type"], "http");
    assert_eq!(view["project_id"], "proj_a");
    assert!(view["mcp"].is_null() && view["created_at"].is_string());
    assert_eq!(t.list(&a()).unwrap().len(), 1);
    let in_project = |acct: &str, proj: &str| crate::agents::refs::tool_in_project(&t.records, acct, proj, &tool.record.id).unwrap();
    assert!(in_project("acct_a", "proj_a") && !in_project("acct_a", "proj_a2") && !in_project("acct_b", "proj_a"));
    for other in others() {
        assert!(t.list(&other).unwrap().is_empty());
        assert!(matches!(t.lookup(&other, &tool.record.id), Err(ToolError::NotFound(_))));
        assert!(matches!(t.update(&other, &tool.record.id, Map::new()), Err(ToolError::NotFound(_))));
        assert!(matches!(t.delete(&other, &tool.record.id), Err(ToolError::NotFound(_))));
    }
    let patch = json!({"description": null, "name": "weather"}).as_object().unwrap().clone();
    let updated = t.update(&a(), &tool.record.id, patch).unwrap();
    assert_eq!(updated.def.name, "weather");
    assert_eq!(updated.def.description, None);
    assert_eq!(updated.def.execute, tool.def.execute, "fields not sent are kept");
    let null_name = json!({"name": null}).as_object().unwrap().clone();
    assert_eq!(code(t.update(&a(), &tool.record.id, null_name)), Code::SoatValidation);
    t.delete(&a(), &tool.record.id).unwrap();
    assert!(t.list(&a()).unwrap().is_empty());
}

#[test]
fn definitions_are_checked_on_write() {
    let dir = tempfile::tempdir().unwrap();
    let t = service(dir.path());
    let with = |patch: Value| {
        let mut v = weather();
        for (k, x) in patch.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    assert_eq!(code(t.create(&a(), with(json!({"colour": "red"})))), Code::SoatValidation, "unknown fields are refused");
    assert_eq!(code(t.create(&a(), with(json!({"parameters": {"type": "objekt"}})))), Code::SoatValidation);
    assert_eq!(code(t.create(&a(), with(json!({"execute": {"url": "ftp://x"}})))), Code::SoatValidation);
    assert_eq!(code(t.create(&a(), with(json!({"execute": {"url": "https://x", "method": "BREW"}})))), Code::SoatValidation);
    assert_eq!(
        code(t.create(&a(), with(json!({"execute": {"url": "https://u:{{secret:sec_x}}@x/"}})))),
        Code::SoatValidation,
        "userinfo is never sent"
    );
    assert_eq!(code(t.create(&a(), with(json!({"execute": {"url": "https://u:pw@x/"}})))), Code::LiteralCredential);
    assert_eq!(code(t.create(&a(), with(json!({"execute": {"url": "https://x", "body_mode": "multipart"}})))), Code::SoatValidation);
    assert_eq!(code(t.create(&a(), with(json!({"execute": {"url": "https://x/{{city}}"}})))), Code::InvalidTemplateToken);
    assert_eq!(
        code(t.create(&a(), with(json!({"execute": {"url": "https://x/{{context:user}}"}})))),
        Code::InvalidTemplateToken,
        "context may not steer a URL"
    );
    let literal = json!({"execute": {"url": "https://x", "headers": {"Authorization": "Bearer sk-live-123"}}});
    assert_eq!(code(t.create(&a(), with(literal))), Code::LiteralCredential);
    let missing = json!({"execute": {"url": "https://x", "headers": {"Authorization": "Bearer {{secret:sec_missing}}"}}});
    assert_eq!(code(t.create(&a(), with(missing))), Code::SecretNotFound);
    let s = t.secrets().create(&a(), "KEY", Some(&Secret::new("v-123456"))).unwrap();
    let reference = json!({"execute": {"url": "https://x", "headers": {"Authorization": format!("Bearer {{{{secret:{}}}}}", s.id), "X-User": "{{context:user}}"}}});
    t.create(&a(), with(reference.clone())).unwrap();
    assert_eq!(code(t.create(&others()[0], with(reference))), Code::SecretNotFound, "another project's secret does not resolve");
    assert_eq!(code(t.create(&a(), with(json!({"context_keys": ["ok", "bad key"]})))), Code::InvalidToolContextKey);
    assert_eq!(code(t.create(&a(), json!({"name": "b", "type": "builtin"}))), Code::SoatValidation, "builtin needs actions");
    assert_eq!(code(t.create(&a(), json!({"name": "b", "type": "builtin", "actions": ["files:ListFiles"]}))), Code::SoatValidation);
    t.create(&a(), json!({"name": "b", "type": "builtin", "actions": ["collections:SearchCollection"]})).unwrap();
    t.create(&a(), json!({"name": "c", "type": "client"})).unwrap();
    assert_eq!(code(t.create(&a(), json!({"name": "m", "type": "mcp"}))), Code::SoatValidation);
    assert_eq!(code(t.create(&a(), with(json!({"output_mapping": {"cat": ["a"]}})))), Code::SoatValidation);
    assert_eq!(code(t.create(&a(), with(json!({"output_mapping": [null, null]})))), Code::SoatValidation, "an object, as the spec says");
}

#[test]
fn pipeline_steps_are_checked_against_the_project() {
    let dir = tempfile::tempdir().unwrap();
    let t = service(dir.path());
    let calc = t.create(&a(), weather()).unwrap().record.id;
    let client = t.create(&a(), json!({"name": "c", "type": "client"})).unwrap().record.id;
    let pipe = |steps: Value| json!({"name": "p", "type": "pipeline", "pipeline": {"steps": steps}});
    let step = |id: &str, tool: &str, input: Value| json!({"id": id, "tool_id": tool, "input": input});
    t.create(&a(), pipe(json!([step("a", &calc, json!({"city": {"var": "input.c"}})), step("b", &calc, json!({"city": {"var": "steps.a.name"}}))])))
        .unwrap();
    let pipeline_step = |r| code(r) == Code::PipelineInvalidStep;
    assert!(pipeline_step(t.create(&a(), pipe(json!([])))));
    assert!(pipeline_step(t.create(&a(), pipe(json!([step("a", &calc, json!({})), step("a", &calc, json!({}))])))));
    assert!(pipeline_step(t.create(&a(), pipe(json!([step("a", &calc, json!({"x": {"var": "steps.b.y"}})), step("b", &calc, json!({}))])))));
    assert!(pipeline_step(t.create(&a(), pipe(json!([step("a", "tool_nope", json!({}))])))));
    assert!(pipeline_step(t.create(&a(), pipe(json!([step("a", &client, json!({}))])))));
    assert!(pipeline_step(t.create(&others()[0], pipe(json!([step("a", &calc, json!({}))])))), "another project's tool");
    assert!(pipeline_step(t.create(&a(), pipe(json!([{"id": "a", "tool": {"name": "x", "type": "pipeline"}}])))));
}

#[test]
fn a_target_the_egress_policy_refuses_as_written_is_refused_on_write() {
    let dir = tempfile::tempdir().unwrap();
    let t = service(dir.path());
    let http = |url: &str| json!({"name": "h", "type": "http", "execute": {"url": url}});
    let mcp = |url: &str| json!({"name": "m", "type": "mcp", "mcp": {"url": url}});
    for url in [
        "http://127.0.0.1:9/x",
        "http://127.1/users/{id}",
        "https://2130706433/",
        "http://[::ffff:127.0.0.1]:80/",
        "http://localhost:11434/v1",
        "http://169.254.169.254/latest/meta-data?x={q}",
        "http://10.0.0.5:8000/v1/{{secret:sec_k}}",
    ] {
        for body in [http(url), mcp(url)] {
            let e = t.create(&a(), body).map(|_| ()).unwrap_err();
            assert!(matches!(&e, ToolError::Refused { url: u, .. } if u == url), "{url}: {e:?}");
            assert_eq!(e.code(), Code::EgressRefused);
            assert_eq!(e.meta().unwrap()["tool_url"], url);
        }
    }
    let inline = json!({"name": "p", "type": "pipeline", "pipeline": {"steps": [{"id": "a", "tool": http("http://192.168.1.1/")}]}});
    assert_eq!(code(t.create(&a(), inline)), Code::EgressRefused, "a pipeline's inline tool too");
    // A name, or a host behind a template, is judged when called (after resolution).
    for url in ["https://api.weather.example/v1", "http://{host}/x", "http://{{secret:sec_h}}/x"] {
        assert!(written_origin(url).is_none_or(|o| t.trust.check_url(&o).is_ok()), "{url}");
    }
}
