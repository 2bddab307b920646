//! What one evaluation measured, and its Markdown: a table per data set with the published
//! references beside our numbers.

use std::fmt::Write as _;

use super::client::Mode;
use super::reference::references;
use super::run::IngestStats;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerInfo {
    /// The evaluated collection's `embedder` (else the server's default).
    pub embedder: Option<String>,
    /// `plan` of `GET /v1/account` for the evaluation key.
    pub plan: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ModeReport {
    pub mode: Mode,
    pub ndcg_at_10: f64,
    pub mrr_at_10: f64,
    /// Recall at `recall_k` (the search `k`; the API allows 50 at most, so no recall@100).
    pub recall: f64,
    pub recall_k: usize,
    /// Judged queries averaged over.
    pub queries: usize,
    /// Queries asked that the server returned nothing for.
    pub empty: usize,
    /// Median of the server's per-question `latencyMs` (its own time for the search).
    pub median_latency_ms: Option<f64>,
}

/// A peer system's scores on the same data, computed with the same metric definitions
/// (`bench/quality/bm25s_peer.py` writes them as one JSON object).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Peer {
    pub system: String,
    #[serde(rename = "ndcg@10")]
    pub ndcg_at_10: f64,
    #[serde(rename = "recall@50")]
    pub recall_at_50: f64,
    #[serde(rename = "mrr@10")]
    pub mrr_at_10: f64,
    pub queries: usize,
}

#[derive(Debug, Clone)]
pub struct Report {
    pub dataset: String,
    pub split: String,
    /// Documents indexed and judged queries, the queries every mean is over.
    pub docs: usize,
    pub queries: usize,
    /// Judged queries with no positively judged document in the collection: not asked, each
    /// scores 0 in every mean.
    pub unasked: usize,
    /// `Some(n)` when the run used [`super::beir::subset`] of n documents.
    pub subset: Option<usize>,
    pub ingest: IngestStats,
    pub modes: Vec<ModeReport>,
    /// Peer systems run on the same data in the same run (bm25s), printed under ours.
    pub peers: Vec<Peer>,
    pub server: ServerInfo,
    /// `429 rate_limited` answers waited out over the whole run.
    pub rate_limited: u64,
    /// The server's evaluate notes that do not concern the gold, prefixed by mode.
    pub notes: Vec<String>,
}

impl Report {
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "### {} ({} split)\n", self.dataset, self.split);
        let _ = writeln!(out, "{}\n", self.scope_line());
        let _ = writeln!(out, "{}\n", self.server_line());
        let _ = writeln!(out, "{}\n", self.ingest_line());
        out.push_str("| mode | nDCG@10 | recall@k | MRR@10 | published nDCG@10 (full corpus) | queries | empty | median latency ms |\n");
        out.push_str("|---|---:|---:|---:|---|---:|---:|---:|\n");
        for mode in &self.modes {
            out.push_str(&self.row(mode));
        }
        for p in &self.peers {
            let _ = writeln!(
                out,
                "| peer, same run: {} | {:.4} | @50 {:.4} | {:.4} | — | {} | — | — |",
                p.system, p.ndcg_at_10, p.recall_at_50, p.mrr_at_10, p.queries
            );
        }
        if let (Some(peer), Some(keyword)) = (self.peers.first(), self.modes.iter().find(|m| m.mode == Mode::Keyword)) {
            if peer.ndcg_at_10 > 0.0 {
                let _ = writeln!(
                    out,
                    "\nkeyword nDCG@10 / {} = {:.3}",
                    peer.system.split(' ').next().unwrap_or("peer"),
                    keyword.ndcg_at_10 / peer.ndcg_at_10
                );
            }
        }
        if self.unasked > 0 {
            let _ = writeln!(
                out,
                "\n{} of the {} judged queries have no positively judged document in the \
                 collection: they were not asked and score 0 in every mean, as in BEIR.",
                self.unasked, self.queries
            );
        }
        if !self.notes.is_empty() {
            out.push_str("\nServer notes (`POST /v1/collections/{id}/evaluate`):\n\n");
            for note in &self.notes {
                let _ = writeln!(out, "- {note}");
            }
        }
        out
    }

    fn scope_line(&self) -> String {
        match self.subset {
            None => format!("Whole corpus: {} documents, {} judged queries.", self.docs, self.queries),
            Some(n) => format!(
                "Fixed subset of {n} documents (those relevant to a query first, then the \
                 others, in file order): {} documents, {} judged queries whose relevant \
                 documents are all in it. The references are on the whole corpus: compare \
                 with care.",
                self.docs, self.queries
            ),
        }
    }

    fn server_line(&self) -> String {
        let embedder = self.server.embedder.as_deref().unwrap_or("unknown");
        let plan = self.server.plan.as_deref().unwrap_or("unknown");
        format!(
            "Embedder (the collection's): `{embedder}`. The evaluation account was on \
             the `{plan}` plan."
        )
    }

    fn ingest_line(&self) -> String {
        let i = &self.ingest;
        format!(
            "Ingest: {} documents ({} pages, {} chunks, {} chars) in {:.1} s = {:.1} docs/s \
             at concurrency {}; {} `429 rate_limited` answers waited out over the run.",
            i.docs,
            i.pages,
            i.chunks,
            i.chars,
            i.elapsed.as_secs_f64(),
            i.docs_per_sec(),
            i.concurrency,
            self.rate_limited
        )
    }

    fn row(&self, m: &ModeReport) -> String {
        let refs: Vec<String> = references(&self.dataset, m.mode).iter().map(|r| format!("{} {:.4}", r.system, r.ndcg_at_10)).collect();
        let refs = if refs.is_empty() { "—".to_string() } else { refs.join(" · ") };
        let ms = m.median_latency_ms.map_or("—".to_string(), |ms| format!("{ms:.1}"));
        format!(
            "| {} | {:.4} | @{} {:.4} | {:.4} | {refs} | {} | {} | {ms} |\n",
            m.mode, m.ndcg_at_10, m.recall_k, m.recall, m.mrr_at_10, m.queries, m.empty
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn markdown_has_a_row_per_mode_with_references() {
        let report = Report {
            dataset: "scifact".into(),
            split: "test".into(),
            docs: 5183,
            queries: 300,
            unasked: 2,
            subset: None,
            ingest: IngestStats {
                docs: 5183,
                pages: 5183,
                chunks: 9000,
                chars: 7_000_000,
                elapsed: Duration::from_secs(100),
                concurrency: 4,
                rate_limited: 0,
            },
            modes: vec![ModeReport {
                mode: Mode::Keyword,
                ndcg_at_10: 0.67891,
                mrr_at_10: 0.6,
                recall: 0.9,
                recall_k: 50,
                queries: 300,
                empty: 0,
                median_latency_ms: Some(3.25),
            }],
            peers: vec![Peer { system: "bm25s 0.3.16 (k1 1.2)".into(), ndcg_at_10: 0.6791, recall_at_50: 0.8869, mrr_at_10: 0.6431, queries: 300 }],
            server: ServerInfo { embedder: Some("multilingual-e5-small".into()), plan: Some("library".into()) },
            rate_limited: 0,
            notes: vec!["keyword: Search warning: w".into()],
        };
        let md = report.markdown();
        assert!(md.contains("| keyword | 0.6789 | @50 0.9000 | 0.6000 | BM25 Anserini 0.6789 · bm25s 0.6791"), "{md}");
        assert!(md.contains("| peer, same run: bm25s 0.3.16 (k1 1.2) | 0.6791 | @50 0.8869 | 0.6431 |"), "{md}");
        assert!(md.contains("keyword nDCG@10 / bm25s = 1.000"), "{md}");
        assert!(md.contains("51.8 docs/s"), "{md}");
        assert!(md.contains("`library` plan"), "{md}");
        assert!(md.contains("`multilingual-e5-small`"), "{md}");
        assert!(md.contains("| 300 | 0 | 3.2 |"), "{md}");
        assert!(md.contains("2 of the 300 judged queries"), "{md}");
        assert!(md.contains("evaluate`):\n\n- keyword: Search warning: w\n"), "{md}");
    }
}
