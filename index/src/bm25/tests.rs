use super::*;
use crate::segment::{archive, BatchView};

/// Block-max WAND and the exhaustive union find the same chunks with the same scores.
#[test]
fn exhaustive_union_equals_wand() {
    let vocab: Vec<String> = (0..400).map(|i| format!("w{i}x")).collect();
    let mut seed = 7u64;
    let mut next = move |n: usize| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        // Skewed toward small indices, as word frequencies are.
        let r = (seed >> 33) as usize % n;
        r * r / n
    };
    let texts: Vec<String> = (0..3000).map(|_| (0..20 + next(60)).map(|_| vocab[next(400)].as_str()).collect::<Vec<_>>().join(" ")).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch = crate::collection::tests::doc("d", &refs);
    let view = BatchView::from_bytes(archive(&batch), Path::new("mem")).unwrap();
    let disk = DiskIndex::build(view.batch(), None).unwrap();
    let bm25 = Bm25::Disk(disk);
    let Bm25::Disk(disk) = &bm25 else { unreachable!() };
    for q in ["w0x w5x w17x", "w3x w250x w399x w1x w2x w8x w13x w21x", "w7x"] {
        let terms = crate::text::terms(q);
        let stats = Stats::of(&[&bm25], &terms).unwrap();
        let query = disk.query(&terms);
        for limit in [1, 10, 200] {
            let none = None::<fn(u64) -> bool>;
            let wand = disk.search_with(&query, &stats, limit, none, true).unwrap();
            let all = disk.search_with(&query, &stats, limit, none, false).unwrap();
            // Sums in a different order may differ in the last bit.
            assert_eq!(wand.len(), all.len(), "query {q:?} limit {limit}");
            assert!(limit == 1 || all.len() == limit, "the test wants full lists");
            // Rank by rank the scores agree; near-ties may trade places.
            for (w, a) in wand.iter().zip(&all) {
                assert!((w.1 - a.1).abs() < 1e-5, "query {q:?} limit {limit}: {wand:?} vs {all:?}");
            }
            let chunks = |v: &[(u32, f32)]| v.iter().map(|x| x.0).collect::<std::collections::BTreeSet<u32>>();
            assert_eq!(chunks(&wand), chunks(&all), "query {q:?} limit {limit}");
        }
    }
}

/// The streamed path gives every chunk the query matches (and the filter admits), in
/// chunk order, with the score tantivy's own top-k collector gives it and the terms
/// its indexed text holds.
#[test]
fn every_match_is_the_whole_ranked_list_in_chunk_order() {
    let texts: Vec<String> = (0..1500).map(|i| format!("w{}x w{}x w{}x filler{}", i % 7, i % 13, i % 101, i % 3)).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch = crate::collection::tests::doc("d", &refs);
    let view = BatchView::from_bytes(archive(&batch), Path::new("mem")).unwrap();
    let disk = DiskIndex::build(view.batch(), None).unwrap();
    assert!(disk.identity, "one tantivy segment written in chunk order");
    let bm25 = Bm25::Disk(disk);
    let Bm25::Disk(disk) = &bm25 else { unreachable!() };
    for q in ["w0x w5x w17x", "w3x w12x w100x filler1", "w6x", "nothing"] {
        let terms = crate::text::terms(q);
        let stats = Stats::of(&[&bm25], &terms).unwrap();
        let ranked = disk.search_with(&disk.query(&terms), &stats, 10_000, None::<fn(u64) -> bool>, false).unwrap();
        let every = bm25.scored(&terms, &stats, 10, None::<fn(u64) -> bool>).unwrap();
        assert!(every.every, "short postings: every match");
        let every = every.chunks;
        assert!(every.windows(2).all(|w| w[0].chunk < w[1].chunk), "chunk order for {q:?}");
        let mut by_chunk = ranked.clone();
        by_chunk.sort_by_key(|x| x.0);
        assert_eq!(every.len(), by_chunk.len(), "every match of {q:?}");
        for (a, b) in every.iter().zip(&by_chunk) {
            assert_eq!(a.chunk, b.0);
            assert_eq!(a.score.to_bits(), b.1.to_bits(), "{q:?}: chunk {} scored {} and {}", a.chunk, a.score, b.1);
            let holds = crate::text::terms(&indexed_text(view.batch(), a.chunk as usize));
            let bits = terms.iter().enumerate().filter(|(_, t)| holds.contains(t)).fold(0, |m, (i, _)| m | 1 << i);
            assert_eq!(a.terms, bits, "{q:?}: terms of chunk {}", a.chunk);
        }
        let odd = bm25.scored(&terms, &stats, 10, Some(|c: u64| c % 2 == 1)).unwrap();
        assert_eq!(odd.chunks, every.iter().copied().filter(|x| x.chunk % 2 == 1).collect::<Vec<_>>(), "filtered {q:?}");
    }
}

/// Our union adds each chunk's term scores in tantivy's order, so its sums are
/// tantivy's to the bit: across many windows of doc ids, with terms running out of
/// postings at different points (which reorders tantivy's list of scorers), and
/// with more terms than a chunk can carry the bits of.
#[test]
fn union_sums_equal_tantivys_to_the_bit() {
    let mut seed = 11u64;
    let mut next = move |n: usize| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) as usize % n
    };
    // Term tN appears in chunks below N·200 only, so terms run out one after another.
    let texts: Vec<String> = (0..10_000)
        .map(|i| {
            let mut words: Vec<String> = (0..8).map(|_| format!("v{}x", next(300))).collect();
            for t in 0..70 {
                if i < t * 200 && next(4) == 0 {
                    words.push(format!("t{t}x"));
                }
            }
            words.join(" ")
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch = crate::collection::tests::doc("d", &refs);
    let view = BatchView::from_bytes(archive(&batch), Path::new("mem")).unwrap();
    let bm25 = Bm25::Disk(DiskIndex::build(view.batch(), None).unwrap());
    let Bm25::Disk(disk) = &bm25 else { unreachable!() };
    let many: String = (0..70).map(|t| format!("t{t}x ")).collect();
    for q in ["t3x t30x t12x v1x t49x", "v7x v8x v9x t2x", many.as_str()] {
        let terms = crate::text::terms(q);
        let stats = Stats::of(&[&bm25], &terms).unwrap();
        let ours = disk.every_match(&terms, &[], &stats, None::<&fn(u64) -> bool>).unwrap();
        let theirs = disk.every_match_tantivy(&disk.query(&terms), &stats, None::<&fn(u64) -> bool>).unwrap();
        assert!(ours.len() > 500, "{} matches", ours.len());
        assert_eq!(ours.len(), theirs.len());
        for (a, b) in ours.iter().zip(&theirs) {
            assert_eq!((a.chunk, a.score.to_bits()), (b.chunk, b.score.to_bits()), "{q:?}");
        }
        let known = terms.len() <= Scored::MAX_TERMS;
        assert_eq!(ours.iter().all(|s| s.terms == Scored::UNKNOWN), !known, "{q:?}");
        // Statistics taken for other terms (a superset here) hold no dictionary
        // entries for these: the union looks them up itself, to the same sums.
        let mut more = terms.clone();
        more.push("v2x".into());
        let other = Stats::of(&[&bm25], &more).unwrap();
        assert!(other.entries(disk.id, &terms).is_none() && stats.entries(disk.id, &terms).is_some());
        let looked_up = disk.every_match(&terms, &[], &other, None::<&fn(u64) -> bool>).unwrap();
        assert_eq!(looked_up, ours, "{q:?}");
    }
}

/// The memory index must score exactly as tantivy does, or a chunk's rank would
/// depend on whether it has been flushed yet.
#[test]
fn memory_scores_equal_tantivy_scores() {
    let mut batch = crate::collection::tests::doc(
        "d",
        &[
            "The quick brown fox jumps over the lazy dog near the river bank.",
            "Foxes are quick; a brown dog sleeps. Rivers flow past banks of clay and stone.",
            "Nothing relevant here at all, only filler words about weather and tea.",
        ],
    );
    batch.docs[0].title = Some("Fox and dog stories".into());
    let bytes = archive(&batch);
    let view = BatchView::from_bytes(bytes, Path::new("mem")).unwrap();
    let disk = Bm25::Disk(DiskIndex::build(view.batch(), None).unwrap());
    let mem = Bm25::memory(view.batch());
    let terms: Vec<String> = crate::text::terms("quick brown fox river dogs stories");
    for (a, b) in [(&disk, &disk), (&mem, &mem), (&disk, &mem)] {
        let stats = Stats::of(&[a, b], &terms).unwrap();
        let d = disk.search(&terms, &stats, 10, None::<fn(u64) -> bool>).unwrap();
        let m = mem.search(&terms, &stats, 10, Some(|_| true)).unwrap();
        assert_eq!(d.len(), m.len());
        for (x, y) in d.iter().zip(&m) {
            assert_eq!(x.0, y.0);
            assert!((x.1 - y.1).abs() < 1e-5, "{d:?} vs {m:?}");
        }
    }
}
