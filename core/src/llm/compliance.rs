//! The AI-Protocol compliance vectors (vendored in `tests/data/ai-protocol/compliance/`)
//! as one data-driven suite: every case of every file is run, and the suite fails
//! naming each case that does not pass.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::error::{ErrorClass, ProviderError};
use super::expr::Expr;
use super::manifest::Manifest;
use super::retry::RetryPolicy;
use super::stream::assemble::{Assembler, ToolRelease};
use super::stream::event::StreamEvent;
use super::stream::map::{EventKind, EventMap, FieldSource, Rule};
use super::stream::sse::{SseConfig, SseDecoder, SseItem};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/ai-protocol/compliance")
}

fn cases() -> Vec<(String, Value)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("cases"))
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for doc in serde_norway::Deserializer::from_str(&text) {
            let v: Value = serde::Deserialize::deserialize(doc).unwrap();
            if v.is_null() {
                continue;
            }
            out.push((v["id"].as_str().unwrap().to_owned(), v));
        }
    }
    out
}

fn manifest(case: &Value) -> Manifest {
    let rel = case["setup"]["manifest_path"].as_str().unwrap();
    let text = std::fs::read_to_string(root().join(rel)).unwrap();
    Manifest::parse(rel, &text).unwrap()
}

fn run(case: &Value) -> Result<(), String> {
    let input = &case["input"];
    let expected = &case["expected"];
    match input["type"].as_str().unwrap() {
        "error_classification" => classification(case, input, expected),
        "stream_decode" => decode(input, expected),
        "event_mapping" => mapping(input, expected),
        "tool_accumulation" => accumulation(input, expected),
        "parameter_mapping" => parameters(case, input, expected),
        "retry_decision" => retry(input, expected),
        other => Err(format!("unknown case type {other}")),
    }
}

fn check<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}"))
    }
}

fn classification(case: &Value, input: &Value, expected: &Value) -> Result<(), String> {
    let m = manifest(case);
    let body = serde_json::to_vec(&input["response_body"]).unwrap();
    let e = m.classification.classify(input["http_status"].as_u64().unwrap() as u16, &body, None);
    check("error_code", e.class.code(), expected["error_code"].as_str().unwrap())?;
    check("error_name", e.class.code_name(), expected["error_name"].as_str().unwrap())?;
    check("retryable", e.class.retryable(), expected["retryable"].as_bool().unwrap())?;
    check("fallbackable", e.class.fallbackable(), expected["fallbackable"].as_bool().unwrap())
}

fn decode(input: &Value, expected: &Value) -> Result<(), String> {
    let cfg = &input["decoder_config"];
    let mut d = SseDecoder::new(SseConfig {
        prefix: cfg["prefix"].as_str().unwrap_or("data: ").to_owned(),
        done_signal: Some(cfg["done_signal"].as_str().unwrap_or("[DONE]").to_owned()),
    });
    let mut items = Vec::new();
    for chunk in input["raw_chunks"].as_array().unwrap() {
        items.extend(d.push(chunk.as_str().unwrap().as_bytes()).map_err(|e| e.to_string())?);
    }
    items.extend(d.finish().map_err(|e| e.to_string())?);
    let frames: Vec<Value> = items
        .iter()
        .filter_map(|i| match i {
            SseItem::Data(s) => Some(serde_json::from_str(s).map_err(|e| e.to_string())),
            SseItem::Done => None,
        })
        .collect::<Result<_, _>>()?;
    if let Some(range) = expected.get("frame_count") {
        let n = frames.len() as u64;
        if n < range["min"].as_u64().unwrap_or(0) || n > range["max"].as_u64().unwrap_or(u64::MAX) {
            return Err(format!("{n} frames, outside {range}"));
        }
    }
    if expected["events"][0]["has_content"] == json!(true) {
        let content = Expr::parse("exists($.choices[*].delta.content)").unwrap();
        check("a frame has content", frames.iter().any(|f| content.eval(f)), true)?;
    }
    check("frames", frames.is_empty(), false)?;
    if let Some(done) = expected.get("done_received").and_then(Value::as_bool) {
        check("done_received", d.done(), done)?;
    }
    if let Some(c) = expected.get("completed").and_then(Value::as_bool) {
        check("completed", d.done(), c)?;
    }
    Ok(())
}

fn rules(map: &Value) -> EventMap {
    let rules = map
        .as_array()
        .unwrap()
        .iter()
        .map(|r| Rule {
            matches: Expr::parse(r["match"].as_str().unwrap()).unwrap(),
            kind: EventKind::parse(r["emit"].as_str().unwrap()).unwrap(),
            fields: r["extract"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), FieldSource::parse(v.as_str().unwrap()).unwrap())).collect(),
        })
        .collect();
    EventMap { rules, ..EventMap::default() }
}

fn mapping(input: &Value, expected: &Value) -> Result<(), String> {
    let map = rules(&input["event_map"]);
    let events: Vec<Value> = input["frames"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| map.apply(f))
        .map(|e| {
            let mut m = Map::new();
            m.insert("type".into(), e.kind.as_str().into());
            m.extend(e.fields.into_iter().map(|(n, v)| (n.to_owned(), v.into_owned())));
            Value::Object(m)
        })
        .collect();
    check("events", &events, expected["events"].as_array().unwrap())?;
    if let Some(n) = expected.get("event_count").and_then(Value::as_u64) {
        check("event_count", events.len() as u64, n)?;
    }
    Ok(())
}

fn accumulation(input: &Value, expected: &Value) -> Result<(), String> {
    let mut a = Assembler::new(ToolRelease::AsTheyStream);
    let raw = super::stream::map::RawEvent {
        kind: EventKind::PartialToolCall,
        fields: vec![("tool_calls", std::borrow::Cow::Borrowed(&input["partial_chunks"]))],
    };
    for e in StreamEvent::from_raw(raw, &Default::default()) {
        a.apply(e);
    }
    a.finish();
    let calls: Vec<Value> = a
        .output()
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| json!({"index": i, "id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
        .collect();
    check("assembled_tool_calls", &calls, expected["assembled_tool_calls"].as_array().unwrap())?;
    let complete = calls.iter().all(|c| serde_json::from_str::<Value>(c["function"]["arguments"].as_str().unwrap()).is_ok());
    check("complete", complete, expected["complete"].as_bool().unwrap())
}

fn parameters(case: &Value, input: &Value, expected: &Value) -> Result<(), String> {
    let m = manifest(case);
    let mapped: Map<String, Value> = super::wire::map_parameters(&m, input["standard_params"].as_object().unwrap()).into_iter().collect();
    let want = expected["provider_params"].as_object().unwrap();
    let numbers = |o: &Map<String, Value>| -> Vec<(String, Option<f64>)> { o.iter().map(|(k, v)| (k.clone(), v.as_f64())).collect() };
    check("provider_params", numbers(&mapped), numbers(want))
}

fn retry(input: &Value, expected: &Value) -> Result<(), String> {
    let yaml =
        serde_norway::to_string(&json!({"id": "x1", "endpoint": {"base_url": "https://x.example"}, "retry_policy": input["retry_policy"]})).unwrap();
    let policy: RetryPolicy = Manifest::parse("retry case", &yaml).map_err(|e| e.to_string())?.retry;
    let class = ErrorClass::parse(input["error"]["error_name"].as_str().unwrap()).unwrap();
    check("error_code", class.code(), input["error"]["error_code"].as_str().unwrap())?;
    let e = ProviderError::new(class, "compliance");
    let attempt = input["attempt"].as_u64().unwrap() as u32;
    for draw in [0.0, 0.5, 0.999] {
        let d = policy.decide(&e, attempt, draw);
        check("should_retry", d.is_some(), expected["should_retry"].as_bool().unwrap())?;
        if let (Some(d), Some(range)) = (d, expected.get("delay_ms")) {
            let ms = d.as_millis() as u64;
            if ms < range["min"].as_u64().unwrap() || ms > range["max"].as_u64().unwrap() {
                return Err(format!("delay {ms} ms outside {range}"));
            }
        }
    }
    Ok(())
}

#[test]
fn every_compliance_case_passes() {
    let cases = cases();
    assert!(cases.len() >= 26, "only {} cases found", cases.len());
    let failures: Vec<String> = cases.iter().filter_map(|(id, c)| run(c).err().map(|e| format!("{id}: {e}"))).collect();
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[test]
fn error_codes_flags_match_the_standard_file() {
    let doc: Value = serde_norway::from_str(include_str!("../../../providers/error-codes.yaml")).unwrap();
    for class in ErrorClass::ALL {
        let entry = &doc["error_codes"][class.code()];
        assert_eq!(entry["name"], class.code_name(), "{class:?}");
        assert_eq!(entry["retryable"], class.retryable(), "{class:?}");
        assert_eq!(entry["fallbackable"], class.fallbackable(), "{class:?}");
    }
}
