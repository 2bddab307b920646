//! Which language a collection holds, for choosing its embedder: English text is
//! embedded best by an English model, everything else and mixed scripts by the
//! multilingual one. Read from the first document's text by `whatlang` (trigram
//! profiles of 69 languages, no model files), or from `settings.language`.
//!
//! Codes are ISO 639-3 (whatlang's): "eng", "jpn", …; "mul" when no script holds
//! nine tenths of the letters, "und" when there are too few letters to say.

/// How many bytes of a document's text are read: enough for trigram statistics, and
/// a long document costs no more than a page.
const SAMPLE_BYTES: usize = 8 * 1024;

/// Fewer letters than this say nothing reliable about a language.
const MIN_LETTERS: usize = 24;

/// The language of `text` (its first [`SAMPLE_BYTES`]).
pub fn detect(text: &str) -> String {
    let sample = &text[..floor_boundary(text, SAMPLE_BYTES)];
    let (mut letters, mut latin) = (0usize, 0usize);
    for c in sample.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        latin += usize::from(is_latin(c));
    }
    if letters < MIN_LETTERS {
        return "und".into();
    }
    // Mixed scripts: a page of English with a fifth of it in Arabic is a multilingual
    // collection's, whatever its majority.
    let major = latin.max(letters - latin);
    if major * 10 < letters * 9 {
        return "mul".into();
    }
    match whatlang::detect(sample) {
        Some(info) => info.lang().code().to_owned(),
        None => "und".into(),
    }
}

/// A language as `settings.language` gives it, normalised to the codes [`detect`]
/// records: an ISO 639-1 or 639-3 code, or a BCP 47 tag whose primary subtag is one
/// ("en", "en-GB", "eng", "ja", "mul"). `None` when it names no language.
pub fn parse(tag: &str) -> Option<String> {
    let primary = tag.split(['-', '_']).next()?.to_ascii_lowercase();
    match primary.len() {
        2 => whatlang::Lang::all().iter().find(|l| two_letter(**l) == primary).map(|l| l.code().to_owned()),
        3 if matches!(primary.as_str(), "mul" | "und") => Some(primary),
        3 => whatlang::Lang::from_code(&primary).map(|l| l.code().to_owned()),
        _ => None,
    }
}

/// Whether a recorded language is English.
pub fn is_english(code: &str) -> bool {
    code == whatlang::Lang::Eng.code()
}

fn is_latin(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c, '\u{00C0}'..='\u{024F}' | '\u{1E00}'..='\u{1EFF}')
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// ISO 639-1 of each language whatlang knows (every one has a code).
fn two_letter(l: whatlang::Lang) -> &'static str {
    use whatlang::Lang::*;
    match l {
        Epo => "eo",
        Eng => "en",
        Rus => "ru",
        Cmn => "zh",
        Spa => "es",
        Por => "pt",
        Ita => "it",
        Ben => "bn",
        Fra => "fr",
        Deu => "de",
        Ukr => "uk",
        Kat => "ka",
        Ara => "ar",
        Hin => "hi",
        Jpn => "ja",
        Heb => "he",
        Yid => "yi",
        Pol => "pl",
        Amh => "am",
        Jav => "jv",
        Kor => "ko",
        Nob => "nb",
        Dan => "da",
        Swe => "sv",
        Fin => "fi",
        Tur => "tr",
        Nld => "nl",
        Hun => "hu",
        Ces => "cs",
        Ell => "el",
        Bul => "bg",
        Bel => "be",
        Mar => "mr",
        Kan => "kn",
        Ron => "ro",
        Slv => "sl",
        Hrv => "hr",
        Srp => "sr",
        Mkd => "mk",
        Lit => "lt",
        Lav => "lv",
        Est => "et",
        Tam => "ta",
        Vie => "vi",
        Urd => "ur",
        Tha => "th",
        Guj => "gu",
        Uzb => "uz",
        Pan => "pa",
        Aze => "az",
        Ind => "id",
        Tel => "te",
        Pes => "fa",
        Mal => "ml",
        Ori => "or",
        Mya => "my",
        Nep => "ne",
        Sin => "si",
        Khm => "km",
        Tuk => "tk",
        Aka => "ak",
        Zul => "zu",
        Sna => "sn",
        Afr => "af",
        Lat => "la",
        Slk => "sk",
        Cat => "ca",
        Tgl => "tl",
        Hye => "hy",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_prose_is_english_and_other_scripts_are_not() {
        let en = "The committee reviewed the quarterly report and asked the treasurer to explain why travel costs rose.";
        assert_eq!(detect(en), "eng");
        assert!(is_english(&detect(en)));
        assert_eq!(detect("東京都は日本の首都であり、世界で最も人口の多い都市圏の一つである。江戸時代から政治の中心地だった。"), "jpn");
        assert_eq!(detect("Der Ausschuss prüfte den Quartalsbericht und bat den Schatzmeister, den Anstieg der Reisekosten zu erklären."), "deu");
        assert_eq!(detect("Москва является столицей России и крупнейшим городом страны по численности населения."), "rus");
        assert_eq!(detect("ok"), "und", "too few letters");
        assert_eq!(detect(""), "und");
    }

    #[test]
    fn a_page_of_two_scripts_is_mixed() {
        let text =
            "The hadith collection of al-Bukhari is quoted below with its chain. حدثنا عبد الله بن يوسف قال أخبرنا مالك عن نافع عن عبد الله بن عمر";
        assert_eq!(detect(text), "mul");
    }

    #[test]
    fn a_long_document_is_read_from_its_first_bytes_only_and_never_split_inside_a_letter() {
        let text = "é".repeat(SAMPLE_BYTES) + &"x".repeat(100);
        assert_eq!(floor_boundary(&text, SAMPLE_BYTES + 1), SAMPLE_BYTES);
        let _ = detect(&text);
    }

    #[test]
    fn tags_are_read_as_their_primary_language() {
        assert_eq!(parse("en").as_deref(), Some("eng"));
        assert_eq!(parse("en-GB").as_deref(), Some("eng"));
        assert_eq!(parse("EN_us").as_deref(), Some("eng"));
        assert_eq!(parse("eng").as_deref(), Some("eng"));
        assert_eq!(parse("ja").as_deref(), Some("jpn"));
        assert_eq!(parse("zh-Hant").as_deref(), Some("cmn"));
        assert_eq!(parse("mul").as_deref(), Some("mul"));
        assert_eq!(parse("english"), None);
        assert_eq!(parse("xx"), None);
        assert_eq!(parse(""), None);
    }
}
