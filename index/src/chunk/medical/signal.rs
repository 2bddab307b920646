//! How strongly a document reads as a clinical note (≥ 1.0: use the medical chunker).
//!
//! Research abstracts share a note's vocabulary (doses, diagnoses, lab values) but not
//! its layout: an abstract is one paragraph, or labelled BACKGROUND / METHODS / RESULTS,
//! never CHIEF COMPLAINT / HPI / ALLERGIES. So the signal is carried by section headers
//! at line starts (each distinct clinical section once; those an abstract may also have,
//! such as Results or Assessment, count half), and content cues (vitals, allergy
//! statements, dosing abbreviations) add at most 0.45, never enough on their own.

use super::cues;
use super::sections::{self, Section};

/// Only the start of a long document is read: a note's headers come early.
const READ_BYTES: usize = 60_000;
const CONTENT_CAP: f32 = 0.45;
const PER_CUE: f32 = 0.1;

pub fn signal(pages: &[&str]) -> f32 {
    let mut seen: Vec<Section> = Vec::new();
    let (mut headers, mut cues_found) = (0.0f32, 0usize);
    let mut budget = READ_BYTES;
    for page in pages {
        if budget == 0 {
            break;
        }
        let text = prefix(page, budget);
        budget -= text.len();
        for section in sections::split(text).into_iter().filter_map(|s| s.header.map(|h| h.section)) {
            if !seen.contains(&section) {
                seen.push(section);
                headers += section.weight();
            }
        }
        cues_found += cues::note_cues(text);
    }
    headers + (cues_found as f32 * PER_CUE).min(CONTENT_CAP)
}

/// The longest prefix of `text` of at most `n` bytes that ends on a char boundary.
fn prefix(text: &str, n: usize) -> &str {
    if text.len() <= n {
        return text;
    }
    let mut end = n;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
