//! MCP tool calls carry a generation's idempotency key as http tools do (issue 37): the header and the request's `_meta`.
//!
//! A generation calls an `mcp` tool on a Streamable HTTP MCP server on loopback: its
//! `tools/call` POST carries `Idempotency-Key: <generation>:<step>:<call>` (the key an
//! http tool gets) and the same key in `params._meta["io.quarry/idempotency-key"]`;
//! `initialize` carries neither. A call made directly (`/api/v1/tools/{id}/call`) has
//! no key to carry.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::scripted_llm::{from, text, tools, Scripted};
use super::soat::{call, ok};
use super::soat_generate::{agent, server, setup, tool};

type Seen = Arc<Mutex<Vec<(BTreeMap<String, String>, Value)>>>;

/// An MCP server: `initialize` opens session `s-1`, `notifications/initialized` is 202,
/// `tools/call` answers its arguments; every request's headers and body are kept.
fn mcp_server() -> (SocketAddr, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let s = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let s = s.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let mut headers = BTreeMap::new();
                loop {
                    let mut h = String::new();
                    reader.read_line(&mut h).unwrap();
                    let Some((k, v)) = h.trim_end().split_once(':') else { break };
                    headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
                }
                let mut body = vec![0; headers.get("content-length").map_or(0, |v| v.parse().unwrap())];
                reader.read_exact(&mut body).unwrap();
                let m: Value = serde_json::from_slice(&body).unwrap();
                s.lock().unwrap().push((headers, m.clone()));
                let (status, answer) = match m["method"].as_str().unwrap_or("") {
                    "initialize" => (200, json!({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-03-26", "capabilities": {"tools": {}}, "serverInfo": {"name": "fake", "version": "1"}}}).to_string()),
                    "tools/call" => (200, json!({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": "ok"}], "structuredContent": m["params"]["arguments"], "isError": false}}).to_string()),
                    _ => (202, String::new()),
                };
                let out = reader.get_mut();
                let _ = write!(out, "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\nmcp-session-id: s-1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}", answer.len());
                let _ = out.flush();
            });
        }
    });
    (addr, seen)
}

#[test]
fn an_mcp_tool_call_of_a_generation_carries_its_idempotency_key_in_the_header_and_meta() {
    let up = Scripted::start();
    up.otherwise(from(|prompt| if prompt.contains("\"ok\"") { text("Done.") } else { tools(&[("weather", json!({"city": "Oslo"}))]) }));
    let (addr, seen) = mcp_server();
    let s = server();
    let st = setup(&s, &up, "mcp-key@example.com");
    let t = tool(&s, &st, json!({"name": "weather", "type": "mcp", "actions": ["lookup"], "mcp": {"url": format!("http://{addr}/mcp")}}));
    let a = agent(&s, &st, json!({"tool_bindings": [{"tool_id": t}]}));
    let g = ok(
        call(
            &s,
            "POST",
            &format!("/api/v1/agents/{a}/generate?wait=true"),
            &st.key,
            Some(json!({"messages": [{"role": "user", "content": "Weather?"}]})),
        ),
        200,
    );
    assert_eq!(g["status"], "completed", "{g}");
    let id = g["id"].as_str().unwrap();
    let seen = seen.lock().unwrap().clone();
    let (headers, body) = seen.iter().find(|(_, b)| b["method"] == "tools/call").expect("a tools/call was sent");
    assert_eq!(body["params"]["name"], "lookup");
    let key = headers.get("idempotency-key").unwrap_or_else(|| panic!("no Idempotency-Key: {headers:?}"));
    assert!(key.starts_with(&format!("{id}:1:")), "{key}");
    assert_eq!(body["params"]["_meta"]["io.quarry/idempotency-key"].as_str(), Some(key.as_str()), "{body}");
    let (init_headers, init) = seen.iter().find(|(_, b)| b["method"] == "initialize").unwrap();
    assert!(!init_headers.contains_key("idempotency-key") && init["params"].get("_meta").is_none(), "only the call carries the key");
}
