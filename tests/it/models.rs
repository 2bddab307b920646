//! The server's embedder: loaded at start-up from the installed models, named by health.

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use super::client::Conn;

use super::server::{bin, Options, TestServer};

#[test]
fn the_default_embedder_is_loaded_and_named_by_health() {
    let s = TestServer::with(Options { embedder: Some("multilingual-e5-small".into()), ..Options::default() });
    assert_eq!(s.get("/v1/health", None).json()["embedder"], "multilingual-e5-small");
}

/// Loading a second model beside the default is `embedders::one_server_searches_…`'s
/// (int8): e5-small in fp32 is 470 MB a session, too slow to start twice here.
#[test]
fn the_embedder_and_its_precision_are_chosen_by_config() {
    let s = TestServer::with(Options {
        embedder: Some("all-MiniLM-L6-v2".into()),
        config: "[models]\nprecision = \"fp32\"\n".into(),
        shards: Some(1),
        ..Options::default()
    });
    let h = s.get("/v1/health", None).json();
    assert_eq!(h["embedder"], "all-MiniLM-L6-v2");
    assert_eq!(h["embedders"], serde_json::json!(["all-MiniLM-L6-v2"]), "embedders left empty loads just the default");
}

#[test]
fn a_missing_model_stops_start_up_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--shards", "1", "--data"])
        .arg(dir.path())
        .env("QUARRY_EMBEDDER", "no-such-model")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no model `no-such-model`") && err.contains("multilingual-e5-small"), "{err}");
    // So is an unknown id among the loaded set, whose message names the choices too.
    let out = Command::new(bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--shards", "1", "--data"])
        .arg(dir.path())
        .env("QUARRY_EMBEDDERS", r#"["no-such-model", "multilingual-e5-small"]"#)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no model `no-such-model`") && err.contains("all-MiniLM-L6-v2"), "{err}");
    let out = Command::new(bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--shards", "1", "--data"])
        .arg(dir.path())
        .env("QUARRY_MODELS__RUNTIME_LIBRARY", dir.path().join("nope.so"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("run ops/setup"));
}

#[test]
fn health_says_none_when_run_without_an_embedder() {
    let s = TestServer::start();
    assert_eq!(s.get("/v1/health", None).json()["embedder"], "none");
}

/// Every shard loads its model sessions before any listener is bound: a client that
/// connects the moment the port answers (a load balancer's pool) gets connections on
/// every shard, not all on the one shard that happened to be ready first. Loading
/// e5-small takes a shard a few hundred milliseconds, so a shard that bound early would
/// be the port's only socket for that long.
#[test]
fn connections_opened_as_soon_as_the_port_answers_reach_every_shard() {
    let addr: SocketAddr = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let starting = std::thread::spawn(move || {
        TestServer::with(Options { embedder: Some("multilingual-e5-small".into()), listen: Some(addr), ..Options::default() })
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "the server never listened");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(100));
    let mut conns: Vec<Conn> = (0..16).map(|_| Conn::open(addr)).collect();
    let shards: BTreeSet<usize> = conns.iter_mut().map(|c| c.send("GET", "/v1/health", &[], None).shard()).collect();
    let _server = starting.join().unwrap();
    assert_eq!(shards, BTreeSet::from([0, 1]), "16 connections opened 100 ms after the port first answered");
}
