use super::*;
use crate::collection::tests::doc;
use crate::collection::{Collection, Options};
use crate::segment::{Field, FieldValue};

fn query(text: &str, mode: Mode) -> Query {
    Query::new(text, mode)
}

fn found(c: &Collection, q: &Query) -> Vec<String> {
    let snap = c.snapshot();
    search(&snap, q).hits.iter().map(|h| snap.doc(snap_at(&snap, h)).id.as_str().to_owned()).collect()
}

fn snap_at(snap: &Snapshot, h: &Hit) -> crate::collection::DocAt {
    crate::collection::DocAt { view: h.view, doc: snap.views[h.view].batch().pages[h.page as usize].doc.to_native() }
}

fn corpus() -> (tempfile::TempDir, Collection) {
    let dir = tempfile::tempdir().unwrap();
    let (c, _) = Collection::open("col_s", dir.path(), Options::default()).unwrap();
    c.add(doc("cats", &["Cats are small carnivorous mammals that purr."])).unwrap();
    c.add(doc("dogs", &["Dogs are loyal mammals and bark at strangers."])).unwrap();
    c.flush().unwrap();
    c.add(doc("birds", &["Birds have feathers; many birds migrate south."])).unwrap();
    let mut tagged = doc("tagged", &["A ledger of mammals kept by the museum."]);
    tagged.docs[0].fields = vec![Field { key: "dept.name".into(), value: FieldValue::Str("zoology".into()) }];
    c.add(tagged).unwrap();
    (dir, c)
}

#[test]
fn keyword_search_spans_segments_and_the_tail_with_stemming() {
    let (_d, c) = corpus();
    assert_eq!(found(&c, &query("migrating birds", Mode::Keyword)), ["birds"]);
    let mammals = found(&c, &query("mammal", Mode::Keyword));
    assert_eq!(mammals.len(), 3, "{mammals:?}");
    let snap = c.snapshot();
    let r = search(&snap, &query("purrs cats", Mode::Keyword));
    assert_eq!(r.hits[0].passages[0].matched, ["purr", "cat"]);
    assert!(r.hits[0].keyword && !r.hits[0].semantic);
}

#[test]
fn the_same_query_gives_the_same_results() {
    let (_d, c) = corpus();
    let q = query("mammals", Mode::Hybrid);
    let snap = c.snapshot();
    assert_eq!(search(&snap, &q).hits, search(&snap, &q).hits);
}

#[test]
fn quoted_phrases_filter_pages_or_warn() {
    let (_d, c) = corpus();
    let mut q = query("mammals", Mode::Keyword);
    q.phrases = vec!["loyal mammals".into()];
    assert_eq!(found(&c, &q), ["dogs"]);
    q.phrases = vec!["purple mammals".into()];
    let snap = c.snapshot();
    let r = search(&snap, &q);
    assert_eq!(r.hits.len(), 3);
    assert!(r.warnings[0].contains("purple mammals"), "{:?}", r.warnings);
}

#[test]
fn filters_restrict_pages_before_ranking() {
    let (_d, c) = corpus();
    let mut q = query("mammals", Mode::Keyword);
    q.filters.documents = Some(["dogs".to_owned(), "birds".to_owned()].into());
    assert_eq!(found(&c, &q), ["dogs"]);
    let mut q = query("mammals", Mode::Keyword);
    q.filters.metadata = vec![("dept.name".into(), vec![FieldValue::Str("zoology".into())])];
    assert_eq!(found(&c, &q), ["tagged"]);
    q.filters.metadata = vec![("dept.name".into(), vec![FieldValue::Str("botany".into())])];
    assert!(found(&c, &q).is_empty());
}

#[test]
fn deleted_documents_are_never_returned() {
    let (_d, c) = corpus();
    c.delete("cats").unwrap();
    assert!(!found(&c, &query("cats mammals", Mode::Keyword)).contains(&"cats".to_owned()));
}

#[test]
fn near_duplicate_pages_fold_into_the_best_one() {
    let dir = tempfile::tempdir().unwrap();
    let (c, _) = Collection::open("col_dup", dir.path(), Options::default()).unwrap();
    let text = "The quarterly report shows revenue growth across all regions with strong margins in the north and steady demand.";
    for id in ["a", "b", "c"] {
        c.add(doc(id, &[text])).unwrap();
    }
    let snap = c.snapshot();
    let r = search(&snap, &query("revenue growth", Mode::Keyword));
    assert_eq!(r.hits.len(), 1);
    assert_eq!((r.hits[0].duplicates, r.hits[0].also_in), (2, 2));
}

#[test]
fn a_twin_past_the_cut_still_folds_into_its_page() {
    let dir = tempfile::tempdir().unwrap();
    let (c, _) = Collection::open("col_cut", dir.path(), Options::default()).unwrap();
    let text = "The quarterly report shows revenue growth across all regions with strong margins in the north and steady demand.";
    c.add(doc("a", &[text])).unwrap();
    c.add(doc("b", &[text])).unwrap();
    c.add(doc("best", &["Revenue growth, revenue growth and more revenue growth: a slide deck on growth."])).unwrap();
    let snap = c.snapshot();
    let mut q = query("revenue growth", Mode::Keyword);
    q.k = 2;
    let r = search(&snap, &q);
    let ids: Vec<&str> = r.hits.iter().map(|h| snap.doc(snap_at(&snap, h)).id.as_str()).collect();
    // "best" ranks first; one of the twins second, and the other — third in the fused
    // list, past the cut of 2 — is folded into it, not dropped.
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_eq!(ids[0], "best");
    assert_eq!((r.hits[1].duplicates, r.hits[1].also_in), (1, 1));
    assert_eq!(r.considered, 3, "pages in the fused list before the cut");
}

#[test]
fn a_large_segment_gets_a_graph_that_answers_like_the_scan_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { hnsw_min_rows: 300, ..Options::default() };
    let (c, _) = Collection::open("col_g", dir.path(), opts).unwrap();
    let dims = 16;
    let mut rng = crate::vector::sample::Rng::new(1);
    let clusters = crate::vector::sample::Clusters::new(&mut rng, dims, 20);
    let mut unit = || clusters.sample(&mut rng, 1, 0.2);
    for i in 0..400 {
        let mut d = doc(&format!("v{i}"), &["text"]);
        d.dims = dims as u32;
        d.vectors = unit();
        d.windows = vec![crate::segment::WindowRec { page: 0, first_pos: 0, chunks: d.pages[0].chunks }];
        c.add(d).unwrap();
    }
    c.flush().unwrap();
    let mut q = query("", Mode::Semantic);
    q.vector = Some(unit());
    let scanned = found(&c, &q);
    assert_eq!(c.attach_graphs().unwrap(), 1);
    assert!(c.snapshot().views[0].graph().is_some());
    assert_eq!(found(&c, &q), scanned, "the graph's re-scored top 10 equal the scan's");
    drop(c);
    let (c, _) = Collection::open("col_g", dir.path(), opts).unwrap();
    assert!(c.snapshot().views[0].graph().is_none(), "graphs load in the background, not at open");
    assert_eq!(c.attach_graphs().unwrap(), 1);
    assert_eq!(found(&c, &q), scanned);
    let files: Vec<String> =
        std::fs::read_dir(dir.path().join("segments")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(files.iter().any(|f| f.contains("hnsw")), "{files:?}");
}

/// The integer rank keys order pages as "best score first (as `f32::total_cmp` orders
/// scores), then the smaller key" does, negative scores and ties included.
#[test]
fn rank_keys_order_as_score_then_key() {
    let scores = [3.5f32, -0.25, 0.0, -0.0, 1e-30, -7.0, 3.5, f32::INFINITY, 0.125, -1e-30];
    let mut pages: Vec<(PageKey, f32)> = Vec::new();
    for (i, s) in scores.iter().enumerate() {
        pages.push(((i as u32 % 3, 100 - i as u32), *s));
        pages.push(((2, i as u32), *s));
    }
    let mut expected = pages.clone();
    expected.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let expected: Vec<PageKey> = expected.into_iter().map(|(k, _)| k).collect();
    for depth in [1, 5, pages.len(), pages.len() + 3] {
        let keys: Vec<u128> = pages.iter().map(|&(k, s)| rank_key(k, s)).collect();
        assert_eq!(ranked(keys, depth), expected[..depth.min(pages.len())], "depth {depth}");
    }
}

/// A document titled `title` whose pages are made of the given chunks.
fn chunked(id: &str, title: &str, pages: &[&[&str]]) -> crate::segment::Batch {
    let mut b = doc(id, &pages.iter().map(|_| "").collect::<Vec<_>>());
    b.docs[0].title = Some(title.into());
    b.chunks.clear();
    for (n, chunks) in pages.iter().enumerate() {
        let text = chunks.join(" ");
        let page = &mut b.pages[n];
        page.simhash = crate::text::simhash(&text);
        page.first_chunk = b.chunks.len() as u32;
        page.chunks = chunks.len() as u32;
        let mut at = 0;
        for (pos, c) in chunks.iter().enumerate() {
            let (start, chars) = (text[..at].chars().count() as u32, c.chars().count() as u32);
            b.chunks.push(crate::segment::ChunkRec {
                page: n as u32,
                pos: pos as u32,
                start,
                end: start + chars,
                byte_start: at as u32,
                byte_end: (at + c.len()) as u32,
                kinds: 0,
                heading: None,
                meta_json: None,
                footnote_of: None,
            });
            at += c.len() + 1;
        }
        page.text = text;
    }
    b.docs[0].chunks = b.chunks.len() as u32;
    b
}

/// A passage's matched terms are the query terms its own text holds — not its
/// document's title, which BM25 indexes with every chunk — whether the keyword list
/// told which terms a chunk holds (flushed segments and the in-memory tail), or the
/// chunk was not scored at all (it holds none).
#[test]
fn matched_terms_are_the_chunk_texts_own() {
    let dir = tempfile::tempdir().unwrap();
    let (c, _) = Collection::open("col_m", dir.path(), Options::default()).unwrap();
    let flushed = chunked(
        "flushed",
        "Cats and purring",
        &[&["Cats purr when content.", "Dogs bark at the mail.", "Nothing to see here."], &["A page of otters swimming.", "Purring otters, oddly."]],
    );
    let tail = chunked("tail", "Barking dogs", &[&["The dogs were barking all night.", "Cats ignored them."], &["Quiet weather today."]]);
    // Titles that hold a term twice (then term frequencies cannot tell whether the
    // chunk holds it too), one of them with a Kelvin sign, read by the slower analysis.
    let twice =
        |id: &str| chunked(id, "Dogs, dogs and a cat", &[&["Dogs again here.", "Only birds.", "cats and cats", "A cat."], &["A dog", "Nothing"]]);
    let kelvin = chunked("kelvin", "\u{212A}ennel and kennel dogs", &[&["Kennel cough.", "Dogs only.", "Birds."]]);
    c.add(flushed).unwrap();
    c.add(twice("twice-flushed")).unwrap();
    c.add(kelvin).unwrap();
    c.flush().unwrap();
    c.add(tail).unwrap();
    c.add(twice("twice-tail")).unwrap();
    let snap = c.snapshot();
    let disk = |v: &crate::collection::view::View| matches!(v.bm25, crate::bm25::Bm25::Disk(_));
    assert!(disk(&snap.views[0]) && snap.views.iter().any(|v| !disk(v)), "a segment and the tail");
    for text in ["cats purring dogs", "barking otters", "weather cat", "mail dog purr quiet", "dog cat bird", "kennel dogs"] {
        let mut q = query(text, Mode::Keyword);
        q.passages = 5;
        let r = search(&snap, &q);
        assert!(!r.hits.is_empty(), "{text:?}");
        // Every page, found or not, as the search path's passage selection sees it.
        let allowed: Vec<Arc<Allowed>> = snap.views.iter().zip(&snap.dead).map(|(v, d)| Arc::new(Allowed::new(v, d.clone(), &q.filters))).collect();
        let mut scores = ChunkScores::new(snap.views.len());
        keyword(&snap, &allowed, (&r.terms, &[]), q.depth, &mut scores);
        let held = text::Held::new(&r.terms);
        for (vi, view) in snap.views.iter().enumerate() {
            let b = view.batch();
            for page in 0..b.pages.len() as u32 {
                for p in passages::best(&snap, vi, page, &held, &scores, 0, 5) {
                    let rec = &b.chunks[p.chunk as usize];
                    let body = &b.pages[page as usize].text.as_str()[rec.byte_start.to_native() as usize..rec.byte_end.to_native() as usize];
                    let own = text::terms(body);
                    let want: Vec<String> = r.terms.iter().filter(|t| own.contains(t)).cloned().collect();
                    assert_eq!(p.matched, want, "{text:?}: view {vi} page {page} chunk {body:?}");
                }
            }
        }
    }
}

#[test]
fn the_bounded_selection_keeps_what_a_full_sort_keeps() {
    // A small generator, so the streams are the same on every run.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (n, depth) in [(0, 5), (3, 5), (10, 10), (11, 10), (1000, 1), (5000, 100), (5000, 0), (200, 100), (201, 100)] {
        // Unique keys, as pages are: a score part with many ties, then the page.
        let keys: Vec<u128> = (0..n).map(|i| rank_key((0, i as u32), (next() % 50) as f32)).collect();
        let mut top = TopKeys::new(depth);
        keys.iter().for_each(|&k| top.push(k));
        assert_eq!(top.ranked(), ranked(keys.clone(), depth), "{n} keys, depth {depth}");
    }
}

/// An expansion is its own keyword list: a page only it matches is found (as a keyword
/// hit), its terms are the passage's matched ones after the query's, and without
/// expansions the search is the one it always was.
#[test]
fn an_expansions_list_finds_what_the_query_alone_misses() {
    let (_d, c) = corpus();
    c.add(doc("pressure", &["Hypertension in cats is treated with amlodipine."])).unwrap();
    let snap = c.snapshot();
    let plain = query("HTN cats", Mode::Keyword);
    let before = search(&snap, &plain);
    let mut q = plain.clone();
    q.expansions = crate::expand::expand("HTN cats", crate::expand::Domain::Medical, None);
    assert_eq!(q.expansions.len(), 1, "{:?}", q.expansions);
    let r = search(&snap, &q);
    let ids: Vec<&str> = r.hits.iter().map(|h| snap.doc(snap_at(&snap, h)).id.as_str()).collect();
    assert!(ids[..2].contains(&"pressure") && ids[..2].contains(&"cats"), "{ids:?}");
    assert!(r.hits.iter().all(|h| h.keyword && !h.semantic));
    assert_eq!(r.expansion_terms, ["hypertens"]);
    let at = ids.iter().position(|id| *id == "pressure").unwrap();
    assert_eq!(r.hits[at].passages[0].matched, ["cat", "hypertens"]);
    assert_eq!(r.expansions, q.expansions);
    q.expansions.clear();
    assert_eq!(search(&snap, &q).hits, before.hits);
    // An expansion whose own terms the collection lacks would be the query's list again.
    q.expansions = crate::expand::expand("COPD cats", crate::expand::Domain::Medical, None);
    q.text = "COPD cats".into();
    assert_eq!(q.expansions.len(), 1);
    let r = search(&snap, &q);
    assert!(r.expansions.is_empty() && r.expansion_terms.is_empty());
    q.expansions.clear();
    assert_eq!(r.hits, search(&snap, &q).hits);
    // Only the expansion matches: the page is still found.
    let mut q = query("HTN", Mode::Keyword);
    assert!(search(&snap, &q).hits.is_empty());
    q.expansions = crate::expand::expand("HTN", crate::expand::Domain::Medical, None);
    let r = search(&snap, &q);
    assert_eq!(r.hits.len(), 1);
    assert_eq!(r.hits[0].passages[0].matched, ["hypertens"]);
}

/// A word quoted twice is named once in the warning (it still weighs twice).
#[test]
fn the_emphasis_warning_names_each_word_once() {
    let w = super::emphasis_warning(&["ADAR1".to_string(), "ADAR1".to_string()]);
    assert_eq!(w.matches("\"ADAR1\"").count(), 1, "{w}");
    assert!(w.ends_with("pages without it kept."), "{w}");
    let two = super::emphasis_warning(&["a".to_string(), "b".to_string(), "a".to_string()]);
    assert!(two.contains("\"a\", \"b\" weighed") && two.ends_with("them kept."), "{two}");
}
