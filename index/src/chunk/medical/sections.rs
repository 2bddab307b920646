//! The sections of a clinical note and the header lines that open them.
//!
//! A note is read as a run of sections (chief complaint, HPI, medications, …): search
//! filters by them (`filters.headings`), and a chunk never spans two, so a medication
//! list is never glued to the family history under it. Headers come in three shapes:
//! `LABEL:` at a line start (with or without content after the colon), a bare ALL-CAPS
//! line (the ACI-Bench notes' style), and Markdown headings (`# Plan`, setext). The label
//! lexicon follows the categories of medspacy's section rules, written out by hand.

use super::super::blocks::{trim, Range};
use super::super::kinds::{Kind, Kinds};

/// What a section is about, whatever its header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Section {
    ChiefComplaint,
    Hpi,
    PastMedical,
    PastHistory,
    PastSurgical,
    Medications,
    Allergies,
    Social,
    Family,
    Ros,
    PhysicalExam,
    Vitals,
    Labs,
    Results,
    Assessment,
    AssessmentPlan,
    Plan,
    Subjective,
    Objective,
    Procedures,
    HospitalCourse,
    Immunizations,
    /// A header line the lexicon does not know (an ALL-CAPS line or a Markdown heading).
    Other,
}

impl Section {
    /// The canonical name, as chunk meta's `section` gives it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Section::ChiefComplaint => "Chief Complaint",
            Section::Hpi => "History of Present Illness",
            Section::PastMedical => "Past Medical History",
            Section::PastHistory => "Past History",
            Section::PastSurgical => "Past Surgical History",
            Section::Medications => "Medications",
            Section::Allergies => "Allergies",
            Section::Social => "Social History",
            Section::Family => "Family History",
            Section::Ros => "Review of Systems",
            Section::PhysicalExam => "Physical Exam",
            Section::Vitals => "Vitals",
            Section::Labs => "Labs",
            Section::Results => "Results",
            Section::Assessment => "Assessment",
            Section::AssessmentPlan => "Assessment and Plan",
            Section::Plan => "Plan",
            Section::Subjective => "Subjective",
            Section::Objective => "Objective",
            Section::Procedures => "Procedures",
            Section::HospitalCourse => "Hospital Course",
            Section::Immunizations => "Immunizations",
            Section::Other => "Other",
        }
    }

    /// The kinds every chunk of the section carries. An assessment and plan has none of
    /// its own: its problem titles are diagnoses, its orders plans, and its closing
    /// consent line neither, so its chunks take their kinds from what they hold.
    pub(crate) fn kinds(self) -> Kinds {
        let kinds: &[Kind] = match self {
            Section::Medications => &[Kind::Medication],
            Section::Allergies => &[Kind::Allergy],
            Section::Vitals => &[Kind::Vital],
            Section::Labs | Section::Results => &[Kind::Lab],
            Section::Assessment | Section::PastMedical => &[Kind::Diagnosis],
            Section::Plan => &[Kind::Plan],
            _ => &[],
        };
        Kinds::from_kinds(kinds.iter().copied())
    }

    /// How much a header of this section says "clinical note" (for [`super::signal`]):
    /// research abstracts also have results, methods and objectives, never an HPI.
    pub(crate) fn weight(self) -> f32 {
        match self {
            Section::Labs
            | Section::Results
            | Section::Assessment
            | Section::Plan
            | Section::Subjective
            | Section::Objective
            | Section::Procedures
            | Section::HospitalCourse
            | Section::Immunizations
            | Section::PastHistory => 0.25,
            Section::Other => 0.0,
            _ => 0.5,
        }
    }

    /// The section a label names (`HPI`, `Current Medications`, `A/P`…), if any.
    pub(crate) fn lookup(label: &str) -> Option<Section> {
        let key = normalise(label);
        Section::lookup_key(&key).or_else(|| {
            // `Labs (03/28/2024)`: the label without its bracketed tail.
            let open = key.rfind(" (").filter(|_| key.ends_with(')'))?;
            Section::lookup_key(key[..open].trim())
        })
    }

    fn lookup_key(key: &str) -> Option<Section> {
        let section = match key {
            "chief complaint"
            | "chief complaints"
            | "cc"
            | "reason for visit"
            | "reason for consultation"
            | "reason for referral"
            | "presenting complaint" => Section::ChiefComplaint,
            "history of present illness" | "history of the present illness" | "hpi" | "present illness" | "interval history" | "history" => {
                Section::Hpi
            }
            "past medical history"
            | "pmh"
            | "pmhx"
            | "medical history"
            | "problem list"
            | "active problems"
            | "past medical and surgical history" => Section::PastMedical,
            "past history" => Section::PastHistory,
            "past surgical history" | "psh" | "pshx" | "surgical history" => Section::PastSurgical,
            "medications"
            | "medication"
            | "meds"
            | "current medications"
            | "current meds"
            | "home medications"
            | "home meds"
            | "outpatient medications"
            | "medications on admission"
            | "admission medications"
            | "discharge medications"
            | "medication list"
            | "active medications"
            | "current outpatient medications" => Section::Medications,
            "allergies"
            | "allergy"
            | "drug allergies"
            | "allergies/intolerances"
            | "allergies and intolerances"
            | "allergies/adverse reactions"
            | "allergy list" => Section::Allergies,
            "social history" | "social hx" | "sh" | "shx" => Section::Social,
            "family history" | "family hx" | "fh" | "fhx" => Section::Family,
            "review of systems" | "ros" | "systems review" => Section::Ros,
            "physical exam" | "physical examination" | "exam" | "examination" | "pe" | "physical findings" => Section::PhysicalExam,
            "vitals" | "vital signs" | "vital sign" | "vs" | "vitals reviewed" | "vital signs reviewed" | "discharge vitals" => Section::Vitals,
            "labs" | "lab" | "laboratory" | "laboratory data" | "laboratory results" | "lab results" | "laboratory studies" | "labs and imaging" => {
                Section::Labs
            }
            "results" | "pertinent results" | "diagnostic results" | "studies" | "imaging" | "imaging results" | "diagnostic studies" | "data"
            | "test results" => Section::Results,
            "assessment"
            | "impression"
            | "diagnosis"
            | "diagnoses"
            | "discharge diagnosis"
            | "discharge diagnoses"
            | "admission diagnosis"
            | "clinical impression"
            | "working diagnosis"
            | "final diagnosis"
            | "differential diagnosis" => Section::Assessment,
            "assessment and plan" | "assessment/plan" | "a/p" | "a and p" | "impression and plan" | "impression/plan" => Section::AssessmentPlan,
            "plan"
            | "plan of care"
            | "treatment plan"
            | "recommendations"
            | "recommendation"
            | "disposition"
            | "instructions"
            | "patient instructions"
            | "discharge instructions"
            | "follow-up"
            | "follow up"
            | "followup"
            | "orders" => Section::Plan,
            "subjective" => Section::Subjective,
            "objective" => Section::Objective,
            "procedures" | "procedure" | "procedure note" => Section::Procedures,
            "hospital course" | "ed course" | "clinical course" => Section::HospitalCourse,
            "immunizations" | "immunization history" | "vaccinations" => Section::Immunizations,
            _ => return None,
        };
        Some(section)
    }
}

/// Lower case, `&` as `and`, no emphasis marks, single spaces, no closing colon or stop.
fn normalise(label: &str) -> String {
    let label = label.trim_matches(|c: char| c.is_whitespace() || matches!(c, '*' | '_' | '#' | ':' | '.'));
    let spaced = label.replace('&', " and ").replace('/', " / ");
    let words: Vec<&str> = spaced.split_whitespace().collect();
    words.join(" ").to_lowercase().replace(" / ", "/")
}

/// A header line (or two, for setext) that opens a section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// The header's own bytes: `ALLERGIES`, `# Plan`, `Allergies:` (not the content after it).
    pub range: Range,
    /// The name as written, without `#`, emphasis or the colon.
    pub name: String,
    pub section: Section,
}

/// A section of a page: its header (none for text before the first one) and its body,
/// the bytes from after the header up to the next header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SectionSpan {
    pub header: Option<Header>,
    pub body: Range,
}

/// The page's sections in order; together they cover the page.
pub(crate) fn split(page: &str) -> Vec<SectionSpan> {
    let lines = lines(page);
    let mut out = vec![SectionSpan { header: None, body: (0, 0) }];
    let mut i = 0;
    while i < lines.len() {
        if let Some((header, used)) = header_at(page, &lines, i) {
            let body_start = match used {
                Used::Lines(n) => lines[i + n - 1].1,
                Used::Inline => header.range.1,
            };
            out.last_mut().expect("one section at least").body.1 = header.range.0;
            out.push(SectionSpan { header: Some(header), body: (body_start, body_start) });
            i += match used {
                Used::Lines(n) => n,
                Used::Inline => 1,
            };
            continue;
        }
        i += 1;
    }
    out.last_mut().expect("one section at least").body.1 = page.len();
    out
}

enum Used {
    /// The header is whole lines (1, or 2 for setext).
    Lines(usize),
    /// The header is a `LABEL:` with content after it on the same line.
    Inline,
}

/// Byte ranges of the lines, without their `\n`.
fn lines(page: &str) -> Vec<Range> {
    let mut start = 0;
    let mut out = Vec::new();
    for (at, _) in page.match_indices('\n') {
        out.push((start, at));
        start = at + 1;
    }
    out.push((start, page.len()));
    out
}

fn header_at(page: &str, lines: &[Range], i: usize) -> Option<(Header, Used)> {
    let range = trim(page, lines[i])?;
    let line = &page[range.0..range.1];
    if let Some(name) = atx(line) {
        return Some((header(range, name), Used::Lines(1)));
    }
    if let Some(found) = label(page, range) {
        return Some(found);
    }
    if let Some(name) = caps_or_known(line) {
        return Some((header(range, name), Used::Lines(1)));
    }
    let next = lines.get(i + 1).and_then(|&l| trim(page, l))?;
    if is_underline(&page[next.0..next.1]) && !is_underline(line) && !is_list_item(line) && line.chars().count() <= 80 {
        let name = clean(line);
        return (!name.is_empty()).then(|| (header((range.0, next.1), name), Used::Lines(2)));
    }
    None
}

fn header(range: Range, name: String) -> Header {
    let section = Section::lookup(&name).unwrap_or(Section::Other);
    Header { range, name, section }
}

/// `# Title` (1–6 `#`, then a space).
fn atx(line: &str) -> Option<String> {
    let hashes = line.len() - line.trim_start_matches('#').len();
    let rest = &line[hashes..];
    if !(1..=6).contains(&hashes) || !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let name = clean(rest.trim().trim_end_matches('#'));
    (!name.is_empty()).then_some(name)
}

/// `LABEL:` at the line start where the label is a known section, content after it or not.
fn label(page: &str, range: Range) -> Option<(Header, Used)> {
    let line = &page[range.0..range.1];
    let colon = line.find(':').filter(|&at| at <= 60)?;
    let name = clean(&line[..colon]);
    let section = Section::lookup(&name)?;
    let after = &line[colon + 1..];
    let emphasis = after.len() - after.trim_start_matches(['*', '_']).len();
    let end = range.0 + colon + 1 + emphasis;
    let used = if page[end..range.1].trim().is_empty() { Used::Lines(1) } else { Used::Inline };
    Some((Header { range: (range.0, end), name, section }, used))
}

/// A bare ALL-CAPS line (`REVIEW OF SYSTEMS`), or a bare line that is exactly a known
/// label (`Chief Complaint`).
fn caps_or_known(line: &str) -> Option<String> {
    let name = clean(line);
    if name.is_empty() || name.chars().count() > 60 {
        return None;
    }
    if Section::lookup(&name).is_some() {
        return Some(name);
    }
    let allowed = |c: char| c.is_alphabetic() || c == ' ' || matches!(c, '&' | '/' | '(' | ')' | '-' | ',' | '\'' | '.');
    let letters = name.chars().filter(|c| c.is_alphabetic()).count();
    let caps = name.chars().filter(|c| c.is_alphabetic()).all(char::is_uppercase);
    let words = name.split_whitespace().count();
    let shaped = name.chars().all(allowed) && caps && letters >= 4 && words <= 8 && !name.ends_with('.');
    (shaped && !NOT_HEADERS.contains(&name.as_str())).then_some(name)
}

/// ALL-CAPS lines that are content, not headers.
const NOT_HEADERS: &[&str] = &["NKDA", "NKA", "NAD", "WNL", "PERRLA", "PERRL", "NONE", "DENIES", "NORMAL", "NEGATIVE", "STAT"];

/// The name without `#`, emphasis, a closing colon or surrounding space.
fn clean(s: &str) -> String {
    s.trim_matches(|c: char| c.is_whitespace() || matches!(c, '*' | '_' | '#' | ':')).to_string()
}

fn is_underline(line: &str) -> bool {
    line.len() >= 2 && (line.bytes().all(|b| b == b'=') || line.bytes().all(|b| b == b'-'))
}

fn is_list_item(line: &str) -> bool {
    line.starts_with(['-', '*', '+', '•']) || line.starts_with(|c: char| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(page: &str) -> Vec<(String, Section)> {
        split(page).into_iter().filter_map(|s| s.header.map(|h| (h.name, h.section))).collect()
    }

    #[test]
    fn reads_the_three_header_shapes() {
        let page = "CHIEF COMPLAINT\n\nCough.\n\nHPI: 3 days of cough.\nAllergies:\nNKDA\n# Assessment and Plan\nBronchitis.\nPlan\n----\nRest.";
        let got = headers(page);
        let want = [
            ("CHIEF COMPLAINT", Section::ChiefComplaint),
            ("HPI", Section::Hpi),
            ("Allergies", Section::Allergies),
            ("Assessment and Plan", Section::AssessmentPlan),
            ("Plan", Section::Plan),
        ];
        let want: Vec<(String, Section)> = want.iter().map(|(n, s)| (n.to_string(), *s)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn content_lines_are_not_headers() {
        let page =
            "NKDA\nCOPD.\nBP 120/80\nHEENT: normocephalic.\nBlood Pressure: 124/80 mmHg.\n• Medical Treatment: Continue lisinopril.\nThe plan: rest.";
        assert!(headers(page).is_empty(), "{:?}", headers(page));
    }

    #[test]
    fn inline_labels_leave_their_content_in_the_body() {
        let page = "**Allergies:** penicillin (rash)\nA/P: viral URI";
        let sections = split(page);
        assert_eq!(sections.len(), 3);
        let body = sections[1].body;
        assert_eq!(page[body.0..body.1].trim(), "penicillin (rash)");
        assert_eq!(sections[1].header.as_ref().map(|h| &page[h.range.0..h.range.1]), Some("**Allergies:**"));
        assert_eq!(sections[2].header.as_ref().map(|h| h.section), Some(Section::AssessmentPlan));
    }

    #[test]
    fn labels_normalise() {
        assert_eq!(Section::lookup("ASSESSMENT & PLAN"), Some(Section::AssessmentPlan));
        assert_eq!(Section::lookup("**Current Medications**"), Some(Section::Medications));
        assert_eq!(Section::lookup("Review  of Systems:"), Some(Section::Ros));
        assert_eq!(Section::lookup("A / P"), Some(Section::AssessmentPlan));
        assert_eq!(Section::lookup("Labs (03/28/2024)"), Some(Section::Labs));
        assert_eq!(Section::lookup("Methods"), None);
    }
}
