//! Arabic orthographic normalisation.
//!
//! The same Arabic word is written with or without short vowels (harakat), with or without
//! tatweel stretching, and with several spellings of alef, ya and ta marbuta. Matching,
//! BM25 and phrase checks must treat those spellings as one word, so they all pass through
//! [`normalize_arabic`] (on text) or [`ArabicNormalizer`] (on tokens).

use std::borrow::Cow;

use tantivy::tokenizer::{Token, TokenFilter, TokenStream, Tokenizer};

/// True for the Arabic marks written on top of letters (harakat, Quranic annotation marks,
/// the superscript alef) and for tatweel: characters that belong to a word but carry no
/// letter of it.
pub fn is_arabic_mark(c: char) -> bool {
    matches!(c,
        '\u{0610}'..='\u{061A}'
        | '\u{0640}'
        | '\u{064B}'..='\u{065F}'
        | '\u{0670}'
        | '\u{06D6}'..='\u{06DC}'
        | '\u{06DF}'..='\u{06E4}'
        | '\u{06E7}'..='\u{06E8}'
        | '\u{06EA}'..='\u{06ED}'
        | '\u{08D3}'..='\u{08E1}'
        | '\u{08E3}'..='\u{08FF}')
}

/// One character's normalised form: `None` drops it (a mark), otherwise its canonical
/// letter (alef variants → ا, ى → ي, ة → ه) or itself.
pub fn fold_arabic(c: char) -> Option<char> {
    if is_arabic_mark(c) {
        return None;
    }
    Some(match c {
        'أ' | 'إ' | 'آ' | 'ٱ' => 'ا',
        'ى' => 'ي',
        'ة' => 'ه',
        other => other,
    })
}

fn changes(c: char) -> bool {
    fold_arabic(c) != Some(c)
}

/// `s` with Arabic marks and tatweel removed and alef, ya and ta marbuta unified; borrowed
/// when nothing changes (always for ASCII).
pub fn normalize_arabic(s: &str) -> Cow<'_, str> {
    if s.is_ascii() || !s.chars().any(changes) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(s.chars().filter_map(fold_arabic).collect())
}

/// Token filter applying [`normalize_arabic`] to each token's text; a token left empty
/// (it held only marks) is dropped.
#[derive(Clone, Copy, Debug, Default)]
pub struct ArabicNormalizer;

impl TokenFilter for ArabicNormalizer {
    type Tokenizer<T: Tokenizer> = ArabicNormalizerTokenizer<T>;

    fn transform<T: Tokenizer>(self, inner: T) -> ArabicNormalizerTokenizer<T> {
        ArabicNormalizerTokenizer { inner }
    }
}

#[derive(Clone)]
pub struct ArabicNormalizerTokenizer<T> {
    inner: T,
}

impl<T: Tokenizer> Tokenizer for ArabicNormalizerTokenizer<T> {
    type TokenStream<'a> = ArabicNormalizerStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        ArabicNormalizerStream { tail: self.inner.token_stream(text) }
    }
}

pub struct ArabicNormalizerStream<S> {
    tail: S,
}

impl<S: TokenStream> TokenStream for ArabicNormalizerStream<S> {
    fn advance(&mut self) -> bool {
        while self.tail.advance() {
            let token = self.tail.token_mut();
            if let Cow::Owned(s) = normalize_arabic(&token.text) {
                token.text = s;
            }
            if !token.text.is_empty() {
                return true;
            }
        }
        false
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_marks_and_unifies_letters() {
        assert_eq!(normalize_arabic("مُحَمَّدٌ"), "محمد");
        assert_eq!(normalize_arabic("العـــربية"), "العربيه");
        assert_eq!(normalize_arabic("أحمد إسلام آمن ٱلله"), "احمد اسلام امن الله");
        assert_eq!(normalize_arabic("مستشفى مدرسة"), "مستشفي مدرسه");
        assert_eq!(normalize_arabic("هٰذا"), "هذا");
    }

    #[test]
    fn borrows_when_nothing_changes() {
        assert!(matches!(normalize_arabic("plain text"), Cow::Borrowed(_)));
        assert!(matches!(normalize_arabic("كتاب"), Cow::Borrowed(_)));
        assert!(matches!(normalize_arabic("كِتاب"), Cow::Owned(_)));
    }
}
