//! What the embedder reads for each page: one input when the page fits the model's
//! window (the same input as before windows existed, so its vector is the same), else
//! several windows, each a run of the page's chunks packed up to the token limit.
//!
//! A page is tokenized once, without truncation; each chunk's tokens are counted from
//! those offsets by binary search, so planning is linear in the page and the only other
//! cost of a long page is embedding its extra windows.
//!
//! Windows do not overlap. Chunks end at block or sentence boundaries, so a packed
//! window never cuts a sentence, and every window carries the document's title as the
//! single-window input does; an overlap of one chunk would cost about a third more
//! embeddings per long page (a window holds three to four chunks at the default sizes)
//! to recover only facts split across two chunks.

use crate::embed::{EmbedError, Embedder, Embeddings};
use crate::identify::{self, Kinds};
use crate::segment::{Batch, PageRec, WindowRec};

/// The token counts the planner needs from an embedder's tokenizer.
pub trait Tokens {
    /// Tokens the model reads, its special tokens included; the rest is cut.
    fn max_tokens(&self) -> usize;
    /// Tokens an input holding only `head` takes (special tokens and the model's
    /// passage prefix included).
    fn overhead(&self, head: &str) -> Result<usize, EmbedError>;
    /// The byte offset where each token of `text` starts, no special tokens, no limit.
    fn starts(&self, text: &str) -> Result<Vec<u32>, EmbedError>;
}

impl Tokens for Embedder {
    fn max_tokens(&self) -> usize {
        self.spec().max_tokens
    }

    fn overhead(&self, head: &str) -> Result<usize, EmbedError> {
        self.passage_tokens(head)
    }

    fn starts(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        self.token_starts(text)
    }
}

/// The embedder's inputs for a batch and the window each one is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub inputs: Vec<String>,
    pub windows: Vec<WindowRec>,
}

/// Plans every page of `b`: the title, then the page text (or a window of it); with
/// `mask` (`mask_identifiers`), with identifiers masked (the default set).
pub fn plan(b: &Batch, mask: bool, tokens: &impl Tokens) -> Result<Plan, EmbedError> {
    let title = b.docs.first().and_then(|d| d.title.as_deref()).unwrap_or("");
    let head = if title.is_empty() { String::new() } else { format!("{title}\n\n") };
    let max = tokens.max_tokens();
    let overhead = tokens.overhead(&head)?;
    // A title longer than the window itself leaves each window a quarter of it.
    let budget = max.saturating_sub(overhead).max(max / 4).max(1);
    let masked = |text: String| if mask { identify::mask(&text, Kinds::default_mask()).text } else { text };
    let mut out = Plan::default();
    for (ix, p) in (0u32..).zip(&b.pages) {
        let whole = WindowRec { page: ix, first_pos: 0, chunks: p.chunks };
        let spans = page_windows(b, p, budget, overhead, max, tokens)?;
        match spans {
            None => {
                out.inputs.push(masked(format!("{head}{}", p.text)));
                out.windows.push(whole);
            }
            Some(spans) => {
                for (first_pos, chunks, bytes) in spans {
                    out.inputs.push(masked(format!("{head}{}", &p.text[bytes])));
                    out.windows.push(WindowRec { page: ix, first_pos, chunks });
                }
            }
        }
    }
    Ok(out)
}

/// Embeds a plan's inputs as passages, row `i` for input `i`: the pages that are one
/// window in one call, as before windows (so their vectors are the same bits), and each
/// window of a long page in a call of its own. Batched, a long page's windows (most near
/// the limit, padded to the longest) took 1.35-1.6x as long per window as one at a time
/// (`window-ingest`), which would make a long page cost more than its embeddings.
pub fn embed(e: &mut Embedder, plan: &Plan) -> Result<Embeddings, EmbedError> {
    let mut per_page = std::collections::HashMap::<u32, u32>::new();
    for w in &plan.windows {
        *per_page.entry(w.page).or_default() += 1;
    }
    let (whole, windowed): (Vec<usize>, Vec<usize>) = (0..plan.inputs.len()).partition(|&i| per_page[&plan.windows[i].page] == 1);
    let dims = e.spec().dims;
    let mut data = vec![0f32; plan.inputs.len() * dims];
    let mut put = |rows: &[usize], v: Embeddings| {
        for (k, &i) in rows.iter().enumerate() {
            data[i * dims..(i + 1) * dims].copy_from_slice(v.row(k));
        }
    };
    if !whole.is_empty() {
        let refs: Vec<&str> = whole.iter().map(|&i| plan.inputs[i].as_str()).collect();
        put(&whole, e.embed_passages(&refs)?);
    }
    for i in windowed {
        put(&[i], e.embed_passages(&[plan.inputs[i].as_str()])?);
    }
    Ok(Embeddings { dims, data })
}

/// A window of a page: its first chunk's `pos`, how many chunks, the bytes of text.
type Span = (u32, u32, std::ops::Range<usize>);

/// `None` when the page fits one input of `max` tokens, else its windows of at most
/// `budget` tokens each (a lone chunk over the budget is a window of its own, which the
/// embedder cuts).
fn page_windows(b: &Batch, p: &PageRec, budget: usize, overhead: usize, max: usize, tokens: &impl Tokens) -> Result<Option<Vec<Span>>, EmbedError> {
    // A token starts at a distinct byte: a text shorter than the room left fits.
    if p.chunks < 2 || overhead + p.text.len() <= max {
        return Ok(None);
    }
    let starts = tokens.starts(&p.text)?;
    if overhead + starts.len() <= max {
        return Ok(None);
    }
    let first = p.first_chunk as usize;
    let chunks = &b.chunks[first..first + p.chunks as usize];
    let count = |from: usize, to: usize| {
        let a = starts.partition_point(|&s| (s as usize) < from);
        starts[a..].partition_point(|&s| (s as usize) < to)
    };
    let mut out: Vec<Span> = Vec::new();
    let mut open: Option<(usize, usize, usize)> = None; // (first index, from byte, to byte)
    for (i, c) in chunks.iter().enumerate() {
        // The first window also holds whatever precedes the first chunk.
        let from = if i == 0 { 0 } else { c.byte_start as usize };
        let to = c.byte_end as usize;
        open = match open {
            Some((f, a, z)) if count(a.min(from), z.max(to)) <= budget => Some((f, a.min(from), z.max(to))),
            Some((f, a, z)) => {
                out.push((chunks[f].pos, (i - f) as u32, a..z));
                Some((i, from, to))
            }
            None => Some((i, from, to)),
        };
    }
    if let Some((f, a, z)) = open {
        out.push((chunks[f].pos, (chunks.len() - f) as u32, a..z));
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests;
