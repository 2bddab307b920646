//! A segment's BM25 index is only as good as the analyser that wrote its terms: when the
//! analyser changes (Unicode normalisation, diacritics folded), an index written before
//! holds terms today's queries no longer produce (`café` indexed as `café`, searched as
//! `cafe`). Each index records the analyser version it was built with
//! ([`crate::bm25::ANALYZER_VERSION`], the file `ANALYZER` in its directory; none means
//! version 1); on open, an index of another version is rebuilt from the segment's stored
//! chunk text before it answers anything.
//!
//! The rebuild is atomic: the new index is written beside (`<seq>.bm25.new`, its
//! `ANALYZER` file written last, so its presence means complete), then the old one is
//! renamed away (`<seq>.bm25.old`) and the new one into place. A crash at any point
//! leaves either the old index (a partial `.new` is removed and the rebuild starts
//! over) or a complete new one (`.new` renamed into place on the next open).

use std::fs;
use std::path::{Path, PathBuf};

use super::{io, CollectionError};
use crate::bm25::{self, Bm25};
use crate::segment::{self, ArchivedBatch};

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

fn complete(dir: &Path) -> bool {
    bm25::analyzer_version(dir).is_some()
}

fn remove(dir: &Path) -> Result<(), CollectionError> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io("remove", dir)(e)),
        _ => Ok(()),
    }
}

/// Finishes or undoes a rebuild a crash cut short, so that `path` is a whole index.
fn recover(path: &Path, fresh: &Path, old: &Path) -> Result<(), CollectionError> {
    if !path.exists() {
        let from = if complete(fresh) { fresh } else { old };
        if from.exists() {
            fs::rename(from, path).map_err(io("rename", from))?;
        }
    }
    remove(fresh)?;
    remove(old)
}

/// The BM25 index of the segment whose index directory is `path` and whose batch is
/// `batch`, rebuilt first when its analyser version is not today's.
pub fn open(path: &Path, batch: &ArchivedBatch) -> Result<Bm25, CollectionError> {
    let (fresh, old) = (sibling(path, ".new"), sibling(path, ".old"));
    recover(path, &fresh, &old)?;
    if bm25::analyzer_version(path) != Some(bm25::ANALYZER_VERSION) {
        Bm25::build(batch, &fresh)?;
        let parent = path.parent().unwrap_or(Path::new("."));
        if path.exists() {
            fs::rename(path, &old).map_err(io("rename", path))?;
        }
        fs::rename(&fresh, path).map_err(io("rename", &fresh))?;
        segment::sync_dir(parent)?;
        remove(&old)?;
    }
    Ok(Bm25::open(path)?)
}

#[cfg(test)]
mod tests {
    use tantivy::tokenizer::{LowerCaser, SimpleTokenizer, TextAnalyzer};

    use super::*;
    use crate::bm25::DiskIndex;
    use crate::collection::tests::doc;
    use crate::collection::{view, Collection, Options};
    use crate::search::{search, Mode, Query};

    /// A collection of one flushed segment holding `text`, closed again; its directory.
    fn flushed(text: &str) -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("col");
        let (c, _) = Collection::open("col_r", &dir, Options::default()).unwrap();
        c.add(doc("d1", &[text])).unwrap();
        c.flush().unwrap();
        (tmp, dir)
    }

    fn only_segment(dir: &Path) -> u64 {
        let Ok((c, _)) = Collection::open("col_r", dir, Options::default()) else { panic!("open") };
        let snap = c.snapshot();
        match snap.views[0].source {
            view::Source::Segment(seq) => seq,
            view::Source::Memory { .. } => panic!("a flushed segment"),
        }
    }

    /// Replaces segment `seq`'s index by one an analyser without Unicode normalisation
    /// wrote (words split at anything not alphanumeric, lowercased): version 1's terms.
    fn make_version_1(dir: &Path, seq: u64) {
        let path = view::bm25_path(dir, seq);
        let _ = fs::remove_dir_all(&path);
        let data = segment::BatchView::open(&view::segment_path(dir, seq)).unwrap();
        let old = TextAnalyzer::builder(SimpleTokenizer::default()).filter(LowerCaser).build();
        DiskIndex::build_unversioned(data.batch(), &path, old).unwrap();
        assert_eq!(bm25::analyzer_version(&path), None);
    }

    fn found(dir: &Path, q: &str) -> usize {
        let (c, _) = Collection::open("col_r", dir, Options::default()).unwrap();
        search(&c.snapshot(), &Query::new(q, Mode::Keyword)).hits.len()
    }

    #[test]
    fn an_old_segment_is_reindexed_with_todays_analyser_on_open() {
        let (_t, dir) = flushed("Le café du coin");
        let seq = only_segment(&dir);
        make_version_1(&dir, seq);
        let path = view::bm25_path(&dir, seq);
        // The old index holds "café"; today's query term is "cafe".
        let data = segment::BatchView::open(&view::segment_path(&dir, seq)).unwrap();
        let stale = Bm25::open(&path).unwrap();
        let terms = crate::text::terms("café");
        let stats = bm25::Stats::of(&[&stale], &terms).unwrap();
        assert!(stale.scored(&terms, &stats, 10, None::<fn(u64) -> bool>).unwrap().chunks.is_empty());
        drop((stale, data));
        assert_eq!(found(&dir, "café"), 1);
        assert_eq!(found(&dir, "cafe\u{0301}"), 1);
        assert_eq!(bm25::analyzer_version(&path), Some(bm25::ANALYZER_VERSION));
        assert!(!sibling(&path, ".new").exists() && !sibling(&path, ".old").exists());
    }

    /// Version 2 kept a run of CJK text between punctuation as one term: a segment
    /// written then is rebuilt on open, and a two-character query finds its page.
    #[test]
    fn a_version_2_segment_is_rebuilt_so_a_short_cjk_query_finds_it() {
        let (_t, dir) = flushed("東京都は日本の首都です。");
        let seq = only_segment(&dir);
        // Version 2's terms for this text are version 1's: the whole run, lowercased.
        make_version_1(&dir, seq);
        let path = view::bm25_path(&dir, seq);
        fs::write(path.join("ANALYZER"), "2\n").unwrap();
        assert_eq!(bm25::analyzer_version(&path), Some(2));
        let stale = Bm25::open(&path).unwrap();
        let terms = crate::text::terms("首都");
        let stats = bm25::Stats::of(&[&stale], &terms).unwrap();
        assert!(stale.scored(&terms, &stats, 10, None::<fn(u64) -> bool>).unwrap().chunks.is_empty());
        drop(stale);
        assert_eq!(found(&dir, "首都"), 1);
        assert_eq!(found(&dir, "東京"), 1);
        assert_eq!(bm25::analyzer_version(&path), Some(bm25::ANALYZER_VERSION));
    }

    #[test]
    fn a_rebuild_cut_short_leaves_a_usable_index() {
        let (_t, dir) = flushed("Le café du coin");
        let seq = only_segment(&dir);
        let path = view::bm25_path(&dir, seq);
        // Cut during the build: a partial new index beside the old one.
        make_version_1(&dir, seq);
        fs::create_dir_all(sibling(&path, ".new")).unwrap();
        fs::write(sibling(&path, ".new").join("meta.json"), b"{").unwrap();
        assert_eq!(found(&dir, "café"), 1);
        assert!(!sibling(&path, ".new").exists());
        // Cut between the two renames: the old one moved away, the new one complete.
        fs::rename(&path, sibling(&path, ".new")).unwrap();
        make_version_1(&dir, seq);
        fs::rename(&path, sibling(&path, ".old")).unwrap();
        assert_eq!(found(&dir, "café"), 1);
        assert_eq!(bm25::analyzer_version(&path), Some(bm25::ANALYZER_VERSION));
        assert!(!sibling(&path, ".new").exists() && !sibling(&path, ".old").exists());
    }
}
