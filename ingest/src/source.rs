//! What `quarry ingest` reads: the files under a directory (each one's path relative to the
//! directory, with `/` separators, is its source id) or the records of a JSONL / BEIR corpus
//! (`{"_id", "title", "text"}` a line; the `_id` is the source id). Scanned once up front for
//! the progress totals, then handed out one [`Job`] at a time, so a corpus is never held
//! whole in memory.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::IngestError;
use super::payload::{Field, EXTENSIONS};

/// Where the documents come from.
#[derive(Debug)]
pub enum Input {
    /// Every file under a directory, hidden ones (a name starting with `.`) left out.
    Files(PathBuf),
    /// A JSONL file of records.
    Corpus(PathBuf),
    /// Records already in memory (the quality harness's fixed subsets).
    Records(Vec<Record>),
}

/// One corpus record: BEIR's `_id`, `title` and `text`, and any `metadata` object it carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub source_id: String,
    /// `None` when absent or blank.
    pub title: Option<String>,
    pub text: String,
    pub metadata: Map<String, Value>,
}

impl Input {
    /// A `.jsonl` file is a corpus; a directory holding `corpus.jsonl` is a BEIR data set
    /// (its corpus), unless `files` says to send the directory's files; any other directory
    /// is files.
    pub fn detect(path: &Path, files: bool) -> Result<Input, IngestError> {
        let meta = fs::metadata(path).map_err(|source| IngestError::io("reading", path, source))?;
        if meta.is_file() {
            return Ok(Input::Corpus(path.to_owned()));
        }
        let beir = path.join("corpus.jsonl");
        Ok(if !files && beir.is_file() { Input::Corpus(beir) } else { Input::Files(path.to_owned()) })
    }

    pub fn describe(&self) -> String {
        match self {
            Input::Files(dir) => format!("the files under {}", dir.display()),
            Input::Corpus(path) => format!("the records of {}", path.display()),
            Input::Records(records) => format!("{} records", records.len()),
        }
    }

    /// Scans the input for its totals and returns the feed of its jobs.
    pub(super) fn open(self) -> Result<Feed, IngestError> {
        let (kind, docs, bytes) = match self {
            Input::Files(root) => {
                let mut found = Vec::new();
                walk(&root, &mut found)?;
                let (docs, bytes) = (found.len() as u64, found.iter().map(|(_, len)| len).sum());
                (Kind::Files { root, paths: found.into_iter() }, docs, bytes)
            }
            Input::Corpus(path) => {
                let docs = count_records(&path)?;
                let bytes = fs::metadata(&path).map_err(|source| IngestError::io("reading", &path, source))?.len();
                let file = File::open(&path).map_err(|source| IngestError::io("opening", &path, source))?;
                (Kind::Lines { path, reader: BufReader::new(file), line: 0 }, docs, bytes)
            }
            Input::Records(records) => {
                let (docs, bytes) = (records.len() as u64, records.iter().map(|r| r.text.len() as u64).sum());
                (Kind::Records(records.into_iter()), docs, bytes)
            }
        };
        Ok(Feed { kind, total_docs: docs, total_bytes: bytes, next: 0, seen: HashMap::new() })
    }
}

/// One document to handle, in input order.
pub(super) struct Job {
    pub index: usize,
    pub source_id: String,
    /// Its size in the input, for the progress bar.
    pub bytes: u64,
    pub work: Work,
}

pub(super) enum Work {
    File {
        path: PathBuf,
        field: Field,
    },
    Record(Record),
    /// A file of a format `quarry ingest` does not send: reported and passed over.
    Unsupported(String),
    /// Refused before sending: a record that does not parse, a repeated id.
    Invalid(String),
}

pub(super) struct Feed {
    kind: Kind,
    pub total_docs: u64,
    pub total_bytes: u64,
    next: usize,
    /// Source id → the job that first had it.
    seen: HashMap<String, usize>,
}

enum Kind {
    Files { root: PathBuf, paths: std::vec::IntoIter<(PathBuf, u64)> },
    Lines { path: PathBuf, reader: BufReader<File>, line: usize },
    Records(std::vec::IntoIter<Record>),
}

impl Feed {
    /// The next job; an error reading the corpus ends the run.
    pub fn next_job(&mut self) -> Option<Result<Job, IngestError>> {
        let (source_id, bytes, work) = match &mut self.kind {
            Kind::Files { root, paths } => {
                let (path, bytes) = paths.next()?;
                let (id, work) = file_job(root, path);
                (id, bytes, work)
            }
            Kind::Lines { path, reader, line } => match next_line(path, reader, line)? {
                Ok((text, number)) => {
                    let (id, work) = record_job(&text, number);
                    (id, text.len() as u64, work)
                }
                Err(e) => return Some(Err(e)),
            },
            Kind::Records(records) => {
                let record = records.next()?;
                (record.source_id.clone(), record.text.len() as u64, Work::Record(record))
            }
        };
        let index = self.next;
        self.next += 1;
        let work = match self.seen.get(&source_id) {
            Some(first) if !matches!(work, Work::Invalid(_)) => Work::Invalid(format!("the input repeats this id (first as document {})", first + 1)),
            _ => {
                self.seen.entry(source_id.clone()).or_insert(index);
                work
            }
        };
        Some(Ok(Job { index, source_id, bytes, work }))
    }
}

fn file_job(root: &Path, path: PathBuf) -> (String, Work) {
    let relative = path.strip_prefix(root).unwrap_or(&path);
    let id = relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
    if relative.to_str().is_none() {
        return (id, Work::Invalid("the path is not UTF-8, so it cannot be a stable id".into()));
    }
    let work = match Field::for_path(&path) {
        Some(field) => Work::File { path, field },
        None => Work::Unsupported(format!("not a format quarry ingest sends ({EXTENSIONS})")),
    };
    (id, work)
}

/// A corpus line as BEIR writes it; any other field is ignored.
#[derive(Deserialize)]
struct Line {
    #[serde(rename = "_id", alias = "id")]
    id: String,
    #[serde(default)]
    title: Option<String>,
    text: String,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

fn record_job(text: &str, number: usize) -> (String, Work) {
    match serde_json::from_str::<Line>(text) {
        Ok(line) => {
            let title = line.title.filter(|t| !t.trim().is_empty());
            let record = Record { source_id: line.id.clone(), title, text: line.text, metadata: line.metadata.unwrap_or_default() };
            (line.id, Work::Record(record))
        }
        Err(e) => (format!("line {number}"), Work::Invalid(format!("not a corpus record ({{\"_id\", \"title\", \"text\"}}): {e}"))),
    }
}

/// The next non-blank line and its number (from 1).
fn next_line(path: &Path, reader: &mut BufReader<File>, line: &mut usize) -> Option<Result<(String, usize), IngestError>> {
    loop {
        let mut text = String::new();
        match reader.read_line(&mut text) {
            Ok(0) => return None,
            Ok(_) => {
                *line += 1;
                if !text.trim().is_empty() {
                    return Some(Ok((text, *line)));
                }
            }
            Err(source) => return Some(Err(IngestError::io("reading", path, source))),
        }
    }
}

fn count_records(path: &Path) -> Result<u64, IngestError> {
    let file = File::open(path).map_err(|source| IngestError::io("opening", path, source))?;
    let mut reader = BufReader::new(file);
    let (mut count, mut line) = (0, Vec::new());
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => return Ok(count),
            Ok(_) => count += u64::from(!line.trim_ascii().is_empty()),
            Err(source) => return Err(IngestError::io("reading", path, source)),
        }
    }
}

/// Every file under `dir`, depth first in name order, with its length. Hidden entries are left
/// out; a symbolic link to a file is followed, one to a directory is not (no cycles).
fn walk(dir: &Path, found: &mut Vec<(PathBuf, u64)>) -> Result<(), IngestError> {
    let entries = fs::read_dir(dir).map_err(|source| IngestError::io("listing", dir, source))?;
    let mut entries: Vec<_> = entries.collect::<Result<_, _>>().map_err(|source| IngestError::io("listing", dir, source))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        let kind = entry.file_type().map_err(|source| IngestError::io("reading", &path, source))?;
        if kind.is_dir() {
            walk(&path, found)?;
        } else if let Ok(meta) = fs::metadata(&path) {
            if meta.is_file() {
                found.push((path, meta.len()));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs(input: Input) -> (Feed, Vec<Job>) {
        let mut feed = input.open().unwrap();
        let mut jobs = Vec::new();
        while let Some(job) = feed.next_job() {
            jobs.push(job.unwrap());
        }
        (feed, jobs)
    }

    #[test]
    fn a_directory_yields_relative_paths_in_order_without_hidden_files() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("b/c")).unwrap();
        fs::create_dir_all(dir.path().join(".git")).unwrap();
        for (name, text) in [("a.txt", "one"), ("b/c/d.md", "two"), ("b/scan.pdf", "%PDF"), (".hidden.txt", "x"), (".git/HEAD", "ref")] {
            fs::write(dir.path().join(name), text).unwrap();
        }
        let (feed, jobs) = jobs(Input::detect(dir.path(), false).unwrap());
        let ids: Vec<&str> = jobs.iter().map(|j| j.source_id.as_str()).collect();
        assert_eq!(ids, ["a.txt", "b/c/d.md", "b/scan.pdf"]);
        assert_eq!((feed.total_docs, feed.total_bytes), (3, 10));
        assert!(matches!(jobs[1].work, Work::File { field: Field::Text, .. }));
        assert!(matches!(&jobs[2].work, Work::Unsupported(why) if why.contains(".html")));
    }

    #[test]
    fn a_corpus_yields_records_and_flags_bad_lines_and_repeated_ids() {
        let dir = tempfile::tempdir().unwrap();
        let lines = [
            r#"{"_id": "d1", "title": "  ", "text": "alpha", "metadata": {"url": "u"}}"#,
            "",
            r#"{"_id": "d2", "title": "Beta", "text": "beta"}"#,
            r#"{"title": "no id", "text": "gamma"}"#,
            r#"{"_id": "d1", "text": "again"}"#,
        ];
        fs::write(dir.path().join("corpus.jsonl"), lines.join("\n")).unwrap();
        let (feed, jobs) = jobs(Input::detect(dir.path(), false).unwrap());
        assert_eq!(feed.total_docs, 4, "the blank line is not a record");
        let Work::Record(first) = &jobs[0].work else { panic!("a record") };
        assert_eq!((first.title.as_deref(), first.text.as_str(), first.metadata["url"].as_str()), (None, "alpha", Some("u")));
        assert!(matches!(&jobs[1].work, Work::Record(r) if r.title.as_deref() == Some("Beta")));
        assert_eq!(jobs[2].source_id, "line 4");
        assert!(matches!(&jobs[2].work, Work::Invalid(why) if why.contains("_id")));
        assert!(matches!(&jobs[3].work, Work::Invalid(why) if why.contains("repeats this id (first as document 1)")));
        // --files sends the directory as files instead.
        assert!(matches!(Input::detect(dir.path(), true).unwrap(), Input::Files(_)));
    }
}
