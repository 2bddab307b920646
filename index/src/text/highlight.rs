//! Where a text holds given index terms: the words that analyse to them, as character
//! spans. A search answer names the terms a passage holds (`matched`, stemmed and
//! stop-word filtered, so a client cannot find them again in the text); these spans are
//! what it marks. The words are found by the same analyser that indexed them, so a span
//! is exactly a word BM25 counted for its term.
//!
//! Highlights follow every search, so they must cost little beside the passage
//! selection they follow. A word can only analyse to an ASCII term if it begins with
//! one of the term's prefixes (`held.rs`'s claim, on which passages' matched terms
//! rest too) or is not ASCII (a character whose normalised form holds ASCII: `é`, `ﬁ`,
//! `Ａ`, a combining mark); [`Highlighter`] reads the text's runs of word characters
//! once, tests an ASCII run's first two letters, and analyses only the runs that pass,
//! each exactly as the tokenizer splits it in the whole text. The full analysis
//! ([`analysed_spans`]) remains for terms that are not ASCII in text that is not.

use tantivy::tokenizer::{TokenStream, Tokenizer};

use super::held::{prefixes, with_stem, Head};
use super::unicode::is_word_char;
use super::{term_of, QuarryTokenizer};

/// A word of the text that analyses to one of the wanted terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Offsets in characters (Unicode scalar values) into the text, end exclusive.
    pub start: u32,
    pub end: u32,
    /// Which of the wanted terms (its index in the list given).
    pub term: usize,
}

/// The words of `text` whose index term is one of `wanted`, in text order, none
/// overlapping (in unspaced scripts, a run of matched bigrams is one span). A search
/// answer marks many passages for one query: [`Highlighter`] builds the finders once.
pub fn term_spans(text: &str, wanted: &[String]) -> Vec<Span> {
    Highlighter::new(wanted).spans(text, wanted)
}

/// A query's analysed terms (its expansions' too), ready to be marked in passage after
/// passage, built once per query. A word is a candidate when it is ASCII and begins with
/// one of an ASCII term's prefixes (those a word must begin with to analyse to the
/// term), which [`Starts`] answers from its first two letters, or when it is not ASCII
/// (its normal form may hold an ASCII term: `é`, `ﬁ`, `Ａ`, a combining mark); only
/// candidates are analysed. A passage is read once, word by word, whatever the number
/// of terms, and nothing is compiled per query.
pub struct Highlighter {
    terms: Vec<String>,
    /// Whether each term is ASCII (its prefixes are in `starts`).
    ascii: Vec<bool>,
    /// Every ASCII term's prefixes; `None` when there are none.
    starts: Option<Starts>,
}

/// Prefixes (ASCII, lower case) and the two-letter heads they begin with: whether an
/// ASCII word begins with one of them is one bit test for most words.
struct Starts {
    prefixes: Vec<Vec<u8>>,
    /// Bit `a << 8 | b`: some prefix begins with `a` then `b`; a one-letter prefix `a`
    /// sets every `a << 8 | b` (`b` = 0 for a one-letter word).
    heads: Box<[u64; 1024]>,
}

impl Starts {
    fn new(prefixes: Vec<Vec<u8>>) -> Starts {
        let mut heads = Box::new([0u64; 1024]);
        let mut set = |i: usize| heads[i >> 6] |= 1 << (i & 63);
        for p in &prefixes {
            let a = usize::from(p[0]) << 8;
            match p.get(1) {
                Some(&b) => set(a | usize::from(b)),
                None => (0..256).for_each(|b| set(a | b)),
            }
        }
        Starts { prefixes, heads }
    }

    /// Whether the ASCII word `w` (not empty) begins with one of the prefixes, in any case.
    #[inline]
    fn begin(&self, w: &[u8]) -> bool {
        let i = usize::from(w[0].to_ascii_lowercase()) << 8 | usize::from(w.get(1).map_or(0, u8::to_ascii_lowercase));
        self.heads[i >> 6] >> (i & 63) & 1 == 1 && self.prefixes.iter().any(|p| w.len() >= p.len() && w[..p.len()].eq_ignore_ascii_case(p))
    }

    /// The candidate words of `text`, as byte ranges in order: its maximal runs of word
    /// characters ([`is_word_char`], as the tokenizer splits text first) that are ASCII
    /// and begin with a prefix, or are not ASCII.
    fn runs(&self, text: &str) -> Vec<(usize, usize)> {
        let b = text.as_bytes();
        let mut runs = Vec::new();
        if text.is_ascii() {
            let mut i = 0;
            while i < b.len() {
                while i < b.len() && !b[i].is_ascii_alphanumeric() {
                    i += 1;
                }
                let from = i;
                while i < b.len() && b[i].is_ascii_alphanumeric() {
                    i += 1;
                }
                if from < i && self.begin(&b[from..i]) {
                    runs.push((from, i));
                }
            }
            return runs;
        }
        // (start, whether every character so far is ASCII) of the run being read.
        let mut run: Option<(usize, bool)> = None;
        let end = |run: Option<(usize, bool)>, to: usize, runs: &mut Vec<(usize, usize)>| {
            if let Some((from, ascii)) = run {
                if !ascii || self.begin(&b[from..to]) {
                    runs.push((from, to));
                }
            }
        };
        for (i, c) in text.char_indices() {
            if is_word_char(c) {
                match &mut run {
                    Some((_, ascii)) => *ascii &= c.is_ascii(),
                    None => run = Some((i, c.is_ascii())),
                }
            } else {
                end(run.take(), i, &mut runs);
            }
        }
        end(run, b.len(), &mut runs);
        runs
    }
}

impl Highlighter {
    pub fn new(terms: &[String]) -> Highlighter {
        let ascii: Vec<bool> = terms.iter().map(|t| t.is_ascii()).collect();
        let mut all: Vec<Vec<u8>> = terms.iter().filter(|t| t.is_ascii()).flat_map(|t| prefixes(t)).map(String::into_bytes).collect();
        all.retain(|p| !p.is_empty());
        all.sort_unstable();
        all.dedup();
        let starts = (!all.is_empty()).then(|| Starts::new(all));
        Highlighter { terms: terms.to_vec(), ascii, starts }
    }

    /// The words of `text` whose index term is one of `matched`, as [`term_spans`]
    /// gives them. Terms this highlighter was not made with, or that are not ASCII in
    /// text that is not, take the full analysis.
    pub fn spans(&self, text: &str, matched: &[String]) -> Vec<Span> {
        if matched.is_empty() {
            return Vec::new();
        }
        let mut any_ascii = false;
        for m in matched {
            match self.terms.iter().position(|t| t == m).map(|i| self.ascii[i]) {
                Some(true) if self.starts.is_some() => any_ascii = true,
                // A term that is not ASCII is made of a word that is not: none in ASCII text.
                _ if !m.is_ascii() && text.is_ascii() => {}
                _ => return analysed_spans(text, matched),
            }
        }
        let Some(starts) = self.starts.as_ref().filter(|_| any_ascii) else { return Vec::new() };
        let mut spans = Spans::new(matched);
        for (from, to) in starts.runs(text) {
            spans.run(text, from, to);
        }
        spans.in_chars(text)
    }
}

/// The words of `text` whose index term is one of `wanted`, found by analysing every
/// word: the reference [`Highlighter::spans`] equals, and its path for terms and text
/// that are not ASCII.
fn analysed_spans(text: &str, wanted: &[String]) -> Vec<Span> {
    let mut spans = Spans::new(wanted);
    spans.tokens(text, 0);
    spans.in_chars(text)
}

/// Spans being gathered, in byte offsets, from tokens given in text order.
struct Spans<'w> {
    wanted: &'w [String],
    /// The first two letters of each wanted term (see [`Head`]).
    heads: Vec<Head>,
    bytes: Vec<(usize, usize, usize)>,
}

impl<'w> Spans<'w> {
    fn new(wanted: &'w [String]) -> Spans<'w> {
        Spans { wanted, heads: wanted.iter().map(|w| Head::of(w)).collect(), bytes: Vec::new() }
    }

    /// The tokens of the run of word characters `text[from..to]`, which the tokenizer
    /// splits as it does in the whole text (it splits the text into such runs first).
    fn run(&mut self, text: &str, from: usize, to: usize) {
        let run = &text[from..to];
        if run.is_ascii() {
            // One token, the run itself: its term is remembered across passages.
            if self.may_be_wanted(run) {
                let term = with_stem(run, |t| t.and_then(|t| self.wanted.iter().position(|w| w == t)));
                self.push(from, to, term);
            }
            return;
        }
        self.tokens(run, from);
    }

    /// Every token of `text`, at offsets moved by `base`.
    fn tokens(&mut self, text: &str, base: usize) {
        let mut tokenizer = QuarryTokenizer::default();
        let mut stream = tokenizer.token_stream(text);
        while stream.advance() {
            let t = stream.token();
            if self.may_be_wanted(&t.text) {
                let term = term_of(&t.text).and_then(|term| self.wanted.iter().position(|w| *w == term));
                self.push(base + t.offset_from, base + t.offset_to, term);
            }
        }
    }

    /// Whether the token's first two letters could begin a wanted term (a stem keeps
    /// its word's head, as `held.rs` relies on too): others are not analysed.
    fn may_be_wanted(&self, token: &str) -> bool {
        let h = Head::of(token);
        self.heads.iter().any(|p| p.agrees(h))
    }

    fn push(&mut self, from: usize, to: usize, term: Option<usize>) {
        let Some(i) = term else { return };
        match self.bytes.last_mut() {
            // Overlapping bigrams of an unspaced script (`東京`, `京都` in `東京都`):
            // one span over both, named by the first term.
            Some((_, end, _)) if from < *end => *end = (*end).max(to),
            _ => self.bytes.push((from, to, i)),
        }
    }

    fn in_chars(self, text: &str) -> Vec<Span> {
        if text.is_ascii() {
            // A byte is a character.
            return self.bytes.into_iter().map(|(from, to, term)| Span { start: from as u32, end: to as u32, term }).collect();
        }
        let mut chars = CharAt::new(text);
        self.bytes.into_iter().map(|(from, to, term)| Span { start: chars.at(from), end: chars.at(to), term }).collect()
    }
}

/// Byte offsets to character offsets, for offsets asked in increasing order.
struct CharAt<'t> {
    text: &'t str,
    byte: usize,
    char: u32,
}

impl<'t> CharAt<'t> {
    fn new(text: &'t str) -> CharAt<'t> {
        CharAt { text, byte: 0, char: 0 }
    }

    fn at(&mut self, byte: usize) -> u32 {
        self.char += self.text[self.byte..byte].chars().count() as u32;
        self.byte = byte;
        self.char
    }
}

#[cfg(test)]
mod tests {
    use super::super::terms;
    use super::*;

    fn marked(text: &str, query: &str) -> Vec<(String, usize)> {
        let chars: Vec<char> = text.chars().collect();
        term_spans(text, &terms(query)).into_iter().map(|s| (chars[s.start as usize..s.end as usize].iter().collect(), s.term)).collect()
    }

    #[test]
    fn every_word_that_stems_to_a_term_is_spanned() {
        let text = "Confidential information: the Receiving Party keeps CONFIDENTIAL informations confidentially.";
        let got = marked(text, "confidential information");
        // "confidentially" stems to "confidenti" as "confidential" does: BM25 counts it.
        let want = [("Confidential", 0), ("information", 1), ("CONFIDENTIAL", 0), ("informations", 1), ("confidentially", 0)];
        assert_eq!(got, want.map(|(w, t)| (w.to_owned(), t)));
    }

    /// The spans are exactly the tokens the full analyser turns into wanted terms, on the
    /// vendored SciFact abstracts, with terms from the text and from another one.
    #[test]
    fn equals_the_full_analysis_on_scifact_texts() {
        use tantivy::tokenizer::TokenStream as _;
        let path = format!("{}/../tests/data/scifact-500/corpus.jsonl", env!("CARGO_MANIFEST_DIR"));
        let corpus = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let lines: Vec<&str> = corpus.lines().collect();
        let mut spans = 0;
        for (i, line) in lines.iter().enumerate().step_by(5) {
            let other = lines[(i * 7 + 3) % lines.len()];
            let mut wanted = terms(&line[..line.floor_char_boundary(300)]);
            wanted.extend(terms(&other[..other.floor_char_boundary(200)]));
            wanted.dedup();
            let mut full = Vec::new();
            let mut analyzer = super::super::analyzer();
            let mut stream = analyzer.token_stream(line);
            while stream.advance() {
                let t = stream.token();
                if let Some(k) = wanted.iter().position(|w| *w == t.text) {
                    let at = |b: usize| line[..b].chars().count() as u32;
                    full.push(Span { start: at(t.offset_from), end: at(t.offset_to), term: k });
                }
            }
            let got = term_spans(line, &wanted);
            spans += got.len();
            assert_eq!(got, full, "line {i}");
        }
        assert!(spans > 5000, "{spans} spans");
    }

    #[test]
    fn unspaced_scripts_are_marked_where_their_bigrams_match() {
        let text = "😀 「東京都」に住む。東京タワー😀 ภาษาไทย, नमस्ते दुनिया";
        assert_eq!(marked(text, "東京都"), [("東京都", 0), ("東京", 0)].map(|(w, t)| (w.to_owned(), t)));
        assert_eq!(marked(text, "タワー"), [("タワー", 0)].map(|(w, t)| (w.to_owned(), t)));
        assert_eq!(marked(text, "ไทย"), [("ไทย", 0)].map(|(w, t)| (w.to_owned(), t)));
        assert_eq!(marked(text, "दुनिया"), [("दुनिया", 0)].map(|(w, t)| (w.to_owned(), t)));
        // Character offsets, past an emoji outside the basic plane.
        let spans = term_spans(text, &terms("東京都"));
        assert_eq!((spans[0].start, spans[0].end), (3, 6));
    }

    mod mixed_scripts {
        use proptest::prelude::*;
        use unicode_segmentation::UnicodeSegmentation;

        use super::super::super::{held_terms, terms};
        use super::super::term_spans;

        /// Pieces of text in many scripts, each whole (marks on their letters): Han, kana
        /// (a combining voicing mark included), halfwidth katakana, Hangul syllables and
        /// conjoining jamo, Thai and Lao with their marks, Khmer, Myanmar, Devanagari
        /// with viramas and vowel signs, Cyrillic, Greek, Hebrew and Arabic with their
        /// points, Latin with accents, digits, emoji (ZWJ families, skin tones, flags,
        /// keycaps) and punctuation.
        const PIECES: &[&str] = &[
            "東",
            "京",
            "都",
            "日本",
            "首都",
            "美術館",
            "长城",
            "学习",
            "𠀀",
            "々",
            "か\u{3099}",
            "ガイド",
            "ｶﾞｲﾄﾞ",
            "ー",
            "한국",
            "서울에서",
            "\u{1112}\u{1161}\u{11AB}",
            "ภาษา",
            "ไทย",
            "ที่",
            "เมือง",
            "ລາວ",
            "ខ្មែរ",
            "မြန်မာ",
            "हिन्दी",
            "पवित्र",
            "नदी",
            "स्नान",
            "Москва",
            "озеро",
            "Ἀθῆναι",
            "שָׁלוֹם",
            "مُحَمَّد",
            "النيل",
            "café",
            "cafe\u{0301}",
            "Kraków",
            "running",
            "dogs",
            "iPhone",
            "2020",
            "😀",
            "👨\u{200D}👩\u{200D}👧",
            "👍🏽",
            "🇯🇵",
            "1\u{FE0F}\u{20E3}",
            "ทำงาน",
            "ㅋㅋㅋ",
            "½",
            " ",
            " ",
            "、",
            "。",
            "「",
            "」",
            ", ",
            "-",
            "\u{3000}",
        ];

        fn text() -> impl Strategy<Value = String> {
            proptest::collection::vec(proptest::sample::select(PIECES), 1..30).prop_map(|p| p.concat())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(1000))]

            /// Every highlight span of a query drawn from the text itself lies inside the
            /// text on grapheme-cluster boundaries (an emoji, a Thai vowel, a virama is
            /// never cut), spans never overlap, each covers a word that analyses to its
            /// term, and together they cover every query term the text holds.
            #[test]
            fn spans_lie_on_character_boundaries_and_cover_matched_terms(
                text in text(),
                from in 0usize..64,
                len in 1usize..12,
                extra in proptest::sample::select(PIECES),
            ) {
                let chars: Vec<char> = text.chars().collect();
                let from = from % chars.len();
                let query: String = chars[from..(from + len).min(chars.len())].iter().collect::<String>() + " " + extra;
                let mut wanted = terms(&query);
                let mut seen = std::collections::HashSet::new();
                wanted.retain(|w| seen.insert(w.clone()));
                let spans = term_spans(&text, &wanted);
                let mut boundaries = std::collections::HashSet::new();
                let mut at = 0u32;
                for g in text.graphemes(true) {
                    boundaries.insert(at);
                    at += g.chars().count() as u32;
                }
                boundaries.insert(at);
                let mut end = 0;
                let mut covered = Vec::new();
                for s in &spans {
                    prop_assert!(s.start < s.end && s.end as usize <= chars.len(), "{s:?} in {text:?}");
                    prop_assert!(s.start >= end, "spans overlap: {spans:?} in {text:?}");
                    end = s.end;
                    prop_assert!(boundaries.contains(&s.start) && boundaries.contains(&s.end), "{s:?} cuts a cluster of {text:?}");
                    let word: String = chars[s.start as usize..s.end as usize].iter().collect();
                    let found = terms(&word);
                    prop_assert!(found.contains(&wanted[s.term]), "{word:?} is no {:?} (query {query:?})", wanted[s.term]);
                    covered.extend(found);
                }
                let held: Vec<String> = terms(&text).into_iter().filter(|t| wanted.contains(t)).collect();
                for t in &held {
                    prop_assert!(covered.contains(t), "{t:?} held by {text:?} but not marked: {spans:?}");
                }
                // Passages name the same terms the spans mark.
                let named: Vec<String> = wanted.iter().filter(|w| held.contains(w)).cloned().collect();
                prop_assert_eq!(held_terms(&text, &wanted), named);
            }
        }
    }

    /// Text whose words' analysed terms differ from their bytes (NFKC, folded marks,
    /// the Kelvin sign): a byte search for a term's prefix misses them, and the runs
    /// that hold such characters are analysed whole, so each is still marked.
    #[test]
    fn words_whose_normal_form_differs_from_their_bytes_are_marked() {
        let text = "ＣＥＬＬＳ and ﬁnal ﬁndings; cafe\u{301}s, Ce\u{64B}lls, \u{212A}inase, 𝐜𝐞𝐥𝐥 ⓒells of 東京cells; cells.";
        let got = marked(text, "cell final finding cafe kinase");
        let want = [
            ("ＣＥＬＬＳ", 0),
            ("ﬁnal", 1),
            ("ﬁndings", 2),
            ("cafe\u{301}s", 3),
            ("Ce\u{64B}lls", 0),
            ("\u{212A}inase", 4),
            ("𝐜𝐞𝐥𝐥", 0),
            ("ⓒells", 0),
            ("cells", 0),
            ("cells", 0),
        ];
        assert_eq!(got, want.map(|(w, t)| (w.to_owned(), t)));
        let wanted = terms("cell final finding cafe kinase");
        assert_eq!(term_spans(text, &wanted), analysed_spans(text, &wanted));
    }

    /// A highlighter made with a query's terms marks a passage's matched terms (a subset,
    /// in another order) as the full analysis does; a term it was not made with, and one
    /// not ASCII in text that is not, take the full analysis.
    #[test]
    fn a_query_highlighter_marks_any_of_its_terms() {
        let text = "Cells divide; a dividing cell, café cells. 細胞の分裂 cells";
        let query = terms("cell divide café 細胞 absent");
        let marker = Highlighter::new(&query);
        for matched in [vec!["divid", "cell"], vec!["細胞", "cell"], vec!["cafe"], vec!["elsewher", "cell"], vec![]] {
            let matched: Vec<String> = matched.into_iter().map(str::to_owned).collect();
            assert_eq!(marker.spans(text, &matched), analysed_spans(text, &matched), "{matched:?}");
        }
        let ascii = "Cells divide";
        assert_eq!(marker.spans(ascii, &terms("細胞 cell")), analysed_spans(ascii, &terms("細胞 cell")));
    }

    mod fast_equals_full {
        use proptest::prelude::*;

        use super::super::super::terms;
        use super::super::{analysed_spans, Highlighter};

        /// Words in every case and encoding the analyser folds: English inflections
        /// (Porter2's irregular ones too), fullwidth and mathematical letters, ligatures,
        /// combining accents and Arabic marks inside Latin words, superscripts, the Kelvin
        /// sign and dotted capital I, roman numerals, circled letters; then other scripts,
        /// unspaced ones, emoji and punctuation.
        const PIECES: &[&str] = &[
            "cell",
            "Cells",
            "CELLULAR",
            "running",
            "Runs",
            "runner",
            "dying",
            "dies",
            "lying",
            "skies",
            "Sky",
            "early",
            "only",
            "ugly",
            "idly",
            "gently",
            "news",
            "yields",
            "Yielded",
            "generalization",
            "generalizations",
            "general",
            "sensibility",
            "the",
            "and",
            "x",
            "2020",
            "CD4",
            "p53",
            "ＣＥＬＬＳ",
            "ｒｕｎｎｉｎｇ",
            "ｃｅｌｌ",
            "ﬁnal",
            "ﬁnally",
            "eﬀect",
            "eﬀects",
            "ﬂies",
            "𝐜𝐞𝐥𝐥𝐬",
            "ⓒⓔⓛⓛ",
            "Ⅻ",
            "xii",
            "㎏",
            "kg",
            "café",
            "cafe\u{301}",
            "re\u{301}sume\u{301}s",
            "résumé",
            "na\u{308}ive",
            "naïve",
            "Kraków",
            "krakow",
            "m²",
            "m2",
            "½",
            "\u{212A}inase",
            "kinase",
            "\u{130}nsulin",
            "insulin",
            "cel\u{64B}ls",
            "ce\u{640}lls",
            "Straße",
            "strasse",
            "ı",
            "ǅemal",
            "β",
            "catenin",
            "Москва",
            "озеро",
            "Ἀθῆναι",
            "مُحَمَّد",
            "النيل",
            "हिन्दी",
            "東京",
            "都",
            "細胞",
            "ｶﾞｲﾄﾞ",
            "か\u{3099}",
            "ภาษาไทย",
            "서울",
            "😀",
            "👨\u{200D}👩\u{200D}👧",
            "👍🏽",
            "1\u{FE0F}\u{20E3}",
            " ",
            " ",
            " ",
            "-",
            ", ",
            "'",
            "。",
            "\u{3000}",
            "\u{301}",
        ];

        fn text() -> impl Strategy<Value = String> {
            proptest::collection::vec(proptest::sample::select(PIECES), 1..40).prop_map(|p| p.concat())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            /// For terms drawn from the text's own words (and one from anywhere), the
            /// spans of a highlighter made with the query's terms equal the full
            /// analysis's, as do `term_spans`'.
            #[test]
            fn spans_equal_the_full_analysis(
                text in text(),
                picks in proptest::collection::vec(any::<usize>(), 0..6),
                extra in proptest::sample::select(PIECES),
            ) {
                let mut own = terms(&text);
                let mut seen = std::collections::HashSet::new();
                own.retain(|t| seen.insert(t.clone()));
                let mut matched: Vec<String> = if own.is_empty() { Vec::new() } else { picks.iter().map(|p| own[p % own.len()].clone()).collect() };
                matched.extend(terms(extra));
                let mut seen = std::collections::HashSet::new();
                matched.retain(|t| seen.insert(t.clone()));
                let mut query = own.clone();
                query.extend(terms(extra));
                let want = analysed_spans(&text, &matched);
                prop_assert_eq!(Highlighter::new(&query).spans(&text, &matched), want.clone(), "matched {:?}", matched);
                prop_assert_eq!(super::super::term_spans(&text, &matched), want, "matched {:?}", matched);
            }
        }
    }

    #[test]
    fn spans_count_characters_not_bytes() {
        let text = "Naïve “résumé” of the Kraków naïve résumés, ق مُحَمَّد";
        let got = marked(text, "resume krakow محمد");
        assert_eq!(got, [("résumé", 0), ("Kraków", 1), ("résumés", 0), ("مُحَمَّد", 2)].map(|(w, t)| (w.to_owned(), t)));
        assert!(term_spans(text, &[]).is_empty());
        assert!(marked("the of and", "the").is_empty(), "stop words are no terms");
    }
}
