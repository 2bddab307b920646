//! Masking: each span replaced by its kind's placeholder, numbered by first appearance
//! (`[PHONE-1]`, `[PHONE-2]`), the same value of a kind keeping its number within the
//! text (`(415) 555-0132` and `415.555.0132` are one phone).

use std::collections::HashMap;

use super::{scan, IdentifierKind, Kinds, Span};

/// A text with its identifiers masked, and how many of each kind it had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Masked {
    pub text: String,
    pub counts: Counts,
}

/// Identifiers found, per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts([u32; 13]);

impl Counts {
    /// The spans' counts, those not [`Span::counted`] left out.
    pub fn of(spans: &[Span]) -> Counts {
        let mut c = Counts::default();
        for s in spans.iter().filter(|s| s.counted) {
            c.0[s.kind as usize] += 1;
        }
        c
    }

    /// These counts and `other`'s, kind by kind.
    pub fn add(&mut self, other: &Counts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }

    pub fn get(&self, k: IdentifierKind) -> u32 {
        self.0[k as usize]
    }

    pub fn total(&self) -> u32 {
        self.0.iter().sum()
    }

    /// The kinds found, the most frequent first (the spec's order breaks ties).
    pub fn by_count(&self) -> Vec<(IdentifierKind, u32)> {
        let mut v: Vec<_> = IdentifierKind::ALL.into_iter().map(|k| (k, self.get(k))).filter(|x| x.1 > 0).collect();
        v.sort_by_key(|&(k, n)| (std::cmp::Reverse(n), k));
        v
    }
}

/// `text` with the identifiers of `kinds` masked, and their counts.
pub fn mask(text: &str, kinds: Kinds) -> Masked {
    let spans = scan(text, kinds);
    Masked { text: mask_spans(text, &spans, kinds, usize::MAX), counts: Counts::of(&spans) }
}

/// `text` with the `spans` of `kinds` masked (spans from [`scan`]: in order, a span
/// inside a masked one taken with it), cut after `max_chars` characters of output:
/// the cut falls after masking, so it can split a placeholder but never leaves part
/// of an identifier.
pub fn mask_spans(text: &str, spans: &[Span], kinds: Kinds, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars.saturating_mul(4)));
    let mut numbers: HashMap<(IdentifierKind, String), usize> = HashMap::new();
    let mut next = [0usize; 13];
    let mut at = 0;
    let mut chars = 0;
    for s in spans.iter().filter(|s| kinds.contains(s.kind)) {
        if s.start < at {
            continue;
        }
        if push(&mut out, &mut chars, &text[at..s.start], max_chars) {
            return out;
        }
        let key = (s.kind, normal(s.kind, &text[s.start..s.end]));
        let n = *numbers.entry(key).or_insert_with(|| {
            next[s.kind as usize] += 1;
            next[s.kind as usize]
        });
        if push(&mut out, &mut chars, &format!("[{}-{n}]", s.kind.placeholder()), max_chars) {
            return out;
        }
        at = s.end;
    }
    push(&mut out, &mut chars, &text[at..], max_chars);
    out
}

/// Appends `piece` up to `max` characters of output in all; true once the output is full.
fn push(out: &mut String, chars: &mut usize, piece: &str, max: usize) -> bool {
    if max == usize::MAX {
        out.push_str(piece);
        return false;
    }
    for c in piece.chars() {
        if *chars == max {
            return true;
        }
        out.push(c);
        *chars += 1;
    }
    *chars == max
}

/// The form two spellings of one value share: digits for the numbers (a leading
/// country code 1 dropped from a 11-digit phone), lower case and single spaces for the rest.
fn normal(kind: IdentifierKind, value: &str) -> String {
    use IdentifierKind as K;
    match kind {
        K::Ssn | K::Phone | K::CreditCard | K::Npi => {
            let d: String = value.chars().filter(char::is_ascii_digit).collect();
            if kind == K::Phone && d.len() == 11 && d.starts_with('1') {
                d[1..].to_owned()
            } else {
                d
            }
        }
        _ => value.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase(),
    }
}
