//! Issue 40: nodes on one PostgreSQL and one bucket are interchangeable. The
//! write-ahead log is the shared journal, so an add is durable in PostgreSQL before its
//! 201 and every node serves every collection, following the others' writes; one node
//! at a time flushes a collection, under a lease.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::collections::{add, create_collection, post};
use super::server::TestServer;
use quarry_test_support::store::{have_postgres, have_s3, psql, Cluster};

/// Flushes a second after a write, so the tests see segments published in seconds.
const FAST_FLUSH: &str = "[index]\nflush_interval = \"1s\"\n";

fn doc(title: &str, text: &str) -> Value {
    json!({"title": title, "text": text})
}

/// A keyword search, with `Quarry-After` when given: the titles found.
fn titles(s: &TestServer, key: &str, col: &str, query: &str, after: Option<&str>) -> Vec<String> {
    let auth = format!("Bearer {key}");
    let mut headers = vec![("authorization", auth.as_str())];
    if let Some(a) = after {
        headers.push(("quarry-after", a));
    }
    let body = json!({"query": query, "mode": "keyword"}).to_string();
    let r = s.conn().send("POST", &format!("/v1/collections/{col}/search"), &headers, Some(body.as_bytes()));
    assert_eq!(r.status, 200, "{}", r.text());
    let mut t: Vec<String> = r.json()["results"].as_array().unwrap().iter().map(|p| p["document"]["title"].as_str().unwrap().to_owned()).collect();
    t.sort();
    t.dedup();
    t
}

/// Waits (up to 10 s) until `f` holds; how long it took.
fn within(what: &str, f: impl Fn() -> bool) -> Duration {
    let started = Instant::now();
    while !f() {
        assert!(started.elapsed() < Duration::from_secs(10), "{what}: not within 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    started.elapsed()
}

/// `(lsn, manifest, covered)` of the collection's journal head, read in PostgreSQL.
fn head(cluster: &Cluster, col: &str) -> (u64, u64, u64) {
    let out = psql(&cluster.url, &format!("SELECT lsn || ' ' || manifest || ' ' || covered FROM quarry_journal_heads WHERE collection = '{col}'"));
    let v: Vec<u64> = out.split_whitespace().map(|n| n.parse().unwrap()).collect();
    (v[0], v[1], v[2])
}

fn metric(s: &TestServer, name: &str) -> u64 {
    let text = s.get("/metrics", None).text();
    text.lines().find_map(|l| l.strip_prefix(&format!("{name} "))).unwrap_or_else(|| panic!("{name} in {text}")).trim().parse().unwrap()
}

#[test]
fn every_node_serves_every_collection_and_sees_every_acknowledged_write() {
    if !have_postgres() || !have_s3() {
        return;
    }
    let cluster = Cluster::new(true);
    let mut a = TestServer::with(cluster.node("a", FAST_FLUSH));
    let b = TestServer::with(cluster.node("b", FAST_FLUSH));
    let (_, key) = a.signup("cluster@example.com");
    // Created on a, served by b from its first request.
    let col = create_collection(&a, &key, "shared");
    let r = post(&a, &format!("/v1/collections/{col}/documents"), &key, &doc("Granite", "granite quarries yield hard stone"));
    assert_eq!(r.status, 201, "{}", r.text());
    let seq = r.header("quarry-seq").expect("a write on the shared journal says its place").to_owned();
    assert!(seq.starts_with(&format!("{col}:")), "{seq}");
    // Read-your-writes: with the token, the other node answers with the write.
    assert_eq!(titles(&b, &key, &col, "granite", Some(&seq)), ["Granite"]);

    // Without the token, a write shows up on the other node within the follow lag.
    let r = post(&b, &format!("/v1/collections/{col}/documents"), &key, &doc("Marble", "marble quarries yield soft stone"));
    assert_eq!(r.status, 201, "{}", r.text());
    let lag = within("b's add on a", || titles(&a, &key, &col, "marble", None) == ["Marble"]);
    assert!(lag < Duration::from_secs(1), "{lag:?}");

    // A delete on b is gone on a.
    let gone = add(&a, &key, &col, &doc("Chalk", "chalk quarries yield soft white stone"));
    let gone_id = gone["id"].as_str().unwrap().to_owned();
    let auth = format!("Bearer {key}");
    let seq_add = head(&cluster, &col).0.to_string();
    let r = b.conn().send(
        "DELETE",
        &format!("/v1/collections/{col}/documents/{gone_id}"),
        &[("authorization", auth.as_str()), ("quarry-after", &format!("{col}:{seq_add}"))],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let del = r.header("quarry-seq").unwrap().to_owned();
    assert!(titles(&a, &key, &col, "chalk", Some(&del)).is_empty());

    // A token of a write the collection never had is refused, in AgentLex's shape.
    let r = a.conn().send(
        "GET",
        &format!("/v1/collections/{col}/documents"),
        &[("authorization", auth.as_str()), ("quarry-after", &format!("{col}:999999"))],
        None,
    );
    assert_eq!((r.status, r.code()), (400, "invalid_seq".to_owned()), "{}", r.text());

    // One node flushes: the head points at a manifest that covers the records, which
    // are gone from the journal; exactly one node holds the collection's lease.
    within("a flush published", || head(&cluster, &col).1 > 0);
    let leases = metric(&a, "quarry_maintenance_leases") + metric(&b, "quarry_maintenance_leases");
    assert_eq!(leases, 1, "one node flushes the collection");
    let (lsn, _, covered) = head(&cluster, &col);
    let rows: u64 =
        psql(&cluster.url, &format!("SELECT count(*) FROM quarry_journal WHERE collection = '{col}' AND lsn <= {covered}")).trim().parse().unwrap();
    assert_eq!(rows, 0, "records a manifest covers are dropped (head {lsn}, covered {covered})");

    // kill -9 right after an acknowledged add: the other node has it.
    let r = post(&a, &format!("/v1/collections/{col}/documents"), &key, &doc("Basalt", "basalt quarries yield dark stone"));
    assert_eq!(r.status, 201);
    let seq = r.header("quarry-seq").unwrap().to_owned();
    a.kill9();
    assert_eq!(titles(&b, &key, &col, "basalt", Some(&seq)), ["Basalt"]);
    // And a restarted node on an empty disk has everything, from the bucket and the
    // journal.
    std::fs::remove_dir_all(a.data().join("collections")).unwrap();
    a.restart();
    for (q, t) in [("granite", "Granite"), ("marble", "Marble"), ("basalt", "Basalt")] {
        assert_eq!(titles(&a, &key, &col, q, None), [t], "{q}");
    }
    assert!(titles(&a, &key, &col, "chalk", None).is_empty());
}
