//! A view: one batch of documents (a segment file or an in-memory WAL batch) with its
//! BM25 index and a lookup from document id to its place. Immutable once made.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwapOption;

use crate::bm25::Bm25;
use crate::segment::{ArchivedBatch, BatchView};
use crate::vector::HnswIndex;

use super::CollectionError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A segment file, by sequence number.
    Segment(u64),
    /// Records of this WAL file, not flushed yet.
    Memory { wal_seq: u64 },
}

pub struct View {
    pub source: Source,
    pub data: BatchView,
    pub bm25: Bm25,
    /// Document id → its index, built on the first lookup (searches never need it).
    docs: std::sync::OnceLock<HashMap<String, u32>>,
    /// The HNSW graph of a large segment's vectors, once built or loaded in the
    /// background; until then searches scan.
    graph: ArcSwapOption<HnswIndex>,
    /// The int8 copy of a segment's vectors the scan streams, made once (by the
    /// background thread, or by the first semantic search).
    quantized: std::sync::OnceLock<crate::vector::Quantized>,
    /// Narrow copies of the record fields searches read most, made off the request path
    /// ([`View::warm`]); until then searches read the archived records.
    columns: std::sync::OnceLock<Columns>,
}

/// The fields a search reads for every matching chunk (its page) and for every page of
/// the fused list (its document and simhash, to fold near-duplicates), as plain arrays.
/// The archived records are wide — a page record is ~80 bytes, its text elsewhere in the
/// mapping — so reading a hundred of them at random costs a cache and TLB miss each:
/// on SciFact that was ~6% of a keyword search's CPU. These are 4 and 12 bytes a row.
struct Columns {
    page_of_chunk: Vec<u32>,
    /// Per page: (simhash, document ordinal).
    page_fold: Vec<(u64, u32)>,
}

impl Columns {
    fn of(b: &ArchivedBatch) -> Columns {
        Columns {
            page_of_chunk: b.chunks.iter().map(|c| c.page.to_native()).collect(),
            page_fold: b.pages.iter().map(|p| (p.simhash.to_native(), p.doc.to_native())).collect(),
        }
    }
}

/// Segments with at least this many vectors are scanned through their int8 copy: a
/// quarter of the bytes to stream. In a benchmark whose rows stay in the CPU's caches
/// the copy does not pay (5,000 × 384 rows at depth 100: 1.07× the f32 scan; 50,000
/// rows, which do not fit: 0.36×; `cargo bench -p quarry-bench --bench vector --
/// scan-depth100`), but in the server every query embedding streams the model's
/// weights through the same caches: under hybrid load on SciFact (5,183 rows) the f32
/// scan took 6.5% of the server's CPU, the int8 scan about half that.
pub const QUANTIZE_MIN_ROWS: usize = 1024;

impl Drop for View {
    /// Dropping a graph runs a parallel loop; a shard must not stall on it, so the
    /// graph goes to the graveyard the background thread empties.
    fn drop(&mut self) {
        if let Some(g) = self.graph.swap(None) {
            graveyard::bury(g);
        }
    }
}

/// Graphs waiting to be dropped off the request path.
pub mod graveyard {
    use std::sync::{Arc, Mutex};

    use crate::vector::HnswIndex;

    static GRAVES: Mutex<Vec<Arc<HnswIndex>>> = Mutex::new(Vec::new());

    pub fn bury(g: Arc<HnswIndex>) {
        GRAVES.lock().expect("graveyard").push(g);
    }

    /// Drops the buried graphs; call from a background thread.
    pub fn empty() {
        let graves = std::mem::take(&mut *GRAVES.lock().expect("graveyard"));
        drop(graves);
    }
}

impl View {
    pub fn segment(dir: &Path, seq: u64) -> Result<View, CollectionError> {
        let data = BatchView::open(&segment_path(dir, seq))?;
        let bm25 = super::reanalyse::open(&bm25_path(dir, seq), data.batch())?;
        Ok(View::new(Source::Segment(seq), data, bm25))
    }

    pub fn memory(bytes: rkyv::util::AlignedVec, wal_seq: u64, origin: &Path) -> Result<View, CollectionError> {
        let data = BatchView::from_bytes(bytes, origin)?;
        let bm25 = Bm25::memory(data.batch());
        let view = View::new(Source::Memory { wal_seq }, data, bm25);
        // A WAL batch is one document: its columns cost nothing to make now.
        view.warm();
        Ok(view)
    }

    fn new(source: Source, data: BatchView, bm25: Bm25) -> View {
        View {
            source,
            data,
            bm25,
            docs: std::sync::OnceLock::new(),
            graph: ArcSwapOption::empty(),
            quantized: std::sync::OnceLock::new(),
            columns: std::sync::OnceLock::new(),
        }
    }

    /// Makes what searches read faster once made: the narrow columns and, for a view
    /// big enough to want one, the int8 copy of its vectors. Called off the request
    /// path (by the background thread after a segment opens, flushes or merges), so
    /// opening stays independent of a segment's size.
    pub fn warm(&self) {
        self.columns.get_or_init(|| Columns::of(self.batch()));
        self.quantized();
    }

    /// The page chunk `chunk` belongs to.
    #[inline]
    pub fn page_of_chunk(&self, chunk: u32) -> u32 {
        match self.columns.get() {
            Some(c) => c.page_of_chunk[chunk as usize],
            None => self.batch().chunks[chunk as usize].page.to_native(),
        }
    }

    /// Page `page`'s simhash and document ordinal.
    #[inline]
    pub fn page_fold(&self, page: u32) -> (u64, u32) {
        match self.columns.get() {
            Some(c) => c.page_fold[page as usize],
            None => {
                let p = &self.batch().pages[page as usize];
                (p.simhash.to_native(), p.doc.to_native())
            }
        }
    }

    /// The int8 copy of the vectors, when the view is big enough to want one.
    pub fn quantized(&self) -> Option<&crate::vector::Quantized> {
        let b = self.batch();
        let dims = b.dims.to_native() as usize;
        (dims > 0 && b.windows.len() >= QUANTIZE_MIN_ROWS)
            .then(|| self.quantized.get_or_init(|| crate::vector::Quantized::new(self.data.vectors(), dims)))
    }

    pub fn graph(&self) -> Option<std::sync::Arc<HnswIndex>> {
        self.graph.load_full()
    }

    /// A segment of at least `min_rows` vectors that has no graph yet.
    pub fn wants_graph(&self, min_rows: usize) -> bool {
        let b = self.batch();
        !self.is_memory() && b.dims.to_native() > 0 && b.windows.len() >= min_rows && self.graph.load().is_none()
    }

    /// Loads the segment's saved graph, or builds and saves one.
    pub fn attach_graph(&self, dir: &Path) -> std::io::Result<()> {
        let Source::Segment(seq) = self.source else { return Ok(()) };
        let seg_dir = dir.join("segments");
        let name = graph_basename(seq);
        let graph = match HnswIndex::load(&seg_dir, &name) {
            Ok(g) => g,
            Err(_) => {
                let g = HnswIndex::build(self.data.vectors(), self.batch().dims.to_native() as usize);
                g.save(&seg_dir, &name)?;
                g
            }
        };
        self.graph.store(Some(std::sync::Arc::new(graph)));
        Ok(())
    }

    pub fn batch(&self) -> &ArchivedBatch {
        self.data.batch()
    }

    pub fn doc(&self, id: &str) -> Option<u32> {
        let docs = self.docs.get_or_init(|| self.batch().docs.iter().enumerate().map(|(i, d)| (d.id.as_str().to_owned(), i as u32)).collect());
        docs.get(id).copied()
    }

    pub fn is_memory(&self) -> bool {
        matches!(self.source, Source::Memory { .. })
    }
}

pub fn segment_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join("segments").join(format!("{seq:016}.seg"))
}

pub fn graph_basename(seq: u64) -> String {
    format!("{seq:016}")
}

pub fn bm25_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join("segments").join(format!("{seq:016}.bm25"))
}

/// Which documents of each view are deleted: a bitset per view, shared until a delete
/// touches that view.
#[derive(Default, Clone)]
pub struct Dead {
    bits: Vec<u64>,
    pub count: u32,
}

impl Dead {
    pub fn of(view: &View, deleted: &std::collections::HashSet<String>) -> Arc<Dead> {
        let mut dead = Dead { bits: vec![0; view.batch().docs.len().div_ceil(64)], count: 0 };
        for id in deleted {
            if let Some(d) = view.doc(id) {
                dead.bits[d as usize / 64] |= 1 << (d % 64);
                dead.count += 1;
            }
        }
        Arc::new(dead)
    }

    #[inline]
    pub fn contains(&self, doc: u32) -> bool {
        self.bits.get(doc as usize / 64).is_some_and(|w| w & (1 << (doc % 64)) != 0)
    }
}
