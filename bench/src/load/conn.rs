//! One client connection: a closed loop of write a prepared request, read until the parser
//! says the response ended, record, repeat. Reconnects when the server closes.
//!
//! The socket is driven through `AsyncFd` rather than `tokio::net::TcpStream` so the loop can
//! skip the read that would only return `EWOULDBLOCK`: once a response is complete, nothing
//! more can arrive before the next request is written, so readiness is cleared by hand. That
//! keeps the client at one `write` and one `read` per request, like the servers it measures.
//!
//! Latency runs from just before the request is written to the parse of its last byte, and
//! the next request is written at once, so the loop has no gap: throughput ≈ connections /
//! mean latency (Little's law). wrk writes the next request on a later turn of its event loop
//! and leaves that wait out, so at equal throughput its percentiles read lower.

use std::cell::{Cell, RefCell};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;

use super::read_buf::ReadBuf;
use super::response::{Progress, ResponseParser};
use super::scenario::Scenario;
use super::stats::Stats;
use super::sys;

/// Pause after a failed connect, so a server that is down is not hammered.
const CONNECT_RETRY: Duration = Duration::from_millis(10);

/// What every connection of a run shares: read-only, built once.
#[derive(Debug)]
pub struct Plan {
    pub addr: std::net::SocketAddr,
    pub scenario: Scenario,
    pub connections: usize,
    pub warmup_end: Instant,
    pub end: Instant,
    pub timeout: Duration,
}

/// One client thread's state, shared by its connections (all on the same thread).
pub struct ThreadState {
    pub plan: Arc<Plan>,
    pub stats: RefCell<Stats>,
    /// When each connection's outstanding request was sent, if one is.
    pub in_flight: Vec<Cell<Option<Instant>>>,
}

impl ThreadState {
    /// True once the warmup is over: errors and reconnects count from then on.
    fn measuring(&self) -> bool {
        Instant::now() >= self.plan.warmup_end
    }
}

/// Runs connection `conn` (indexing `state.in_flight` by `slot`) until the task is dropped.
pub async fn run(state: Rc<ThreadState>, conn: usize, slot: usize) {
    let plan = &state.plan;
    let mut cursor = plan.scenario.start_for(conn, plan.connections);
    let mut buf = ReadBuf::new();
    let mut first = true;
    loop {
        let Some(sock) = connect(&state).await else {
            return;
        };
        if !first && state.measuring() {
            state.stats.borrow_mut().reconnects += 1;
        }
        first = false;
        buf.clear();
        serve(&state, slot, &sock, &mut cursor, &mut buf).await;
    }
}

/// Connects, retrying after failures; `None` once the run is over.
async fn connect(state: &ThreadState) -> Option<AsyncFd<TcpStream>> {
    let plan = &state.plan;
    while Instant::now() < plan.end {
        let attempt = tokio::time::timeout(plan.timeout, tokio::net::TcpStream::connect(plan.addr)).await;
        let stream = attempt.map_err(io::Error::from).and_then(|r| r).and_then(into_async_fd);
        match stream {
            Ok(sock) => return Some(sock),
            Err(_) => {
                if state.measuring() {
                    state.stats.borrow_mut().errors.connect += 1;
                }
                tokio::time::sleep(CONNECT_RETRY).await;
            }
        }
    }
    None
}

fn into_async_fd(stream: tokio::net::TcpStream) -> io::Result<AsyncFd<TcpStream>> {
    stream.set_nodelay(true)?;
    sys::register(stream.into_std()?)
}

/// The closed loop on one open connection; returns when the connection must be replaced
/// (the server closed it or asked to, or it failed).
async fn serve(state: &ThreadState, slot: usize, sock: &AsyncFd<TcpStream>, cursor: &mut usize, buf: &mut ReadBuf) {
    let plan = &state.plan;
    let mut parser = ResponseParser::default();
    loop {
        let request = plan.scenario.get(*cursor);
        *cursor = cursor.wrapping_add(1);
        let sent = Instant::now();
        state.in_flight[slot].set(Some(sent));
        if write_all(sock, &request.bytes).await.is_err() {
            state.in_flight[slot].set(None);
            if state.measuring() {
                state.stats.borrow_mut().errors.write += 1;
            }
            return;
        }
        parser.reset(request.expects_body);
        let outcome = read_response(sock, &mut parser, buf).await;
        let done = Instant::now();
        state.in_flight[slot].set(None);
        let measured = sent >= plan.warmup_end && done <= plan.end;
        let mut stats = state.stats.borrow_mut();
        match outcome {
            Ok(response) => {
                let latency = done - sent;
                if measured {
                    stats.record(latency, response.status, response.read, request.bytes.len() as u64);
                    stats.errors.timeout += u64::from(latency > plan.timeout);
                }
                if !response.keep_alive {
                    return;
                }
            }
            Err(failure) => {
                if measured {
                    match failure {
                        ReadFailure::Io => stats.errors.read += 1,
                        ReadFailure::Protocol => stats.errors.protocol += 1,
                    }
                }
                return;
            }
        }
    }
}

async fn write_all(sock: &AsyncFd<TcpStream>, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        // A fresh request almost always fits the socket buffer: try before asking the reactor.
        match sock.get_ref().write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => sock.writable().await?.clear_ready(),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

struct Response {
    status: u16,
    keep_alive: bool,
    /// Bytes read from the socket while this response was awaited.
    read: u64,
}

enum ReadFailure {
    Io,
    Protocol,
}

async fn read_response(sock: &AsyncFd<TcpStream>, parser: &mut ResponseParser, buf: &mut ReadBuf) -> Result<Response, ReadFailure> {
    if !buf.filled().is_empty() {
        if let Some(done) = parse(parser, buf, 0)? {
            return Ok(done);
        }
    }
    let mut read = 0u64;
    loop {
        let mut guard = sock.readable().await.map_err(|_| ReadFailure::Io)?;
        let spare = buf.spare().ok_or(ReadFailure::Protocol)?;
        let capacity = spare.len();
        let n = match guard.try_io(|s| s.get_ref().read(spare)) {
            Err(_would_block) => continue,
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
            Ok(Err(_)) => return Err(ReadFailure::Io),
            Ok(Ok(0)) => return eof(parser, read),
            Ok(Ok(n)) => n,
        };
        buf.commit(n);
        read += n as u64;
        if let Some(done) = parse(parser, buf, read)? {
            // A short read drained the socket, and nothing more comes before our next
            // request: skip the read that would only say EWOULDBLOCK.
            if n < capacity {
                guard.clear_ready();
            }
            return Ok(done);
        }
    }
}

/// Feeds the buffered bytes to the parser; `Some` once the response is complete.
fn parse(parser: &mut ResponseParser, buf: &mut ReadBuf, read: u64) -> Result<Option<Response>, ReadFailure> {
    match parser.advance(buf.filled()).map_err(|_| ReadFailure::Protocol)? {
        Progress::NeedMore { consumed } => {
            buf.consume(consumed);
            Ok(None)
        }
        Progress::Complete { consumed, status, keep_alive } => {
            buf.consume(consumed);
            Ok(Some(Response { status, keep_alive, read }))
        }
    }
}

fn eof(parser: &mut ResponseParser, read: u64) -> Result<Response, ReadFailure> {
    match parser.finish_on_eof() {
        Ok(Progress::Complete { status, .. }) => Ok(Response { status, keep_alive: false, read }),
        // Closed before the response began: the server dropped the connection.
        _ if parser.at_start() && read == 0 => Err(ReadFailure::Io),
        _ => Err(ReadFailure::Protocol),
    }
}
