//! Our copy of tantivy's term union for short postings lists: every chunk a query's
//! terms match, streamed in chunk order with a bit per term it holds, summed in tantivy's
//! order so the scores are tantivy's to the bit. Its own file because it is the keyword
//! path's hot loop and the one place that must track tantivy's internals.

use tantivy::postings::{Postings, SegmentPostings};
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, Term, TERMINATED};

use super::{boosted, weight_of, DiskIndex, Scored, Stats};

impl DiskIndex {
    /// Every chunk that holds one of `terms` and that `allow` admits, in chunk order,
    /// with its score and the terms it holds.
    ///
    /// This is tantivy's own union of term scorers (`BufferedUnionScorer` over
    /// `TermScorer`s with a `SumCombiner`, what a `BooleanQuery` of `Should` term
    /// queries runs) written out, so that each chunk also learns which terms it holds:
    /// the passages of a result need exactly that, and finding it again in their text
    /// cost a sixth of a keyword search. The windows of 4,096 doc ids, the term order,
    /// and the order in which exhausted terms leave the list (swapped with the last)
    /// are tantivy's, so every chunk's sum is added in the same order and the scores
    /// are the same to the bit (a test holds them to tantivy's).
    pub(super) fn every_match<F>(&self, terms: &[String], weights: &[f32], stats: &Stats, allow: Option<&F>) -> tantivy::Result<Vec<Scored>>
    where
        F: Fn(u64) -> bool,
    {
        if !self.identity {
            return self.every_match_tantivy(&self.query_weighted(terms, weights), stats, allow);
        }
        let Some(inverted) = self.text_index.first() else { return Ok(Vec::new()) };
        let docs = stats.total_num_docs()?;
        let average = stats.total_num_tokens(self.fields.text)? as f32 / docs as f32;
        let known = terms.len() <= Scored::MAX_TERMS;
        // The term entries `stats` looked up in this index, when it did, for these terms.
        let looked_up = stats.entries(self.id, terms);
        // Per term its cursor, its weight, and its bit among a chunk's terms (low half
        // of a window word) and among its repeated terms (high half).
        let mut cursors: Vec<(SegmentPostings, Bm25Weight, u64)> = Vec::with_capacity(terms.len());
        for (i, t) in terms.iter().enumerate() {
            let term = Term::from_field_text(self.fields.text, t);
            let (info, df) = match looked_up {
                Some((infos, dfs)) => (infos[i].clone(), dfs[i]),
                None => (inverted.get_term_info(&term)?, stats.doc_freq(&term)?),
            };
            let Some(info) = info else { continue };
            let postings = inverted.read_postings_from_terminfo(&info, IndexRecordOption::WithFreqs)?;
            if postings.doc() == TERMINATED {
                continue;
            }
            let weight = boosted(Bm25Weight::for_one_term_without_explain(df, docs, average), weight_of(weights, i));
            cursors.push((postings, weight, if known { 1 << i } else { 0 }));
        }
        let mut out = Vec::with_capacity(stats.postings().min(self.num_docs) as usize);
        let norms = &self.fieldnorms;
        WINDOW.with_borrow_mut(|window| {
            let guard = Clean(window);
            let w = &mut *guard.0;
            while let Some(start) = cursors.iter().map(|c| c.0.doc()).min() {
                let horizon = start + HORIZON;
                let mut i = 0;
                while i < cursors.len() {
                    let (postings, weight, bit) = &mut cursors[i];
                    let mut doc = postings.doc();
                    let exhausted = loop {
                        if doc >= horizon {
                            break false;
                        }
                        let at = (doc - start) as usize;
                        w.occupied[at / 64] |= 1 << (at % 64);
                        let tf = postings.term_freq();
                        w.score[at] += weight.score(norms.fieldnorm_id(doc), tf);
                        w.terms[at] |= if tf > 1 { *bit | *bit << 32 } else { *bit };
                        doc = postings.advance();
                        if doc == TERMINATED {
                            break true;
                        }
                    };
                    if exhausted {
                        cursors.swap_remove(i);
                    } else {
                        i += 1;
                    }
                }
                for word in 0..w.occupied.len() {
                    let mut bits = std::mem::take(&mut w.occupied[word]);
                    while bits != 0 {
                        let at = word * 64 + bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        let score = std::mem::take(&mut w.score[at]);
                        let masks = std::mem::take(&mut w.terms[at]);
                        let (held, repeated) = (masks as u32, (masks >> 32) as u32);
                        let chunk = start + at as u32;
                        if allow.is_none_or(|a| a(chunk as u64)) {
                            let terms = if known { held } else { Scored::UNKNOWN };
                            out.push(Scored { chunk, score, terms, repeated: if known { repeated } else { 0 } });
                        }
                    }
                }
            }
        });
        Ok(out)
    }
}

/// The doc ids [`DiskIndex::every_match`] adds up at a time: tantivy's union horizon.
const HORIZON: u32 = 4096;

/// One window of [`DiskIndex::every_match`]: which doc ids hold a term, their sums,
/// and their terms (low 32 bits) with those they hold more than once (high 32 bits).
/// Every slot is left zero after use, so a search starts from a clean one.
struct Window {
    occupied: [u64; HORIZON as usize / 64],
    score: [f32; HORIZON as usize],
    terms: [u64; HORIZON as usize],
}

/// Leaves a [`Window`] clean even when a search panics half-way through it (an `allow`
/// that panics), so that the thread's next search does not add to stale sums.
struct Clean<'a>(&'a mut Window);

impl Drop for Clean<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.occupied.fill(0);
            self.0.score.fill(0.0);
            self.0.terms.fill(0);
        }
    }
}

thread_local! {
    static WINDOW: std::cell::RefCell<Box<Window>> = std::cell::RefCell::new(Box::new(Window {
        occupied: [0; HORIZON as usize / 64],
        score: [0.0; HORIZON as usize],
        terms: [0; HORIZON as usize],
    }));
}
