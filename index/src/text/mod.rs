//! PLACEHOLDER until the text module lands: tantivy's English stemming analyser.
use tantivy::tokenizer::{Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer, TokenStream};

pub const ANALYZER: &str = "quarry";

pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(StopWordFilter::new(Language::English).expect("english stopwords"))
        .filter(Stemmer::new(Language::English))
        .build()
}

pub fn terms(text: &str) -> Vec<String> {
    let mut a = analyzer();
    let mut s = a.token_stream(text);
    let mut out = Vec::new();
    while s.advance() {
        out.push(s.token().text.clone());
    }
    out
}

pub fn normalize_for_match(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(w.chars().flat_map(char::to_lowercase));
    }
    out
}

pub fn contains_phrase(hay: &str, phrase: &str) -> bool {
    if phrase.is_empty() {
        return true;
    }
    hay.match_indices(phrase).any(|(i, _)| {
        let before = i == 0 || hay.as_bytes()[i - 1] == b' ';
        let end = i + phrase.len();
        before && (end == hay.len() || hay.as_bytes()[end] == b' ')
    })
}

pub fn simhash(text: &str) -> u64 {
    let norm = normalize_for_match(text);
    let words: Vec<&str> = norm.split(' ').collect();
    let mut acc = [0i32; 64];
    for w in words.windows(3.min(words.len()).max(1)) {
        let mut h: u64 = 0xcbf29ce484222325;
        for b in w.join(" ").bytes() {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
        }
        for (i, a) in acc.iter_mut().enumerate() {
            *a += if h >> i & 1 == 1 { 1 } else { -1 };
        }
    }
    acc.iter().enumerate().fold(0, |s, (i, &a)| if a > 0 { s | 1 << i } else { s })
}

pub fn near_duplicate(a: u64, b: u64) -> bool {
    (a ^ b).count_ones() <= 3
}
