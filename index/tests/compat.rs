//! The frozen data directories of `tests/data/compat/vN/` opened by the engine alone.
//!
//! The frozen data directories of `tests/data/compat/vN/` (written by the server; see
//! the README there) opened by the engine alone: each collection's segment and WAL
//! tail read back, the live documents those the server listed, and keyword searches
//! answered as the server answered them. The server-level test is
//! `tests/it/compat.rs`; this one names the engine when the two disagree.

use std::fs;
use std::path::Path;

use quarry_index::collection::{Collection, Options};
use quarry_index::search::{self, Mode, Query};
use serde_json::Value;

#[test]
fn compat_v1_collections_open_with_the_documents_the_server_listed() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/compat/v1");
    let expected: Value = serde_json::from_slice(&fs::read(fixture.join("expected.json")).expect("expected.json")).unwrap();
    let listed = &answer(&expected, "collections")["collections"];
    // (fixture name, the server's name for its document list, WAL operations replayed:
    // the keyword collection's one add; the library's four adds and two deletes)
    for (name, list, replayed) in [("keyword", "keyword documents", 1), ("library", "library documents", 6)] {
        let id = expected["collections"][name].as_str().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(id);
        copy_dir(&fixture.join("data/collections").join(id), &dir);
        let (c, recovery) = Collection::open(id, &dir, Options::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((recovery.replayed_ops, recovery.torn_tail.is_none(), recovery.removed_files.len()), (replayed, true, 0), "{name}");
        let snap = c.snapshot();
        let kinds: Vec<bool> = snap.views.iter().map(|v| v.is_memory()).collect();
        assert_eq!(kinds, [false, true], "{name}: one flushed segment, then the WAL tail");

        let ids: Vec<&str> = snap.docs().map(|at| snap.doc(at).id.as_str()).collect();
        let want: Vec<&str> = answer(&expected, list)["documents"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap()).collect();
        assert_eq!(ids, want, "{name}: the live documents, in order");
        let counts = snap.counts();
        let server = listed.as_array().unwrap().iter().find(|c| c["id"] == id).unwrap();
        let got = [counts.documents, counts.pages, counts.chunks];
        assert_eq!(got.map(Some), ["documents", "pages", "chunks"].map(|k| server[k].as_u64()), "{name}");
        for d in expected["deleted"].as_array().unwrap().iter().filter_map(Value::as_str) {
            assert!(snap.find(d).is_none(), "{name}: {d} was deleted");
        }

        // The recorded keyword searches without filters, run on the engine directly.
        let prefix = if name == "keyword" { "keyword-only keyword: " } else { "library keyword: " };
        let searches: Vec<&Value> =
            expected["answers"].as_array().unwrap().iter().filter(|a| a["name"].as_str().unwrap().starts_with(prefix)).collect();
        assert!(!searches.is_empty(), "{name}");
        for a in searches {
            let body = &a["body"];
            let parsed = quarry_index::text::parse(body["query"].as_str().unwrap());
            let q = Query { text: parsed.text, phrases: parsed.phrases, k: body["k"].as_u64().unwrap() as usize, ..Query::new("", Mode::Keyword) };
            let hits = search::search(&snap, &q).hits;
            let got: Vec<(String, u32, f64)> = hits
                .iter()
                .map(|h| {
                    let b = snap.views[h.view].batch();
                    let page = &b.pages[h.page as usize];
                    (b.docs[page.doc.to_native() as usize].id.as_str().to_owned(), page.n.to_native(), h.score)
                })
                .collect();
            let want: Vec<(String, u32, f64)> = a["response"]["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| (r["document"]["id"].as_str().unwrap().to_owned(), r["page"]["n"].as_u64().unwrap() as u32, r["score"].as_f64().unwrap()))
                .collect();
            assert_eq!(got, want, "{}", a["name"]);
        }
    }
}

fn answer<'a>(expected: &'a Value, name: &str) -> &'a Value {
    let a = expected["answers"].as_array().unwrap().iter().find(|a| a["name"] == name).unwrap_or_else(|| panic!("no answer {name}"));
    &a["response"]
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()));
        } else {
            fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}
