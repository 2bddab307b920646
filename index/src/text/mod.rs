//! Text analysis shared by indexing, querying and matching.
//!
//! BM25 needs one analyzer used identically at index and query time ([`analyzer`],
//! registered under [`ANALYZER`]); passages need the same terms to show which query terms
//! they hold ([`terms`]); phrase checks, query parsing and near-duplicate detection need
//! a lighter normalisation that keeps every word ([`normalize_for_match`]). Arabic is a
//! first-class language throughout: vowel marks and spelling variants never split or
//! distinguish words.
//!
//! Unicode (`unicode.rs`), the same on every side (index, query, phrases, passages):
//! combining marks stay inside their word, and each word is put in NFKC (`ﬁnal` =
//! `final`, `cafe` + U+0301 = `café`). Decision per script: **Latin diacritics fold**
//! (`Kraków` ≡ `krakow`, `résumé` ≡ `resume`; ł ø đ → l o d; ß æ œ stay letters), since
//! English stemming knows no accents and people type names without them; **Arabic**
//! drops its marks and unifies alef, ya and ta marbuta (`arabic.rs`); **Greek,
//! Cyrillic and other scripts** keep their marks, which are part of the spelling there.
//!
//! Scripts written without spaces between words (Han, Hiragana, Katakana, Hangul, Thai,
//! Lao, Khmer, Myanmar: `unspaced.rs`) are indexed as overlapping bigrams of their
//! grapheme clusters, as Lucene's CJK analyser does, so a two-character query finds a
//! page; phrases match them unit by unit and highlights mark the bigrams a passage holds.
//! Spaced scripts (Latin, Cyrillic, Greek, Devanagari, Hebrew, Arabic, …) are words, their
//! combining marks (Devanagari's vowel signs and virama included) inside the word.
//! A change to what the analyser makes is a new [`crate::bm25::ANALYZER_VERSION`]:
//! older segments get their BM25 index rebuilt when opened.

mod arabic;
mod held;
mod highlight;
mod matching;
pub mod query;
mod simhash;
mod tokenizer;
pub(crate) mod unicode;
mod unspaced;
mod weights;

use std::cell::RefCell;

use tantivy::tokenizer::{Language, LowerCaser, RawTokenizer, RemoveLongFilter, Stemmer, StopWordFilter, TextAnalyzer, Tokenizer, TokenizerManager};

pub use arabic::{fold_arabic, is_arabic_mark, normalize_arabic, ArabicNormalizer};
pub use held::{held_terms, Held};
pub use highlight::{term_spans, Highlighter, Span};
pub use matching::{contains_phrase, normalize_for_match};
pub use query::{parse, Intent, ParsedQuery};
pub use simhash::{near_duplicate, simhash, NEAR_DUPLICATE_BITS};
pub use tokenizer::{QuarryTokenStream, QuarryTokenizer};
pub use unicode::{is_word_char, normalize_word};
pub use unspaced::is_unspaced;
pub use weights::{weighted_terms, EMPHASIS};

/// The name [`analyzer`] is registered under in a tantivy index's tokenizer manager.
pub const ANALYZER: &str = "quarry";

/// Tokens of this many bytes or more are dropped (base64 blobs, hashes, URLs).
const MAX_TOKEN_BYTES: usize = 40;

/// Quarry's BM25 analyzer: words (Unicode-normalised; unspaced scripts as bigrams), long ones dropped, lowercased, Arabic-normalised,
/// English stop words removed, English-stemmed. The shape of tantivy's `en_stem`, which
/// scores nDCG@10 0.684 on SciFact, with Arabic-aware word splitting.
pub fn analyzer() -> TextAnalyzer {
    filtered(QuarryTokenizer::default())
}

/// `tokenizer`'s tokens through the analyser's filters.
fn filtered<T: Tokenizer>(tokenizer: T) -> TextAnalyzer {
    let stop_words = StopWordFilter::new(Language::English).expect("tantivy always has an English stop-word list");
    TextAnalyzer::builder(tokenizer)
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(LowerCaser)
        .filter(ArabicNormalizer)
        .filter(stop_words)
        .filter(Stemmer::new(Language::English))
        .build()
}

/// Registers [`analyzer`] as [`ANALYZER`] (e.g. `register(index.tokenizers())`).
pub fn register(manager: &TokenizerManager) {
    manager.register(ANALYZER, analyzer());
}

thread_local! {
    static THREAD_ANALYZER: RefCell<TextAnalyzer> = RefCell::new(analyzer());
    static THREAD_TOKEN: RefCell<TextAnalyzer> = RefCell::new(filtered(RawTokenizer::default()));
}

/// The index term of one token the tokenizer gave ([`QuarryTokenizer`]'s text, already
/// normalised), as [`analyzer`] makes it: `None` for a stop word or a long token. Not
/// [`terms`] of the token's text: a normalised token need not split again as it did
/// (Thai `ำ` decomposes to two characters, `½` to `1⁄2`).
pub(crate) fn term_of(token: &str) -> Option<String> {
    THREAD_TOKEN.with_borrow_mut(|analyzer| {
        let mut out = None;
        analyzer.token_stream(token).process(&mut |t| out = Some(t.text.clone()));
        out
    })
}

/// The index terms of `text` in order, exactly as [`analyzer`] produces them.
pub fn terms(text: &str) -> Vec<String> {
    THREAD_ANALYZER.with_borrow_mut(|analyzer| {
        let mut out = Vec::new();
        analyzer.token_stream(text).process(&mut |t| out.push(t.text.clone()));
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analyzes_english_like_en_stem() {
        assert_eq!(terms("The Running dogs are in the Gardens!"), ["run", "dog", "garden"]);
        assert!(terms("").is_empty());
    }

    #[test]
    fn drops_tokens_of_forty_bytes_or_more() {
        let kept = "y".repeat(MAX_TOKEN_BYTES - 1);
        let text = format!("keep {} {kept}", "x".repeat(MAX_TOKEN_BYTES));
        assert_eq!(terms(&text), ["keep", kept.as_str()]);
    }

    #[test]
    fn analyzes_vocalised_and_plain_arabic_alike() {
        let vocalised = terms("قَالَ رَسُولُ ٱللَّهِ فِي ٱلْمَدْرَسَةِ");
        let plain = terms("قال رسول الله في المدرسه");
        assert_eq!(vocalised, plain);
        assert_eq!(plain, ["قال", "رسول", "الله", "في", "المدرسه"]);
    }

    #[test]
    fn every_script_gets_terms_a_short_query_shares() {
        let has = |text: &str, query: &str| {
            let (page, query) = (terms(text), terms(query));
            !query.is_empty() && query.iter().all(|q| page.contains(q))
        };
        // Japanese, Chinese, Korean, Thai: a word inside a clause.
        assert!(has("東京都は日本の首都です。", "首都"));
        assert!(has("我们在北京大学学习中文。", "北京大学"));
        assert!(has("서울에서 한국어를 배웁니다.", "서울"));
        assert!(has("กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย", "เมืองหลวง"));
        // Spaced scripts: whole words with their marks.
        assert!(has("हिन्दी भारत की राजभाषा है", "हिन्दी"));
        assert!(has("Москва — столица России", "столица"));
        assert_eq!(terms("Москва"), ["москва"]);
        assert_eq!(terms("Ἀθῆναι πόλις"), terms("ἀθῆναι πόλις"));
        assert_eq!(terms("Ἀθῆναι πόλις").len(), 2);
        let hebrew = terms("שָׁלוֹם עולם");
        assert_eq!(hebrew.len(), 2);
        assert!(hebrew[0].chars().count() > 4, "the points stay in the word: {hebrew:?}");
        // A lone CJK character is a term of its own; mixed runs split at the script.
        assert_eq!(terms("猫"), ["猫"]);
        assert_eq!(terms("東京2020年"), ["東京", "2020", "年"]);
        // Thai's ำ decomposes in NFKC; its page is found as its query is analysed alike.
        assert!(has("ฉันทำงานที่กรุงเทพ", "ทำงาน"));
    }

    #[test]
    fn offsets_point_into_the_original_text() {
        let text = "Ab, مُحَمَّد!";
        let mut analyzer = analyzer();
        let mut stream = analyzer.token_stream(text);
        let mut spans = Vec::new();
        while let Some(t) = stream.next() {
            spans.push(&text[t.offset_from..t.offset_to]);
        }
        assert_eq!(spans, ["Ab", "مُحَمَّد"]);
    }
}
