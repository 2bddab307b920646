//! What one client thread counts while it runs. Each thread owns its `Stats` (no sharing, no
//! atomics); the runner merges them once the run is over.

use std::time::Duration;

use hdrhistogram::Histogram;

/// Latencies are recorded in nanoseconds, from 1 ns to 100 s, at 3 significant digits.
const LATENCY_MAX_NS: u64 = 100_000_000_000;

/// Socket-level failures, the way wrk splits them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SocketErrors {
    pub connect: u64,
    pub read: u64,
    pub write: u64,
    /// A response the parser refused, or a connection closed mid-response.
    pub protocol: u64,
    /// Requests slower than `--timeout`, whether they completed late or were still
    /// outstanding when the run ended.
    pub timeout: u64,
}

impl SocketErrors {
    pub fn total(&self) -> u64 {
        self.connect + self.read + self.write + self.protocol + self.timeout
    }

    fn add(&mut self, other: &SocketErrors) {
        self.connect += other.connect;
        self.read += other.read;
        self.write += other.write;
        self.protocol += other.protocol;
        self.timeout += other.timeout;
    }
}

#[derive(Debug, Clone)]
pub struct Stats {
    pub latency_ns: Histogram<u64>,
    /// Responses by status class: index 1 = 1xx … 5 = 5xx, 0 = anything else.
    pub status_classes: [u64; 6],
    pub errors: SocketErrors,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Connections opened after the first one of each slot (server closed, or an error).
    pub reconnects: u64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

impl Stats {
    pub fn new() -> Stats {
        Stats {
            latency_ns: Histogram::new_with_bounds(1, LATENCY_MAX_NS, 3).expect("static histogram bounds are valid"),
            status_classes: [0; 6],
            errors: SocketErrors::default(),
            bytes_read: 0,
            bytes_written: 0,
            reconnects: 0,
        }
    }

    /// Counts one completed response.
    pub fn record(&mut self, latency: Duration, status: u16, read: u64, written: u64) {
        self.latency_ns.saturating_record(latency.as_nanos().min(u64::MAX as u128) as u64);
        self.status_classes[status_class(status)] += 1;
        self.bytes_read += read;
        self.bytes_written += written;
    }

    pub fn requests(&self) -> u64 {
        self.status_classes.iter().sum()
    }

    pub fn non_2xx(&self) -> u64 {
        self.requests() - self.status_classes[2]
    }

    pub fn merge(&mut self, other: &Stats) {
        self.latency_ns.add(&other.latency_ns).expect("histograms share bounds");
        for (mine, theirs) in self.status_classes.iter_mut().zip(other.status_classes) {
            *mine += theirs;
        }
        self.errors.add(&other.errors);
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.reconnects += other.reconnects;
    }
}

fn status_class(status: u16) -> usize {
    match status / 100 {
        class @ 1..=5 => class as usize,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_classes_and_non_2xx() {
        let mut s = Stats::new();
        for status in [200, 204, 301, 404, 503, 999] {
            s.record(Duration::from_micros(100), status, 10, 5);
        }
        assert_eq!(s.requests(), 6);
        assert_eq!(s.non_2xx(), 4);
        assert_eq!(s.status_classes, [1, 0, 2, 1, 1, 1]);
        assert_eq!((s.bytes_read, s.bytes_written), (60, 30));
    }

    #[test]
    fn merge_adds_everything() {
        let mut a = Stats::new();
        let mut b = Stats::new();
        a.record(Duration::from_micros(100), 200, 1, 1);
        b.record(Duration::from_millis(3), 500, 2, 2);
        b.errors.read = 2;
        b.reconnects = 1;
        a.merge(&b);
        assert_eq!(a.requests(), 2);
        assert_eq!(a.non_2xx(), 1);
        assert_eq!(a.errors.total(), 2);
        assert_eq!(a.reconnects, 1);
        assert_eq!(a.latency_ns.len(), 2);
        assert!(a.latency_ns.max() >= 2_990_000);
    }

    #[test]
    fn huge_latency_saturates_instead_of_failing() {
        let mut s = Stats::new();
        s.record(Duration::from_secs(1000), 200, 0, 0);
        assert_eq!(s.latency_ns.len(), 1);
    }
}
