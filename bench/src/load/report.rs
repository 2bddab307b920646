//! The result of a run, and its three renderings: a line for people, a Markdown table row for
//! results files, and JSON for scripts.

use std::time::Duration;

use serde::Serialize;

use super::stats::{SocketErrors, Stats};

/// Latency percentiles in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub label: String,
    pub target: String,
    pub connections: usize,
    pub threads: usize,
    /// Length of the measured window (warmup excluded), in seconds.
    pub seconds: f64,
    pub requests: u64,
    pub rps: f64,
    pub latency: Latency,
    pub non_2xx: u64,
    pub status_classes: [u64; 6],
    pub socket_errors: u64,
    pub errors: SocketErrors,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub reconnects: u64,
}

/// What the run was, to label the numbers.
#[derive(Debug, Clone)]
pub struct RunShape {
    pub label: String,
    pub target: String,
    pub connections: usize,
    pub threads: usize,
    pub window: Duration,
}

impl Report {
    pub fn new(shape: RunShape, stats: &Stats) -> Report {
        let seconds = shape.window.as_secs_f64();
        let requests = stats.requests();
        Report {
            label: shape.label,
            target: shape.target,
            connections: shape.connections,
            threads: shape.threads,
            seconds,
            requests,
            rps: if seconds > 0.0 { requests as f64 / seconds } else { 0.0 },
            latency: latency_of(stats),
            non_2xx: stats.non_2xx(),
            status_classes: stats.status_classes,
            socket_errors: stats.errors.total(),
            errors: stats.errors,
            bytes_read: stats.bytes_read,
            bytes_written: stats.bytes_written,
            reconnects: stats.reconnects,
        }
    }

    pub fn human_line(&self) -> String {
        let l = &self.latency;
        let e = &self.errors;
        format!(
            "{}: {} req/s | latency p50 {} p90 {} p99 {} max {} | {} requests in {:.2}s, {} non-2xx, \
             {} socket errors (connect {}, read {}, write {}, protocol {}, timeout {}), {} reconnects \
             | read {} ({}/s), written {}",
            self.label,
            group_thousands(self.rps.round() as u64),
            fmt_latency(l.p50_ns),
            fmt_latency(l.p90_ns),
            fmt_latency(l.p99_ns),
            fmt_latency(l.max_ns),
            group_thousands(self.requests),
            self.seconds,
            self.non_2xx,
            self.socket_errors,
            e.connect,
            e.read,
            e.write,
            e.protocol,
            e.timeout,
            self.reconnects,
            fmt_bytes(self.bytes_read),
            fmt_bytes(self.per_second(self.bytes_read)),
            fmt_bytes(self.bytes_written),
        )
    }

    pub fn markdown_header() -> &'static str {
        "| run | conns | threads | req/s | p50 ms | p90 ms | p99 ms | max ms | non-2xx | socket errors | read MB/s |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    }

    pub fn markdown_row(&self) -> String {
        let l = &self.latency;
        format!(
            "| {} | {} | {} | {:.0} | {} | {} | {} | {} | {} | {} | {:.1} |",
            self.label,
            self.connections,
            self.threads,
            self.rps,
            fmt_ms(l.p50_ns),
            fmt_ms(l.p90_ns),
            fmt_ms(l.p99_ns),
            fmt_ms(l.max_ns),
            self.non_2xx,
            self.socket_errors,
            self.per_second(self.bytes_read) as f64 / 1e6,
        )
    }

    pub fn json(&self) -> String {
        serde_json::to_string(self).expect("a report always serializes")
    }

    fn per_second(&self, n: u64) -> u64 {
        if self.seconds > 0.0 {
            (n as f64 / self.seconds) as u64
        } else {
            0
        }
    }
}

fn latency_of(stats: &Stats) -> Latency {
    let h = &stats.latency_ns;
    if h.is_empty() {
        return Latency { p50_ns: 0, p90_ns: 0, p99_ns: 0, p999_ns: 0, max_ns: 0, mean_ns: 0.0 };
    }
    Latency {
        p50_ns: h.value_at_quantile(0.50),
        p90_ns: h.value_at_quantile(0.90),
        p99_ns: h.value_at_quantile(0.99),
        p999_ns: h.value_at_quantile(0.999),
        max_ns: h.max(),
        mean_ns: h.mean(),
    }
}

/// `850ns`, `412.3µs`, `1.234ms`, `2.500s`.
pub fn fmt_latency(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns}ns"),
        1_000..1_000_000 => format!("{:.1}µs", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.3}ms", ns as f64 / 1e6),
        _ => format!("{:.3}s", ns as f64 / 1e9),
    }
}

/// Milliseconds with three decimals, for table columns that must line up.
pub fn fmt_ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// `512 B`, `1.5 KB`, `21.4 MB`, `3.10 GB` (decimal units).
pub fn fmt_bytes(n: u64) -> String {
    match n {
        0..1_000 => format!("{n} B"),
        1_000..1_000_000 => format!("{:.1} KB", n as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} MB", n as f64 / 1e6),
        _ => format!("{:.2} GB", n as f64 / 1e9),
    }
}

/// `1234567` → `1,234,567`.
pub fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests;
