//! Our error body on the answers hyper writes by itself. When a request cannot be
//! parsed at all (headers over `http.max_header_bytes`, two `Content-Length`s, a raw
//! non-ASCII byte in the path, a malformed request line), hyper never calls our
//! service: `proto/h1/conn.rs` `on_parse_error` writes the head `Server::on_error`
//! (`proto/h1/role.rs`) picked, `HTTP/1.1 4xx …\r\nconnection: close\r\ncontent-length:
//! 0\r\n\r\n`, and closes. hyper offers no hook for that answer, so a client would meet
//! the one error of ours without a code.
//!
//! [`ServedIo`], the served connection's IO, recognises that head and writes in its
//! place a complete response with our `{"error":{"code","message"}}` body and
//! `connection: close`, then reports hyper's buffer as written. hyper writes it only
//! while no response of ours is under way, and it is nothing like one of ours: ours
//! always carry `x-quarry-shard`, `x-request-id` and `date`, so they are longer than
//! [`LONGEST`] and the normal path pays one length comparison per write. The tests in
//! `tests/it/errors.rs` pin the exact bytes, so a hyper upgrade that changes them fails
//! there rather than silently sending empty bodies again.
//!
//! [`ServedIo`] also closes a connection whose last answer left its request's body
//! unread (`body::Slot::settle`) the lingering way: it shuts its side, then reads and
//! drops what the client still sends until the client closes. Closing a socket with
//! unread bytes sends a reset, which can destroy the answer before the client has read
//! it (RFC 9112 §9.6). The sweep bounds the wait: the connection waits for no request
//! head, so it is closed after `http.header_read_timeout` like one that does.

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};

use hyper::rt::{Read, ReadBuf, ReadBufCursor, Write};

use super::conn::ConnState;
use super::surface;
use crate::error::{ApiError, Code};
use crate::net::io::GlommioIo;

/// How hyper's automatic head ends (hyper 1.x, `auto_date_header(false)`).
const TAIL: &[u8] = b"\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";

/// The longest automatic head: `HTTP/1.1 431 Request Header Fields Too Large` + [`TAIL`].
const LONGEST: usize = 44 + TAIL.len();

/// The code for the automatic head `buf` is, or `None` for anything else.
#[inline]
fn automatic(buf: &[u8]) -> Option<Code> {
    if buf.len() > LONGEST || !buf.starts_with(b"HTTP/1.1 4") || !buf.ends_with(TAIL) {
        return None;
    }
    match &buf[9..12] {
        b"400" => Some(Code::BadRequest),
        b"414" => Some(Code::UriTooLong),
        b"431" => Some(Code::HeadersTooLarge),
        _ => None,
    }
}

/// What the client reads in place of hyper's empty answer.
fn message(code: Code, max_header_bytes: usize) -> String {
    match code {
        Code::HeadersTooLarge => format!(
            "The request head is too large: headers may total {max_header_bytes} bytes (http.max_header_bytes), \
             in at most http.max_headers fields."
        ),
        Code::UriTooLong => "The request target is too long.".to_owned(),
        _ => "The request is not valid HTTP/1.1: a malformed request line, a byte outside ASCII in the \
              target, or a malformed or repeated header such as Content-Length."
            .to_owned(),
    }
}

/// The complete response written instead of hyper's head.
fn answer(code: Code, shard: usize, max_header_bytes: usize) -> Vec<u8> {
    let body = surface::agentlex(&ApiError::new(code, message(code, max_header_bytes)));
    let status = code.status();
    let mut out = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nx-quarry-shard: {shard}\r\nconnection: close\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    out
}

/// A served connection's IO: [`GlommioIo`] with hyper's automatic answers replaced.
pub struct ServedIo {
    io: GlommioIo<Rc<ConnState>>,
    conn: Rc<ConnState>,
    shard: usize,
    max_header_bytes: usize,
    /// Our answer while it is being written, and how much of it has gone.
    replacing: Option<(Vec<u8>, usize)>,
    /// Our side has been shut (a lingering close is reading on).
    shut: bool,
}

impl ServedIo {
    pub fn new(io: GlommioIo<Rc<ConnState>>, conn: Rc<ConnState>, shard: usize, max_header_bytes: usize) -> ServedIo {
        ServedIo { io, conn, shard, max_header_bytes, replacing: None, shut: false }
    }

    /// Reads and drops what the client sends until it closes (or the read fails).
    fn poll_linger(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let mut scratch = [MaybeUninit::<u8>::uninit(); 16 * 1024];
        loop {
            let mut buf = ReadBuf::uninit(&mut scratch);
            match ready!(Pin::new(&mut self.io).poll_read(cx, buf.unfilled())) {
                Ok(()) if !buf.filled().is_empty() => {}
                _ => return Poll::Ready(()),
            }
        }
    }

    /// Writes the rest of our answer; `Ready(Ok)` once all of it has gone.
    fn poll_replace(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let (bytes, done) = self.replacing.as_mut().expect("a replacement under way");
        while *done < bytes.len() {
            match ready!(Pin::new(&mut self.io).poll_write(cx, &bytes[*done..])) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Ok(n) => *done += n,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        self.replacing = None;
        Poll::Ready(Ok(()))
    }
}

impl Read for ServedIo {
    #[inline]
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: ReadBufCursor<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl Write for ServedIo {
    #[inline]
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.replacing.is_none() {
            match automatic(buf) {
                None => return Pin::new(&mut this.io).poll_write(cx, buf),
                Some(code) => {
                    tracing::debug!(shard = this.shard, code = code.as_str(), "answering a request hyper could not parse");
                    this.replacing = Some((answer(code, this.shard, this.max_header_bytes), 0));
                }
            }
        }
        // hyper calls again with the same buffer until we report it written.
        ready!(this.poll_replace(cx))?;
        Poll::Ready(Ok(buf.len()))
    }

    #[inline]
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    #[inline]
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if !this.shut {
            ready!(Pin::new(&mut this.io).poll_shutdown(cx))?;
            this.shut = true;
        }
        if this.conn.lingers() {
            ready!(this.poll_linger(cx));
        }
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hypers_automatic_heads_are_recognised_and_ours_are_not() {
        let head = |status: &str| [format!("HTTP/1.1 {status}").as_bytes(), TAIL].concat();
        assert_eq!(automatic(&head("431 Request Header Fields Too Large")), Some(Code::HeadersTooLarge));
        assert_eq!(head("431 Request Header Fields Too Large").len(), LONGEST);
        assert_eq!(automatic(&head("400 Bad Request")), Some(Code::BadRequest));
        assert_eq!(automatic(&head("414 URI Too Long")), Some(Code::UriTooLong));
        assert_eq!(automatic(&head("404 Not Found")), None);
        assert_eq!(automatic(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"), None);
        let ours = answer(Code::BadRequest, 0, 8192);
        assert_eq!(automatic(&ours), None, "our own answer is never replaced");
        let text = String::from_utf8(ours).unwrap();
        assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{text}");
        assert!(text.ends_with(r#""code":"bad_request","message":"The request is not valid HTTP/1.1: a malformed request line, a byte outside ASCII in the target, or a malformed or repeated header such as Content-Length."}}"#), "{text}");
    }
}
