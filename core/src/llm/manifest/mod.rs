//! Provider manifests (AI-Protocol v1): a provider is data — endpoint, auth,
//! parameter mapping, streaming decoder and event map, termination map, error
//! classification, retry policy — read from YAML and checked at start-up. The
//! project ships manifests in `providers/` (compiled in); an operator adds or
//! replaces them by id from `llm.manifests_dir`. A bad manifest is refused with the
//! file and the offending field.

mod raw;
pub mod rerank;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use super::classify::Classification;
use super::error::ErrorClass;
use super::expr::Expr;
use super::path::Shape;
use super::retry::{Jitter, RetryPolicy};
use super::stream::map::{EventKind, EventMap, FieldSource, Rule};
use super::stream::sse::SseConfig;
use super::termination::Reason;
use raw::RawManifest;
pub use raw::RawParam;

/// The manifests the project ships, by file name.
pub const SHIPPED: &[(&str, &str)] = &[
    ("openai.yaml", include_str!("../../../../providers/openai.yaml")),
    ("anthropic.yaml", include_str!("../../../../providers/anthropic.yaml")),
    ("gemini.yaml", include_str!("../../../../providers/gemini.yaml")),
    ("deepseek.yaml", include_str!("../../../../providers/deepseek.yaml")),
    ("openai-compatible.yaml", include_str!("../../../../providers/openai-compatible.yaml")),
    ("jina.yaml", include_str!("../../../../providers/jina.yaml")),
    ("cohere.yaml", include_str!("../../../../providers/cohere.yaml")),
    ("voyage.yaml", include_str!("../../../../providers/voyage.yaml")),
    ("bedrock.yaml", include_str!("../../../../providers/bedrock.yaml")),
];

/// The standard error codes and their provider mappings (error-codes.yaml v2).
const ERROR_CODES: &str = include_str!("../../../../providers/error-codes.yaml");

#[derive(Debug, Clone, thiserror::Error)]
#[error("provider manifest {source_name}: `{field}`: {message}")]
pub struct ManifestError {
    pub source_name: String,
    pub field: String,
    pub message: String,
}

/// The wire shapes a chat request and response can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadFormat {
    OpenAi,
    Anthropic,
    Gemini,
    /// Amazon Bedrock Runtime's Converse (`converse_style`, this server's name for it:
    /// AI-Protocol has none). Answered whole: its stream is AWS's binary event
    /// stream, not SSE, so a streamed call is the whole answer replayed.
    Converse,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    Bearer,
    Header { name: String, prefix: Option<String> },
    Query { param: String },
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Capabilities {
    pub streaming: bool,
    pub tools: bool,
    pub vision: bool,
    pub reasoning: bool,
    /// Prompt caching the request marks (`cache_control` breakpoints).
    pub prompt_caching: bool,
}

#[derive(Debug, Clone)]
pub struct Manifest {
    pub id: String,
    pub name: String,
    pub format: PayloadFormat,
    pub base_url: String,
    /// May hold `{model}` (Gemini).
    pub chat_path: String,
    pub models_path: Option<String>,
    pub auth: Auth,
    pub token_env: Option<String>,
    pub extra_headers: Vec<(String, String)>,
    /// Until the response head arrives.
    pub timeout: Duration,
    /// Standard parameter → where it goes in the wire body (dotted path).
    pub params: BTreeMap<String, String>,
    /// Ranges and defaults the provider declares (`parameters`).
    pub param_specs: BTreeMap<String, RawParam>,
    pub termination: BTreeMap<String, Reason>,
    pub classification: Classification,
    pub retry: RetryPolicy,
    /// Standard name (`requests_remaining`, …) → header, parsed once here rather than
    /// on every answer (a name that is not a valid header name can never be found).
    pub rate_headers: Vec<(String, hyper::header::HeaderName)>,
    pub sse: SseConfig,
    pub events: EventMap,
    /// What of each streamed frame `events` reads ([`EventMap::shape`]): frames are
    /// parsed only that far.
    pub frame_shape: Shape,
    pub capabilities: Capabilities,
    /// `tool_calls.text_forms`: how its models may write a tool call as text.
    pub text_tools: super::text_tools::TextForms,
    /// Its rerank endpoint, when it has one.
    pub rerank: Option<rerank::RerankSpec>,
}

impl Manifest {
    /// Parses and checks one manifest; `source_name` names it in errors.
    pub fn parse(source_name: &str, text: &str) -> Result<Manifest, ManifestError> {
        let err = |field: &str, message: String| ManifestError { source_name: source_name.into(), field: field.into(), message };
        let value: Value = serde_norway::from_str(text).map_err(|e| err("(yaml)", e.to_string()))?;
        let raw: RawManifest = serde_path_to_error::deserialize(&value).map_err(|e| err(&e.path().to_string(), e.inner().to_string()))?;
        resolve(raw).map_err(|(field, message)| err(&field, message))
    }

    /// The URL of a chat call for `model`.
    pub fn chat_url(&self, base_url: &str, model: &str, stream: bool) -> String {
        let model = match self.format {
            // A Bedrock model id's `:` (`…-v1:0`) is sent encoded, as the AWS SDKs send it.
            PayloadFormat::Converse => super::cloud::sigv4::uri_encode(model),
            _ => model.to_owned(),
        };
        let path = self.chat_path.replace("{model}", &model);
        let path = match (self.format, stream) {
            (PayloadFormat::Gemini, true) => format!("{}?alt=sse", path.replace(":generateContent", ":streamGenerateContent")),
            _ => path,
        };
        format!("{}{}", base_url.trim_end_matches('/'), path)
    }
}

type Fail = (String, String);

fn resolve(raw: RawManifest) -> Result<Manifest, Fail> {
    let fail = |f: &str, m: &str| (f.to_owned(), m.to_owned());
    let id = raw.id.clone();
    if id.len() < 2 || !id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_') {
        return Err(fail("id", "must be 2-64 lowercase letters, digits, - or _"));
    }
    let endpoint = raw.endpoint.as_ref();
    let base_url = endpoint.and_then(|e| e.base_url.clone()).or(raw.base_url.clone()).ok_or_else(|| fail("endpoint.base_url", "is required"))?;
    if !(base_url.starts_with("https://") || base_url.starts_with("http://")) {
        return Err(fail("endpoint.base_url", "must be an http:// or https:// URL"));
    }
    let format = format(&raw)?;
    let chat_path = chat_path(&raw, format)?;
    let auth_raw = raw.auth.as_ref().or(endpoint.and_then(|e| e.auth.as_ref()));
    let auth = auth(auth_raw, format)?;
    let timeout_ms = endpoint.and_then(|e| e.timeout_ms).unwrap_or(10_000);
    if timeout_ms < 100 {
        return Err(fail("endpoint.timeout_ms", "must be at least 100"));
    }
    let caps = raw.capabilities.as_ref();
    let has = |c: &str| caps.is_none_or(|k| k.has(c));
    let events = events(&raw, format)?;
    let frame_shape = events.shape();
    let text_tools = raw.tool_calls.clone().unwrap_or_default();
    text_tools.check()?;
    if let Some(r) = &raw.rerank {
        r.check()?;
    }
    Ok(Manifest {
        name: raw.name.clone().unwrap_or_else(|| id.clone()),
        format,
        base_url,
        chat_path,
        models_path: raw.services.as_ref().and_then(|s| s.get("list_models")).and_then(|s| s.path.clone()),
        token_env: auth_raw.and_then(|a| a.token_env.clone()),
        extra_headers: auth_raw.map(|a| a.extra_headers.iter().map(|h| (h.name.clone(), h.value.clone())).collect()).unwrap_or_default(),
        auth,
        timeout: Duration::from_millis(timeout_ms),
        params: raw.parameter_mappings.clone().unwrap_or_else(|| default_params(format)),
        param_specs: raw.parameters.clone().unwrap_or_default(),
        termination: termination(&raw)?,
        classification: classification(&raw, format)?,
        retry: retry(raw.retry_policy.as_ref())?,
        rate_headers: raw
            .rate_limit_headers
            .iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), hyper::header::HeaderName::from_bytes(v.as_ref()?.as_bytes()).ok()?)))
            .collect(),
        sse: sse(&raw),
        events,
        frame_shape,
        capabilities: Capabilities {
            streaming: has("streaming"),
            tools: has("tools"),
            vision: has("vision"),
            reasoning: has("reasoning"),
            prompt_caching: caps.is_some_and(|k| k.has("prompt_caching")),
        },
        text_tools,
        rerank: raw.rerank.clone(),
        id,
    })
}

fn format(raw: &RawManifest) -> Result<PayloadFormat, Fail> {
    let family = raw.api_families.as_ref().and_then(|f| f.pointer("/chat/request_format")).and_then(Value::as_str).map(|f| format!("{f}_style"));
    let name = raw.payload_format.clone().or(family).unwrap_or_else(|| "openai_style".into());
    match name.as_str() {
        "openai_style" => Ok(PayloadFormat::OpenAi),
        "anthropic_style" => Ok(PayloadFormat::Anthropic),
        "gemini_style" | "google_style" => Ok(PayloadFormat::Gemini),
        "converse_style" => Ok(PayloadFormat::Converse),
        other => Err(("payload_format".into(), format!("`{other}` is not openai_style, anthropic_style, gemini_style or converse_style"))),
    }
}

fn chat_path(raw: &RawManifest, format: PayloadFormat) -> Result<String, Fail> {
    use raw::RawEndpointEntry as E;
    let from_endpoints = raw.endpoints.as_ref().and_then(|e| {
        e.get("chat").or_else(|| e.get("chat_completions_create")).map(|entry| match entry {
            E::Path(p) => p.clone(),
            E::Full { path, .. } => path.clone(),
        })
    });
    let path = from_endpoints.or_else(|| raw.endpoint.as_ref().and_then(|e| e.chat.clone())).unwrap_or_else(|| {
        match format {
            PayloadFormat::OpenAi => "/chat/completions",
            PayloadFormat::Anthropic => "/messages",
            PayloadFormat::Gemini => "/models/{model}:generateContent",
            PayloadFormat::Converse => "/model/{model}/converse",
        }
        .to_owned()
    });
    if !path.starts_with('/') {
        return Err(("endpoints.chat.path".into(), "must start with /".into()));
    }
    Ok(path)
}

fn auth(a: Option<&raw::RawAuth>, format: PayloadFormat) -> Result<Auth, Fail> {
    if format == PayloadFormat::Anthropic {
        // Anthropic's API takes x-api-key, whatever the manifest's type says.
        return Ok(Auth::Header { name: "x-api-key".into(), prefix: None });
    }
    let Some(a) = a else { return Ok(Auth::Bearer) };
    match a.kind.as_deref().unwrap_or("bearer") {
        "bearer" => Ok(Auth::Bearer),
        "query_param" => Ok(Auth::Query { param: a.param_name.clone().unwrap_or_else(|| "key".into()) }),
        "header" | "custom_header" | "api_key" => Ok(Auth::Header {
            name: a.header.clone().ok_or(("auth.header".to_owned(), "is required for a header credential".to_owned()))?.to_ascii_lowercase(),
            prefix: a.prefix.clone(),
        }),
        other => Err(("auth.type".into(), format!("`{other}` is not bearer, query_param or header"))),
    }
}

fn default_params(format: PayloadFormat) -> BTreeMap<String, String> {
    let pairs: &[(&str, &str)] = match format {
        PayloadFormat::OpenAi => &[
            ("temperature", "temperature"),
            ("max_tokens", "max_tokens"),
            ("top_p", "top_p"),
            ("stop_sequences", "stop"),
            ("seed", "seed"),
            ("tools", "tools"),
            ("tool_choice", "tool_choice"),
            ("frequency_penalty", "frequency_penalty"),
            ("presence_penalty", "presence_penalty"),
        ],
        PayloadFormat::Anthropic => &[
            ("temperature", "temperature"),
            ("max_tokens", "max_tokens"),
            ("top_p", "top_p"),
            ("top_k", "top_k"),
            ("stop_sequences", "stop_sequences"),
            ("tools", "tools"),
            ("tool_choice", "tool_choice"),
            ("system_message", "system"),
        ],
        PayloadFormat::Gemini => &[
            ("temperature", "generationConfig.temperature"),
            ("max_tokens", "generationConfig.maxOutputTokens"),
            ("top_p", "generationConfig.topP"),
            ("top_k", "generationConfig.topK"),
            ("stop_sequences", "generationConfig.stopSequences"),
            ("tools", "tools"),
            ("tool_choice", "toolConfig"),
        ],
        PayloadFormat::Converse => &[
            ("temperature", "inferenceConfig.temperature"),
            ("max_tokens", "inferenceConfig.maxTokens"),
            ("top_p", "inferenceConfig.topP"),
            ("stop_sequences", "inferenceConfig.stopSequences"),
            ("tools", "toolConfig"),
            ("system_message", "system"),
        ],
    };
    pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

fn termination(raw: &RawManifest) -> Result<BTreeMap<String, Reason>, Fail> {
    let mut out = BTreeMap::new();
    for (k, v) in raw.termination.iter().flat_map(|t| &t.mapping) {
        let r = Reason::parse(v).ok_or_else(|| (format!("termination.mapping.{k}"), format!("`{v}` is not a standard reason")))?;
        out.insert(k.clone(), r);
    }
    Ok(out)
}

fn class(field: String, name: &str) -> Result<ErrorClass, Fail> {
    ErrorClass::parse(name).ok_or((field, format!("`{name}` is not an error class")))
}

fn classification(raw: &RawManifest, format: PayloadFormat) -> Result<Classification, Fail> {
    let family = match format {
        PayloadFormat::OpenAi => "openai",
        PayloadFormat::Anthropic => "anthropic",
        PayloadFormat::Gemini => "gemini",
        PayloadFormat::Converse => "bedrock",
    };
    let standard = standard_mappings();
    let mut c = standard.get(raw.id.as_str()).or_else(|| standard.get(family)).cloned().unwrap_or_default();
    let Some(m) = &raw.error_classification else { return Ok(c) };
    for (status, name) in &m.by_http_status {
        let field = format!("error_classification.by_http_status.{status}");
        let code: u16 = status.parse().map_err(|_| (field.clone(), "is not an HTTP status".to_owned()))?;
        c.by_status.insert(code, class(field, name)?);
    }
    for (s, name) in &m.by_error_status {
        c.by_error_status.insert(s.clone(), class(format!("error_classification.by_error_status.{s}"), name)?);
    }
    for (s, name) in &m.by_error_code {
        c.by_error_code.insert(s.clone(), class(format!("error_classification.by_error_code.{s}"), name)?);
    }
    Ok(c)
}

/// error-codes.yaml's `provider_mappings`, parsed once.
fn standard_mappings() -> &'static BTreeMap<String, Classification> {
    static MAPS: OnceLock<BTreeMap<String, Classification>> = OnceLock::new();
    MAPS.get_or_init(|| {
        let doc: Value = serde_norway::from_str(ERROR_CODES).expect("error-codes.yaml parses");
        let mut out = BTreeMap::new();
        for (provider, m) in doc["provider_mappings"].as_object().expect("provider_mappings") {
            let mut c = Classification::default();
            let pairs = |key: &str| m.get(key).and_then(Value::as_object).cloned().unwrap_or_default();
            let cls = |v: &Value| v.as_str().and_then(ErrorClass::parse).expect("error-codes.yaml names classes");
            for (s, v) in pairs("by_http_status") {
                c.by_status.insert(s.parse().expect("a status"), cls(&v));
            }
            for (s, v) in pairs("by_error_code") {
                c.by_error_code.insert(s, cls(&v));
            }
            for p in m.get("by_error_message").and_then(Value::as_array).into_iter().flatten() {
                c.by_message.push((p["pattern"].as_str().unwrap_or_default().to_ascii_lowercase(), cls(&p["maps_to"])));
            }
            out.insert(provider.clone(), c);
        }
        out
    })
}

fn retry(r: Option<&raw::RawRetry>) -> Result<RetryPolicy, Fail> {
    let d = RetryPolicy::default();
    let Some(r) = r else { return Ok(d) };
    let jitter = match r.jitter.as_deref() {
        None | Some("full") => Jitter::Full,
        Some("none") => Jitter::None,
        Some("equal") => Jitter::Equal,
        Some(other) => return Err(("retry_policy.jitter".into(), format!("`{other}` is not none, full or equal"))),
    };
    let none = r.strategy.as_deref() == Some("none");
    let min = r.min_delay_ms.map_or(d.min_delay, Duration::from_millis);
    let max = r.max_delay_ms.map_or(d.max_delay, Duration::from_millis);
    if max < min {
        return Err(("retry_policy.max_delay_ms".into(), "is below min_delay_ms".into()));
    }
    let on_class = r.retry_on_error_code.iter().map(|n| class(format!("retry_policy.retry_on_error_code.{n}"), n)).collect::<Result<_, _>>()?;
    Ok(RetryPolicy {
        max_retries: if none { 0 } else { r.max_retries.unwrap_or(d.max_retries) },
        min_delay: min,
        max_delay: max,
        jitter,
        on_status: r.retry_on_http_status.clone(),
        on_error_status: r.retry_on_error_status.clone(),
        on_class,
    })
}

fn sse(raw: &RawManifest) -> SseConfig {
    let d = raw.streaming.as_ref().and_then(|s| s.decoder.as_ref());
    SseConfig {
        prefix: d.and_then(|d| d.prefix.clone()).unwrap_or_else(|| "data: ".into()),
        done_signal: d.and_then(|d| d.done_signal.clone()).or_else(|| Some("[DONE]".into())),
    }
}

fn events(raw: &RawManifest, format: PayloadFormat) -> Result<EventMap, Fail> {
    let s = raw.streaming.as_ref();
    let expr = |field: &str, text: &Option<String>| -> Result<Option<Expr>, Fail> {
        text.as_deref().map(|t| Expr::parse(t).map_err(|m| (field.to_owned(), m))).transpose()
    };
    let Some(rules) = s.and_then(|s| s.event_map.as_ref()) else {
        // An older manifest without an event map streams as its payload format does.
        return Ok(shipped_events(format));
    };
    let mut out = Vec::new();
    for (i, r) in rules.iter().enumerate() {
        let at = |f: &str| format!("streaming.event_map[{i}].{f}");
        let kind = EventKind::parse(&r.emit).ok_or((at("emit"), format!("`{}` is not a standard event", r.emit)))?;
        let matches = Expr::parse(&r.matches).map_err(|m| (at("match"), m))?;
        let fields = r
            .fields
            .iter()
            .chain(&r.extract)
            .map(|(k, v)| FieldSource::parse(v).map(|f| (k.clone(), f)).map_err(|m| (at(&format!("fields.{k}")), m)))
            .collect::<Result<_, _>>()?;
        out.push(Rule { matches, kind, fields });
    }
    Ok(EventMap {
        selector: expr("streaming.frame_selector", &s.and_then(|s| s.frame_selector.clone()))?,
        rules: out,
        stop: expr("streaming.stop_condition", &s.and_then(|s| s.stop_condition.clone()))?,
    })
}

fn shipped_events(format: PayloadFormat) -> EventMap {
    let name = match format {
        PayloadFormat::OpenAi => "openai.yaml",
        PayloadFormat::Anthropic => "anthropic.yaml",
        PayloadFormat::Gemini => "gemini.yaml",
        // Never streamed as SSE (see `PayloadFormat::Converse`).
        PayloadFormat::Converse => return EventMap { selector: None, rules: Vec::new(), stop: None },
    };
    let text = SHIPPED.iter().find(|(n, _)| *n == name).expect("shipped").1;
    Manifest::parse(name, text).expect("the shipped manifests are valid").events
}

/// Every manifest known: the shipped ones, then an operator's directory (same id
/// replaces).
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub manifests: BTreeMap<String, Arc<Manifest>>,
}

impl Catalog {
    pub fn load(dir: Option<&Path>) -> Result<Catalog, ManifestError> {
        let mut c = Catalog::default();
        for (name, text) in SHIPPED {
            c.add(Manifest::parse(name, text)?);
        }
        let Some(dir) = dir else { return Ok(c) };
        let unreadable = |message: String| ManifestError { source_name: dir.display().to_string(), field: "(directory)".into(), message };
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| unreadable(e.to_string()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
            .collect();
        files.sort();
        for path in files {
            let text = std::fs::read_to_string(&path).map_err(|e| unreadable(format!("{}: {e}", path.display())))?;
            c.add(Manifest::parse(&path.display().to_string(), &text)?);
        }
        Ok(c)
    }

    fn add(&mut self, m: Manifest) {
        self.manifests.insert(m.id.clone(), Arc::new(m));
    }

    pub fn get(&self, id: &str) -> Option<&Arc<Manifest>> {
        self.manifests.get(id)
    }
}

#[cfg(test)]
mod tests;
