//! What a search query asks for: its quoted phrases and its intent.
//!
//! Phrases are enforced after retrieval (a page must contain them), except a single
//! quoted word in a long request, which is emphasis ([`EMPHASIS_MIN_WORDS`]); the intent lets
//! search pick passage sizes and fusion weights (a list wants many short items, a question
//! a passage that answers, an entity name the page about it). Intent is a cheap guess from
//! the query's shape, not a model.
//!
//! Rules, checked in this order:
//! 1. **Phrase**: the query has a quoted phrase a page must hold (emphasis is not one).
//! 2. **List**: it starts with `list`, `enumerate`, `itemize`, `all`, `every`, `top N`, or a
//!    list-asking opening such as `what are the`, `name all`, `give me all`, `types of`,
//!    or Arabic `اذكر`. Checked before questions, since "what are the …?" asks for a list.
//! 3. **Question**: it ends with `?`, `؟` or `？` (fullwidth, CJK), starts with a wh-word (what, who, how, …;
//!    but not an all-caps acronym such as `WHO`), starts with an auxiliary (is, does, can,
//!    …) and has three or more words, starts with explain/describe/tell, or starts with an
//!    Arabic question word (ما، ماذا، من، متى، أين، لماذا، كيف، هل، كم).
//! 4. **Entity**: one to four words, and either most of them are capitalised (connectors
//!    like "of" and "the" aside) or one is a code mixing digits and capitals (`ICD-10`,
//!    `A1C`).
//! 5. **Keyword**: everything else.

use super::matching::normalize_for_match;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedQuery {
    /// The query with its quote marks removed and whitespace collapsed; phrase words kept.
    pub text: String,
    /// The quoted phrases a page must hold, whitespace collapsed, in order.
    pub phrases: Vec<String>,
    /// Quoted words of a long request, which stress a word rather than filter pages
    /// (see [`EMPHASIS_MIN_WORDS`]): their terms weigh more, no page is dropped.
    pub emphasis: Vec<String>,
    pub intent: Intent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    Phrase,
    List,
    Question,
    Entity,
    Keyword,
}

impl Intent {
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Phrase => "phrase",
            Intent::List => "list",
            Intent::Question => "question",
            Intent::Entity => "entity",
            Intent::Keyword => "keyword",
        }
    }
}

const LIST_FIRST_WORDS: &[&str] = &["list", "enumerate", "itemize", "all", "every", "اذكر"];
const LIST_OPENINGS: &[&str] = &[
    "what are the",
    "what are some",
    "what are all",
    "which are the",
    "name all",
    "name the",
    "name some",
    "give me all",
    "show me all",
    "give all",
    "show all",
    "types of",
    "kinds of",
    "examples of",
];
const WH_WORDS: &[&str] = &["what", "which", "who", "whom", "whose", "when", "where", "why", "how"];
const AUXILIARIES: &[&str] = &[
    "is", "are", "was", "were", "am", "do", "does", "did", "can", "could", "should", "would", "will", "shall", "may", "might", "must", "has", "have",
    "had", "isn", "aren", "wasn", "weren", "don", "doesn", "didn", "won", "shouldn", "couldn", "wouldn",
];
const ASKING_VERBS: &[&str] = &["explain", "describe", "tell"];
/// Normalised by [`normalize_for_match`] (أين → اين).
const ARABIC_QUESTION_WORDS: &[&str] = &["ما", "ماذا", "من", "متي", "اين", "لماذا", "كيف", "هل", "كم"];
const CONNECTORS: &[&str] = &["of", "the", "and", "for", "in", "on", "de", "la", "von", "van", "&"];

/// A query of more words than this (quote marks aside) is a request written out, where
/// a single quoted word is emphasis, not a filter. People quote words in long requests
/// to stress them ("papers that discuss \"apoptosis\""), not to demand an exact
/// string: a hard filter on each such word threw away relevant pages (keyword nDCG@10
/// 0.44 against bm25s's 0.56 on long SciFact requests). Twelve words is about one
/// sentence; a shorter query with quotes, or any quoted phrase of two or more words,
/// is the query's main constraint and stays one a page must hold.
pub const EMPHASIS_MIN_WORDS: usize = 13;

pub fn parse(q: &str) -> ParsedQuery {
    let text = collapse_whitespace(&q.replace(is_quote, " "));
    let long = text.split(' ').count() >= EMPHASIS_MIN_WORDS;
    let (emphasis, phrases): (Vec<String>, Vec<String>) =
        phrases(q).into_iter().partition(|p| long && normalize_for_match(p).split(' ').count() == 1);
    let intent = if phrases.is_empty() { intent(&text) } else { Intent::Phrase };
    ParsedQuery { text, phrases, emphasis, intent }
}

fn is_quote(c: char) -> bool {
    matches!(c, '"' | '\u{201C}' | '\u{201D}')
}

/// Text between the 1st and 2nd quote mark, the 3rd and 4th, …; a last quote mark with
/// no partner opens nothing. Phrases with no words are dropped.
fn phrases(q: &str) -> Vec<String> {
    let parts: Vec<&str> = q.split(is_quote).collect();
    let closed = if parts.len().is_multiple_of(2) { parts.len() - 1 } else { parts.len() };
    parts[..closed].iter().skip(1).step_by(2).filter(|p| !normalize_for_match(p).is_empty()).map(|p| collapse_whitespace(p)).collect()
}

fn collapse_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn intent(text: &str) -> Intent {
    let words: Vec<&str> = text.split_whitespace().collect();
    let lower = text.to_lowercase();
    if is_list(&lower, &words) {
        Intent::List
    } else if is_question(text, &words) {
        Intent::Question
    } else if is_entity(&words) {
        Intent::Entity
    } else {
        Intent::Keyword
    }
}

/// The first word, lowercased, normalised, and cut at an apostrophe (`what's` → `what`).
fn first_word(words: &[&str]) -> String {
    let first = words.first().map(|w| normalize_for_match(w)).unwrap_or_default();
    let first = first.split(' ').next().unwrap_or_default();
    first.to_string()
}

fn is_list(lower: &str, words: &[&str]) -> bool {
    let first = first_word(words);
    let top_n = first == "top" && words.get(1).is_some_and(|w| w.parse::<u32>().is_ok());
    LIST_FIRST_WORDS.contains(&first.as_str()) || top_n || LIST_OPENINGS.iter().any(|o| lower.starts_with(o) && lower[o.len()..].starts_with(' '))
}

fn is_question(text: &str, words: &[&str]) -> bool {
    let first = first_word(words);
    let acronym = words.first().is_some_and(|w| is_all_caps(w));
    text.ends_with(['?', '؟', '？'])
        || (WH_WORDS.contains(&first.as_str()) && !acronym)
        || (AUXILIARIES.contains(&first.as_str()) && words.len() >= 3)
        || ASKING_VERBS.contains(&first.as_str())
        || ARABIC_QUESTION_WORDS.contains(&first.as_str())
}

fn is_entity(words: &[&str]) -> bool {
    if !(1..=4).contains(&words.len()) {
        return false;
    }
    let content: Vec<&&str> = words.iter().filter(|w| !CONNECTORS.contains(&w.to_lowercase().as_str())).collect();
    let capitalised = content.iter().filter(|w| w.chars().next().is_some_and(char::is_uppercase));
    2 * capitalised.count() > content.len() || words.iter().any(|w| is_code(w))
}

fn is_all_caps(w: &str) -> bool {
    w.chars().count() > 1 && w.chars().all(|c| c.is_uppercase())
}

/// A token mixing digits with capital letters: `ICD-10`, `A1C`, `E11.9`.
fn is_code(w: &str) -> bool {
    w.chars().any(|c| c.is_ascii_digit()) && w.chars().any(char::is_uppercase)
}

#[cfg(test)]
mod tests;
