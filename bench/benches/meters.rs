//! The allowance's spend path (`limits::meters`), as every search, extraction and
//! research takes it, against the spend before leases (one `fetch_add` in memory,
//! lost in a crash) as the reference.
//!
//!     cargo bench -p quarry-bench --bench meters
//!
//! - `before`: the spend as it was, a copy of the removed `try_spend` (add, compare,
//!   take back when over).
//! - `unlimited`: a plan without the allowance: no lease, one compare-and-swap.
//! - `leased/<allowance>`: a capped allowance spent unit by unit through
//!   `AccountMeters::spend` on a glommio executor, its leases committed (fsync) on the
//!   blocking pool: 100,000 (Scholar's searches, a lease per 1,000), 2,000 (Scribe's, a
//!   lease per 20), 10 (every unit its own commit). An account is taken afresh before
//!   its allowance runs out, outside the timed part.
//!
//! Time is per unit spent, leases included: `leased/*` as the spend's caller waits
//! (its lease's fsync included), `leased-shard-cpu/*` as the shard's own thread spends
//! CPU on it (the fsync runs on the blocking pool's thread, so it is not counted).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use glommio::{LocalExecutorBuilder, Placement, PoolPlacement};
use quarry::limits::{Meter, Meters};
use quarry::store::Records;

/// The spend before leases, as it was written.
fn spend_before(counter: &AtomicU64, n: u64, allowance: Option<u64>) -> Result<u64, ()> {
    let after = counter.fetch_add(n, Ordering::AcqRel) + n;
    if let Some(limit) = allowance {
        if after > limit {
            counter.fetch_sub(n, Ordering::AcqRel);
            return Err(());
        }
    }
    Ok(after)
}

/// What a measurement counts: the time a spend takes to return (its lease's commit
/// waited for), or the CPU time of the shard's own thread (the commit runs on the
/// blocking pool's).
#[derive(Clone, Copy)]
enum Clock {
    Wall,
    ShardCpu,
}

/// The CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// `iters` units spent on `allowance`, on a glommio executor; a fresh account before
/// one runs out.
fn spend_leased(meters: Arc<Meters>, allowance: Option<u64>, iters: u64, clock: Clock) -> Duration {
    let now = move || match clock {
        Clock::Wall => START.elapsed(),
        Clock::ShardCpu => thread_cpu(),
    };
    LocalExecutorBuilder::new(Placement::Unbound)
        .blocking_thread_pool_placement(PoolPlacement::Unbound(2))
        .spawn(move || async move {
            let room = allowance.map_or(u64::MAX, |a| a - a / 10);
            let mut spent = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let account = meters.account(&format!("acct_{}", quarry::ids::random_base62(12))).unwrap();
                let chunk = left.min(room);
                let started = now();
                for _ in 0..chunk {
                    std::hint::black_box(account.spend(Meter::Search, 1, allowance).await.unwrap());
                }
                spent += now() - started;
                left -= chunk;
            }
            spent
        })
        .unwrap()
        .join()
        .unwrap()
}

/// The epoch of the wall clock's readings.
static START: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);

fn spend(c: &mut Criterion) {
    // On the disk the target directory is on, not a tmpfs: a lease's fsync is real.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let meters = Arc::new(Meters::new(Arc::new(Records::open(dir.path()).unwrap())));
    let mut g = c.benchmark_group("meters-spend");
    g.bench_function("before", |b| {
        let counter = AtomicU64::new(0);
        b.iter(|| std::hint::black_box(spend_before(&counter, 1, Some(u64::MAX / 2))))
    });
    g.bench_function("unlimited", |b| b.iter_custom(|iters| spend_leased(meters.clone(), None, iters, Clock::Wall)));
    for allowance in [100_000u64, 2_000, 10] {
        g.bench_function(format!("leased/{allowance}"), |b| b.iter_custom(|iters| spend_leased(meters.clone(), Some(allowance), iters, Clock::Wall)));
        let shard = format!("leased-shard-cpu/{allowance}");
        g.bench_function(shard, |b| b.iter_custom(|iters| spend_leased(meters.clone(), Some(allowance), iters, Clock::ShardCpu)));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    targets = spend
}
criterion_main!(benches);
