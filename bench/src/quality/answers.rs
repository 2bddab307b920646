//! An evaluate answer read back into BEIR terms: per question, the ranked list as corpus ids (a
//! page of a document that was not asked about reads as an unjudged id) and the latency.
//!
//! The harness does not take the server's means. They are over its `n`, the questions it could
//! resolve, and BEIR's are over every judged query (a query with nothing relevant in the index
//! scores 0 and still counts); its nDCG's ideal holds only the gold the harness sent, and
//! pytrec_eval's holds every positive judgement; and they are rounded to 4 decimals. Rescaling
//! the means by n / judged would fix the first only. So [`super::run`] recomputes every question
//! with [`super::metrics`] from the ranks in `perQuestion.hits`, which gives exactly the figures
//! the old per-search path gave and bm25s's peer script gives.
//!
//! What would make those figures silently wrong is refused instead:
//! - a note on a relevant item (`questions[i].relevant[j] …: why`) or on a question left out
//!   of `n`: the server could not resolve a document id the harness got back when adding it,
//!   so its id map is wrong;
//! - a question missing from `perQuestion` or out of order (a skipped variant, say);
//! - a hit on an item the harness did not name, or at a rank whose citation differs;
//! - a per-question nDCG@k that is not the one the harness computes from the same hits with the
//!   gains it sent: the server judged other gold than the harness meant.
//!
//! Every other note (search warnings) is handed back to be printed under the table.

use super::client::{EvaluateResponse, Mode, PerQuestion};
use super::metrics::ndcg_at_k;
use super::questions::Question;

/// The server rounds a per-question nDCG to 4 decimals.
const NDCG_TOLERANCE: f64 = 0.5e-4 + 1e-9;

/// One question's result in one variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Corpus ids, best first, one per page returned (at most k).
    pub ranked: Vec<String>,
    pub latency_ms: f64,
}

/// A batch's answers, in question order, and the notes that do not concern the gold.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    pub answers: Vec<Answer>,
    pub notes: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error(
        "the server could not resolve relevant documents by the ids it gave them when the harness \
         added them, so the harness's server id ↔ corpus id map is wrong; its notes: {}",
        .notes.join(" | ")
    )]
    Unresolved { notes: Vec<String> },
    #[error(
        "asked {asked} questions and got n = {n} with {entries} per-question entries; notes: {}",
        .notes.join(" | ")
    )]
    Count { asked: usize, n: usize, entries: usize, notes: Vec<String> },
    #[error("asked k = {asked}, answered k = {answered}")]
    K { asked: usize, answered: usize },
    #[error(
        "per-question entry {index} is {found_variant} {found:?}, expected {expected_variant} \
         {expected:?} (query {query_id})"
    )]
    Order { index: usize, query_id: String, expected: String, expected_variant: &'static str, found: String, found_variant: String },
    #[error("query {query_id}: hit on {item:?} at rank {rank} ({citation}): {reason}")]
    Hit { query_id: String, item: String, rank: usize, citation: String, reason: &'static str },
    #[error(
        "query {query_id}: the server's nDCG@{k} is {server}, the harness's from the same hits and \
         the gains it sent is {harness:.6}: the server judged other gold than the harness meant"
    )]
    Disagree { query_id: String, k: usize, server: f64, harness: f64 },
}

/// Checks `response` against the `batch` it answers (asked in `mode` at `k`) and reads it.
pub fn read(batch: &[Question], mode: Mode, k: usize, response: EvaluateResponse) -> Result<Read, AnswerError> {
    let (gold_notes, notes): (Vec<String>, Vec<String>) = response.notes.into_iter().partition(|n| n.starts_with("questions["));
    if !gold_notes.is_empty() {
        let notes = gold_notes.iter().map(|n| name_query(n, batch)).collect();
        return Err(AnswerError::Unresolved { notes });
    }
    let entries = response.per_question.len();
    if response.n != batch.len() || entries != batch.len() {
        return Err(AnswerError::Count { asked: batch.len(), n: response.n, entries, notes });
    }
    if response.k != k {
        return Err(AnswerError::K { asked: k, answered: response.k });
    }
    let answers = batch
        .iter()
        .zip(&response.per_question)
        .enumerate()
        .map(|(index, (question, entry))| {
            check_order(index, question, mode, entry)?;
            answer(question, entry, k)
        })
        .collect::<Result<_, _>>()?;
    Ok(Read { answers, notes })
}

fn check_order(index: usize, question: &Question, mode: Mode, entry: &PerQuestion) -> Result<(), AnswerError> {
    if entry.query == question.text && entry.variant == mode.as_str() {
        return Ok(());
    }
    Err(AnswerError::Order {
        index,
        query_id: question.query_id.clone(),
        expected: question.text.clone(),
        expected_variant: mode.as_str(),
        found: entry.query.clone(),
        found_variant: entry.variant.clone(),
    })
}

/// The ranked list with each hit's corpus id at its rank, checked against the server's nDCG.
fn answer(question: &Question, entry: &PerQuestion, k: usize) -> Result<Answer, AnswerError> {
    let mut ranked: Vec<String> = entry.ranked.iter().map(|citation| format!("(page {citation}, not asked about)")).collect();
    for hit in &entry.hits {
        let bad = |reason| AnswerError::Hit {
            query_id: question.query_id.clone(),
            item: hit.item.clone(),
            rank: hit.rank,
            citation: hit.citation.clone(),
            reason,
        };
        let relevant = question.relevant.iter().find(|r| r.server_id == hit.item).ok_or_else(|| bad("not a document the harness named"))?;
        if hit.rank == 0 || entry.ranked.get(hit.rank - 1) != Some(&hit.citation) {
            return Err(bad("the ranked list has another citation there"));
        }
        if ranked.contains(&relevant.corpus_id) {
            return Err(bad("the document is found twice"));
        }
        ranked[hit.rank - 1] = relevant.corpus_id.clone();
    }
    let sent = question.relevant.iter().map(|r| (r.corpus_id.clone(), r.gain)).collect();
    let harness = ndcg_at_k(&ranked, &sent, k);
    if (harness - entry.ndcg).abs() > NDCG_TOLERANCE {
        return Err(AnswerError::Disagree { query_id: question.query_id.clone(), k, server: entry.ndcg, harness });
    }
    Ok(Answer { ranked, latency_ms: entry.latency_ms })
}

/// `questions[3].relevant[0] (doc_7): …` → `query 42: questions[3].relevant[0] (doc_7): …`.
fn name_query(note: &str, batch: &[Question]) -> String {
    let index = note.strip_prefix("questions[").and_then(|rest| rest.split(']').next()).and_then(|i| i.parse::<usize>().ok());
    match index.and_then(|i| batch.get(i)) {
        Some(q) => format!("query {}: {note}", q.query_id),
        None => note.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quality::client::EvalHit;
    use crate::quality::metrics::{mrr_at_k, recall_at_k};
    use crate::quality::questions::Relevant;
    use std::collections::HashMap;

    fn question(relevant: &[(&str, &str, i32)]) -> Question {
        Question {
            query_id: "q7".into(),
            text: "what".into(),
            relevant: relevant.iter().map(|&(corpus, server, gain)| Relevant { corpus_id: corpus.into(), server_id: server.into(), gain }).collect(),
        }
    }

    fn citation(rank: usize) -> String {
        format!("AL-{rank:08X}")
    }

    /// An entry of `len` results with the hits at their ranks, cut at `k` as the server cuts.
    fn entry(len: usize, hits: &[(&str, usize)], ndcg: f64, k: usize) -> PerQuestion {
        PerQuestion {
            query: "what".into(),
            variant: "hybrid".into(),
            ndcg,
            latency_ms: 4.0,
            ranked: (1..=len.min(k)).map(citation).collect(),
            hits: hits
                .iter()
                .filter(|&&(_, rank)| rank <= k)
                .map(|&(item, rank)| EvalHit { item: item.into(), rank, citation: citation(rank) })
                .collect(),
        }
    }

    fn response(entries: Vec<PerQuestion>, notes: &[&str], k: usize) -> EvaluateResponse {
        EvaluateResponse { n: entries.len(), k, per_question: entries, notes: notes.iter().map(|n| n.to_string()).collect() }
    }

    fn judged(pairs: &[(&str, i32)]) -> HashMap<String, i32> {
        pairs.iter().map(|&(d, r)| (d.to_string(), r)).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    // Relevant c1 (gain 2, server s1, at rank 3), c2 (gain 1, s2, at rank 12) and c3 (gain 1,
    // s3, not returned), in a list of 30 pages.
    const RELEVANT: &[(&str, &str, i32)] = &[("c1", "s1", 2), ("c2", "s2", 1), ("c3", "s3", 1)];
    const HITS: &[(&str, usize)] = &[("s1", 3), ("s2", 12)];
    // nDCG@50 over the gold sent: DCG = 2/log2(4) + 1/log2(13) = 1 + 0.27024 = 1.27024;
    // IDCG = 2 + 1/log2(3) + 1/log2(4) = 2 + 0.63093 + 0.5 = 3.13093; nDCG = 0.40571.
    const NDCG_AT_50: f64 = 0.4057;
    // nDCG@10: DCG = 1; IDCG the same 3.13093; nDCG = 0.31939.
    const NDCG_AT_10: f64 = 0.3194;

    #[test]
    fn hits_land_at_their_ranks_as_corpus_ids() {
        let q = question(RELEVANT);
        let r = response(vec![entry(30, HITS, NDCG_AT_50, 50)], &["Search warning: w"], 50);
        let read = read(&[q], Mode::Hybrid, 50, r).unwrap();
        assert_eq!(read.notes, ["Search warning: w"]);
        let ranked = &read.answers[0].ranked;
        assert_eq!(ranked.len(), 30);
        assert_eq!((ranked[2].as_str(), ranked[11].as_str()), ("c1", "c2"));
        assert_eq!(ranked[0], "(page AL-00000001, not asked about)");
        assert_eq!(read.answers[0].latency_ms, 4.0);
    }

    /// The @10 figures the harness reads off one k = 50 call are the ones a k = 10 call gives:
    /// the first ten of the list are the same ten, and the metrics cut at 10.
    #[test]
    fn the_at_10_figures_of_a_k_50_answer_are_those_of_a_k_10_answer() {
        let q = question(RELEVANT);
        let judged = judged(&[("c1", 2), ("c2", 1), ("c3", 1), ("c4", 0)]);
        let at = |k, ndcg| {
            let r = response(vec![entry(30, HITS, ndcg, k)], &[], k);
            read(std::slice::from_ref(&q), Mode::Hybrid, k, r).unwrap().answers[0].ranked.clone()
        };
        let (deep, shallow) = (at(50, NDCG_AT_50), at(10, NDCG_AT_10));
        assert_eq!(shallow.len(), 10);
        assert_eq!(deep[..10], shallow[..]);
        let ndcg10 = ndcg_at_k(&deep, &judged, 10);
        assert_eq!(ndcg10, ndcg_at_k(&shallow, &judged, 10));
        assert!(close(ndcg10, 0.31939), "{ndcg10}");
        // MRR@10: first relevant at rank 3 → 1/3, in both.
        assert_eq!(mrr_at_k(&deep, &judged, 10), 1.0 / 3.0);
        assert_eq!(mrr_at_k(&shallow, &judged, 10), 1.0 / 3.0);
        // Recall needs the deep list: 2 of 3 at 50, 1 of 3 at 10.
        assert!(close(recall_at_k(&deep, &judged, 50), 2.0 / 3.0));
        assert!(close(recall_at_k(&shallow, &judged, 50), 1.0 / 3.0));
    }

    #[test]
    fn a_note_on_a_relevant_item_is_a_wrong_id_map() {
        let q = question(RELEVANT);
        let note = "questions[0].relevant[2] (s3): no document has this id or title.";
        let r = response(vec![entry(30, HITS, NDCG_AT_50, 50)], &[note], 50);
        let err = read(&[q], Mode::Hybrid, 50, r).unwrap_err();
        assert!(matches!(err, AnswerError::Unresolved { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("id map is wrong"), "{text}");
        assert!(text.contains(&format!("query q7: {note}")), "{text}");
    }

    #[test]
    fn a_question_left_out_or_a_variant_skipped_is_refused() {
        let q = question(RELEVANT);
        let skipped = "Variant hybrid skipped: this server runs without an embedder.";
        let r = response(Vec::new(), &[skipped], 50);
        let err = read(std::slice::from_ref(&q), Mode::Hybrid, 50, r).unwrap_err();
        assert!(err.to_string().contains(skipped), "{err}");
        let mut other = entry(30, HITS, NDCG_AT_50, 50);
        other.variant = "keyword".into();
        let err = read(&[q], Mode::Hybrid, 50, response(vec![other], &[], 50)).unwrap_err();
        assert!(matches!(err, AnswerError::Order { index: 0, .. }), "{err}");
    }

    #[test]
    fn a_hit_the_harness_did_not_ask_for_or_off_its_rank_is_refused() {
        let q = question(RELEVANT);
        let stranger = entry(30, &[("s9", 3)], 0.0, 50);
        let err = read(std::slice::from_ref(&q), Mode::Hybrid, 50, response(vec![stranger], &[], 50));
        assert!(matches!(err, Err(AnswerError::Hit { rank: 3, .. })), "{err:?}");
        let mut moved = entry(30, HITS, NDCG_AT_50, 50);
        moved.hits[0].rank = 4;
        let err = read(&[q], Mode::Hybrid, 50, response(vec![moved], &[], 50));
        assert!(matches!(err, Err(AnswerError::Hit { rank: 4, .. })), "{err:?}");
    }

    #[test]
    fn a_server_ndcg_off_the_gains_sent_is_refused() {
        // The same hits scored with gain 1 for c1 (the gains mis-mapped): DCG = 0.5 + 0.27024,
        // IDCG = 1 + 0.63093 + 0.5 → 0.36146, not 0.40571.
        let q = question(RELEVANT);
        let r = response(vec![entry(30, HITS, 0.3614, 50)], &[], 50);
        let err = read(&[q], Mode::Hybrid, 50, r).unwrap_err();
        assert!(matches!(err, AnswerError::Disagree { k: 50, .. }), "{err}");
    }
}
