use super::*;

/// 1..=1000 µs, one request each, all 200 but the last ten (503).
fn thousand_requests() -> Stats {
    let mut stats = Stats::new();
    for us in 1..=1000u64 {
        let status = if us > 990 { 503 } else { 200 };
        stats.record(Duration::from_micros(us), status, 100, 40);
    }
    stats.errors.read = 2;
    stats.errors.connect = 1;
    stats
}

fn report() -> Report {
    let shape =
        RunShape { label: "hello".into(), target: "http://127.0.0.1:8080/".into(), connections: 64, threads: 1, window: Duration::from_secs(2) };
    Report::new(shape, &thousand_requests())
}

/// hdrhistogram at 3 significant digits: within 0.1% of the exact value.
fn assert_close(got_ns: u64, want_us: u64) {
    let want = want_us as f64 * 1e3;
    assert!((got_ns as f64 - want).abs() <= want * 0.001, "got {got_ns} ns, want {want_us} µs");
}

#[test]
fn percentiles_of_a_known_distribution() {
    let r = report();
    assert_close(r.latency.p50_ns, 500);
    assert_close(r.latency.p90_ns, 900);
    assert_close(r.latency.p99_ns, 990);
    assert_close(r.latency.p999_ns, 999);
    assert_close(r.latency.max_ns, 1000);
    assert!((r.latency.mean_ns - 500_500.0).abs() < 1_000.0, "{}", r.latency.mean_ns);
}

#[test]
fn counts_and_rates() {
    let r = report();
    assert_eq!(r.requests, 1000);
    assert_eq!(r.rps, 500.0);
    assert_eq!(r.non_2xx, 10);
    assert_eq!(r.socket_errors, 3);
    assert_eq!((r.bytes_read, r.bytes_written), (100_000, 40_000));
}

#[test]
fn human_line_reads_well() {
    let line = report().human_line();
    assert!(line.starts_with("hello: 500 req/s | latency p50 500.2µs p90 "), "{line}");
    assert!(line.contains("1,000 requests in 2.00s, 10 non-2xx, 3 socket errors (connect 1, read 2,"), "{line}");
    assert!(line.contains("read 100.0 KB (50.0 KB/s), written 40.0 KB"), "{line}");
}

#[test]
fn markdown_row_matches_header_columns() {
    let row = report().markdown_row();
    let header = Report::markdown_header().lines().next().unwrap();
    assert_eq!(row.matches('|').count(), header.matches('|').count());
    assert!(row.starts_with("| hello | 64 | 1 | 500 | 0.500 | 0.900 | 0.990 | 1.000 | 10 | 3 | 0.1 |"), "{row}");
}

#[test]
fn json_has_the_fields_scripts_read() {
    let value: serde_json::Value = serde_json::from_str(&report().json()).unwrap();
    assert_eq!(value["rps"], 500.0);
    assert_eq!(value["requests"], 1000);
    assert_eq!(value["non_2xx"], 10);
    assert!(value["latency"]["p99_ns"].as_u64().unwrap() > 980_000);
    assert_eq!(value["errors"]["read"], 2);
}

#[test]
fn empty_run_reports_zeros() {
    let shape = RunShape { label: "none".into(), target: "t".into(), connections: 1, threads: 1, window: Duration::ZERO };
    let r = Report::new(shape, &Stats::new());
    assert_eq!((r.rps, r.latency.p99_ns, r.requests), (0.0, 0, 0));
    assert!(r.human_line().starts_with("none: 0 req/s | latency p50 0ns"));
}

#[test]
fn latency_units() {
    assert_eq!(fmt_latency(850), "850ns");
    assert_eq!(fmt_latency(412_345), "412.3µs");
    assert_eq!(fmt_latency(1_234_567), "1.235ms");
    assert_eq!(fmt_latency(2_500_000_000), "2.500s");
    assert_eq!(fmt_ms(412_345), "0.412");
}

#[test]
fn byte_units_and_grouping() {
    assert_eq!(fmt_bytes(512), "512 B");
    assert_eq!(fmt_bytes(1_500), "1.5 KB");
    assert_eq!(fmt_bytes(21_400_000), "21.4 MB");
    assert_eq!(fmt_bytes(3_100_000_000), "3.10 GB");
    assert_eq!(group_thousands(0), "0");
    assert_eq!(group_thousands(999), "999");
    assert_eq!(group_thousands(1_000), "1,000");
    assert_eq!(group_thousands(1_234_567), "1,234,567");
}
