//! Citation integrity, by code: the `[n]` markers of a model's answer resolved against
//! the sources the research actually retrieved. A marker naming a source that exists
//! is renumbered so that numbering is dense and in order of first use (`[3] … [1] … [3]`
//! becomes `[1] … [2] … [1]`); one naming nothing is removed from the text (with the
//! space before it) and reported. `[1, 3]`, `[1; 3]` and `[1-3]` are read as the
//! markers they list and written back as `[1][3]`, the one form clients parse.

/// A marker the answer held that resolved to nothing, as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    pub marker: String,
    /// The source numbers in it that do not exist.
    pub missing: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cited {
    pub text: String,
    /// The retrieved sources (0-based, in retrieval order) in order of first use: the
    /// source the new `[k]` names is `order[k - 1]`.
    pub order: Vec<usize>,
    pub removed: Vec<Removed>,
}

/// A marker in `text` at bytes `start..end` listing these numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub start: usize,
    pub end: usize,
    pub numbers: Vec<u32>,
}

/// The most numbers one marker may list (`[1-500]` is not a citation).
const MAX_LISTED: u32 = 20;

/// Every `[n]`-style marker of `text`, in order.
pub fn markers(text: &str) -> Vec<Marker> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'[' {
            if let Some((end, numbers)) = marker_at(b, i) {
                out.push(Marker { start: i, end, numbers });
                i = end;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// The marker starting at `b[at] == '['`: digits separated by `,` `;` or spaces, or
/// a range `a-b`, then `]`; not a link's text (`[1](…)`).
fn marker_at(b: &[u8], at: usize) -> Option<(usize, Vec<u32>)> {
    let close = at + 1 + b[at + 1..].iter().take(40).position(|&c| c == b']')?;
    let inner = std::str::from_utf8(&b[at + 1..close]).ok()?;
    if inner.trim().is_empty() || b.get(close + 1) == Some(&b'(') {
        return None;
    }
    let mut numbers = Vec::new();
    for part in inner.split([',', ';']) {
        let part = part.trim();
        let range = part.split_once(['-', '–']).map(|(a, z)| (a.trim(), z.trim()));
        match range {
            Some((a, z)) => {
                let (a, z) = (number(a)?, number(z)?);
                if z < a || z - a >= MAX_LISTED {
                    return None;
                }
                numbers.extend(a..=z);
            }
            None => numbers.extend(part.split_whitespace().map(number).collect::<Option<Vec<_>>>()?),
        }
    }
    (!numbers.is_empty() && numbers.len() <= MAX_LISTED as usize).then_some((close + 1, numbers))
}

fn number(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 4 || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `text` with its markers resolved against `retrieved` sources numbered `1..=retrieved`.
pub fn resolve(text: &str, retrieved: usize) -> Cited {
    let mut order: Vec<usize> = Vec::new();
    let mut removed = Vec::new();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for m in markers(text) {
        let mut written = Vec::new();
        let mut missing = Vec::new();
        for &n in &m.numbers {
            if n == 0 || n as usize > retrieved {
                missing.push(n);
                continue;
            }
            let source = n as usize - 1;
            let k = match order.iter().position(|&s| s == source) {
                Some(k) => k,
                None => {
                    order.push(source);
                    order.len() - 1
                }
            };
            if !written.contains(&k) {
                written.push(k);
            }
        }
        let before = &text[at..m.start];
        if written.is_empty() {
            // The marker goes, and the space that set it off.
            out.push_str(before.trim_end_matches([' ', '\u{a0}']));
        } else {
            out.push_str(before);
            for k in written {
                out.push_str(&format!("[{}]", k + 1));
            }
        }
        if !missing.is_empty() {
            missing.dedup();
            removed.push(Removed { marker: text[m.start..m.end].to_owned(), missing });
        }
        at = m.end;
    }
    out.push_str(&text[at..]);
    Cited { text: out, order, removed }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_becomes_dense_in_order_of_first_use() {
        let c = resolve("Audits are yearly [3]. Records stay three years [1]. Both apply [3][1].", 4);
        assert_eq!(c.text, "Audits are yearly [1]. Records stay three years [2]. Both apply [1][2].");
        assert_eq!(c.order, vec![2, 0]);
        assert!(c.removed.is_empty());
    }

    #[test]
    fn a_marker_with_no_source_is_removed_and_reported() {
        let c = resolve("One audit a year [7]. Notice is required [2].", 4);
        assert_eq!(c.text, "One audit a year. Notice is required [1].");
        assert_eq!(c.removed, vec![Removed { marker: "[7]".into(), missing: vec![7] }]);
        assert_eq!(c.order, vec![1]);
        let c = resolve("Mixed [2, 9] and zero [0].", 3);
        assert_eq!(c.text, "Mixed [1] and zero.");
        assert_eq!(c.removed.iter().map(|r| r.missing.clone()).collect::<Vec<_>>(), vec![vec![9], vec![0]]);
    }

    #[test]
    fn lists_and_ranges_are_read_and_other_brackets_left_alone() {
        let c = resolve("See [1, 3] and [2-3]; [a] [1](http://x) [ ] [12345] stay.", 3);
        assert_eq!(c.text, "See [1][2] and [3][2]; [a] [1](http://x) [ ] [12345] stay.");
        assert_eq!(markers("x [1;2] y").len(), 1);
        assert_eq!(markers("[1-100]").len(), 0);
    }

    #[test]
    fn markers_in_other_scripts_keep_their_text() {
        let c = resolve("قال مالك [2]。東京 [1] 🙂 [5]", 2);
        assert_eq!(c.text, "قال مالك [1]。東京 [2] 🙂");
        assert_eq!(c.removed.len(), 1);
    }
}
