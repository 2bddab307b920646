use super::*;

fn shared(path: &str) -> String {
    std::fs::read_to_string(format!("{}/../shared/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn the_shipped_manifests_load() {
    let c = Catalog::load(None).unwrap();
    let ids: Vec<&str> = c.manifests.keys().map(String::as_str).collect();
    assert_eq!(ids, ["anthropic", "deepseek", "gemini", "openai", "openai-compatible"]);
    let a = c.get("anthropic").unwrap();
    assert_eq!(a.auth, Auth::Header { name: "x-api-key".into(), prefix: None });
    assert_eq!(a.format, PayloadFormat::Anthropic);
    let g = c.get("gemini").unwrap();
    assert_eq!(g.chat_url(&g.base_url, "gemini-2.5-flash", true), "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    assert_eq!(c.get("deepseek").unwrap().events.rules.len(), c.get("openai").unwrap().events.rules.len());
}

#[test]
fn the_specs_own_manifests_load_in_their_shapes() {
    for name in ["openai", "anthropic", "gemini", "deepseek"] {
        let m = Manifest::parse(name, &shared(&format!("specs/ai-protocol/v1/providers/{name}.yaml"))).unwrap();
        assert_eq!(m.id, name);
    }
    let d = Manifest::parse("deepseek", &shared("specs/ai-protocol/v1/providers/deepseek.yaml")).unwrap();
    assert!(d.capabilities.tools && d.capabilities.streaming && !d.capabilities.vision);
    assert_eq!(d.base_url, "https://api.deepseek.com/v1");
    assert_eq!(d.chat_path, "/chat/completions");
    for name in ["mock-openai", "mock-anthropic"] {
        Manifest::parse(name, &shared(&format!("fixtures/ai-protocol/compliance/fixtures/providers/{name}.yaml"))).unwrap();
    }
}

#[test]
fn a_bad_manifest_is_named_with_its_field() {
    let base = "id: x1\nendpoint:\n  base_url: https://a.example\n";
    let e = Manifest::parse("f.yaml", &format!("{base}retry_policy:\n  max_retries: lots\n")).unwrap_err();
    assert_eq!((e.source_name.as_str(), e.field.as_str()), ("f.yaml", "retry_policy.max_retries"));
    let e = Manifest::parse("f.yaml", &format!("{base}streaming:\n  event_map:\n    - match: \"exists($.a\"\n      emit: PartialContentDelta\n")).unwrap_err();
    assert_eq!(e.field, "streaming.event_map[0].match");
    let e = Manifest::parse("f.yaml", &format!("{base}error_classification:\n  by_http_status:\n    \"400\": nonsense\n")).unwrap_err();
    assert_eq!(e.field, "error_classification.by_http_status.400");
    let e = Manifest::parse("f.yaml", "id: x1\n").unwrap_err();
    assert_eq!(e.field, "endpoint.base_url");
    assert!(e.to_string().contains("f.yaml"));
}
