//! An ad-hoc provider against an OpenAI-format upstream on loopback: a chat call and
//! a model listing, with the provider's token on the wire, and no `[llm]` provider;
//! and the same provider refused, unreached, where the egress policy is closed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use glommio::{LocalExecutorBuilder, Placement};

use super::*;
use crate::llm::manifest::Catalog;
use crate::llm::request::{Block, Message, Role};
use crate::net::egress::{Policy, Rule};

/// The tenants' policy with `allow` opened.
fn egress(allow: &[&str]) -> Arc<Policy> {
    Arc::new(Policy::new(allow.iter().map(|r| Rule::parse(r).unwrap()).collect()))
}

/// Each request's line and `authorization`, in arrival order.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// Answers `/chat/completions` and `/models` in OpenAI's shape; remembers each
/// request's line and `authorization`.
fn upstream() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let log = log.clone();
            std::thread::spawn(move || serve(stream, log));
        }
    });
    (url, seen)
}

fn serve(stream: TcpStream, log: Seen) {
    let mut r = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let (mut len, mut auth) = (0, String::new());
        loop {
            let mut h = String::new();
            r.read_line(&mut h).unwrap();
            let h = h.trim_end().to_owned();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').unwrap();
            match k.to_ascii_lowercase().as_str() {
                "content-length" => len = v.trim().parse().unwrap(),
                "authorization" => auth = v.trim().to_owned(),
                _ => {}
            }
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body).unwrap();
        log.lock().unwrap().push((line.trim_end().to_owned(), auth));
        let answer = if line.starts_with("GET /v1/models") {
            r#"{"object":"list","data":[{"id":"m-small","object":"model"},{"id":"m-large","object":"model"}]}"#.to_owned()
        } else {
            let req: serde_json::Value = serde_json::from_slice(&body).unwrap();
            serde_json::json!({"id": "c1", "object": "chat.completion", "model": req["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("hello from {}", req["model"].as_str().unwrap())}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}})
            .to_string()
        };
        let head = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", answer.len());
        if out.write_all(head.as_bytes()).and_then(|_| out.write_all(answer.as_bytes())).is_err() {
            return;
        }
    }
}

#[test]
fn a_provider_made_at_call_time_answers_and_lists_its_models() {
    let (url, seen) = upstream();
    LocalExecutorBuilder::new(Placement::Unbound)
        .io_memory(64 << 10)
        .ring_depth(64)
        .spawn(move || async move {
            let mut config = LlmConfig::none();
            config.max_retries = Some(0);
            let direct = Direct::new(&config, egress(&["127.0.0.1"]));
            let manifest = Catalog::load(None).unwrap().get("openai-compatible").unwrap().clone();
            let p = AdHoc::new(direct.config(), "aip_test", manifest, Some(url), Some(Secret::new("sk-upstream")), None);
            let req = ChatRequest {
                model: "m-small".into(),
                messages: vec![Message { role: Role::User, content: vec![Block::Text("hi".into())] }],
                ..ChatRequest::default()
            };
            let done = direct.complete(&p, "acct_a", req).await.unwrap();
            assert_eq!((done.provider.as_str(), done.output.text.as_str()), ("aip_test", "hello from m-small"));
            assert_eq!(direct.tokens.get("acct_a"), (7, 3));
            let models = direct.models(&p).await.unwrap();
            assert_eq!(models.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["m-small", "m-large"]);
        })
        .unwrap()
        .join()
        .unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(seen[0].0.starts_with("POST /v1/chat/completions") && seen[1].0.starts_with("GET /v1/models"), "{seen:?}");
    assert!(seen.iter().all(|(_, auth)| auth == "Bearer sk-upstream"), "{seen:?}");
}

#[test]
fn model_lists_are_read_in_each_wire_shape() {
    let openai = listed(PayloadFormat::OpenAi, br#"{"data":[{"id":"gpt-x"}]}"#).unwrap();
    assert_eq!(openai, [ListedModel { id: "gpt-x".into(), display_name: None }]);
    let anthropic = listed(PayloadFormat::Anthropic, br#"{"data":[{"id":"claude-x","display_name":"Claude X"}]}"#).unwrap();
    assert_eq!(anthropic[0].display_name.as_deref(), Some("Claude X"));
    let gemini = listed(PayloadFormat::Gemini, br#"{"models":[{"name":"models/gemini-x","displayName":"Gemini X"}]}"#).unwrap();
    assert_eq!(gemini[0].id, "gemini-x");
    let vertex = listed(PayloadFormat::Gemini, br#"{"publisherModels":[{"name":"publishers/google/models/gemini-y"}]}"#).unwrap();
    assert_eq!(vertex[0].id, "gemini-y");
    let bedrock = listed(PayloadFormat::Converse, br#"{"modelSummaries":[{"modelId":"amazon.nova-lite-v1:0","modelName":"Nova Lite"}]}"#).unwrap();
    assert_eq!(bedrock, [ListedModel { id: "amazon.nova-lite-v1:0".into(), display_name: Some("Nova Lite".into()) }]);
    assert_eq!(listed(PayloadFormat::OpenAi, b"<html>"), None);
    assert_eq!(listed(PayloadFormat::OpenAi, br#"{"data":[{"name":"no id"}]}"#), None);
}

#[test]
fn a_provider_made_at_call_time_reaches_no_loopback_address_unless_allowed() {
    let (url, seen) = upstream();
    LocalExecutorBuilder::new(Placement::Unbound)
        .io_memory(64 << 10)
        .ring_depth(64)
        .spawn(move || async move {
            let mut config = LlmConfig::none();
            config.max_retries = Some(0);
            let direct = Direct::new(&config, egress(&[]));
            let manifest = Catalog::load(None).unwrap().get("openai-compatible").unwrap().clone();
            let port = url.rsplit(':').next().unwrap().trim_end_matches("/v1").to_owned();
            for base in [url.clone(), format!("http://localhost:{port}/v1"), format!("https://127.0.0.1:{port}/v1")] {
                let p = AdHoc::new(direct.config(), "aip_test", manifest.clone(), Some(base.clone()), None, None);
                let req = ChatRequest {
                    model: "m".into(),
                    messages: vec![Message { role: Role::User, content: vec![Block::Text("hi".into())] }],
                    ..ChatRequest::default()
                };
                let e = direct.complete(&p, "acct_a", req).await.expect_err("refused");
                assert!(matches!(&e, LlmError::Refused { provider } if provider == "aip_test"), "{base}: {e:?}");
                assert_eq!(e.to_string(), crate::net::egress::REFUSED);
                assert!(matches!(direct.models(&p).await, Err(LlmError::Refused { .. })), "{base}");
            }
            assert_eq!(direct.tokens.get("acct_a"), (0, 0));
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(seen.lock().unwrap().is_empty(), "nothing reached the upstream");
}
