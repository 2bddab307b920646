//! What each line of a legal page is: blank, a heading, the start of a clause (with its
//! number and caption), or text.
//!
//! Clause numbers are read only at a line start (after Markdown `#`s or `**`): `1.`, `1.2.3`,
//! `(a)`, `(iv)`, `(A)`, `ARTICLE IV`, `Section 2.1`, `Sec. 3`, `§ 1.`. A number inside a
//! sentence (`(a) use …; (b) not disclose …`) is text: it does not start a chunk.

use std::sync::LazyLock;

use regex::Regex;

use super::super::blocks::Range;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum LineKind {
    Blank,
    /// A line that is only a heading (`# …`, a short ALL-CAPS line, a lone `**…**`, or a
    /// short title line standing between blank lines). `reset` is true for the first
    /// three, which end the clause numbering in force.
    Heading {
        text: String,
        reset: bool,
    },
    Clause(ClauseStart),
    Text,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ClauseStart {
    pub number: Number,
    /// The clause's caption: `1. **Introduction**.`, `Section 2.1 Payment Terms.`,
    /// `§ 1. Words denoting number`, `ARTICLE IV — TERMINATION`.
    pub caption: Option<String>,
    /// The line holds only the number and its caption (a heading line).
    pub whole_line: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Number {
    /// `ARTICLE IV`, `Article 5`.
    Article(String),
    /// `§ 1.`, `Section 2.1`, `Sec. 3`, `1.`, `1.2.3`, `4)`.
    Section(String),
    /// `(a)`, `(1)`, `(A)`, `(iv)`: nested under the clause in force.
    Paren(String),
}

impl Number {
    pub fn is_paren(&self) -> bool {
        matches!(self, Number::Paren(_))
    }
}

/// One line: its trimmed byte range (empty at the line start for a blank line) and kind.
#[derive(Clone, Debug)]
pub(super) struct Line {
    pub range: Range,
    pub kind: LineKind,
}

static ARTICLE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(?:ARTICLE|Article)\s+([IVXLCDM]+|\d{1,3})\b\.?").unwrap());
static SECTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:§|SECTION|Section|SEC\.|Sec\.)\s*(\d{1,5}[A-Za-z]{0,2}(?:[.\-]\d{1,4}[A-Za-z]?)*)\.?(?:\s|$)").unwrap());
static NUMBERED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(\d{1,3}(?:\.\d{1,3})+\.?|\d{1,3}[.)])(?:\s+|$)").unwrap());
static PAREN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\(([a-z]{1,2}|[A-Z]{1,2}|\d{1,3}|[ivxlc]{1,6}|[IVXLC]{1,6})\)(?:\s+|$)").unwrap());

/// The lines of `page`, classified. Title lines need their neighbours, so this is a
/// second pass over the first.
pub(super) fn lines(page: &str) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    let mut start = 0;
    for raw in page.split('\n') {
        let end = start + raw.len();
        let lead = raw.len() - raw.trim_start().len();
        let text = raw.trim();
        let range = (start + lead, start + lead + text.len());
        out.push(Line { range, kind: classify(text) });
        start = end + 1;
    }
    mark_title_lines(page, &mut out);
    out
}

fn classify(line: &str) -> LineKind {
    if line.is_empty() {
        return LineKind::Blank;
    }
    let (body, atx) = strip_atx(line);
    if let Some(clause) = clause_start(body) {
        let whole_line = clause.whole_line || atx;
        return LineKind::Clause(ClauseStart { whole_line, ..clause });
    }
    if atx {
        let text = plain(body);
        return if text.is_empty() { LineKind::Text } else { LineKind::Heading { text, reset: true } };
    }
    if let Some(text) = lone_bold(line).or_else(|| caps_heading(line)) {
        return LineKind::Heading { text, reset: true };
    }
    LineKind::Text
}

/// `## Title` → (`Title`, true); other lines unchanged.
fn strip_atx(line: &str) -> (&str, bool) {
    let hashes = line.len() - line.trim_start_matches('#').len();
    let rest = &line[hashes..];
    if (1..=6).contains(&hashes) && rest.starts_with(char::is_whitespace) {
        (rest.trim(), true)
    } else {
        (line, false)
    }
}

/// The clause number at the start of `line` (a leading `**` allowed) and its caption.
pub(super) fn clause_start(line: &str) -> Option<ClauseStart> {
    let bold = line.starts_with("**") || line.starts_with("__");
    let line = if bold { &line[2..] } else { line };
    let (number, rest) = number_at(line)?;
    let rest = if bold { rest.strip_prefix("**").or_else(|| rest.strip_prefix("__")).unwrap_or(rest) } else { rest };
    let (caption, whole_line) = caption(rest.trim(), number.is_paren());
    Some(ClauseStart { number, caption, whole_line })
}

fn number_at(line: &str) -> Option<(Number, &str)> {
    if let Some(c) = ARTICLE.captures(line) {
        return Some((Number::Article(c[1].to_string()), &line[c.get(0)?.end()..]));
    }
    if let Some(c) = SECTION.captures(line) {
        return Some((Number::Section(c[1].to_string()), &line[c.get(0)?.end()..]));
    }
    if let Some(c) = NUMBERED.captures(line) {
        let rest = &line[c.get(0)?.end()..];
        let number = c[1].trim_end_matches(['.', ')']).to_string();
        let capital = rest.chars().next().is_none_or(|c| !c.is_lowercase());
        return (capital && starts_like_text(rest)).then_some((Number::Section(number), rest));
    }
    let c = PAREN.captures(line)?;
    let rest = &line[c.get(0)?.end()..];
    starts_like_text(rest).then(|| (Number::Paren(c[1].to_string()), rest))
}

/// After a number, text starts with a letter, a quote, a bracket or emphasis: not `2. 3`.
/// (A `1.` or `1.2` number also wants no lowercase letter next: not `1.5 mg`.)
fn starts_like_text(rest: &str) -> bool {
    rest.chars().next().is_none_or(|c| c.is_alphabetic() || "\"“‘'([*_".contains(c))
}

/// The caption after a clause number, and whether the line is only number and caption.
fn caption(rest: &str, paren: bool) -> (Option<String>, bool) {
    if rest.is_empty() {
        return (None, true);
    }
    for mark in ["**", "__"] {
        if let Some(inner) = rest.strip_prefix(mark) {
            if let Some(close) = inner.find(mark) {
                let text = clean_caption(&inner[..close]);
                let after = inner[close + 2..].trim_start_matches(['.', ':', ' ', '—', '-']).trim();
                return (Some(text).filter(|t| !t.is_empty()), after.is_empty());
            }
        }
    }
    let rest = rest.trim_start_matches(['—', '–', '-', ':', ' ']).trim();
    if let Some(inline) = inline_caption(rest) {
        return (Some(inline), false);
    }
    if is_whole_caption(rest, paren) {
        return (Some(clean_caption(rest)), true);
    }
    (None, false)
}

/// `Words denoting number, gender, and so forth`, `TERMINATION`: the rest of the line is
/// a caption when short, capitalised and not ended like a sentence or a list item.
fn is_whole_caption(rest: &str, paren: bool) -> bool {
    let short = !rest.is_empty() && rest.chars().count() <= if paren { 120 } else { 250 };
    let capital = rest.chars().next().is_some_and(|c| c.is_uppercase() || c == '“' || c == '"');
    let open = !rest.ends_with(['.', ';', ',', ':']) && !rest.contains(". ");
    short && capital && open && (!paren || title_case(rest))
}

/// `Fees. Customer shall…` → `Fees`: a title-case phrase of up to 8 words, then `. ` (or
/// the Code's `.—`).
fn inline_caption(rest: &str) -> Option<String> {
    let stop = [rest.find(". "), rest.find(".—")].into_iter().flatten().min();
    let end = stop.or_else(|| rest.ends_with('.').then(|| rest.len() - 1))?;
    let phrase = &rest[..end];
    let words = phrase.split_whitespace().count();
    let capital = phrase.chars().next().is_some_and(char::is_uppercase);
    (capital && (1..=8).contains(&words) && phrase.len() <= 80 && title_case(phrase)).then(|| clean_caption(phrase))
}

/// Every word of four or more letters starts with a capital (`Term and Termination`).
fn title_case(phrase: &str) -> bool {
    phrase
        .split_whitespace()
        .filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 4)
        .all(|w| w.trim_start_matches(|c: char| !c.is_alphanumeric()).starts_with(char::is_uppercase))
}

fn clean_caption(s: &str) -> String {
    plain(s).trim_end_matches(['.', ':', ';']).trim().to_string()
}

/// `s` without Markdown emphasis markers, whitespace collapsed.
pub(super) fn plain(s: &str) -> String {
    let s = s.replace("**", "").replace("__", "");
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A line that is only `**bold text**` (up to 100 chars).
fn lone_bold(line: &str) -> Option<String> {
    let inner = line.strip_prefix("**")?.strip_suffix("**")?;
    let ok = !inner.is_empty() && !inner.contains("**") && inner.chars().count() <= 100;
    ok.then(|| plain(inner).trim_end_matches(['.', ':']).to_string()).filter(|t| !t.is_empty())
}

/// A short line with three or more capitals and no lowercase letter: `RULES OF CONSTRUCTION`.
fn caps_heading(line: &str) -> Option<String> {
    if line.chars().count() > 100 || line.starts_with(['|', '-', '*', '(']) {
        return None;
    }
    let upper = line.chars().filter(|c| c.is_uppercase()).count();
    let lower = line.chars().any(char::is_lowercase);
    (upper >= 3 && !lower).then(|| plain(line))
}

/// A short title line alone between blank lines (`Editorial Notes`, `Amendments`) is a
/// heading; it does not end the clause numbering.
fn mark_title_lines(page: &str, lines: &mut [Line]) {
    let blank = |lines: &[Line], i: Option<usize>| i.is_none_or(|i| lines.get(i).is_none_or(|l| l.kind == LineKind::Blank));
    for i in 0..lines.len() {
        if lines[i].kind != LineKind::Text || !blank(lines, i.checked_sub(1)) || !blank(lines, Some(i + 1)) {
            continue;
        }
        let text = &page[lines[i].range.0..lines[i].range.1];
        if is_title_line(text) {
            lines[i].kind = LineKind::Heading { text: plain(text), reset: false };
        }
    }
}

fn is_title_line(text: &str) -> bool {
    let words = text.split_whitespace().count();
    let capital = text.chars().next().is_some_and(char::is_uppercase);
    let open = !text.ends_with(['.', ';', ',', ':', '?', '!', ')', ']', '”', '"', '—', '-']);
    capital && open && words <= 8 && text.chars().count() <= 60 && !text.contains(['|', '<', '['])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(line: &str) -> (Number, Option<String>, bool) {
        let c = clause_start(line).unwrap_or_else(|| panic!("no clause in {line:?}"));
        (c.number, c.caption, c.whole_line)
    }

    fn sec(n: &str) -> Number {
        Number::Section(n.into())
    }

    #[test]
    fn reads_clause_numbers() {
        assert_eq!(start("1. **Introduction**. This MNDA…").0, sec("1"));
        assert_eq!(start("1.2.3 The Supplier shall").0, sec("1.2.3"));
        assert_eq!(start("2.1. Fees are due").0, sec("2.1"));
        assert_eq!(start("(a) use it solely").0, Number::Paren("a".into()));
        assert_eq!(start("(iv) any other").0, Number::Paren("iv".into()));
        assert_eq!(start("ARTICLE IV").0, Number::Article("IV".into()));
        assert_eq!(start("Section 2.1 Payment Terms. Customer").0, sec("2.1"));
        assert_eq!(start("§ 1. Words denoting number").0, sec("1"));
        assert_eq!(start("§ 106a. Promulgation of laws").0, sec("106a"));
        assert_eq!(start("Sec. 3. Effective date").0, sec("3"));
        for text in ["1.5 mg daily", "2012—Pub. L. 112–231", "(July 30, 1947, ch. 388)", "2 3 4", "Section headings are"] {
            assert!(clause_start(text).is_none(), "{text:?}");
        }
    }

    #[test]
    fn reads_captions() {
        assert_eq!(start("1. **Introduction**. This MNDA"), (sec("1"), Some("Introduction".into()), false));
        assert_eq!(start("§ 1. Words denoting number, gender, and so forth").1.as_deref(), Some("Words denoting number, gender, and so forth"));
        assert!(start("§ 1. Words denoting number").2);
        assert_eq!(start("Section 2.1 Payment Terms. Customer shall pay").1.as_deref(), Some("Payment Terms"));
        assert_eq!(start("ARTICLE IV — TERMINATION").1.as_deref(), Some("TERMINATION"));
        assert_eq!(start("(b) Fees. Customer shall pay").1.as_deref(), Some("Fees"));
        assert_eq!(start("(a) United States Code.—The matter set forth").1.as_deref(), Some("United States Code"));
        assert_eq!(start("(b) cease using Confidential Information").1, None);
        assert_eq!(start("3. The Receiving Party shall keep it.").1, None);
        assert_eq!(start("ARTICLE IV"), (Number::Article("IV".into()), None, true));
    }

    #[test]
    fn classifies_headings_and_title_lines() {
        let page = "# Standard Terms\n\nRULES OF CONSTRUCTION\n\nEditorial Notes\n\nAmendments\nA sentence.\n\n## 2. Fees\n**Schedule A**";
        let kinds: Vec<LineKind> = lines(page).into_iter().map(|l| l.kind).collect();
        let heading = |t: &str, reset| LineKind::Heading { text: t.into(), reset };
        assert_eq!(kinds[0], heading("Standard Terms", true));
        assert_eq!(kinds[2], heading("RULES OF CONSTRUCTION", true));
        assert_eq!(kinds[4], heading("Editorial Notes", false));
        assert_eq!(kinds[6], LineKind::Text, "a title line needs a blank line after it");
        let LineKind::Clause(c) = &kinds[9] else { panic!("{:?}", kinds[9]) };
        assert!(c.whole_line && c.caption.as_deref() == Some("Fees"));
        assert_eq!(kinds[10], heading("Schedule A", true));
    }
}
