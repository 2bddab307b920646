//! Query expansion's effect on quality: the same collection evaluated with `expand`
//! false and true, per mode, as a table of nDCG@10 with the difference (issue 22's bar:
//! hybrid on SciFact may lose 0.005 at most).

use std::fmt::Write as _;

use super::report::ModeReport;

/// The most hybrid nDCG@10 may fall with expansion on.
pub const ALLOWED_LOSS: f64 = 0.005;

/// Markdown: per mode both runs measured, nDCG@10 and MRR@10 off and on, and the change.
pub fn comparison(off: &[ModeReport], on: &[ModeReport]) -> String {
    let mut out = String::from("\n#### Query expansion: `expand` false vs true\n\n");
    out.push_str("| mode | nDCG@10 expand false | nDCG@10 expand true | Δ nDCG@10 | MRR@10 false | MRR@10 true | within −0.005 |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---|\n");
    for a in off {
        let Some(b) = on.iter().find(|m| m.mode == a.mode) else { continue };
        let delta = b.ndcg_at_10 - a.ndcg_at_10;
        let _ = writeln!(
            out,
            "| {} | {:.4} | {:.4} | {:+.4} | {:.4} | {:.4} | {} |",
            a.mode,
            a.ndcg_at_10,
            b.ndcg_at_10,
            delta,
            a.mrr_at_10,
            b.mrr_at_10,
            if delta >= -ALLOWED_LOSS { "yes" } else { "no" }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quality::client::Mode;

    fn report(scores: &[(Mode, f64)]) -> Vec<ModeReport> {
        scores
            .iter()
            .map(|&(mode, ndcg)| ModeReport {
                mode,
                ndcg_at_10: ndcg,
                mrr_at_10: ndcg / 2.0,
                recall: 0.0,
                recall_k: 50,
                queries: 300,
                empty: 0,
                median_latency_ms: None,
            })
            .collect()
    }

    #[test]
    fn the_table_gives_each_modes_change_and_the_bar() {
        let off = report(&[(Mode::Keyword, 0.68), (Mode::Hybrid, 0.72)]);
        let on = report(&[(Mode::Keyword, 0.69), (Mode::Hybrid, 0.7140)]);
        let t = comparison(&off, &on);
        assert!(t.contains("| keyword | 0.6800 | 0.6900 | +0.0100 | 0.3400 | 0.3450 | yes |"), "{t}");
        assert!(t.contains("| hybrid | 0.7200 | 0.7140 | -0.0060 | 0.3600 | 0.3570 | no |"), "{t}");
    }
}
