//! The configuration as written: the serde shape of the TOML file, every section
//! closed to unknown keys. `super::resolve` turns it into the typed [`super::Config`].

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    pub data: String,
    pub listen: String,
    pub shards: usize,
    pub embedder: String,
    pub english_embedder: String,
    pub embedders: Vec<String>,
    pub models: RawModels,
    pub http: RawHttp,
    pub runtime: RawRuntime,
    pub auth: RawAuth,
    pub meters: RawMeters,
    pub index: RawIndex,
    pub debug: RawDebug,
    pub log: RawLog,
    pub plans: BTreeMap<String, RawPlan>,
    pub llm: RawLlm,
    pub rerank: RawRerank,
    pub rerankers: BTreeMap<String, RawReranker>,
    pub extract: super::extract::RawExtract,
    pub research: super::research::RawResearch,
    pub expand: super::expand::RawExpand,
    pub secrets: super::secrets::RawSecrets,
    pub agents: super::agents::RawAgents,
    pub egress: super::egress::RawEgress,
    pub store: super::store::RawStore,
    pub segments: super::segments::RawSegments,
    pub cluster: super::cluster::RawCluster,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHttp {
    pub header_read_timeout: String,
    pub idle_timeout: String,
    pub body_read_timeout: String,
    pub max_header_bytes: usize,
    pub max_headers: usize,
    pub max_body_bytes: usize,
    pub max_connections_per_shard: usize,
    pub max_connections_per_client: u32,
    pub shutdown_grace: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawModels {
    pub dir: String,
    pub runtime_library: String,
    pub precision: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRuntime {
    pub spin_before_park: String,
    pub io_memory: usize,
    pub ring_depth: usize,
    pub preempt_timer: String,
    pub coop_taskrun: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAuth {
    pub signup: String,
    pub signup_existing_email: String,
    pub default_plan: String,
    pub signup_per_ip: RawSignupPerIp,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSignupPerIp {
    pub burst: u64,
    pub per_hour: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMeters {
    pub flush_interval: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDebug {
    pub panic_route: bool,
    pub failpoint: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIndex {
    pub workers: usize,
    pub max_document_bytes: usize,
    pub flush_batches: usize,
    pub flush_chunks: usize,
    pub flush_interval: String,
    pub max_segments: usize,
    pub rrf_k: f64,
    pub keyword_weight: f64,
    pub semantic_weight: f64,
    pub depth: usize,
    pub chunk_target_chars: usize,
    pub chunk_max_chars: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLog {
    pub level: String,
    pub format: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPlan {
    pub name: String,
    pub price: Amount,
    pub stored_chars: Amount,
    pub search: Amount,
    pub extract: Amount,
    pub research: Amount,
    pub rate_per_minute: u64,
    pub burst: u64,
    /// Optional so that plans written before the cap existed still load.
    #[serde(default)]
    pub max_keys: Option<Amount>,
}

/// A number, or a word standing for "no number" ("unlimited", "quoted").
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Amount {
    Int(u64),
    Float(f64),
    Word(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLlm {
    pub manifests_dir: String,
    pub connect_timeout: String,
    pub read_timeout: String,
    pub tls_roots: String,
    pub max_retries: i64,
    pub max_retry_delay: String,
    pub local: RawLocal,
    pub aliases: BTreeMap<String, String>,
    pub providers: BTreeMap<String, RawProvider>,
}

/// `[llm.local]`: the supervised local model.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLocal {
    pub enabled: bool,
    pub model: String,
    pub runtime: String,
    pub launcher: String,
    pub name: String,
    pub threads: usize,
    pub ctx_size: u32,
    pub port: u16,
    pub nice: i32,
    pub ready_timeout: String,
}

/// One `[llm.providers.ID]` table; every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawProvider {
    pub manifest: String,
    pub base_url: String,
    pub token: String,
    pub token_env: String,
    pub models: Vec<String>,
    pub timeout: String,
}

/// `[rerank]`: the reranker stage.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRerank {
    pub default: String,
    pub top: usize,
    pub timeout: String,
}

/// One `[rerankers.NAME]` table; which keys apply depends on `kind`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawReranker {
    pub kind: String,
    pub model: String,
    pub tokenizer: String,
    pub max_tokens: usize,
    pub pad_id: u32,
    pub provider: String,
}
