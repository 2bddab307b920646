//! The in-memory tail's BM25: a small inverted index per acknowledged batch, because a
//! tantivy index per document cost as much as embedding it; it scores with tantivy's
//! [`Bm25Weight`] and fieldnorm coding so a chunk's score does not depend on whether it
//! has been flushed yet.

use rustc_hash::FxHashMap as HashMap;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight};
use tantivy::schema::Field;
use tantivy::Term;

use super::{boosted, indexed_text, weight_of, Scored, Stats, FIELDS};
use crate::segment::ArchivedBatch;

/// An inverted index of a small batch held in memory: postings per field, and each
/// chunk's token count per field (its fieldnorm).
pub struct MemoryIndex {
    postings: [HashMap<String, Vec<(u32, u32)>>; FIELDS],
    norms: [Vec<u32>; FIELDS],
    pub(super) total_tokens: [u64; FIELDS],
}

impl MemoryIndex {
    pub(super) fn build(batch: &ArchivedBatch) -> MemoryIndex {
        let mut m = MemoryIndex { postings: Default::default(), norms: Default::default(), total_tokens: [0; FIELDS] };
        for i in 0..batch.chunks.len() {
            let text = indexed_text(batch, i);
            for (f, value) in [text.as_str()].into_iter().enumerate() {
                let terms = crate::text::terms(value);
                m.norms[f].push(terms.len() as u32);
                m.total_tokens[f] += terms.len() as u64;
                let mut tf: HashMap<String, u32> = HashMap::default();
                for t in terms {
                    *tf.entry(t).or_default() += 1;
                }
                for (t, n) in tf {
                    m.postings[f].entry(t).or_default().push((i as u32, n));
                }
            }
        }
        m
    }

    pub(super) fn docs(&self) -> u64 {
        self.norms[0].len() as u64
    }

    pub(super) fn doc_freq(&self, field: usize, term: &str) -> u64 {
        self.postings[field].get(term).map_or(0, |p| p.len() as u64)
    }

    /// The best `limit` chunks by the same sum of per-term BM25 scores a tantivy
    /// `BooleanQuery` of `Should` term queries gives.
    pub(super) fn search(&self, terms: &[String], stats: &Stats, limit: usize, allow: impl Fn(u64) -> bool) -> tantivy::Result<Vec<(u32, f32)>> {
        let mut top: Vec<(u32, f32)> = self.matches(terms, &[], stats, allow)?.into_iter().map(|s| (s.chunk, s.score)).collect();
        top.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        top.truncate(limit);
        Ok(top)
    }

    /// Every chunk that holds a term of `terms` and that `allow` admits, scored, with
    /// the terms it holds; in no particular order.
    pub(super) fn matches(&self, terms: &[String], weights: &[f32], stats: &Stats, allow: impl Fn(u64) -> bool) -> tantivy::Result<Vec<Scored>> {
        let n = stats.total_num_docs()?;
        let known = terms.len() <= Scored::MAX_TERMS;
        let mut scores: HashMap<u32, (f32, u32, u32)> = HashMap::default();
        for f in 0..FIELDS {
            let field = Field::from_field_id(f as u32);
            let avg = stats.total_num_tokens(field)? as f32 / n.max(1) as f32;
            for (i, t) in terms.iter().enumerate() {
                let Some(postings) = self.postings[f].get(t) else { continue };
                let df = stats.doc_freq(&Term::from_field_text(field, t))?;
                let w = boosted(Bm25Weight::for_one_term_without_explain(df, n, avg), weight_of(weights, i));
                for &(chunk, tf) in postings {
                    if allow(chunk as u64) {
                        let norm = FieldNormReader::fieldnorm_to_id(self.norms[f][chunk as usize]);
                        let (score, held, repeated) = scores.entry(chunk).or_default();
                        *score += w.score(norm, tf);
                        let bit = if known { 1 << i } else { 0 };
                        *held |= bit;
                        *repeated |= if tf > 1 { bit } else { 0 };
                    }
                }
            }
        }
        Ok(scores
            .into_iter()
            .map(|(chunk, (score, held, repeated))| match known {
                true => Scored { chunk, score, terms: held, repeated },
                false => Scored { chunk, score, terms: Scored::UNKNOWN, repeated: 0 },
            })
            .collect())
    }
}
