//! The BM25 index of one segment: a tantivy index of its chunks in the segment's
//! `.bm25/` directory (built once when the segment is written, opened read-only after),
//! searched through tantivy's own collectors (top-k with block-max WAND, a filtered top-k,
//! or every match), and the analyser version its terms come from.

use std::path::Path;

use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::{BooleanQuery, BoostQuery, EnableScoring, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED};
use tantivy::{doc, Index, IndexReader, ReloadPolicy, Searcher, Term};

use super::{indexed_text, weight_of, Bm25Error, Scored, Stats, WAND_MIN_POSTINGS};
use crate::segment::ArchivedBatch;

#[derive(Clone, Copy)]
pub(super) struct Fields {
    pub(super) text: Field,
    pub(super) chunk: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let indexing = TextFieldIndexing::default().set_tokenizer(crate::text::ANALYZER).set_index_option(IndexRecordOption::WithFreqs);
    let opts = TextOptions::default().set_indexing_options(indexing);
    let text = b.add_text_field("text", opts);
    let chunk = b.add_u64_field("chunk", FAST | INDEXED);
    (b.build(), Fields { text, chunk })
}

fn fields(schema: &Schema) -> Fields {
    let f = |n| schema.get_field(n).expect("our schema");
    Fields { text: f("text"), chunk: f("chunk") }
}

/// The tantivy index of one segment's chunks.
pub struct DiskIndex {
    /// Unique among the indexes this process opened: how [`Stats`] names the index whose
    /// term entries it looked up.
    pub(super) id: u64,
    _index: Index,
    _reader: IndexReader,
    pub(super) searcher: Searcher,
    pub(super) fields: Fields,
    /// Each tantivy segment's `chunk` column, opened once: a hit's chunk ordinal.
    pub(super) chunk_columns: Vec<tantivy::columnar::Column<u64>>,
    /// Whether tantivy's doc ids are the chunk ordinals themselves (one tantivy segment
    /// written in chunk order, as [`DiskIndex::build`] writes it), so a hit needs no
    /// column read.
    pub(super) identity: bool,
    /// Each tantivy segment's inverted index of the text field, and the index's
    /// document and token counts: what [`Stats::of`] reads for every query, fetched
    /// once (the segment is immutable) rather than through the searcher's locked caches.
    pub(super) text_index: Vec<std::sync::Arc<tantivy::InvertedIndexReader>>,
    /// The text field's fieldnorms in the first tantivy segment (the only one when
    /// `identity` holds): what [`DiskIndex::every_match`] scores with.
    pub(super) fieldnorms: FieldNormReader,
    pub(super) num_docs: u64,
    pub(super) num_tokens: u64,
}

impl DiskIndex {
    /// Indexes `batch`'s chunks (text, and the document title), in `dir` when given
    /// (committed and fsynced by tantivy), else in memory.
    pub fn build(batch: &ArchivedBatch, dir: Option<&Path>) -> Result<DiskIndex, Bm25Error> {
        DiskIndex::build_with(batch, dir, crate::text::analyzer(), true)
    }

    /// An index of `batch` in `dir` by another `analyzer`, with no analyser version:
    /// what a segment written before [`ANALYZER_VERSION`] 2 holds.
    #[cfg(test)]
    pub(crate) fn build_unversioned(batch: &ArchivedBatch, dir: &Path, analyzer: tantivy::tokenizer::TextAnalyzer) -> Result<DiskIndex, Bm25Error> {
        DiskIndex::build_with(batch, Some(dir), analyzer, false)
    }

    fn build_with(
        batch: &ArchivedBatch,
        dir: Option<&Path>,
        analyzer: tantivy::tokenizer::TextAnalyzer,
        versioned: bool,
    ) -> Result<DiskIndex, Bm25Error> {
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
        index.tokenizers().register(crate::text::ANALYZER, analyzer);
        let heap = if dir.is_some() { 64_000_000 } else { 15_000_000 };
        let mut writer = index.writer_with_num_threads::<tantivy::TantivyDocument>(1, heap).map_err(fail)?;
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        for i in 0..batch.chunks.len() {
            writer.add_document(doc!(f.text => indexed_text(batch, i), f.chunk => i as u64)).map_err(fail)?;
        }
        writer.commit().map_err(fail)?;
        writer.wait_merging_threads().map_err(fail)?;
        if let Some(d) = dir.filter(|_| versioned) {
            write_analyzer_version(d).map_err(|e| fail(e.into()))?;
        }
        DiskIndex::from_index(index, &where_)
    }

    /// Opens a segment's committed index.
    pub fn open(dir: &Path) -> Result<DiskIndex, Bm25Error> {
        let fail = |source| Bm25Error { path: dir.display().to_string(), source };
        let index = Index::open_in_dir(dir).map_err(fail)?;
        register(&index);
        DiskIndex::from_index(index, &dir.display().to_string())
    }

    fn from_index(index: Index, where_: &str) -> Result<DiskIndex, Bm25Error> {
        let fail = |source| Bm25Error { path: where_.to_owned(), source };
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(fail)?;
        let searcher = reader.searcher();
        let fields = fields(&index.schema());
        let chunk_columns: Vec<tantivy::columnar::Column<u64>> =
            searcher.segment_readers().iter().map(|r| r.fast_fields().u64("chunk")).collect::<Result<_, _>>().map_err(fail)?;
        let identity = is_identity(&searcher, &chunk_columns);
        let text_index: Vec<_> = searcher.segment_readers().iter().map(|r| r.inverted_index(fields.text)).collect::<Result<_, _>>().map_err(fail)?;
        let num_docs = searcher.num_docs();
        let num_tokens = text_index.iter().map(|i| i.total_num_tokens()).sum();
        let fieldnorms = match searcher.segment_readers().first() {
            Some(r) => r.get_fieldnorms_reader(fields.text).map_err(fail)?,
            None => FieldNormReader::constant(0, 1),
        };
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(DiskIndex { id, _index: index, _reader: reader, searcher, fields, chunk_columns, identity, text_index, fieldnorms, num_docs, num_tokens })
    }

    /// Every chunk `query` matches that `allow` admits, scored by tantivy's own union,
    /// in chunk order when tantivy's doc ids are chunk ordinals (else in each tantivy
    /// segment's order). The terms each holds are not known.
    pub(super) fn every_match_tantivy<F>(&self, query: &BooleanQuery, stats: &Stats, allow: Option<&F>) -> tantivy::Result<Vec<Scored>>
    where
        F: Fn(u64) -> bool,
    {
        let weight = query.weight(EnableScoring::enabled_from_statistics_provider(stats, &self.searcher))?;
        // At most the query's postings (bounded by [`WAND_MIN_POSTINGS`] on this path)
        // and the segment's chunks: no regrowth while tantivy streams matches.
        let mut out = Vec::with_capacity(stats.postings().min(self.searcher.num_docs()) as usize);
        for (ord, reader) in self.searcher.segment_readers().iter().enumerate() {
            let column = &self.chunk_columns[ord];
            let identity = self.identity;
            weight.for_each(reader, &mut |doc, score| {
                let chunk = if identity { doc as u64 } else { column.first(doc).unwrap_or(0) };
                if allow.is_none_or(|a| a(chunk)) {
                    out.push(Scored { chunk: chunk as u32, score, terms: Scored::UNKNOWN, repeated: 0 });
                }
            })?;
        }
        Ok(out)
    }

    /// Any of the query's terms; scores add up.
    pub fn query(&self, terms: &[String]) -> BooleanQuery {
        self.query_weighted(terms, &[])
    }

    /// [`DiskIndex::query`] with term i's score multiplied by `weights[i]` (1 when
    /// missing). A boosted term query still scores with a term scorer, so block-max
    /// WAND prunes as before.
    pub fn query_weighted(&self, terms: &[String], weights: &[f32]) -> BooleanQuery {
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let term = Term::from_field_text(self.fields.text, t);
                let query: Box<dyn Query> = Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs));
                let w = weight_of(weights, i);
                (Occur::Should, if w == 1.0 { query } else { Box::new(BoostQuery::new(query, w)) })
            })
            .collect();
        BooleanQuery::new(clauses)
    }

    /// The best `limit` chunks (ordinal, score) that `allow` admits, scored with the
    /// collection's statistics.
    pub fn search<F>(&self, query: &BooleanQuery, stats: &Stats, limit: usize, allow: Option<F>) -> tantivy::Result<Vec<(u32, f32)>>
    where
        F: Fn(u64) -> bool + Send + Sync + Clone + 'static,
    {
        let wand = stats.postings() > WAND_MIN_POSTINGS;
        self.search_with(query, stats, limit, allow, wand)
    }

    pub(super) fn search_with<F>(
        &self,
        query: &BooleanQuery,
        stats: &Stats,
        limit: usize,
        allow: Option<F>,
        wand: bool,
    ) -> tantivy::Result<Vec<(u32, f32)>>
    where
        F: Fn(u64) -> bool + Send + Sync + Clone + 'static,
    {
        let top_docs = TopDocs::with_limit(limit.max(1));
        let top = match allow {
            Some(allow) => {
                let collector = FilterCollector::new("chunk".to_owned(), allow, top_docs);
                self.searcher.search_with_statistics_provider(query, &collector, stats)?
            }
            None if !wand => self.searcher.search_with_statistics_provider(query, &Exhaustive(top_docs), stats)?,
            None => self.searcher.search_with_statistics_provider(query, &top_docs, stats)?,
        };
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let chunk = self.chunk_columns[addr.segment_ord as usize].first(addr.doc_id).unwrap_or(0);
            out.push((chunk as u32, score));
        }
        Ok(out)
    }
}

/// Whether doc id = chunk ordinal: one tantivy segment, whose `chunk` column holds each
/// doc's own id. The writer assigns doc ids in the order [`DiskIndex::build`] adds the
/// chunks, so this holds by construction; the check reads 65 spread-out docs, not all,
/// so that opening stays independent of the segment's size.
fn is_identity(searcher: &Searcher, columns: &[tantivy::columnar::Column<u64>]) -> bool {
    let [column] = columns else { return false };
    let max = searcher.segment_readers()[0].max_doc();
    if max == 0 {
        return true;
    }
    (0..=64u64).map(|i| (i * (max as u64 - 1) / 64) as u32).all(|doc| column.first(doc) == Some(doc as u64))
}

/// The version of [`crate::text::analyzer`] the terms of an index written today come
/// from. 1: the analyser before Unicode normalisation (no version file); 2: words
/// normalised (NFKC, Latin diacritics folded, combining marks inside words); 3: scripts
/// written without spaces (CJK, Thai, …) indexed as overlapping bigrams of their units
/// instead of whole runs (`text/unspaced.rs`). Bump it whenever the analyser changes the
/// terms it makes: segments of another version have their index rebuilt on open
/// (`collection/reanalyse.rs`).
pub const ANALYZER_VERSION: u32 = 3;

/// The file in an index directory that records its analyser version; written last, once
/// the index is committed.
const ANALYZER_FILE: &str = "ANALYZER";

/// The analyser version the index in `dir` was built with: `None` when it records none
/// (written before versions were recorded, or a build cut short).
pub fn analyzer_version(dir: &Path) -> Option<u32> {
    std::fs::read_to_string(dir.join(ANALYZER_FILE)).ok()?.trim().parse().ok()
}

fn write_analyzer_version(dir: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join(ANALYZER_FILE))?;
    writeln!(f, "{ANALYZER_VERSION}")?;
    f.sync_all()?;
    std::fs::File::open(dir)?.sync_all()
}

/// A collector that lets tantivy visit every match (its default `collect_segment`)
/// instead of pruning with block-max WAND as [`TopDocs`] asks.
struct Exhaustive(TopDocs);

impl tantivy::collector::Collector for Exhaustive {
    type Fruit = <TopDocs as tantivy::collector::Collector>::Fruit;
    type Child = <TopDocs as tantivy::collector::Collector>::Child;

    fn for_segment(&self, ord: tantivy::SegmentOrdinal, reader: &tantivy::SegmentReader) -> tantivy::Result<Self::Child> {
        self.0.for_segment(ord, reader)
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<<Self::Child as tantivy::collector::SegmentCollector>::Fruit>) -> tantivy::Result<Self::Fruit> {
        self.0.merge_fruits(fruits)
    }
}

fn register(index: &Index) {
    index.tokenizers().register(crate::text::ANALYZER, crate::text::analyzer());
}
