//! The judge: every sentence of the answer a claim, rated against its cited sources by
//! one judge call, with its evidence located by code on a cited page.

use quarry_index::verify::Page;

use super::claims::{self, Status};
use super::{prompt, ClaimOut, QuoteOut, Run, Source};
use crate::config::Judge;

impl Run<'_, '_> {
    /// Every sentence as a claim, judged against its cited sources. A cited claim no
    /// judge rated still gets the evidence code finds on its cited pages.
    pub(super) async fn claims(&mut self, ctx: &prompt::Context<'_>, answer: &str, sources: &[Source], quotes: &[QuoteOut]) -> Vec<ClaimOut> {
        let mut out = self.judged(ctx, answer, sources, quotes).await;
        for c in out.iter_mut().filter(|c| c.status == Status::Unchecked && c.evidence.is_none()) {
            evidence(c, Status::Unchecked, "", sources);
        }
        out
    }

    async fn judged(&mut self, ctx: &prompt::Context<'_>, answer: &str, sources: &[Source], quotes: &[QuoteOut]) -> Vec<ClaimOut> {
        let mut out: Vec<ClaimOut> = claims::sentences(answer)
            .into_iter()
            .filter(claims::is_claim)
            .map(|s| {
                let status = if s.sources.is_empty() { Status::Uncited } else { Status::Unchecked };
                ClaimOut { text: s.text, sources: s.sources, status, evidence: None, evidence_at: None, start: s.start, end: s.end }
            })
            .collect();
        let judged: Vec<usize> = (0..out.len()).filter(|&i| out[i].status == Status::Unchecked).collect();
        if judged.is_empty() || sources.is_empty() {
            return out;
        }
        let judge_model = match &self.r.config.judge {
            Judge::None => return out,
            Judge::Tier => self.model.clone(),
            Judge::Model(m) => m.clone(),
        };
        let mut cited: Vec<u32> = judged.iter().flat_map(|&i| out[i].sources.clone()).collect();
        cited.sort_unstable();
        cited.dedup();
        let listing = self.listing(cited.iter().map(|&n| (n, &sources[n as usize - 1])));
        let listed: Vec<(String, Vec<u32>)> = judged.iter().map(|&i| (out[i].text.clone(), out[i].sources.clone())).collect();
        let verdicts = match self.call(prompt::judge(&judge_model, ctx, &listing, &listed)).await {
            Ok(done) => prompt::verdicts(&done.output.text),
            Err(e) => {
                tracing::warn!(error = %e, "the research judge failed; claims left unchecked");
                self.warnings.push("The judge model failed, so the claims are unchecked.".into());
                return out;
            }
        };
        let Some(verdicts) = verdicts else {
            self.warnings.push("The judge's answer could not be read, so the claims are unchecked.".into());
            return out;
        };
        for (k, &i) in judged.iter().enumerate() {
            let Some(v) = verdicts.iter().find(|v| v.claim == k + 1) else { continue };
            let Some(status) = Status::parse(&v.verdict) else { continue };
            let claim = &mut out[i];
            evidence(claim, status, &v.evidence, sources);
            // A claim whose quotation is not on the page it cites is not supported as written.
            let false_quote = quotes.iter().any(|q| q.status == "unverified" && claim.text.contains(q.quote.as_str()));
            if false_quote && claim.status != Status::Unsupported {
                claim.status = Status::Unsupported;
            }
        }
        out
    }
}

/// Sets the claim's verdict and evidence: the judge's span located in a cited source,
/// else (for a claim said to be stated, or not rated) the cited sentence sharing most words; a
/// `supported` claim with no evidence on a page is `partial`.
fn evidence(claim: &mut ClaimOut, status: Status, given: &str, sources: &[Source]) {
    let cited: Vec<(usize, &str)> =
        claim.sources.iter().filter_map(|&n| sources.get(n as usize - 1).map(|s| (n as usize - 1, s.text.as_str()))).collect();
    let mut found = None;
    if given.chars().filter(|c| c.is_alphanumeric()).count() >= 3 {
        for &(i, text) in &cited {
            let page = Page::new(text);
            if let Some(at) = claims::locate_quote(&page, given) {
                found = Some((i, page.slice(&at).to_owned(), at.start, at.end));
                break;
            }
        }
    }
    if found.is_none() && matches!(status, Status::Supported | Status::Partial | Status::Unchecked) {
        if let Some((i, start, end)) = claims::overlap_evidence(&claim.text, &cited) {
            let text = &sources[i].text;
            let span = &text[claims::byte_of(text, start)..claims::byte_of(text, end)];
            found = Some((i, span.to_owned(), start, end));
        }
    }
    claim.status = match (status, &found) {
        (Status::Supported, None) => Status::Partial,
        (s, _) => s,
    };
    if let Some((i, text, start, end)) = found {
        claim.evidence = Some(text);
        claim.evidence_at = Some((i as u32 + 1, start, end));
    }
}
