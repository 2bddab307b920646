//! The gateway's surface: configuration, routing, models, errors.

use serde_json::json;

use super::server::{Options, TestServer};
use super::sse_client::post;
use super::upstream::Upstream;

/// A server whose providers all point at `up`: `oa` (openai), `an` (anthropic),
/// `ge` (gemini); retries capped short so fault tests stay quick.
pub fn server(up: &Upstream) -> TestServer {
    TestServer::with_config(&config(up))
}

/// The configuration [`server`] runs with.
pub fn config(up: &Upstream) -> String {
    let a = up.addr;
    format!(
        r#"
[auth]
default_plan = "library"
[llm]
max_retry_delay = "1500ms"
read_timeout = "3s"
[llm.aliases]
fast = "oa/r~openai~chat~openai-text"
[llm.providers.oa]
manifest = "openai"
base_url = "http://{a}/v1"
token = "sk-test-openai"
models = ["gpt-test"]
[llm.providers.an]
manifest = "anthropic"
base_url = "http://{a}/v1"
token = "sk-ant-test"
[llm.providers.ge]
manifest = "gemini"
base_url = "http://{a}/v1beta"
token = "g-test"
"#
    )
}

#[test]
fn without_a_provider_the_gateway_is_503_llm_not_configured() {
    let s = TestServer::start();
    let (_, key) = s.signup("nollm@x.org");
    let r = post(s.addr, &key, &json!({"model": "x/y", "messages": [{"role": "user", "content": "hi"}]}));
    assert_eq!(r.status, 503);
    assert_eq!(r.json()["error"]["code"], "llm_not_configured");
    assert_eq!(r.json()["error"]["type"], "api_error");
    assert_eq!(s.get("/v1/health", None).json()["llm"], false);
    assert_eq!(s.get("/v1/models", Some(&key)).status, 503);
}

#[test]
fn health_models_aliases_and_credentials() {
    let up = Upstream::start();
    let s = server(&up);
    assert_eq!(s.get("/v1/health", None).json()["llm"], true);
    let (_, key) = s.signup("gw@x.org");
    let models = s.get("/v1/models", Some(&key)).json();
    let ids: Vec<&str> = models["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["oa/gpt-test", "fast"]);
    assert_eq!(s.get("/v1/models", None).status, 401);

    let r = post(s.addr, &key, &json!({"model": "fast", "messages": [{"role": "user", "content": "hi"}]}));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("x-upstream-requests-remaining"), Some("41"));
    for (model, header, value) in
        [("oa/r~openai~chat~openai-text", "authorization", "Bearer sk-test-openai"), ("an/r~anthropic~anthropic-text", "x-api-key", "sk-ant-test")]
    {
        post(s.addr, &key, &json!({"model": model, "messages": [{"role": "user", "content": "hi"}]}));
        let bodies = up.state.bodies.lock().unwrap();
        let (_, _, headers) = bodies.iter().rev().find(|(_, b, _)| b["model"] == model.split('/').nth(1).unwrap()).unwrap();
        assert!(headers.iter().any(|(k, v)| k == header && v == value), "{model}: {headers:?}");
    }
    post(s.addr, &key, &json!({"model": "ge/r~google~google-text", "messages": [{"role": "user", "content": "hi"}]}));
    let bodies = up.state.bodies.lock().unwrap();
    assert!(bodies.iter().any(|(path, _, _)| path == "/v1beta/models/r~google~google-text:generateContent?key=g-test"));
}

#[test]
fn requests_are_mapped_to_each_wire_format_and_bad_ones_refused() {
    let up = Upstream::start();
    let s = server(&up);
    let (_, key) = s.signup("map@x.org");
    let req = |model: &str| {
        json!({"model": model, "temperature": 1.5, "max_tokens": 50, "stop": "END",
          "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{\"city\":\"Oslo\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"}],
          "tools": [{"type": "function", "function": {"name": "get", "parameters": {"type": "object"}}}], "tool_choice": "required"})
    };
    post(s.addr, &key, &req("an/r~anthropic~anthropic-text"));
    post(s.addr, &key, &req("ge/r~google~google-text"));
    let bodies = up.state.bodies.lock().unwrap();
    let an = &bodies.iter().find(|(p, _, _)| p == "/v1/messages").unwrap().1;
    assert_eq!(an["system"], "be brief");
    assert_eq!(an["temperature"], 1.0, "clamped to Anthropic's range");
    assert_eq!(an["stop_sequences"], json!(["END"]));
    assert_eq!(an["tool_choice"], json!({"type": "any"}));
    assert_eq!(an["messages"][1]["content"][0], json!({"type": "tool_use", "id": "c1", "name": "get", "input": {"city": "Oslo"}}));
    assert_eq!(an["messages"][2]["content"][0]["type"], "tool_result");
    let ge = &bodies.iter().find(|(p, _, _)| p.contains("generateContent")).unwrap().1;
    assert_eq!(ge["generationConfig"], json!({"temperature": 1.5, "maxOutputTokens": 50, "stopSequences": ["END"]}));
    assert_eq!(ge["systemInstruction"], json!({"parts": [{"text": "be brief"}]}));
    assert_eq!(ge["contents"][2]["parts"][0]["functionResponse"]["name"], "get");
    drop(bodies);

    let r = post(s.addr, &key, &json!({"model": "oa/x", "temperature": 3, "messages": [{"role": "user", "content": "hi"}]}));
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_str(), r.json()["error"]["param"].as_str()),
        (400, Some("invalid_request"), Some("temperature"))
    );
    let r = post(s.addr, &key, &json!({"model": "nope/x", "messages": [{"role": "user", "content": "hi"}]}));
    assert_eq!((r.status, r.json()["error"]["code"].as_str()), (404, Some("model_not_found")));
    let r = post(s.addr, &key, &json!({"messages": []}));
    assert_eq!((r.status, r.json()["error"]["type"].as_str()), (400, Some("invalid_request_error")));
}

#[test]
fn sequential_calls_reuse_one_upstream_connection_per_shard() {
    let up = Upstream::start();
    let s = TestServer::with(Options { config: config(&up), shards: Some(1), ..Options::default() });
    let (_, key) = s.signup("pool@x.org");
    for _ in 0..5 {
        let r = post(s.addr, &key, &json!({"model": "fast", "messages": [{"role": "user", "content": "hi"}]}));
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    }
    assert_eq!(up.calls("r~openai~chat~openai-text"), 5);
    assert_eq!(up.state.connections.load(std::sync::atomic::Ordering::SeqCst), 1, "the shard's pool kept its one connection alive");
}
