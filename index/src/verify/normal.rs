//! The normalised copy of a text the verifier searches in, with a map from each of its
//! bytes back to the original character it came from, so a match in the copy is a span
//! of the original.
//!
//! What the copy sets aside, the same for a page and for an excerpt: case; runs of
//! whitespace (newlines too) and whitespace at either end; Unicode compatibility forms
//! (NFKD: ligatures, full-width forms, NBSP, presentation forms), with combining marks
//! in canonical order; curly and straight quotes (‘’‚‛′` → ', “”„‟″« » → "); dashes and
//! hyphens (‐‑‒–—―− → -); soft hyphens, zero-width characters and variation selectors;
//! a hyphen joining two letters, alone or before a line break (`treat-\nment` and
//! `well-known` read `treatment`, `wellknown`); Arabic vowel marks and tatweel, and the
//! letter variants the analyser unifies (alef forms → ا, ى → ي, ة → ه). Nothing else:
//! a changed, dropped or moved word is still a different text.

use unicode_normalization::char::{canonical_combining_class, decompose_compatible};

use crate::text::{fold_arabic, is_arabic_mark};

pub struct Normal {
    pub text: String,
    /// For each byte of `text`, the index (in characters) of the original character it
    /// came from; non-decreasing.
    origin: Vec<u32>,
}

impl Normal {
    pub fn new(s: &str) -> Normal {
        let folded = fold(s);
        let mut n = Normal { text: String::with_capacity(s.len()), origin: Vec::with_capacity(s.len()) };
        let mut i = 0;
        while i < folded.len() {
            let (c, o) = folded[i];
            if is_space(c) {
                let j = skip_space(&folded, i);
                if !n.text.is_empty() && j < folded.len() {
                    n.push(' ', o);
                }
                i = j;
                continue;
            }
            if c == '-' && n.text.chars().next_back().is_some_and(char::is_alphabetic) {
                let j = skip_space(&folded, i + 1);
                let gap = &folded[i + 1..j];
                if folded.get(j).is_some_and(|&(d, _)| d.is_alphabetic()) && (gap.is_empty() || gap.iter().any(|&(d, _)| d == '\n')) {
                    i = j;
                    continue;
                }
            }
            n.push(c, o);
            i += 1;
        }
        n
    }

    fn push(&mut self, c: char, origin: u32) {
        self.text.push(c);
        self.origin.resize(self.text.len(), origin);
    }

    /// The original character the byte at `at` came from.
    pub fn origin(&self, at: usize) -> u32 {
        self.origin[at]
    }

    /// Whether a match may begin at byte `at` (not inside one original character's
    /// expansion, such as `ﬁ` → `fi`).
    pub fn starts_char(&self, at: usize) -> bool {
        at == 0 || self.origin[at - 1] != self.origin[at]
    }

    /// Whether a match may end at byte `at`.
    pub fn ends_char(&self, at: usize) -> bool {
        at == self.origin.len() || self.origin[at] != self.origin[at - 1]
    }
}

fn is_space(c: char) -> bool {
    c == ' ' || c == '\n'
}

fn skip_space(folded: &[(char, u32)], mut i: usize) -> usize {
    while folded.get(i).is_some_and(|&(c, _)| is_space(c)) {
        i += 1;
    }
    i
}

/// Every character of `s` decomposed, lower-cased and folded, with its original index;
/// whitespace is kept as ' ' or '\n' for [`Normal::new`] to collapse.
fn fold(s: &str) -> Vec<(char, u32)> {
    let mut out = Vec::with_capacity(s.len());
    for (i, c) in s.chars().enumerate() {
        if invisible(c) {
            continue;
        }
        let i = i as u32;
        decompose_compatible(c, |d| {
            for l in d.to_lowercase() {
                if let Some(f) = fold_one(l) {
                    out.push((f, i));
                }
            }
        });
    }
    order_marks(&mut out);
    out
}

/// Characters that change nothing a reader sees: soft hyphen, zero-width space and
/// joiners, word joiner, BOM, variation selectors.
pub fn invisible(c: char) -> bool {
    matches!(c, '\u{00AD}' | '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\u{FE00}'..='\u{FE0F}')
}

fn fold_one(c: char) -> Option<char> {
    Some(match c {
        '\n' | '\r' | '\u{2028}' | '\u{2029}' | '\u{000B}' | '\u{000C}' | '\u{0085}' => '\n',
        c if c.is_whitespace() => ' ',
        '‘' | '’' | '‚' | '‛' | '′' | '`' | '´' | 'ʼ' => '\'',
        '“' | '”' | '„' | '‟' | '″' | '«' | '»' => '"',
        '‐' | '‑' | '‒' | '–' | '—' | '―' | '−' => '-',
        c => fold_arabic(c)?,
    })
}

/// Canonical ordering: each run of combining marks sorted (stably) by combining class,
/// so two spellings that differ only in the order of their marks read the same.
fn order_marks(v: &mut [(char, u32)]) {
    let mut i = 0;
    while i < v.len() {
        if canonical_combining_class(v[i].0) == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < v.len() && canonical_combining_class(v[i].0) != 0 {
            i += 1;
        }
        v[start..i].sort_by_key(|&(c, _)| canonical_combining_class(c));
    }
}

/// A character that belongs to the one before it (a combining mark, an Arabic mark or
/// tatweel, a zero-width joiner or variation selector, an emoji modifier): a span never
/// ends just before one.
pub fn attached(c: char) -> bool {
    canonical_combining_class(c) != 0
        || is_arabic_mark(c)
        || matches!(c, '\u{200C}' | '\u{200D}' | '\u{FE00}'..='\u{FE0F}' | '\u{1F3FB}'..='\u{1F3FF}' | '\u{E0020}'..='\u{E007F}')
        || unicode_mark(c)
}

/// Non-spacing and enclosing marks with class 0 (many Indic vowel signs).
fn unicode_mark(c: char) -> bool {
    matches!(c, '\u{0300}'..='\u{036F}' | '\u{0900}'..='\u{0903}' | '\u{093A}'..='\u{094F}' | '\u{20D0}'..='\u{20FF}')
}
