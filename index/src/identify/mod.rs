//! Identifiers in text: the spec's 13 kinds (PHI and PII), found by patterns and then
//! validated, so that what pattern matchers are known for (GUID fragments taken for
//! phone numbers, every 9-digit run an SSN, every capitalised word a person) does not
//! happen here.
//!
//! [`scan`] finds [`Span`]s; [`mask`] replaces them with the spec's placeholders
//! (`[SSN-1]`, `[NAME-2]`, …, the same value of a kind keeping one placeholder within a
//! text). One file per group of kinds: `numbers.rs` (ssn, credit_card, npi,
//! passport, mrn), `phones.rs` (libphonenumber's plans), `dates.rs` (dob, date), `net.rs` (email, ip, url), `names.rs`
//! (person, from the Census name lists in `data/`), `address.rs`; `exclude.rs` finds
//! what only looks like an identifier (GUIDs, versions, prices, citations, ISBNs) and
//! `context.rs` holds the boundary and cue checks they all use. Patterns are compiled
//! once per process.

mod address;
mod context;
mod dates;
mod exclude;
mod mask;
mod names;
mod net;
mod numbers;
mod phones;

use std::collections::BTreeMap;

use crate::text::unicode::is_word_char;

pub use mask::{mask, mask_spans, Counts, Masked};

/// The kinds of identifier, closed: the spec's `IdentifierKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IdentifierKind {
    Ssn,
    Phone,
    Email,
    Mrn,
    Dob,
    CreditCard,
    Ip,
    Url,
    Passport,
    Npi,
    Address,
    Person,
    Date,
}

impl IdentifierKind {
    /// Every kind, in the spec's order.
    pub const ALL: [IdentifierKind; 13] = [
        Self::Ssn,
        Self::Phone,
        Self::Email,
        Self::Mrn,
        Self::Dob,
        Self::CreditCard,
        Self::Ip,
        Self::Url,
        Self::Passport,
        Self::Npi,
        Self::Address,
        Self::Person,
        Self::Date,
    ];

    /// The spec's name (`credit_card`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Ssn => "ssn",
            Self::Phone => "phone",
            Self::Email => "email",
            Self::Mrn => "mrn",
            Self::Dob => "dob",
            Self::CreditCard => "credit_card",
            Self::Ip => "ip",
            Self::Url => "url",
            Self::Passport => "passport",
            Self::Npi => "npi",
            Self::Address => "address",
            Self::Person => "person",
            Self::Date => "date",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// What its placeholders say: `[CARD-1]`.
    pub fn placeholder(self) -> &'static str {
        match self {
            Self::Ssn => "SSN",
            Self::Phone => "PHONE",
            Self::Email => "EMAIL",
            Self::Mrn => "MRN",
            Self::Dob => "DOB",
            Self::CreditCard => "CARD",
            Self::Ip => "IP",
            Self::Url => "URL",
            Self::Passport => "PASSPORT",
            Self::Npi => "NPI",
            Self::Address => "ADDRESS",
            Self::Person => "NAME",
            Self::Date => "DATE",
        }
    }

    fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// A set of kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Kinds(u16);

impl Kinds {
    pub const NONE: Kinds = Kinds(0);
    pub const ALL: Kinds = Kinds((1 << 13) - 1);

    /// What is masked when no kinds are named: every kind but date and url.
    pub fn default_mask() -> Kinds {
        Kinds::ALL.without(IdentifierKind::Date).without(IdentifierKind::Url)
    }

    pub fn with(self, k: IdentifierKind) -> Kinds {
        Kinds(self.0 | k.bit())
    }

    pub fn without(self, k: IdentifierKind) -> Kinds {
        Kinds(self.0 & !k.bit())
    }

    pub fn contains(self, k: IdentifierKind) -> bool {
        self.0 & k.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn iter(self) -> impl Iterator<Item = IdentifierKind> {
        IdentifierKind::ALL.into_iter().filter(move |k| self.contains(*k))
    }
}

impl FromIterator<IdentifierKind> for Kinds {
    fn from_iter<I: IntoIterator<Item = IdentifierKind>>(it: I) -> Kinds {
        it.into_iter().fold(Kinds::NONE, Kinds::with)
    }
}

/// One identifier found: its kind and its byte range in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub kind: IdentifierKind,
    pub start: usize,
    pub end: usize,
    /// False for a value of its kind's shape that is known to be no one's (the SSNs
    /// the SSA lists as advertised and example numbers): masked like any other, so that
    /// no reader has to know the list, but left out of the counts.
    pub counted: bool,
}

impl Span {
    fn len(&self) -> usize {
        self.end - self.start
    }
}

/// The identifiers of `kinds` in `text`, in order, none overlapping another except
/// inside a URL (an email or a card number in a URL's query is its own identifier, so
/// that masking the one without the other still hides it).
///
/// Every kind is looked for whatever `kinds` says and the overlaps are settled among all
/// of them before the others are dropped, so that a text gives the same spans of a kind
/// whichever other kinds are asked for (a date of birth is `dob`, never also `date`).
pub fn scan(text: &str, kinds: Kinds) -> Vec<Span> {
    if kinds.is_empty() || text.is_empty() {
        return Vec::new();
    }
    let found = candidates(text);
    let (urls, others): (Vec<Span>, Vec<Span>) = found.into_iter().partition(|s| s.kind == IdentifierKind::Url);
    let mut kept = settle(others);
    kept.extend(settle(urls));
    kept.retain(|s| kinds.contains(s.kind));
    kept.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    kept
}

/// Every detector's validated candidates, overlapping.
fn candidates(text: &str) -> Vec<Span> {
    let excluded = exclude::zones(text);
    let cues = context::present(text);
    let mut out = Vec::new();
    numbers::find(text, &excluded, cues, &mut out);
    dates::find(text, &excluded, &mut out);
    net::find(text, &excluded, &mut out);
    address::find(text, &mut out);
    names::find(text, cues, &mut out);
    for s in &mut out {
        whole_words(text, s);
    }
    out
}

/// `span` widened to the whole words it starts and ends in, so that a mask never
/// leaves part of a value beside its placeholder: a pattern that stops at a letter it
/// does not know ("Pavlovi" + "ć", "Mc" + "Cray") still masks the whole name. A word
/// is a run of the analyser's word characters (letters, digits and combining marks of
/// any script: `text::unicode::is_word_char`).
fn whole_words(text: &str, span: &mut Span) {
    span.start = text[..span.start].char_indices().rev().take_while(|&(_, c)| is_word_char(c)).last().map_or(span.start, |(i, _)| i);
    span.end += text[span.end..].find(|c: char| !is_word_char(c)).unwrap_or(text.len() - span.end);
}

/// The longest spans first (a kind's rank breaks ties), each kept unless it overlaps one
/// already kept.
fn settle(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_by_key(|s| (std::cmp::Reverse(s.len()), rank(s.kind), s.start));
    let mut kept: BTreeMap<usize, Span> = BTreeMap::new();
    for s in spans {
        let before = kept.range(..s.end).next_back().map(|(_, k)| *k);
        if before.is_some_and(|k| k.end > s.start) {
            continue;
        }
        kept.insert(s.start, s);
    }
    kept.into_values().collect()
}

/// Which kind wins a tie of equal length: the more specific first.
fn rank(k: IdentifierKind) -> u8 {
    use IdentifierKind as K;
    match k {
        K::Dob => 0,
        K::Mrn => 1,
        K::Passport => 2,
        K::Npi => 3,
        K::Ssn => 4,
        K::CreditCard => 5,
        K::Email => 6,
        K::Ip => 7,
        K::Phone => 8,
        K::Date => 9,
        K::Address => 10,
        K::Url => 11,
        K::Person => 12,
    }
}

#[cfg(test)]
mod tests;
