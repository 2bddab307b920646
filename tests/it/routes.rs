//! The route table walked: 405 with `Allow`, 401 without a key, 404 for unknown paths, per surface.
//!
//! The route table, walked: every path answers a wrong method with 405 and the `Allow`
//! its rows give, every authenticated row answers a missing key with 401, and an
//! unknown path under each surface is a 404, each in its surface's error shape.

use std::collections::BTreeMap;

use quarry::api::routes::table;
use quarry::config::Config;
use quarry::http::surface::Surface;
use serde_json::Value;

use super::client::Response;
use super::server::TestServer;

/// Fills a pattern's `{param}`s with a plausible value.
fn concrete(pattern: &str) -> String {
    pattern.split('/').map(|seg| if seg.starts_with('{') { "x1" } else { seg }).collect::<Vec<_>>().join("/")
}

/// Asserts `r` is an error in `surface`'s shape (status already checked by the caller).
fn in_shape(surface: Surface, r: &Response, what: &str) {
    let v: Value = r.json();
    let text = |v: &Value| v.as_str().is_some_and(|s| !s.is_empty());
    match surface {
        Surface::AgentLex => {
            let e = &v["error"];
            assert!(text(&e["code"]) && text(&e["message"]) && e.get("type").is_none(), "{what}: not AgentLex's shape: {v}");
        }
        Surface::OpenAi => {
            let e = &v["error"];
            assert!(text(&e["message"]) && text(&e["type"]) && text(&e["code"]) && e.get("param").is_some(), "{what}: not OpenAI's shape: {v}");
        }
        Surface::Soat => {
            let e = &v["error"];
            let code = e["code"].as_str().unwrap_or("");
            assert!(!code.is_empty() && code.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'), "{what}: SOAT codes are upper case: {v}");
            assert!(text(&e["message"]) && text(&e["hint"]) && e["docs_url"].as_str().is_some_and(|u| u.starts_with("http")), "{what}: {v}");
            assert!(e["meta"].is_object(), "{what}: {v}");
        }
        Surface::Plugin => {
            let d = &v["detail"];
            let validation = d.as_array().is_some_and(|a| a.iter().all(|i| i["loc"].is_array() && text(&i["msg"]) && text(&i["type"])));
            assert!(text(d) || validation, "{what}: not the plugin's shape: {v}");
        }
    }
}

#[test]
fn every_route_answers_wrong_methods_and_missing_keys_in_its_surfaces_shape() {
    let s = TestServer::start();
    let rows = table(&Config::defaults());
    let mut paths: BTreeMap<&str, (Surface, Vec<&str>)> = BTreeMap::new();
    for r in &rows {
        let e = paths.entry(r.path).or_insert((r.surface, Vec::new()));
        e.1.push(r.method.as_str());
    }
    let mut checked = 0;
    for (pattern, (surface, methods)) in &paths {
        let mut allow: Vec<&str> = methods.clone();
        if allow.contains(&"GET") {
            allow.push("HEAD");
        }
        allow.sort_by_key(|m| match *m {
            "GET" => 0,
            "HEAD" => 1,
            _ => 2,
        });
        let path = concrete(pattern);
        for m in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            if allow.contains(&m) {
                continue;
            }
            let r = s.request(m, &path, None, None);
            let what = format!("{m} {path}");
            assert_eq!(r.status, 405, "{what}: {}", r.text());
            assert_eq!(r.header("allow"), Some(allow.join(", ").as_str()), "{what}");
            in_shape(*surface, &r, &what);
            checked += 1;
        }
    }
    for r in rows.iter().filter(|r| r.auth) {
        let path = concrete(r.path);
        let what = format!("{} {path} without a key", r.method);
        let resp = s.request(r.method.as_str(), &path, None, None);
        assert_eq!(resp.status, 401, "{what}: {}", resp.text());
        in_shape(r.surface, &resp, &what);
        checked += 1;
    }
    assert!(checked > 40, "the walk checked only {checked} answers");
}

#[test]
fn unknown_paths_are_404_in_the_shape_of_the_surface_they_fall_under() {
    let s = TestServer::start();
    for (path, surface) in [
        ("/v1/nothing-here", Surface::AgentLex),
        ("/v1/collections/x1/nope", Surface::AgentLex),
        ("/v1/models/a/b", Surface::OpenAi),
        ("/v1/chat/completions/x", Surface::OpenAi),
        ("/api/v1/nothing-here", Surface::Soat),
        ("/sub/nothing-here", Surface::Plugin),
        ("/query/x", Surface::Plugin),
    ] {
        assert_eq!(Surface::of_path(path), surface, "{path}");
        let r = s.get(path, None);
        assert_eq!(r.status, 404, "{path}: {}", r.text());
        in_shape(surface, &r, path);
    }
}

/// The openai SDKs dispatch on `error.type`: what the gateway answers before any
/// handler runs (a bad key, an unknown route, a wrong method) must carry it.
#[test]
fn the_gateways_own_errors_are_openais_envelope() {
    let s = TestServer::start();
    let r = s.request("POST", "/v1/chat/completions", Some("al_notakeyatallnotakeyatallnotakeyatallnotake"), Some("{}"));
    assert_eq!((r.status, r.json()["error"]["type"].as_str()), (401, Some("authentication_error")), "{}", r.text());
    let r = s.request("DELETE", "/v1/models", None, None);
    assert_eq!((r.status, r.json()["error"]["type"].as_str()), (405, Some("invalid_request_error")), "{}", r.text());
    let r = s.get("/v1/models/x/y", None);
    assert_eq!((r.status, r.json()["error"]["type"].as_str()), (404, Some("not_found_error")), "{}", r.text());
}
