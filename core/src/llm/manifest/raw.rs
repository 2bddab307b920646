//! A manifest as written: the serde shape of AI-Protocol v1 provider YAML, lenient
//! about what the files in the wild really do (an `endpoint` object or a top-level
//! `base_url`; `endpoints.chat` as an object or `chat_completions_create` as a string;
//! `capabilities` as an object of booleans or a list; event fields under `fields` or
//! `extract`). Keys this runtime does not use are ignored.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
pub struct RawManifest {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub endpoint: Option<RawEndpoint>,
    #[serde(default)]
    pub auth: Option<RawAuth>,
    #[serde(default)]
    pub payload_format: Option<String>,
    #[serde(default)]
    pub endpoints: Option<BTreeMap<String, RawEndpointEntry>>,
    #[serde(default)]
    pub services: Option<BTreeMap<String, RawService>>,
    #[serde(default)]
    pub termination: Option<RawTermination>,
    #[serde(default)]
    pub rate_limit_headers: Option<BTreeMap<String, Option<String>>>,
    #[serde(default)]
    pub retry_policy: Option<RawRetry>,
    #[serde(default)]
    pub error_classification: Option<RawClassification>,
    #[serde(default)]
    pub parameter_mappings: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub parameters: Option<BTreeMap<String, RawParam>>,
    #[serde(default)]
    pub streaming: Option<RawStreaming>,
    #[serde(default)]
    pub capabilities: Option<RawCapabilities>,
    #[serde(default)]
    pub api_families: Option<Value>,
    /// Tool calls the models may write as text (see `llm::text_tools`).
    #[serde(default)]
    pub tool_calls: Option<crate::llm::text_tools::TextForms>,
    /// A rerank endpoint (see `manifest::rerank`).
    #[serde(default)]
    pub rerank: Option<super::rerank::RerankSpec>,
}

#[derive(Debug, Deserialize)]
pub struct RawEndpoint {
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The compliance fixtures' shape: the chat path and auth inside `endpoint`.
    #[serde(default)]
    pub chat: Option<String>,
    #[serde(default)]
    pub auth: Option<RawAuth>,
}

#[derive(Debug, Deserialize)]
pub struct RawAuth {
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub token_env: Option<String>,
    #[serde(default)]
    pub param_name: Option<String>,
    #[serde(default)]
    pub header: Option<String>,
    #[serde(default)]
    pub prefix: Option<String>,
    #[serde(default)]
    pub extra_headers: Vec<RawHeader>,
}

#[derive(Debug, Deserialize)]
pub struct RawHeader {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawEndpointEntry {
    Path(String),
    Full { path: String },
}

#[derive(Debug, Deserialize)]
pub struct RawService {
    #[serde(default)]
    pub path: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct RawTermination {
    #[serde(default)]
    pub mapping: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct RawRetry {
    #[serde(default)]
    pub strategy: Option<String>,
    #[serde(default)]
    pub max_retries: Option<u32>,
    #[serde(default)]
    pub min_delay_ms: Option<u64>,
    #[serde(default)]
    pub max_delay_ms: Option<u64>,
    #[serde(default)]
    pub jitter: Option<String>,
    #[serde(default)]
    pub retry_on_http_status: Vec<u16>,
    #[serde(default)]
    pub retry_on_error_status: Vec<String>,
    /// The compliance vectors' name for classes to retry.
    #[serde(default)]
    pub retry_on_error_code: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct RawClassification {
    #[serde(default)]
    pub by_http_status: BTreeMap<String, String>,
    #[serde(default)]
    pub by_error_status: BTreeMap<String, String>,
    #[serde(default)]
    pub by_error_code: BTreeMap<String, String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
pub struct RawParam {
    #[serde(default)]
    pub range: Option<[f64; 2]>,
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
    #[serde(default)]
    pub default: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub struct RawStreaming {
    #[serde(default)]
    pub decoder: Option<RawDecoder>,
    #[serde(default)]
    pub frame_selector: Option<String>,
    #[serde(default)]
    pub event_map: Option<Vec<RawRule>>,
    #[serde(default)]
    pub stop_condition: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct RawDecoder {
    #[serde(default)]
    pub prefix: Option<String>,
    #[serde(default)]
    pub done_signal: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct RawRule {
    #[serde(rename = "match")]
    pub matches: String,
    pub emit: String,
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
    #[serde(default)]
    pub extract: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawCapabilities {
    Flags(BTreeMap<String, bool>),
    List(Vec<String>),
}

impl RawCapabilities {
    pub fn has(&self, name: &str) -> bool {
        match self {
            RawCapabilities::Flags(m) => m.get(name).copied().unwrap_or(false),
            RawCapabilities::List(l) => l.iter().any(|c| c == name),
        }
    }
}
