//! Which query terms a passage holds, without stemming the whole passage — passages are
//! analysed on every search. Porter2 rewrites only a word's tail, so a word can stem to a
//! term only if it begins with the term's first letters: for ASCII terms in Latin text,
//! [`held_ascii`] finds where a term's [`prefixes`] begin words and analyses only those
//! words; for any other text, [`held_any`] analyses the words whose first two letters
//! could begin a term ("dying", "lying", "tying" become "die", "lie", "tie", so y and i
//! compare equal). Same answer as filtering [`super::terms`], at a fraction of the cost.

use std::cell::RefCell;

use rustc_hash::FxHashMap;
use tantivy::tokenizer::{TokenStream, Tokenizer};

use super::arabic::is_arabic_mark;
use super::unicode::normalizes_to_ascii;
use super::unspaced::is_unspaced;
use super::{fold_arabic, term_of, terms, QuarryTokenizer};

/// The first two characters of a word, lower-cased and Arabic-folded, y read as i, kept
/// without an allocation (the words of every passage are read): a word could stem to a
/// term only if one's head begins the other's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Head {
    chars: [char; 2],
    len: u8,
}

impl Head {
    pub(super) fn of(s: &str) -> Head {
        let mut h = Head { chars: ['\0'; 2], len: 0 };
        for c in s.chars().flat_map(char::to_lowercase).filter_map(fold_arabic).map(|c| if c == 'y' { 'i' } else { c }).take(2) {
            h.chars[h.len as usize] = c;
            h.len += 1;
        }
        h
    }

    /// Whether one head begins the other (`a.starts_with(b) || b.starts_with(a)` of
    /// their [`head`] strings).
    #[inline]
    pub(super) fn agrees(self, other: Head) -> bool {
        let n = self.len.min(other.len) as usize;
        self.chars[..n] == other.chars[..n]
    }
}

/// The terms of `wanted` (already analysed) that `text` holds, in `wanted`'s order.
pub fn held_terms(text: &str, wanted: &[String]) -> Vec<String> {
    Held::new(wanted).in_text(text)
}

/// A query's analysed terms, ready to be looked for in passage after passage: the
/// substring finders of [`held_ascii`] are built once per query, not once per passage.
pub struct Held {
    wanted: Vec<String>,
    /// Per wanted term, a finder for each of its [`prefixes`]; `None` when a term is
    /// not ASCII (then every text goes through [`held_any`]).
    finders: Option<Vec<Vec<memchr::memmem::Finder<'static>>>>,
}

impl Held {
    pub fn new(wanted: &[String]) -> Held {
        let finders = wanted
            .iter()
            .all(|w| w.is_ascii())
            .then(|| wanted.iter().map(|w| prefixes(w).iter().map(|p| memchr::memmem::Finder::new(p.as_bytes()).into_owned()).collect()).collect());
        Held { wanted: wanted.to_vec(), finders }
    }

    /// The wanted terms `text` holds, in their order.
    pub fn in_text(&self, text: &str) -> Vec<String> {
        let mut held = vec![false; self.wanted.len()];
        self.find(text, |_| true, |i| held[i] = true);
        self.wanted.iter().zip(held).filter(|(_, h)| *h).map(|(w, _)| w.clone()).collect()
    }

    /// Of the wanted terms whose bits `which` sets (bit i for the i-th term), those
    /// `text` holds, as bits.
    pub fn mask(&self, text: &str, which: u64) -> u64 {
        let mut held = 0u64;
        if which != 0 {
            self.find(text, |i| i < 64 && which & (1 << i) != 0, |i| held |= 1 << i);
        }
        held
    }

    /// Of the wanted terms whose bits `which` sets, those `text` holds at least once
    /// and those it holds at least twice (as its analysed tokens, the count BM25's term
    /// frequency makes), as bits.
    pub fn counts(&self, text: &str, which: u64) -> (u64, u64) {
        let (mut once, mut twice) = (0u64, 0u64);
        if which == 0 || self.wanted.is_empty() {
            return (once, twice);
        }
        let select = |i: usize| i < 64 && which & (1 << i) != 0;
        let mut count = |i: usize, n: usize| {
            once |= 1 << i;
            if n >= 2 {
                twice |= 1 << i;
            }
        };
        match &self.finders {
            Some(finders) if self.ascii_path(text) => counted_ascii(text, &self.wanted, finders, select, &mut count),
            _ => held_any(text, &self.wanted, select, 2, &mut count),
        }
        (once, twice)
    }

    /// The wanted terms whose bits `mask` sets, in their order.
    pub fn names(&self, mask: u64) -> Vec<String> {
        self.wanted.iter().enumerate().filter(|(i, _)| *i < 64 && mask & (1 << i) != 0).map(|(_, w)| w.clone()).collect()
    }

    /// Calls `held` with the index of each wanted term that `select` picks and `text` holds.
    fn find(&self, text: &str, select: impl Fn(usize) -> bool, mut held: impl FnMut(usize)) {
        if self.wanted.is_empty() {
            return;
        }
        match &self.finders {
            Some(finders) if self.ascii_path(text) => held_ascii(text, &self.wanted, finders, select, held),
            _ => held_any(text, &self.wanted, select, 1, |i, _| held(i)),
        }
    }

    /// Whether `text` holds no [`hides_ascii`] character: then (the terms being ASCII,
    /// which `finders` says) a word can only stem to a term if it begins with one of
    /// the term's prefixes.
    fn ascii_path(&self, text: &str) -> bool {
        text.is_ascii() || !may_hide_ascii(text) || !text.chars().any(hides_ascii)
    }
}

/// Whether `text` may hold a [`hides_ascii`] character, tested on bytes: ASCII is
/// skipped eight bytes at a time, and most other text (Greek letters, dashes, quotes
/// in English abstracts) fails the test without decoding a character. Arabic U+0600–
/// U+06FF begins with D8–DB, U+08D3–U+08FF with E0, İ with C4 and the Kelvin sign
/// with E2 84; Latin letters with diacritics, superscripts, combining marks, ligatures
/// and fullwidth forms (whose normalised forms hold ASCII) with most other lead bytes.
fn may_hide_ascii(text: &str) -> bool {
    let b = text.as_bytes();
    let (words, _) = b.as_chunks::<8>();
    for (k, w) in words.iter().enumerate() {
        if u64::from_le_bytes(*w) & 0x8080_8080_8080_8080 != 0 && (k * 8..k * 8 + 8).any(|i| may_begin_hiding(b, i)) {
            return true;
        }
    }
    (words.len() * 8..b.len()).any(|i| may_begin_hiding(b, i))
}

/// Whether byte `i` of `b` may begin a [`hides_ascii`] character (then it begins a
/// character): every character whose normalised form holds ASCII (`é`, `²`, `ﬁ`, `Ａ`)
/// or that is a combining mark has one of most lead bytes. Greek and Cyrillic letters
/// (CE–D1), general punctuation and mathematical operators (E2 80, E2 88–), and the CJK
/// ideographs (E4–E9) hold none and are common in abstracts, so they pass here.
#[inline]
fn may_begin_hiding(b: &[u8], i: usize) -> bool {
    match b[i] {
        0x00..=0xC1 | 0xCE..=0xD1 | 0xE4..=0xE9 => false,
        0xE2 => matches!(b.get(i + 1), Some(0x81..=0x87 | 0x91..=0x93 | 0xB1..=0xB7)),
        _ => true,
    }
}

/// Characters that can put ASCII into a token without being ASCII in the text: Arabic
/// marks (dropped from inside a word), the two whose lower case is ASCII (KELVIN
/// SIGN → k, LATIN CAPITAL I WITH DOT ABOVE → i + a combining dot), and those whose
/// normalised form holds ASCII (`é`, `ﬁ`, a combining accent: `unicode.rs`).
pub(super) fn hides_ascii(c: char) -> bool {
    !c.is_ascii() && (is_arabic_mark(c) || c == '\u{212A}' || c == '\u{130}' || normalizes_to_ascii(c))
}

/// Terms in ASCII, in text without [`hides_ascii`] characters (most text in Latin
/// script): a word then stems to a term only if its ASCII-lowercased letters begin with
/// one of the term's [`prefixes`] (`finders`, per term), so find where those begin a
/// word and analyse only those words. Words are runs of alphanumeric characters, as
/// the tokenizer splits them.
fn held_ascii(
    text: &str,
    wanted: &[String],
    finders: &[Vec<memchr::memmem::Finder<'static>>],
    select: impl Fn(usize) -> bool,
    mut held: impl FnMut(usize),
) {
    let words = Lowered::new(text);
    for (i, (w, finders)) in wanted.iter().zip(finders).enumerate() {
        if select(i) && finders.iter().any(|f| f.find_iter(words.bytes()).filter_map(|at| words.word_at(at)).any(|word| stems_to(word, w))) {
            held(i);
        }
    }
}

/// A text lower-cased (ASCII letters) for the prefix finders, and the words their
/// matches begin.
struct Lowered<'t> {
    text: &'t str,
    lower: String,
}

impl<'t> Lowered<'t> {
    fn new(text: &'t str) -> Lowered<'t> {
        Lowered { text, lower: text.to_ascii_lowercase() }
    }

    fn bytes(&self) -> &[u8] {
        self.lower.as_bytes()
    }

    /// The word (run of alphanumeric characters) that begins at byte `at`, if one
    /// begins there. A match is ASCII, so `at` is a character boundary of the text. A
    /// word begins right after an unspaced character too (`東京iPhone`): the tokenizer
    /// splits a run where the script changes.
    #[inline]
    fn word_at(&self, at: usize) -> Option<&'t str> {
        let text = self.text;
        if text[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() && !is_unspaced(c)) {
            return None;
        }
        let end = text[at..].find(|c: char| !c.is_alphanumeric()).map_or(text.len(), |n| at + n);
        Some(&text[at..end])
    }
}

/// How often (up to twice) `text` holds each selected term, found as [`held_ascii`]
/// finds them: where the term's prefixes begin words.
fn counted_ascii(
    text: &str,
    wanted: &[String],
    finders: &[Vec<memchr::memmem::Finder<'static>>],
    select: impl Fn(usize) -> bool,
    mut held: impl FnMut(usize, usize),
) {
    let words = Lowered::new(text);
    for (i, (w, finders)) in wanted.iter().zip(finders).enumerate() {
        if !select(i) {
            continue;
        }
        // Two prefixes of one term can begin the same word ("dy" and "dyi" for
        // "die"): a word already counted is not counted again.
        let (mut n, mut counted) = (0, usize::MAX);
        'finders: for f in finders {
            for at in f.find_iter(words.bytes()) {
                if at != counted && words.word_at(at).is_some_and(|word| stems_to(word, w)) {
                    n += 1;
                    counted = at;
                    if n == 2 {
                        break 'finders;
                    }
                }
            }
        }
        if n > 0 {
            held(i, n);
        }
    }
}

/// Words at most this long (bytes) are remembered with their stems, this many per thread.
const MEMO_WORD_BYTES: usize = 24;
const MEMO_WORDS: usize = 1 << 16;

thread_local! {
    /// Words met in passages and their index terms. A corpus's vocabulary is small
    /// beside the words its passages repeat (SciFact: 42k words), so most candidate
    /// words skip the analyser; the map is cleared when full, which bounds its memory
    /// (~4 MB per thread).
    static STEMS: RefCell<FxHashMap<Box<str>, Option<Box<str>>>> = RefCell::new(FxHashMap::default());
}

/// Whether `word` (one run of alphanumeric characters) analyses to `term`.
fn stems_to(word: &str, term: &str) -> bool {
    with_stem(word, |stem| stem == Some(term))
}

/// `f` of the index term of `word`, one run of alphanumeric characters (the first of its
/// [`terms`]; for an ASCII word, its only one, as [`super::term_of`] makes it), remembered.
pub(super) fn with_stem<R>(word: &str, f: impl FnOnce(Option<&str>) -> R) -> R {
    let analyse = |word: &str| terms(word).into_iter().next().map(String::into_boxed_str);
    if word.len() > MEMO_WORD_BYTES {
        return f(analyse(word).as_deref());
    }
    STEMS.with_borrow_mut(|memo| {
        if let Some(stem) = memo.get(word) {
            return f(stem.as_deref());
        }
        if memo.len() >= MEMO_WORDS {
            memo.clear();
        }
        let stem = analyse(word);
        let out = f(stem.as_deref());
        memo.insert(word.into(), stem);
        out
    })
}

/// The prefixes a word must begin with to stem to `stem`. Porter2 rewrites at most
/// a stem's last two letters (it deletes endings, and its replacements — "ization" →
/// "ize", "biliti" → "ble", a y at the end turned to i, an e added — touch only the
/// stem's tail), so every letter but the last two is the word's own: a long stem's
/// prefix is long and few words begin with it. Short stems keep three letters, in
/// every spelling with i and y swapped (Porter2 turns "early" into "earli" and "skies"
/// into "sky"), and "dyi", "lyi", "tyi" for the stems of "dying", "lying", "tying". A
/// final e may have been added ("using" → "use"), so it is not part of the prefix.
pub(super) fn prefixes(stem: &str) -> Vec<String> {
    let base = if stem.len() > 1 { stem.strip_suffix('e').unwrap_or(stem) } else { stem };
    let long = stem.len().saturating_sub(2);
    if long > 3 {
        return vec![base[..long].to_owned()];
    }
    let head: Vec<u8> = base.bytes().take(3).collect();
    let mut out = vec![head.clone()];
    for (i, b) in head.iter().enumerate() {
        let swap = match b {
            b'i' => b'y',
            b'y' => b'i',
            _ => continue,
        };
        let more: Vec<Vec<u8>> = out
            .iter()
            .map(|p| {
                let mut p = p.clone();
                p[i] = swap;
                p
            })
            .collect();
        out.extend(more);
    }
    if matches!(stem, "die" | "lie" | "tie") {
        out.push(vec![stem.as_bytes()[0], b'y', b'i']);
    }
    out.into_iter().map(|p| String::from_utf8(p).expect("ascii")).collect()
}

/// Any text: words whose first two letters could begin a wanted term are analysed.
fn held_any(text: &str, wanted: &[String], select: impl Fn(usize) -> bool, cap: usize, mut held: impl FnMut(usize, usize)) {
    let cap = cap.max(1);
    let heads: Vec<Head> = wanted.iter().map(|w| Head::of(w)).collect();
    let selected: Vec<bool> = (0..wanted.len()).map(&select).collect();
    // How often each term was found; terms not selected count as found enough already.
    let mut found: Vec<usize> = selected.iter().map(|&s| if s { 0 } else { cap }).collect();
    let mut tokenizer = QuarryTokenizer::default();
    let mut stream = tokenizer.token_stream(text);
    while stream.advance() {
        let word = &stream.token().text;
        let h = Head::of(word);
        if !heads.iter().any(|p| p.agrees(h)) {
            continue;
        }
        if let Some(i) = term_of(word).and_then(|t| wanted.iter().position(|w| *w == t)) {
            found[i] = (found[i] + 1).min(cap);
        }
        if found.iter().all(|&n| n == cap) {
            break;
        }
    }
    for (i, &n) in found.iter().enumerate() {
        if selected[i] && n > 0 {
            held(i, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow(text: &str, wanted: &[String]) -> Vec<String> {
        let held = terms(text);
        wanted.iter().filter(|w| held.contains(w)).cloned().collect()
    }

    /// A corpus vendored under `tests/data` (see NOTICE): the 500 SciFact documents the
    /// quality test indexes, or the first 300 of pre-processed NFCorpus.
    fn corpus(set: &str) -> String {
        let path = format!("{}/../tests/data/{set}/corpus.jsonl", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn equals_the_full_analysis_on_scifact_passages() {
        let corpus = corpus("scifact-500");
        let lines: Vec<&str> = corpus.lines().collect();
        assert_eq!(lines.len(), 500);
        for (i, line) in lines.iter().enumerate() {
            let other = lines[(i * 7 + 3) % lines.len()];
            // Terms from this passage and from another one: some held, some not.
            let mut wanted = terms(&line[..line.len().min(300)]);
            wanted.extend(terms(&other[..other.len().min(200)]));
            wanted.dedup();
            let (fast, slow) = (held_terms(line, &wanted), slow(line, &wanted));
            let diff: Vec<&String> = slow.iter().filter(|t| !fast.contains(t)).chain(fast.iter().filter(|t| !slow.contains(t))).collect();
            assert_eq!(fast, slow, "differ on {diff:?}");
        }
    }

    /// `counts` says how often (once, twice or more) a text holds each term, as the full
    /// analysis counts its tokens — BM25's term frequency — on SciFact's titles and
    /// abstracts, in ASCII and in text the slower path reads.
    #[test]
    fn counts_equal_the_full_analysis_on_scifact_texts() {
        let docs: Vec<serde_json::Value> = corpus("scifact-500").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let (mut twice, mut slow_path) = (0, 0);
        for (i, d) in docs.iter().enumerate() {
            let (title, body) = (d["title"].as_str().unwrap(), d["text"].as_str().unwrap());
            let other = docs[(i * 7 + 3) % docs.len()]["text"].as_str().unwrap();
            let mut wanted = terms(title);
            wanted.extend(terms(&body[..body.floor_char_boundary(400)]));
            wanted.extend(terms(&other[..other.floor_char_boundary(200)]));
            let mut seen = std::collections::HashSet::new();
            wanted.retain(|t| seen.insert(t.clone()));
            wanted.truncate(63);
            let held = Held::new(&wanted);
            // The Kelvin sign for a K sends a text through the slower path.
            let kelvin = body.replacen('k', "\u{212A}", 3);
            for text in [title, body, kelvin.as_str()] {
                let all = terms(text);
                let count = |w: &String| all.iter().filter(|t| *t == w).count();
                let bits = |min: usize| wanted.iter().enumerate().filter(|(_, w)| count(w) >= min).fold(0u64, |m, (i, _)| m | 1 << i);
                let every = u64::MAX >> (64 - wanted.len());
                assert_eq!(held.counts(text, every), (bits(1), bits(2)), "{text:?}");
                // A subset of the terms: the others are left out.
                let odd = every & 0xAAAA_AAAA_AAAA_AAAA;
                assert_eq!(held.counts(text, odd), (bits(1) & odd, bits(2) & odd), "{text:?}");
                twice += (bits(2) != 0) as usize;
                slow_path += (text.contains('\u{212A}') && bits(2) != 0) as usize;
            }
        }
        assert!(twice > 1000 && slow_path > 100, "the texts repeat terms: {twice} texts, {slow_path} on the slower path");
    }

    /// The claim `prefixes` rests on, checked word by word over the vocabularies of the
    /// vendored SciFact and NFCorpus subsets: every ASCII word begins with a prefix of its
    /// own stem.
    #[test]
    fn every_word_begins_with_a_prefix_of_its_stem() {
        let words: std::collections::BTreeSet<String> = [corpus("scifact-500"), corpus("nfcorpus-300")]
            .iter()
            .flat_map(|corpus| corpus.split(|c: char| !c.is_ascii_alphanumeric()))
            .filter(|w| !w.is_empty())
            .map(|w| w.to_ascii_lowercase())
            .collect();
        // 14,796 words in the vendored subsets (53,214 in both full corpora).
        assert!(words.len() > 14_000, "{} words", words.len());
        for word in &words {
            for stem in terms(word) {
                assert!(
                    prefixes(&stem).iter().any(|p| word.starts_with(p.as_str())),
                    "{word:?} stems to {stem:?}, which does not begin with any of {:?}",
                    prefixes(&stem)
                );
            }
        }
    }

    /// The byte-wise test lets through every text that holds a [`hides_ascii`]
    /// character, wherever it sits (block boundaries included).
    #[test]
    fn the_byte_test_never_misses_a_character_that_hides_ascii() {
        for c in (0x80..0x3_0000).filter_map(char::from_u32).filter(|&c| hides_ascii(c)) {
            for at in [0, 1, 61, 62, 63, 64, 100] {
                let text = format!("{}{c}tail", "a".repeat(at));
                assert!(may_hide_ascii(&text), "{c:?} at {at}");
            }
        }
        assert!(!may_hide_ascii("plain ascii – with a dash, β-catenin and “quotes”"));
    }

    #[test]
    fn equals_filtering_the_full_analysis() {
        let texts = [
            "The Running dogs are in the Gardens! Skies, dying flies, early lying ugly news; idly gently.",
            "Cells expressing PD-1 showed reduced T-cell activation in vivo (n=34); p<0.05.",
            "قَالَ رَسُولُ اللَّهِ إِنَّمَا الأَعْمَالُ بِالنِّيَّاتِ والمدرسة الكبرى",
            "Yearly yields of yttrium; Y-chromosome; O'Neil's apostrophes and 'quoted' words.",
            "Naïve T-cells (CD4⁺) express β-catenin; μg/ml doses; Ébola and éCells; \u{212A}inase; \u{130}nsulin.",
            "Cell\u{64B}s grow; \u{64B}cells; ce\u{64B}lls divide — résumé of yields.",
            "Ce\u{640}lls stretched by tatweel; الخلايcells; naïvecells; yield\u{640}s.",
            "東京cells 細胞yields「細胞」の研究; ภาษาcells ไทย; 서울cells에서",
            "",
        ];
        let queries = [
            "run garden dog sky die fly early lie ugly news idle gentle",
            "cell express reduced activation vivo",
            "الاعمال بالنيات المدرسه قال",
            "yearly yield yttrium chromosome neil quoted",
            "naive cell express catenin dose ebola kinase insulin grow divide yield",
            "細胞 研究 東京 cell yield ภาษา 서울",
        ];
        for t in texts {
            for q in queries {
                let wanted = terms(q);
                assert_eq!(held_terms(t, &wanted), slow(t, &wanted), "text {t:?} query {q:?}");
            }
        }
    }
}
