//! Usage meters: this month's counts per account (search, extract, research,
//! pages_indexed) and its stored characters, kept in memory as atomics that every
//! shard updates, and written to the store by a flusher at least every
//! `meters.flush_interval` and at shutdown. They are meters: a crash may lose the
//! counts of the last interval, never a document.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::store::{MeterSnapshot, MonthCounts, Records, StoreError};

/// What an allowance counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meter {
    Search,
    Extract,
    Research,
    PagesIndexed,
}

impl Meter {
    fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            Meter::Search => "search",
            Meter::Extract => "extract",
            Meter::Research => "research",
            Meter::PagesIndexed => "pages_indexed",
        }
    }
}

/// The allowance is spent: the request is refused and nothing is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exceeded {
    /// The allowance's name: a [`Meter::name`] or "stored_chars".
    pub what: &'static str,
    pub allowance: u64,
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.what == "stored_chars" {
            return write!(f, "This plan stores at most {} characters; delete documents or move to a larger plan.", self.allowance);
        }
        write!(f, "This month's {} allowance ({}) is spent; it renews on the 1st (UTC), or move to a larger plan.", self.what, self.allowance)
    }
}

impl crate::error::ErrorCode for Exceeded {
    fn code(&self) -> crate::error::Code {
        match self.what {
            "stored_chars" => crate::error::Code::StorageExceeded,
            _ => crate::error::Code::AllowanceExceeded,
        }
    }
}

#[cfg(test)]
mod exceeded_tests {
    use super::Exceeded;
    use crate::error::{ApiError, Code};

    #[test]
    fn spent_allowances_map_to_their_codes() {
        let e = ApiError::from(Exceeded { what: "search", allowance: 2000 });
        assert_eq!((e.code, e.status().as_u16()), (Code::AllowanceExceeded, 429));
        assert!(e.message.contains("search") && e.message.contains("2000"));
        assert_eq!(ApiError::from(Exceeded { what: "stored_chars", allowance: 5 }).code, Code::StorageExceeded);
    }
}

pub struct AccountMeters {
    month: Mutex<String>,
    counts: [AtomicU64; 4],
    stored_chars: AtomicU64,
    dirty: AtomicBool,
}

impl AccountMeters {
    fn new(month: String, counts: MonthCounts, stored: u64) -> AccountMeters {
        AccountMeters {
            month: Mutex::new(month),
            counts: [
                AtomicU64::new(counts.search),
                AtomicU64::new(counts.extract),
                AtomicU64::new(counts.research),
                AtomicU64::new(counts.pages_indexed),
            ],
            stored_chars: AtomicU64::new(stored),
            dirty: AtomicBool::new(false),
        }
    }

    /// Starts a new month's counts when the calendar has moved on.
    fn roll(&self, month: &str) {
        let mut current = self.month.lock().unwrap_or_else(|p| p.into_inner());
        if *current != month {
            *current = month.to_owned();
            self.counts.iter().for_each(|c| c.store(0, Ordering::Relaxed));
            self.dirty.store(true, Ordering::Release);
        }
    }

    /// Counts `n` against `allowance` (`None` = unlimited). Refused without counting
    /// when it would go over.
    pub fn try_spend(&self, meter: Meter, n: u64, allowance: Option<u64>) -> Result<u64, Exceeded> {
        let counter = &self.counts[meter.index()];
        let after = counter.fetch_add(n, Ordering::AcqRel) + n;
        if let Some(limit) = allowance {
            if after > limit {
                counter.fetch_sub(n, Ordering::AcqRel);
                return Err(Exceeded { what: meter.name(), allowance: limit });
            }
        }
        self.dirty.store(true, Ordering::Release);
        Ok(after)
    }

    /// Gives back `n` spent on work that then failed (never below zero).
    pub fn refund(&self, meter: Meter, n: u64) {
        let counter = &self.counts[meter.index()];
        let _ = counter.fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| Some(c.saturating_sub(n)));
        self.dirty.store(true, Ordering::Release);
    }

    /// Adds `delta` (may be negative) to the stored characters; refused past `allowance`.
    pub fn try_store(&self, delta: i64, allowance: Option<u64>) -> Result<u64, Exceeded> {
        let mut current = self.stored_chars.load(Ordering::Acquire);
        loop {
            let next = current.saturating_add_signed(delta);
            if delta > 0 && allowance.is_some_and(|a| next > a) {
                return Err(Exceeded { what: "stored_chars", allowance: allowance.unwrap_or(0) });
            }
            match self.stored_chars.compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    self.dirty.store(true, Ordering::Release);
                    return Ok(next);
                }
                Err(actual) => current = actual,
            }
        }
    }

    pub fn counts(&self) -> MonthCounts {
        let c = |m: Meter| self.counts[m.index()].load(Ordering::Acquire);
        MonthCounts { search: c(Meter::Search), extract: c(Meter::Extract), research: c(Meter::Research), pages_indexed: c(Meter::PagesIndexed) }
    }

    pub fn stored_chars(&self) -> u64 {
        self.stored_chars.load(Ordering::Acquire)
    }
}

/// Every account's meters, loaded from the store on first use.
pub struct Meters {
    records: Arc<Records>,
    accounts: RwLock<HashMap<String, Arc<AccountMeters>>>,
}

impl Meters {
    pub fn new(records: Arc<Records>) -> Meters {
        Meters { records, accounts: RwLock::new(HashMap::new()) }
    }

    /// The account's meters for the current month.
    pub fn account(&self, account_id: &str) -> Result<Arc<AccountMeters>, StoreError> {
        let month = current_month();
        let found = self.accounts.read().unwrap_or_else(|p| p.into_inner()).get(account_id).cloned();
        let meters = match found {
            Some(m) => m,
            None => {
                let (counts, stored) = self.records.meters(account_id, &month)?;
                let mut map = self.accounts.write().unwrap_or_else(|p| p.into_inner());
                map.entry(account_id.to_owned()).or_insert_with(|| Arc::new(AccountMeters::new(month.clone(), counts, stored))).clone()
            }
        };
        meters.roll(&month);
        Ok(meters)
    }

    /// Writes every meter that changed since the last flush, in one transaction.
    pub fn flush(&self) -> Result<usize, StoreError> {
        let snapshots: Vec<MeterSnapshot> = {
            let map = self.accounts.read().unwrap_or_else(|p| p.into_inner());
            map.iter()
                .filter(|(_, m)| m.dirty.swap(false, Ordering::AcqRel))
                .map(|(id, m)| MeterSnapshot {
                    account_id: id.clone(),
                    month: m.month.lock().unwrap_or_else(|p| p.into_inner()).clone(),
                    counts: m.counts(),
                    stored_chars: m.stored_chars(),
                })
                .collect()
        };
        let written = snapshots.len();
        if let Err(e) = self.records.save_meters(&snapshots) {
            // Keep them dirty so the next flush tries again.
            let map = self.accounts.read().unwrap_or_else(|p| p.into_inner());
            snapshots.iter().filter_map(|s| map.get(&s.account_id)).for_each(|m| m.dirty.store(true, Ordering::Release));
            return Err(e);
        }
        Ok(written)
    }
}

/// "YYYY-MM" of now, UTC.
pub fn current_month() -> String {
    crate::clock::now_rfc3339()[..7].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowance_refuses_without_counting() {
        let m = AccountMeters::new("2026-11".into(), MonthCounts::default(), 0);
        assert_eq!(m.try_spend(Meter::Search, 2, Some(3)), Ok(2));
        assert!(m.try_spend(Meter::Search, 2, Some(3)).is_err());
        assert_eq!(m.try_spend(Meter::Search, 1, Some(3)), Ok(3));
        assert_eq!(m.counts().search, 3);
        assert_eq!(m.try_spend(Meter::Research, 1_000, None), Ok(1_000));
        m.refund(Meter::Search, 2);
        assert_eq!(m.counts().search, 1);
        m.refund(Meter::Search, 5);
        assert_eq!(m.counts().search, 0, "never below zero");
    }

    #[test]
    fn storage_is_a_gauge_with_a_ceiling() {
        let m = AccountMeters::new("2026-11".into(), MonthCounts::default(), 10);
        assert_eq!(m.try_store(5, Some(20)), Ok(15));
        assert!(m.try_store(6, Some(20)).is_err());
        assert_eq!(m.try_store(-15, Some(20)), Ok(0));
    }

    #[test]
    fn a_new_month_starts_from_zero() {
        let m = AccountMeters::new("2026-10".into(), MonthCounts { search: 9, ..MonthCounts::default() }, 4);
        m.roll("2026-11");
        assert_eq!(m.counts().search, 0);
        assert_eq!(m.stored_chars(), 4);
    }

    #[test]
    fn flush_writes_and_a_reload_sees_it() {
        let dir = tempfile::tempdir().unwrap();
        let records = Arc::new(Records::open(dir.path()).unwrap());
        let meters = Meters::new(records.clone());
        meters.account("acct_a").unwrap().try_spend(Meter::Search, 4, None).unwrap();
        assert_eq!(meters.flush().unwrap(), 1);
        assert_eq!(meters.flush().unwrap(), 0);
        let again = Meters::new(records);
        assert_eq!(again.account("acct_a").unwrap().counts().search, 4);
    }
}
