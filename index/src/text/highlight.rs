//! Where a text holds given index terms: the words that analyse to them, as character
//! spans. A search answer names the terms a passage holds (`matched`, stemmed and
//! stop-word filtered, so a client cannot find them again in the text); these spans are
//! what it marks. The words are found by the same analyser that indexed them, so a span
//! is exactly a word BM25 counted for its term.

use tantivy::tokenizer::{TokenStream, Tokenizer};

use super::held::head;
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
/// overlapping (in unspaced scripts, a run of matched bigrams is one span). Only words
/// whose first two letters could begin a wanted term are analysed (a stem keeps its
/// word's head, as `held.rs` relies on too), so a passage costs a split, not a stemming.
pub fn term_spans(text: &str, wanted: &[String]) -> Vec<Span> {
    if wanted.is_empty() {
        return Vec::new();
    }
    let heads: Vec<String> = wanted.iter().map(|w| head(w)).collect();
    let mut bytes_spans = Vec::new();
    let mut tokenizer = QuarryTokenizer::default();
    let mut stream = tokenizer.token_stream(text);
    while stream.advance() {
        let t = stream.token();
        let h = head(&t.text);
        if !heads.iter().any(|p| p.starts_with(&h) || h.starts_with(p.as_str())) {
            continue;
        }
        if let Some(i) = term_of(&t.text).and_then(|term| wanted.iter().position(|w| *w == term)) {
            match bytes_spans.last_mut() {
                // Overlapping bigrams of an unspaced script (`東京`, `京都` in `東京都`):
                // one span over both, named by the first term.
                Some((_, to, _)) if t.offset_from < *to => *to = (*to).max(t.offset_to),
                _ => bytes_spans.push((t.offset_from, t.offset_to, i)),
            }
        }
    }
    let mut chars = CharAt::new(text);
    bytes_spans.into_iter().map(|(from, to, term)| Span { start: chars.at(from), end: chars.at(to), term }).collect()
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

    #[test]
    fn spans_count_characters_not_bytes() {
        let text = "Naïve “résumé” of the Kraków naïve résumés, ق مُحَمَّد";
        let got = marked(text, "resume krakow محمد");
        assert_eq!(got, [("résumé", 0), ("Kraków", 1), ("résumés", 0), ("مُحَمَّد", 2)].map(|(w, t)| (w.to_owned(), t)));
        assert!(term_spans(text, &[]).is_empty());
        assert!(marked("the of and", "the").is_empty(), "stop words are no terms");
    }
}
