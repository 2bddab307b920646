use super::*;
use crate::segment::{ChunkRec, DocRec, PageRec};

/// A one-document batch; each page is one chunk.
pub(crate) fn doc(id: &str, pages: &[&str]) -> Batch {
    let mut b = Batch::default();
    b.docs.push(DocRec {
        id: id.into(),
        title: Some(format!("title of {id}")),
        author: None,
        metadata_json: "{}".into(),
        meta_json: "{}".into(),
        chunker: "prose".into(),
        format: "text".into(),
        embedder: "none".into(),
        created_at: "2026-11-30T00:00:00Z".into(),
        chars: pages.iter().map(|p| p.chars().count() as u64).sum(),
        first_page: 0,
        pages: pages.len() as u32,
        chunks: pages.len() as u32,
        fields: vec![],
        dates: vec![],
    });
    for (n, text) in pages.iter().enumerate() {
        b.pages.push(PageRec {
            doc: 0,
            n: n as u32,
            number: None,
            volume: None,
            heading: None,
            text: (*text).into(),
            citation: 0,
            simhash: crate::text::simhash(text),
            first_chunk: n as u32,
            chunks: 1,
            dates: vec![],
            meta_json: Some(format!(r#"{{"page":{n}}}"#)),
        });
        let len = text.chars().count() as u32;
        b.chunks.push(ChunkRec {
            page: n as u32,
            pos: 0,
            start: 0,
            end: len,
            byte_start: 0,
            byte_end: text.len() as u32,
            kinds: 0,
            heading: None,
            meta_json: Some(format!(r#"{{"chunk":{n}}}"#)),
            footnote_of: (n > 0).then_some(0),
        });
    }
    b
}

fn ids(s: &Snapshot) -> Vec<String> {
    let mut v: Vec<String> = s.docs().map(|at| s.doc(at).id.as_str().to_owned()).collect();
    v.sort();
    v
}

fn citations(s: &Snapshot) -> Vec<(String, u32, u32)> {
    let mut v: Vec<_> = s
        .docs()
        .flat_map(|at| {
            let id = s.doc(at).id.as_str().to_owned();
            (0..s.doc(at).pages.to_native()).map(move |n| (id.clone(), n, 0))
        })
        .map(|(id, n, _)| {
            let at = s.find(&id).unwrap();
            (id, n, s.page(at, n).unwrap().citation.to_native())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn an_added_document_is_visible_and_survives_reopen_with_its_citations() {
    let dir = tempfile::tempdir().unwrap();
    let (c, _) = Collection::open("col_a", dir.path(), Options::default()).unwrap();
    c.add(doc("d1", &["first page", "second page"])).unwrap();
    c.add(doc("d2", &["other"])).unwrap();
    let snap = c.snapshot();
    assert_eq!(ids(&snap), ["d1", "d2"]);
    // Stored: the text (26), the titles ("title of d1", 11 each) and the metadata ("{}").
    assert_eq!(snap.counts(), Counts { documents: 2, pages: 3, chunks: 3, chars: 26, stored: 52, by_chunker: [0, 0, 0, 2] });
    let before = citations(&snap);
    drop((c, snap));
    let (c, rec) = Collection::open("col_a", dir.path(), Options::default()).unwrap();
    assert_eq!(rec.replayed_ops, 2);
    assert_eq!(citations(&c.snapshot()), before);
    assert!(matches!(c.add(doc("d1", &["again"])), Err(CollectionError::DuplicateId(_))));
}

/// What the storage allowance counts is the same in the batch an add writes and in the
/// snapshot that holds it, labels and metadata included, also once flushed.
#[test]
fn a_documents_stored_characters_are_its_text_labels_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let (c, _) = Collection::open("col_a", dir.path(), Options::default()).unwrap();
    let mut b = doc("d1", &["ünïcode text", "more"]);
    b.docs[0].author = Some("Ann".into());
    b.docs[0].metadata_json = r#"{"k":"v"}"#.into();
    b.pages[1].heading = Some("Heading".into());
    b.pages[1].number = Some("ii".into());
    let expected = 12 + 4 + "title of d1".len() as u64 + 3 + 9 + 7 + 2;
    assert_eq!(b.stored_chars(0), expected);
    c.add(b).unwrap();
    let snap = c.snapshot();
    let at = snap.find("d1").unwrap();
    assert_eq!((snap.stored_chars(at), snap.counts().stored), (expected, expected));
    c.flush().unwrap();
    assert_eq!(c.snapshot().counts().stored, expected, "the same read from a segment");
}

#[test]
fn flush_and_merge_keep_every_document_and_deletes_stay_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { max_segments: 2, ..Options::default() };
    let (c, _) = Collection::open("col_b", dir.path(), opts).unwrap();
    for round in 0..4 {
        c.add(doc(&format!("r{round}a"), &["alpha"])).unwrap();
        c.add(doc(&format!("r{round}b"), &["beta"])).unwrap();
        assert!(c.flush().unwrap());
    }
    c.delete("r0a").unwrap();
    assert!(matches!(c.delete("r0a"), Err(CollectionError::DocumentNotFound(_))));
    let before = citations(&c.snapshot());
    assert!(c.merge().unwrap());
    assert!(c.snapshot().views.len() <= 2);
    c.add(doc("tail", &["gamma"])).unwrap();
    c.delete("r3b").unwrap();
    let want = ["r0b", "r1a", "r1b", "r2a", "r2b", "r3a", "tail"];
    assert_eq!(ids(&c.snapshot()), want);
    drop(c);
    let (c, rec) = Collection::open("col_b", dir.path(), opts).unwrap();
    assert_eq!(ids(&c.snapshot()), want);
    assert!(rec.removed_files.is_empty(), "{:?}", rec.removed_files);
    let after = citations(&c.snapshot());
    assert!(before.iter().filter(|(id, ..)| id != "r3b").all(|b| after.contains(b)));
    let segs = fs::read_dir(dir.path().join("segments")).unwrap().count();
    assert_eq!(segs, 2 * c.snapshot().views.iter().filter(|v| !v.is_memory()).count());
    // What the format and the chunker found survives the WAL, a flush, a merge and a reopen.
    let snap = c.snapshot();
    for id in want {
        let at = snap.find(id).unwrap();
        assert_eq!(snap.page_view(at, 0).unwrap().meta_json, Some(r#"{"page":0}"#));
        let chunk = snap.chunk_views(at, 0)[0];
        assert_eq!((chunk.meta_json, chunk.footnote_of), (Some(r#"{"chunk":0}"#), None));
    }
}

#[test]
fn citations_are_unique_even_when_hashes_collide() {
    let mut taken = HashSet::new();
    let mut b = doc("d", &["a", "b", "c"]);
    taken.insert(citation_hash("col", "d", 1, 0));
    assign_citations("col", &mut b, &mut taken);
    let cs: HashSet<u32> = b.pages.iter().map(|p| p.citation).collect();
    assert_eq!(cs.len(), 3);
    assert_eq!(b.pages[0].citation, citation_hash("col", "d", 0, 0));
    assert_eq!(b.pages[1].citation, citation_hash("col", "d", 1, 1), "the collision is resolved by the next salt");
}

#[test]
fn a_corrupt_segment_refuses_to_load_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (c, _) = Collection::open("col_c", dir.path(), Options::default()).unwrap();
    c.add(doc("d1", &["text"])).unwrap();
    c.flush().unwrap();
    drop(c);
    let seg =
        fs::read_dir(dir.path().join("segments")).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "seg")).unwrap();
    let bytes = fs::read(&seg).unwrap();
    fs::write(&seg, &bytes[..bytes.len() / 2]).unwrap();
    let e = Collection::open("col_c", dir.path(), Options::default()).err().expect("refused");
    assert!(e.to_string().contains(seg.to_str().unwrap()), "{e}");
}

#[test]
fn concurrent_adds_are_all_visible() {
    let dir = tempfile::tempdir().unwrap();
    let (c, _) = Collection::open("col_d", dir.path(), Options { flush_batches: 8, ..Options::default() }).unwrap();
    let c = Arc::new(c);
    let flusher = {
        let c = c.clone();
        std::thread::spawn(move || {
            for _ in 0..20 {
                c.flush().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        })
    };
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let c = c.clone();
            std::thread::spawn(move || {
                (0..15).for_each(|i| {
                    c.add(doc(&format!("t{t}-{i}"), &["words here"])).unwrap();
                })
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    flusher.join().unwrap();
    assert_eq!(c.snapshot().counts().documents, 60);
    drop(c);
    let (c, _) = Collection::open("col_d", dir.path(), Options::default()).unwrap();
    assert_eq!(c.snapshot().counts().documents, 60);
}
