//! Shared by the tests: a minimal HTTP/1.1 client for JSON POSTs and server-sent events.
//!
//! A minimal HTTP/1.1 client for the gateway: a JSON POST, the response read whole
//! (content-length or chunked), and a streamed response read event by event.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The `data:` payloads of an event-stream body.
    pub fn events(&self) -> Vec<String> {
        String::from_utf8_lossy(&self.body).split("\n\n").filter_map(|e| e.strip_prefix("data: ").map(str::to_owned)).collect()
    }
}

pub fn open(addr: SocketAddr, key: &str, body: &serde_json::Value) -> BufReader<TcpStream> {
    open_at(addr, "/v1/chat/completions", key, body, Duration::from_secs(30))
}

/// A JSON POST to `path`, each read waiting at most `wait`.
pub fn open_at(addr: SocketAddr, path: &str, key: &str, body: &serde_json::Value, wait: Duration) -> BufReader<TcpStream> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    let body = serde_json::to_vec(body).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {key}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body).unwrap();
    BufReader::new(s)
}

pub fn head(r: &mut BufReader<TcpStream>) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).unwrap();
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':').unwrap();
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    (status, headers)
}

pub fn post(addr: SocketAddr, key: &str, body: &serde_json::Value) -> Reply {
    read(open(addr, key, body))
}

/// A JSON POST to `path`, its response read whole (each read waiting at most `wait`).
pub fn post_at(addr: SocketAddr, path: &str, key: &str, body: &serde_json::Value, wait: Duration) -> Reply {
    read(open_at(addr, path, key, body, wait))
}

fn read(mut r: BufReader<TcpStream>) -> Reply {
    let (status, headers) = head(&mut r);
    let len = headers.iter().find(|(k, _)| k == "content-length").map(|(_, v)| v.parse::<usize>().unwrap());
    let mut body = Vec::new();
    match len {
        Some(n) => {
            body.resize(n, 0);
            r.read_exact(&mut body).unwrap();
        }
        None => {
            while let Some(c) = chunk(&mut r) {
                body.extend_from_slice(&c);
            }
        }
    }
    Reply { status, headers, body }
}

/// The next chunk of a chunked body; `None` at its last (empty) chunk.
pub fn chunk(r: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut size = String::new();
    r.read_line(&mut size).unwrap();
    let n = usize::from_str_radix(size.trim(), 16).unwrap();
    let mut data = vec![0; n + 2];
    r.read_exact(&mut data).unwrap();
    data.truncate(n);
    (n > 0).then_some(data)
}
