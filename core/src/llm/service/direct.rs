//! [`Direct`]: calls through a provider made at call time ([`AdHoc`]: a manifest, a
//! base URL, a credential) rather than one `[llm]` configures. `/api/v1` AI providers
//! are records a client creates and edits while the server runs; each call builds its
//! provider from the record as it stands, so a new or changed record is used at once,
//! without a restart and without registering anything process-wide. The request
//! mapping, transport, error classes, retries (capped by `[llm]`) and token meters are
//! the configured providers' own. What an `AdHoc` provider reaches is a tenant's
//! choice, so both of `Direct`'s transports are [`Trust::Tenant`]: every connection is
//! judged by the egress policy, after resolution, and kept apart from the operator's.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{HeaderValue, ACCEPT};
use hyper::Method;
use serde_json::Value;

use super::{complete_on, sent, stream_on, ChatStream, Completion, Provider};
use crate::llm::cloud::google::{read_token, KeyError, ServiceAccount, TokenCache};
use crate::llm::cloud::sigv4::{AwsKey, AwsScope};
use crate::llm::config::LlmConfig;
use crate::llm::error::LlmError;
use crate::llm::manifest::{Auth, Manifest, PayloadFormat};
use crate::llm::request::ChatRequest;
use crate::llm::secret::Secret;
use crate::llm::transport::{Call, Transport};
use crate::llm::usage::TokenMeters;
use crate::net::egress::{Policy, Trust};

/// A provider for the calls at hand: never registered, dropped after them.
pub struct AdHoc(Provider);

/// A model a provider says it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedModel {
    pub id: String,
    pub display_name: Option<String>,
}

/// The outbound path for [`AdHoc`] providers, there whether or not `[llm]` configures
/// any: `http://` upstreams on the calling shard, `https://` through an outbound
/// thread started on the first such call.
pub struct Direct {
    config: LlmConfig,
    /// The tenants' egress policy both transports connect under.
    trust: Trust,
    native: Transport,
    remote: OnceLock<Result<Transport, String>>,
    /// Tokens by account, as [`crate::llm::Llm::tokens`].
    pub tokens: Arc<TokenMeters>,
    /// Google access tokens by service-account key ([`Direct::google_token`]).
    google_tokens: TokenCache,
}

impl AdHoc {
    /// `id` names it in errors and logs (an `aip_…` id); `base_url` `None` is the
    /// manifest's own; `timeout` `None` the manifest's.
    pub fn new(
        c: &LlmConfig,
        id: &str,
        manifest: Arc<Manifest>,
        base_url: Option<String>,
        token: Option<Secret>,
        timeout: Option<Duration>,
    ) -> AdHoc {
        AdHoc(Provider::new(c, id, manifest, base_url, token, Vec::new(), timeout))
    }

    pub fn base_url(&self) -> &str {
        &self.0.base_url
    }

    /// Its calls carrying `token` as its manifest's credential (an access token had
    /// after it was made: [`Direct::google_token`]).
    pub fn with_token(mut self, token: Secret) -> AdHoc {
        self.0.token = Some(token);
        self.0.headers = super::headers(&self.0);
        self.0.uris = super::fixed_uris(&self.0);
        self
    }

    /// Every call signed with AWS SigV4 by `key`, for `scope` (a Bedrock provider).
    pub fn signed(mut self, key: AwsKey, scope: AwsScope) -> AdHoc {
        self.0.sigv4 = Some(Box::new((key, scope)));
        self
    }
}

impl Direct {
    /// Starts nothing: the `https` thread waits for its first call. Every call goes
    /// where `egress` lets a tenant go.
    pub fn new(c: &LlmConfig, egress: Arc<Policy>) -> Direct {
        let trust = Trust::Tenant(egress);
        let native = Transport::start(&c.tls_roots, c.connect_timeout, c.read_timeout, false, trust.clone())
            .expect("a native-only transport starts no thread");
        Direct { config: c.clone(), trust, native, remote: OnceLock::new(), tokens: Arc::default(), google_tokens: TokenCache::default() }
    }

    /// The `[llm]` settings providers are built with ([`AdHoc::new`]).
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    fn transport(&self, p: &Provider) -> Result<&Transport, LlmError> {
        self.transport_to(&p.base_url, &p.id)
    }

    /// The transport for calls to `url` (`id` names the provider in errors).
    fn transport_to(&self, url: &str, id: &str) -> Result<&Transport, LlmError> {
        if url.starts_with("http://") {
            return Ok(&self.native);
        }
        let c = &self.config;
        let remote = self
            .remote
            .get_or_init(|| Transport::start(&c.tls_roots, c.connect_timeout, c.read_timeout, true, self.trust.clone()).map_err(|e| e.to_string()));
        remote.as_ref().map_err(|message| LlmError::Unreachable { provider: id.to_owned(), message: message.clone(), attempts: 0 })
    }

    /// Drops `key`'s cached access token (the provider refused it).
    pub fn forget_google_token(&self, key: &ServiceAccount) {
        self.google_tokens.forget(key);
    }

    /// An access token for `key` (Vertex AI's bearer credential): the cached one while
    /// it lasts, else one exchanged at the key's `token_uri` (the JWT-bearer grant),
    /// through the same egress policy as every provider call. `p` is the provider it
    /// is for: its id names it in errors, its manifest classifies a refusal.
    pub async fn google_token(&self, p: &AdHoc, key: &ServiceAccount) -> Result<Secret, LlmError> {
        if let Some(token) = self.google_tokens.get(key) {
            return Ok(token);
        }
        let p = &p.0;
        let refused = |e: KeyError| LlmError::InvalidRequest { field: "secret_id".into(), message: e.to_string() };
        key.check().map_err(refused)?;
        let body = key.token_request(std::time::SystemTime::now()).map_err(refused)?;
        let mut headers = hyper::HeaderMap::new();
        headers.insert(hyper::header::CONTENT_TYPE, HeaderValue::from_static("application/x-www-form-urlencoded"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let call = Call {
            manifest: &p.manifest,
            retry: &p.retry,
            method: Method::POST,
            uri: key.token_uri().parse().map_err(|_| refused(KeyError::TokenUri))?,
            headers,
            body: Bytes::from(body),
            timeout: p.timeout,
        };
        let mut up = sent(p, self.transport_to(key.token_uri(), &p.id)?.send(call).await).map_err(|e| match e {
            LlmError::Provider { provider, mut error, attempts } => {
                error.message = format!("the service-account key's token exchange failed: {}", error.message);
                LlmError::Provider { provider, error, attempts }
            }
            e => e,
        })?;
        let mut answer = Vec::new();
        while let Some(piece) = up.body.next().await {
            answer.extend_from_slice(&piece.map_err(|message| LlmError::Stream { provider: p.id.clone(), message })?);
        }
        let (token, lasts) = read_token(&answer)
            .ok_or_else(|| LlmError::Stream { provider: p.id.clone(), message: "the token endpoint's answer holds no access_token".into() })?;
        self.google_tokens.put(key, token.clone(), lasts);
        Ok(token)
    }

    /// One generation, whole, from `p`'s `req.model`. `account` is charged the tokens.
    pub async fn complete(&self, p: &AdHoc, account: &str, req: ChatRequest) -> Result<Completion, LlmError> {
        let model = req.model.clone();
        complete_on(self.transport(&p.0)?, &self.tokens, &p.0, model, account, req).await
    }

    /// One generation, as it streams.
    pub async fn stream(&self, p: &AdHoc, account: &str, req: ChatRequest) -> Result<ChatStream, LlmError> {
        let model = req.model.clone();
        stream_on(self.transport(&p.0)?, &self.tokens, &p.0, model, account, req).await
    }

    /// The models `p` says it serves (its manifest's `list_models` endpoint). A
    /// manifest without one is `InvalidRequest`; an answer that is no model list, a
    /// `Stream` error.
    pub async fn models(&self, p: &AdHoc) -> Result<Vec<ListedModel>, LlmError> {
        let p = &p.0;
        let path = p.manifest.models_path.as_deref().ok_or_else(|| LlmError::InvalidRequest {
            field: "provider".into(),
            message: format!("the manifest `{}` has no model listing", p.manifest.id),
        })?;
        let bad = |what: &str| LlmError::InvalidRequest { field: "base_url".into(), message: format!("{what} is not valid in a request") };
        let mut url = format!("{}{path}", p.base_url.trim_end_matches('/'));
        if let (Some(token), Auth::Query { param }) = (&p.token, &p.manifest.auth) {
            url = format!("{url}?{param}={}", token.expose());
        }
        let mut headers = p.headers.clone().map_err(bad)?;
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        headers.remove(hyper::header::CONTENT_TYPE);
        let uri: hyper::Uri = url.parse().map_err(|_| bad("the base URL"))?;
        if let Some(signing) = &p.sigv4 {
            let (key, scope) = &**signing;
            crate::llm::cloud::sigv4::sign(key, scope, &Method::GET, &uri, &mut headers, b"", std::time::SystemTime::now()).map_err(bad)?;
        }
        let call = Call { manifest: &p.manifest, retry: &p.retry, method: Method::GET, uri, headers, body: Bytes::new(), timeout: p.timeout };
        let mut up = sent(p, self.transport(p)?.send(call).await)?;
        let mut answer = Vec::new();
        while let Some(piece) = up.body.next().await {
            answer.extend_from_slice(&piece.map_err(|message| LlmError::Stream { provider: p.id.clone(), message })?);
        }
        listed(p.manifest.format, &answer)
            .ok_or_else(|| LlmError::Stream { provider: p.id.clone(), message: "the answer is not a model list".into() })
    }
}

/// A model list in the wire shape of `format`: OpenAI's and Anthropic's
/// `{"data":[{"id", "display_name"?}]}`, Gemini's `{"models":[{"name":"models/…","displayName"}]}`
/// (Vertex's `{"publisherModels":[{"name":"publishers/google/models/…"}]}`), Bedrock's
/// `{"modelSummaries":[{"modelId","modelName"}]}`.
fn listed(format: PayloadFormat, body: &[u8]) -> Option<Vec<ListedModel>> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let (items, id_key, name_key) = match format {
        PayloadFormat::Gemini => (v.get("models").or_else(|| v.get("publisherModels"))?.as_array()?, "name", "displayName"),
        PayloadFormat::OpenAi | PayloadFormat::Anthropic => (v.get("data")?.as_array()?, "id", "display_name"),
        PayloadFormat::Converse => (v.get("modelSummaries")?.as_array()?, "modelId", "modelName"),
    };
    items
        .iter()
        .map(|m| {
            let id = m.get(id_key)?.as_str()?;
            let id = match format {
                PayloadFormat::Gemini => id.rsplit_once("models/").map_or(id, |(_, m)| m),
                _ => id.strip_prefix("models/").unwrap_or(id),
            }
            .to_owned();
            Some(ListedModel { id, display_name: m.get(name_key).and_then(Value::as_str).map(str::to_owned) })
        })
        .collect()
}

#[cfg(test)]
mod tests;
