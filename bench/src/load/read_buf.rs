//! A connection's receive buffer: bytes read but not yet consumed by the parser. It compacts
//! instead of reallocating, and grows only when a single head or line needs more room.

use super::response::MAX_HEAD;

const INITIAL: usize = 16 * 1024;
/// Room for the longest head the parser accepts plus a full read after it.
const LIMIT: usize = 4 * MAX_HEAD;

#[derive(Debug)]
pub struct ReadBuf {
    data: Vec<u8>,
    start: usize,
    end: usize,
}

impl Default for ReadBuf {
    fn default() -> Self {
        ReadBuf::new()
    }
}

impl ReadBuf {
    pub fn new() -> ReadBuf {
        ReadBuf { data: vec![0; INITIAL], start: 0, end: 0 }
    }

    pub fn filled(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }

    pub fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.start);
        self.start += n;
        if self.start == self.end {
            self.clear();
        }
    }

    pub fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }

    /// Free space to read into: compacts or grows when the tail is full; `None` past the limit.
    pub fn spare(&mut self) -> Option<&mut [u8]> {
        if self.end == self.data.len() {
            if self.start > 0 {
                self.data.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.data.len() < LIMIT {
                self.data.resize((self.data.len() * 2).min(LIMIT), 0);
            } else {
                return None;
            }
        }
        Some(&mut self.data[self.end..])
    }

    /// Marks `n` bytes of the last `spare()` as filled.
    pub fn commit(&mut self, n: usize) {
        debug_assert!(self.end + n <= self.data.len());
        self.end += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(buf: &mut ReadBuf, bytes: &[u8]) {
        let spare = buf.spare().unwrap();
        spare[..bytes.len()].copy_from_slice(bytes);
        buf.commit(bytes.len());
    }

    #[test]
    fn consume_keeps_the_rest_and_resets_when_empty() {
        let mut buf = ReadBuf::new();
        fill(&mut buf, b"abcdef");
        buf.consume(2);
        assert_eq!(buf.filled(), b"cdef");
        buf.consume(4);
        assert!(buf.filled().is_empty());
        assert_eq!(buf.spare().unwrap().len(), INITIAL);
    }

    #[test]
    fn compacts_before_growing_and_stops_at_the_limit() {
        let mut buf = ReadBuf::new();
        fill(&mut buf, &vec![1; INITIAL]);
        buf.consume(INITIAL - 3);
        assert_eq!(buf.spare().unwrap().len(), INITIAL - 3, "compacted");
        assert_eq!(buf.filled(), [1, 1, 1]);
        while buf.spare().is_some() {
            let n = buf.spare().unwrap().len();
            buf.commit(n);
        }
        assert_eq!(buf.filled().len(), LIMIT);
    }
}
