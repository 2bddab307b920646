//! The library's `run` against each framing the parser knows.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

use quarry_bench::load::{run, LoadConfig, Report, RequestSpec, Scenario, Target};

use crate::fixture::{Framing, TestServer};

fn config(url: &str, scenario: Option<Scenario>) -> LoadConfig {
    let target = Target::parse(url).unwrap();
    let scenario = scenario.unwrap_or_else(|| Scenario::single(&RequestSpec::get(target.path()), target.host_header()));
    LoadConfig {
        label: "test".into(),
        target,
        scenario,
        connections: 4,
        threads: 2,
        duration: Duration::from_millis(300),
        warmup: Duration::from_millis(50),
        timeout: Duration::from_secs(2),
        pin: None,
    }
}

fn assert_clean(report: &Report) {
    assert!(report.requests > 10, "{}", report.human_line());
    assert_eq!(report.socket_errors, 0, "{}", report.human_line());
    assert_eq!(report.non_2xx, 0, "{}", report.human_line());
    assert!(report.latency.p50_ns > 0 && report.latency.p50_ns <= report.latency.max_ns);
}

#[test]
fn keep_alive_content_length() {
    let server = TestServer::start(Framing::ContentLength);
    let report = run(config(&server.url("/"), None)).unwrap();
    assert_clean(&report);
    assert_eq!(report.reconnects, 0);
    assert_eq!(report.threads, 2);
}

#[test]
fn keep_alive_chunked() {
    let server = TestServer::start(Framing::Chunked);
    let report = run(config(&server.url("/"), None)).unwrap();
    assert_clean(&report);
    assert_eq!(report.reconnects, 0);
}

#[test]
fn http10_server_closing_each_connection() {
    let server = TestServer::start(Framing::CloseEach);
    let report = run(config(&server.url("/"), None)).unwrap();
    assert_clean(&report);
    assert!(report.reconnects >= report.requests - 4, "{}", report.human_line());
}

#[test]
fn non_2xx_are_counted() {
    let server = TestServer::start(Framing::ContentLength);
    let report = run(config(&server.url("/missing"), None)).unwrap();
    assert_eq!(report.non_2xx, report.requests);
    assert_eq!(report.status_classes[4], report.requests);
}

#[test]
fn jsonl_scenario_sends_bodies() {
    let server = TestServer::start(Framing::ContentLength);
    let path = std::env::temp_dir().join(format!("quarry-load-it-{}.jsonl", std::process::id()));
    let mut file = std::fs::File::create(&path).unwrap();
    writeln!(file, r#"{{"method":"POST","path":"/v1/search","body":{{"q":"a"}}}}"#).unwrap();
    writeln!(file, r#"{{"path":"/missing"}}"#).unwrap();
    drop(file);
    let scenario = Scenario::from_jsonl(&path, &server.addr.to_string(), &[]).unwrap();
    std::fs::remove_file(&path).unwrap();
    let report = run(config(&server.url("/"), Some(scenario))).unwrap();
    assert!(report.requests > 10);
    let ratio = report.non_2xx as f64 / report.requests as f64;
    assert!((0.3..0.7).contains(&ratio), "half the requests go to /missing: {}", report.human_line());
    assert!(server.body_bytes.load(Ordering::Relaxed) >= 9 * (report.requests / 3));
}

#[test]
fn server_down_counts_connect_errors() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut cfg = config(&format!("http://127.0.0.1:{port}/"), None);
    cfg.warmup = Duration::ZERO;
    let report = run(cfg).unwrap();
    assert_eq!(report.requests, 0);
    assert!(report.errors.connect > 0);
}
