//! A shard's open connections: their state, the cap, and the sweep that enforces
//! timeouts. The sweep runs every [`TICK`] on the shard and closes a connection that
//! - has waited `http.header_read_timeout` for a request head: no request in hand and
//!   nothing sent since (a keep-alive connection left idle, or a slowloris client
//!   trickling its headers — bytes it sends do not reset this clock); or
//! - moved no byte either way for `http.idle_timeout` while no request was in hand.
//!
//! Doing the header timeout here rather than with hyper's own timer costs nothing per
//! request: hyper's timer allocates a boxed sleep for every request head.
//! Graceful shutdown asks every connection to finish its request and close.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::task::Waker;
use std::time::Duration;

/// How often the sweep looks at every connection: the granularity of the timeouts.
pub const TICK: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Close {
    /// Finish the request in hand, then close (graceful shutdown).
    Drain,
    /// Close now.
    Kill,
}

pub struct ConnState {
    active: Cell<bool>,
    /// Bytes were sent since the last sweep.
    sent: Cell<bool>,
    idle_for: Cell<Duration>,
    head_wait: Cell<Duration>,
    in_flight: Cell<u32>,
    close: Cell<Option<Close>>,
    /// An answer left its request's body unread and said `connection: close`: the
    /// connection reads until the client closes before it closes (`ServedIo`).
    linger: Cell<bool>,
    waker: RefCell<Option<Waker>>,
    /// The client's address (for per-address limits such as signups).
    pub peer: Option<std::net::SocketAddr>,
}

impl ConnState {
    fn new() -> ConnState {
        ConnState {
            active: Cell::new(true),
            sent: Cell::new(false),
            idle_for: Cell::new(Duration::ZERO),
            head_wait: Cell::new(Duration::ZERO),
            in_flight: Cell::new(0),
            close: Cell::new(None),
            linger: Cell::new(false),
            waker: RefCell::new(None),
            peer: None,
        }
    }

    /// Bytes were received on the connection.
    #[inline]
    pub fn touch(&self) {
        self.active.set(true);
    }

    /// Bytes were sent on the connection.
    #[inline]
    pub fn sent(&self) {
        self.active.set(true);
        self.sent.set(true);
    }

    pub fn request_started(&self) {
        self.in_flight.set(self.in_flight.get() + 1);
    }

    pub fn request_finished(&self) {
        self.in_flight.set(self.in_flight.get().saturating_sub(1));
        self.active.set(true);
    }

    /// The answer being written leaves a body unread; see `linger`.
    pub fn linger(&self) {
        self.linger.set(true);
    }

    pub fn lingers(&self) -> bool {
        self.linger.get()
    }

    pub fn close_requested(&self) -> Option<Close> {
        self.close.get()
    }

    /// Remembers the connection task's waker so a close request can wake it.
    pub fn register(&self, waker: &Waker) {
        let mut slot = self.waker.borrow_mut();
        match slot.as_ref() {
            Some(w) if w.will_wake(waker) => {}
            _ => *slot = Some(waker.clone()),
        }
    }

    fn request_close(&self, how: Close) {
        if self.close.get() != Some(Close::Kill) {
            self.close.set(Some(how));
        }
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }
}

/// The shard's connection table.
pub struct Connections {
    list: RefCell<Vec<Weak<ConnState>>>,
    open: Cell<usize>,
    draining: Cell<bool>,
}

/// Removes a connection from the count when its task ends, however it ends.
pub struct OpenGuard<'a>(&'a Connections);

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        self.0.open.set(self.0.open.get() - 1);
    }
}

impl Connections {
    pub fn new() -> Connections {
        Connections { list: RefCell::new(Vec::new()), open: Cell::new(0), draining: Cell::new(false) }
    }

    pub fn open(&self) -> usize {
        self.open.get()
    }

    /// Registers a new connection; the guard keeps it counted while it lives.
    pub fn add(&self, peer: Option<std::net::SocketAddr>) -> (Rc<ConnState>, OpenGuard<'_>) {
        let state = Rc::new(ConnState { peer, ..ConnState::new() });
        if self.draining.get() {
            state.close.set(Some(Close::Drain));
        }
        self.list.borrow_mut().push(Rc::downgrade(&state));
        self.open.set(self.open.get() + 1);
        (state, OpenGuard(self))
    }

    /// One pass of the sweep: connections waiting too long for a request head, and
    /// idle ones.
    pub fn sweep(&self, header_timeout: Duration, idle_timeout: Duration) {
        self.list.borrow_mut().retain(|weak| {
            let Some(c) = weak.upgrade() else { return false };
            let busy = c.in_flight.get() > 0;
            if c.sent.replace(false) || busy {
                c.head_wait.set(Duration::ZERO);
            } else {
                c.head_wait.set(c.head_wait.get() + TICK);
                if c.head_wait.get() >= header_timeout {
                    c.request_close(Close::Kill);
                }
            }
            if c.active.replace(false) || busy {
                c.idle_for.set(Duration::ZERO);
            } else {
                c.idle_for.set(c.idle_for.get() + TICK);
                if c.idle_for.get() >= idle_timeout {
                    c.request_close(Close::Kill);
                }
            }
            true
        });
    }

    /// Asks every connection to finish what it is doing and close.
    pub fn drain(&self) {
        self.draining.set(true);
        self.each(|c| c.request_close(Close::Drain));
    }

    /// Closes every connection now.
    pub fn kill(&self) {
        self.each(|c| c.request_close(Close::Kill));
    }

    fn each(&self, f: impl Fn(&ConnState)) {
        let list: Vec<Rc<ConnState>> = self.list.borrow().iter().filter_map(Weak::upgrade).collect();
        list.iter().for_each(|c| f(c));
    }
}

impl Default for Connections {
    fn default() -> Self {
        Connections::new()
    }
}

impl crate::net::io::Activity for ConnState {
    #[inline]
    fn touch(&self) {
        ConnState::touch(self)
    }

    #[inline]
    fn sent(&self) {
        ConnState::sent(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_connections_are_closed_busy_ones_are_not() {
        let conns = Connections::new();
        let (idle, _g1) = conns.add(None);
        let (busy, _g2) = conns.add(None);
        busy.request_started();
        for _ in 0..11 {
            conns.sweep(Duration::from_secs(60), Duration::from_secs(1));
        }
        assert_eq!(idle.close_requested(), Some(Close::Kill));
        assert_eq!(busy.close_requested(), None);
        assert_eq!(conns.open(), 2);
    }

    #[test]
    fn traffic_resets_the_idle_clock() {
        let conns = Connections::new();
        let (c, _g) = conns.add(None);
        for _ in 0..30 {
            c.touch();
            conns.sweep(Duration::from_secs(60), Duration::from_millis(500));
        }
        assert_eq!(c.close_requested(), None);
    }

    #[test]
    fn a_connection_waiting_for_a_head_is_closed_even_while_it_trickles_bytes() {
        let conns = Connections::new();
        let (slow, _g1) = conns.add(None);
        let (downloading, _g2) = conns.add(None);
        for _ in 0..11 {
            slow.touch(); // a slowloris client: bytes in, no complete head
            downloading.sent(); // a response still going out
            conns.sweep(Duration::from_secs(1), Duration::from_secs(60));
        }
        assert_eq!(slow.close_requested(), Some(Close::Kill));
        assert_eq!(downloading.close_requested(), None);
    }

    #[test]
    fn drain_reaches_open_and_new_connections_and_guards_count() {
        let conns = Connections::new();
        let (a, g) = conns.add(None);
        conns.drain();
        assert_eq!(a.close_requested(), Some(Close::Drain));
        let (b, _g) = conns.add(None);
        assert_eq!(b.close_requested(), Some(Close::Drain));
        drop(g);
        assert_eq!(conns.open(), 1);
    }
}
