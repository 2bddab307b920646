//! The server's embedder: loaded at start-up from the installed models, named by health.

use std::process::Command;

use super::server::{bin, Options, TestServer};

#[test]
fn the_default_embedder_is_loaded_and_named_by_health() {
    let s = TestServer::with(Options { embedder: Some("multilingual-e5-small".into()), ..Options::default() });
    assert_eq!(s.get("/v1/health", None).json()["embedder"], "multilingual-e5-small");
}

#[test]
fn the_embedder_is_chosen_by_config_and_others_load_beside_it() {
    let s = TestServer::with(Options {
        embedder: Some("all-MiniLM-L6-v2".into()),
        config: "[models]\nprecision = \"fp32\"\nalso_load = [\"multilingual-e5-small\"]\n".into(),
        shards: Some(1),
    });
    assert_eq!(s.get("/v1/health", None).json()["embedder"], "all-MiniLM-L6-v2");
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
