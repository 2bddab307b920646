//! The server's own reports: health, plans, the shard and request id on every answer, and metrics.

use super::server::TestServer;

#[test]
fn health_says_what_the_server_can_do() {
    let s = TestServer::start();
    let r = s.get("/v1/health", None);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let j = r.json();
    assert_eq!(j["ok"], true);
    assert_eq!(j["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(j["llm"], false);
    assert!(j["rerankers"].as_array().unwrap().is_empty());
    assert!(j["features"].as_array().unwrap().iter().any(|f| f == "keys"));
    assert!(r.header("x-ratelimit-limit").is_none(), "public endpoints carry no rate headers");
}

#[test]
fn plans_are_the_specs_three_with_null_for_unlimited() {
    let s = TestServer::start();
    let r = s.get("/v1/plans", None);
    assert_eq!(r.status, 200);
    let expected = serde_json::json!({
        "scribe": {"name": "Scribe", "price": 0, "storedChars": 20000000, "search": 2000, "extract": 500, "research": 50,
                   "rate": {"perMinute": 60, "burst": 20}},
        "scholar": {"name": "Scholar", "price": 49, "storedChars": 1000000000, "search": 100000, "extract": 20000, "research": 3000,
                    "rate": {"perMinute": 600, "burst": 100}},
        "library": {"name": "Library", "price": null, "storedChars": null, "search": null, "extract": null, "research": null,
                    "rate": {"perMinute": 6000, "burst": 500}}
    });
    assert_eq!(r.json(), expected);
}

#[test]
fn every_response_names_its_shard_and_request_id() {
    let s = TestServer::start();
    let mut c = s.conn();
    let given = c.send("GET", "/v1/health", &[("x-request-id", "trace-abc-123")], None);
    assert_eq!(given.header("x-request-id"), Some("trace-abc-123"));
    let a = c.send("GET", "/v1/nope", &[], None);
    let b = c.send("GET", "/v1/health", &[("x-request-id", "bad id with spaces")], None);
    let (ida, idb) = (a.header("x-request-id").unwrap(), b.header("x-request-id").unwrap());
    assert!(!ida.is_empty() && ida != idb && idb != "bad id with spaces");
    assert_eq!(a.shard(), b.shard(), "one keep-alive connection stays on one shard");
    let shards: Vec<usize> = s.conn_per_shard().iter_mut().map(|c| c.send("GET", "/v1/health", &[], None).shard()).collect();
    assert_eq!(shards, [0, 1]);
}

#[test]
fn metrics_count_requests_by_route_and_status() {
    let s = TestServer::start();
    for _ in 0..3 {
        assert_eq!(s.get("/v1/health", None).status, 200);
    }
    assert_eq!(s.get("/v1/account", None).status, 401);
    let r = s.get("/metrics", None);
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/plain"));
    let text = r.text();
    let count =
        |needle: &str| -> u64 { text.lines().filter(|l| l.starts_with(needle)).map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()).sum() };
    assert_eq!(count("quarry_http_requests_total{route=\"health\",status=\"200\"}"), 3, "{text}");
    assert_eq!(count("quarry_http_requests_total{route=\"account\",status=\"401\"}"), 1);
    assert_eq!(count("quarry_http_request_duration_seconds_count{route=\"health\"}"), 3);
    assert!(text.contains("quarry_open_connections{shard=\"1\"}"));
    assert!(text.contains("quarry_in_flight_requests{shard=\"0\"}"));
}

/// Regression: `/metrics` reported zero durations for health, plans and metrics (they
/// were never timed), and had no gauges of the index.
#[test]
fn metrics_time_every_route_and_gauge_the_index() {
    let s = TestServer::start();
    for path in ["/v1/health", "/v1/plans", "/metrics"] {
        for _ in 0..20 {
            assert_eq!(s.get(path, None).status, 200);
        }
    }
    let (_, key) = s.signup("gauges@example.com");
    let col = super::collections::create_collection(&s, &key, "g");
    for i in 0..3 {
        super::collections::add(&s, &key, &col, &serde_json::json!({"title": format!("d{i}"), "text": "Some text."}));
    }
    let text = s.get("/metrics", None).text();
    let value = |needle: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with(needle))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {needle} in {text}"))
    };
    for route in ["health", "plans", "metrics"] {
        assert!(value(&format!("quarry_http_request_duration_seconds_sum{{route=\"{route}\"}}")) > 0.0, "{route} was not timed: {text}");
    }
    assert_eq!(value("quarry_collections "), 1.0, "{text}");
    assert_eq!(value("quarry_documents "), 3.0, "{text}");
    assert!(value("quarry_wal_bytes ") > 0.0, "{text}");
    assert!(text.contains("# TYPE quarry_segments gauge"), "{text}");
}
