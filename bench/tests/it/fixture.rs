//! Shared by the tests: `TestServer`, a loopback server answering in a chosen framing.
//!
//! `TestServer`: a thread-per-connection HTTP/1.1 server on an ephemeral loopback port that
//! answers in one of a few framings, and counts the request bodies it saw.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[derive(Debug, Clone, Copy)]
pub enum Framing {
    /// HTTP/1.1 keep-alive with Content-Length.
    ContentLength,
    /// HTTP/1.1 keep-alive with a chunked body written in several pieces.
    Chunked,
    /// HTTP/1.0: one response per connection, then close (like python's http.server).
    CloseEach,
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub body_bytes: Arc<AtomicU64>,
}

impl TestServer {
    pub fn start(framing: Framing) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let body_bytes = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&body_bytes);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let counter = Arc::clone(&counter);
                std::thread::spawn(move || serve(stream, framing, &counter));
            }
        });
        TestServer { addr, body_bytes }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

fn serve(mut stream: TcpStream, framing: Framing, body_bytes: &AtomicU64) {
    stream.set_nodelay(true).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Some((head_len, content_length, path)) = parse_request(&buf) else {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        if buf.len() < head_len + content_length {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        }
        buf.drain(..head_len + content_length);
        body_bytes.fetch_add(content_length as u64, Ordering::Relaxed);
        let status = if path == "/missing" { "404 Not Found" } else { "200 OK" };
        if respond(&mut stream, framing, status).is_err() || matches!(framing, Framing::CloseEach) {
            return;
        }
    }
}

/// (head length, Content-Length, path) of the first complete request head in `buf`.
fn parse_request(buf: &[u8]) -> Option<(usize, usize, String)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&buf[..end]).unwrap();
    let path = head.split(' ').nth(1).unwrap().to_string();
    let length = head.lines().find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap())).unwrap_or(0);
    Some((end, length, path))
}

fn respond(stream: &mut TcpStream, framing: Framing, status: &str) -> std::io::Result<()> {
    match framing {
        Framing::ContentLength => write!(stream, "HTTP/1.1 {status}\r\nContent-Length: 13\r\n\r\nHello, World!"),
        Framing::CloseEach => write!(stream, "HTTP/1.0 {status}\r\nContent-Length: 2\r\n\r\nok"),
        Framing::Chunked => {
            write!(stream, "HTTP/1.1 {status}\r\nTransfer-Encoding: chunked\r\n\r\n7\r\nHello, ")?;
            stream.flush()?;
            write!(stream, "\r\n6\r\nWorld!\r\n0\r\n\r\n")
        }
    }
}
