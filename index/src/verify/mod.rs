//! The verifier: is a text a model says it copied from a page really on that page, and
//! where? Extraction keeps only the excerpts it finds, research checks every quotation
//! and evidence span with it, so no returned span is off its page.
//!
//! A text is looked for as written first ([`Match::Exact`]), then in a normalised copy
//! of the page ([`normal`]: case, whitespace, quotes, dashes, soft hyphens, line-break
//! hyphenation, NFKD, Arabic marks and letter variants set aside) mapped back to the
//! page's own characters ([`Match::NormalizedExact`]). Never a fuzzy match: a word
//! changed, dropped or moved, a number changed, is not found. Either way the span must
//! start and end on word boundaries (in scripts written with spaces: `3 days` is not
//! found inside `13 days`) and never inside a character's marks.
//!
//! Offsets are in characters (Unicode scalar values) of the page text, as passages'
//! offsets and `GET …/pages/{n}` count them. Pure code, linear in the page's length
//! (the normalised copy is built once per page, on the first excerpt that needs it).

mod normal;

use std::cell::OnceCell;

pub use normal::Normal;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// Found as written.
    Exact,
    /// Found once case, spacing, quotes, hyphenation, compatibility forms and Arabic
    /// marks and letter variants are set aside.
    NormalizedExact,
}

impl Match {
    pub fn as_str(self) -> &'static str {
        match self {
            Match::Exact => "exact",
            Match::NormalizedExact => "normalized_exact",
        }
    }
}

/// Where a text was found: characters `start..end` of the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Located {
    pub matched: Match,
    pub start: u32,
    pub end: u32,
}

/// One page, ready to have texts located in it.
pub struct Page<'a> {
    text: &'a str,
    /// The byte offset of each character, and the text's length last.
    bytes: Vec<u32>,
    normal: OnceCell<Normal>,
}

impl<'a> Page<'a> {
    pub fn new(text: &'a str) -> Page<'a> {
        let mut bytes: Vec<u32> = text.char_indices().map(|(b, _)| b as u32).collect();
        bytes.push(text.len() as u32);
        Page { text, bytes, normal: OnceCell::new() }
    }

    pub fn text(&self) -> &'a str {
        self.text
    }

    /// The page's text at a located span.
    pub fn slice(&self, at: &Located) -> &'a str {
        &self.text[self.bytes[at.start as usize] as usize..self.bytes[at.end as usize] as usize]
    }

    /// Where `excerpt` is on the page (its first place), or `None` when it is not.
    pub fn locate(&self, excerpt: &str) -> Option<Located> {
        let excerpt = excerpt.trim();
        if !excerpt.chars().any(char::is_alphanumeric) {
            return None;
        }
        self.exact(excerpt).or_else(|| self.normalized(excerpt))
    }

    fn char_at(&self, byte: usize) -> u32 {
        self.bytes.partition_point(|&b| (b as usize) < byte) as u32
    }

    fn exact(&self, excerpt: &str) -> Option<Located> {
        let (first, last) = ends(excerpt)?;
        for (b, _) in self.text.match_indices(excerpt) {
            let e = b + excerpt.len();
            let before = self.text[..b].chars().rev().find(|&c| !normal::attached(c));
            let after = self.text[e..].chars().next();
            if after.is_some_and(normal::attached) || joins(before, first) || joins(after, last) {
                continue;
            }
            return Some(Located { matched: Match::Exact, start: self.char_at(b), end: self.char_at(e) });
        }
        None
    }

    fn normalized(&self, excerpt: &str) -> Option<Located> {
        let needle = Normal::new(excerpt).text;
        let (first, last) = ends(&needle)?;
        let hay = self.normal.get_or_init(|| Normal::new(self.text));
        for (b, _) in hay.text.match_indices(needle.as_str()) {
            let e = b + needle.len();
            if !hay.starts_char(b) || !hay.ends_char(e) {
                continue;
            }
            let before = hay.text[..b].chars().rev().find(|&c| !normal::attached(c));
            let after = hay.text[e..].chars().next();
            if after.is_some_and(normal::attached) || joins(before, first) || joins(after, last) {
                continue;
            }
            let start = hay.origin(b);
            let mut end = hay.origin(e - 1) + 1;
            // The marks on the last letter belong to the span.
            let n = self.bytes.len() as u32 - 1;
            while end < n
                && self.text[self.bytes[end as usize] as usize..].chars().next().is_some_and(|c| normal::attached(c) || normal::invisible(c))
            {
                end += 1;
            }
            return Some(Located { matched: Match::NormalizedExact, start, end });
        }
        None
    }
}

/// Where `excerpt` is in `page` (see [`Page::locate`]; build a [`Page`] to locate
/// several texts in one page).
pub fn locate(page: &str, excerpt: &str) -> Option<Located> {
    Page::new(page).locate(excerpt)
}

fn ends(s: &str) -> Option<(char, char)> {
    Some((s.chars().next()?, s.chars().next_back()?))
}

/// Whether `neighbour` and `edge` would be one word, so that a span ending between
/// them cuts a word: both letters or digits of a script written with spaces.
fn joins(neighbour: Option<char>, edge: char) -> bool {
    neighbour.is_some_and(|n| spaced_word(n) && spaced_word(edge))
}

fn spaced_word(c: char) -> bool {
    c.is_alphanumeric() && !unspaced(c)
}

/// Scripts written without spaces between words (CJK, kana, Thai, Lao, Khmer,
/// Myanmar), where any character boundary may be a word boundary.
fn unspaced(c: char) -> bool {
    matches!(c,
        '\u{0E00}'..='\u{0EFF}'
        | '\u{1000}'..='\u{109F}'
        | '\u{1780}'..='\u{17FF}'
        | '\u{3040}'..='\u{30FF}'
        | '\u{3100}'..='\u{312F}'
        | '\u{3400}'..='\u{4DBF}'
        | '\u{4E00}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{FF66}'..='\u{FF9F}'
        | '\u{20000}'..='\u{3FFFF}')
}

#[cfg(test)]
mod tests;
