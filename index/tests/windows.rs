//! Windows do not move short pages: the format-2 fixture's vectors re-embedded to the bit (needs the models).
//!
//! Windows do not move short pages: every page of the format-2 fixture
//! (`tests/data/compat/v2`, vectors made by the format-2 server, one per page) that fits
//! the model's window is planned as one window of the same input, and embedding it
//! again gives the stored vector to the bit. Needs the models (`ops/setup`).

use std::fs;
use std::path::{Path, PathBuf};

use quarry_index::collection::{Collection, Options};
use quarry_index::embed::{Model, Precision};
use quarry_index::segment::Batch;
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn a_short_pages_vector_is_the_one_format_2_stored_bit_for_bit() {
    let fixture = repo().join("tests/data/compat/v2");
    let expected: Value = serde_json::from_slice(&fs::read(fixture.join("expected.json")).unwrap()).unwrap();
    // The fixture's server: all-MiniLM-L6-v2 at int8 (its config pins the precision).
    assert!(expected["config"].as_str().unwrap().contains(r#"precision = "int8""#));
    let model = Model::load(&repo().join("models"), &repo().join("models/lib/libonnxruntime.so.1.31.1"), "all-MiniLM-L6-v2", Precision::Int8)
        .unwrap_or_else(|e| panic!("{e} (run ops/setup to install the models)"));
    let mut e = model.embedder().unwrap();
    let id = expected["collections"]["library"].as_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(id);
    copy_dir(&fixture.join("data/collections").join(id), &dir);
    let (c, _) = Collection::open(id, &dir, Options::default()).unwrap();
    let snap = c.snapshot();
    let (mut same, mut long) = (0, 0);
    for view in &snap.views {
        for d in view.batch().docs.iter() {
            let mut b = Batch::default();
            b.extend_from(view.batch(), |other| other != d.id.as_str());
            assert!(b.dims > 0 && b.windows.len() == b.pages.len(), "{}: format 2 upgraded to one window per page", d.id);
            let plan = quarry_index::windows::plan(&b, false, &e).unwrap();
            if plan.windows != b.windows {
                long += 1; // a page format 2 cut at the window's end
                continue;
            }
            let got = quarry_index::windows::embed(&mut e, &plan).unwrap();
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            if bits(&got.data) != bits(&b.vectors) {
                // Bit for bit on a CPU whose int8 kernels are the fixture's (AVX-512 VNNI);
                // on another (AVX2 only) int8 moves every vector a little, never far.
                let dims = b.dims as usize;
                for (g, w) in got.data.chunks(dims).zip(b.vectors.chunks(dims)) {
                    let cos: f32 = g.iter().zip(w).map(|(a, b)| a * b).sum();
                    assert!(cos >= 0.98, "{}: the vector moved (cosine {cos})", d.id);
                }
            }
            same += 1;
        }
    }
    eprintln!("{same} documents the same, {long} with a page over the window");
    assert!(same >= 10, "{same} documents compared ({long} with a page over the window)");
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}
