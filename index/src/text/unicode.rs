//! Unicode normalisation of words, shared by the tokenizer (so BM25's index and query
//! terms), phrase matching and passages' matched terms.
//!
//! The same word reaches us in several encodings: `café` precomposed or as `cafe` +
//! U+0301, `ﬁnal` with the U+FB01 ligature, fullwidth `ｆｉｎａｌ`. Each word is put in
//! NFKC, so those are one word. Then, the decision for Quarry's analyser (English
//! stemming, Arabic normalisation): **Latin diacritics fold**: a combining mark (U+0300–
//! U+036F) on a Latin letter is dropped, and ł, ø, đ become l, o, d, so `Kraków` ≡
//! `krakow` and `résumé` ≡ `resume`. People type names and loan words without their
//! accents far more often than two words differ only by one, and the English stemmer
//! knows no accents. Letters that are not a base plus a mark stay (ß, æ, œ, þ), and
//! marks on other scripts stay (Greek, Cyrillic, Devanagari: there they are part of the
//! spelling); Arabic marks are dropped as before (`arabic.rs`).

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

use super::arabic::is_arabic_mark;

/// Whether `c` belongs inside a word: a letter or digit, an Arabic mark, or any
/// combining mark (Unicode category M), so `cafe` + U+0301 is one word, not `cafe`.
pub fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || is_arabic_mark(c) || (!c.is_ascii() && is_combining_mark(c))
}

/// Appends to `out` the normalised form of `word` (a run of [`is_word_char`]s): Arabic
/// marks dropped, NFKC, Latin diacritics folded. ASCII is copied as it is.
pub fn normalize_word(word: &str, out: &mut String) {
    if word.is_ascii() {
        out.push_str(word);
        return;
    }
    let letters = word.chars().filter(|&c| !is_arabic_mark(c));
    let mut latin = false;
    let folded = letters.nfkd().filter_map(|c| {
        if is_combining_mark(c) {
            return (!(latin && ('\u{0300}'..='\u{036F}').contains(&c))).then_some(c);
        }
        latin = is_latin(c);
        Some(match c {
            'ł' => 'l',
            'Ł' => 'L',
            'ø' => 'o',
            'Ø' => 'O',
            'đ' => 'd',
            'Đ' => 'D',
            other => other,
        })
    });
    out.extend(folded.nfc());
}

/// Latin letters: ASCII, Latin-1 and Latin Extended A/B, IPA, Latin Extended Additional.
fn is_latin(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c, '\u{00C0}'..='\u{024F}' | '\u{1E00}'..='\u{1EFF}')
}

/// Whether the normalised form of `c`, a character that is not ASCII, holds ASCII
/// (`é` → `e`, `ﬁ` → `fi`, `Ａ` → `A`) or `c` is a mark dropped or folded inside a word.
pub fn normalizes_to_ascii(c: char) -> bool {
    if c.is_ascii() || !is_word_char(c) {
        return false;
    }
    if is_arabic_mark(c) || is_combining_mark(c) {
        return true;
    }
    let mut s = String::new();
    normalize_word(c.encode_utf8(&mut [0; 4]), &mut s);
    s.bytes().any(|b| b.is_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(w: &str) -> String {
        let mut s = String::new();
        normalize_word(w, &mut s);
        s
    }

    #[test]
    fn composed_decomposed_ligature_and_fullwidth_forms_are_one_word() {
        assert_eq!(norm("cafe\u{0301}"), "cafe");
        assert_eq!(norm("café"), "cafe");
        assert_eq!(norm("\u{FB01}nal"), "final");
        assert_eq!(norm("ｆｉｎａｌ"), "final");
        assert_eq!(norm("Kraków"), "Krakow");
        assert_eq!(norm("Łódź"), "Lodz");
    }

    #[test]
    fn other_scripts_keep_their_marks_and_letters_stay() {
        assert_eq!(norm("Straße"), "Straße");
        assert_eq!(norm("ἀλήθεια"), "ἀλήθεια");
        assert_eq!(norm("й"), "й");
        assert_eq!(norm("हिन्दी"), "हिन्दी");
        assert_eq!(norm("plain"), "plain");
    }

    #[test]
    fn marks_are_word_characters() {
        assert!(is_word_char('\u{0301}'));
        assert!(!'\u{0301}'.is_alphanumeric());
        assert!(is_word_char('\u{06DF}'));
        assert!(!is_word_char('-') && !is_word_char(' '));
        assert!(normalizes_to_ascii('é') && normalizes_to_ascii('\u{FB01}') && normalizes_to_ascii('\u{0301}'));
        assert!(!normalizes_to_ascii('ß') && !normalizes_to_ascii('α') && !normalizes_to_ascii('a'));
    }
}
