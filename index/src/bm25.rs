//! BM25 over chunks with tantivy: one tantivy index per segment (and per in-memory
//! batch), because a segment is the unit that is flushed, merged and dropped; searches
//! score every segment with the statistics of the whole collection ([`Stats`]), so a
//! term's weight does not depend on which segment happens to hold a chunk.

use std::path::Path;

use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::query::{Bm25StatisticsProvider, BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED};
use tantivy::{doc, Index, IndexReader, ReloadPolicy, Searcher, Term};

use crate::segment::ArchivedBatch;

#[derive(Debug, thiserror::Error)]
#[error("BM25 index {path}: {source}")]
pub struct Bm25Error {
    pub path: String,
    #[source]
    pub source: tantivy::TantivyError,
}

#[derive(Clone, Copy)]
struct Fields {
    text: Field,
    title: Field,
    chunk: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(crate::text::ANALYZER)
        .set_index_option(IndexRecordOption::WithFreqs);
    let opts = TextOptions::default().set_indexing_options(indexing);
    let text = b.add_text_field("text", opts.clone());
    let title = b.add_text_field("title", opts);
    let chunk = b.add_u64_field("chunk", FAST | INDEXED);
    (b.build(), Fields { text, title, chunk })
}

fn fields(schema: &Schema) -> Fields {
    let f = |n| schema.get_field(n).expect("our schema");
    Fields { text: f("text"), title: f("title"), chunk: f("chunk") }
}

/// The tantivy index of one batch's chunks.
pub struct Bm25 {
    _index: Index,
    _reader: IndexReader,
    searcher: Searcher,
    fields: Fields,
}

impl Bm25 {
    /// Indexes `batch`'s chunks (text, and the document title), in `dir` when given
    /// (committed and fsynced by tantivy), else in memory.
    pub fn build(batch: &ArchivedBatch, dir: Option<&Path>) -> Result<Bm25, Bm25Error> {
        let where_ = dir.map(|d| d.display().to_string()).unwrap_or_else(|| "(memory)".into());
        let fail = |source| Bm25Error { path: where_.clone(), source };
        let (schema, f) = schema();
        let index = match dir {
            Some(d) => {
                std::fs::create_dir_all(d).map_err(|e| fail(e.into()))?;
                Index::create_in_dir(d, schema).map_err(fail)?
            }
            None => Index::create_in_ram(schema),
        };
        register(&index);
        let heap = if dir.is_some() { 64_000_000 } else { 15_000_000 };
        let mut writer = index.writer_with_num_threads::<tantivy::TantivyDocument>(1, heap).map_err(fail)?;
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        for (i, c) in batch.chunks.iter().enumerate() {
            let page = &batch.pages[c.page.to_native() as usize];
            let text = &page.text.as_str()[c.byte_start.to_native() as usize..c.byte_end.to_native() as usize];
            let title = batch.docs[page.doc.to_native() as usize].title.as_ref().map(|t| t.as_str()).unwrap_or("");
            writer.add_document(doc!(f.text => text, f.title => title, f.chunk => i as u64)).map_err(fail)?;
        }
        writer.commit().map_err(fail)?;
        writer.wait_merging_threads().map_err(fail)?;
        Bm25::from_index(index, &where_)
    }

    /// Opens a segment's committed index.
    pub fn open(dir: &Path) -> Result<Bm25, Bm25Error> {
        let fail = |source| Bm25Error { path: dir.display().to_string(), source };
        let index = Index::open_in_dir(dir).map_err(fail)?;
        register(&index);
        Bm25::from_index(index, &dir.display().to_string())
    }

    fn from_index(index: Index, where_: &str) -> Result<Bm25, Bm25Error> {
        let fail = |source| Bm25Error { path: where_.to_owned(), source };
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(fail)?;
        let searcher = reader.searcher();
        let fields = fields(&index.schema());
        Ok(Bm25 { _index: index, _reader: reader, searcher, fields })
    }

    /// The query's terms in both fields: a chunk matches on its text or its title.
    pub fn query(&self, terms: &[String]) -> BooleanQuery {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::with_capacity(terms.len() * 2);
        for t in terms {
            for field in [self.fields.text, self.fields.title] {
                let term = Term::from_field_text(field, t);
                clauses.push((Occur::Should, Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs))));
            }
        }
        BooleanQuery::new(clauses)
    }

    /// The best `limit` chunks (ordinal, score) that `allow` admits, scored with the
    /// collection's statistics.
    pub fn search(
        &self,
        query: &BooleanQuery,
        stats: &dyn Bm25StatisticsProvider,
        limit: usize,
        allow: impl Fn(u64) -> bool + Send + Sync + Clone + 'static,
    ) -> tantivy::Result<Vec<(u32, f32)>> {
        let collector = FilterCollector::new("chunk".to_owned(), allow, TopDocs::with_limit(limit.max(1)));
        let top = self.searcher.search_with_statistics_provider(query, &collector, stats)?;
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let col = self.searcher.segment_reader(addr.segment_ord).fast_fields().u64("chunk")?;
            out.push((col.first(addr.doc_id).unwrap_or(0) as u32, score));
        }
        Ok(out)
    }

    pub fn searcher(&self) -> &Searcher {
        &self.searcher
    }
}

fn register(index: &Index) {
    index.tokenizers().register(crate::text::ANALYZER, crate::text::analyzer());
}

/// BM25 statistics summed over every segment of a collection.
pub struct Stats<'a> {
    pub searchers: Vec<&'a Searcher>,
}

impl Bm25StatisticsProvider for Stats<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.searchers.iter().map(|s| s.total_num_tokens(field)).sum()
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        self.searchers.iter().map(|s| Bm25StatisticsProvider::total_num_docs(*s)).sum()
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        self.searchers.iter().map(|s| s.doc_freq(term)).sum()
    }
}
