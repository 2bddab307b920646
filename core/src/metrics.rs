//! Prometheus metrics. Each shard writes only its own counters (single writer, so a
//! relaxed load+store, no locked instruction); `GET /metrics` reads every shard's.
//! Routes are counted by their row in the route table (its names label them), with
//! one slot more for requests no row matched.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Latency histogram bounds, seconds.
const BOUNDS: [f64; 14] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];
/// Statuses counted one by one; anything else is counted as "other".
const STATUSES: [u16; 16] = [200, 201, 400, 401, 403, 404, 405, 408, 409, 413, 429, 431, 500, 502, 503, 0];

#[derive(Default)]
struct RouteMetrics {
    by_status: [AtomicU64; STATUSES.len()],
    buckets: [AtomicU64; BOUNDS.len() + 1],
    sum_micros: AtomicU64,
}

pub struct ShardMetrics {
    routes: Vec<RouteMetrics>,
    pub open_connections: AtomicU64,
    pub in_flight: AtomicU64,
    pub refused_connections: AtomicU64,
}

#[inline]
fn bump(c: &AtomicU64, by: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(by), Ordering::Relaxed);
}

impl ShardMetrics {
    /// Counters for `routes` table rows and the unmatched slot after them.
    pub fn new(routes: usize) -> ShardMetrics {
        ShardMetrics {
            routes: (0..=routes).map(|_| RouteMetrics::default()).collect(),
            open_connections: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            refused_connections: AtomicU64::new(0),
        }
    }

    /// Counts one finished request. Called only from the owning shard.
    /// `route` is a table row, or the row count for a request no row matched.
    pub fn record(&self, route: usize, status: u16, took: Duration) {
        let r = &self.routes[route.min(self.routes.len() - 1)];
        let s = STATUSES.iter().position(|&x| x == status).unwrap_or(STATUSES.len() - 1);
        bump(&r.by_status[s], 1);
        let secs = took.as_secs_f64();
        let b = BOUNDS.iter().position(|&x| secs <= x).unwrap_or(BOUNDS.len());
        bump(&r.buckets[b], 1);
        bump(&r.sum_micros, took.as_micros() as u64);
    }

    pub fn request_began(&self) {
        bump(&self.in_flight, 1);
    }

    pub fn request_ended(&self) {
        bump(&self.in_flight, u64::MAX);
    }

    pub fn set(gauge: &AtomicU64, value: u64) {
        gauge.store(value, Ordering::Relaxed);
    }
}

/// A per-shard series: its name, its help text, and how to read it from a shard.
type PerShard<'a> = (&'a str, &'a str, &'a dyn Fn(&ShardMetrics) -> u64);

/// A gauge of the whole server (collections, documents, segments, WAL bytes).
pub struct Gauge {
    pub name: &'static str,
    pub help: &'static str,
    pub value: u64,
}

/// The Prometheus text exposition of every shard's metrics; `names` labels the table's
/// rows in order (the slot after them is "unmatched"), `gauges` are the server's own.
pub fn render(shards: &[ShardMetrics], names: &[&str], gauges: &[Gauge]) -> String {
    let route_name = |i: usize| names.get(i).copied().unwrap_or("unmatched");
    let slots = shards.first().map_or(0, |s| s.routes.len());
    let mut out = String::with_capacity(16 * 1024);
    out.push_str("# HELP quarry_http_requests_total Requests served, by route and status.\n");
    out.push_str("# TYPE quarry_http_requests_total counter\n");
    for route in 0..slots {
        for (i, status) in STATUSES.iter().enumerate() {
            let n: u64 = shards.iter().map(|s| s.routes[route].by_status[i].load(Ordering::Relaxed)).sum();
            if n > 0 {
                let status = if *status == 0 { "other".to_string() } else { status.to_string() };
                let _ = writeln!(out, "quarry_http_requests_total{{route=\"{}\",status=\"{status}\"}} {n}", route_name(route));
            }
        }
    }
    out.push_str("# HELP quarry_http_request_duration_seconds Time from request head to response, by route.\n");
    out.push_str("# TYPE quarry_http_request_duration_seconds histogram\n");
    for route in 0..slots {
        let m = |f: &dyn Fn(&RouteMetrics) -> u64| shards.iter().map(|s| f(&s.routes[route])).sum::<u64>();
        let count = m(&|r| r.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum());
        if count == 0 {
            continue;
        }
        let mut cumulative = 0;
        for (i, bound) in BOUNDS.iter().enumerate() {
            cumulative += m(&|r| r.buckets[i].load(Ordering::Relaxed));
            let _ = writeln!(out, "quarry_http_request_duration_seconds_bucket{{route=\"{}\",le=\"{bound}\"}} {cumulative}", route_name(route));
        }
        let _ = writeln!(out, "quarry_http_request_duration_seconds_bucket{{route=\"{}\",le=\"+Inf\"}} {count}", route_name(route));
        let sum = m(&|r| r.sum_micros.load(Ordering::Relaxed)) as f64 / 1e6;
        let _ = writeln!(out, "quarry_http_request_duration_seconds_sum{{route=\"{}\"}} {sum}", route_name(route));
        let _ = writeln!(out, "quarry_http_request_duration_seconds_count{{route=\"{}\"}} {count}", route_name(route));
    }
    let per_shard: [PerShard; 3] = [
        ("quarry_open_connections", "Open client connections, per shard.", &|s| s.open_connections.load(Ordering::Relaxed)),
        ("quarry_in_flight_requests", "Requests being handled, per shard.", &|s| s.in_flight.load(Ordering::Relaxed)),
        ("quarry_refused_connections_total", "Connections refused at the per-shard or per-client cap.", &|s| {
            s.refused_connections.load(Ordering::Relaxed)
        }),
    ];
    for (name, help, get) in per_shard {
        let kind = if name.ends_with("_total") { "counter" } else { "gauge" };
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (i, s) in shards.iter().enumerate() {
            let _ = writeln!(out, "{name}{{shard=\"{i}\"}} {}", get(s));
        }
    }
    for g in gauges {
        let _ = writeln!(out, "# HELP {} {}\n# TYPE {} gauge\n{} {}", g.name, g.help, g.name, g.name, g.value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counts_histograms_and_gauges() {
        let shards = [ShardMetrics::new(2), ShardMetrics::new(2)];
        shards[0].record(0, 200, Duration::from_micros(50));
        shards[1].record(0, 200, Duration::from_millis(2));
        shards[1].record(1, 418, Duration::from_millis(2));
        shards[1].record(2, 404, Duration::from_millis(2));
        ShardMetrics::set(&shards[1].open_connections, 3);
        let gauges = [Gauge { name: "quarry_documents", help: "Documents.", value: 7 }];
        let text = render(&shards, &["health", "signup"], &gauges);
        assert!(text.contains("quarry_http_requests_total{route=\"health\",status=\"200\"} 2"), "{text}");
        assert!(text.contains("quarry_http_requests_total{route=\"signup\",status=\"other\"} 1"));
        assert!(text.contains("quarry_http_request_duration_seconds_bucket{route=\"health\",le=\"0.0001\"} 1"));
        assert!(text.contains("quarry_http_request_duration_seconds_count{route=\"health\"} 2"));
        assert!(text.contains("quarry_open_connections{shard=\"1\"} 3"));
        assert!(text.contains("quarry_http_requests_total{route=\"unmatched\",status=\"404\"} 1"), "{text}");
        assert!(text.contains("# TYPE quarry_documents gauge\nquarry_documents 7"), "{text}");
    }
}
