//! What no format accepts: control characters that only binary data holds (NUL and the
//! other C0 controls but tab, line feed, vertical tab, form feed and carriage return;
//! DEL), and the noncharacters U+FFFE / U+FFFF that a wrong decoding leaves.

use super::FormatError;

/// `Ok` when `text` is text; else where the first offending character is.
pub fn check_text(text: &str) -> Result<(), FormatError> {
    let Some(at) = text.bytes().position(is_suspect_byte) else { return Ok(()) };
    // U+FFFE/U+FFFF are EF BF BE/BF: a suspect 0xEF is often a harmless character.
    for (i, c) in text[at..].char_indices() {
        let code = c as u32;
        let binary = (c.is_control() && code < 0x80 && !matches!(c, '\t' | '\n' | '\x0B' | '\x0C' | '\r')) || code == 0x7F;
        if binary || matches!(code, 0xFFFE | 0xFFFF) {
            let (line, column) = line_column(text, at + i);
            return Err(if binary { FormatError::Binary { code, line, column } } else { FormatError::Noncharacter { code, line, column } });
        }
    }
    Ok(())
}

fn is_suspect_byte(b: u8) -> bool {
    (b < 0x20 && !matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r')) || b == 0x7F || b == 0xEF
}

/// The 1-based line and column (in chars) of byte `at` of `text`.
pub(crate) fn line_column(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = memchr::memchr_iter(b'\n', before.as_bytes()).count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}
