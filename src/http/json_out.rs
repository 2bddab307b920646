//! Writing JSON by hand for the hottest answer, a search's: serde_json escapes strings
//! one byte at a time through a table, which on a ~20 kB answer of passage text was
//! most of its serialization. [`str`] skips eight bytes at a time that need no escape
//! and copies them in runs, escaping exactly as serde_json does, so an answer written
//! with these functions is byte for byte what serde_json writes for the same value
//! (`api::agentlex::search` holds its writer to that in a test). Numbers and the small,
//! rarely set parts of an answer still go through serde_json ([`value`]).

use serde::Serialize;

/// `s` as a JSON string, escaped as serde_json escapes it: `"` and `\` with a
/// backslash; backspace, tab, line feed, form feed and carriage return by their short
/// escapes; any other byte below 0x20 as `\u00xx` in lower-case hex; everything else
/// (DEL and all non-ASCII included) as it is.
pub fn str(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    let mut run = 0;
    let (words, _) = b.as_chunks::<8>();
    for (k, w) in words.iter().enumerate() {
        if needs_escape(u64::from_le_bytes(*w)) {
            for i in k * 8..k * 8 + 8 {
                run = escape_at(out, b, run, i);
            }
        }
    }
    for i in words.len() * 8..b.len() {
        run = escape_at(out, b, run, i);
    }
    out.extend_from_slice(&b[run..]);
    out.push(b'"');
}

/// Whether a word of eight bytes holds a byte below 0x20, a `"` or a `\`: the usual
/// bit tricks, exact as a yes or no (a byte at or above 0x80 never counts).
#[inline]
fn needs_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let below_space = w.wrapping_sub(0x20 * ONES) & !w & HIGH;
    (below_space | zero(w ^ (b'"' as u64 * ONES)) | zero(w ^ (b'\\' as u64 * ONES))) != 0
}

/// Escapes byte `i` of `b` if it needs it, after copying the run of plain bytes from
/// `run`; returns where the next run starts.
#[inline]
fn escape_at(out: &mut Vec<u8>, b: &[u8], run: usize, i: usize) -> usize {
    let short = match b[i] {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        b'\t' => b't',
        b'\n' => b'n',
        0x0C => b'f',
        b'\r' => b'r',
        0x00..=0x1F => 0,
        _ => return run,
    };
    out.extend_from_slice(&b[run..i]);
    if short != 0 {
        out.extend_from_slice(&[b'\\', short]);
    } else {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(b[i] >> 4) as usize], HEX[(b[i] & 0xF) as usize]]);
    }
    i + 1
}

/// An optional string: `null` or [`str`].
#[inline]
pub fn opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

/// Any value as serde_json writes it: numbers (ryu for floats, as serde_json), and the
/// small parts of an answer that are not worth writing by hand.
pub fn value<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    serde_json::to_writer(out, v).expect("serializing into a Vec cannot fail");
}

/// A JSON array of strings.
pub fn strs<S: AsRef<str>>(out: &mut Vec<u8>, items: &[S]) {
    array(out, items, |out, s| str(out, s.as_ref()));
}

/// A JSON array of `items`, each written by `item`.
pub fn array<T>(out: &mut Vec<u8>, items: &[T], mut item: impl FnMut(&mut Vec<u8>, &T)) {
    out.push(b'[');
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        item(out, x);
    }
    out.push(b']');
}

/// A JSON object being written: [`Object::field`] gives the buffer to write each
/// field's value into, after its separator and name; dropping it closes the object.
pub struct Object<'o>(&'o mut Vec<u8>, bool);

impl<'o> Object<'o> {
    #[inline]
    pub fn new(out: &'o mut Vec<u8>) -> Object<'o> {
        out.push(b'{');
        Object(out, true)
    }

    /// Starts field `name` (which must need no escaping: our answers' field names).
    #[inline]
    pub fn field(&mut self, name: &str) -> &mut Vec<u8> {
        debug_assert!(!name.bytes().any(|c| c < 0x20 || c == b'"' || c == b'\\'));
        if !std::mem::replace(&mut self.1, false) {
            self.0.push(b',');
        }
        self.0.push(b'"');
        self.0.extend_from_slice(name.as_bytes());
        self.0.extend_from_slice(b"\":");
        self.0
    }
}

impl Drop for Object<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(s: &str) -> String {
        let mut out = Vec::new();
        str(&mut out, s);
        String::from_utf8(out).unwrap()
    }

    /// Every byte that needs an escape, at every offset within and across the eight-byte
    /// words, among ASCII and multi-byte characters: serde_json's output exactly.
    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let specials: Vec<char> = (0u8..0x20).map(char::from).chain(['"', '\\', '\u{7F}', 'é', '–', '𝔸', '/']).collect();
        for c in &specials {
            for at in 0..20 {
                for len in [at, at + 1, at + 9, 24] {
                    let mut s: String = "abcdefghij".repeat(3).chars().take(len.max(at)).collect();
                    s.insert(at.min(s.len()), *c);
                    assert_eq!(ours(&s), serde_json::to_string(&s).unwrap(), "{s:?}");
                }
            }
        }
        let mut seed = 5u64;
        for _ in 0..2000 {
            let s: String = (0..(seed % 40))
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    specials[(seed >> 33) as usize % specials.len()]
                })
                .collect();
            assert_eq!(ours(&s), serde_json::to_string(&s).unwrap(), "{s:?}");
        }
        assert_eq!(ours(""), "\"\"");
    }
}
