use super::*;
use crate::collection::tests::doc;
use crate::collection::{Collection, Options};
use crate::segment::{Field, FieldValue};

fn query(text: &str, mode: Mode) -> Query {
    Query {
        text: text.into(),
        phrases: vec![],
        mode,
        k: 10,
        passages: 2,
        vector: None,
        filters: Filters::default(),
        rrf_k: 60.0,
        weights: [1.0, 1.0],
        depth: 100,
    }
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

