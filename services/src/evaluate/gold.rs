//! The gold of an evaluation: each question's relevant items resolved to pages before
//! any search runs, in one pass over the collection's live pages.
//!
//! An item names one page:
//! - by citation (`AL-` and 8 hex digits, as search answers it);
//! - by document and page: `document` is a document id or its title, `page` its index
//!   from 0; a document named without a page resolves when it has one page only;
//! - by text: the page whose text contains the snippet, optionally scoped by `document`
//!   (and `page`). Matching is on normalised text: lower-cased (Unicode), every run of
//!   whitespace (spaces, tabs, newlines, form feeds) read as one space, leading and
//!   trailing whitespace ignored. Punctuation, accents and hyphens must match as written.
//!
//! Titles match under the same normalisation; ids match exactly and win over titles.
//! An item that names no page, or more than one (a title two documents share, a snippet
//! on several pages), is not guessed: it is left out of the gold with a note saying
//! why, so a retriever is never blamed for it. Two items naming the same page count
//! once, with the larger gain.

use std::collections::HashMap;

use aho_corasick::AhoCorasick;
use quarry_index::collection::Snapshot;

use super::metrics::Judged;

/// One relevant item as the caller gave it (checked at the edge).
#[derive(Debug, Clone, PartialEq)]
pub enum RelevantItem {
    Citation(String),
    Page { document: String, page: Option<u32> },
    Text { text: String, document: Option<String>, page: Option<u32> },
}

impl RelevantItem {
    /// How notes and per-question reports name the item.
    pub fn label(&self) -> String {
        match self {
            RelevantItem::Citation(c) => c.clone(),
            RelevantItem::Page { document, page: Some(n) } => format!("{document}, page {n}"),
            RelevantItem::Page { document, page: None } => document.clone(),
            RelevantItem::Text { text, .. } => text.clone(),
        }
    }
}

/// One question's relevant items and their gains (same length).
#[derive(Debug, Clone)]
pub struct Wanted {
    pub items: Vec<RelevantItem>,
    pub gains: Vec<f64>,
}

/// One live page, as the resolver reads it.
#[derive(Debug, Clone, Copy)]
pub struct PageInfo<'a> {
    pub citation: u32,
    pub doc_id: &'a str,
    pub title: Option<&'a str>,
    /// Page index from 0.
    pub n: u32,
    /// Pages of its document.
    pub doc_pages: u32,
    pub text: &'a str,
}

/// A question's gold: distinct pages with their gains, and a label per page (its
/// first item's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gold {
    pub pages: Vec<Judged>,
    pub labels: Vec<String>,
    /// Items that did not resolve or repeated a page, as "relevant[j] …: why".
    pub notes: Vec<String>,
}

/// Every live page of a snapshot, documents in indexing order, pages in order.
pub fn pages(snap: &Snapshot) -> impl Iterator<Item = PageInfo<'_>> {
    snap.docs().flat_map(move |at| {
        let doc = snap.doc_view(at);
        (0..doc.pages).filter_map(move |n| {
            let p = snap.page_view(at, n)?;
            Some(PageInfo { citation: p.citation, doc_id: doc.id, title: doc.title, n: p.n, doc_pages: doc.pages, text: p.text })
        })
    })
}

/// Lower case, whitespace runs as one space, trimmed.
pub fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// `AL-` (any case) and exactly 8 hex digits.
pub fn parse_citation(s: &str) -> Option<u32> {
    let s = s.trim();
    let hex = s.get(..3).filter(|p| p.eq_ignore_ascii_case("al-")).and(s.get(3..))?;
    if hex.len() != 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(hex, 16).ok()
}

pub fn citation_text(page: u32) -> String {
    format!("AL-{page:08X}")
}

/// Resolves every question's items against `pages` (one pass).
pub fn resolve<'p>(questions: &[Wanted], pages: impl Iterator<Item = PageInfo<'p>>) -> Vec<Gold> {
    let flat: Vec<(usize, usize, &RelevantItem)> =
        questions.iter().enumerate().flat_map(|(q, w)| w.items.iter().enumerate().map(move |(j, item)| (q, j, item))).collect();
    let mut scan = Scan::new(&flat);
    for page in pages {
        scan.page(&page);
    }
    let mut gold: Vec<Gold> = vec![Gold::default(); questions.len()];
    let mut chosen: Vec<Vec<(usize, u32)>> = vec![Vec::new(); questions.len()];
    for (f, &(q, j, item)) in flat.iter().enumerate() {
        match scan.decide(f, item) {
            Ok(page) => chosen[q].push((j, page)),
            Err(why) => gold[q].notes.push(format!("relevant[{j}] ({}): {why}", item.label())),
        }
    }
    for (q, picks) in chosen.into_iter().enumerate() {
        merge(&mut gold[q], &questions[q], picks);
    }
    gold
}

/// Adds the resolved items to the gold, one entry per page with the largest gain.
fn merge(gold: &mut Gold, wanted: &Wanted, picks: Vec<(usize, u32)>) {
    let mut first_of: HashMap<u32, (usize, usize)> = HashMap::new();
    for (j, page) in picks {
        let gain = wanted.gains[j];
        match first_of.get(&page) {
            Some(&(at, first_j)) => {
                let kept = gold.pages[at].gain.max(gain);
                gold.pages[at].gain = kept;
                gold.notes.push(format!(
                    "relevant[{j}] ({}) names the same page as relevant[{first_j}] ({}); it counts once, with gain {kept}.",
                    wanted.items[j].label(),
                    citation_text(page)
                ));
            }
            None => {
                first_of.insert(page, (gold.pages.len(), j));
                gold.pages.push(Judged { page, gain });
                gold.labels.push(wanted.items[j].label());
            }
        }
    }
}

/// A page an item matched; `by_title` when its document was named by title.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Match {
    page: u32,
    by_title: bool,
}

/// What a flattened item looks for.
#[derive(Debug, Clone, Copy)]
enum Want {
    /// `None`: not a citation id.
    Citation(Option<u32>),
    Page(Option<u32>),
    Text {
        scoped: bool,
        page: Option<u32>,
    },
}

/// The scan's state: what each flattened item is looking for, and what it found.
struct Scan {
    wants: Vec<Want>,
    citations: HashMap<u32, Vec<usize>>,
    /// Items naming a document (Page items, and Text items scoped by one), by the
    /// document string as given (for ids) and normalised (for titles).
    by_id: HashMap<String, Vec<usize>>,
    by_title: HashMap<String, Vec<usize>>,
    /// Text items: the snippet automaton and, per pattern, the items using it.
    snippets: Option<AhoCorasick>,
    pattern_items: Vec<Vec<usize>>,
    /// Per item: the pages it matched, and the page count of a document it named.
    found: Vec<Vec<Match>>,
    doc_pages: Vec<Option<u32>>,
    /// The current document's id and normalised title, computed once per document.
    current: (String, Option<String>),
}

impl Scan {
    fn new(flat: &[(usize, usize, &RelevantItem)]) -> Scan {
        let mut scan = Scan {
            wants: Vec::with_capacity(flat.len()),
            citations: HashMap::new(),
            by_id: HashMap::new(),
            by_title: HashMap::new(),
            snippets: None,
            pattern_items: Vec::new(),
            found: vec![Vec::new(); flat.len()],
            doc_pages: vec![None; flat.len()],
            current: (String::new(), None),
        };
        let mut patterns: Vec<String> = Vec::new();
        let mut pattern_of: HashMap<String, usize> = HashMap::new();
        for (f, &(_, _, item)) in flat.iter().enumerate() {
            let (want, document) = match item {
                RelevantItem::Citation(c) => (Want::Citation(parse_citation(c)), None),
                RelevantItem::Page { document, page } => (Want::Page(*page), Some(document)),
                RelevantItem::Text { text, document, page } => {
                    let norm = normalize(text);
                    let p = *pattern_of.entry(norm.clone()).or_insert_with(|| {
                        patterns.push(norm);
                        scan.pattern_items.push(Vec::new());
                        patterns.len() - 1
                    });
                    scan.pattern_items[p].push(f);
                    (Want::Text { scoped: document.is_some(), page: *page }, document.as_ref())
                }
            };
            if let Want::Citation(Some(c)) = want {
                scan.citations.entry(c).or_default().push(f);
            }
            if let Some(d) = document {
                scan.by_id.entry(d.clone()).or_default().push(f);
                scan.by_title.entry(normalize(d)).or_default().push(f);
            }
            scan.wants.push(want);
        }
        if !patterns.is_empty() {
            scan.snippets = Some(AhoCorasick::new(&patterns).expect("snippet patterns build an automaton"));
        }
        scan
    }

    fn page(&mut self, p: &PageInfo<'_>) {
        if let Some(items) = self.citations.get(&p.citation) {
            for &f in items {
                self.found[f].push(Match { page: p.citation, by_title: false });
            }
        }
        let snippet_hits = self.snippet_hits(p.text);
        for &f in &snippet_hits {
            if matches!(self.wants[f], Want::Text { scoped: false, .. }) {
                self.push(f, Match { page: p.citation, by_title: false });
            }
        }
        if self.current.0 != p.doc_id {
            self.current = (p.doc_id.to_owned(), p.title.map(normalize));
        }
        let by_id = self.by_id.get(p.doc_id).into_iter().flatten().map(|&f| (f, false));
        let by_title = self.current.1.as_ref().and_then(|t| self.by_title.get(t)).into_iter().flatten().map(|&f| (f, true));
        let named: Vec<(usize, bool)> = by_id.chain(by_title).collect();
        for (f, by_title) in named {
            self.doc_pages[f] = Some(p.doc_pages);
            if self.wants_page(f, p, &snippet_hits) {
                self.push(f, Match { page: p.citation, by_title });
            }
        }
    }

    /// The Text items whose snippet the page holds, sorted.
    fn snippet_hits(&self, text: &str) -> Vec<usize> {
        let Some(ac) = &self.snippets else {
            return Vec::new();
        };
        let text = normalize(text);
        let mut hits: Vec<usize> = Vec::new();
        for m in ac.find_overlapping_iter(&text) {
            hits.extend(&self.pattern_items[m.pattern().as_usize()]);
        }
        hits.sort_unstable();
        hits.dedup();
        hits
    }

    /// Whether item `f`, which names this page's document, wants this page.
    fn wants_page(&self, f: usize, p: &PageInfo<'_>, snippet_hits: &[usize]) -> bool {
        match self.wants[f] {
            Want::Page(Some(n)) => p.n == n,
            Want::Page(None) => p.n == 0 && p.doc_pages == 1,
            Want::Text { page, .. } => page.is_none_or(|n| p.n == n) && snippet_hits.binary_search(&f).is_ok(),
            Want::Citation(_) => false,
        }
    }

    fn push(&mut self, f: usize, m: Match) {
        if !self.found[f].contains(&m) {
            self.found[f].push(m);
        }
    }

    /// The one page item `f` names, or why it names none or several.
    fn decide(&self, f: usize, item: &RelevantItem) -> Result<u32, String> {
        let found = &self.found[f];
        // An id names one document; a title may name several: ids win.
        let by_id: Vec<u32> = found.iter().filter(|m| !m.by_title).map(|m| m.page).collect();
        let mut pages = if by_id.is_empty() { found.iter().map(|m| m.page).collect() } else { by_id };
        pages.sort_unstable();
        pages.dedup();
        if let [page] = pages[..] {
            return Ok(page);
        }
        let several = pages.len();
        let pages_of_doc = self.doc_pages[f];
        Err(match (self.wants[f], item) {
            (Want::Citation(None), _) => "not a citation id (AL- and 8 hex digits).".to_owned(),
            (Want::Citation(Some(_)), _) => "no page of this collection has this citation.".to_owned(),
            (Want::Page(_), _) if several > 1 => {
                format!("{several} documents have this title; name the document by its id.")
            }
            (Want::Page(_), _) if pages_of_doc.is_none() => "no document has this id or title.".to_owned(),
            (Want::Page(Some(n)), _) => {
                format!("the document has {} page(s), counted from 0; page {n} is not one of them.", pages_of_doc.unwrap_or(0))
            }
            (Want::Page(None), _) => format!("the document has {} pages; say which with page (from 0).", pages_of_doc.unwrap_or(0)),
            (Want::Text { .. }, _) if several > 1 => {
                format!("the text is on {several} pages; add document (and page) to say which.")
            }
            (Want::Text { scoped: true, .. }, RelevantItem::Text { document: Some(d), .. }) if pages_of_doc.is_none() => {
                format!("no document has the id or title \"{d}\".")
            }
            (Want::Text { scoped: true, .. }, _) => "no page of that document (and page) contains this text.".to_owned(),
            (Want::Text { .. }, _) => "no page contains this text.".to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::metrics;
    use super::*;

    /// (citation, doc id, title, pages' texts)
    const DOCS: &[(u32, &str, &str, &[&str])] = &[
        (0x10, "d1", "Water law", &["Rivers belong to the state.", "Wells need a permit.", "Reservoir   storage is\nlimited to 40% of inflow."]),
        (0x20, "d2", "Audit rules", &["We permit ONE audit per year."]),
        (0x30, "d3", "Audit rules", &["Audits are annual."]),
        (0x40, "d4", "Copy", &["Wells need a permit."]),
    ];

    fn pages() -> Vec<PageInfo<'static>> {
        DOCS.iter()
            .flat_map(|&(base, id, title, texts)| {
                texts.iter().enumerate().map(move |(n, text)| PageInfo {
                    citation: base + n as u32,
                    doc_id: id,
                    title: Some(title),
                    n: n as u32,
                    doc_pages: texts.len() as u32,
                    text,
                })
            })
            .collect()
    }

    fn page(document: &str, page: Option<u32>) -> RelevantItem {
        RelevantItem::Page { document: document.into(), page }
    }

    fn text(text: &str, document: Option<&str>, page: Option<u32>) -> RelevantItem {
        RelevantItem::Text { text: text.into(), document: document.map(Into::into), page }
    }

    fn cite(c: &str) -> RelevantItem {
        RelevantItem::Citation(c.into())
    }

    /// Each item alone: the page it resolves to, or its note.
    fn one(item: RelevantItem) -> Result<u32, String> {
        let g = resolve(&[Wanted { items: vec![item], gains: vec![1.0] }], pages().into_iter()).remove(0);
        match (&g.pages[..], &g.notes[..]) {
            ([j], []) => Ok(j.page),
            ([], [note]) => Err(note.clone()),
            _ => panic!("{g:?}"),
        }
    }

    #[test]
    fn every_kind_of_item_names_its_page() {
        assert_eq!(one(cite("AL-00000012")), Ok(0x12));
        assert_eq!(one(cite("al-00000012")), Ok(0x12), "the prefix and the hex digits in any case");
        assert_eq!(one(page("Water law", Some(2))), Ok(0x12), "by title");
        assert_eq!(one(page("water  LAW", Some(1))), Ok(0x11), "titles match normalised");
        assert_eq!(one(page("d1", Some(0))), Ok(0x10), "by id");
        assert_eq!(one(page("d2", None)), Ok(0x20), "a one-page document needs no page");
        assert_eq!(one(page("d2", Some(0))), Ok(0x20), "an id wins over the title d2 shares with d3");
        assert_eq!(one(text("permit one   AUDIT\nper year", None, None)), Ok(0x20), "case and whitespace runs are ignored");
        assert_eq!(one(text("storage is limited", None, None)), Ok(0x12), "the page's own whitespace runs too");
        assert_eq!(one(text("Wells need a permit.", Some("Copy"), None)), Ok(0x40), "a document scopes the snippet");
        assert_eq!(one(text("Wells need a permit.", Some("d1"), Some(1))), Ok(0x11));
    }

    #[test]
    fn an_item_naming_no_page_or_several_is_a_note() {
        let cases = [
            (cite("AL-DEADBEEF"), "no page of this collection has this citation"),
            (cite("page 3"), "not a citation id"),
            (page("Water law", Some(7)), "has 3 page(s), counted from 0; page 7"),
            (page("Water law", None), "has 3 pages; say which"),
            (page("Nope", Some(0)), "no document has this id or title"),
            (page("Audit rules", Some(0)), "2 documents have this title"),
            (text("Wells need a permit", None, None), "the text is on 2 pages"),
            (text("not anywhere", None, None), "no page contains this text"),
            (text("Wells", Some("Nope"), None), "no document has the id or title \"Nope\""),
            (text("Wells", Some("d1"), Some(0)), "no page of that document (and page)"),
            (text("permit", None, None), "the text is on 3 pages"),
        ];
        for (item, needle) in cases {
            let label = item.label();
            let note = one(item).expect_err(needle);
            assert!(note.starts_with(&format!("relevant[0] ({label}): ")) && note.contains(needle), "{note}");
        }
    }

    #[test]
    fn duplicate_items_count_once_with_the_larger_gain() {
        let wanted = Wanted { items: vec![cite("AL-00000012"), page("Water law", Some(2)), page("d2", None)], gains: vec![1.0, 3.0, 2.0] };
        let g = resolve(&[wanted], pages().into_iter()).remove(0);
        assert_eq!(g.pages, [Judged { page: 0x12, gain: 3.0 }, Judged { page: 0x20, gain: 2.0 }]);
        assert_eq!(g.labels, ["AL-00000012", "d2"]);
        assert_eq!(g.notes.len(), 1);
        assert!(g.notes[0].contains("relevant[1] (Water law, page 2) names the same page as relevant[0] (AL-00000012)"), "{:?}", g.notes);
        // Ranked 0x12, x; k = 10. With the duplicate merged:
        // DCG = 3/log2(2) = 3; IDCG = 3 + 2/log2(3) = 4.26186; nDCG = 0.70392.
        // (Kept twice, the ideal list would be 3, 2, 1: IDCG = 4.76186 and nDCG 0.63001.)
        let s = metrics::score(&[0x12, 0x99], &g.pages, 10);
        assert!((s.ndcg - 0.70392).abs() < 1e-4, "{s:?}");
        assert_eq!(s.recall, 0.5);
    }

    #[test]
    fn an_unresolvable_item_leaves_the_metrics_alone() {
        let with = Wanted { items: vec![page("d2", None), cite("AL-DEADBEEF")], gains: vec![1.0, 1.0] };
        let without = Wanted { items: vec![page("d2", None)], gains: vec![1.0] };
        let g = resolve(&[with, without], pages().into_iter());
        assert_eq!(g[0].pages, g[1].pages);
        assert_eq!((g[0].notes.len(), g[1].notes.len()), (1, 0));
        let s = metrics::score(&[0x20], &g[0].pages, 10);
        assert_eq!((s.ndcg, s.recall, s.reciprocal_rank, s.average_precision), (1.0, 1.0, 1.0, 1.0));
    }

    #[test]
    fn questions_resolve_independently_in_one_pass() {
        let g = resolve(
            &[
                Wanted { items: vec![], gains: vec![] },
                Wanted { items: vec![text("audits are annual", None, None), page("d1", Some(0))], gains: vec![1.0, 2.0] },
            ],
            pages().into_iter(),
        );
        assert_eq!(g[0], Gold::default());
        assert_eq!(g[1].pages, [Judged { page: 0x30, gain: 1.0 }, Judged { page: 0x10, gain: 2.0 }]);
    }

    #[test]
    fn normalising_and_citations() {
        assert_eq!(normalize("  Tabs\tand\n\n\u{c}NEWLINES  "), "tabs and newlines");
        assert_eq!(normalize("Ünïcode ÉTÉ"), "ünïcode été");
        assert_eq!(normalize(" \n "), "");
        assert_eq!(parse_citation("AL-0000ABCD"), Some(0xABCD));
        assert_eq!(parse_citation("al-0000abcd"), Some(0xABCD));
        for bad in ["AL-123", "XL-00000000", "AL-0000ABCG", "AL-0000ABCD0", "", "AL-"] {
            assert_eq!(parse_citation(bad), None, "{bad}");
        }
        assert_eq!(citation_text(0xABCD), "AL-0000ABCD");
    }
}
