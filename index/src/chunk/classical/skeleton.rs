//! The page as the cues read it: harakat, tatweel and direction marks dropped, letter
//! variants folded, Arabic-Indic digits as ASCII; each byte mapped back to the page.
//!
//! Printed Arabic writes the same word many ways (حَدَّثَنَا, حدّثنا, حـدثنا, with an RLM
//! before it); the cues must match them all while every chunk still slices the original
//! page. So the cues run over this folded copy, and its offsets map back.

/// One line of the page: its byte range in the page (without `\n`) and in the skeleton.
#[derive(Clone, Copy, Debug)]
pub(super) struct Line {
    pub page: (usize, usize),
    pub sk: (usize, usize),
}

pub(super) struct Skeleton {
    pub text: String,
    /// `orig[i]` is the page offset of the char the skeleton's byte `i` belongs to;
    /// `orig[text.len()]` is the page's length.
    orig: Vec<u32>,
    pub lines: Vec<Line>,
}

impl Skeleton {
    pub fn new(page: &str) -> Skeleton {
        let mut text = String::with_capacity(page.len());
        let mut orig = Vec::with_capacity(page.len() + 1);
        let mut lines = Vec::new();
        let (mut line_page, mut line_sk) = (0, 0);
        for (at, c) in page.char_indices() {
            if c == '\n' {
                lines.push(Line { page: (line_page, at), sk: (line_sk, text.len()) });
                (line_page, line_sk) = (at + 1, text.len() + 1);
            }
            if let Some(f) = fold(c) {
                text.push(f);
                orig.extend(std::iter::repeat_n(offset(at), f.len_utf8()));
            }
        }
        lines.push(Line { page: (line_page, page.len()), sk: (line_sk, text.len()) });
        orig.push(offset(page.len()));
        Skeleton { text, orig, lines }
    }

    /// The page offset of skeleton offset `i`.
    pub fn page_at(&self, i: usize) -> usize {
        self.orig[i] as usize
    }

    pub fn line(&self, line: &Line) -> &str {
        &self.text[line.sk.0..line.sk.1]
    }
}

fn offset(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// What `c` reads as for the cues; `None` for marks that do not change the word.
pub(super) fn fold(c: char) -> Option<char> {
    Some(match c {
        // harakat, superscript alef, Quranic annotation marks (not ۝ U+06DD nor ۞ U+06DE)
        '\u{064B}'..='\u{065F}' | '\u{0670}' | '\u{06D6}'..='\u{06DC}' | '\u{06DF}'..='\u{06E8}' | '\u{06EA}'..='\u{06ED}' => return None,
        // tatweel, zero-width and direction marks, BOM, soft hyphen
        '\u{0640}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{061C}' | '\u{FEFF}' | '\u{00AD}' => {
            return None
        }
        'أ' | 'إ' | 'آ' | 'ٱ' | 'ٲ' | 'ٳ' => 'ا',
        'ى' | 'ی' => 'ي',
        'ة' => 'ه',
        'ک' => 'ك',
        '٠'..='٩' => char::from(b'0' + (c as u32 - '٠' as u32) as u8),
        '۰'..='۹' => char::from(b'0' + (c as u32 - '۰' as u32) as u8),
        _ => c,
    })
}

/// `s` folded (for writing cue lists in their ordinary spelling).
pub(super) fn fold_str(s: &str) -> String {
    s.chars().filter_map(fold).collect()
}

pub(super) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
}

/// A cue: folded words separated by any whitespace in the text; `prefix` lets the last
/// word run on (صحح matches صححه), otherwise it must end at a word boundary.
pub(super) struct Phrase {
    words: Vec<String>,
    prefix: bool,
}

impl Phrase {
    pub fn new(spelling: &str) -> Phrase {
        let prefix = spelling.ends_with('*');
        let words = fold_str(spelling.trim_end_matches('*')).split_whitespace().map(str::to_string).collect();
        Phrase { words, prefix }
    }

    /// The end of the phrase if it starts exactly at `at` in `s`.
    pub fn at(&self, s: &str, at: usize) -> Option<usize> {
        let mut i = at;
        for (n, word) in self.words.iter().enumerate() {
            if n > 0 {
                let gap = s[i..].len() - s[i..].trim_start().len();
                if gap == 0 {
                    return None;
                }
                i += gap;
            }
            if !s[i..].starts_with(word.as_str()) {
                return None;
            }
            i += word.len();
        }
        let bounded = self.prefix || !s[i..].chars().next().is_some_and(is_word_char);
        bounded.then_some(i)
    }
}

/// The first of `phrases` that starts at `at`, and its end.
pub(super) fn any_at(phrases: &[Phrase], s: &str, at: usize) -> Option<usize> {
    phrases.iter().find_map(|p| p.at(s, at))
}

/// The start offsets of the words of `s`.
pub(super) fn word_starts(s: &str) -> impl Iterator<Item = usize> + '_ {
    let mut prev_word = false;
    s.char_indices().filter_map(move |(at, c)| {
        let word = is_word_char(c);
        let start = word && !prev_word;
        prev_word = word;
        start.then_some(at)
    })
}

/// The first place in `s` where one of `phrases` starts at a word start: (start, end).
pub(super) fn find_any(phrases: &[Phrase], s: &str) -> Option<(usize, usize)> {
    word_starts(s).find_map(|at| any_at(phrases, s, at).map(|end| (at, end)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_marks_and_variants_and_maps_back() {
        let page = "حَدَّثَنَا\r\nأَخْبَـــرَنا ‏١٢";
        let sk = Skeleton::new(page);
        assert_eq!(sk.text, "حدثنا\r\nاخبرنا 12");
        assert_eq!(sk.lines.len(), 2);
        assert_eq!(sk.line(&sk.lines[1]), "اخبرنا 12");
        assert_eq!(&page[sk.lines[1].page.0..sk.lines[1].page.1], "أَخْبَـــرَنا ‏١٢");
        let two = sk.text.find("12").unwrap();
        assert_eq!(&page[sk.page_at(two)..], "١٢");
        assert_eq!(sk.page_at(sk.text.len()), page.len());
    }

    #[test]
    fn phrases_span_any_whitespace_and_respect_boundaries() {
        let p = Phrase::new("قال أبو عيسى");
        let s = fold_str("وقَالَ  ‏ ‏أَبُو عِيسَى هذا");
        assert_eq!(find_any(std::slice::from_ref(&p), &s).map(|(a, _)| a), None, "وقال is another word");
        let s = fold_str("ثم قَالَ  ‏ ‏أَبُو عِيسَى هذا");
        assert!(find_any(std::slice::from_ref(&p), &s).is_some());
        let stem = [Phrase::new("صحح*")];
        assert!(find_any(&stem, &fold_str("وقد صححه الألباني")).is_some());
        assert!(find_any(&[Phrase::new("صحيح")], "صحيحه").is_none());
    }
}
