//! The `quarry-load` binary: refusal of non-loopback targets, and its JSON output.

use std::process::Command;

use crate::fixture::{Framing, TestServer};

fn quarry_load(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_quarry-load")).args(args).output().unwrap()
}

#[test]
fn non_loopback_target_is_refused_before_any_connection() {
    for target in ["http://192.0.2.1:80/", "http://[2001:db8::1]:8080/", "203.0.113.9:7700"] {
        let out = quarry_load(&["-d", "1s", target]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{target}: {stderr}");
        assert!(stderr.contains("only drives loopback addresses (127.0.0.0/8 or ::1)"), "{stderr}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn json_output_for_scripts() {
    let server = TestServer::start(Framing::ContentLength);
    let out = quarry_load(&["-c", "2", "-d", "200ms", "--warmup", "0", "--json", "--label", "it", &server.url("/")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["label"], "it");
    assert!(report["rps"].as_f64().unwrap() > 0.0);
    assert_eq!(report["socket_errors"], 0);
}

#[test]
fn human_and_markdown_output() {
    let server = TestServer::start(Framing::Chunked);
    let out = quarry_load(&["-c", "2", "-d", "200ms", "--warmup", "0", "--markdown-header", "--label", "md", &server.url("/")]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    assert!(lines[0].starts_with("md: ") && lines[0].contains(" req/s | latency p50 "), "{stdout}");
    assert!(lines[1].starts_with("| run | conns |"), "{stdout}");
    assert!(lines[3].starts_with("| md | 2 | 1 | "), "{stdout}");
}
