//! Shared by the tests: a raw-socket HTTP/1.1 client that sends exactly the bytes a test writes.
//!
//! A small blocking HTTP/1.1 client on a raw socket, so tests control exactly what
//! goes over the wire (keep-alive per shard, partial bodies, trickled headers).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn shard(&self) -> usize {
        self.header("x-quarry-shard").expect("x-quarry-shard on every response").parse().unwrap()
    }

    /// The error code of an error body.
    pub fn code(&self) -> String {
        self.json()["error"]["code"].as_str().unwrap_or_else(|| panic!("no error code: {}", self.text())).to_owned()
    }
}

/// One keep-alive connection.
pub struct Conn {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    pub fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        stream.set_nodelay(true).unwrap();
        Conn { stream, buf: Vec::new() }
    }

    pub fn send(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Response {
        self.write_request(method, path, headers, body);
        self.read_response().expect("a response")
    }

    pub fn write_request(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&[u8]>) {
        let mut head = format!("{method} {path} HTTP/1.1\r\nhost: quarry\r\n");
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(b) = body {
            head.push_str(&format!("content-length: {}\r\ncontent-type: application/json\r\n", b.len()));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body.unwrap_or_default());
        self.stream.write_all(&bytes).expect("write request");
    }

    pub fn read_response(&mut self) -> io::Result<Response> {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut parsed = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(head_len) = parsed.parse(&self.buf).expect("valid response head") {
                let status = parsed.code.unwrap();
                let headers: Vec<(String, String)> =
                    parsed.headers.iter().map(|h| (h.name.to_ascii_lowercase(), String::from_utf8_lossy(h.value).into_owned())).collect();
                let len: usize = headers.iter().find(|(k, _)| k == "content-length").map_or(0, |(_, v)| v.parse().unwrap());
                while self.buf.len() < head_len + len {
                    self.fill()?;
                }
                let body = self.buf[head_len..head_len + len].to_vec();
                self.buf.drain(..head_len + len);
                return Ok(Response { status, headers, body });
            }
            self.fill()?;
        }
    }

    fn fill(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"));
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    /// Whether the server has closed this connection (reads EOF or a reset).
    pub fn is_closed_by_server(&mut self, wait: Duration) -> bool {
        self.stream.set_read_timeout(Some(wait)).unwrap();
        let mut b = [0u8; 1];
        match self.stream.read(&mut b) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => matches!(e.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe),
        }
    }
}
