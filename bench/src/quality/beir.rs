//! BEIR-layout data sets: `corpus.jsonl`, `queries.jsonl` and `qrels/<split>.tsv`, loaded as they
//! are, plus the fixed subset the harness uses when a full ingest would take too long.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Judgements: query id → (corpus id → relevance). Relevance ≤ 0 means judged not relevant.
pub type Qrels = HashMap<String, HashMap<String, i32>>;

/// One corpus document; `metadata` and any other field in the file are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Doc {
    #[serde(rename = "_id")]
    pub id: String,
    #[serde(default)]
    pub title: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Query {
    #[serde(rename = "_id")]
    pub id: String,
    pub text: String,
}

/// A data set as the harness evaluates it: the queries are only those the split judges, in
/// `queries.jsonl` order (BEIR drops unjudged queries the same way).
#[derive(Debug, Clone)]
pub struct Dataset {
    /// The directory name: `scifact`, `nfcorpus-test-preproc`.
    pub name: String,
    pub split: String,
    pub corpus: Vec<Doc>,
    pub queries: Vec<Query>,
    pub qrels: Qrels,
}

#[derive(Debug, thiserror::Error)]
pub enum BeirError {
    #[error("{op} {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
    #[error("{path}:{line}: {reason}")]
    Parse { path: PathBuf, line: usize, reason: String },
}

impl Dataset {
    /// Reads `dir/corpus.jsonl`, `dir/queries.jsonl` and `dir/qrels/{split}.tsv`.
    pub fn load(dir: &Path, split: &str) -> Result<Dataset, BeirError> {
        let corpus = load_corpus(&dir.join("corpus.jsonl"))?;
        let queries = load_queries(&dir.join("queries.jsonl"))?;
        let qrels = load_qrels(&dir.join("qrels").join(format!("{split}.tsv")))?;
        let queries = queries.into_iter().filter(|q| qrels.contains_key(&q.id)).collect();
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| dir.display().to_string());
        Ok(Dataset { name, split: split.to_string(), corpus, queries, qrels })
    }

    /// This data set cut down by [`subset`].
    pub fn subset(&self, n_docs: usize) -> Dataset {
        let (corpus, queries, qrels) = subset(&self.corpus, &self.queries, &self.qrels, n_docs);
        Dataset { name: self.name.clone(), split: self.split.clone(), corpus, queries, qrels }
    }
}

pub fn load_corpus(path: &Path) -> Result<Vec<Doc>, BeirError> {
    read_jsonl(path)
}

pub fn load_queries(path: &Path) -> Result<Vec<Query>, BeirError> {
    read_jsonl(path)
}

/// Reads `query-id <TAB> corpus-id <TAB> score` lines; a first line starting `query-id` is the
/// header. A pair judged twice keeps the last score, as BEIR's loader does.
pub fn load_qrels(path: &Path) -> Result<Qrels, BeirError> {
    let mut qrels = Qrels::new();
    for (index, line) in lines(path)?.enumerate() {
        let line = line.map_err(|source| io_error("reading", path, source))?;
        if line.trim().is_empty() || (index == 0 && line.starts_with("query-id")) {
            continue;
        }
        let (query, doc, score) = parse_qrel(&line).map_err(|reason| BeirError::Parse { path: path.to_path_buf(), line: index + 1, reason })?;
        qrels.entry(query).or_default().insert(doc, score);
    }
    Ok(qrels)
}

fn parse_qrel(line: &str) -> Result<(String, String, i32), String> {
    let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
    let [query, doc, score] = fields[..] else {
        return Err(format!("expected 3 tab-separated fields, found {}", fields.len()));
    };
    let score = score.parse().map_err(|e| format!("score {score:?}: {e}"))?;
    Ok((query.to_string(), doc.to_string(), score))
}

/// A fixed, deterministic subset of `n_docs` documents: first the documents relevant (score > 0)
/// to some judged query, in file order, up to `n_docs`; then the non-relevant documents in file
/// order until there are `n_docs`. The corpus keeps file order. Only the queries whose relevant
/// documents are all in the subset remain, with their judgements.
pub fn subset(corpus: &[Doc], queries: &[Query], qrels: &Qrels, n_docs: usize) -> (Vec<Doc>, Vec<Query>, Qrels) {
    let relevant: HashSet<&str> = qrels.values().flat_map(|judged| judged.iter().filter(|(_, &s)| s > 0).map(|(d, _)| d.as_str())).collect();
    let is_relevant = |doc: &&Doc| relevant.contains(doc.id.as_str());
    let mut keep: HashSet<&str> = corpus.iter().filter(is_relevant).take(n_docs).map(|d| d.id.as_str()).collect();
    let fill = n_docs.saturating_sub(keep.len());
    keep.extend(corpus.iter().filter(|d| !is_relevant(d)).take(fill).map(|d| d.id.as_str()));
    let docs: Vec<Doc> = corpus.iter().filter(|d| keep.contains(d.id.as_str())).cloned().collect();
    let covered =
        |query: &Query| qrels.get(&query.id).is_some_and(|judged| judged.iter().all(|(doc, &score)| score <= 0 || keep.contains(doc.as_str())));
    let kept: Vec<Query> = queries.iter().filter(|q| covered(q)).cloned().collect();
    let kept_qrels = kept.iter().filter_map(|q| qrels.get(&q.id).map(|j| (q.id.clone(), j.clone()))).collect();
    (docs, kept, kept_qrels)
}

fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, BeirError> {
    let mut items = Vec::new();
    for (index, line) in lines(path)?.enumerate() {
        let line = line.map_err(|source| io_error("reading", path, source))?;
        if line.trim().is_empty() {
            continue;
        }
        let item = serde_json::from_str(&line).map_err(|e| BeirError::Parse { path: path.to_path_buf(), line: index + 1, reason: e.to_string() })?;
        items.push(item);
    }
    Ok(items)
}

fn lines(path: &Path) -> Result<std::io::Lines<BufReader<File>>, BeirError> {
    let file = File::open(path).map_err(|source| io_error("opening", path, source))?;
    Ok(BufReader::new(file).lines())
}

fn io_error(op: &'static str, path: &Path, source: std::io::Error) -> BeirError {
    BeirError::Io { op, path: path.to_path_buf(), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str) -> Doc {
        Doc { id: id.into(), title: String::new(), text: format!("text of {id}") }
    }

    fn query(id: &str) -> Query {
        Query { id: id.into(), text: format!("query {id}") }
    }

    fn qrels(rows: &[(&str, &str, i32)]) -> Qrels {
        let mut qrels = Qrels::new();
        for &(q, d, s) in rows {
            qrels.entry(q.into()).or_default().insert(d.into(), s);
        }
        qrels
    }

    fn ids<T>(items: &[T], id: impl Fn(&T) -> &str) -> Vec<String> {
        items.iter().map(|i| id(i).to_string()).collect()
    }

    #[test]
    fn subset_takes_relevant_first_then_fills_in_file_order() {
        let corpus: Vec<Doc> = ["a", "b", "c", "d", "e", "f"].map(doc).to_vec();
        let queries = vec![query("q1"), query("q2"), query("q3")];
        // q1 needs c and e; q2 needs f; q3 judges b not relevant only, and needs d.
        let judged = qrels(&[("q1", "c", 1), ("q1", "e", 2), ("q2", "f", 1), ("q3", "b", 0), ("q3", "d", 1)]);
        // Relevant in file order: c, d, e, f. Four docs: exactly those.
        let (docs, kept, kept_qrels) = subset(&corpus, &queries, &judged, 4);
        assert_eq!(ids(&docs, |d| &d.id), ["c", "d", "e", "f"]);
        assert_eq!(ids(&kept, |q| &q.id), ["q1", "q2", "q3"]);
        assert_eq!(kept_qrels.len(), 3);
        // Two docs: c and d; q1 loses e and q2 loses f, so only q3 stays (b judged 0 is fine).
        let (docs, kept, kept_qrels) = subset(&corpus, &queries, &judged, 2);
        assert_eq!(ids(&docs, |d| &d.id), ["c", "d"]);
        assert_eq!(ids(&kept, |q| &q.id), ["q3"]);
        assert_eq!(kept_qrels.keys().collect::<Vec<_>>(), ["q3"]);
        // Five docs: the four relevant plus the first non-relevant, a; corpus stays in file order.
        let (docs, _, _) = subset(&corpus, &queries, &judged, 5);
        assert_eq!(ids(&docs, |d| &d.id), ["a", "c", "d", "e", "f"]);
        // More than the corpus: everything.
        let (docs, kept, _) = subset(&corpus, &queries, &judged, 100);
        assert_eq!(docs, corpus);
        assert_eq!(kept.len(), 3);
    }

    #[test]
    fn subset_is_deterministic() {
        let corpus: Vec<Doc> = (0..50).map(|i| doc(&i.to_string())).collect();
        let queries: Vec<Query> = (0..10).map(|i| query(&format!("q{i}"))).collect();
        let rows: Vec<(String, String, i32)> =
            (0..10).flat_map(|i| [(format!("q{i}"), (i * 5).to_string(), 1), (format!("q{i}"), (i * 5 + 3).to_string(), 1)]).collect();
        let rows: Vec<(&str, &str, i32)> = rows.iter().map(|(q, d, s)| (q.as_str(), d.as_str(), *s)).collect();
        let judged = qrels(&rows);
        let first = subset(&corpus, &queries, &judged, 13);
        for _ in 0..5 {
            assert_eq!(subset(&corpus, &queries, &judged, 13), first);
        }
    }

    #[test]
    fn qrels_skip_the_header_and_reject_bad_lines() {
        let dir = std::env::temp_dir().join(format!("quarry-quality-beir-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.tsv");
        std::fs::write(&good, "query-id\tcorpus-id\tscore\n1\t10\t1\n1\t11\t2\n2\t10\t0\n").unwrap();
        let judged = load_qrels(&good).unwrap();
        assert_eq!(judged["1"]["11"], 2);
        assert_eq!(judged["2"]["10"], 0);
        let bad = dir.join("bad.tsv");
        std::fs::write(&bad, "query-id\tcorpus-id\tscore\n1\t10\tx\n").unwrap();
        let err = load_qrels(&bad).unwrap_err().to_string();
        assert!(err.contains("bad.tsv:2"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The SciFact subset vendored for tests (`tests/data/scifact-500`, cut by
    /// `tests/data/cut-subsets.py`) loads whole and is its own 500-document subset: every
    /// judged query's relevant documents are in it, so `subset(500)` keeps all of it.
    #[test]
    fn the_vendored_scifact_subset_is_its_own_subset() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/scifact-500");
        let data = Dataset::load(&dir, "test").unwrap();
        assert_eq!((data.corpus.len(), data.queries.len()), (500, 300));
        let small = data.subset(500);
        assert_eq!(small.corpus, data.corpus);
        assert_eq!(small.queries, data.queries);
        assert_eq!(small.qrels, data.qrels);
    }
}
