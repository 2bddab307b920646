//! [`Llm`]: routing a model name to a configured provider and making the call.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use hyper::{HeaderMap, Method};

use super::cloud::sigv4::{AwsKey, AwsScope};
use super::config::LlmConfig;
use super::error::{LlmError, ProviderError};
use super::manifest::{Auth, Manifest};
use super::request::ChatRequest;
use super::retry::RetryPolicy;
use super::secret::Secret;
use super::stream::assemble::{Delta, Output};
use super::stream::Decoder;
use super::termination::{Reason, Termination};
use super::transport::{Body, Call, Failure, SendError, Transport, TransportError, Upstream};
use super::usage::TokenMeters;
use super::wire;

mod direct;
mod rerank;

pub use direct::{AdHoc, Direct, ListedModel};

/// A configured provider instance.
struct Provider {
    id: String,
    manifest: Arc<Manifest>,
    base_url: String,
    token: Option<Secret>,
    models: Vec<String>,
    timeout: Duration,
    retry: RetryPolicy,
    /// Every call's headers but `accept`, built once: content type, credential (unless
    /// it goes in the query), the manifest's extra headers; or what is not valid in them.
    headers: Result<HeaderMap, &'static str>,
    /// The chat URI, whole and streamed, when it names no model and carries no
    /// credential (OpenAI's and Anthropic's paths): parsed once, not on every call.
    uris: Option<[hyper::Uri; 2]>,
    /// Every call signed with AWS SigV4 (a Bedrock provider's IAM credential).
    sigv4: Option<Box<(AwsKey, AwsScope)>>,
}

impl Provider {
    /// An instance of `manifest` at `base_url` (else the manifest's), its retries
    /// capped by `[llm]`'s `max_retries` and `max_retry_delay`.
    fn new(
        c: &LlmConfig,
        id: &str,
        manifest: Arc<Manifest>,
        base_url: Option<String>,
        token: Option<Secret>,
        models: Vec<String>,
        timeout: Option<Duration>,
    ) -> Provider {
        let mut retry = manifest.retry.clone();
        if let Some(n) = c.max_retries {
            retry.max_retries = retry.max_retries.min(n);
        }
        if let Some(d) = c.max_retry_delay {
            retry.min_delay = retry.min_delay.min(d);
            retry.max_delay = retry.max_delay.min(d);
        }
        let mut provider = Provider {
            id: id.to_owned(),
            base_url: base_url.unwrap_or_else(|| manifest.base_url.clone()),
            timeout: timeout.unwrap_or(manifest.timeout),
            manifest,
            token,
            models,
            retry,
            headers: Ok(HeaderMap::new()),
            uris: None,
            sigv4: None,
        };
        provider.headers = headers(&provider);
        provider.uris = fixed_uris(&provider);
        provider
    }
}

/// A model `GET /v1/models` lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    pub id: String,
    pub provider: String,
}

/// A whole generation.
#[derive(Debug, Clone)]
pub struct Completion {
    pub provider: String,
    pub output: Output,
    pub termination: Termination,
    /// The provider's rate-limit headers, by standard name.
    pub rate_limits: Vec<(String, String)>,
}

pub struct Llm {
    providers: BTreeMap<String, Provider>,
    aliases: BTreeMap<String, String>,
    transport: Transport,
    pub tokens: Arc<TokenMeters>,
}

impl Llm {
    /// Sets up the outbound paths (the `https` thread only if a provider needs it);
    /// `None` when no provider is configured.
    pub fn start(c: &LlmConfig) -> Result<Option<Llm>, TransportError> {
        if c.providers.is_empty() {
            return Ok(None);
        }
        let providers: BTreeMap<String, Provider> = c
            .providers
            .iter()
            .map(|p| (p.id.clone(), Provider::new(c, &p.id, p.manifest.clone(), p.base_url.clone(), p.token.clone(), p.models.clone(), p.timeout)))
            .collect();
        let remote = providers.values().any(|p| !p.base_url.starts_with("http://"));
        // The configuration's providers are the operator's own: not judged by the egress policy.
        let transport = Transport::start(&c.tls_roots, c.connect_timeout, c.read_timeout, remote, crate::net::egress::Trust::Operator)?;
        Ok(Some(Llm { providers, aliases: c.aliases.clone(), transport, tokens: Arc::default() }))
    }

    /// The configured models: every provider's listed models as `provider/model`,
    /// then the aliases.
    pub fn models(&self) -> Vec<ModelInfo> {
        let listed = self.providers.values().flat_map(|p| p.models.iter().map(|m| ModelInfo { id: format!("{}/{m}", p.id), provider: p.id.clone() }));
        let aliases =
            self.aliases.iter().map(|(a, target)| ModelInfo { id: a.clone(), provider: target.split('/').next().unwrap_or_default().to_owned() });
        listed.chain(aliases).collect()
    }

    /// `alias`, `provider/model`, or a bare model one provider lists.
    fn route(&self, model: &str) -> Result<(&Provider, String), LlmError> {
        let target = self.aliases.get(model).map(String::as_str).unwrap_or(model);
        if let Some((p, m)) = target.split_once('/') {
            if let Some(provider) = self.providers.get(p) {
                return Ok((provider, m.to_owned()));
            }
        }
        self.providers
            .values()
            .find(|p| p.models.iter().any(|m| m == target))
            .map(|p| (p, target.to_owned()))
            .ok_or_else(|| LlmError::UnknownModel(model.to_owned()))
    }

    /// One generation, whole. `account` is charged the tokens.
    pub async fn complete(&self, account: &str, req: ChatRequest) -> Result<Completion, LlmError> {
        let (p, model) = self.route(&req.model)?;
        complete_on(&self.transport, &self.tokens, p, model, account, req).await
    }

    /// One generation, as it streams.
    pub async fn stream(&self, account: &str, req: ChatRequest) -> Result<ChatStream, LlmError> {
        let (p, model) = self.route(&req.model)?;
        stream_on(&self.transport, &self.tokens, p, model, account, req).await
    }
}

/// One generation, whole, from provider `p` through `transport`.
async fn complete_on(
    transport: &Transport,
    tokens: &Arc<TokenMeters>,
    p: &Provider,
    model: String,
    account: &str,
    req: ChatRequest,
) -> Result<Completion, LlmError> {
    let tools = tool_names(&req);
    let mut up = send(transport, p, model, req, false).await?;
    let mut body = Vec::new();
    while let Some(piece) = up.body.next().await {
        body.extend_from_slice(&piece.map_err(|message| LlmError::Stream { provider: p.id.clone(), message })?);
    }
    let mut output = wire::decode(&p.manifest, &body)
        .map_err(|e| LlmError::Stream { provider: p.id.clone(), message: format!("the answer could not be read: {e}") })?;
    super::text_tools::apply_whole(&p.manifest.text_tools, &tools, &mut output);
    tokens.add(account, &output.usage);
    Ok(Completion {
        provider: p.id.clone(),
        termination: termination(&p.manifest, &output),
        rate_limits: rate_limits(&p.manifest, &up.headers),
        output,
    })
}

/// One generation, as it streams, from provider `p` through `transport`.
async fn stream_on(
    transport: &Transport,
    tokens: &Arc<TokenMeters>,
    p: &Provider,
    model: String,
    account: &str,
    req: ChatRequest,
) -> Result<ChatStream, LlmError> {
    if p.manifest.format == super::manifest::PayloadFormat::Converse {
        // Converse streams as AWS's binary event stream: the whole answer, replayed.
        let c = complete_on(transport, tokens, p, model, account, req).await?;
        return Ok(ChatStream::whole(p.manifest.clone(), c, account, tokens.clone()));
    }
    if !p.manifest.capabilities.streaming {
        return Err(super::request::invalid("stream", &format!("{} does not stream", p.id)));
    }
    let text_tools = super::text_tools::Holder::new(&p.manifest.text_tools, tool_names(&req));
    let up = send(transport, p, model, req, true).await?;
    Ok(ChatStream {
        text_tools,
        provider: p.id.clone(),
        manifest: p.manifest.clone(),
        rate_limits: rate_limits(&p.manifest, &up.headers),
        decoder: Decoder::new(p.manifest.clone()),
        body: up.body,
        queue: VecDeque::new(),
        failed: None,
        ended: false,
        account: account.to_owned(),
        meters: tokens.clone(),
    })
}

async fn send(transport: &Transport, p: &Provider, model: String, mut req: ChatRequest, stream: bool) -> Result<Upstream, LlmError> {
    req.model = model;
    let body = wire::encode(&p.manifest, &req, stream)?;
    let (uri, mut headers) = head(p, &req.model, stream)?;
    let body = Bytes::from(serde_json::to_vec(&body).expect("bodies serialize"));
    if let Some(signing) = &p.sigv4 {
        let (key, scope) = &**signing;
        super::cloud::sigv4::sign(key, scope, &Method::POST, &uri, &mut headers, &body, std::time::SystemTime::now())
            .map_err(|what| LlmError::InvalidRequest { field: "secret_id".into(), message: format!("{what} is not valid in a request") })?;
    }
    let call = Call { manifest: &p.manifest, retry: &p.retry, method: Method::POST, uri, headers, body, timeout: p.timeout };
    sent(p, transport.send(call).await)
}

fn head(p: &Provider, model: &str, stream: bool) -> Result<(hyper::Uri, HeaderMap), LlmError> {
    let bad = |what: &str| LlmError::InvalidRequest { field: "model".into(), message: format!("{what} is not valid in a request") };
    let mut h = p.headers.clone().map_err(bad)?;
    h.entry(ACCEPT).or_insert(HeaderValue::from_static(if stream { "text/event-stream" } else { "application/json" }));
    if let Some(uris) = &p.uris {
        return Ok((uris[usize::from(stream)].clone(), h));
    }
    let mut url = p.manifest.chat_url(&p.base_url, model, stream);
    if let (Some(token), Auth::Query { param }) = (&p.token, &p.manifest.auth) {
        let sep = if url.contains('?') { '&' } else { '?' };
        url = format!("{url}{sep}{param}={}", token.expose());
    }
    let uri = url.parse().map_err(|_| bad("the model name"))?;
    Ok((uri, h))
}

/// A call's outcome in this layer's terms.
fn sent(p: &Provider, r: Result<Upstream, SendError>) -> Result<Upstream, LlmError> {
    match r {
        Ok(up) => Ok(up),
        Err(SendError::Down) => Err(LlmError::TransportDown),
        Err(SendError::Failed(Failure { refused: true, .. })) => Err(LlmError::Refused { provider: p.id.clone() }),
        Err(SendError::Failed(Failure { error, unreachable: true, attempts, .. })) => {
            Err(LlmError::Unreachable { provider: p.id.clone(), message: error.message, attempts })
        }
        Err(SendError::Failed(Failure { error, attempts, .. })) => Err(LlmError::Provider { provider: p.id.clone(), error, attempts }),
    }
}

/// The tools a call may make (none when `tool_choice` is `none`).
fn tool_names(req: &ChatRequest) -> Vec<String> {
    match req.tool_choice {
        Some(super::request::ToolChoice::None) => Vec::new(),
        _ => req.tools.iter().map(|t| t.name.clone()).collect(),
    }
}

/// A provider's chat URIs when they do not depend on the call (see [`Provider::uris`]).
fn fixed_uris(p: &Provider) -> Option<[hyper::Uri; 2]> {
    let query_auth = p.token.is_some() && matches!(p.manifest.auth, Auth::Query { .. });
    if p.manifest.chat_path.contains("{model}") || query_auth {
        return None;
    }
    let uri = |stream| p.manifest.chat_url(&p.base_url, "", stream).parse().ok();
    Some([uri(false)?, uri(true)?])
}

/// A provider's fixed headers (see [`Provider::headers`]).
fn headers(p: &Provider) -> Result<HeaderMap, &'static str> {
    let mut h = HeaderMap::new();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(token) = &p.token {
        match &p.manifest.auth {
            Auth::Bearer => {
                let mut v = HeaderValue::try_from(format!("Bearer {}", token.expose())).map_err(|_| "the credential")?;
                v.set_sensitive(true);
                h.insert(AUTHORIZATION, v);
            }
            Auth::Header { name, prefix } => {
                let value = prefix.as_ref().map_or_else(|| token.expose().to_owned(), |pre| format!("{pre} {}", token.expose()));
                let name = HeaderName::try_from(name.as_str()).map_err(|_| "the auth header")?;
                let mut v = HeaderValue::try_from(value).map_err(|_| "the credential")?;
                v.set_sensitive(true);
                h.insert(name, v);
            }
            Auth::Query { .. } => {}
        }
    }
    for (name, value) in &p.manifest.extra_headers {
        if let (Ok(n), Ok(v)) = (HeaderName::try_from(name.as_str()), HeaderValue::try_from(value.as_str())) {
            h.insert(n, v);
        }
    }
    Ok(h)
}

fn rate_limits(m: &Manifest, headers: &HeaderMap) -> Vec<(String, String)> {
    m.rate_headers.iter().filter_map(|(name, header)| Some((name.clone(), headers.get(header)?.to_str().ok()?.to_owned()))).collect()
}

/// The manifest maps the raw reason; a generation that ends in tool calls ends as
/// `tool_use` whatever the provider said (Gemini says STOP).
fn termination(m: &Manifest, out: &Output) -> Termination {
    let raw = out.raw_reason.clone().unwrap_or_default();
    let mapped = m.termination.get(&raw).copied().or_else(|| Reason::parse(&raw)).unwrap_or(Reason::Other);
    let reason = match mapped {
        Reason::EndTurn | Reason::Other if !out.tool_calls.is_empty() => Reason::ToolUse,
        r => r,
    };
    Termination { reason, raw }
}

/// A generation as it streams: [`ChatStream::next`] until `None`, then
/// [`ChatStream::completion`]. Dropping it cancels the upstream call.
pub struct ChatStream {
    pub provider: String,
    manifest: Arc<Manifest>,
    pub rate_limits: Vec<(String, String)>,
    decoder: Decoder,
    body: Body,
    queue: VecDeque<Delta>,
    failed: Option<LlmError>,
    ended: bool,
    account: String,
    meters: Arc<TokenMeters>,
    /// Text held while it may be a tool call written as text (the manifest's
    /// `tool_calls.text_forms`, when the request binds tools).
    text_tools: Option<super::text_tools::Holder>,
}

impl ChatStream {
    /// A whole generation as a stream: its deltas at once, its tokens already charged.
    fn whole(manifest: Arc<Manifest>, c: Completion, account: &str, meters: Arc<TokenMeters>) -> ChatStream {
        let mut decoder = Decoder::new(manifest.clone());
        let queue = decoder.assembler.replay(&c.output).into();
        decoder.complete = true;
        let (_, rx) = tokio::sync::mpsc::channel(1);
        ChatStream {
            provider: c.provider,
            manifest,
            rate_limits: c.rate_limits,
            decoder,
            body: Body::Remote(rx),
            queue,
            failed: None,
            ended: true,
            account: account.to_owned(),
            meters,
            text_tools: None,
        }
    }

    fn filter(&mut self, ds: Vec<Delta>) -> Vec<Delta> {
        match &mut self.text_tools {
            Some(h) => h.filter(ds),
            None => ds,
        }
    }

    pub async fn next(&mut self) -> Option<Result<Delta, LlmError>> {
        loop {
            if let Some(d) = self.queue.pop_front() {
                return Some(Ok(d));
            }
            if let Some(e) = self.decoder.assembler.error.take() {
                self.end();
                return Some(Err(LlmError::Provider { provider: self.provider.clone(), error: e, attempts: 1 }));
            }
            if let Some(e) = self.failed.take() {
                return Some(Err(e));
            }
            if self.ended {
                return None;
            }
            match self.body.next().await {
                Some(Ok(bytes)) => match self.decoder.push(&bytes) {
                    Ok(ds) => {
                        let ds = self.filter(ds);
                        self.queue.extend(ds);
                    }
                    Err(e) => self.fail(e.to_string()),
                },
                Some(Err(message)) => self.fail(message),
                None => {
                    match self.decoder.finish() {
                        Ok(ds) => {
                            let ds = self.filter(ds);
                            self.queue.extend(ds);
                        }
                        Err(e) => self.fail(e.to_string()),
                    }
                    if let Some(h) = &mut self.text_tools {
                        self.queue.extend(h.finish());
                    }
                    if !self.decoder.complete && self.failed.is_none() {
                        self.failed = Some(LlmError::Stream {
                            provider: self.provider.clone(),
                            message: "the stream ended before the provider finished".into(),
                        });
                    }
                    self.end();
                }
            }
        }
    }

    fn fail(&mut self, message: String) {
        self.failed = Some(LlmError::Stream { provider: self.provider.clone(), message });
        self.end();
    }

    fn end(&mut self) {
        if !self.ended {
            self.ended = true;
            self.body.close();
            self.meters.add(&self.account, &self.decoder.assembler.output().usage);
        }
    }

    /// The whole generation so far (complete once `next` returned `None`).
    pub fn completion(&self) -> Completion {
        let mut output = self.decoder.assembler.output();
        if let Some(h) = &self.text_tools {
            h.apply(&mut output);
        }
        Completion {
            provider: self.provider.clone(),
            termination: termination(&self.manifest, &output),
            rate_limits: self.rate_limits.clone(),
            output,
        }
    }
}

impl ProviderError {
    /// For logs: class and standard code.
    pub fn label(&self) -> String {
        format!("{} ({})", self.class.as_str(), self.class.code())
    }
}
