//! The collection's BM25 statistics for one query, summed over every view once: what
//! both kinds of index score with, so a chunk gets the same score whichever view holds it.

use rustc_hash::FxHashMap as HashMap;
use tantivy::postings::TermInfo;
use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::Field;
use tantivy::Term;

use super::{Bm25, FIELDS};

/// BM25 statistics of a whole collection for one query's terms, summed over every view
/// once, so each view's search reads them from here instead of asking every other view.
pub struct Stats {
    docs: u64,
    tokens: [u64; FIELDS],
    /// Document frequency per field of each query term.
    df: [HashMap<String, u64>; FIELDS],
    /// The terms, in the order they were given.
    terms: Vec<String>,
    /// Per single-segment disk index (by [`DiskIndex`] id), each term's entry in its
    /// dictionary, in `terms` order: its search reuses them rather than looking every
    /// term up again.
    entries: Vec<(u64, Vec<Option<TermInfo>>)>,
    /// The text field's document frequency of each term in `terms` order.
    text_df: Vec<u64>,
}

impl Stats {
    pub fn of(views: &[&Bm25], terms: &[String]) -> tantivy::Result<Stats> {
        let mut s = Stats { docs: 0, tokens: [0; FIELDS], df: Default::default(), terms: terms.to_vec(), entries: Vec::new(), text_df: Vec::new() };
        for v in views {
            match v {
                Bm25::Disk(d) => {
                    s.docs += d.num_docs;
                    s.tokens[0] += d.num_tokens;
                    let mut entries = Vec::with_capacity(terms.len());
                    for t in terms {
                        let term = Term::from_field_text(d.fields.text, t);
                        let df = match d.text_index.as_slice() {
                            [one] => {
                                let info = one.get_term_info(&term)?;
                                let df = info.as_ref().map_or(0, |i| i.doc_freq);
                                entries.push(info);
                                u64::from(df)
                            }
                            many => many.iter().map(|index| index.doc_freq(&term).map(u64::from)).sum::<std::io::Result<u64>>()?,
                        };
                        *s.df[0].entry(t.clone()).or_default() += df;
                    }
                    if d.text_index.len() == 1 {
                        s.entries.push((d.id, entries));
                    }
                }
                Bm25::Memory(m) => {
                    s.docs += m.docs();
                    for f in 0..FIELDS {
                        s.tokens[f] += m.total_tokens[f];
                        for t in terms {
                            *s.df[f].entry(t.clone()).or_default() += m.doc_freq(f, t);
                        }
                    }
                }
            }
        }
        s.text_df = terms.iter().map(|t| s.df[0].get(t).copied().unwrap_or(0)).collect();
        Ok(s)
    }
}

impl Stats {
    /// The dictionary entries of `terms` in the disk index `id`, and their document
    /// frequencies in the collection, when these statistics were taken for those terms
    /// and looked them up there.
    pub(super) fn entries(&self, id: u64, terms: &[String]) -> Option<(&[Option<TermInfo>], &[u64])> {
        if self.terms != terms {
            return None;
        }
        let (_, infos) = self.entries.iter().find(|(i, _)| *i == id)?;
        Some((infos, &self.text_df))
    }

    /// How many of the collection's chunks hold `term` (one of these statistics' terms)
    /// in any field.
    pub fn chunks_holding(&self, term: &str) -> u64 {
        self.df.iter().map(|f| f.get(term).copied().unwrap_or(0)).sum()
    }

    /// The postings the query's terms have in the whole collection.
    pub fn postings(&self) -> u64 {
        self.df[0].values().sum()
    }
}

impl Bm25StatisticsProvider for Stats {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        Ok(self.tokens.get(field.field_id() as usize).copied().unwrap_or(0))
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.docs)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let f = term.field().field_id() as usize;
        let value = term.value();
        let text = value.as_str().unwrap_or("");
        Ok(self.df.get(f).and_then(|m| m.get(text)).copied().unwrap_or(0))
    }
}
