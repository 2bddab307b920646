use super::*;

fn chunk_all(page: &str, target: usize, max: usize) -> Vec<ChunkSpan> {
    let chunks = chunk(page, &ChunkOptions { target_chars: target, max_chars: max });
    check_invariants(page, &chunks, max);
    chunks
}

fn text<'a>(page: &'a str, c: &ChunkSpan) -> &'a str {
    &page[c.byte_start as usize..c.byte_end as usize]
}

/// Ordered, non-overlapping, trimmed, char and byte offsets agreeing, no chunk over
/// `max` chars, every non-whitespace char inside a chunk, links pointing backwards.
fn check_invariants(page: &str, chunks: &[ChunkSpan], max: usize) {
    let mut covered = vec![false; page.len()];
    let mut prev_end = (0, 0);
    for (pos, c) in chunks.iter().enumerate() {
        let s = text(page, c);
        assert!(!s.is_empty() && s == s.trim(), "untrimmed chunk {s:?}");
        assert!((c.start, c.byte_start) >= prev_end, "overlap at {s:?}");
        assert!(c.start < c.end && c.end - c.start <= max as u32, "{s:?} over {max}");
        let by_chars: String = page.chars().skip(c.start as usize).take((c.end - c.start) as usize).collect();
        assert_eq!(s, by_chars, "char and byte offsets disagree");
        covered[c.byte_start as usize..c.byte_end as usize].iter_mut().for_each(|b| *b = true);
        prev_end = (c.end, c.byte_end);
        if let Some(of) = c.footnote_of {
            assert!((of as usize) < pos && !chunks[of as usize].kinds.contains(Kind::Footnote));
        }
    }
    for (at, ch) in page.char_indices() {
        assert!(ch.is_whitespace() || covered[at], "{ch:?} at {at} not covered in {page:?}");
    }
}

fn kinds(page: &str, chunks: &[ChunkSpan]) -> Vec<(String, Vec<&'static str>)> {
    chunks.iter().map(|c| (text(page, c).chars().take(12).collect(), c.kinds.names())).collect()
}

#[test]
fn empty_pages_have_no_chunks() {
    assert!(chunk_all("", 100, 200).is_empty());
    assert!(chunk_all(" \r\n\n\t", 100, 200).is_empty());
}

#[test]
fn each_hadith_is_a_chunk_and_its_grading_another() {
    let page = "بَابُ مَا جَاءَ لَا تُقْبَلُ صَلَاةٌ بِغَيْرِ طُهُورٍ\n\
        ١ - حَدَّثَنَا قُتَيْبَةُ حَدَّثَنَا أَبُو عَوَانَةَ عَنْ سِمَاكٍ قَالَ لَا تُقْبَلُ صَلَاةٌ بِغَيْرِ طُهُورٍ. قَالَ أَبُو عِيسَى: هَذَا الْحَدِيثُ أَصَحُّ شَيْءٍ فِي هَذَا الْبَابِ.\n\
        ٢ - حدثنا هناد حدثنا وكيع عن إسرائيل قال مثله\n\
        وفي آخره زيادة";
    let chunks = chunk_all(page, 1000, 2000);
    let got = kinds(page, &chunks);
    let names: Vec<Vec<&str>> = got.iter().map(|(_, k)| k.clone()).collect();
    assert_eq!(names, [vec!["heading"], vec!["hadith"], vec!["grading"], vec!["hadith"]], "{got:?}");
    assert!(text(page, &chunks[2]).starts_with("قَالَ أَبُو عِيسَى"));
    assert!(text(page, &chunks[3]).ends_with("وفي آخره زيادة"));
    let heading = chunks[1].heading.as_deref().unwrap();
    assert!(heading.starts_with("بَابُ"));
}

#[test]
fn footnotes_link_to_the_chunk_holding_their_marker() {
    let page = "حدثنا مالك عن نافع عن ابن عمر (١) قال كذا.\r\n\r\n\
        حدثنا يحيى عن مالك (٢) قال كذا.\r\n\
        __________\r\n\
        (١) أخرجه البخاري (١٢٣)، ومسلم (٤٥٦).\r\n\
        (٢) إسناده ضعيف،\r\n\
        لضعف فلان.\r\n";
    let chunks = chunk_all(page, 1000, 2000);
    let got = kinds(page, &chunks);
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(chunks[2].kinds.names(), ["footnote", "takhrij"]);
    assert_eq!(chunks[3].kinds.names(), ["grading", "footnote"]);
    assert_eq!(chunks[2].footnote_of, Some(0));
    assert_eq!(chunks[3].footnote_of, Some(1));
    assert!(text(page, &chunks[2]).starts_with("____"));
    assert!(text(page, &chunks[3]).ends_with("لضعف فلان."));
}

#[test]
fn a_rule_without_footnotes_after_it_is_body_text() {
    let page = "حدثنا مالك (١)\n\n***\n\nقال الشيخ كلاما";
    let chunks = chunk_all(page, 1000, 2000);
    assert!(chunks.iter().all(|c| !c.kinds.contains(Kind::Footnote)));
}

#[test]
fn verses_poems_and_printed_pages() {
    let page = "(ص: ٢٠)\n\
        قال الله تعالى: ﴿ إِنَّا أَعْطَيْنَاكَ\nالْكَوْثَرَ ﴾ [الكوثر: ١]\n\
        وهذا تفسيرها.\n\n\
        قال الشاعر:\n\
        أَلا كُلُّ شَيْءٍ ما خَلا اللهَ باطِلُ … وَكُلُّ نَعيمٍ لا مَحالَةَ زائِلُ\n\
        قفا نبك من ذكرى حبيب ومنزل %~% بسقط اللوى بين الدخول فحومل\n";
    let chunks = chunk_all(page, 1000, 2000);
    let got = kinds(page, &chunks);
    let names: Vec<Vec<&str>> = got.iter().map(|(_, k)| k.clone()).collect();
    assert_eq!(names, [vec!["verse"], vec![], vec!["poetry"]], "{got:?}");
    assert!(text(page, &chunks[0]).starts_with("(ص: ٢٠)"), "the page number joins the next chunk");
    assert_eq!(chunks[0].meta.as_ref().unwrap()["printedPage"], "٢٠");
    assert_eq!(text(page, &chunks[1]), "وهذا تفسيرها.\n\nقال الشاعر:");
    assert_eq!(text(page, &chunks[2]).lines().count(), 2);
}

#[test]
fn inline_verses_in_braces_mark_the_hadith() {
    let page = "أخبرنا سليمان بن حرب ثم تلا { ومنهم من عاهد الله } فاختلف قولهم";
    let chunks = chunk_all(page, 1000, 2000);
    assert_eq!(chunks[0].kinds.names(), ["hadith", "verse"]);
    assert!(!quotes_quran("a {b} c { x }"));
}

#[test]
fn long_hadith_is_cut_and_every_piece_stays_hadith() {
    let page = format!("حدثنا فلان {}", "عن فلان ".repeat(400));
    let chunks = chunk_all(&page, 300, 500);
    assert!(chunks.len() > 5);
    assert!(chunks.iter().all(|c| c.kinds.contains(Kind::Hadith)));
}

#[test]
fn document_meta_counts_kinds_and_spans_printed_pages() {
    let p1 = "(ص: ١٠)\nحدثنا مالك قال كذا. قال أبو عيسى هذا حديث حسن صحيح";
    let p2 = "باب الصلاة\nحدثنا يحيى (١)\n_____\n(١) رواه مسلم (٢).\n(ص: ١١)";
    let (c1, c2) = (chunk_all(p1, 1000, 2000), chunk_all(p2, 1000, 2000));
    let meta = document_meta(&[(p1, &c1), (p2, &c2)]);
    assert_eq!(meta["counts"], serde_json::json!({"hadith": 2, "grading": 1, "takhrij": 1, "footnote": 1, "heading": 1}));
    assert_eq!(meta["printedPages"], serde_json::json!({"first": "١٠", "last": "١١"}));
    assert_eq!(meta["sections"], serde_json::json!(["باب الصلاة"]));
}

#[test]
fn a_numbered_heading_does_not_take_the_footnote() {
    let page = "باب الصلاة (١)\nحدثنا مالك عن نافع (١) قال كذا.\n_____\n(١) أخرجه مسلم (٢٢٣).";
    let chunks = chunk_all(page, 1000, 2000);
    assert_eq!(chunks[0].kinds.names(), ["heading"]);
    assert_eq!(chunks[2].footnote_of, Some(1));
    let page = "باب الصلاة (١)\nحدثنا مالك عن نافع قال كذا.\n_____\n(١) انظر ما بعده.";
    assert_eq!(chunk_all(page, 1000, 2000)[2].footnote_of, Some(0), "only the heading holds the marker");
}

#[test]
fn harakat_and_tatweel_do_not_move_offsets() {
    let page = "حَـــدَّثَنَا مَالِكٌ 🎉 عَنْ نَافِعٍ\r\n\r\nقَالَ أَبُو عِيسَى: حَدِيثٌ حَسَنٌ\r\n";
    let chunks = chunk_all(page, 1000, 2000);
    assert_eq!(chunks.iter().map(|c| c.kinds.names()).collect::<Vec<_>>(), [vec!["hadith"], vec!["grading"]]);
    assert_eq!(chunks[0].end as usize, "حَـــدَّثَنَا مَالِكٌ 🎉 عَنْ نَافِعٍ".chars().count());
}
