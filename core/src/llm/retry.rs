//! When to try a failed call again and how long to wait: a manifest's
//! `retry_policy`. Only retryable classes are retried (the spec's
//! `default_retryable`), and only when the policy lists the HTTP status, the
//! provider's error status or the class (a failure without a status — a reset, a
//! timeout — is judged by its class alone). The wait is capped exponential backoff
//! with jitter, never below `min_delay`; a `Retry-After` (or a provider's declared
//! retry delay) is honoured as given, and one longer than `max_delay` ends the retries
//! so the caller sees the error and the delay at once instead of a hung request.

use std::time::Duration;

use super::error::{ErrorClass, ProviderError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    None,
    Full,
    Equal,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// `strategy: none` sets this to 0.
    pub max_retries: u32,
    pub min_delay: Duration,
    pub max_delay: Duration,
    pub jitter: Jitter,
    pub on_status: Vec<u16>,
    pub on_error_status: Vec<String>,
    pub on_class: Vec<ErrorClass>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            min_delay: Duration::from_millis(1000),
            max_delay: Duration::from_millis(30_000),
            jitter: Jitter::Full,
            on_status: Vec::new(),
            on_error_status: Vec::new(),
            on_class: Vec::new(),
        }
    }
}

impl RetryPolicy {
    /// Whether the call that failed on attempt `attempt` (1 = the first call) is tried
    /// again, and after how long. `random` is a uniform draw in [0, 1).
    pub fn decide(&self, e: &ProviderError, attempt: u32, random: f64) -> Option<Duration> {
        if attempt > self.max_retries || !self.eligible(e) {
            return None;
        }
        match e.retry_after {
            Some(d) if d > self.max_delay => None,
            Some(d) => Some(d),
            None => Some(self.backoff(attempt, random)),
        }
    }

    fn eligible(&self, e: &ProviderError) -> bool {
        if !e.class.retryable() {
            return false;
        }
        let listed = self.on_status.is_empty() && self.on_error_status.is_empty() && self.on_class.is_empty();
        listed
            || e.status.is_none()
            || e.status.is_some_and(|s| self.on_status.contains(&s))
            || e.raw_status.as_ref().is_some_and(|s| self.on_error_status.contains(s))
            || self.on_class.contains(&e.class)
    }

    /// `min_delay · 2^(attempt-1)`, capped at `max_delay`, jittered within
    /// [`min_delay`, cap].
    pub fn backoff(&self, attempt: u32, random: f64) -> Duration {
        let exp = self.min_delay.saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
        let cap = exp.min(self.max_delay).max(self.min_delay);
        let span = cap - self.min_delay;
        match self.jitter {
            Jitter::None => cap,
            Jitter::Full => self.min_delay + span.mul_f64(random),
            Jitter::Equal => self.min_delay + span / 2 + (span / 2).mul_f64(random),
        }
    }
}

/// A uniform draw in [0, 1) from the OS.
pub fn random() -> f64 {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        return 0.5;
    }
    (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(class: ErrorClass, status: Option<u16>) -> ProviderError {
        ProviderError { status, ..ProviderError::new(class, "x") }
    }

    #[test]
    fn only_retryable_listed_failures_within_the_budget() {
        let p = RetryPolicy { max_retries: 2, on_status: vec![429, 500], ..RetryPolicy::default() };
        assert!(p.decide(&err(ErrorClass::ServerError, Some(500)), 1, 0.0).is_some());
        assert!(p.decide(&err(ErrorClass::ServerError, Some(500)), 3, 0.0).is_none());
        assert!(p.decide(&err(ErrorClass::Overloaded, Some(503)), 1, 0.0).is_none());
        assert!(p.decide(&err(ErrorClass::InvalidRequest, Some(400)), 1, 0.0).is_none());
        assert!(p.decide(&err(ErrorClass::Timeout, None), 1, 0.0).is_some());
    }

    #[test]
    fn backoff_grows_is_capped_and_stays_above_min() {
        let p = RetryPolicy { min_delay: Duration::from_millis(100), max_delay: Duration::from_millis(350), ..RetryPolicy::default() };
        assert_eq!(p.backoff(1, 0.99), Duration::from_millis(100));
        assert_eq!(p.backoff(2, 1.0), Duration::from_millis(200));
        assert_eq!(p.backoff(3, 1.0), Duration::from_millis(350));
        assert_eq!(p.backoff(9, 0.0), Duration::from_millis(100));
    }

    #[test]
    fn retry_after_is_honoured_or_ends_the_retries() {
        let p = RetryPolicy { max_delay: Duration::from_secs(10), ..RetryPolicy::default() };
        let mut e = err(ErrorClass::RateLimited, Some(429));
        e.retry_after = Some(Duration::from_secs(3));
        assert_eq!(p.decide(&e, 1, 0.5), Some(Duration::from_secs(3)));
        e.retry_after = Some(Duration::from_secs(30));
        assert_eq!(p.decide(&e, 1, 0.5), None);
    }
}
