//! Shared by the fake upstreams: a loopback listener, a request read and a JSON answer written.
//!
//! What the fake upstreams of these tests share: a loopback listener that serves each
//! connection on a thread of its own, an HTTP/1.1 request read (head, headers,
//! content-length JSON body), and a whole JSON answer written back.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};

/// Binds a loopback port and serves every connection with `serve` on its own thread.
pub fn listen(serve: impl Fn(TcpStream) + Send + Sync + Clone + 'static) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let serve = serve.clone();
            std::thread::spawn(move || serve(stream));
        }
    });
    addr
}

/// One request as a fake sees it.
pub struct Request {
    pub path: String,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (null when it is not).
    pub body: serde_json::Value,
}

/// The next request on the connection; `None` when the caller closed it.
pub fn read_request(r: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let len: usize = headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(Request { path, headers, body: serde_json::from_slice(&body).unwrap_or_default() })
}

/// A whole JSON answer; whether it could be written.
pub fn respond(w: &mut TcpStream, status: u16, body: &serde_json::Value) -> bool {
    let text = body.to_string();
    let head = format!("HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", text.len());
    w.write_all(head.as_bytes()).and_then(|_| w.write_all(text.as_bytes())).is_ok()
}
