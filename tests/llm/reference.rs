//! Shared by the transcript tests: what each recorded transcript should come to, computed independently.
//!
//! What each transcript should come to, computed here from the recorded payloads by
//! a few lines of plain code that share nothing with the server's decoders: the
//! text, the tool calls (name and arguments as JSON) and OpenAI's finish reason.

use serde_json::{json, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    pub text: String,
    pub calls: Vec<(String, Value)>,
    pub finish: String,
}

fn args(text: &str) -> Value {
    if text.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
    }
}

fn finish(raw: &str, has_calls: bool) -> String {
    let f = match raw {
        "length" | "max_tokens" | "MAX_TOKENS" => "length",
        "tool_calls" | "tool_use" => "tool_calls",
        "content_filter" | "refusal" | "SAFETY" => "content_filter",
        _ if has_calls => "tool_calls",
        _ => "stop",
    };
    f.to_owned()
}

/// The events of a streamed transcript, in order.
pub fn streamed(family: &str, frames: &[Value]) -> Expected {
    match family {
        "anthropic" => anthropic_stream(frames),
        "google" => google(frames),
        _ => openai_stream(frames),
    }
}

fn openai_stream(frames: &[Value]) -> Expected {
    let mut text = String::new();
    let mut calls: Vec<(u64, String, String)> = Vec::new();
    let mut reason = String::new();
    for f in frames {
        let Some(c) = f["choices"].get(0) else { continue };
        text.push_str(c["delta"]["content"].as_str().unwrap_or(""));
        for t in c["delta"]["tool_calls"].as_array().into_iter().flatten() {
            let i = t["index"].as_u64().unwrap();
            if !calls.iter().any(|(k, _, _)| *k == i) {
                calls.push((i, String::new(), String::new()));
            }
            let call = calls.iter_mut().find(|(k, _, _)| *k == i).unwrap();
            if let Some(n) = t["function"]["name"].as_str() {
                call.1 = n.to_owned();
            }
            call.2.push_str(t["function"]["arguments"].as_str().unwrap_or(""));
        }
        if let Some(r) = c["finish_reason"].as_str() {
            reason = r.to_owned();
        }
    }
    let calls: Vec<(String, Value)> = calls.into_iter().map(|(_, n, a)| (n, args(&a))).collect();
    Expected { finish: finish(&reason, !calls.is_empty()), text, calls }
}

fn anthropic_stream(frames: &[Value]) -> Expected {
    let mut text = String::new();
    let mut open: Vec<(u64, String, String)> = Vec::new();
    let mut calls = Vec::new();
    let mut reason = String::new();
    for f in frames {
        let i = f["index"].as_u64().unwrap_or(0);
        match f["type"].as_str().unwrap_or("") {
            "message_start" => open.clear(),
            "content_block_start" if f["content_block"]["type"] == "tool_use" => {
                open.retain(|(k, _, _)| *k != i);
                open.push((i, f["content_block"]["name"].as_str().unwrap().to_owned(), String::new()));
            }
            "content_block_delta" => match f["delta"]["type"].as_str().unwrap_or("") {
                "text_delta" => text.push_str(f["delta"]["text"].as_str().unwrap()),
                "input_json_delta" => {
                    if let Some(c) = open.iter_mut().find(|(k, _, _)| *k == i) {
                        c.2.push_str(f["delta"]["partial_json"].as_str().unwrap());
                    }
                }
                _ => {}
            },
            "content_block_stop" => {
                if let Some(at) = open.iter().position(|(k, _, _)| *k == i) {
                    let (_, n, a) = open.remove(at);
                    calls.push((n, args(&a)));
                }
            }
            "message_delta" => reason = f["delta"]["stop_reason"].as_str().unwrap_or("").to_owned(),
            _ => {}
        }
    }
    Expected { finish: finish(&reason, !calls.is_empty()), text, calls }
}

fn google(frames: &[Value]) -> Expected {
    let mut text = String::new();
    let mut calls: Vec<(String, Value)> = Vec::new();
    let mut reason = String::new();
    for f in frames {
        let Some(c) = f["candidates"].get(0) else { continue };
        for p in c["content"]["parts"].as_array().into_iter().flatten() {
            if p["thought"] != json!(true) {
                text.push_str(p["text"].as_str().unwrap_or(""));
            }
            let call = &p["functionCall"];
            if let Some(n) = call["name"].as_str() {
                calls.push((n.to_owned(), call.get("args").cloned().unwrap_or(json!({}))));
            }
            for pa in call["partialArgs"].as_array().into_iter().flatten() {
                put(&mut calls.last_mut().unwrap().1, pa);
            }
        }
        if let Some(r) = c["finishReason"].as_str() {
            reason = r.to_owned();
        }
    }
    Expected { finish: finish(&reason, !calls.is_empty()), text, calls }
}

/// `{jsonPath, stringValue|numberValue|boolValue}` into `root`.
fn put(root: &mut Value, pa: &Value) {
    let path = pa["jsonPath"].as_str().unwrap().trim_start_matches("$.");
    let mut at = root;
    for name in path.split('.') {
        let (key, idx) = match name.split_once('[') {
            Some((k, rest)) => (k, Some(rest.trim_end_matches(']').parse::<usize>().unwrap())),
            None => (name, None),
        };
        if at.get(key).is_none() {
            at[key] = if idx.is_some() { json!([]) } else { json!({}) };
        }
        at = &mut at[key];
        if let Some(i) = idx {
            let arr = at.as_array_mut().unwrap();
            while arr.len() <= i {
                arr.push(Value::Null);
            }
            at = &mut arr[i];
        }
    }
    if let Some(s) = pa["stringValue"].as_str() {
        let joined = format!("{}{s}", at.as_str().unwrap_or(""));
        *at = Value::String(joined);
    } else if let Some(v) = pa.get("numberValue").or(pa.get("boolValue")) {
        *at = v.clone();
    }
}

/// A whole (non-streamed) answer.
pub fn whole(family: &str, body: &Value) -> Expected {
    match family {
        "anthropic" => {
            let blocks = body["content"].as_array().unwrap();
            let text = blocks.iter().filter(|b| b["type"] == "text").map(|b| b["text"].as_str().unwrap()).collect();
            let calls: Vec<_> =
                blocks.iter().filter(|b| b["type"] == "tool_use").map(|b| (b["name"].as_str().unwrap().to_owned(), b["input"].clone())).collect();
            Expected { finish: finish(body["stop_reason"].as_str().unwrap_or(""), !calls.is_empty()), text, calls }
        }
        "google" => google(std::slice::from_ref(body)),
        _ => {
            let m = &body["choices"][0]["message"];
            let calls: Vec<_> = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| (c["function"]["name"].as_str().unwrap().to_owned(), args(c["function"]["arguments"].as_str().unwrap())))
                .collect();
            let reason = body["choices"][0]["finish_reason"].as_str().unwrap_or("");
            Expected { finish: finish(reason, !calls.is_empty()), text: m["content"].as_str().unwrap_or("").to_owned(), calls }
        }
    }
}

/// The same from the gateway's answer: a `chat.completion` or its chunks.
pub fn from_completion(body: &Value) -> Expected {
    let mut e = whole("openai", body);
    e.finish = body["choices"][0]["finish_reason"].as_str().unwrap().to_owned();
    e
}

pub fn from_chunks(events: &[String]) -> Expected {
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"), "the stream ends with [DONE]");
    let frames: Vec<Value> = events[..events.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap()).collect();
    for f in &frames {
        for c in f["choices"].as_array().unwrap() {
            let d = &c["delta"];
            assert!(d.get("content").is_none_or(Value::is_string), "content is a string: {f}");
            for t in d["tool_calls"].as_array().into_iter().flatten() {
                assert!(t["index"].is_u64(), "tool call index present: {f}");
            }
        }
    }
    let mut e = openai_stream(&frames);
    e.finish = frames.iter().rev().find_map(|f| f["choices"].get(0)?["finish_reason"].as_str().map(str::to_owned)).unwrap();
    e
}
