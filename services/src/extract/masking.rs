//! What the reader sees of a page under `mask_identifiers`: the stored text with its
//! identifiers masked (`identify::mask_spans`, the embedder's own masking), and the map
//! from the masked text back to the stored one. Excerpts are verified against what the
//! reader saw (it can only copy that), then their offsets are moved to the stored page
//! text, which `GET …/pages/{n}` returns: a span that covers a placeholder covers the
//! identifier it stands for.

use quarry_index::identify::{self, Kinds};

/// A run of the masked text: copied from the stored text, or a placeholder.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// Characters of the masked text.
    seen: (u32, u32),
    /// Characters of the stored text.
    stored: (u32, u32),
    placeholder: bool,
}

pub struct Masked {
    pub text: String,
    runs: Vec<Run>,
}

/// `stored` as the reader sees it under `mask_identifiers`.
pub fn mask(stored: &str) -> Masked {
    let kinds = Kinds::default_mask();
    let spans = identify::scan(stored, kinds);
    let text = identify::mask_spans(stored, &spans, kinds, usize::MAX);
    let mut runs = Vec::new();
    let (mut at, mut m) = (0usize, 0usize);
    let (mut at_c, mut m_c) = (0u32, 0u32);
    let copy = |runs: &mut Vec<Run>, from: &str, at_c: &mut u32, m_c: &mut u32| {
        let n = from.chars().count() as u32;
        runs.push(Run { seen: (*m_c, *m_c + n), stored: (*at_c, *at_c + n), placeholder: false });
        *at_c += n;
        *m_c += n;
    };
    for s in spans.iter().filter(|s| kinds.contains(s.kind)) {
        if s.start < at {
            continue;
        }
        let before = &stored[at..s.start];
        copy(&mut runs, before, &mut at_c, &mut m_c);
        m += before.len();
        // The placeholder `[KIND-n]` mask_spans wrote here.
        let len = text[m..].find(']').map_or(0, |i| i + 1);
        let (ph, id) = (len as u32, stored[s.start..s.end].chars().count() as u32);
        runs.push(Run { seen: (m_c, m_c + ph), stored: (at_c, at_c + id), placeholder: true });
        m += len;
        m_c += ph;
        at_c += id;
        at = s.end;
    }
    copy(&mut runs, &stored[at..], &mut at_c, &mut m_c);
    Masked { text, runs }
}

impl Masked {
    /// Characters `start..end` of the masked text as characters of the stored text.
    pub fn to_stored(&self, start: u32, end: u32) -> (u32, u32) {
        let run = |c: u32| self.runs.iter().find(|r| r.seen.0 <= c && c < r.seen.1).or(self.runs.last());
        let s = run(start).map_or(start, |r| if r.placeholder { r.stored.0 } else { r.stored.0 + (start - r.seen.0).min(r.stored.1 - r.stored.0) });
        let last = end.saturating_sub(1).max(start);
        let e = run(last).map_or(end, |r| if r.placeholder { r.stored.1 } else { r.stored.0 + (end - r.seen.0).min(r.stored.1 - r.stored.0) });
        (s, e.max(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str, (a, b): (u32, u32)) -> String {
        s.chars().skip(a as usize).take((b - a) as usize).collect()
    }

    #[test]
    fn spans_of_the_masked_text_map_to_the_stored_text() {
        let stored = "Café note. Call (617) 555-0143 today, or email l.garcia@example.com — thanks.";
        let m = mask(stored);
        assert!(m.text.contains("[PHONE-1]") && m.text.contains("[EMAIL-1]"), "{}", m.text);
        let find = |s: &str| {
            let b = m.text.find(s).unwrap();
            let start = m.text[..b].chars().count() as u32;
            (start, start + s.chars().count() as u32)
        };
        for (seen, want) in [
            ("Café note.", "Café note."),
            ("Call [PHONE-1] today", "Call (617) 555-0143 today"),
            ("or email [EMAIL-1] — thanks.", "or email l.garcia@example.com — thanks."),
            ("[PHONE-1]", "(617) 555-0143"),
        ] {
            let (a, b) = find(seen);
            assert_eq!(chars(stored, m.to_stored(a, b)), want, "{seen}");
        }
    }

    #[test]
    fn a_text_without_identifiers_maps_to_itself() {
        let m = mask("Nothing to hide here.");
        assert_eq!(m.text, "Nothing to hide here.");
        assert_eq!(m.to_stored(8, 12), (8, 12));
    }
}
