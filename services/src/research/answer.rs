//! The answer: one call that writes it from the sources found (streamed as deltas
//! when the research streams), and its quotations checked against the pages they cite.

use std::time::Instant;

use quarry_index::verify::{Match, Page};

use super::types::model_error;
use super::{claims, ms, prompt, Event, QuoteOut, ResearchError, Run, Source};
use crate::llm::{ChatRequest, Delta, LlmError};

impl Run<'_, '_> {
    /// The answer as the model wrote it (markers not yet resolved).
    pub(super) async fn answer(&mut self, ctx: &prompt::Context<'_>) -> Result<String, ResearchError> {
        if self.sources.is_empty() {
            let text = "The collection holds no page that answers this question.";
            self.emit(Event::Delta(text));
            return Ok(text.into());
        }
        let listing = self.listing(self.sources.iter().enumerate().map(|(i, s)| (i as u32 + 1, s)));
        let req = prompt::answer(&self.model, ctx, &listing, self.r.config.max_tokens);
        let first = self.write(req.clone()).await?;
        if claims::has_words(&first) {
            return self.cite_better(req, first).await;
        }
        // Markers and no words (a small model's habit): asked once more, plainly.
        let again = self.call(prompt::again(req, &first)).await?.output.text.trim().to_owned();
        if !claims::has_words(&again) {
            return Err(ResearchError::NoAnswer);
        }
        self.emit(Event::Delta(&format!("\n\n{again}")));
        Ok(again)
    }

    /// An answer whose sentences mostly cite no source, or that points to a source
    /// without saying what it says, is asked again once with those sentences named; the
    /// second is kept only if it holds to its sources better and still says something.
    async fn cite_better(&mut self, req: ChatRequest, first: String) -> Result<String, ResearchError> {
        let citing = claims::Citing::of(&first);
        if !citing.wants_another_try() {
            return Ok(first);
        }
        let again = self.call(prompt::cite_again(req, &first, &citing.uncited, &citing.pointers)).await?.output.text.trim().to_owned();
        let better = claims::Citing::of(&again);
        if !claims::has_words(&again) || better.claims == 0 || better.faults() >= citing.faults() {
            self.warnings.push(format!(
                "The answer was asked again to cite its sources ({} of {} sentences cited none); the second try was no better, so the first is kept.",
                citing.uncited.len(),
                citing.claims
            ));
            return Ok(first);
        }
        self.warnings.push(format!(
            "The answer was asked again to cite its sources ({} of {} sentences cited none); this is the second try.",
            citing.uncited.len(),
            citing.claims
        ));
        self.emit(Event::Delta(&format!("\n\n{again}")));
        Ok(again)
    }

    /// The answer's call, streamed as deltas when the research streams.
    pub(super) async fn write(&mut self, req: ChatRequest) -> Result<String, ResearchError> {
        if self.events.is_none() {
            return Ok(self.call(req).await?.output.text.trim().to_owned());
        }
        let t = Instant::now();
        let mut stream = match self.llm.stream(self.account, req.clone()).await {
            Ok(s) => s,
            // A provider that does not stream answers whole.
            Err(LlmError::InvalidRequest { field, .. }) if field == "stream" => {
                self.timings.model_ms += ms(t);
                let text = self.call(req).await?.output.text.trim().to_owned();
                self.emit(Event::Delta(&text));
                return Ok(text);
            }
            Err(e) => {
                self.timings.model_ms += ms(t);
                return Err(model_error(e));
            }
        };
        let mut failed = None;
        while let Some(d) = stream.next().await {
            match d {
                Ok(Delta::Text(piece)) => self.emit(Event::Delta(&piece)),
                Ok(_) => {}
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        self.timings.model_ms += ms(t);
        if let Some(e) = failed {
            return Err(model_error(e));
        }
        let done = stream.completion();
        self.input_tokens += done.output.usage.input;
        self.cached_input_tokens += done.output.usage.cached;
        self.output_tokens += done.output.usage.output;
        Ok(done.output.text.trim().to_owned())
    }
}

/// Every quotation of the answer, checked against the page it cites.
pub(super) fn quotes(answer: &str, sources: &[Source]) -> Vec<QuoteOut> {
    claims::quotations(answer)
        .into_iter()
        .map(|q| {
            let Some(n) = q.source else {
                return QuoteOut { quote: q.quote, source: None, status: "uncited", offset: None };
            };
            let found = sources.get(n as usize - 1).and_then(|s| claims::locate_quote(&Page::new(&s.text), &q.quote));
            match found {
                Some(at) => QuoteOut { status: at.matched.as_str(), offset: Some((at.start, at.end)), quote: q.quote, source: Some(n) },
                None => QuoteOut { quote: q.quote, source: Some(n), status: "unverified", offset: None },
            }
        })
        .collect()
}

/// Whether a verified quotation's match counts as verified.
pub fn verified(status: &str) -> bool {
    status == Match::Exact.as_str() || status == Match::NormalizedExact.as_str()
}
