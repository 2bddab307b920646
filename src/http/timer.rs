//! hyper's `rt::Timer` for one connection. hyper needs a timer to enforce its
//! header-read timeout (without one it silently disables it), and its `Sleep` must be
//! `Send + Sync`, which glommio's timers are not. hyper holds at most one header
//! timer per connection, so the connection owns a single slot: hyper arms it with a
//! deadline, and the shard's sweep (see `conn`) fires it once the deadline passes.
//! No allocation per request beyond hyper's own `Box`.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::task::AtomicWaker;
use hyper::rt::{Sleep, Timer};

/// The connection's one timer: a deadline and whether it has fired.
pub struct TimerSlot {
    origin: Instant,
    /// Nanoseconds after `origin`; 0 = disarmed.
    deadline: AtomicU64,
    fired: AtomicBool,
    waker: AtomicWaker,
}

impl TimerSlot {
    pub fn new(origin: Instant) -> Arc<TimerSlot> {
        Arc::new(TimerSlot { origin, deadline: AtomicU64::new(0), fired: AtomicBool::new(false), waker: AtomicWaker::new() })
    }

    fn arm(&self, at: Instant) {
        let nanos = at.saturating_duration_since(self.origin).as_nanos().max(1) as u64;
        self.fired.store(false, Ordering::Release);
        self.deadline.store(nanos, Ordering::Release);
    }

    /// Called by the sweep: fires the timer when its deadline has passed.
    pub fn fire_if_due(&self, now: Instant) {
        let deadline = self.deadline.load(Ordering::Acquire);
        if deadline != 0 && self.origin + Duration::from_nanos(deadline) <= now {
            self.deadline.store(0, Ordering::Release);
            self.fired.store(true, Ordering::Release);
            self.waker.wake();
        }
    }
}

#[derive(Clone)]
pub struct ConnTimer(pub Arc<TimerSlot>);

struct SlotSleep(Arc<TimerSlot>);

impl Future for SlotSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.waker.register(cx.waker());
        if self.0.fired.load(Ordering::Acquire) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Sleep for SlotSleep {}

thread_local! {
    /// The shard's coarse clock: set by the sweep every tick, read by hyper once per
    /// request to place its header deadline (a reading up to one tick old only moves
    /// that deadline a tick earlier).
    static COARSE_NOW: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// Advances this thread's coarse clock (the sweep calls it every tick).
pub fn tick_coarse_clock(now: Instant) {
    COARSE_NOW.with(|c| c.set(Some(now)));
}

impl Timer for ConnTimer {
    fn now(&self) -> Instant {
        COARSE_NOW.with(|c| c.get()).unwrap_or_else(Instant::now)
    }

    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        self.sleep_until(Instant::now() + duration)
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        self.0.arm(deadline);
        Box::pin(SlotSleep(self.0.clone()))
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn Sleep>>, new_deadline: Instant) {
        self.0.arm(new_deadline);
        *sleep = Box::pin(SlotSleep(self.0.clone()));
    }
}
