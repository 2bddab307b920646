//! Records in PostgreSQL (`[store] kind = "postgres"`): what the shared store's loss
//! does to a running server, on a PostgreSQL of the test's own that it stops as a
//! crash would. (The rest of the suite that keeps records runs on PostgreSQL too:
//! ops/test's second pass, `ops/test-on-shared-backends`.)

use serde_json::{json, Value};

use super::collections::{add, create_collection, post};
use super::server::{Options, TestServer};
use quarry_test_support::store::{have_postgres, psql, OwnPostgres, Store};

fn search(s: &TestServer, key: &str, col: &str, query: &str) -> super::client::Response {
    post(s, &format!("/v1/collections/{col}/search"), key, &json!({"query": query, "mode": "keyword"}))
}

fn titles(r: &Value) -> Vec<String> {
    r["results"].as_array().unwrap().iter().map(|p| p["title"].as_str().unwrap_or_default().to_owned()).collect()
}

#[test]
fn with_postgres_down_writes_fail_with_503_and_change_nothing_and_searches_answer() {
    if !have_postgres() {
        return;
    }
    let pg = OwnPostgres::start();
    let mut s = TestServer::with(Options { store: Store::Url(pg.url.clone()), ..Options::default() });
    let (account, key) = s.signup("shared@example.com");
    let col = create_collection(&s, &key, "kept");
    add(&s, &key, &col, &json!({"title": "Aspirin", "text": "Aspirin lowers the risk of a second heart attack."}));
    add(&s, &key, &col, &json!({"title": "Statins", "text": "Statins lower cholesterol in older adults."}));
    let before = search(&s, &key, &col, "aspirin heart");
    assert_eq!(before.status, 200, "{}", before.text());
    // The records are in PostgreSQL, not the data directory.
    assert!(!s.data().join("records.redb").exists(), "no redb beside a PostgreSQL store");
    assert_eq!(psql(&pg.url, &format!("SELECT count(*) FROM kv_rows WHERE tbl = 'collections' AND key = '{col}'")), "1");

    pg.kill();
    // A search of a collection already served keeps answering, the same.
    let during = search(&s, &key, &col, "aspirin heart");
    assert_eq!(during.status, 200, "{}", during.text());
    assert_eq!(titles(&during.json()), titles(&before.json()));
    // A write that needs the records store is refused, in AgentLex's shape, retryable.
    let refused = post(&s, "/v1/collections", &key, &json!({"name": "new while down"}));
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert_eq!(refused.code(), "store_unavailable", "{}", refused.text());
    assert!(refused.header("retry-after").is_some(), "a 503 says when to retry");
    let message = refused.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("nothing was changed") && !message.contains("127.0.0.1"), "{message}");

    pg.restart();
    // Nothing of the refused write was kept, and writes work again without a restart.
    let mut listed = Value::Null;
    for _ in 0..50 {
        let r = s.get("/v1/collections", Some(&key));
        if r.status == 200 {
            listed = r.json();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let names: Vec<&str> = listed["collections"].as_array().expect("collections listed again").iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["kept"], "{listed}");
    let again = post(&s, "/v1/collections", &key, &json!({"name": "after"}));
    assert_eq!(again.status, 201, "{}", again.text());

    // And after kill -9, every acknowledged record is read back from PostgreSQL.
    s.kill9();
    s.restart();
    let account_now = s.get("/v1/account", Some(&key));
    assert_eq!(account_now.status, 200, "{}", account_now.text());
    assert_eq!(account_now.json()["id"], account.as_str());
    let r = s.get("/v1/collections", Some(&key)).json();
    assert_eq!(r["collections"].as_array().unwrap().len(), 2, "{r}");
}

#[test]
fn a_bad_store_setting_stops_the_start_naming_it_and_never_the_password() {
    let mut options = Options::default();
    options.env.push(("QUARRY_STORE__KIND".into(), "postgres".into()));
    options.env.push(("QUARRY_STORE__URL".into(), "postgres://quarry:s3cret-pw@127.0.0.1:1/quarry".into()));
    options.env.push(("QUARRY_STORE__CONNECT_TIMEOUT".into(), "300ms".into()));
    let out = std::process::Command::new(super::server::bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--shards", "1"])
        .arg("--data")
        .arg(tempfile::tempdir().unwrap().path())
        .envs(options.env.iter().map(|(k, v)| (k, v)))
        .env("QUARRY_EMBEDDER", "none")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("127.0.0.1:1") && err.contains("unavailable"), "says where it could not reach: {err}");
    assert!(!err.contains("s3cret-pw"), "never the password: {err}");

    let out = std::process::Command::new(super::server::bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--shards", "1"])
        .arg("--data")
        .arg(tempfile::tempdir().unwrap().path())
        .env("QUARRY_STORE__KIND", "mysql")
        .env("QUARRY_EMBEDDER", "none")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("store.kind"), "{err}");
}

/// `/v1/health` of `s`, once its cluster view satisfies `ok` (heartbeats land every
/// 200 ms here), within 20 s.
fn health_when(s: &TestServer, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let h = s.get("/v1/health", None).json();
        if ok(&h) {
            return h;
        }
        assert!(std::time::Instant::now() < deadline, "{h}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn nodes_sharing_a_store_see_each_other_by_heartbeat_and_a_dead_one_ages_out() {
    if !have_postgres() {
        return;
    }
    let url = quarry_test_support::store::new_schema();
    let fast = "[cluster]\nheartbeat = \"200ms\"\nnode_timeout = \"1s\"\n";
    let named = |n: &str| Options { store: Store::Url(url.clone()), config: format!("{fast}node = \"{n}\"\n"), ..Options::default() };
    let a = TestServer::with(named("east-1"));
    let mut b = TestServer::with(named("east-2"));
    let mut c = TestServer::with(Options { store: Store::Url(url.clone()), config: fast.into(), ..Options::default() });

    // Each says which node answered; all three are members and see three live nodes.
    let ha = health_when(&a, |h| h["cluster"]["nodes"] == 3);
    assert_eq!((ha["node"].as_str(), ha["cluster"]["member"].as_bool()), (Some("east-1"), Some(true)), "{ha}");
    assert_eq!(health_when(&b, |h| h["cluster"]["nodes"] == 3)["node"], "east-2");
    // Unnamed, a node makes a name at its first start and keeps it across restarts.
    let made = health_when(&c, |h| h["cluster"]["nodes"] == 3)["node"].as_str().unwrap().to_owned();
    assert!(made.starts_with("node-"), "{made}");
    c.terminate(std::time::Duration::from_secs(20));
    // A clean stop leaves at once (long before the timeout would age it out).
    health_when(&a, |h| h["cluster"]["nodes"] == 2);
    c.restart();
    assert_eq!(health_when(&c, |h| h["cluster"]["nodes"] == 3)["node"], made.as_str());

    // kill -9: no goodbye; the others stop counting it once its heartbeat is 1 s old.
    b.kill9();
    let h = health_when(&a, |h| h["cluster"]["nodes"] == 2);
    assert_eq!(h["cluster"]["member"], true, "{h}");
    let metrics = a.get("/metrics", None).text();
    assert!(metrics.contains("quarry_cluster_nodes 2") && metrics.contains("quarry_cluster_member 1"), "{metrics}");
    b.restart();
    health_when(&a, |h| h["cluster"]["nodes"] == 3);
}

#[test]
fn a_node_on_the_embedded_store_is_alone_and_says_so() {
    let s = TestServer::with(Options { store: Store::Embedded, config: "[cluster]\nnode = \"solo\"\n".into(), ..Options::default() });
    let h = s.get("/v1/health", None).json();
    assert_eq!(h["node"], "solo", "{h}");
    assert!(h.get("cluster").is_none(), "no cluster without shared records: {h}");
    assert!(!s.get("/metrics", None).text().contains("quarry_cluster_"));
}

#[test]
fn one_keys_rate_holds_for_the_cluster_not_for_each_node() {
    if !have_postgres() {
        return;
    }
    let url = quarry_test_support::store::new_schema();
    // 120 a minute (two a second), a burst of 6, shared by three nodes.
    let config = "[auth]\ndefault_plan = \"paced\"\n[plans.paced]\nname = \"Paced\"\nprice = 0\nstored_chars = 100000\nsearch = 10\nextract = 1\n\
                  research = 1\nrate_per_minute = 120\nburst = 6\n[cluster]\nheartbeat = \"200ms\"\nnode_timeout = \"1s\"\n";
    let nodes: Vec<TestServer> =
        (0..3).map(|_| TestServer::with(Options { store: Store::Url(url.clone()), config: config.into(), ..Options::default() })).collect();
    for n in &nodes {
        health_when(n, |h| h["cluster"]["nodes"] == 3);
    }
    let (_, key) = nodes[0].signup("paced@example.com");
    // A client spread over the three nodes (as a balancer would), as fast as it can,
    // for 12 s: served no more than the plan's rate and burst, and not much less.
    let seconds = 12;
    let started = std::time::Instant::now();
    let (mut served, mut refused, mut i) = (0u64, 0u64, 0usize);
    while started.elapsed() < std::time::Duration::from_secs(seconds) {
        let r = nodes[i % 3].get("/v1/account", Some(&key));
        i += 1;
        match r.status {
            200 => {
                served += 1;
                assert_eq!(r.header("x-ratelimit-limit"), Some("6"), "clients are told the plan's burst");
            }
            429 => {
                refused += 1;
                assert!(r.header("retry-after").is_some());
            }
            other => panic!("{other}: {}", r.text()),
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let allowed = 2 * seconds + 6 + 2; // the rate, the burst, and the shares' rounding up
    assert!(served <= allowed, "served {served} in {seconds} s across three nodes; the plan allows {allowed}");
    assert!(served >= 2 * seconds - 3, "served {served}: the nodes together give the plan's rate");
    assert!(refused > 0);
}
