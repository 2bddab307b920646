//! The plans' rate limits: one bucket per key across every shard, 429 with `retry-after`, and recovery.

use std::time::Duration;

use super::server::TestServer;

use super::plans::TINY;

#[test]
fn the_rate_is_one_bucket_across_all_shards_then_recovers() {
    let s = TestServer::with_config(TINY);
    let (_, key) = s.signup("a@x.org");
    let auth = format!("Bearer {key}");
    let mut conns = s.conn_per_shard();
    let mut remaining = Vec::new();
    for i in 0..3 {
        let r = conns[i % 2].send("GET", "/v1/account", &[("authorization", &auth)], None);
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.header("x-ratelimit-limit"), Some("3"));
        remaining.push(r.header("x-ratelimit-remaining").unwrap().to_owned());
    }
    assert_eq!(remaining, ["2", "1", "0"]);
    // The burst is spent whichever shard is asked.
    for c in conns.iter_mut() {
        let r = c.send("GET", "/v1/account", &[("authorization", &auth)], None);
        assert_eq!((r.status, r.code().as_str()), (429, "rate_limited"));
        assert_eq!(r.header("retry-after"), Some("1"));
        assert_eq!(r.header("x-ratelimit-remaining"), Some("0"));
        assert_eq!(r.header("x-ratelimit-reset"), Some("1"));
        assert!(r.json()["error"]["message"].as_str().unwrap().contains("Tiny"));
    }
    // 600 per minute: a token every 100 ms.
    std::thread::sleep(Duration::from_millis(1100));
    let r = conns[1].send("GET", "/v1/account", &[("authorization", &auth)], None);
    assert_eq!(r.status, 200);
}

#[test]
fn buckets_are_per_key() {
    let s = TestServer::with_config(&TINY.replace("rate_per_minute = 600", "rate_per_minute = 60"));
    let (_, a) = s.signup("a@x.org");
    for _ in 0..3 {
        assert_eq!(s.get("/v1/account", Some(&a)).status, 200);
    }
    assert_eq!(s.get("/v1/account", Some(&a)).status, 429);
    // One token a second: wait for one, spend it on issuing a second key.
    std::thread::sleep(Duration::from_millis(1100));
    let b = s.request("POST", "/v1/keys", Some(&a), None).json()["api_key"].as_str().unwrap().to_owned();
    assert_eq!(s.get("/v1/account", Some(&b)).status, 200);
    assert_eq!(s.get("/v1/account", Some(&a)).status, 429);
}

/// Issue 1/9: evaluate costs 5; refused with 3 tokens left, the response said
/// `x-ratelimit-reset: 0` beside `retry-after: 3`.
#[test]
fn a_refusal_for_cost_has_a_reset_no_sooner_than_retry_after() {
    let s = TestServer::with_config(&TINY.replace("rate_per_minute = 600\nburst = 3", "rate_per_minute = 60\nburst = 6"));
    let (_, key) = s.signup("a@x.org");
    for _ in 0..3 {
        assert_eq!(s.get("/v1/account", Some(&key)).status, 200);
    }
    let r = s.request("POST", "/v1/collections/col_none/evaluate", Some(&key), Some("{}"));
    assert_eq!((r.status, r.code().as_str()), (429, "rate_limited"), "{}", r.text());
    let header = |name: &str| r.header(name).unwrap_or_else(|| panic!("no {name}")).parse::<u64>().unwrap();
    assert!(header("x-ratelimit-remaining") >= 3, "tokens are left, just not five");
    let (retry, reset) = (header("retry-after"), header("x-ratelimit-reset"));
    assert!(retry >= 1 && reset >= retry, "reset {reset} is sooner than retry-after {retry}");
    // And the bucket does serve it once the reset has passed.
    std::thread::sleep(Duration::from_secs(reset));
    let r = s.request("POST", "/v1/collections/col_none/evaluate", Some(&key), Some("{}"));
    assert_ne!(r.status, 429, "{}", r.text());
}
