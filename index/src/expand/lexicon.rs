//! A lexicon of equivalent forms (a short form and its long forms, or two spellings),
//! compiled once into one Aho-Corasick automaton (leftmost-longest, ASCII
//! case-insensitive), and the rewrites of a query it finds: the query with one matched
//! form replaced by an equivalent one.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

/// One entry: a short form and what it stands for.
#[derive(Debug, Clone)]
pub struct Entry {
    pub short: String,
    pub longs: Vec<String>,
    /// The short form matches only as written (it is also an ordinary word: "OR", "MI").
    pub exact: bool,
    /// The short form has other meanings ("CA", "Rx"): a one-word long form does not
    /// add it.
    pub ambiguous: bool,
}

/// Which way a lexicon rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// A short form adds its long forms and a long form adds its short form.
    Both,
    /// Only short forms are spelled out.
    ShortToLong,
}

/// A pattern's place: its entry, and which of its forms it is (`None`: the short form).
#[derive(Debug, Clone, Copy)]
struct Form {
    entry: u32,
    long: Option<u32>,
}

/// A rewrite of a query: the byte span matched and the text to put there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    pub start: usize,
    pub end: usize,
    pub with: String,
}

impl Rewrite {
    /// `query` with the span replaced.
    pub fn apply(&self, query: &str) -> String {
        format!("{}{}{}", &query[..self.start], self.with, &query[self.end..])
    }

    pub fn overlaps(&self, start: usize, end: usize) -> bool {
        self.start < end && start < self.end
    }
}

pub struct Lexicon {
    entries: Vec<Entry>,
    ac: AhoCorasick,
    /// Per automaton pattern (one per distinct lower-cased form), every form spelled so.
    forms: Vec<Vec<Form>>,
    direction: Direction,
    /// Arabic: a match may follow a one-letter proclitic (و ف ب ل ك) at a word's start.
    proclitics: bool,
}

impl Lexicon {
    pub fn new(entries: Vec<Entry>, direction: Direction, proclitics: bool) -> Lexicon {
        let mut patterns: Vec<String> = Vec::new();
        let mut forms: Vec<Vec<Form>> = Vec::new();
        let mut add = |text: &str, form: Form| {
            let key = text.to_lowercase();
            match patterns.iter().position(|p| *p == key) {
                Some(i) => forms[i].push(form),
                None => {
                    patterns.push(key);
                    forms.push(vec![form]);
                }
            }
        };
        for (i, e) in entries.iter().enumerate() {
            add(&e.short, Form { entry: i as u32, long: None });
            if direction == Direction::Both {
                for (j, l) in e.longs.iter().enumerate() {
                    add(l, Form { entry: i as u32, long: Some(j as u32) });
                }
            }
        }
        let ac = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .ascii_case_insensitive(true)
            .build(&patterns)
            .expect("a lexicon's patterns compile");
        Lexicon { entries, ac, forms, direction, proclitics }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every rewrite of `query`: per matched form, one per equivalent form, in query
    /// order. A match must stand as whole words.
    pub fn rewrites(&self, query: &str) -> Vec<Rewrite> {
        let mut out = Vec::new();
        let lower = query.to_lowercase();
        // The query already spells out this form too: nothing to add.
        let spelled = |form: &str| lower.contains(&form.to_lowercase());
        for m in self.ac.find_iter(query) {
            let (start, end) = (m.start(), m.end());
            if !self.bounded(query, start, end) {
                continue;
            }
            let written = &query[start..end];
            // "reactive oxygen species (ROS)": the query defines its own short form.
            let defined = query[..start].ends_with('(') && query[end..].starts_with(')');
            for f in &self.forms[m.pattern().as_usize()] {
                let e = &self.entries[f.entry as usize];
                match f.long {
                    None if defined || (e.exact && written != e.short) => {}
                    None => out.extend(e.longs.iter().filter(|l| !spelled(l)).map(|l| Rewrite { start, end, with: l.clone() })),
                    // A one-word long form does not add a short form that is also a word
                    // or another abbreviation ("cancer" → "CA", "treatment" → "Rx").
                    Some(j) if self.direction == Direction::Both && self.shortens(e, j as usize) && !spelled(&e.short) => {
                        out.push(Rewrite { start, end, with: e.short.clone() })
                    }
                    Some(_) => {}
                }
            }
        }
        out.dedup();
        out
    }

    /// Whether a long form adds its short form: not a one-word one whose short form has
    /// other meanings.
    fn shortens(&self, e: &Entry, long: usize) -> bool {
        !e.ambiguous || e.longs[long].contains(' ')
    }

    /// Whether `query[start..end]` is whole words: no letter or digit joined on either
    /// side (a form's own edge may be punctuation: "s/p", "Ass'n", "Co.").
    fn bounded(&self, query: &str, start: usize, end: usize) -> bool {
        let word = |c: char| c.is_alphanumeric() || crate::text::is_arabic_mark(c);
        // Outside the form a hyphen joins words: "G-CSF" holds no "CSF".
        let joined = |c: char| word(c) || c == '-';
        let after = query[end..].chars().next();
        let first = query[start..].chars().next();
        let last = query[..end].chars().next_back();
        // A form ending in punctuation ("Co.") may touch anything; one ending in a letter
        // may not run on into another.
        if last.is_some_and(word) && after.is_some_and(joined) {
            return false;
        }
        let mut before = query[..start].chars().rev();
        match before.next() {
            Some(b) if first.is_some_and(word) && joined(b) => self.proclitics && "وفبلك".contains(b) && !before.next().is_some_and(word),
            _ => true,
        }
    }
}

/// Reads a lexicon file: `short<TAB>long[;long…][<TAB>flags]`, `#` comments. `keep`
/// chooses entries by their flags (`u`: unambiguous outside its domain; `c`: the short
/// form matches only as written).
pub fn parse_tsv(text: &str, keep: impl Fn(&str) -> bool) -> Vec<Entry> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let mut cols = l.split('\t');
            let (short, longs) = (cols.next()?.trim(), cols.next()?);
            let flags = cols.next().unwrap_or("");
            keep(flags).then(|| Entry {
                short: short.to_owned(),
                longs: longs.split(';').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect(),
                exact: flags.contains('c'),
                ambiguous: flags.contains('c'),
            })
        })
        .collect()
}
