//! [`Llm::rerank`]: a rerank call to a configured provider whose manifest declares a
//! `rerank` endpoint (Jina, Cohere, Voyage): the body and the answer's shape from the
//! manifest, the provider's credential and headers, the same transport, error
//! classes and retries as a chat call.

use bytes::Bytes;
use hyper::header::{HeaderValue, ACCEPT};
use hyper::Method;

use super::{sent, Llm};
use crate::llm::error::LlmError;
use crate::llm::manifest::Auth;
use crate::llm::transport::Call;

impl Llm {
    /// Scores `documents` against `query` with `provider`'s `model`: `(index, score)`
    /// for each document the provider ranked, as it ranked them.
    pub async fn rerank(&self, provider: &str, model: &str, query: &str, documents: &[&str]) -> Result<Vec<(usize, f64)>, LlmError> {
        let p = self.providers.get(provider).ok_or_else(|| LlmError::UnknownModel(format!("{provider}/{model}")))?;
        let spec = p.manifest.rerank.as_ref().ok_or_else(|| LlmError::InvalidRequest {
            field: "provider".into(),
            message: format!("the manifest `{}` has no rerank endpoint", p.manifest.id),
        })?;
        let bad = |what: &str| LlmError::InvalidRequest { field: "provider".into(), message: format!("{what} is not valid in a request") };
        let mut url = format!("{}{}", p.base_url.trim_end_matches('/'), spec.path);
        if let (Some(token), Auth::Query { param }) = (&p.token, &p.manifest.auth) {
            url = format!("{url}?{param}={}", token.expose());
        }
        let mut headers = p.headers.clone().map_err(bad)?;
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let body = spec.body(model, query, documents, documents.len());
        let call = Call {
            manifest: &p.manifest,
            retry: &p.retry,
            method: Method::POST,
            uri: url.parse().map_err(|_| bad("the base URL"))?,
            headers,
            body: Bytes::from(serde_json::to_vec(&body).expect("bodies serialize")),
            timeout: p.timeout,
        };
        let mut up = sent(p, self.transport.send(call).await)?;
        let mut answer = Vec::new();
        while let Some(piece) = up.body.next().await {
            answer.extend_from_slice(&piece.map_err(|message| LlmError::Stream { provider: p.id.clone(), message })?);
        }
        spec.results(&answer, documents.len()).map_err(|message| LlmError::Stream { provider: p.id.clone(), message })
    }
}
