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
        Conn::over(TcpStream::connect(addr).expect("connect"))
    }

    /// A connection to `addr` (IPv4) from the local address `from` (on Linux every
    /// 127.x.y.z is loopback, so a test can be a second client: 127.0.0.2).
    pub fn open_from(addr: SocketAddr, from: std::net::Ipv4Addr) -> Conn {
        use std::os::fd::FromRawFd;
        let SocketAddr::V4(to) = addr else { panic!("an IPv4 address") };
        let sockaddr = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from(ip).to_be() },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: a socket made here, bound and connected with sockaddr_in values that
        // live across each call; on success the descriptor is handed to one TcpStream.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0, "socket: {}", io::Error::last_os_error());
            let stream = TcpStream::from_raw_fd(fd);
            let local = sockaddr(from, 0);
            assert_eq!(libc::bind(fd, (&local as *const libc::sockaddr_in).cast(), len), 0, "bind {from}: {}", io::Error::last_os_error());
            let remote = sockaddr(*to.ip(), to.port());
            assert_eq!(libc::connect(fd, (&remote as *const libc::sockaddr_in).cast(), len), 0, "connect: {}", io::Error::last_os_error());
            Conn::over(stream)
        }
    }

    fn over(stream: TcpStream) -> Conn {
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
