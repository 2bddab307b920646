//! The word splitter under Quarry's analyzer.
//!
//! tantivy's `SimpleTokenizer` ends a word at any character that is not alphanumeric.
//! Most Arabic harakat count as alphabetic, but several Quranic marks do not, and split a
//! vocalised word in two. [`QuarryTokenizer`] keeps every Arabic mark inside its word and
//! leaves it out of the token text, so `بِسۡمِ` and `بسم` are the same token; offsets
//! still point into the original text, marks included. Any other combining mark stays
//! inside its word too, and each word is normalised (NFKC, Latin diacritics folded:
//! `unicode.rs`), so `cafe` + U+0301 and `café` are one token. A run holding a script
//! written without spaces (CJK, Thai, …) becomes overlapping bigrams of its units, each
//! token's offsets spanning its two units (`unspaced.rs`); ASCII runs take none of
//! that path.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

use super::unicode::{is_word_char, normalize_word};
use super::unspaced::{is_unspaced, pieces, Piece};

#[derive(Clone, Debug, Default)]
pub struct QuarryTokenizer {
    token: Token,
}

pub struct QuarryTokenStream<'a> {
    text: &'a str,
    cursor: usize,
    token: &'a mut Token,
    /// Tokens of the last unspaced run still to give out, the next one last: byte
    /// offsets and text.
    pending: Vec<(usize, usize, String)>,
}

impl Tokenizer for QuarryTokenizer {
    type TokenStream<'a> = QuarryTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> QuarryTokenStream<'a> {
        self.token.reset();
        QuarryTokenStream { text, cursor: 0, token: &mut self.token, pending: Vec::new() }
    }
}

impl QuarryTokenStream<'_> {
    /// The byte range of the next run of word characters at or after the cursor.
    fn next_run(&self) -> Option<(usize, usize)> {
        let rest = &self.text[self.cursor..];
        let start = self.cursor + rest.find(is_word_char)?;
        let len = self.text[start..].find(|c| !is_word_char(c)).unwrap_or(self.text.len() - start);
        Some((start, start + len))
    }

    /// Queues the tokens of the run `start..end`, which holds an unspaced character:
    /// overlapping bigrams of each stretch of unspaced units (a lone unit as itself), and
    /// each word between them as a word. Kept out of line: Latin text never comes here.
    #[cold]
    #[inline(never)]
    fn split_unspaced(&mut self, start: usize, end: usize) {
        let run = &self.text[start..end];
        let mut units: Vec<(usize, usize, String)> = Vec::new();
        let pending = &mut self.pending;
        let flush = |units: &mut Vec<(usize, usize, String)>, pending: &mut Vec<(usize, usize, String)>| {
            match units.as_slice() {
                [] => {}
                [one] => pending.push(one.clone()),
                many => pending.extend(many.windows(2).map(|w| (w[0].0, w[1].1, format!("{}{}", w[0].2, w[1].2)))),
            }
            units.clear();
        };
        for (piece, from, to) in pieces(run) {
            let mut text = String::new();
            normalize_word(&run[from..to], &mut text);
            match piece {
                Piece::Word => {
                    flush(&mut units, pending);
                    if !text.is_empty() {
                        pending.push((start + from, start + to, text));
                    }
                }
                Piece::Unit if !text.is_empty() => units.push((start + from, start + to, text)),
                Piece::Unit => {}
            }
        }
        flush(&mut units, pending);
        pending.reverse();
    }

    /// Gives out the next queued token, if any.
    #[cold]
    #[inline(never)]
    fn emit_pending(&mut self) -> bool {
        let Some((from, to, text)) = self.pending.pop() else { return false };
        self.token.text = text;
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.position = self.token.position.wrapping_add(1);
        true
    }
}

impl TokenStream for QuarryTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if !self.pending.is_empty() && self.emit_pending() {
            return true;
        }
        self.token.text.clear();
        while let Some((start, end)) = self.next_run() {
            self.cursor = end;
            let run = &self.text[start..end];
            if run.is_ascii() {
                self.token.text.push_str(run);
            } else if run.contains(is_unspaced) {
                self.split_unspaced(start, end);
                if self.emit_pending() {
                    return true;
                }
                continue;
            } else {
                normalize_word(run, &mut self.token.text);
            }
            if !self.token.text.is_empty() {
                self.token.offset_from = start;
                self.token.offset_to = end;
                self.token.position = self.token.position.wrapping_add(1);
                return true;
            }
        }
        false
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<(String, usize, usize, usize)> {
        let mut tokenizer = QuarryTokenizer::default();
        let mut stream = tokenizer.token_stream(text);
        let mut out = Vec::new();
        while let Some(t) = stream.next() {
            out.push((t.text.clone(), t.offset_from, t.offset_to, t.position));
        }
        out
    }

    #[test]
    fn splits_on_punctuation_like_simple_tokenizer() {
        let got = tokens("Hello, happy tax-payer!");
        let want = [("Hello", 0, 5, 0), ("happy", 7, 12, 1), ("tax", 13, 16, 2), ("payer", 17, 22, 3)];
        let want: Vec<_> = want.iter().map(|&(s, a, b, p)| (s.to_string(), a, b, p)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn keeps_marked_arabic_words_whole_and_drops_the_marks() {
        // U+06DF (small high rounded zero) is not alphanumeric: a plain split on
        // non-alphanumerics would cut this word in two.
        let marked = "ب\u{0650}\u{06DF}سْمِ";
        assert!(!'\u{06DF}'.is_alphanumeric());
        let text = format!("قال {marked} ٱللَّهِ");
        let got = tokens(&text);
        let words: Vec<&str> = got.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(words, ["قال", "بسم", "ٱلله"]);
        let (_, from, to, _) = got[1];
        assert_eq!(&text[from..to], marked);
    }

    #[test]
    fn unspaced_runs_become_overlapping_bigrams_at_their_own_offsets() {
        let text = "「東京都」に住む。iPhone用";
        let got = tokens(text);
        let words: Vec<(&str, &str)> = got.iter().map(|t| (t.0.as_str(), &text[t.1..t.2])).collect();
        assert_eq!(words, [("東京", "東京"), ("京都", "京都"), ("に住", "に住"), ("住む", "住む"), ("iPhone", "iPhone"), ("用", "用")]);
        assert_eq!(got.iter().map(|t| t.3).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5]);
        // Halfwidth katakana with its voicing mark is one unit, put in NFKC.
        assert_eq!(tokens("ｶﾞｲﾄﾞ")[0].0, "ガイ");
        // Thai bigrams keep each consonant's marks; a lone unit is a token.
        let thai: Vec<String> = tokens("ภาษาไทย ก").into_iter().map(|t| t.0).collect();
        assert_eq!(thai, ["ภา", "าษ", "ษา", "าไ", "ไท", "ทย", "ก"]);
    }

    #[test]
    fn skips_runs_of_marks_alone_and_tatweel() {
        let got = tokens("ـــ \u{064E} كـتـاب");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "كتاب");
        assert_eq!(got[0].3, 0);
        assert!(tokens("").is_empty());
        assert!(tokens(" ,; ").is_empty());
    }
}
