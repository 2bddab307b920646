//! Server-sent events framing, incremental: bytes in as they arrive, `data`
//! payloads out. Events end at a blank line (`\n\n` or `\r\n\r\n`); a `data:` line
//! adds to the event's payload (several are joined by `\n`); `:` comment lines
//! (keep-alives) and other fields are skipped; the done signal (`[DONE]`) ends the
//! stream. Bytes are held until a line is whole, so a UTF-8 character split across
//! reads is never cut.

/// The manifest's `streaming.decoder`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseConfig {
    /// `data: ` by default; the space after the colon is optional on the wire.
    pub prefix: String,
    pub done_signal: Option<String>,
}

impl Default for SseConfig {
    fn default() -> Self {
        SseConfig { prefix: "data: ".into(), done_signal: Some("[DONE]".into()) }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    Data(String),
    Done,
}

/// A frame larger than this without an end is malformed.
const MAX_EVENT_BYTES: usize = 16 << 20;

#[derive(Debug, Default)]
pub struct SseDecoder {
    config: SseConfig,
    buf: Vec<u8>,
    data: Option<String>,
    done: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed event stream: {0}")]
pub struct SseError(pub String);

impl SseDecoder {
    pub fn new(config: SseConfig) -> SseDecoder {
        SseDecoder { config, ..SseDecoder::default() }
    }

    pub fn done(&self) -> bool {
        self.done
    }

    /// Takes more bytes; returns the items they completed.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseItem>, SseError> {
        // Lines are read where they lie: in `bytes` itself unless a line began in an
        // earlier read, and only an unfinished line is kept for the next.
        let mut pending = std::mem::take(&mut self.buf);
        let buffered = !pending.is_empty();
        if buffered {
            pending.extend_from_slice(bytes);
        }
        let mut out = Vec::new();
        let mut start = 0;
        {
            let input: &[u8] = if buffered { &pending } else { bytes };
            while let Some(nl) = memchr::memchr(b'\n', &input[start..]) {
                let end = start + nl;
                let line = &input[start..end];
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                let line = std::str::from_utf8(line).map_err(|_| SseError("a line is not UTF-8".into()))?;
                start = end + 1;
                self.line(line, &mut out);
            }
        }
        if buffered {
            pending.drain(..start);
        } else {
            pending.extend_from_slice(&bytes[start..]);
        }
        self.buf = pending;
        if self.buf.len() + self.data.as_ref().map_or(0, String::len) > MAX_EVENT_BYTES {
            return Err(SseError(format!("an event is larger than {MAX_EVENT_BYTES} bytes")));
        }
        Ok(out)
    }

    /// The end of the body: an event left without its blank line still counts.
    pub fn finish(&mut self) -> Result<Vec<SseItem>, SseError> {
        let mut out = Vec::new();
        if !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            let line = std::str::from_utf8(&rest).map_err(|_| SseError("a line is not UTF-8".into()))?.to_owned();
            self.line(line.trim_end_matches('\r'), &mut out);
        }
        self.dispatch(&mut out);
        Ok(out)
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseItem>) {
        if line.is_empty() {
            return self.dispatch(out);
        }
        if line.starts_with(':') || self.done {
            return;
        }
        let prefix = self.config.prefix.trim_end();
        let Some(value) = line.strip_prefix(prefix) else { return };
        let value = value.strip_prefix(' ').unwrap_or(value);
        match &mut self.data {
            Some(d) => {
                d.push('\n');
                d.push_str(value);
            }
            None => self.data = Some(value.to_owned()),
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        let Some(data) = self.data.take() else { return };
        if self.config.done_signal.as_deref() == Some(data.trim()) {
            self.done = true;
            out.push(SseItem::Done);
        } else if !self.done {
            out.push(SseItem::Data(data));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<SseItem> {
        let mut d = SseDecoder::new(SseConfig::default());
        let mut out: Vec<SseItem> = chunks.iter().flat_map(|c| d.push(c).unwrap()).collect();
        out.extend(d.finish().unwrap());
        out
    }

    #[test]
    fn frames_split_anywhere_reassemble() {
        let whole = "event: x\ndata: {\"a\":\"é\"}\n\n: keep-alive\n\ndata:{\"b\":1}\r\n\r\ndata: [DONE]\n\n".as_bytes();
        let expected = vec![SseItem::Data("{\"a\":\"é\"}".into()), SseItem::Data("{\"b\":1}".into()), SseItem::Done];
        for cut in 0..whole.len() {
            assert_eq!(all(&[&whole[..cut], &whole[cut..]]), expected, "cut at {cut}");
        }
    }

    #[test]
    fn multi_line_data_and_an_unterminated_tail() {
        assert_eq!(all(&[b"data: a\ndata: b\n\ndata: c"]), vec![SseItem::Data("a\nb".into()), SseItem::Data("c".into())]);
    }
}
