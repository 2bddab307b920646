//! Text reduced to its words, for checking that a quoted phrase really occurs on a page.
//!
//! BM25 finds pages holding a phrase's terms; whether they hold the phrase itself is a
//! plain substring test once both sides are reduced to lowercase, Arabic-normalised words
//! separated by single spaces, each word normalised as the analyser normalises it
//! (`unicode.rs`). Stemming is left out on purpose: a quoted phrase asks for those words.

use super::arabic::fold_arabic;
use super::unicode::{is_word_char, normalize_word};
use super::unspaced::{is_unspaced, pieces, Piece};

/// Lowercase, Arabic-normalised words of `text` joined by single spaces: words are the
/// tokenizer's runs, each normalised as it normalises them (NFKC, Latin diacritics
/// folded, marks kept inside a word), then every run of characters that are not
/// alphanumeric becomes one space, and none lead or trail. In scripts written without
/// spaces (`unspaced.rs`) each unit (grapheme cluster, marks and all) is a word, so a
/// quoted `東京都` is found inside `東京都に住む` as it is in the index, unit by unit.
pub fn normalize_for_match(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    for run in text.split(|c| !is_word_char(c)) {
        if run.is_ascii() {
            push_word(&mut out, run, false);
            continue;
        }
        if run.contains(is_unspaced) {
            for (piece, from, to) in pieces(run) {
                word.clear();
                normalize_word(&run[from..to], &mut word);
                push_word(&mut out, &word, piece == Piece::Unit);
            }
            continue;
        }
        word.clear();
        normalize_word(run, &mut word);
        push_word(&mut out, &word, false);
    }
    out
}

/// Appends `word` (normalised) lowercased and Arabic-folded after a space; characters
/// that are not alphanumeric split it, unless it is one `whole` unit.
#[inline]
fn push_word(out: &mut String, word: &str, whole: bool) {
    let mut gap = true;
    for c in word.chars() {
        let Some(c) = fold_arabic(c) else { continue };
        if !whole && !c.is_alphanumeric() {
            gap = true;
            continue;
        }
        if gap && !out.is_empty() {
            out.push(' ');
        }
        gap = false;
        out.extend(c.to_lowercase());
    }
}

/// True when `phrase` occurs in `haystack` as whole words; both must already be
/// [`normalize_for_match`]ed. An empty phrase is in every haystack.
pub fn contains_phrase(haystack: &str, phrase: &str) -> bool {
    if phrase.is_empty() {
        return true;
    }
    haystack.match_indices(phrase).any(|(at, _)| {
        let before = haystack[..at].chars().next_back();
        let after = haystack[at + phrase.len()..].chars().next();
        before.is_none_or(|c| c == ' ') && after.is_none_or(|c| c == ' ')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduces_text_to_words() {
        assert_eq!(normalize_for_match("  Hello,   WORLD!! (tax-payer)\r\n"), "hello world tax payer");
        assert_eq!(normalize_for_match("قالَ: «أَحْمَدُ»"), "قال احمد");
        assert_eq!(normalize_for_match("ـــ...!"), "");
    }

    #[test]
    fn phrases_match_whole_words_only() {
        let page = normalize_for_match("The heart-rate was 72; blood pressure normal.");
        let has = |p: &str| contains_phrase(&page, &normalize_for_match(p));
        assert!(has("heart rate"));
        assert!(has("Blood Pressure"));
        assert!(has("the heart"));
        assert!(has("72 blood"));
        assert!(!has("art rate"));
        assert!(!has("blood press"));
        assert!(!has("pressure normally"));
        assert!(has(""));
    }

    #[test]
    fn phrases_match_across_unicode_forms_as_the_analyser_does() {
        let page = normalize_for_match("The \u{FB01}nal café in Kraków");
        assert_eq!(page, "the final cafe in krakow");
        assert!(contains_phrase(&page, &normalize_for_match("final cafe\u{0301}")));
        assert!(contains_phrase(&page, &normalize_for_match("Krakow")));
    }

    #[test]
    fn unspaced_phrases_match_unit_by_unit() {
        let page = normalize_for_match("「東京都」に住む。iPhone用 ภาษาไทยที่นี่");
        assert_eq!(page, "東 京 都 に 住 む iphone 用 ภ า ษ า ไ ท ย ที่ นี่");
        let has = |p: &str| contains_phrase(&page, &normalize_for_match(p));
        assert!(has("東京都") && has("京都に") && has("iPhone用") && has("ที่นี่"));
        assert!(!has("東都") && !has("ที่นี"));
    }

    #[test]
    fn arabic_phrases_match_across_spellings() {
        let page = normalize_for_match("قَالَ رَسُولُ ٱللَّهِ صلى الله عليه وسلم");
        assert!(contains_phrase(&page, &normalize_for_match("رسول الله")));
        assert!(!contains_phrase(&page, &normalize_for_match("سول الله")));
    }
}
