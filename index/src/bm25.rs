//! BM25 over chunks, each indexed with its document's title before its text (a title
//! of its own field scored apart gave nDCG@10 0.666 on SciFact; joined, 0.688, as BEIR
//! indexes title + text): a tantivy index per segment, because a segment is the unit that is
//! flushed, merged and dropped; for the in-memory tail (one batch per acknowledged
//! document) a small inverted index of our own, because building a tantivy index per
//! document cost ~11 ms — as much as embedding it. Both score with tantivy's own
//! [`Bm25Weight`] and fieldnorm coding and with the statistics of the whole collection
//! ([`Stats`]), so a chunk gets the same score whichever kind of view holds it.

use std::path::Path;

use rustc_hash::FxHashMap as HashMap;
use tantivy::collector::{FilterCollector, TopDocs};

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{Postings, SegmentPostings, TermInfo};
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight, BooleanQuery, BoostQuery, EnableScoring, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED};
use tantivy::{doc, DocSet, Index, IndexReader, ReloadPolicy, Searcher, Term, TERMINATED};

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
    chunk: Field,
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

/// The BM25 index of one view.
pub enum Bm25 {
    Disk(DiskIndex),
    Memory(MemoryIndex),
}

/// The tantivy index of one segment's chunks.
pub struct DiskIndex {
    /// Unique among the indexes this process opened: how [`Stats`] names the index whose
    /// term entries it looked up.
    id: u64,
    _index: Index,
    _reader: IndexReader,
    searcher: Searcher,
    fields: Fields,
    /// Each tantivy segment's `chunk` column, opened once: a hit's chunk ordinal.
    chunk_columns: Vec<tantivy::columnar::Column<u64>>,
    /// Whether tantivy's doc ids are the chunk ordinals themselves (one tantivy segment
    /// written in chunk order, as [`DiskIndex::build`] writes it), so a hit needs no
    /// column read.
    identity: bool,
    /// Each tantivy segment's inverted index of the text field, and the index's
    /// document and token counts: what [`Stats::of`] reads for every query, fetched
    /// once (the segment is immutable) rather than through the searcher's locked caches.
    text_index: Vec<std::sync::Arc<tantivy::InvertedIndexReader>>,
    /// The text field's fieldnorms in the first tantivy segment (the only one when
    /// `identity` holds): what [`DiskIndex::every_match`] scores with.
    fieldnorms: FieldNormReader,
    num_docs: u64,
    num_tokens: u64,
}

/// A chunk the keyword list scored: its ordinal in its view, its BM25 score, and which
/// of the query's terms its indexed text (title and chunk) holds, bit i for term i —
/// or [`Scored::UNKNOWN`] when the path that scored it does not tell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    pub chunk: u32,
    pub score: f32,
    pub terms: u32,
    /// Of `terms`, those the indexed text holds more than once (term frequency ≥ 2):
    /// with how often the title holds a term, it tells whether the chunk's own text
    /// does without reading it. 0 when `terms` is [`Scored::UNKNOWN`].
    pub repeated: u32,
}

impl Scored {
    /// The terms are not known: block-max WAND's top-k, or a query of more than
    /// [`Scored::MAX_TERMS`] terms.
    pub const UNKNOWN: u32 = u32::MAX;
    /// The most terms whose bits a [`Scored`] carries: 31, so that no chunk's bits
    /// (all 32 set) can read as [`Scored::UNKNOWN`]. A query has rarely more distinct
    /// terms than that; 32-bit masks keep a scored chunk at 16 bytes, and let the
    /// scoring loop keep a chunk's terms and repeated terms in one word.
    pub const MAX_TERMS: usize = 31;
}

/// What a view's keyword search returns to the search path.
#[derive(Debug, Clone, Default)]
pub struct Matches {
    /// In chunk order.
    pub chunks: Vec<Scored>,
    /// Whether `chunks` is every chunk that holds a query term (and the filter admits),
    /// not only the best: then a chunk absent from it holds none of them.
    pub every: bool,
}

impl Bm25 {
    /// Writes a segment's tantivy index into `dir` (committed and fsynced by tantivy).
    pub fn build(batch: &ArchivedBatch, dir: &Path) -> Result<Bm25, Bm25Error> {
        DiskIndex::build(batch, Some(dir)).map(Bm25::Disk)
    }

    pub fn open(dir: &Path) -> Result<Bm25, Bm25Error> {
        DiskIndex::open(dir).map(Bm25::Disk)
    }

    /// An in-memory index of a small batch.
    pub fn memory(batch: &ArchivedBatch) -> Bm25 {
        Bm25::Memory(MemoryIndex::build(batch))
    }

    /// The best `limit` chunks (ordinal, score) that `allow` admits, scored with the
    /// collection's statistics. `allow` is `None` when every chunk may be returned:
    /// long postings lists are then pruned with block-max WAND, short ones scored in full.
    pub fn search<F>(&self, terms: &[String], stats: &Stats, limit: usize, allow: Option<F>) -> tantivy::Result<Vec<(u32, f32)>>
    where
        F: Fn(u64) -> bool + Send + Sync + Clone + 'static,
    {
        match self {
            Bm25::Disk(d) => d.search(&d.query(terms), stats, limit, allow),
            Bm25::Memory(m) => m.search(terms, stats, limit, |c| allow.as_ref().is_none_or(|a| a(c))),
        }
    }

    /// What the search path rolls up to pages: chunks that `allow` admits, in chunk
    /// order, with their scores and the query terms they hold. When the query's
    /// postings are few ([`WAND_MIN_POSTINGS`]) that is every matching chunk, streamed
    /// out of a union of the terms' postings with no top-k selection at all (selecting
    /// the best 200 of a few thousand matches cost more than scoring them); otherwise the
    /// best `limit`, which block-max WAND (or, under a filter, a bounded top-k) finds
    /// without keeping every match, and which does not say which terms each holds.
    pub fn scored<F>(&self, terms: &[String], stats: &Stats, limit: usize, allow: Option<F>) -> tantivy::Result<Matches>
    where
        F: Fn(u64) -> bool + Send + Sync + Clone + 'static,
    {
        self.scored_weighted(terms, &[], stats, limit, allow)
    }

    /// [`Bm25::scored`] with a weight per term (`weights[i]` multiplies term i's BM25
    /// score; a missing weight is 1): how often the query says a term, and quoted words
    /// it stresses (see `text::weighted_terms`). Weights of 1 give the same scores to
    /// the bit as [`Bm25::scored`].
    pub fn scored_weighted<F>(&self, terms: &[String], weights: &[f32], stats: &Stats, limit: usize, allow: Option<F>) -> tantivy::Result<Matches>
    where
        F: Fn(u64) -> bool + Send + Sync + Clone + 'static,
    {
        let every = match self {
            Bm25::Disk(_) => stats.postings() <= WAND_MIN_POSTINGS,
            Bm25::Memory(_) => true,
        };
        let mut chunks = match self {
            Bm25::Disk(d) if every => d.every_match(terms, weights, stats, allow.as_ref())?,
            Bm25::Disk(d) => d
                .search(&d.query_weighted(terms, weights), stats, limit, allow)?
                .into_iter()
                .map(|(chunk, score)| Scored { chunk, score, terms: Scored::UNKNOWN, repeated: 0 })
                .collect(),
            Bm25::Memory(m) => m.matches(terms, weights, stats, |c| allow.as_ref().is_none_or(|a| a(c)))?,
        };
        if !chunks.is_sorted_by_key(|x| x.chunk) {
            chunks.sort_unstable_by_key(|x| x.chunk);
        }
        Ok(Matches { chunks, every })
    }
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
    fn every_match<F>(&self, terms: &[String], weights: &[f32], stats: &Stats, allow: Option<&F>) -> tantivy::Result<Vec<Scored>>
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

    /// Every chunk `query` matches that `allow` admits, scored by tantivy's own union,
    /// in chunk order when tantivy's doc ids are chunk ordinals (else in each tantivy
    /// segment's order). The terms each holds are not known.
    fn every_match_tantivy<F>(&self, query: &BooleanQuery, stats: &Stats, allow: Option<&F>) -> tantivy::Result<Vec<Scored>>
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

    fn search_with<F>(&self, query: &BooleanQuery, stats: &Stats, limit: usize, allow: Option<F>, wand: bool) -> tantivy::Result<Vec<(u32, f32)>>
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
/// normalised (NFKC, Latin diacritics folded, combining marks inside words). Bump it
/// whenever the analyser changes the terms it makes: segments of another version have
/// their index rebuilt on open (`collection/reanalyse.rs`).
pub const ANALYZER_VERSION: u32 = 2;

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

/// Term i's weight: `weights[i]`, or 1 past the end (no weights given).
fn weight_of(weights: &[f32], i: usize) -> f32 {
    weights.get(i).copied().unwrap_or(1.0)
}

/// `w` multiplied by `by`; untouched at 1, so unweighted scores stay tantivy's to the bit.
fn boosted(w: Bm25Weight, by: f32) -> Bm25Weight {
    if by == 1.0 {
        w
    } else {
        w.boost_by(by)
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

/// Below this many postings (the query terms' document frequencies in the collection,
/// summed; [`Stats::postings`]) every matching chunk is scored: block-max WAND re-sorts its term cursors at every pivot,
/// which costs more than it skips when the lists are short. On SciFact (5,183 documents,
/// queries of ~8 terms, 200 chunks wanted) the exhaustive union served 18% more keyword
/// searches per second through the API than WAND did.
const WAND_MIN_POSTINGS: u64 = 20_000;

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

/// What BM25 indexes for chunk `i`: its document's title, then its text.
fn indexed_text(batch: &ArchivedBatch, i: usize) -> String {
    let c = &batch.chunks[i];
    let page = &batch.pages[c.page.to_native() as usize];
    let text = &page.text.as_str()[c.byte_start.to_native() as usize..c.byte_end.to_native() as usize];
    match batch.docs[page.doc.to_native() as usize].title.as_ref().map(|t| t.as_str()) {
        Some(title) if !title.is_empty() => format!("{title}\n{text}"),
        _ => text.to_owned(),
    }
}

fn register(index: &Index) {
    index.tokenizers().register(crate::text::ANALYZER, crate::text::analyzer());
}

/// The text field, first in the schema: tantivy's field id 0.
const FIELDS: usize = 1;

/// An inverted index of a small batch held in memory: postings per field, and each
/// chunk's token count per field (its fieldnorm).
pub struct MemoryIndex {
    postings: [HashMap<String, Vec<(u32, u32)>>; FIELDS],
    norms: [Vec<u32>; FIELDS],
    total_tokens: [u64; FIELDS],
}

impl MemoryIndex {
    fn build(batch: &ArchivedBatch) -> MemoryIndex {
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

    fn docs(&self) -> u64 {
        self.norms[0].len() as u64
    }

    fn doc_freq(&self, field: usize, term: &str) -> u64 {
        self.postings[field].get(term).map_or(0, |p| p.len() as u64)
    }

    /// The best `limit` chunks by the same sum of per-term BM25 scores a tantivy
    /// `BooleanQuery` of `Should` term queries gives.
    fn search(&self, terms: &[String], stats: &Stats, limit: usize, allow: impl Fn(u64) -> bool) -> tantivy::Result<Vec<(u32, f32)>> {
        let mut top: Vec<(u32, f32)> = self.matches(terms, &[], stats, allow)?.into_iter().map(|s| (s.chunk, s.score)).collect();
        top.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        top.truncate(limit);
        Ok(top)
    }

    /// Every chunk that holds a term of `terms` and that `allow` admits, scored, with
    /// the terms it holds; in no particular order.
    fn matches(&self, terms: &[String], weights: &[f32], stats: &Stats, allow: impl Fn(u64) -> bool) -> tantivy::Result<Vec<Scored>> {
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
    fn entries(&self, id: u64, terms: &[String]) -> Option<(&[Option<TermInfo>], &[u64])> {
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

#[cfg(test)]
mod tests {
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
}
