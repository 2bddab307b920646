//! Token usage, normalised from the three usage shapes providers send (OpenAI's
//! `prompt_tokens`…, Anthropic's `input_tokens` + cache fields, Gemini's
//! `usageMetadata`), and the per-account token meters the gateway adds to.
//!
//! `input` counts every prompt token, cached or not (Anthropic reports cache reads
//! and writes apart from `input_tokens`, so they are added in); `output` counts every
//! generated token, reasoning included (Gemini reports thoughts apart).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use serde::Deserialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cached: u64,
    pub cache_write: u64,
    pub reasoning: u64,
}

#[derive(Debug, Default, Deserialize)]
struct Wire {
    // OpenAI
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptDetails>,
    completion_tokens_details: Option<CompletionDetails>,
    // Anthropic
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    // Gemini
    #[serde(rename = "promptTokenCount")]
    prompt_token_count: Option<u64>,
    #[serde(rename = "candidatesTokenCount")]
    candidates_token_count: Option<u64>,
    #[serde(rename = "cachedContentTokenCount")]
    cached_content_token_count: Option<u64>,
    #[serde(rename = "thoughtsTokenCount")]
    thoughts_token_count: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct CompletionDetails {
    reasoning_tokens: Option<u64>,
}

/// Usage as one report said it; `None` where the report was silent, so later
/// reports in a stream can fill in or correct what earlier ones said.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageReport {
    pub input: Option<u64>,
    pub output: Option<u64>,
    pub cached: Option<u64>,
    pub cache_write: Option<u64>,
    pub reasoning: Option<u64>,
}

impl UsageReport {
    /// Reads any of the three shapes; `None` when it is none of them.
    pub fn parse(v: &serde_json::Value) -> Option<UsageReport> {
        let w = Wire::deserialize(v).ok()?;
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        let r = if w.input_tokens.is_some() || w.output_tokens.is_some() {
            let cached = w.cache_read_input_tokens;
            let write = w.cache_creation_input_tokens;
            UsageReport {
                input: w.input_tokens.map(|i| i + cached.unwrap_or(0) + write.unwrap_or(0)),
                output: w.output_tokens,
                cached,
                cache_write: write,
                reasoning: None,
            }
        } else if w.prompt_token_count.is_some() || w.candidates_token_count.is_some() {
            UsageReport {
                input: w.prompt_token_count,
                output: add(w.candidates_token_count, w.thoughts_token_count),
                cached: w.cached_content_token_count,
                cache_write: None,
                reasoning: w.thoughts_token_count,
            }
        } else if w.prompt_tokens.is_some() || w.completion_tokens.is_some() {
            UsageReport {
                input: w.prompt_tokens,
                output: w.completion_tokens,
                cached: w.prompt_tokens_details.and_then(|d| d.cached_tokens),
                cache_write: None,
                reasoning: w.completion_tokens_details.and_then(|d| d.reasoning_tokens),
            }
        } else {
            return None;
        };
        Some(r)
    }
}

impl Usage {
    /// Takes what `r` says over what was known.
    pub fn merge(&mut self, r: UsageReport) {
        self.input = r.input.unwrap_or(self.input);
        self.output = r.output.unwrap_or(self.output);
        self.cached = r.cached.unwrap_or(self.cached);
        self.cache_write = r.cache_write.unwrap_or(self.cache_write);
        self.reasoning = r.reasoning.unwrap_or(self.reasoning);
    }
}

/// Tokens per account since start-up, counted by the gateway (input, output).
/// Kept in memory: the records store has no token meter yet.
#[derive(Default)]
pub struct TokenMeters {
    accounts: RwLock<HashMap<String, Arc<[AtomicU64; 2]>>>,
}

impl TokenMeters {
    pub fn add(&self, account: &str, usage: &Usage) {
        let found = self.accounts.read().unwrap_or_else(|p| p.into_inner()).get(account).cloned();
        let counters = found.unwrap_or_else(|| {
            let mut map = self.accounts.write().unwrap_or_else(|p| p.into_inner());
            map.entry(account.to_owned()).or_default().clone()
        });
        counters[0].fetch_add(usage.input, Ordering::Relaxed);
        counters[1].fetch_add(usage.output, Ordering::Relaxed);
    }

    /// (input, output) tokens the account has used.
    pub fn get(&self, account: &str) -> (u64, u64) {
        let map = self.accounts.read().unwrap_or_else(|p| p.into_inner());
        map.get(account).map_or((0, 0), |c| (c[0].load(Ordering::Relaxed), c[1].load(Ordering::Relaxed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn three_shapes() {
        let mut u = Usage::default();
        u.merge(
            UsageReport::parse(&json!({"prompt_tokens": 16, "completion_tokens": 363,
            "prompt_tokens_details": {"cached_tokens": 4}, "completion_tokens_details": {"reasoning_tokens": 7}}))
            .unwrap(),
        );
        assert_eq!(u, Usage { input: 16, output: 363, cached: 4, cache_write: 0, reasoning: 7 });
        let mut u = Usage::default();
        u.merge(
            UsageReport::parse(&json!({"input_tokens": 12, "cache_read_input_tokens": 3, "cache_creation_input_tokens": 5, "output_tokens": 1}))
                .unwrap(),
        );
        u.merge(UsageReport::parse(&json!({"output_tokens": 29})).unwrap());
        assert_eq!(u, Usage { input: 20, output: 29, cached: 3, cache_write: 5, reasoning: 0 });
        let mut u = Usage::default();
        u.merge(UsageReport::parse(&json!({"promptTokenCount": 29, "candidatesTokenCount": 15, "thoughtsTokenCount": 45})).unwrap());
        assert_eq!(u, Usage { input: 29, output: 60, cached: 0, cache_write: 0, reasoning: 45 });
        assert!(UsageReport::parse(&json!({"x": 1})).is_none());
    }
}
