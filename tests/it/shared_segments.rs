//! Segments in object storage (`[segments] store = "s3"`), on a real S3-compatible
//! server (SeaweedFS, from `ops/test-engines`): what is published when, what a node on
//! an empty disk answers, and what the object store's loss does to a running server.
//! (The rest of the suite that keeps segments runs on S3 too: ops/test's second pass.)

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::collections::{add, create_collection, post};
use super::server::{Options, TestServer};
use quarry_test_support::store::{have_postgres, have_s3, OwnS3, Segments, Store, S3};

/// Flushes a second after a write, so a test sees its segments published in seconds.
const FAST_FLUSH: &str = "[index]\nflush_interval = \"1s\"\n";

fn search(s: &TestServer, key: &str, col: &str, query: &str) -> Value {
    let r = post(s, &format!("/v1/collections/{col}/search"), key, &json!({"query": query, "mode": "keyword"}));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

/// (title, citation) of each result, in order: what a client keeps and cites.
fn cited(r: &Value) -> Vec<(String, String)> {
    r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["document"]["title"].as_str().unwrap_or_default().to_owned(), p["citation"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

/// The collection's manifest as the bucket holds it, once it names a segment; every
/// file it names is checked to be in the bucket.
fn wait_published(s3: &S3, col: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(m) = bucket_manifest(s3, col).filter(|m| m["segments"].as_array().is_some_and(|s| !s.is_empty())) {
            let keys = s3.keys();
            for seq in m["segments"].as_array().unwrap() {
                let files = m["published"][seq.as_u64().unwrap().to_string()]["files"].as_array().cloned().unwrap_or_default();
                assert!(files.len() >= 2, "a segment's data and BM25 files: {m}");
                for f in files {
                    let object = format!("collections/{col}/segments/{}.{}", f["name"].as_str().unwrap(), &f["sha256"].as_str().unwrap()[..16]);
                    assert!(keys.contains(&object), "the manifest names {object}; the bucket holds {keys:?}");
                }
            }
            return m;
        }
        assert!(Instant::now() < deadline, "no manifest published for {col} in the bucket: {:?}", s3.keys());
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The collection's current manifest in the bucket: the newest generation when the
/// write-ahead log is the shared journal (records in PostgreSQL too), else `MANIFEST`.
fn bucket_manifest(s3: &S3, col: &str) -> Option<Value> {
    let generations = format!("collections/{col}/manifests/");
    let newest = s3.keys().into_iter().filter(|k| k.starts_with(&generations)).max();
    let key = newest.unwrap_or_else(|| format!("collections/{col}/MANIFEST"));
    let url = format!("{}/{}/{}/{key}", s3.endpoint, s3.bucket, s3.prefix);
    let out = std::process::Command::new("curl")
        .args(["-s", "-f", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", &format!("{}:{}", s3.key, s3.secret), &url])
        .output()
        .expect("curl runs");
    out.status.success().then(|| serde_json::from_slice(&out.stdout).expect("the manifest is JSON"))
}

/// Waits until the collection's local manifest names a segment (a flush landed).
fn wait_flushed_locally(s: &TestServer, col: &str) {
    let manifest = s.data().join("collections").join(col).join("MANIFEST");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&manifest)
        .is_ok_and(|m| serde_json::from_str::<Value>(&m).unwrap()["segments"].as_array().is_some_and(|s| !s.is_empty()))
    {
        assert!(Instant::now() < deadline, "no flush");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn empty_the_disk(s: &TestServer) {
    std::fs::remove_dir_all(s.data()).unwrap();
}

#[test]
fn a_node_on_an_empty_disk_answers_the_same_searches_from_the_bucket() {
    if !have_postgres() || !have_s3() {
        return;
    }
    let s3 = S3::shared();
    let options = Options { config: FAST_FLUSH.into(), store: Store::Postgres, segments: Segments::S3(s3.clone()), ..Options::default() };
    let mut s = TestServer::with(options);
    let (_, key) = s.signup("segments@example.com");
    let col = create_collection(&s, &key, "published");
    add(&s, &key, &col, &json!({"title": "Aspirin", "text": "Aspirin lowers the risk of a second heart attack."}));
    add(&s, &key, &col, &json!({"title": "Statins", "text": "Statins lower cholesterol in older adults and the risk of a heart attack."}));
    add(&s, &key, &col, &json!({"title": "Walking", "text": "Brisk walking most days lowers blood pressure."}));
    let before = search(&s, &key, &col, "heart attack risk");
    assert_eq!(before["results"].as_array().unwrap().len(), 2, "{before}");
    let manifest = wait_published(&s3, &col);
    assert!(manifest["published"].as_object().unwrap().values().all(|p| p["wal_before"].as_u64().unwrap() > 0), "{manifest}");

    // The machine is lost: kill -9, and the data directory with it.
    s.kill9();
    empty_the_disk(&s);
    s.restart();
    let after = search(&s, &key, &col, "heart attack risk");
    assert_eq!(cited(&after), cited(&before), "the same pages, the same citations");
    let walking = search(&s, &key, &col, "blood pressure");
    assert_eq!(walking["results"][0]["document"]["title"], "Walking", "{walking}");
    // The fetched segment files are on disk again, checked against the manifest.
    assert!(s.data().join("collections").join(&col).join("MANIFEST").exists());

    // Deleting the collection removes its objects.
    let r = s.request("DELETE", &format!("/v1/collections/{col}"), Some(&key), None);
    assert!(r.status == 200 || r.status == 204, "{}", r.text());
    let deadline = Instant::now() + Duration::from_secs(20);
    while s3.keys().iter().any(|k| k.starts_with(&format!("collections/{col}/"))) {
        assert!(Instant::now() < deadline, "objects left after the delete: {:?}", s3.keys());
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn with_the_object_store_down_a_flush_publishes_nothing_half_and_completes_when_it_returns() {
    if !have_postgres() || !have_s3() {
        return;
    }
    let own = OwnS3::start();
    let options = Options { config: FAST_FLUSH.into(), store: Store::Postgres, segments: Segments::S3(own.s3.clone()), ..Options::default() };
    let mut s = TestServer::with(options);
    let (_, key) = s.signup("flush@example.com");
    let col = create_collection(&s, &key, "flushing");
    add(&s, &key, &col, &json!({"title": "Aspirin", "text": "Aspirin lowers the risk of a second heart attack."}));
    let first = wait_published(&own.s3, &col);
    assert_eq!(first["segments"].as_array().unwrap().len(), 1, "{first}");

    own.kill();
    // Written while the bucket is gone: acknowledged (the WAL is local) and searchable.
    add(&s, &key, &col, &json!({"title": "Statins", "text": "Statins lower the risk of a heart attack in older adults."}));
    std::thread::sleep(Duration::from_secs(4)); // flushes were tried, and failed
    let during = search(&s, &key, &col, "heart attack");
    assert_eq!(during["results"].as_array().unwrap().len(), 2, "{during}");
    // The local manifest names only segments whose files are complete on disk.
    let dir = s.data().join("collections").join(&col);
    let local: Value = serde_json::from_slice(&std::fs::read(dir.join("MANIFEST")).unwrap()).unwrap();
    for seq in local["segments"].as_array().unwrap() {
        let seq = seq.as_u64().unwrap();
        for f in local["published"][seq.to_string()]["files"].as_array().expect("each segment's files and sums") {
            let bytes = std::fs::metadata(dir.join("segments").join(f["name"].as_str().unwrap())).unwrap().len();
            assert_eq!(bytes, f["bytes"].as_u64().unwrap(), "{local}");
        }
    }
    assert_eq!(local["segments"], first["segments"], "nothing new is published while the bucket is down: {local}");

    own.restart();
    // The flush completes once the bucket is back, without a restart.
    let deadline = Instant::now() + Duration::from_secs(60);
    let published = loop {
        let m = wait_published(&own.s3, &col);
        if m["segments"] != first["segments"] {
            break m;
        }
        assert!(Instant::now() < deadline, "the flush never completed: {m}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(!published["segments"].as_array().unwrap().is_empty(), "{published}");

    // And what was published is all a node on an empty disk needs.
    let before = search(&s, &key, &col, "heart attack");
    s.kill9();
    empty_the_disk(&s);
    s.restart();
    let after = search(&s, &key, &col, "heart attack");
    assert_eq!(cited(&after), cited(&before));
    assert_eq!(after["results"].as_array().unwrap().len(), 2, "{after}");
}

/// `quarry migrate` with the given backends' settings in its environment.
fn migrate(s: &TestServer, env: &[(String, String)]) -> std::process::Output {
    std::process::Command::new(super::server::bin())
        .arg("migrate")
        .arg("--data")
        .arg(s.data())
        .env_remove("QUARRY_STORE__KIND")
        .env_remove("QUARRY_STORE__URL")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("quarry migrate runs")
}

#[test]
fn migrate_moves_a_data_directory_onto_postgres_and_s3_checked_and_safe_to_run_again() {
    if !have_postgres() || !have_s3() {
        return;
    }
    // A server on the embedded defaults, with a flushed collection and records.
    let options = Options { config: FAST_FLUSH.into(), store: Store::Embedded, segments: Segments::Local, ..Options::default() };
    let mut s = TestServer::with(options);
    let (account, key) = s.signup("migrate@example.com");
    let col = create_collection(&s, &key, "moving");
    add(&s, &key, &col, &json!({"title": "Aspirin", "text": "Aspirin lowers the risk of a second heart attack."}));
    add(&s, &key, &col, &json!({"title": "Statins", "text": "Statins lower the risk of a heart attack in older adults."}));
    wait_flushed_locally(&s, &col);
    let before = search(&s, &key, &col, "heart attack");

    // Refused while the server runs: the data directory is in use.
    let url = quarry_test_support::store::new_schema();
    let s3 = S3::shared();
    let mut env = s3.env();
    env.extend([("QUARRY_STORE__KIND".to_owned(), "postgres".to_owned()), ("QUARRY_STORE__URL".to_owned(), url.clone())]);
    let busy = migrate(&s, &env);
    assert!(!busy.status.success() && String::from_utf8_lossy(&busy.stderr).contains("in use by another process"), "{busy:?}");
    s.terminate(Duration::from_secs(20));

    for run in ["first", "again"] {
        let out = migrate(&s, &env);
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{run}: {said}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(said.contains("every entry read back and equal") && said.contains("SHA-256 checked"), "{run}: {said}");
        assert!(said.contains("1 collections"), "{run}: {said}");
    }
    assert!(s3.keys().contains(&format!("collections/{col}/MANIFEST")), "{:?}", s3.keys());

    // The same data directory, now on the shared backends: the same account, key and pages.
    s.set_backends(Some(url.clone()), Some(s3.clone()));
    s.restart();
    assert_eq!(s.get("/v1/account", Some(&key)).json()["id"], account.as_str());
    assert_eq!(cited(&search(&s, &key, &col, "heart attack")), cited(&before));

    // Once a server writes the database, a re-run would overwrite newer records with the
    // data directory's older ones: it is refused, and changes nothing.
    let (later, later_key) = s.signup("later@example.com");
    s.terminate(Duration::from_secs(20));
    let refused = migrate(&s, &env);
    let err = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(!refused.status.success() && err.contains("already holds records this data directory does not"), "{err}");
    s.restart();
    assert_eq!(s.get("/v1/account", Some(&later_key)).json()["id"], later.as_str());

    // And from the bucket and PostgreSQL alone, on an empty disk.
    s.kill9();
    empty_the_disk(&s);
    s.restart();
    assert_eq!(cited(&search(&s, &key, &col, "heart attack")), cited(&before));
}

#[test]
fn turning_s3_on_for_a_data_directory_publishes_its_older_segments_with_the_next_flush() {
    if !have_postgres() || !have_s3() {
        return;
    }
    let url = quarry_test_support::store::new_schema();
    let options = Options { config: FAST_FLUSH.into(), store: Store::Url(url.clone()), segments: Segments::Local, ..Options::default() };
    let mut s = TestServer::with(options);
    let (_, key) = s.signup("legacy@example.com");
    let col = create_collection(&s, &key, "older");
    add(&s, &key, &col, &json!({"title": "Aspirin", "text": "Aspirin lowers the risk of a second heart attack."}));
    wait_flushed_locally(&s, &col);
    s.terminate(Duration::from_secs(20));

    // The bucket is configured without quarry migrate; the next flush publishes both.
    let s3 = S3::shared();
    s.set_backends(Some(url), Some(s3.clone()));
    s.restart();
    add(&s, &key, &col, &json!({"title": "Statins", "text": "Statins lower the risk of a heart attack in older adults."}));
    let published = wait_published(&s3, &col);
    assert!(!published["segments"].as_array().unwrap().is_empty(), "{published}");
    let before = search(&s, &key, &col, "heart attack");
    assert_eq!(before["results"].as_array().unwrap().len(), 2, "{before}");
    s.kill9();
    empty_the_disk(&s);
    s.restart();
    assert_eq!(cited(&search(&s, &key, &col, "heart attack")), cited(&before));
}

/// A gauge of `/metrics`, 0 when absent.
fn gauge(s: &TestServer, name: &str) -> u64 {
    let text = s.get("/metrics", None).text();
    text.lines().find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')).map(|v| v.trim().parse().unwrap())).unwrap_or(0)
}

fn wait_gauge(s: &TestServer, name: &str, at_least: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while gauge(s, name) < at_least {
        assert!(Instant::now() < deadline, "{name} stayed below {at_least}: {}", s.get("/metrics", None).text());
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_local_segment_cache_is_bounded_and_an_evicted_collection_is_fetched_again() {
    if !have_s3() {
        return;
    }
    let own = OwnS3::start();
    // A one-byte cache: every idle collection whose segments are published goes.
    let options = Options {
        config: FAST_FLUSH.into(),
        store: Store::Embedded,
        segments: Segments::S3(own.s3.clone()),
        env: vec![("QUARRY_SEGMENTS__CACHE".into(), "1B".into())],
        ..Options::default()
    };
    let s = TestServer::with(options);
    let (_, key) = s.signup("cache@example.com");
    let cardio = create_collection(&s, &key, "cardio");
    let other = create_collection(&s, &key, "other");
    add(&s, &key, &cardio, &json!({"title": "Aspirin", "text": "Aspirin lowers the risk of a second heart attack."}));
    add(&s, &key, &cardio, &json!({"title": "Statins", "text": "Statins lower cholesterol and the risk of a heart attack."}));
    add(&s, &key, &other, &json!({"title": "Walking", "text": "Brisk walking most days lowers blood pressure."}));
    let before = search(&s, &key, &cardio, "heart attack risk");
    assert_eq!(before["results"].as_array().unwrap().len(), 2, "{before}");

    // Flushed, published, then evicted: the segment files leave local disk, the
    // manifest and the WAL stay.
    wait_gauge(&s, "quarry_segment_cache_evictions", 2);
    let dir = s.data().join("collections").join(&cardio);
    assert!(!dir.join("segments").exists(), "an evicted collection keeps no segment files");
    assert!(dir.join("MANIFEST").exists() && dir.join("wal").exists());
    assert_eq!(gauge(&s, "quarry_segment_cache_cold"), 2);
    assert_eq!(gauge(&s, "quarry_collections"), 2, "evicted collections still count");

    // The retrieval plugin names a collection by name: that one is fetched again, and
    // the account's other collections stay in the bucket.
    assert_eq!(gauge(&s, "quarry_segment_cache_refetches"), 0);
    let r = s.request("POST", "/query", Some(&key), Some(&json!({"namespace": "cardio", "queries": [{"query": "heart attack"}]}).to_string()));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["results"][0]["results"].as_array().map_or(0, Vec::len), 2, "{}", r.text());
    assert_eq!(gauge(&s, "quarry_segment_cache_refetches"), 1, "only the collection named was fetched");

    // A search opens it again from the bucket: the same pages, the same citations.
    let again = search(&s, &key, &cardio, "heart attack risk");
    assert_eq!(cited(&again), cited(&before));
    assert!(gauge(&s, "quarry_segment_cache_refetches") >= 1);
    // A listing shows both; an add to an evicted collection lands and is searchable.
    let listed = s.get("/v1/collections", Some(&key)).json();
    assert_eq!(listed["collections"].as_array().map_or(0, |d| d.len()), 2, "{listed}");
    add(&s, &key, &other, &json!({"title": "Swimming", "text": "Swimming lowers blood pressure too."}));
    let swim = search(&s, &key, &other, "blood pressure");
    assert_eq!(swim["results"].as_array().unwrap().len(), 2, "{swim}");

    // Evicted again once idle; with the bucket gone, a request for it is a clear 503
    // and changes nothing; once it is back, the same answer.
    let evicted = gauge(&s, "quarry_segment_cache_evictions");
    wait_gauge(&s, "quarry_segment_cache_evictions", evicted + 2);
    own.kill();
    let r = post(&s, &format!("/v1/collections/{cardio}/search"), &key, &json!({"query": "heart attack risk", "mode": "keyword"}));
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], "store_unavailable", "{}", r.text());
    assert!(r.header("retry-after").is_some());
    own.restart();
    // Retried as its retry-after says, until the object store serves again.
    let deadline = Instant::now() + Duration::from_secs(60);
    let back = loop {
        let r = post(&s, &format!("/v1/collections/{cardio}/search"), &key, &json!({"query": "heart attack risk", "mode": "keyword"}));
        if r.status != 503 || Instant::now() > deadline {
            assert_eq!(r.status, 200, "{}", r.text());
            break r.json();
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    assert_eq!(cited(&back), cited(&before));
}
