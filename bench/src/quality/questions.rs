//! The gold an evaluate call is given. Each judged query becomes a question whose relevant
//! items are its positively judged corpus documents, named by the ids the server gave them when
//! the harness added them, each with its judged relevance as the gain: linear gain, as BEIR's
//! nDCG (pytrec_eval's `ndcg_cut`) reads the qrels.
//!
//! A judged query with no positively judged document in the collection (every judgement ≤ 0, or
//! its relevant documents were not indexed) is not asked: the endpoint would leave it out of its
//! `n` with a note. It is not dropped either: the means in [`super::run`] are over every judged
//! query, and it scores 0 there, as pytrec_eval scores it.

use std::collections::HashMap;

use super::beir::Dataset;
use super::client::{EvalQuestion, EvaluateRequest, Mode, RelevantDocument};
use super::run::QualityRun;

/// One judged query, as the harness asks it.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub query_id: String,
    pub text: String,
    /// Its positively judged documents that were indexed, by corpus id.
    pub relevant: Vec<Relevant>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relevant {
    pub corpus_id: String,
    pub server_id: String,
    /// The qrels relevance, > 0.
    pub gain: i32,
}

/// The questions of `data`'s judged queries that have a positively judged document in `run`'s
/// collection, in query order.
pub fn questions(data: &Dataset, run: &QualityRun) -> Vec<Question> {
    let server_ids: HashMap<&str, &str> = run.doc_ids.iter().map(|(server, corpus)| (corpus.as_str(), server.as_str())).collect();
    data.queries
        .iter()
        .filter_map(|query| {
            let judged = data.qrels.get(&query.id)?;
            let relevant = relevant(judged, &server_ids);
            (!relevant.is_empty()).then(|| Question { query_id: query.id.clone(), text: query.text.clone(), relevant })
        })
        .collect()
}

/// The positive judgements whose documents the server holds, by corpus id so that a request
/// does not depend on hash order.
fn relevant(judged: &HashMap<String, i32>, server_ids: &HashMap<&str, &str>) -> Vec<Relevant> {
    let mut relevant: Vec<Relevant> = judged
        .iter()
        .filter(|(_, &gain)| gain > 0)
        .filter_map(|(doc, &gain)| {
            server_ids.get(doc.as_str()).map(|server| Relevant { corpus_id: doc.clone(), server_id: server.to_string(), gain })
        })
        .collect();
    relevant.sort_by(|a, b| a.corpus_id.cmp(&b.corpus_id));
    relevant
}

/// One evaluate call: `batch` in one variant at `k`.
pub fn request(batch: &[Question], mode: Mode, k: usize, expand: bool) -> EvaluateRequest<'_> {
    let questions = batch
        .iter()
        .map(|q| EvalQuestion {
            query: &q.text,
            relevant: q.relevant.iter().map(|r| RelevantDocument { document: &r.server_id }).collect(),
            gains: q.relevant.iter().map(|r| f64::from(r.gain)).collect(),
        })
        .collect();
    EvaluateRequest { questions, k, variants: vec![mode], expand }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quality::beir::{Qrels, Query};
    use crate::quality::run::IngestStats;

    fn run(pairs: &[(&str, &str)]) -> QualityRun {
        QualityRun {
            collection: "col".into(),
            doc_ids: pairs.iter().map(|&(server, corpus)| (server.to_string(), corpus.to_string())).collect(),
            multi_page: Vec::new(),
            ingest: IngestStats::default(),
        }
    }

    fn data(judged: &[(&str, &[(&str, i32)])]) -> Dataset {
        let mut qrels = Qrels::new();
        for &(q, rows) in judged {
            let rows = rows.iter().map(|&(d, r)| (d.to_string(), r)).collect();
            qrels.insert(q.to_string(), rows);
        }
        Dataset {
            name: "t".into(),
            split: "test".into(),
            corpus: Vec::new(),
            queries: judged.iter().map(|&(q, _)| Query { id: q.into(), text: format!("text of {q}") }).collect(),
            qrels,
        }
    }

    #[test]
    fn relevant_documents_go_by_server_id_with_their_relevance_as_gain() {
        let run = run(&[("s1", "c1"), ("s2", "c2"), ("s3", "c3")]);
        let data = data(&[
            ("q1", &[("c3", 2), ("c1", 1), ("c2", 0)]),
            // Nothing positive: not asked.
            ("q2", &[("c1", 0), ("c2", -1)]),
            // Its only relevant document is not in the collection: not asked.
            ("q3", &[("c9", 1)]),
            // The indexed one of its two relevant documents is asked.
            ("q4", &[("c9", 3), ("c2", 1)]),
        ]);
        let asked = questions(&data, &run);
        let ids: Vec<&str> = asked.iter().map(|q| q.query_id.as_str()).collect();
        assert_eq!(ids, ["q1", "q4"]);
        let request = request(&asked, Mode::Semantic, 50, false);
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            serde_json::json!({
                "questions": [
                    {"query": "text of q1", "relevant": [{"document": "s1"}, {"document": "s3"}],
                     "gains": [1.0, 2.0]},
                    {"query": "text of q4", "relevant": [{"document": "s2"}], "gains": [1.0]},
                ],
                "k": 50, "variants": ["semantic"], "expand": false
            })
        );
    }
}
