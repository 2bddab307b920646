//! Defined terms: `"X" means`, `“X” shall mean`, `the term “X” means`, `“X” includes`,
//! `“X” has the meaning`, `“X” refers to`, `“X” shall be deemed to include` (an aside
//! between commas may sit before the verb: `“X”, with respect to …, means`), and the inline form `(“X”)` / `(the “X”)` /
//! `(each, a “Party”)`. Straight or curly double quotes; Markdown bold inside the quotes
//! (`(“**MNDA**”)`) is dropped from the term.

use std::sync::LazyLock;

use regex::Regex;

const QUOTED: &str = r#"[“"][^“”"\n]{1,80}[”"]"#;

static MEANS: LazyLock<Regex> = LazyLock::new(|| {
    let list = format!(r"{QUOTED}(?:\s*(?:,|,?\s*or|,?\s*and)\s*{QUOTED})*");
    let verb = r"(?:shall\s+(?:mean|include|have\s+the\s+meanings?|be\s+deemed\s+to\s+(?:include|embrace))|means|mean|has\s+the\s+meaning|have\s+the\s+meanings?|includes|include|refers?\s+to)\b";
    let as_used = r"(?:as\s+used\s+(?:herein|in\s+this\s+[A-Za-z]+)\s*,?\s*)?";
    let aside = r#"(?:,[^,.;“”"\n]{1,80},)?"#;
    Regex::new(&format!(r"{list}{aside}\s*,?\s*{as_used}{verb}")).unwrap()
});
static QUOTE: LazyLock<Regex> = LazyLock::new(|| Regex::new(QUOTED).unwrap());
static PARENS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\(([^()\n]{3,160})\)").unwrap());

/// Words that may stand beside the quoted term inside an inline definition's parentheses.
const INLINE_WORDS: &[&str] = &[
    "the",
    "a",
    "an",
    "each",
    "and",
    "or",
    "together",
    "collectively",
    "individually",
    "jointly",
    "hereinafter",
    "herein",
    "referred",
    "to",
    "as",
    "its",
    "their",
    "respectively",
];

/// A definition: byte range in the text searched and the terms it defines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Definition {
    pub start: usize,
    pub end: usize,
    pub terms: Vec<String>,
}

/// The definitions of `text`, in order.
pub(super) fn definitions(text: &str) -> Vec<Definition> {
    let mut out: Vec<Definition> = MEANS.find_iter(text).map(|m| definition(m.start(), m.end(), m.as_str())).collect();
    for c in PARENS.captures_iter(text) {
        let (whole, inner) = (c.get(0).expect("match"), &c[1]);
        if is_inline_definition(inner) {
            out.push(definition(whole.start(), whole.end(), inner));
        }
    }
    out.retain(|d| !d.terms.is_empty());
    out.sort_by_key(|d| d.start);
    out
}

fn definition(start: usize, end: usize, matched: &str) -> Definition {
    let terms = QUOTE.find_iter(matched).map(|q| term(q.as_str())).filter(|t| !t.is_empty()).collect();
    Definition { start, end, terms }
}

/// `(the “Agreement”)`: one or more quoted terms and only the connecting words above.
fn is_inline_definition(inner: &str) -> bool {
    if !QUOTE.is_match(inner) {
        return false;
    }
    let rest = QUOTE.replace_all(inner, " ");
    rest.split(|c: char| c.is_whitespace() || c == ',' || c == ';')
        .filter(|w| !w.is_empty())
        .all(|w| INLINE_WORDS.contains(&w.to_lowercase().as_str()))
}

/// `“**Confidential Information**,”` → `Confidential Information`.
fn term(quoted: &str) -> String {
    let inner = quoted.trim_matches(['“', '”', '"']);
    let inner = inner.replace("**", "").replace("__", "");
    let words: Vec<&str> = inner.split_whitespace().collect();
    words.join(" ").trim_matches(['*', '_', ',', '.', ' ']).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        definitions(text).into_iter().flat_map(|d| d.terms).collect()
    }

    #[test]
    fn means_forms() {
        assert_eq!(terms(r#""Affiliate" means any entity"#), ["Affiliate"]);
        assert_eq!(terms("“Services” shall mean the work"), ["Services"]);
        assert_eq!(terms("the term “State” means a State"), ["State"]);
        assert_eq!(terms("the words “person” and “whoever” include corporations"), ["person", "whoever"]);
        assert_eq!(terms("“Company,” as used herein, means the firm"), ["Company"]);
        assert_eq!(terms("“Fees” has the meaning given in Section 4"), ["Fees"]);
        assert_eq!(terms("the term “born alive”, with respect to a member, means the"), ["born alive"]);
        assert_eq!(
            terms("The word “company” or “association”, when used in reference to a corporation, shall be deemed to embrace"),
            ["company", "association"]
        );
    }

    #[test]
    fn inline_forms() {
        assert_eq!(terms("this Agreement (“**MNDA**”) allows"), ["MNDA"]);
        assert_eq!(
            terms(r#"Acme Corp. (the "Supplier") and Beta LLC (each, a "Party" and together, the "Parties")"#),
            ["Supplier", "Party", "Parties"]
        );
    }

    #[test]
    fn quotes_that_define_nothing() {
        assert!(terms("identifies it as “confidential”, “proprietary”, or the like").is_empty());
        assert!(terms(r#"He said "stop" and left (see "Notes" below)."#).is_empty());
        assert!(terms("(1) the Disclosing Party").is_empty());
    }
}
