//! The cues of classical Arabic books: what a line starts (a hadith, a heading, a grading,
//! a takhrij, a verse, a verse of poetry, a footnote), and what a stretch of text holds
//! (a grading verdict, a takhrij, a printed page number, a footnote marker).
//!
//! Lists are written in their ordinary spelling and folded once (see [`super::skeleton`]);
//! every check runs on folded text, except the poetry gap, which reads the page itself
//! (folding drops direction marks, and `X ‏ ‏Y` would read as a two-space gap).

use std::sync::LazyLock;

use super::skeleton::{any_at, find_any, fold_str, is_word_char, word_starts, Phrase};

/// The narration verbs an isnad opens with.
const OPENERS: &[&str] = &["حدثنا", "حدثني", "حدثناه", "أخبرنا", "أخبرني", "أخبرناه", "أنبأنا", "أنبأني", "ثنا"];

/// Words a heading line starts with.
const HEADINGS: &[&str] = &["باب", "كتاب", "فصل", "مسألة", "أبواب", "الباب", "الفصل", "الكتاب", "المسألة"];

/// Verdicts that are gradings wherever they stand in a note.
const GRADINGS: &[&str] = &[
    "قال أبو عيسى",
    "إسناده صحيح",
    "إسناده حسن",
    "إسناده ضعيف",
    "إسناده جيد",
    "إسناده قوي",
    "إسناده لين",
    "إسناده منقطع",
    "إسناده واه",
    "إسناده تالف",
    "إسناد صحيح",
    "إسناد حسن",
    "إسناد ضعيف",
    "رجاله ثقات",
    "صحيح لغيره",
    "حسن لغيره",
    "ضعيف جدا",
    "حديث صحيح",
    "حديث حسن",
    "حديث ضعيف",
    "حديث منكر",
    "حديث موضوع",
    "حديث غريب",
    "حسن صحيح",
    "صحيح الإسناد",
    "متفق عليه",
    "صححه*",
    "صحح إسناده",
    "حسنه الألباني",
    "حسنه الترمذي",
    "حسن إسناده",
    "ضعفه*",
    "ضعف إسناده",
    "حكم الألباني",
    "قال الألباني",
    "قال الشيخ الألباني",
    "قال شعيب",
    "قال الشيخ شعيب",
    "تعليق شعيب",
];

/// Bare verdicts: a grading only at the start of a note or of a short line.
const BARE_GRADINGS: &[&str] = &["صحيح", "حسن", "ضعيف", "موضوع", "منكر", "شاذ", "مرسل", "باطل"];

/// Tirmidhi's verdict: a hadith's line is cut here into the hadith and its grading.
const INLINE_GRADINGS: &[&str] = &["قال أبو عيسى", "قال الشيخ الألباني", "حكم الألباني"];

const TAKHRIJ_VERBS: &[&str] = &["أخرجه", "أخرجاه", "أخرجها", "أخرجهما", "أخرج", "خرجه", "خرجاه", "رواه", "رواها", "روياه"];

/// Collections a takhrij names (one of these or a number must follow the verb).
const COLLECTIONS: &[&str] = &[
    "البخاري",
    "مسلم",
    "أبو داود",
    "الترمذي",
    "النسائي",
    "ابن ماجه",
    "أحمد",
    "مالك",
    "الدارمي",
    "الحاكم",
    "البيهقي",
    "ابن حبان",
    "ابن خزيمة",
    "الطبراني",
    "عبد الرزاق",
    "ابن أبي شيبة",
    "الدارقطني",
    "الشيخان",
    "الجماعة",
    "أبو يعلى",
    "البزار",
    "الطيالسي",
    "الحميدي",
    "في صحيحه",
    "في سننه",
    "في مسنده",
    "في الموطأ",
    "في المسند",
    "في الكبير",
    "في الأوسط",
    "برقم",
    "رقم",
];

/// Words before a ﴿ that introduce a verse.
const VERSE_LEADS: &[&str] = &["تعالى", "عز وجل", "سبحانه", "جل وعلا", "قال الله", "قوله"];

fn phrases(list: &[&str], with_wa: bool) -> Vec<Phrase> {
    let prefixes: &[&str] = if with_wa { &["", "و", "ف"] } else { &[""] };
    prefixes.iter().flat_map(|p| list.iter().map(move |w| Phrase::new(&format!("{p}{w}")))).collect()
}

static OPENER: LazyLock<Vec<Phrase>> = LazyLock::new(|| phrases(OPENERS, true));
static HEADING: LazyLock<Vec<Phrase>> = LazyLock::new(|| phrases(HEADINGS, false));
static GRADING: LazyLock<Vec<Phrase>> = LazyLock::new(|| phrases(GRADINGS, true));
static NOT_HEADING: LazyLock<Vec<Phrase>> = LazyLock::new(|| phrases(&["كتاب الله", "كتاب ربه", "كتابه"], false));
static BARE_GRADING: LazyLock<Vec<Phrase>> = LazyLock::new(|| phrases(BARE_GRADINGS, false));
/// Words that may follow a bare verdict.
static QUALIFIER: LazyLock<Vec<Phrase>> = LazyLock::new(|| {
    let words = ["لغيره", "لذاته", "جدا", "الإسناد", "على شرط", "صحيح", "حسن", "غريب", "ضعيف", "بشواهده", "موقوف", "مرفوع", "مرسل"];
    phrases(&words, true)
});
static INLINE_GRADING: LazyLock<Vec<Phrase>> = LazyLock::new(|| phrases(INLINE_GRADINGS, false));
static TAKHRIJ: LazyLock<Vec<Phrase>> = LazyLock::new(|| phrases(TAKHRIJ_VERBS, true));
static COLLECTION: LazyLock<Vec<Phrase>> = LazyLock::new(|| phrases(COLLECTIONS, true));
static VERSE_LEAD: LazyLock<Vec<String>> = LazyLock::new(|| VERSE_LEADS.iter().map(|w| fold_str(w)).collect());

/// What a line of the body starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Start {
    /// A heading, with its title.
    Heading(String),
    Hadith,
    Grading,
    Takhrij,
    Verse,
    Poetry,
    /// A line holding only a printed page number.
    PageNumber,
    /// Nothing new: the line continues the block before it (or opens a paragraph).
    Text,
}

/// What the line starts; `page_line` is the line as the page has it, `line` folded.
pub(super) fn line_start(page_line: &str, line: &str) -> Start {
    let line = line.trim();
    if let Some(title) = markdown_heading(page_line) {
        return Start::Heading(title);
    }
    if is_page_number_line(line) {
        return Start::PageNumber;
    }
    let rest = strip_number(line);
    let unjoined = rest.strip_prefix(['و', 'ف']).filter(|r| r.starts_with(char::is_whitespace)).map_or(rest, str::trim_start);
    if any_at(&OPENER, unjoined, 0).is_some() {
        return Start::Hadith;
    }
    if is_heading(rest) {
        return Start::Heading(page_line.trim().to_string());
    }
    if starts_verse(rest) {
        return Start::Verse;
    }
    if is_poetry(page_line) {
        return Start::Poetry;
    }
    let bracketless = rest.trim_start_matches(['[', '(']);
    let short = line.chars().count() <= 60;
    if any_at(&GRADING, bracketless, 0).is_some() || (short && bare_verdict(bracketless)) {
        return Start::Grading;
    }
    if takhrij_at(rest, 0) {
        return Start::Takhrij;
    }
    Start::Text
}

/// باب / كتاب / فصل / مسألة opening a short line that does not end a sentence (so
/// «كتاب الله هو الحجة.» is not one).
fn is_heading(rest: &str) -> bool {
    let ends_sentence = rest.trim_end().ends_with(['.', '،', '؛', ',']);
    let short = rest.chars().count() <= 150;
    short && !ends_sentence && any_at(&HEADING, rest, 0).is_some() && any_at(&NOT_HEADING, rest, 0).is_none()
}

/// `# Title` (1–6 `#`), or OpenITI's `### | Title`: the title.
fn markdown_heading(line: &str) -> Option<String> {
    let line = line.trim();
    let hashes = line.len() - line.trim_start_matches('#').len();
    let rest = &line[hashes..];
    if !(1..=6).contains(&hashes) || !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let title = rest.trim().trim_start_matches('|').trim().trim_end_matches('#').trim_end();
    (!title.is_empty()).then(|| title.to_string())
}

/// `line` without a leading item number: `١ - `, `(١) `, `[١] `, `١. `, `١ `.
pub(super) fn strip_number(line: &str) -> &str {
    let s = line.trim_start();
    let open = s.starts_with(['(', '[']) as usize;
    let digits = s[open..].len() - s[open..].trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 5 {
        return s;
    }
    let mut rest = &s[open + digits..];
    if open == 1 {
        let Some(r) = rest.strip_prefix([')', ']']) else { return s };
        rest = r;
    }
    let after = rest.trim_start();
    let after = after.strip_prefix(['-', '–', '—', '.', ':', '/']).unwrap_or(after);
    if after.len() == rest.len() && !rest.is_empty() && open == 0 {
        return s; // `12abc`: a number glued to a word is not an item number
    }
    after.trim_start()
}

/// A verse block opens with ﴿, or with «قال تعالى» and the like just before one.
fn starts_verse(rest: &str) -> bool {
    if rest.starts_with('﴿') {
        return true;
    }
    let Some(at) = rest.find('﴿') else { return false };
    let lead = &rest[..at];
    lead.chars().count() <= 40 && VERSE_LEAD.iter().any(|w| lead.contains(w.as_str()))
}

/// A verse of poetry on one line: two hemistichs split by `%~%`, `…`, a tab or 2+
/// spaces; each of 1–9 words and at most 60 chars (so prose with an ellipsis is not one).
pub(super) fn is_poetry(page_line: &str) -> bool {
    let line = page_line.trim();
    if line.contains("%~%") {
        return true;
    }
    let Some((a, b)) = hemistichs(line) else { return false };
    let fits = |h: &str| {
        let words = h.split_whitespace().count();
        (1..=9).contains(&words) && h.chars().count() <= 60 && h.chars().any(is_arabic_letter)
    };
    fits(a) && fits(b) && (a.split_whitespace().count() + b.split_whitespace().count()) >= 3
}

/// The two halves of `line` around its one hemistich gap, if it has exactly one.
fn hemistichs(line: &str) -> Option<(&str, &str)> {
    let gaps: Vec<(usize, usize)> = gaps(line).collect();
    match gaps.as_slice() {
        [(s, e)] => Some((line[..*s].trim(), line[*e..].trim())).filter(|(a, b)| !a.is_empty() && !b.is_empty()),
        _ => None,
    }
}

/// The hemistich gaps of `line`: a run of whitespace holding `…`, a tab or 2+ spaces.
fn gaps(line: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < line.len() {
            let rest = &line[at..];
            let c = rest.chars().next()?;
            if c.is_whitespace() || c == '…' {
                let run = rest.len() - rest.trim_start_matches(|c: char| c.is_whitespace() || c == '…').len();
                let gap = &rest[..run];
                let start = at;
                at += run;
                let spaces = gap.matches(' ').count();
                if gap.contains(['…', '\t']) || spaces >= 2 {
                    return Some((start, start + run));
                }
            } else {
                at += c.len_utf8();
            }
        }
        None
    })
}

pub(super) fn is_arabic_letter(c: char) -> bool {
    matches!(c, '\u{0620}'..='\u{064A}' | '\u{066E}'..='\u{06D3}' | '\u{06FA}'..='\u{06FF}')
}

/// A takhrij verb at `at`, then a collection or a bracketed number within 80 bytes.
fn takhrij_at(s: &str, at: usize) -> bool {
    let Some(end) = any_at(&TAKHRIJ, s, at) else { return false };
    let window = &s[end..floor_char(s, (end + 80).min(s.len()))];
    find_any(&COLLECTION, window).is_some() || bracketed_number(window)
}

fn bracketed_number(s: &str) -> bool {
    s.char_indices().any(|(at, c)| matches!(c, '(' | '[') && digits_then(&s[at + 1..], &[')', ']']).is_some())
}

/// The digits at the start of `s` (1–6 of them) if `close` follows them: their length.
fn digits_then(s: &str, close: &[char]) -> Option<usize> {
    let n = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    ((1..=6).contains(&n) && s[n..].starts_with(close)).then_some(n)
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Whether folded `text` holds a takhrij (a verb with its collection, anywhere).
pub(super) fn has_takhrij(text: &str) -> bool {
    word_starts(text).any(|at| takhrij_at(text, at))
}

/// Whether a footnote's folded `text` (its marker already cut) grades a hadith.
pub(super) fn has_grading(text: &str) -> bool {
    let text = text.trim_start().trim_start_matches(['-', 'ـ', ':', '[', '(']).trim_start();
    find_any(&GRADING, text).is_some() || bare_verdict(text)
}

/// A bare verdict opening `text`: «صحيح.», «حسن لغيره», «ضعيف: أخرجه …», but not
/// «حسن الخلق من الإيمان».
fn bare_verdict(text: &str) -> bool {
    let Some(end) = any_at(&BARE_GRADING, text, 0) else { return false };
    let next = text[end..].trim_start();
    next.is_empty() || next.starts_with(['.', '،', ':', '؛', ',', ')', ']', '-', '(', '[']) || any_at(&QUALIFIER, next, 0).is_some()
}

/// Where in a hadith's folded text its grading begins (Tirmidhi's «قال أبو عيسى»).
pub(super) fn inline_grading(text: &str) -> Option<usize> {
    find_any(&INLINE_GRADING, text).map(|(at, _)| at)
}

/// A footnote separator: 3+ of `_ - — – * ـ`, spaces allowed, nothing else.
pub(super) fn is_separator(page_line: &str) -> bool {
    let line = page_line.trim();
    let marks = line.chars().filter(|c| matches!(c, '_' | '-' | '—' | '–' | '*' | 'ـ')).count();
    marks >= 3 && line.chars().all(|c| matches!(c, '_' | '-' | '—' | '–' | '*' | 'ـ' | ' ' | '\t'))
}

/// The number of the footnote a folded line opens: `(1)`, `[1]`, `1 -`, `1.`; and the
/// rest of the line.
pub(super) fn footnote_start(line: &str) -> Option<(u32, &str)> {
    let s = line.trim_start();
    if let Some(inner) = s.strip_prefix(['(', '[']) {
        let n = digits_then(inner, &[')', ']'])?;
        return Some((inner[..n].parse().ok()?, &inner[n + 1..]));
    }
    let n = digits_then(s, &['-', '.', ' ', '–', '\t'])?;
    let rest = s[n..].trim_start();
    let rest = rest.strip_prefix(['-', '.', '–'])?;
    Some((s[..n].parse().ok()?, rest))
}

/// A printed page number in folded `s` starting at `at`: `(ص: 20)`, `[ج 1 ص 20]`,
/// `(ج: 1، ص: 20)`, or OpenITI's `PageV01P020`. Skeleton ranges of the volume's and the
/// page's digits, and the marker's end.
pub(super) struct PageMark {
    pub start: usize,
    pub volume: Option<(usize, usize)>,
    pub page: (usize, usize),
    pub end: usize,
}

pub(super) fn page_mark_at(s: &str, at: usize) -> Option<PageMark> {
    let rest = &s[at..];
    if let Some(r) = rest.strip_prefix("PageV") {
        let v = r.len() - r.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let r2 = r[v..].strip_prefix('P')?;
        let p = r2.len() - r2.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if v == 0 || p == 0 {
            return None;
        }
        let vs = at + 5;
        let ps = vs + v + 1;
        return Some(PageMark { start: at, volume: Some((vs, vs + v)), page: (ps, ps + p), end: ps + p });
    }
    let close = match rest.chars().next()? {
        '(' => ')',
        '[' => ']',
        _ => return None,
    };
    let mut i = at + 1;
    let skip = |i: &mut usize, chars: &[char]| {
        let r = &s[*i..];
        *i += r.len() - r.trim_start_matches(|c: char| c.is_whitespace() || chars.contains(&c)).len();
    };
    let number = |i: &mut usize| {
        let r = &s[*i..];
        let n = r.len() - r.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        ((1..=5).contains(&n)).then(|| {
            *i += n;
            (*i - n, *i)
        })
    };
    let word = |i: &mut usize, w: char| {
        let r = &s[*i..];
        let ok = r.starts_with(w) && !r[w.len_utf8()..].chars().next().is_some_and(|c| is_word_char(c) && !c.is_ascii_digit());
        ok.then(|| *i += w.len_utf8()).is_some()
    };
    skip(&mut i, &[]);
    let mut volume = None;
    if word(&mut i, 'ج') {
        skip(&mut i, &[':']);
        volume = Some(number(&mut i)?);
        skip(&mut i, &['،', ',', '/', '-', '؛']);
    }
    if !word(&mut i, 'ص') {
        return None;
    }
    skip(&mut i, &[':']);
    let page = number(&mut i)?;
    skip(&mut i, &[]);
    s[i..].starts_with(close).then_some(PageMark { start: at, volume, page, end: i + 1 })
}

/// The printed page marks in folded `s`, in order.
pub(super) fn page_marks(s: &str) -> Vec<PageMark> {
    let starts = s.char_indices().filter(|&(_, c)| matches!(c, '(' | '[' | 'P')).map(|(at, _)| at);
    starts.filter_map(|at| page_mark_at(s, at)).collect()
}

fn is_page_number_line(line: &str) -> bool {
    let at = line.len() - line.trim_start().len();
    page_mark_at(line, at).is_some_and(|m| line[m.end..].trim().is_empty())
}

/// Footnote markers in folded body text: `(N)` with 1–3 digits not opening its line.
/// (offset of `(`, N).
pub(super) fn body_markers(s: &str) -> Vec<(usize, u32)> {
    let mut out = Vec::new();
    let mut line_start = true;
    for (at, c) in s.char_indices() {
        if c == '(' && !line_start {
            if let Some(n) = digits_then(&s[at + 1..], &[')']).filter(|&n| n <= 3) {
                if let Ok(v) = s[at + 1..at + 1 + n].parse() {
                    out.push((at, v));
                }
            }
        }
        if c == '\n' {
            line_start = true;
        } else if !c.is_whitespace() {
            line_start = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::skeleton::fold_str;
    use super::*;

    fn start(line: &str) -> Start {
        line_start(line, &fold_str(line))
    }

    #[test]
    fn classifies_line_starts() {
        assert_eq!(start("حَدَّثَنَا قُتَيْبَةُ"), Start::Hadith);
        assert_eq!(start("١٢ - وحدثني يحيى عن مالك"), Start::Hadith);
        assert_eq!(start("(٣) أخبرنا سليمان"), Start::Hadith);
        assert_eq!(start("حدثتنا امرأة"), Start::Text);
        assert_eq!(start("بَابُ مَا جَاءَ فِي فَضْلِ الطُّهُورِ"), Start::Heading("بَابُ مَا جَاءَ فِي فَضْلِ الطُّهُورِ".into()));
        assert_eq!(start("## كتاب الطهارة"), Start::Heading("كتاب الطهارة".into()));
        assert_eq!(start("### | فصل في النية"), Start::Heading("فصل في النية".into()));
        assert_eq!(start("بابه واسع"), Start::Text);
        assert_eq!(start("كتاب الله هو الحجة على الناس"), Start::Text);
        assert_eq!(start("فصل في ذلك كلام طويل."), Start::Text);
        assert_eq!(start("و حدثني يحيى عن مالك"), Start::Hadith);
        assert_eq!(start("قال أبو عيسى هذا حديث حسن صحيح"), Start::Grading);
        assert_eq!(start("إسناده صحيح على شرط الشيخين."), Start::Grading);
        assert_eq!(start("صحيح."), Start::Grading);
        assert_eq!(start("حسن لغيره"), Start::Grading);
        assert_eq!(start("[حكم الألباني] : صحيح"), Start::Grading);
        assert_eq!(start("حسن الخلق من الإيمان"), Start::Text);
        assert_eq!(start("أخرجه البخاري (١) ومسلم (١٩٠٧)."), Start::Takhrij);
        assert_eq!(start("رواه عنه جماعة من أصحابه"), Start::Text);
        assert_eq!(start("﴿ إِنَّا أَعْطَيْنَاكَ الْكَوْثَرَ ﴾"), Start::Verse);
        assert_eq!(start("قال الله تعالى: ﴿ وَأَقِيمُوا الصَّلَاةَ ﴾"), Start::Verse);
        assert_eq!(start("(ص: ٢٠)"), Start::PageNumber);
        assert_eq!(start("أَلا كُلُّ شَيْءٍ ما خَلا اللهَ باطِلُ … وَكُلُّ نَعيمٍ لا مَحالَةَ زائِلُ"), Start::Poetry);
        assert_eq!(start("قفا نبك من ذكرى حبيب ومنزل %~% بسقط اللوى بين الدخول فحومل"), Start::Poetry);
        assert_eq!(start("سلام عليكم\tورحمة الله وبركاته"), Start::Poetry);
        assert_eq!(start("قال: ثم ذكر الحديث … وفيه طول، وقد رواه غير واحد من أهل العلم عن شيوخهم في البلدان"), Start::Text);
    }

    #[test]
    fn strips_item_numbers_only() {
        assert_eq!(strip_number("12 - حدثنا"), "حدثنا");
        assert_eq!(strip_number("(12) حدثنا"), "حدثنا");
        assert_eq!(strip_number("12. حدثنا"), "حدثنا");
        assert_eq!(strip_number("12حدثنا"), "12حدثنا");
    }

    #[test]
    fn reads_footnotes_and_markers() {
        assert_eq!(footnote_start("(1) أخرجه").map(|(n, _)| n), Some(1));
        assert_eq!(footnote_start("[12] انظر").map(|(n, _)| n), Some(12));
        assert_eq!(footnote_start("3 - انظر").map(|(n, _)| n), Some(3));
        assert_eq!(footnote_start("1994 سنة"), None);
        assert!(is_separator("________"));
        assert!(is_separator(" — — — "));
        assert!(!is_separator("--"));
        assert!(!is_separator("--- not a rule"));
        assert_eq!(body_markers("(1) قال (2) ثم\n(3) x (1234)"), vec![(11, 2)]);
        assert!(has_takhrij(&fold_str("صحيح: أَخْرَجَهُ مُسْلِمٌ (٢٢٣).")));
        assert!(!has_takhrij(&fold_str("رواه عن أبيه عن جده")));
        assert!(has_grading(&fold_str(" - إسناده ضعيف لضعف ابن لهيعة")));
        assert!(!has_grading(&fold_str("انظر ما سبق في الباب")));
    }

    #[test]
    fn reads_printed_page_marks() {
        let s = fold_str("قال (ص: ٢٠) ثم [ج ١ ص ٣٥] و(ج: 2، ص: 7) PageV01P020 (ص)");
        let marks = page_marks(&s);
        let pages: Vec<&str> = marks.iter().map(|m| &s[m.page.0..m.page.1]).collect();
        assert_eq!(pages, ["20", "35", "7", "020"]);
        let vols: Vec<Option<&str>> = marks.iter().map(|m| m.volume.map(|v| &s[v.0..v.1])).collect();
        assert_eq!(vols, [None, Some("1"), Some("2"), Some("01")]);
    }
}
