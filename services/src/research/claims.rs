//! What an answer says, taken apart by code: its sentences (each one a claim, with the
//! `[n]` it cites and its offsets in the answer), its quotations (each checked against
//! the page it cites by [`quarry_index::verify`], never fuzzily), and the counts and
//! one-sentence summary of the verdicts.
//!
//! Offsets are in characters of the answer, as every offset the API returns.

use quarry_index::verify::{Located, Match, Page};

use super::cite;

/// One sentence of the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sentence {
    /// Without its citation markers, spaces tidied.
    pub text: String,
    /// The `[n]` it cites (final numbering), in order, without repeats.
    pub sources: Vec<u32>,
    /// Characters of the answer, the markers that close it included.
    pub start: u32,
    pub end: u32,
}

/// Sentence ends: Latin, CJK, Arabic and Devanagari full stops, question and exclamation marks.
fn ends_sentence(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | '؟' | '۔' | '।')
}

/// What may close a sentence after its stop: quotes and brackets.
fn closer(c: char) -> bool {
    matches!(c, '"' | '\'' | '”' | '’' | '»' | ')' | ']' | '」' | '』' | '）')
}

/// Words that end in a full stop without ending a sentence.
const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "etc", "vs", "v", "cf", "no", "nos", "sec", "secs", "art", "para", "p", "pp", "vol", "ch", "mr", "mrs", "ms", "dr", "st", "jr",
    "sr", "inc", "ltd", "co", "corp", "u.s", "u.k", "fig", "al", "approx", "ed", "eds", "op", "cit", "ibid", "id",
];

/// The answer's sentences, in order. A line break ends a sentence too (lists, headings);
/// markers right after a stop (`… notice. [1]`) belong to the sentence they follow.
pub fn sentences(answer: &str) -> Vec<Sentence> {
    let chars: Vec<(usize, char)> = answer.char_indices().collect();
    let mut spans = Vec::new();
    let mut start = 0usize;
    let mut i = 0usize;
    while i < chars.len() {
        let c = chars[i].1;
        let stop = ends_sentence(c) && !abbreviation(answer, &chars, i) && !decimal(&chars, i);
        if c == '\n' || stop {
            let mut j = i + 1;
            if stop {
                while j < chars.len() && (closer(chars[j].1) || ends_sentence(chars[j].1)) {
                    j += 1;
                }
                // Markers after the stop: ` [1][2]`.
                let mut k = j;
                while k < chars.len() && chars[k].1 == ' ' {
                    k += 1;
                }
                while k < chars.len() && chars[k].1 == '[' {
                    let at = chars[k].0;
                    match cite::markers(&answer[at..]).first().filter(|m| m.start == 0) {
                        Some(m) => {
                            let end = at + m.end;
                            while k < chars.len() && chars[k].0 < end {
                                k += 1;
                            }
                            j = k;
                            while k < chars.len() && chars[k].1 == ' ' {
                                k += 1;
                            }
                        }
                        None => break,
                    }
                }
                // A stop with a Latin letter or digit right after is inside a word (a.m., x.org).
                if j < chars.len() && chars[j].1.is_ascii_alphanumeric() && !is_cjk_stop(c) {
                    i += 1;
                    continue;
                }
            }
            spans.push((start, j));
            start = j;
            i = j;
            continue;
        }
        i += 1;
    }
    spans.push((start, chars.len()));
    spans.into_iter().filter_map(|(a, z)| sentence(answer, &chars, a, z)).collect()
}

fn is_cjk_stop(c: char) -> bool {
    matches!(c, '。' | '！' | '？')
}

/// Whether the `.` at `chars[i]` ends an abbreviation (`e.g.`, `Sec.`, an initial).
fn abbreviation(answer: &str, chars: &[(usize, char)], i: usize) -> bool {
    if chars[i].1 != '.' {
        return false;
    }
    let end = chars[i].0;
    // The space found may be wider than a byte (U+00A0, U+202F): the word starts after it.
    let word_start = answer[..end].char_indices().rev().find(|&(_, c)| c.is_whitespace() || c == '(').map_or(0, |(p, c)| p + c.len_utf8());
    let word = answer[word_start..end].to_lowercase();
    let single_initial = word.chars().count() == 1 && word.chars().all(char::is_alphabetic);
    // A lower-case word after the stop says the sentence goes on.
    let next_lower = chars[i + 1..].iter().map(|c| c.1).find(|c| !c.is_whitespace()).is_some_and(char::is_lowercase);
    ABBREVIATIONS.contains(&word.as_str()) || single_initial || next_lower
}

/// `3.5`: a stop between digits.
fn decimal(chars: &[(usize, char)], i: usize) -> bool {
    i > 0 && i + 1 < chars.len() && chars[i - 1].1.is_ascii_digit() && chars[i + 1].1.is_ascii_digit()
}

/// The sentence of `chars[a..z]`, trimmed; `None` when it holds no word.
fn sentence(answer: &str, chars: &[(usize, char)], mut a: usize, mut z: usize) -> Option<Sentence> {
    while a < z && chars[a].1.is_whitespace() {
        a += 1;
    }
    while z > a && chars[z - 1].1.is_whitespace() {
        z -= 1;
    }
    let byte = |i: usize| chars.get(i).map_or(answer.len(), |c| c.0);
    let raw = &answer[byte(a)..byte(z)];
    let mut text = String::with_capacity(raw.len());
    let mut sources = Vec::new();
    let mut at = 0;
    for m in cite::markers(raw) {
        text.push_str(&raw[at..m.start]);
        for n in m.numbers {
            if !sources.contains(&n) {
                sources.push(n);
            }
        }
        at = m.end;
    }
    text.push_str(&raw[at..]);
    let text = tidy(&text);
    if !text.chars().any(char::is_alphanumeric) {
        return None;
    }
    Some(Sentence { text, sources, start: a as u32, end: z as u32 })
}

/// Runs of spaces as one, no space before closing punctuation, list and heading marks off.
fn tidy(s: &str) -> String {
    let joined = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(joined.len());
    for c in joined.chars() {
        if matches!(c, '.' | ',' | ';' | ':' | '!' | '?' | '。' | '،' | '؟') && out.ends_with(' ') {
            out.pop();
        }
        out.push(c);
    }
    out.trim_start_matches(['#', '-', '*', '•', ' ']).trim().to_owned()
}

/// Whether `answer` says anything beyond its citation markers.
pub fn has_words(answer: &str) -> bool {
    let mut at = 0;
    for m in cite::markers(answer) {
        if answer[at..m.start].chars().any(char::is_alphanumeric) {
            return true;
        }
        at = m.end;
    }
    answer[at..].chars().any(char::is_alphanumeric)
}

/// Whether a sentence is worth judging as a claim: not a heading, not a lead-in to a
/// list, and (uncited) at least a few words.
pub fn is_claim(s: &Sentence) -> bool {
    if s.text.ends_with(':') {
        return false;
    }
    !s.sources.is_empty() || s.text.split_whitespace().count() >= 4 || s.text.chars().count() >= 12 && !s.text.is_ascii()
}

/// Phrases that point to a source instead of saying what it says, when a marker
/// follows them: "see [1]", "are discussed in [1], [2] and [3]".
const POINTERS: &[&str] =
    &["see", "refer to", "discussed in", "described in", "mentioned in", "covered in", "detailed in", "outlined in", "explained in"];

/// How well an answer holds to its sources, sentence by sentence (the model's numbering):
/// its claims, those that cite no source, and those that only point to a source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Citing {
    pub claims: usize,
    pub uncited: Vec<String>,
    pub pointers: Vec<String>,
}

impl Citing {
    pub fn of(answer: &str) -> Citing {
        let mut c = Citing::default();
        for s in sentences(answer).into_iter().filter(is_claim) {
            c.claims += 1;
            if s.sources.is_empty() {
                c.uncited.push(s.text);
            } else {
                let raw: String = answer.chars().skip(s.start as usize).take((s.end - s.start) as usize).collect();
                if is_pointer(&raw, &s.text) {
                    c.pointers.push(s.text);
                }
            }
        }
        c
    }

    /// Mostly uncited (more than half of its claims), or any bare pointer: the answer is
    /// worth asking again.
    pub fn wants_another_try(&self) -> bool {
        self.uncited.len() * 2 > self.claims || !self.pointers.is_empty()
    }

    /// What is wrong, counted: fewer is better.
    pub fn faults(&self) -> usize {
        self.uncited.len() + self.pointers.len()
    }
}

/// A short sentence (`text`, markers removed) whose `raw` form puts a marker right after
/// a pointing phrase.
fn is_pointer(raw: &str, text: &str) -> bool {
    if text.split_whitespace().count() > 12 {
        return false;
    }
    let lower = raw.to_lowercase();
    POINTERS.iter().any(|p| {
        lower.match_indices(p).any(|(at, _)| {
            let before = lower[..at].chars().next_back();
            let after = lower[at + p.len()..].trim_start_matches([' ', ':', '\u{a0}']);
            before.is_none_or(|c| !c.is_alphanumeric()) && after.starts_with('[')
        })
    })
}

/// A quotation in the answer and the `[n]` cited right after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quotation {
    pub quote: String,
    pub source: Option<u32>,
}

/// Quote pairs: curly, straight, guillemets, CJK corner brackets, German low-high.
const PAIRS: &[(char, char)] = &[('“', '”'), ('"', '"'), ('«', '»'), ('「', '」'), ('『', '』'), ('„', '“')];

/// The longest quotation taken as one (longer is a block of the model's own text).
const MAX_QUOTE_CHARS: usize = 1200;

/// The quotations of `answer`, in order.
pub fn quotations(answer: &str) -> Vec<Quotation> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < answer.len() {
        let Some(c) = answer[i..].chars().next() else { break };
        let Some(&(_, close)) = PAIRS.iter().find(|(o, _)| *o == c) else {
            i += c.len_utf8();
            continue;
        };
        let from = i + c.len_utf8();
        let Some(len) = answer[from..].find(close) else {
            i = from;
            continue;
        };
        let quote = answer[from..from + len].trim();
        let after = from + len + close.len_utf8();
        if !quote.is_empty() && quote.chars().count() <= MAX_QUOTE_CHARS && quote.chars().any(char::is_alphanumeric) {
            out.push(Quotation { quote: quote.to_owned(), source: source_after(&answer[after..]) });
        }
        i = after;
    }
    out
}

/// The marker right after a quotation: after spaces and `.,;:`, the first number of a marker.
fn source_after(rest: &str) -> Option<u32> {
    let skipped = rest.trim_start_matches([' ', '.', ',', ';', ':', '\u{a0}']);
    cite::markers(skipped).first().filter(|m| m.start == 0).and_then(|m| m.numbers.first().copied())
}

/// The quotation located in its page: as written, else normalised (see the verifier);
/// a quotation with an ellipsis (`…`, `...`) is found when every part is, in order.
pub fn locate_quote(page: &Page<'_>, quote: &str) -> Option<Located> {
    if let Some(at) = page.locate(quote) {
        return Some(at);
    }
    let parts: Vec<&str> = quote.split(['…']).flat_map(|p| p.split("...")).map(|p| p.trim()).filter(|p| !p.is_empty()).collect();
    if parts.len() < 2 || parts.iter().any(|p| !p.chars().any(char::is_alphanumeric)) {
        return None;
    }
    let mut first: Option<Located> = None;
    let mut end = 0u32;
    for p in parts {
        let at = page.locate(p)?;
        if at.start < end {
            return None;
        }
        end = at.end;
        first.get_or_insert(at);
    }
    first.map(|f| Located { matched: Match::NormalizedExact, start: f.start, end })
}

/// A claim's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Supported,
    Partial,
    Unsupported,
    Uncited,
    Unchecked,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Supported => "supported",
            Status::Partial => "partial",
            Status::Unsupported => "unsupported",
            Status::Uncited => "uncited",
            Status::Unchecked => "unchecked",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "supported" | "support" | "yes" => Status::Supported,
            "partial" | "partially" | "partially supported" => Status::Partial,
            "unsupported" | "contradicted" | "not supported" | "no" => Status::Unsupported,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub supported: u32,
    pub partial: u32,
    pub unsupported: u32,
    pub uncited: u32,
    pub unchecked: u32,
}

impl Counts {
    pub fn of(statuses: impl IntoIterator<Item = Status>) -> Counts {
        let mut c = Counts::default();
        for s in statuses {
            *match s {
                Status::Supported => &mut c.supported,
                Status::Partial => &mut c.partial,
                Status::Unsupported => &mut c.unsupported,
                Status::Uncited => &mut c.uncited,
                Status::Unchecked => &mut c.unchecked,
            } += 1;
        }
        c
    }

    pub fn total(&self) -> u32 {
        self.supported + self.partial + self.unsupported + self.uncited + self.unchecked
    }

    /// One sentence: "7 of 8 claims supported by their sources; 1 partially."
    pub fn summary(&self) -> String {
        let total = self.total();
        if total == 0 {
            return "The answer makes no claims to check.".into();
        }
        let noun = if total == 1 { "claim" } else { "claims" };
        let mut s = format!("{} of {total} {noun} supported by {}", self.supported, if total == 1 { "its sources" } else { "their sources" });
        for (n, what) in [(self.partial, "partially"), (self.unsupported, "unsupported"), (self.uncited, "uncited"), (self.unchecked, "unchecked")] {
            if n > 0 {
                s.push_str(&format!("; {n} {what}"));
            }
        }
        s.push('.');
        s
    }
}

/// The sentence of `sources` sharing the most content words with `claim`, when it
/// shares at least half of the claim's: evidence found by code where the judge gave
/// none that is on the page. Returns the source's index and the sentence's character
/// offsets in its text.
pub fn overlap_evidence(claim: &str, sources: &[(usize, &str)]) -> Option<(usize, u32, u32)> {
    let words =
        |s: &str| -> Vec<String> { s.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() > 3).map(str::to_lowercase).collect() };
    let want = words(claim);
    if want.len() < 2 {
        return None;
    }
    let mut best: Option<(usize, usize, u32, u32)> = None;
    for &(i, text) in sources {
        for s in sentences(text) {
            let span = &text[byte_of(text, s.start)..byte_of(text, s.end)];
            let have = words(span);
            let shared = want.iter().filter(|w| have.contains(w)).count();
            if shared * 2 >= want.len() && best.is_none_or(|b| shared > b.0) {
                best = Some((shared, i, s.start, s.end));
            }
        }
    }
    best.map(|(_, i, start, end)| (i, start, end))
}

/// The byte offset of character `c` of `s`.
pub fn byte_of(s: &str, c: u32) -> usize {
    s.char_indices().nth(c as usize).map_or(s.len(), |(b, _)| b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_carry_their_markers_and_offsets() {
        let a =
            "The provider must permit one audit per year [1]. Records are kept for three years. [2][1]\nIt applies e.g. to Sec. 2.1 of the MSA [3].";
        let s = sentences(a);
        let texts: Vec<&str> = s.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts,
            ["The provider must permit one audit per year.", "Records are kept for three years.", "It applies e.g. to Sec. 2.1 of the MSA."]
        );
        assert_eq!(s[0].sources, vec![1]);
        assert_eq!(s[1].sources, vec![2, 1]);
        let chars: Vec<char> = a.chars().collect();
        let slice = |x: &Sentence| chars[x.start as usize..x.end as usize].iter().collect::<String>();
        assert_eq!(slice(&s[0]), "The provider must permit one audit per year [1].");
        assert_eq!(slice(&s[1]), "Records are kept for three years. [2][1]");
    }

    #[test]
    fn sentences_in_arabic_and_cjk_split_at_their_own_stops() {
        let a = "قال مالك: العلم نور [1]. هل هذا صحيح؟ نعم [2].東京は首都です[1]。大阪は都市です[2]。";
        let s = sentences(a);
        assert_eq!(s.len(), 5, "{s:?}");
        assert_eq!(s[3].text, "東京は首都です。");
        assert_eq!(s[3].sources, vec![1]);
        // Offsets are characters: the slice is the sentence.
        let chars: Vec<char> = a.chars().collect();
        assert_eq!(chars[s[4].start as usize..s[4].end as usize].iter().collect::<String>(), "大阪は都市です[2]。");
    }

    #[test]
    fn a_stop_after_a_wide_space_is_read_on_character_boundaries() {
        // Seen on a real answer: the word before a stop began after a narrow no-break
        // space (three bytes), and the stop's abbreviation check sliced inside it.
        let a = "Under 1\u{202f}U.S.C. section 201 the Code is published [1]. Copies go to each court\u{a0}e.g. the District [2].";
        let s = sentences(a);
        let texts: Vec<&str> = s.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, ["Under 1 U.S.C. section 201 the Code is published.", "Copies go to each court e.g. the District."]);
        assert_eq!((s[0].sources.clone(), s[1].sources.clone()), (vec![1], vec![2]));
    }

    /// Every text of up to five pieces from an alphabet of what trips byte arithmetic
    /// (spaces one to three bytes wide, stops, brackets, markers, quotes, letters of
    /// two and three bytes): the answer's and the pages' readers never panic.
    #[test]
    fn no_text_makes_the_readers_panic() {
        const PIECES: [&str; 12] = ["a", ".", " ", "\u{a0}", "\u{202f}", "(", "[1]", "é", "。", "\u{201c}", "\"", "2"];
        let mut text = String::new();
        let mut digits = [0usize; 5];
        for len in 1..=5 {
            let total = PIECES.len().pow(len as u32);
            for n in 0..total {
                let mut k = n;
                for d in digits.iter_mut().take(len) {
                    *d = k % PIECES.len();
                    k /= PIECES.len();
                }
                text.clear();
                digits[..len].iter().for_each(|&d| text.push_str(PIECES[d]));
                for s in sentences(&text) {
                    let _ = is_claim(&s);
                }
                let _ = (quotations(&text), has_words(&text), cite::resolve(&text, 1));
                let _ = locate_quote(&Page::new(&text), "a. a");
                let _ = overlap_evidence("a a. é", &[(0, &text)]);
            }
        }
    }

    #[test]
    fn quotations_and_the_source_after_them() {
        let a = "It says “one audit per year” [2], and \"records of each audit\", [1] but «rien» and 「東京」[3] and \"unclosed";
        let q = quotations(a);
        assert_eq!(
            q,
            vec![
                Quotation { quote: "one audit per year".into(), source: Some(2) },
                Quotation { quote: "records of each audit".into(), source: Some(1) },
                Quotation { quote: "rien".into(), source: None },
                Quotation { quote: "東京".into(), source: Some(3) },
            ]
        );
    }

    #[test]
    fn a_quotation_with_an_ellipsis_is_found_part_by_part_in_order() {
        let page = Page::new("Provider shall permit one audit per year on reasonable notice to the Customer.");
        let at = locate_quote(&page, "Provider shall permit … on reasonable notice").unwrap();
        assert_eq!((at.start, at.end, at.matched), (0, 61, Match::NormalizedExact));
        assert!(locate_quote(&page, "on reasonable notice ... Provider shall permit").is_none());
        assert!(locate_quote(&page, "Provider shall permit two audits").is_none());
    }

    #[test]
    fn an_answer_mostly_uncited_or_pointing_is_worth_another_try() {
        let fine = Citing::of("Notice is required thirty days ahead [1]. The buyer may audit once a year [2]. Both parties sign.");
        assert_eq!((fine.claims, fine.uncited.len(), fine.pointers.len()), (2, 0, 0), "{fine:?}");
        assert!(!fine.wants_another_try());
        let bare = Citing::of("Notice is required thirty days ahead. The buyer may audit once a year. Records are kept seven years [1].");
        assert_eq!(bare.uncited, vec!["Notice is required thirty days ahead.", "The buyer may audit once a year."]);
        assert!(bare.wants_another_try());
        let pointing = Citing::of("Tides rise twice a day [1]. Other causes are discussed in [1], [2], and [3].");
        assert_eq!(pointing.pointers.len(), 1, "{pointing:?}");
        assert!(pointing.wants_another_try());
        // "see" inside a claim that says something is no pointer.
        let seen = Citing::of("You can see the tide turn twice each day at the harbour [1].");
        assert!(seen.pointers.is_empty() && !seen.wants_another_try(), "{seen:?}");
    }

    #[test]
    fn markers_alone_are_no_answer() {
        assert!(!has_words("[1]") && !has_words(" [1][2]. ") && !has_words(""));
        assert!(has_words("Fees are due [1].") && has_words("[1] ٣٠ يوما"));
    }

    #[test]
    fn counts_and_summary() {
        let c = Counts::of([Status::Supported, Status::Supported, Status::Partial]);
        assert_eq!(c.summary(), "2 of 3 claims supported by their sources; 1 partially.");
        assert_eq!(Counts::of([Status::Supported]).summary(), "1 of 1 claim supported by its sources.");
        assert_eq!(Counts::default().summary(), "The answer makes no claims to check.");
        let c = Counts::of([Status::Unsupported, Status::Uncited, Status::Unchecked, Status::Supported]);
        assert_eq!(c.summary(), "1 of 4 claims supported by their sources; 1 unsupported; 1 uncited; 1 unchecked.");
    }

    #[test]
    fn overlap_evidence_takes_a_sentence_of_the_source() {
        let src = "Fees are due monthly. Provider shall keep records of each audit for three years. Nothing else.";
        let (i, start, end) = overlap_evidence("Records of each audit are kept for three years", &[(4, src)]).unwrap();
        let span: String = src.chars().skip(start as usize).take((end - start) as usize).collect();
        assert_eq!((i, span.as_str()), (4, "Provider shall keep records of each audit for three years."));
        assert!(overlap_evidence("The moon is made of cheese", &[(0, src)]).is_none());
    }
}
