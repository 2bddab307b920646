use std::cell::Cell;

use super::*;
use crate::chunk::{ChunkOptions, Chunker};
use crate::ingest::{prepare, DocDraft, PageDraft};

/// Every whitespace-separated word is a token; two special tokens; counts its calls.
struct Words {
    max: usize,
    calls: Cell<usize>,
}

impl Tokens for Words {
    fn max_tokens(&self) -> usize {
        self.max
    }

    fn overhead(&self, head: &str) -> Result<usize, EmbedError> {
        Ok(2 + head.split_whitespace().count())
    }

    fn starts(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        self.calls.set(self.calls.get() + 1);
        let mut out = Vec::new();
        let mut prev_space = true;
        for (i, c) in text.char_indices() {
            if !c.is_whitespace() && prev_space {
                out.push(i as u32);
            }
            prev_space = c.is_whitespace();
        }
        Ok(out)
    }
}

fn words(max: usize) -> Words {
    Words { max, calls: Cell::new(0) }
}

/// Paragraph `i` of a long page: ten words, the first naming it.
fn paragraph(i: usize) -> String {
    format!("Paragraph{i} holds nine more words of plain text for testing.")
}

fn batch(title: &str, pages: &[String]) -> Batch {
    let draft = DocDraft {
        id: "d".into(),
        title: (!title.is_empty()).then(|| title.to_owned()),
        chunker: Some(Chunker::Prose),
        pages: pages.iter().map(|t| PageDraft { text: t.clone(), ..PageDraft::default() }).collect(),
        ..DocDraft::default()
    };
    // Small chunks: one paragraph each.
    prepare(draft, &ChunkOptions { target_chars: 60, max_chars: 120 })
}

#[test]
fn a_page_within_the_window_is_one_input_the_same_as_before_windows() {
    let b = batch("Title words", &["Short page one.".into(), paragraph(1)]);
    let w = words(64);
    let plan = plan(&b, false, &w).unwrap();
    assert_eq!(plan.inputs, ["Title words\n\nShort page one.".to_owned(), format!("Title words\n\n{}", paragraph(1))]);
    let windows: Vec<_> = plan.windows.iter().map(|w| (w.page, w.first_pos, w.chunks)).collect();
    assert_eq!(windows, [(0, 0, b.pages[0].chunks), (1, 0, b.pages[1].chunks)]);
    // Without a title the page text alone, as before.
    let b = batch("", &["Short page one.".into()]);
    assert_eq!(super::plan(&b, false, &w).unwrap().inputs, ["Short page one."]);
}

#[test]
fn a_long_page_is_windows_of_whole_chunks_in_order_each_within_the_budget() {
    let text: Vec<String> = (0..40).map(paragraph).collect();
    let b = batch("Two words", &[text.join("\n\n")]);
    let page = &b.pages[0];
    assert!(page.chunks >= 20, "{} chunks", page.chunks);
    let w = words(64);
    let plan = plan(&b, false, &w).unwrap();
    assert_eq!(w.calls.get(), 1, "the page is tokenized once");
    assert!(plan.windows.len() >= 6, "{} windows", plan.windows.len());
    // Consecutive runs covering every chunk once, in order.
    let mut next = 0;
    for (win, input) in plan.windows.iter().zip(&plan.inputs) {
        assert_eq!((win.page, win.first_pos), (0, next));
        assert!(win.chunks > 0);
        next += win.chunks;
        assert!(input.starts_with("Two words\n\n"), "{input}");
        let tokens = input.split_whitespace().count() + 2;
        assert!(tokens <= 64, "{tokens} tokens: {input}");
        for c in &b.chunks[win.first_pos as usize..(win.first_pos + win.chunks) as usize] {
            assert!(input.contains(&page.text[c.byte_start as usize..c.byte_end as usize]));
        }
    }
    assert_eq!(next, page.chunks);
    // Packed: no two neighbours would have fit together.
    for pair in plan.inputs.windows(2) {
        let joined = pair[0].split_whitespace().count() + pair[1].split_whitespace().count() - 2 + 2;
        assert!(joined > 64, "{joined} tokens would fit one window");
    }
    // The tail is in the last window.
    assert!(plan.inputs.last().unwrap().contains("Paragraph39 "));
    assert!(!plan.inputs[0].contains("Paragraph39 "));
}

#[test]
fn masking_applies_to_each_window() {
    let mut text: Vec<String> = (0..30).map(paragraph).collect();
    text[29] = "Call 555-867-5309 about the loan at the branch office today please.".into();
    let b = batch("", &[text.join("\n\n")]);
    let w = words(48);
    let plain = plan(&b, false, &w).unwrap();
    let masked = plan(&b, true, &w).unwrap();
    assert_eq!(plain.windows, masked.windows);
    assert!(plain.inputs.last().unwrap().contains("555-867-5309"));
    let last = masked.inputs.last().unwrap();
    assert!(!last.contains("555-867-5309") && last.contains("[PHONE-1]"), "{last}");
}
