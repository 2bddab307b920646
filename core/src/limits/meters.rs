//! Usage meters: this month's counts per account (search, extract, research,
//! pages_indexed) and its stored characters, kept in memory as atomics that every
//! shard updates, and written to the store by a flusher at least every
//! `meters.flush_interval` and at shutdown.
//!
//! An allowance holds across a crash: no unit of a capped meter is spent before it is
//! durable. An account leases a block of units ahead ([`block`]: one unit for small
//! allowances, about 1% of a large one) with one store commit, run on the blocking
//! pool, never on the shard; the units are then spent from memory with one atomic
//! compare-and-swap. After a `kill -9` the month counts at least what was leased, so
//! a crash can only charge units reserved and never spent, never admit more than the
//! allowance. A clean shutdown writes the counts and gives the unspent leases back.
//! Meters without an allowance (an unlimited plan, pages indexed) lease nothing and
//! may lose the counts of the last interval in a crash.
//!
//! On shared records (a cluster of nodes on one PostgreSQL) an allowance holds for the
//! cluster: the store's lease count is the units every node has leased this month, and
//! a node is granted a block only while that total stays within the allowance (one
//! store commit a block, as on one node: no round trip per request). Each node spends
//! only what it was granted, so the nodes together never pass the allowance. A node
//! flushes what it counted since its last flush as an addition to the month's counts
//! (never a value written over another node's), then takes the totals back: the usage
//! it shows is the cluster's as of its last flush plus its own since. A clean shutdown
//! gives its unspent units back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::store::{MeterDelta, MeterSnapshot, MonthCounts, Records, StoreError};

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
            return write!(
                f,
                "This plan stores at most {} characters, documents and records together; delete some or move to a larger plan.",
                self.allowance
            );
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

/// The units a lease reserves at once for `allowance`: every unit of an allowance
/// under 200 (a store commit each), else about 1% of it.
pub fn block(allowance: u64) -> u64 {
    (allowance / 100).max(1)
}

/// Why a spend was refused.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("{0}")]
    Exceeded(Exceeded),
    /// The lease could not be made durable, so nothing was spent.
    #[error("usage meters: {0}")]
    Store(#[from] StoreError),
}

/// What a spend from memory found.
enum Take {
    Spent(u64),
    Over(Exceeded),
    /// The units up to this count are not leased yet.
    Lease(u64),
}

pub struct AccountMeters {
    account_id: String,
    records: Arc<Records>,
    month: Mutex<String>,
    counts: [AtomicU64; 4],
    /// Units of each meter durably leased this month (only capped meters lease).
    leased: [AtomicU64; 4],
    /// One lease at a time per account (taken on the blocking pool, never on a shard).
    leasing: Mutex<()>,
    stored_chars: AtomicU64,
    dirty: AtomicBool,
    /// On shared records: the counts and stored characters as of the last flush (what
    /// the next flush's additions are taken from); unused on one node.
    shared: bool,
    flushed: [AtomicU64; 4],
    stored_flushed: AtomicU64,
}

impl AccountMeters {
    fn new(account_id: &str, records: Arc<Records>, month: String, counts: MonthCounts, stored: u64) -> AccountMeters {
        let atomics = |c: &MonthCounts| [c.search, c.extract, c.research, c.pages_indexed].map(AtomicU64::new);
        AccountMeters {
            account_id: account_id.to_owned(),
            records,
            month: Mutex::new(month),
            // What the store says was leased counts as spent (`Records::meters`): the
            // next unit needs a lease of its own.
            leased: atomics(&counts),
            counts: atomics(&counts),
            leasing: Mutex::new(()),
            stored_chars: AtomicU64::new(stored),
            dirty: AtomicBool::new(false),
            shared: false,
            flushed: atomics(&counts),
            stored_flushed: AtomicU64::new(stored),
        }
    }

    /// Starts a new month's counts when the calendar has moved on.
    fn roll(&self, month: &str) {
        let mut current = self.month.lock().unwrap_or_else(|p| p.into_inner());
        if *current != month {
            *current = month.to_owned();
            self.counts.iter().chain(&self.leased).chain(&self.flushed).for_each(|c| c.store(0, Ordering::Relaxed));
            self.dirty.store(true, Ordering::Release);
        }
    }

    /// Spends `n` of `meter` within `allowance` (`None` = unlimited): refused without
    /// counting when it would go over. A capped meter spends only units durably leased,
    /// leasing more first (off the shard) when the lease is used up.
    pub async fn spend(self: &Arc<Self>, meter: Meter, n: u64, allowance: Option<u64>) -> Result<u64, Refused> {
        loop {
            match self.take(meter, n, allowance) {
                Take::Spent(after) => return Ok(after),
                Take::Over(e) => return Err(Refused::Exceeded(e)),
                Take::Lease(upto) => {
                    let me = self.clone();
                    let limit = allowance.unwrap_or(u64::MAX);
                    if !crate::runtime::blocking(move || me.lease(meter, upto, limit)).await? {
                        // The cluster's nodes hold the rest of the allowance.
                        return Err(Refused::Exceeded(Exceeded { what: meter.name(), allowance: limit }));
                    }
                }
            }
        }
    }

    /// The spend from memory: one compare-and-swap when the units are leased.
    fn take(&self, meter: Meter, n: u64, allowance: Option<u64>) -> Take {
        let (counter, leased) = (&self.counts[meter.index()], &self.leased[meter.index()]);
        let mut current = counter.load(Ordering::Acquire);
        loop {
            let after = current.saturating_add(n);
            if let Some(limit) = allowance {
                if after > limit {
                    return Take::Over(Exceeded { what: meter.name(), allowance: limit });
                }
                if after > leased.load(Ordering::Acquire) {
                    return Take::Lease(after);
                }
            }
            match counter.compare_exchange_weak(current, after, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    self.dirty.store(true, Ordering::Release);
                    return Take::Spent(after);
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// Leases `meter` up to at least `need` units (a [`block`] ahead, within `limit`),
    /// committed to the store before the units can be spent. False when nothing was
    /// granted (on shared records: the other nodes hold the rest of the allowance).
    /// Blocks: run it on the blocking pool.
    fn lease(&self, meter: Meter, need: u64, limit: u64) -> Result<bool, StoreError> {
        let _one = self.leasing.lock().unwrap_or_else(|p| p.into_inner());
        let leased = &self.leased[meter.index()];
        let had = leased.load(Ordering::Acquire);
        if had >= need {
            return Ok(true); // another spend leased it meanwhile
        }
        let upto = need.max(had.saturating_add(block(limit))).min(limit);
        let month = self.month.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let granted = if self.shared {
            self.records.lease_meter_shared(&self.account_id, &month, meter.name(), upto - had, limit)?
        } else {
            self.records.lease_meter(&self.account_id, &month, meter.name(), upto)?;
            upto - had
        };
        // Under the month's lock, as `roll` resets: a lease of a month gone by is not
        // spent in the next one (the spend that asked leases again).
        let current = self.month.lock().unwrap_or_else(|p| p.into_inner());
        if *current == month {
            if self.shared {
                leased.fetch_add(granted, Ordering::AcqRel);
            } else {
                leased.fetch_max(upto, Ordering::AcqRel);
            }
        }
        Ok(granted > 0)
    }

    /// Moves this node's view by `by` (the other nodes' usage its last flush took
    /// back): the count first, then the lease, so a spend between the two never finds
    /// units it was not granted.
    fn shift(&self, i: usize, by: i64) {
        let add = |a: &AtomicU64| {
            let _ = a.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| Some(v.saturating_add_signed(by)));
        };
        if by >= 0 {
            add(&self.counts[i]);
            add(&self.leased[i]);
        } else {
            add(&self.leased[i]);
            add(&self.counts[i]);
        }
    }

    /// Counts `n` of a meter with no allowance (pages indexed): never refused, and
    /// never leased.
    pub fn count(&self, meter: Meter, n: u64) {
        self.counts[meter.index()].fetch_add(n, Ordering::AcqRel);
        self.dirty.store(true, Ordering::Release);
    }

    /// Gives back `n` spent on work that then failed (never below zero). The lease
    /// stays, so the units given back are spent again without a commit.
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

    fn shared(&self) -> bool {
        self.records.shared()
    }

    /// The account's meters for the current month.
    pub fn account(&self, account_id: &str) -> Result<Arc<AccountMeters>, StoreError> {
        let month = current_month();
        let found = self.accounts.read().unwrap_or_else(|p| p.into_inner()).get(account_id).cloned();
        let meters = match found {
            Some(m) => m,
            None => {
                let shared = self.shared();
                let (counts, stored) =
                    if shared { self.records.meters_shared(account_id, &month)? } else { self.records.meters(account_id, &month)? };
                let mut map = self.accounts.write().unwrap_or_else(|p| p.into_inner());
                let made = || {
                    let mut m = AccountMeters::new(account_id, self.records.clone(), month.clone(), counts, stored);
                    m.shared = shared;
                    Arc::new(m)
                };
                map.entry(account_id.to_owned()).or_insert_with(made).clone()
            }
        };
        meters.roll(&month);
        Ok(meters)
    }

    /// Writes every meter that changed since the last flush, in one transaction.
    pub fn flush(&self) -> Result<usize, StoreError> {
        self.save(false)
    }

    /// Writes every account's meters and gives every unspent lease back, in one
    /// transaction: at shutdown, once nothing spends any more.
    pub fn release(&self) -> Result<usize, StoreError> {
        self.save(true)
    }

    fn save(&self, release: bool) -> Result<usize, StoreError> {
        if self.shared() {
            return self.save_shared(release);
        }
        let snapshots: Vec<MeterSnapshot> = {
            let map = self.accounts.read().unwrap_or_else(|p| p.into_inner());
            map.iter()
                // Released, every account's counts are written: one loaded after a crash
                // counts its leases, which the store's counts may not yet.
                .filter(|(_, m)| m.dirty.swap(false, Ordering::AcqRel) || release)
                .map(|(id, m)| MeterSnapshot {
                    account_id: id.clone(),
                    month: m.month.lock().unwrap_or_else(|p| p.into_inner()).clone(),
                    counts: m.counts(),
                    stored_chars: m.stored_chars(),
                })
                .collect()
        };
        let written = snapshots.len();
        if let Err(e) = self.records.save_meters(&snapshots, release) {
            // Keep them dirty so the next flush tries again.
            let map = self.accounts.read().unwrap_or_else(|p| p.into_inner());
            snapshots.iter().filter_map(|s| map.get(&s.account_id)).for_each(|m| m.dirty.store(true, Ordering::Release));
            return Err(e);
        }
        Ok(written)
    }
}

impl Meters {
    /// [`Meters::save`] on shared records: each account's usage since its last flush
    /// added to the store's, then the totals taken back into this node's view.
    fn save_shared(&self, release: bool) -> Result<usize, StoreError> {
        let taken: Vec<(Arc<AccountMeters>, MeterDelta, [u64; 4], u64)> = {
            let map = self.accounts.read().unwrap_or_else(|p| p.into_inner());
            // Every loaded account, changed here or not: a flush also takes back what
            // the other nodes counted, so the usage this node shows keeps up.
            map.values()
                .map(|m| {
                    m.dirty.store(false, Ordering::Release);
                    let now: [u64; 4] = std::array::from_fn(|i| m.counts[i].load(Ordering::Acquire));
                    let stored = m.stored_chars();
                    let delta = MeterDelta {
                        account_id: m.account_id.clone(),
                        month: m.month.lock().unwrap_or_else(|p| p.into_inner()).clone(),
                        counts: std::array::from_fn(|i| now[i] as i64 - m.flushed[i].load(Ordering::Acquire) as i64),
                        stored_chars: stored as i64 - m.stored_flushed.load(Ordering::Acquire) as i64,
                        unspent: match release {
                            true => std::array::from_fn(|i| m.leased[i].load(Ordering::Acquire).saturating_sub(now[i])),
                            false => [0; 4],
                        },
                    };
                    (m.clone(), delta, now, stored)
                })
                .collect()
        };
        if taken.is_empty() {
            return Ok(0);
        }
        let deltas: Vec<MeterDelta> = taken.iter().map(|t| t.1.clone()).collect();
        let totals = match self.records.add_meters(&deltas) {
            Ok(t) => t,
            Err(e) => {
                taken.iter().for_each(|t| t.0.dirty.store(true, Ordering::Release));
                return Err(e);
            }
        };
        for ((m, _, now, stored), (counts, stored_total)) in taken.iter().zip(totals) {
            let total = [counts.search, counts.extract, counts.research, counts.pages_indexed];
            for i in 0..4 {
                m.shift(i, total[i] as i64 - now[i] as i64);
                m.flushed[i].store(total[i], Ordering::Release);
            }
            let by = stored_total as i64 - *stored as i64;
            let _ = m.stored_chars.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| Some(v.saturating_add_signed(by)));
            m.stored_flushed.store(stored_total, Ordering::Release);
        }
        Ok(taken.len())
    }
}

/// "YYYY-MM" of now, UTC.
pub fn current_month() -> String {
    crate::clock::now_rfc3339()[..7].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meters(month: &str, counts: MonthCounts, stored: u64) -> (AccountMeters, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let records = Arc::new(Records::open(dir.path()).unwrap());
        (AccountMeters::new("acct_a", records, month.into(), counts, stored), dir)
    }

    /// `spend` without the runtime: the lease taken in line.
    fn spend(m: &AccountMeters, meter: Meter, n: u64, allowance: Option<u64>) -> Result<u64, Exceeded> {
        loop {
            match m.take(meter, n, allowance) {
                Take::Spent(after) => return Ok(after),
                Take::Over(e) => return Err(e),
                Take::Lease(upto) => {
                    if !m.lease(meter, upto, allowance.unwrap_or(u64::MAX)).unwrap() {
                        return Err(Exceeded { what: meter.name(), allowance: allowance.unwrap_or(u64::MAX) });
                    }
                }
            }
        }
    }

    #[test]
    fn allowance_refuses_without_counting() {
        let (m, _dir) = meters("2026-11", MonthCounts::default(), 0);
        assert_eq!(spend(&m, Meter::Search, 2, Some(3)), Ok(2));
        assert!(spend(&m, Meter::Search, 2, Some(3)).is_err());
        assert_eq!(spend(&m, Meter::Search, 1, Some(3)), Ok(3));
        assert_eq!(m.counts().search, 3);
        assert_eq!(spend(&m, Meter::Research, 1_000, None), Ok(1_000));
        m.refund(Meter::Search, 2);
        assert_eq!(m.counts().search, 1);
        m.refund(Meter::Search, 5);
        assert_eq!(m.counts().search, 0, "never below zero");
    }

    #[test]
    fn a_capped_spend_waits_for_a_lease_a_block_ahead() {
        let (m, _dir) = meters(&current_month(), MonthCounts::default(), 0);
        assert!(matches!(m.take(Meter::Search, 1, Some(10)), Take::Lease(1)), "nothing leased yet");
        assert!(matches!(m.take(Meter::Search, 1, None), Take::Spent(1)), "unlimited: no lease");
        // A small allowance leases unit by unit; a large one about 1% at a time.
        assert_eq!(spend(&m, Meter::Extract, 1, Some(10)), Ok(1));
        assert_eq!(m.leased[Meter::Extract.index()].load(Ordering::Acquire), 1);
        assert_eq!(spend(&m, Meter::Research, 1, Some(20_000)), Ok(1));
        assert_eq!(m.leased[Meter::Research.index()].load(Ordering::Acquire), 200);
        for _ in 0..199 {
            assert!(matches!(m.take(Meter::Research, 1, Some(20_000)), Take::Spent(_)), "spent from the lease, in memory");
        }
        assert!(matches!(m.take(Meter::Research, 1, Some(20_000)), Take::Lease(201)));
        // The store already says what a crash now would leave: every leased unit spent.
        let (counts, _) = m.records.meters("acct_a", &current_month()).unwrap();
        assert_eq!((counts.extract, counts.research, counts.search), (1, 200, 0));
    }

    #[test]
    fn block_is_one_unit_for_small_allowances_and_a_hundredth_of_large_ones() {
        assert_eq!([block(1), block(10), block(199), block(200), block(2_000), block(100_000)], [1, 1, 1, 2, 20, 1_000]);
    }

    #[test]
    fn storage_is_a_gauge_with_a_ceiling() {
        let (m, _dir) = meters("2026-11", MonthCounts::default(), 10);
        assert_eq!(m.try_store(5, Some(20)), Ok(15));
        assert!(m.try_store(6, Some(20)).is_err());
        assert_eq!(m.try_store(-15, Some(20)), Ok(0));
    }

    #[test]
    fn a_new_month_starts_from_zero() {
        let (m, _dir) = meters("2026-10", MonthCounts { search: 9, ..MonthCounts::default() }, 4);
        m.roll("2026-11");
        assert_eq!(m.counts().search, 0);
        assert_eq!(m.leased[Meter::Search.index()].load(Ordering::Acquire), 0, "and leases again");
        assert_eq!(m.stored_chars(), 4);
    }

    #[test]
    fn flush_writes_and_a_reload_sees_it() {
        let dir = tempfile::tempdir().unwrap();
        let records = Arc::new(Records::open(dir.path()).unwrap());
        let meters = Meters::new(records.clone());
        meters.account("acct_a").unwrap().count(Meter::Search, 4);
        assert_eq!(meters.flush().unwrap(), 1);
        assert_eq!(meters.flush().unwrap(), 0);
        let again = Meters::new(records);
        assert_eq!(again.account("acct_a").unwrap().counts().search, 4);
    }

    #[test]
    fn a_crash_charges_what_was_leased_and_a_release_gives_back_what_was_not_spent() {
        let dir = tempfile::tempdir().unwrap();
        let records = Arc::new(Records::open(dir.path()).unwrap());
        let before = Meters::new(records.clone());
        let a = before.account("acct_a").unwrap();
        assert_eq!(spend(&a, Meter::Search, 3, Some(2_000)), Ok(3));
        // No flush, no release: a crash. The lease of 20 counts as spent.
        let after = Meters::new(records.clone());
        let a = after.account("acct_a").unwrap();
        assert_eq!(a.counts().search, 20, "never fewer than were admitted");
        assert_eq!(spend(&a, Meter::Search, 1, Some(2_000)), Ok(21));
        after.release().unwrap();
        let clean = Meters::new(records);
        assert_eq!(clean.account("acct_a").unwrap().counts().search, 21, "a clean stop keeps what was spent, not what was leased");
    }
}
