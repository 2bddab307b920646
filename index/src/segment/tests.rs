use super::*;

pub(crate) fn sample_batch() -> Batch {
    let text = "Alpha beta gamma.\n\nDelta epsilon.".to_owned();
    Batch {
        docs: vec![DocRec {
            id: "doc_1".into(),
            title: Some("Greek".into()),
            author: None,
            metadata_json: "{}".into(),
            meta_json: r#"{"kind":"prose"}"#.into(),
            chunker: "prose".into(),
            format: "text".into(),
            embedder: "none".into(),
            created_at: "2026-11-30T00:00:00Z".into(),
            chars: text.chars().count() as u64,
            first_page: 0,
            pages: 1,
            chunks: 2,
            fields: vec![Field { key: "a.b".into(), value: FieldValue::Num(1.0) }],
            dates: vec![],
        }],
        pages: vec![PageRec {
            doc: 0,
            n: 0,
            number: None,
            volume: None,
            heading: None,
            text,
            citation: 0xDEADBEEF,
            simhash: 7,
            first_chunk: 0,
            chunks: 2,
            dates: vec![],
            meta_json: Some(r#"{"rows":[1,2]}"#.into()),
        }],
        chunks: vec![
            ChunkRec {
                page: 0,
                pos: 0,
                start: 0,
                end: 17,
                byte_start: 0,
                byte_end: 17,
                kinds: 0,
                heading: None,
                meta_json: Some(r#"{"section":"A"}"#.into()),
                footnote_of: None,
            },
            ChunkRec {
                page: 0,
                pos: 1,
                start: 19,
                end: 33,
                byte_start: 19,
                byte_end: 33,
                kinds: 0,
                heading: None,
                meta_json: None,
                footnote_of: Some(0),
            },
        ],
        dims: 2,
        vectors: vec![0.6, 0.8],
        windows: vec![WindowRec { page: 0, first_pos: 0, chunks: 2 }],
    }
}

#[test]
fn a_written_segment_opens_zero_copy_with_its_contents() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("1.seg");
    write(&path, &sample_batch()).unwrap();
    let view = BatchView::open(&path).unwrap();
    assert!(view.is_mapped());
    let b = view.batch();
    assert_eq!(b.docs[0].id.as_str(), "doc_1");
    assert_eq!(b.pages[0].citation.to_native(), 0xDEADBEEF);
    assert_eq!(view.vectors(), &[0.6, 0.8]);
}

/// `sample_batch` as format 1 wrote it: no chunk or page meta, no footnote links.
fn sample_batch_v1() -> v1::Batch {
    let b = sample_batch();
    let field = |f: &Field| v1::Field {
        key: f.key.clone(),
        value: match &f.value {
            FieldValue::Str(s) => v1::FieldValue::Str(s.clone()),
            FieldValue::Num(n) => v1::FieldValue::Num(*n),
            FieldValue::Bool(b) => v1::FieldValue::Bool(*b),
            FieldValue::Null => v1::FieldValue::Null,
        },
    };
    let d = &b.docs[0];
    let p = &b.pages[0];
    v1::Batch {
        docs: vec![v1::DocRec {
            id: d.id.clone(),
            title: d.title.clone(),
            author: d.author.clone(),
            metadata_json: d.metadata_json.clone(),
            meta_json: d.meta_json.clone(),
            chunker: d.chunker.clone(),
            format: d.format.clone(),
            embedder: d.embedder.clone(),
            created_at: d.created_at.clone(),
            chars: d.chars,
            first_page: d.first_page,
            pages: d.pages,
            chunks: d.chunks,
            fields: d.fields.iter().map(field).collect(),
            dates: d.dates.clone(),
        }],
        pages: vec![v1::PageRec {
            doc: p.doc,
            n: p.n,
            number: p.number.clone(),
            volume: p.volume.clone(),
            heading: p.heading.clone(),
            text: p.text.clone(),
            citation: p.citation,
            simhash: p.simhash,
            first_chunk: p.first_chunk,
            chunks: p.chunks,
            dates: p.dates.clone(),
        }],
        chunks: b
            .chunks
            .iter()
            .map(|c| v1::ChunkRec {
                page: c.page,
                pos: c.pos,
                start: c.start,
                end: c.end,
                byte_start: c.byte_start,
                byte_end: c.byte_end,
                kinds: c.kinds,
                heading: c.heading.clone(),
            })
            .collect(),
        dims: b.dims,
        vectors: b.vectors.clone(),
    }
}

#[test]
fn a_format_1_segment_opens_upgraded_with_no_meta() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("1.seg");
    let archive = rkyv::to_bytes::<rkyv::rancor::Error>(&sample_batch_v1()).unwrap();
    let mut header = view::header(&archive);
    header[4..8].copy_from_slice(&1u32.to_le_bytes());
    fs::write(&path, [&header[..], &archive[..]].concat()).unwrap();

    let view = BatchView::open(&path).unwrap();
    assert!(!view.is_mapped(), "a format-1 segment is upgraded into memory");
    let got: Batch = rkyv::deserialize::<Batch, rkyv::rancor::Error>(view.batch()).unwrap();
    let mut want = sample_batch();
    want.pages[0].meta_json = None;
    for c in &mut want.chunks {
        (c.meta_json, c.footnote_of) = (None, None);
    }
    assert_eq!(got, want);

    // A format-1 header over bytes that are not a format-1 archive is corruption, not a panic.
    let today = super::archive(&sample_batch());
    let mut header = view::header(&today);
    header[4..8].copy_from_slice(&1u32.to_le_bytes());
    fs::write(&path, [&header[..], &today[..]].concat()).unwrap();
    match BatchView::open(&path) {
        Err(SegmentError::Corrupt { reason, .. }) => assert!(reason.contains("format-1"), "{reason}"),
        Err(e) => panic!("{e}"),
        Ok(view) => {
            // rkyv may accept today's bytes as a (different) valid format-1 archive; then at
            // least what it read must differ from the truth, never be taken for it silently.
            let got: Batch = rkyv::deserialize::<Batch, rkyv::rancor::Error>(view.batch()).unwrap();
            assert_ne!(got, sample_batch());
        }
    }
    // Versions this build does not know are refused by name.
    header[4..8].copy_from_slice(&9u32.to_le_bytes());
    fs::write(&path, [&header[..], &today[..]].concat()).unwrap();
    let e = BatchView::open(&path).err().expect("version 9");
    assert!(e.to_string().contains("format version 9"), "{e}");
}

/// `sample_batch` as format 2 wrote it: one vector per page, no windows.
fn sample_batch_v2() -> v2::Batch {
    let b = sample_batch();
    let field = |f: &Field| v2::Field {
        key: f.key.clone(),
        value: match &f.value {
            FieldValue::Str(s) => v2::FieldValue::Str(s.clone()),
            FieldValue::Num(n) => v2::FieldValue::Num(*n),
            FieldValue::Bool(b) => v2::FieldValue::Bool(*b),
            FieldValue::Null => v2::FieldValue::Null,
        },
    };
    let d = &b.docs[0];
    let p = &b.pages[0];
    v2::Batch {
        docs: vec![v2::DocRec {
            id: d.id.clone(),
            title: d.title.clone(),
            author: d.author.clone(),
            metadata_json: d.metadata_json.clone(),
            meta_json: d.meta_json.clone(),
            chunker: d.chunker.clone(),
            format: d.format.clone(),
            embedder: d.embedder.clone(),
            created_at: d.created_at.clone(),
            chars: d.chars,
            first_page: d.first_page,
            pages: d.pages,
            chunks: d.chunks,
            fields: d.fields.iter().map(field).collect(),
            dates: d.dates.clone(),
        }],
        pages: vec![v2::PageRec {
            doc: p.doc,
            n: p.n,
            number: p.number.clone(),
            volume: p.volume.clone(),
            heading: p.heading.clone(),
            text: p.text.clone(),
            citation: p.citation,
            simhash: p.simhash,
            first_chunk: p.first_chunk,
            chunks: p.chunks,
            dates: p.dates.clone(),
            meta_json: p.meta_json.clone(),
        }],
        chunks: b
            .chunks
            .iter()
            .map(|c| v2::ChunkRec {
                page: c.page,
                pos: c.pos,
                start: c.start,
                end: c.end,
                byte_start: c.byte_start,
                byte_end: c.byte_end,
                kinds: c.kinds,
                heading: c.heading.clone(),
                meta_json: c.meta_json.clone(),
                footnote_of: c.footnote_of,
            })
            .collect(),
        dims: b.dims,
        vectors: b.vectors.clone(),
    }
}

#[test]
fn a_format_2_segment_opens_upgraded_with_one_window_per_page() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("2.seg");
    let archive = rkyv::to_bytes::<rkyv::rancor::Error>(&sample_batch_v2()).unwrap();
    let mut header = view::header(&archive);
    header[4..8].copy_from_slice(&2u32.to_le_bytes());
    fs::write(&path, [&header[..], &archive[..]].concat()).unwrap();

    let view = BatchView::open(&path).unwrap();
    assert!(!view.is_mapped(), "a format-2 segment is upgraded into memory");
    let got: Batch = rkyv::deserialize::<Batch, rkyv::rancor::Error>(view.batch()).unwrap();
    assert_eq!(got, sample_batch(), "the page's one vector is its one window of every chunk");

    // A format-2 WAL record (tag 3) is upgraded as it is replayed.
    assert_eq!(upgrade_v2(&archive).unwrap(), sample_batch());
    // Today's bytes under a format-2 header are not taken for format 2 silently.
    let today = super::archive(&sample_batch());
    let mut header = view::header(&today);
    header[4..8].copy_from_slice(&2u32.to_le_bytes());
    fs::write(&path, [&header[..], &today[..]].concat()).unwrap();
    match BatchView::open(&path) {
        Err(SegmentError::Corrupt { reason, .. }) => assert!(reason.contains("format-2"), "{reason}"),
        Err(e) => panic!("{e}"),
        Ok(view) => assert_ne!(rkyv::deserialize::<Batch, rkyv::rancor::Error>(view.batch()).unwrap(), sample_batch()),
    }
}

#[test]
fn a_batch_whose_windows_do_not_match_its_vectors_is_refused() {
    let mut b = sample_batch();
    assert_eq!(b.check_windows(), Ok(()));
    b.windows.clear();
    assert!(b.check_windows().unwrap_err().contains("2 floats for 0 windows"));
    let e = BatchView::from_bytes(archive(&b), Path::new("mem")).err().expect("no windows");
    assert!(e.to_string().contains("windows"), "{e}");
    b.windows = vec![WindowRec { page: 1, first_pos: 0, chunks: 2 }];
    assert!(b.check_windows().unwrap_err().contains("out of order"));
    // Two windows of one page: one row each.
    b.windows = vec![WindowRec { page: 0, first_pos: 0, chunks: 1 }, WindowRec { page: 0, first_pos: 1, chunks: 1 }];
    assert!(b.check_windows().is_err());
    b.vectors = vec![0.6, 0.8, 0.8, 0.6];
    assert_eq!(b.check_windows(), Ok(()));
}

#[test]
fn extend_from_carries_every_window_of_a_page_with_its_rows() {
    let mut b = sample_batch();
    b.windows = vec![WindowRec { page: 0, first_pos: 0, chunks: 1 }, WindowRec { page: 0, first_pos: 1, chunks: 1 }];
    b.vectors = vec![0.6, 0.8, 0.8, 0.6];
    let view = BatchView::from_bytes(archive(&b), Path::new("mem")).unwrap();
    let one = BatchView::from_bytes(archive(&sample_batch()), Path::new("mem")).unwrap();
    let mut merged = Batch::default();
    merged.extend_from(one.batch(), |_| false);
    merged.extend_from(view.batch(), |_| false);
    assert_eq!(merged.check_windows(), Ok(()));
    let pages: Vec<(u32, u32, u32)> = merged.windows.iter().map(|w| (w.page, w.first_pos, w.chunks)).collect();
    assert_eq!(pages, [(0, 0, 2), (1, 0, 1), (1, 1, 1)]);
    assert_eq!(merged.vectors, vec![0.6, 0.8, 0.6, 0.8, 0.8, 0.6]);
}

#[test]
fn chunk_and_page_meta_survive_a_segment_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("1.seg");
    write(&path, &sample_batch()).unwrap();
    let view = BatchView::open(&path).unwrap();
    let got: Batch = rkyv::deserialize::<Batch, rkyv::rancor::Error>(view.batch()).unwrap();
    assert_eq!(got, sample_batch());
}

#[test]
fn a_truncated_or_flipped_segment_is_reported_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("1.seg");
    write(&path, &sample_batch()).unwrap();
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
    let e = BatchView::open(&path).err().expect("truncated");
    assert!(matches!(&e, SegmentError::Corrupt { path: p, reason } if p == &path && reason.contains("truncated")), "{e}");
    let mut flipped = bytes.clone();
    let last = flipped.len() - 40;
    flipped[last] ^= 0x55;
    fs::write(&path, &flipped).unwrap();
    let e = BatchView::open(&path).err().expect("flipped");
    assert!(e.to_string().contains("checksum"), "{e}");
}

#[test]
fn extend_from_drops_named_documents_and_renumbers() {
    let one = archive(&sample_batch());
    let view = BatchView::from_bytes(one, Path::new("mem")).unwrap();
    let mut merged = Batch::default();
    merged.extend_from(view.batch(), |_| false);
    merged.extend_from(view.batch(), |_| false);
    assert_eq!((merged.docs.len(), merged.pages.len(), merged.chunks.len()), (2, 2, 4));
    assert_eq!((merged.docs[1].first_page, merged.pages[1].first_chunk, merged.chunks[3].page), (1, 2, 1));
    assert_eq!(merged.vectors, vec![0.6, 0.8, 0.6, 0.8]);
    let mut none = Batch::default();
    none.extend_from(view.batch(), |id| id == "doc_1");
    assert!(none.docs.is_empty() && none.pages.is_empty());
}

#[test]
fn the_checks_side_by_side_report_what_the_checks_in_turn_report() {
    let good = archive(&sample_batch());
    let crc = crc32fast::hash(&good);
    // The root's relative pointers sit at the end of the archive: pointing them out of
    // bounds breaks the archive, and a recomputed checksum leaves only the validation
    // to notice.
    let mut broken = good.clone();
    let at = broken.len() - 4;
    broken[at] ^= 0x7f;
    let broken_crc = crc32fast::hash(&broken);
    for side_by_side in [false, true] {
        let check = |bytes: &[u8], crc: u32| view::check_archive(bytes, crc, side_by_side);
        assert_eq!(check(&good, crc), Ok(()), "side by side: {side_by_side}");
        assert_eq!(check(&good, crc ^ 1), Err("checksum mismatch".to_owned()), "side by side: {side_by_side}");
        let e = check(&broken, broken_crc).expect_err("an archive pointing out of bounds");
        assert!(e.starts_with("invalid archive"), "side by side: {side_by_side}: {e}");
        assert_eq!(check(&broken, crc), Err("checksum mismatch".to_owned()), "side by side: {side_by_side}");
    }
}
