//! The smallest HTTP/1.1 response parser that lets a load generator know where one response
//! ends: status line, `Content-Length`, chunked transfer encoding, `Connection`, and bodies
//! that run until close. It never copies or allocates; the caller owns the bytes.
//!
//! The caller feeds whatever it has buffered to [`ResponseParser::advance`] and drops the
//! bytes the parser reports as consumed. Bytes after a complete response (pipelining, or a
//! server that wrote early) are left for the next response.

/// Longest head (status line plus headers) or chunk-size/trailer line accepted.
pub const MAX_HEAD: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The parser used `consumed` bytes from the front of the input and needs more.
    NeedMore { consumed: usize },
    /// A response ended after `consumed` bytes; the parser is ready for the next one.
    Complete { consumed: usize, status: u16, keep_alive: bool },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("malformed status line")]
    StatusLine,
    #[error("malformed header line")]
    HeaderLine,
    #[error("invalid Content-Length")]
    ContentLength,
    #[error("invalid chunk size line")]
    ChunkSize,
    #[error("chunk data not followed by CRLF")]
    ChunkEnd,
    #[error("head or line longer than {MAX_HEAD} bytes")]
    TooLong,
    #[error("connection closed mid-response")]
    Truncated,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Fixed { remaining: u64 },
    ChunkSize,
    ChunkData { remaining: u64 },
    ChunkDataEnd,
    Trailers,
    UntilClose,
}

/// What the head said about the body and the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    status: u16,
    keep_alive: bool,
    content_length: Option<u64>,
    chunked: bool,
}

#[derive(Debug, Clone)]
pub struct ResponseParser {
    state: State,
    expects_body: bool,
    status: u16,
    keep_alive: bool,
}

impl Default for ResponseParser {
    fn default() -> Self {
        ResponseParser::new(true)
    }
}

impl ResponseParser {
    /// `expects_body` is false when the request was `HEAD`.
    pub fn new(expects_body: bool) -> ResponseParser {
        ResponseParser { state: State::Head, expects_body, status: 0, keep_alive: true }
    }

    /// Starts over for the response to the next request.
    pub fn reset(&mut self, expects_body: bool) {
        *self = ResponseParser::new(expects_body);
    }

    /// True while no byte of the current response has been consumed.
    pub fn at_start(&self) -> bool {
        self.state == State::Head
    }

    /// Parses as far as `buf` allows.
    pub fn advance(&mut self, buf: &[u8]) -> Result<Progress, ParseError> {
        let mut pos = 0;
        loop {
            let rest = &buf[pos..];
            let step = match self.state {
                State::Head => self.head(rest)?,
                State::Fixed { remaining } => self.fixed(rest, remaining),
                State::ChunkSize => self.chunk_size(rest)?,
                State::ChunkData { remaining } => self.chunk_data(rest, remaining),
                State::ChunkDataEnd => self.chunk_data_end(rest)?,
                State::Trailers => self.trailer(rest)?,
                State::UntilClose => Step::More(rest.len()),
            };
            match step {
                Step::Continue(used) => pos += used,
                Step::More(used) => return Ok(Progress::NeedMore { consumed: pos + used }),
                Step::Done(used) => return Ok(self.complete(pos + used)),
            }
        }
    }

    /// The peer closed the connection: a body delimited by close is now complete; anything
    /// else in progress is truncated.
    pub fn finish_on_eof(&mut self) -> Result<Progress, ParseError> {
        match self.state {
            State::UntilClose => Ok(self.complete(0)),
            _ => Err(ParseError::Truncated),
        }
    }

    fn complete(&mut self, consumed: usize) -> Progress {
        let done = Progress::Complete { consumed, status: self.status, keep_alive: self.keep_alive };
        self.reset(self.expects_body);
        done
    }

    fn head(&mut self, buf: &[u8]) -> Result<Step, ParseError> {
        let Some((head, len)) = parse_head(buf)? else {
            return Ok(Step::More(0));
        };
        self.status = head.status;
        self.keep_alive = head.keep_alive;
        self.state = if (100..200).contains(&head.status) && head.status != 101 {
            State::Head // an interim response; the real one follows
        } else if !self.expects_body || head.status == 204 || head.status == 304 || head.status == 101 {
            return Ok(Step::Done(len));
        } else if head.chunked {
            State::ChunkSize
        } else if let Some(n) = head.content_length {
            State::Fixed { remaining: n }
        } else {
            self.keep_alive = false;
            State::UntilClose
        };
        Ok(Step::Continue(len))
    }

    fn fixed(&mut self, buf: &[u8], remaining: u64) -> Step {
        let take = remaining.min(buf.len() as u64);
        if take == remaining {
            return Step::Done(take as usize);
        }
        self.state = State::Fixed { remaining: remaining - take };
        Step::More(take as usize)
    }

    fn chunk_size(&mut self, buf: &[u8]) -> Result<Step, ParseError> {
        let Some((line, len)) = next_line(buf)? else {
            return Ok(Step::More(0));
        };
        let size = parse_chunk_size(line)?;
        self.state = if size == 0 { State::Trailers } else { State::ChunkData { remaining: size } };
        Ok(Step::Continue(len))
    }

    fn chunk_data(&mut self, buf: &[u8], remaining: u64) -> Step {
        let take = remaining.min(buf.len() as u64);
        self.state = if take == remaining { State::ChunkDataEnd } else { State::ChunkData { remaining: remaining - take } };
        if take == remaining {
            Step::Continue(take as usize)
        } else {
            Step::More(take as usize)
        }
    }

    fn chunk_data_end(&mut self, buf: &[u8]) -> Result<Step, ParseError> {
        match buf {
            [b'\r', b'\n', ..] => {
                self.state = State::ChunkSize;
                Ok(Step::Continue(2))
            }
            [] | [b'\r'] => Ok(Step::More(0)),
            _ => Err(ParseError::ChunkEnd),
        }
    }

    fn trailer(&mut self, buf: &[u8]) -> Result<Step, ParseError> {
        match next_line(buf)? {
            None => Ok(Step::More(0)),
            Some((b"", len)) => Ok(Step::Done(len)),
            Some((_, len)) => Ok(Step::Continue(len)),
        }
    }
}

enum Step {
    /// Used this many bytes; the state changed, keep going.
    Continue(usize),
    /// Used this many bytes; the input is exhausted for now.
    More(usize),
    /// Used this many bytes; the response is complete.
    Done(usize),
}

/// The next line without its `\r\n` (or bare `\n`), and the bytes it took.
fn next_line(buf: &[u8]) -> Result<Option<(&[u8], usize)>, ParseError> {
    match buf.iter().position(|&b| b == b'\n') {
        Some(nl) => Ok(Some((buf[..nl].strip_suffix(b"\r").unwrap_or(&buf[..nl]), nl + 1))),
        None if buf.len() > MAX_HEAD => Err(ParseError::TooLong),
        None => Ok(None),
    }
}

/// Parses a whole head if `buf` holds one; returns it and its length including the blank line.
fn parse_head(buf: &[u8]) -> Result<Option<(Head, usize)>, ParseError> {
    let Some((status_line, mut pos)) = next_line(buf)? else {
        return Ok(None);
    };
    let (status, http10) = parse_status_line(status_line)?;
    let mut head = Head { status, keep_alive: !http10, content_length: None, chunked: false };
    loop {
        if pos > MAX_HEAD {
            return Err(ParseError::TooLong);
        }
        let Some((line, len)) = next_line(&buf[pos..])? else {
            return Ok(None);
        };
        pos += len;
        if line.is_empty() {
            return Ok(Some((head, pos)));
        }
        apply_header(&mut head, line, http10)?;
    }
}

/// `HTTP/1.x SSS reason` → (status, is HTTP/1.0).
fn parse_status_line(line: &[u8]) -> Result<(u16, bool), ParseError> {
    let http10 = match line.get(..9) {
        Some(b"HTTP/1.1 ") => false,
        Some(b"HTTP/1.0 ") => true,
        _ => return Err(ParseError::StatusLine),
    };
    match line.get(9..12) {
        Some(&[a, b, c]) if [a, b, c].iter().all(u8::is_ascii_digit) => {
            let status = (a - b'0') as u16 * 100 + (b - b'0') as u16 * 10 + (c - b'0') as u16;
            Ok((status, http10))
        }
        _ => Err(ParseError::StatusLine),
    }
}

fn apply_header(head: &mut Head, line: &[u8], http10: bool) -> Result<(), ParseError> {
    let colon = line.iter().position(|&b| b == b':').ok_or(ParseError::HeaderLine)?;
    let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
    if name.eq_ignore_ascii_case(b"content-length") {
        head.content_length = Some(parse_decimal(value).ok_or(ParseError::ContentLength)?);
    } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
        head.chunked = last_token(value).eq_ignore_ascii_case(b"chunked");
    } else if name.eq_ignore_ascii_case(b"connection") {
        if has_token(value, b"close") {
            head.keep_alive = false;
        } else if http10 && has_token(value, b"keep-alive") {
            head.keep_alive = true;
        }
    }
    Ok(())
}

fn last_token(value: &[u8]) -> &[u8] {
    value.rsplit(|&b| b == b',').next().unwrap_or(value).trim_ascii()
}

fn has_token(value: &[u8], token: &[u8]) -> bool {
    value.split(|&b| b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit().then_some(())?;
        n.checked_mul(10)?.checked_add((d - b'0') as u64)
    })
}

/// A chunk-size line: hex digits, optionally followed by `;extensions`.
fn parse_chunk_size(line: &[u8]) -> Result<u64, ParseError> {
    let hex = line.split(|&b| b == b';').next().unwrap_or(line).trim_ascii();
    if hex.is_empty() {
        return Err(ParseError::ChunkSize);
    }
    hex.iter().try_fold(0u64, |n, &d| {
        let digit = (d as char).to_digit(16).ok_or(ParseError::ChunkSize)? as u64;
        n.checked_mul(16).and_then(|n| n.checked_add(digit)).ok_or(ParseError::ChunkSize)
    })
}

#[cfg(test)]
mod tests;
