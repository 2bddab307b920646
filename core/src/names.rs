//! The one rule for a name or an id a client chooses (a collection's, a secret's, an
//! agent's, a tool's, a project's, a key's, a memory store's, a provider's name; the
//! retrieval plugin's document ids): not blank, at most the surface's number of
//! characters, and none of the characters that make a name show as something it is not
//! or cut it short in a log, a terminal or a console: controls (NUL among them), the bidi
//! embeddings, overrides and isolates (the "Trojan Source" characters), and the byte-order
//! mark. Each surface says the [`Problem`] in its own error shape.

use std::fmt;

/// Why a name was refused; [`fmt::Display`] says it as the end of a sentence that
/// starts with the field's name ("name must not be blank.").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// Empty, or nothing but white space.
    Blank,
    /// More than `max` characters (Unicode scalar values).
    TooLong { max: usize },
    /// `ch`, a character names may not hold, at character `at` (from 0).
    Forbidden { ch: char, at: usize },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Blank => write!(f, "must not be blank."),
            Problem::TooLong { max } => write!(f, "must be at most {max} characters."),
            Problem::Forbidden { ch, at } => {
                write!(
                    f,
                    "must not hold {} (U+{:04X}, at character {at}); names hold no control, bidi-override or byte-order-mark characters.",
                    kind(*ch),
                    *ch as u32
                )
            }
        }
    }
}

/// Checks `name` against the rule, with at most `max` characters.
pub fn check(name: &str, max: usize) -> Result<(), Problem> {
    if name.trim().is_empty() {
        return Err(Problem::Blank);
    }
    let mut count = 0;
    for (at, ch) in name.chars().enumerate() {
        if forbidden(ch) {
            return Err(Problem::Forbidden { ch, at });
        }
        count = at + 1;
    }
    if count > max {
        return Err(Problem::TooLong { max });
    }
    Ok(())
}

/// Whether a name may not hold `ch`: a C0 or C1 control or DEL (`char::is_control`), a
/// bidi embedding or override (U+202A–U+202E), a bidi isolate (U+2066–U+2069), or the
/// byte-order mark (U+FEFF). The bidi marks (LRM, RLM, ALM) stay: Arabic and Hebrew
/// names legitimately hold them, and they reorder nothing around them.
pub fn forbidden(ch: char) -> bool {
    ch.is_control() || matches!(ch, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

fn kind(ch: char) -> &'static str {
    match ch {
        '\0' => "NUL",
        '\u{202A}'..='\u{202E}' => "a bidi override",
        '\u{2066}'..='\u{2069}' => "a bidi isolate",
        '\u{FEFF}' => "a byte-order mark",
        _ => "a control character",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_passes_and_each_refusal_says_why() {
        for ok in ["docs", "Ünïcode names", "كتاب الأم", "\u{200F}שלום", "日本語の資料", "emoji 📚", "a\u{00A0}b"] {
            assert_eq!(check(ok, 120), Ok(()), "{ok:?}");
        }
        assert_eq!(check("", 10), Err(Problem::Blank));
        assert_eq!(check(" \t ", 10), Err(Problem::Blank));
        assert_eq!(check("abcdef", 5), Err(Problem::TooLong { max: 5 }));
        assert_eq!(check("éééé", 4), Ok(()), "characters, not bytes");
        for (bad, ch, at) in [
            ("a\0b", '\0', 1),
            ("\u{202E}gpj.exe", '\u{202E}', 0),
            ("x\u{2067}y", '\u{2067}', 1),
            ("\u{FEFF}name", '\u{FEFF}', 0),
            ("line\nbreak", '\n', 4),
            ("esc\u{1b}[31m", '\u{1b}', 3),
            ("c1\u{85}", '\u{85}', 2),
            ("del\u{7f}", '\u{7f}', 3),
        ] {
            assert_eq!(check(bad, 120), Err(Problem::Forbidden { ch, at }), "{bad:?}");
        }
        let said = check("a\u{202E}", 120).unwrap_err().to_string();
        assert!(said.contains("U+202E") && said.contains("bidi override") && said.contains("character 1"), "{said}");
        assert_eq!(check("\0", 120).unwrap_err().to_string().split(' ').take(4).collect::<Vec<_>>(), ["must", "not", "hold", "NUL"]);
    }
}
