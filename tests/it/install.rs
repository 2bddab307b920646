//! Where the server finds its models: from the binary's installation, whatever the working directory.
//!
//! Regression (issue 1/9, "run from another directory, the server cannot find
//! `models/`"): the models are found from the binary's installation, not the working
//! directory, and a missing one names the path tried and the settings that move it.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use super::client::Conn;
use super::server::bin;

/// `quarry serve` started in `cwd` with `embedder`, without any models setting of ours.
fn serve_in(cwd: &Path, embedder: &str) -> Command {
    let mut c = Command::new(bin());
    c.args(["serve", "--listen", "127.0.0.1:0", "--shards", "1", "--data"])
        .arg(cwd.join("data"))
        .current_dir(cwd)
        .env_remove("QUARRY_LISTEN")
        .env_remove("QUARRY_MODELS__DIR")
        .env_remove("QUARRY_MODELS__RUNTIME_LIBRARY")
        .env("QUARRY_EMBEDDER", embedder);
    c
}

#[test]
fn run_from_another_directory_the_server_finds_its_models() {
    let cwd = tempfile::tempdir().unwrap();
    assert!(!cwd.path().join("models").exists());
    let mut child = serve_in(cwd.path(), "all-MiniLM-L6-v2").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let addr = first.split("http://").nth(1).and_then(|r| r.split_whitespace().next());
    let Some(addr) = addr else {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!("quarry did not start from {}: {}", cwd.path().display(), String::from_utf8_lossy(&out.stderr));
    };
    let health = Conn::open(addr.parse().unwrap()).send("GET", "/v1/health", &[], None);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(health.json()["embedder"], "all-MiniLM-L6-v2");
}

#[test]
fn a_wrong_models_dir_stops_start_up_naming_the_path_tried_and_how_to_set_it() {
    let cwd = tempfile::tempdir().unwrap();
    let wrong = cwd.path().join("not-the-models");
    let out = serve_in(cwd.path(), "all-MiniLM-L6-v2").env("QUARRY_MODELS__DIR", &wrong).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("tried models.dir = {}", wrong.display())), "{err}");
    assert!(err.contains("QUARRY_MODELS__DIR") && err.contains("[models]"), "{err}");

    // A relative setting is taken from the installation, and the message says so.
    let out = serve_in(cwd.path(), "all-MiniLM-L6-v2").env("QUARRY_MODELS__DIR", "not-the-models").output().unwrap();
    assert!(!out.status.success());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).canonicalize().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("tried models.dir = {}", root.join("not-the-models").display())), "{err}");
    assert!(err.contains(&format!("from the installation at {}", root.display())), "{err}");
}
