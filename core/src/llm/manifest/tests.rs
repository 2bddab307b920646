use super::*;

/// A file vendored under `tests/data` (see NOTICE for where each came from).
fn data(path: &str) -> String {
    let path = format!("{}/../tests/data/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_shipped_manifests_load() {
    let c = Catalog::load(None).unwrap();
    let ids: Vec<&str> = c.manifests.keys().map(String::as_str).collect();
    assert_eq!(ids, ["anthropic", "bedrock", "cohere", "deepseek", "gemini", "jina", "openai", "openai-compatible", "voyage"]);
    // The chat providers have no rerank endpoint; the rerank ones name theirs.
    assert!(c.get("openai").unwrap().rerank.is_none());
    let rerank = |id: &str| c.get(id).unwrap().rerank.clone().unwrap();
    assert_eq!((rerank("jina").path, rerank("jina").top_n_field, rerank("jina").results), ("/rerank".into(), "top_n".into(), "results".into()));
    assert_eq!(c.get("cohere").unwrap().base_url, "https://api.cohere.com/v2");
    assert_eq!((rerank("voyage").top_n_field, rerank("voyage").results), ("top_k".into(), "data".into()));
    assert!(!c.get("voyage").unwrap().capabilities.streaming);
    let a = c.get("anthropic").unwrap();
    assert_eq!(a.auth, Auth::Header { name: "x-api-key".into(), prefix: None });
    assert_eq!(a.format, PayloadFormat::Anthropic);
    let g = c.get("gemini").unwrap();
    assert_eq!(
        g.chat_url(&g.base_url, "gemini-2.5-flash", true),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(c.get("deepseek").unwrap().events.rules.len(), c.get("openai").unwrap().events.rules.len());
    let b = c.get("bedrock").unwrap();
    assert_eq!(b.format, PayloadFormat::Converse);
    assert_eq!(
        b.chat_url(&b.base_url, "anthropic.claude-3-haiku-20240307-v1:0", false),
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse"
    );
}

#[test]
fn the_specs_own_manifests_load_in_their_shapes() {
    for name in ["openai", "anthropic", "gemini", "deepseek"] {
        let m = Manifest::parse(name, &data(&format!("manifests/ai-protocol-v1/{name}.yaml"))).unwrap();
        assert_eq!(m.id, name);
    }
    let d = Manifest::parse("deepseek", &data("manifests/ai-protocol-v1/deepseek.yaml")).unwrap();
    assert!(d.capabilities.tools && d.capabilities.streaming && !d.capabilities.vision);
    assert_eq!(d.base_url, "https://api.deepseek.com/v1");
    assert_eq!(d.chat_path, "/chat/completions");
    for name in ["mock-openai", "mock-anthropic"] {
        Manifest::parse(name, &data(&format!("ai-protocol/compliance/fixtures/providers/{name}.yaml"))).unwrap();
    }
}

#[test]
fn a_bad_manifest_is_named_with_its_field() {
    let base = "id: x1\nendpoint:\n  base_url: https://a.example\n";
    let e = Manifest::parse("f.yaml", &format!("{base}retry_policy:\n  max_retries: lots\n")).unwrap_err();
    assert_eq!((e.source_name.as_str(), e.field.as_str()), ("f.yaml", "retry_policy.max_retries"));
    let e = Manifest::parse("f.yaml", &format!("{base}streaming:\n  event_map:\n    - match: \"exists($.a\"\n      emit: PartialContentDelta\n"))
        .unwrap_err();
    assert_eq!(e.field, "streaming.event_map[0].match");
    let e = Manifest::parse("f.yaml", &format!("{base}error_classification:\n  by_http_status:\n    \"400\": nonsense\n")).unwrap_err();
    assert_eq!(e.field, "error_classification.by_http_status.400");
    let e = Manifest::parse("f.yaml", "id: x1\n").unwrap_err();
    assert_eq!(e.field, "endpoint.base_url");
    assert!(e.to_string().contains("f.yaml"));
}

/// Every manifest we have (shipped, the spec's own, the compliance mocks) run over every
/// recorded frame of every provider: the frame parsed to the manifest's shape maps to the
/// same events, selector and stop decision as the frame parsed whole.
#[test]
fn shaped_frames_map_as_whole_frames_do() {
    let mut manifests: Vec<Manifest> = Catalog::load(None).unwrap().manifests.values().map(|m| (**m).clone()).collect();
    for name in ["openai", "anthropic", "gemini", "deepseek"] {
        manifests.push(Manifest::parse(name, &data(&format!("manifests/ai-protocol-v1/{name}.yaml"))).unwrap());
    }
    for name in ["mock-openai", "mock-anthropic"] {
        manifests.push(Manifest::parse(name, &data(&format!("ai-protocol/compliance/fixtures/providers/{name}.yaml"))).unwrap());
    }
    let mut dirs = vec![std::path::PathBuf::from(format!("{}/../tests/data/provider-transcripts", env!("CARGO_MANIFEST_DIR")))];
    let (mut frames, mut files) = (Vec::new(), 0);
    while let Some(dir) = dirs.pop() {
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.is_dir() {
                dirs.push(f);
            } else if f.to_string_lossy().ends_with(".chunks.txt") {
                files += 1;
                let text = std::fs::read_to_string(&f).unwrap();
                frames.extend(text.lines().map(|l| l.trim().trim_start_matches("data:").trim().to_owned()).filter(|l| l.starts_with('{')));
            }
        }
    }
    assert_eq!(files, 45, "recorded streams");
    let mut events = 0;
    for m in &manifests {
        for text in &frames {
            let whole: serde_json::Value = serde_json::from_str(text).unwrap();
            let shaped = m.frame_shape.parse(text).unwrap();
            let (a, b) = (comparable(m.events.apply(&whole)), comparable(m.events.apply(&shaped)));
            assert_eq!(a, b, "{}: {text}", m.id);
            assert_eq!(m.events.stops(&whole), m.events.stops(&shaped), "{}: {text}", m.id);
            events += a.len();
        }
    }
    assert!(events > 1000, "events compared: {events}");
}

/// Events with the ids the map generates (`call_` and 24 hex digits, new each time)
/// replaced by one placeholder.
fn comparable(events: Vec<crate::llm::stream::map::RawEvent<'_, '_>>) -> Vec<(EventKind, Vec<(String, serde_json::Value)>)> {
    let generated = |s: &str| s.len() == 29 && s.starts_with("call_") && s[5..].bytes().all(|b| b.is_ascii_hexdigit());
    events
        .into_iter()
        .map(|e| {
            let fields = e
                .fields
                .into_iter()
                .map(|(n, v)| match v.as_ref() {
                    serde_json::Value::String(s) if generated(s) => (n.to_owned(), serde_json::json!("call_<generated>")),
                    v => (n.to_owned(), v.clone()),
                })
                .collect();
            (e.kind, fields)
        })
        .collect()
}
