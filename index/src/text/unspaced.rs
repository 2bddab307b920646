//! Scripts written without spaces between words: Chinese, Japanese, Korean's Hangul
//! (spaced, but its particles and endings glued to the word), Thai, Lao, Khmer and
//! Myanmar. A run of such text between punctuation is a clause, not a word, so keeping it
//! whole (as the tokenizer keeps a run of letters) makes a page findable only by the
//! whole clause. Each run is cut into **units** (extended grapheme clusters, so a Thai
//! consonant keeps its vowel and tone marks, a decomposed Hangul syllable its jamo, a
//! kana its voicing mark), and the analyser indexes **overlapping bigrams** of units, a
//! lone unit as itself: what Lucene's `CJKAnalyzer` and Elasticsearch's `cjk_bigram` do
//! for CJK, extended to the other unspaced scripts. A query of two to four characters
//! then finds every page holding them, with no dictionary to ship or keep current;
//! BM25's IDF favours the rare bigrams that carry the meaning. (A dictionary segmenter
//! — ICU4X's, lindera, jieba-rs — would add megabytes of data and a per-language
//! vocabulary; bigrams recall every word a dictionary does not know.)
//!
//! Letters of spaced scripts inside such a run (`東京2020年`, `iPhone用`) stay words of
//! their own, as Lucene's tokenizer splits them at the script change.

use unicode_segmentation::UnicodeSegmentation;

/// Whether `c` belongs to a script indexed by bigrams of its units: Han (with the
/// ideographic iteration marks and radicals), Hiragana, Katakana (and their halfwidth
/// and supplementary forms), Bopomofo, Hangul (syllables and jamo), Thai, Lao, Khmer and
/// Myanmar.
pub fn is_unspaced(c: char) -> bool {
    !c.is_ascii()
        && matches!(c,
            '\u{0E00}'..='\u{0EFF}'         // Thai, Lao
            | '\u{1000}'..='\u{109F}'       // Myanmar
            | '\u{1100}'..='\u{11FF}'       // Hangul jamo
            | '\u{1780}'..='\u{17FF}'       // Khmer
            | '\u{19E0}'..='\u{19FF}'       // Khmer symbols
            | '\u{2E80}'..='\u{2FDF}'       // CJK and Kangxi radicals
            | '\u{3005}'..='\u{3007}'       // 々 〆 〇
            | '\u{3021}'..='\u{3029}'       // Hangzhou numerals
            | '\u{3031}'..='\u{3035}'       // kana repeat marks
            | '\u{3038}'..='\u{303C}'
            | '\u{3040}'..='\u{30FF}'       // Hiragana, Katakana
            | '\u{3100}'..='\u{31BF}'       // Bopomofo, Hangul compatibility jamo
            | '\u{31F0}'..='\u{31FF}'       // Katakana phonetic extensions
            | '\u{3400}'..='\u{4DBF}'       // Han extension A
            | '\u{4E00}'..='\u{9FFF}'       // Han
            | '\u{A960}'..='\u{A97F}'       // Hangul jamo extended A
            | '\u{A9E0}'..='\u{A9FF}'       // Myanmar extended B
            | '\u{AA60}'..='\u{AA7F}'       // Myanmar extended A
            | '\u{AC00}'..='\u{D7FF}'       // Hangul syllables, jamo extended B
            | '\u{F900}'..='\u{FAFF}'       // Han compatibility
            | '\u{FF66}'..='\u{FFDC}'       // halfwidth Katakana and Hangul
            | '\u{1AFF0}'..='\u{1B16F}'     // kana supplements
            | '\u{20000}'..='\u{3FFFF}') // Han extensions B and beyond
}

/// What a piece of a run of word characters is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece {
    /// A word of a spaced script, analysed as any word.
    Word,
    /// One unit (grapheme cluster) of an unspaced script.
    Unit,
}

/// The pieces of `run` (a run of word characters holding an [`is_unspaced`] character),
/// as byte ranges of `run` in order: each unit of an unspaced script, and each stretch of
/// other characters between them as one word.
pub fn pieces(run: &str) -> Vec<(Piece, usize, usize)> {
    let mut out = Vec::new();
    let mut word = None;
    for (at, g) in run.grapheme_indices(true) {
        if g.chars().next().is_some_and(is_unspaced) {
            if let Some(from) = word.take() {
                out.push((Piece::Word, from, at));
            }
            out.push((Piece::Unit, at, at + g.len()));
        } else if word.is_none() {
            word = Some(at);
        }
    }
    if let Some(from) = word {
        out.push((Piece::Word, from, run.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(run: &str) -> Vec<(Piece, &str)> {
        pieces(run).into_iter().map(|(p, a, b)| (p, &run[a..b])).collect()
    }

    #[test]
    fn units_are_grapheme_clusters_and_other_letters_words() {
        use Piece::*;
        assert_eq!(texts("東京2020年"), [(Unit, "東"), (Unit, "京"), (Word, "2020"), (Unit, "年")]);
        assert_eq!(texts("iPhone用"), [(Word, "iPhone"), (Unit, "用")]);
        // Thai: a consonant keeps its vowel and tone marks.
        assert_eq!(texts("ที่นี่"), [(Unit, "ที่"), (Unit, "นี่")]);
        // Hangul written as conjoining jamo is one unit per syllable; a kana with a
        // combining voicing mark is one unit.
        assert_eq!(
            texts("\u{1112}\u{1161}\u{11AB}\u{1100}\u{116E}\u{11A8}"),
            [(Unit, "\u{1112}\u{1161}\u{11AB}"), (Unit, "\u{1100}\u{116E}\u{11A8}")]
        );
        assert_eq!(texts("か\u{3099}"), [(Unit, "か\u{3099}")]);
        assert!(is_unspaced('한') && is_unspaced('ก') && is_unspaced('ｶ') && is_unspaced('𠀀'));
        assert!(!is_unspaced('a') && !is_unspaced('ж') && !is_unspaced('ह') && !is_unspaced('ب') && !is_unspaced('Ａ'));
    }
}
