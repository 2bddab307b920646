//! The provider layer's configuration, as `config` resolves it from `[llm]`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::manifest::{Catalog, Manifest};
use super::secret::Secret;

#[derive(Debug, Clone)]
pub struct LlmConfig {
    pub catalog: Catalog,
    /// Configured instances, by id (the `provider` of `provider/model`).
    pub providers: Vec<ProviderConfig>,
    /// `[llm.local]` when enabled: the model `quarry serve` supervises (it becomes the
    /// provider `local` once its files are found).
    pub local: Option<LocalConfig>,
    /// Alias → `provider/model`.
    pub aliases: BTreeMap<String, String>,
    pub connect_timeout: Duration,
    /// The longest silence between two pieces of a response body.
    pub read_timeout: Duration,
    pub tls_roots: TlsRoots,
    /// Caps every manifest's `retry_policy.max_retries` (None: the manifest's own).
    pub max_retries: Option<u32>,
    /// Caps every manifest's `retry_policy.min_delay_ms`/`max_delay_ms`.
    pub max_retry_delay: Option<Duration>,
}

#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub id: String,
    pub manifest: Arc<Manifest>,
    pub base_url: Option<String>,
    pub token: Option<Secret>,
    pub models: Vec<String>,
    pub timeout: Option<Duration>,
}

/// The supervised local model (`[llm.local]`), its paths resolved.
#[derive(Debug, Clone)]
pub struct LocalConfig {
    pub model: PathBuf,
    /// The Python that runs the launcher (the runtime's venv).
    pub runtime: PathBuf,
    pub launcher: PathBuf,
    /// Listed as `local/<name>`.
    pub name: String,
    pub threads: usize,
    pub ctx_size: u32,
    /// 0: a free loopback port, chosen at start-up.
    pub port: u16,
    pub nice: i32,
    pub ready_timeout: Duration,
}

#[derive(Debug, Clone)]
pub enum TlsRoots {
    /// Mozilla's roots, bundled (webpki-roots).
    Bundled,
    /// A PEM bundle's bytes, read at start-up.
    Pem(Vec<u8>),
}

impl LlmConfig {
    /// No provider configured.
    pub fn none() -> LlmConfig {
        LlmConfig {
            catalog: Catalog::default(),
            providers: Vec::new(),
            local: None,
            aliases: BTreeMap::new(),
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(60),
            tls_roots: TlsRoots::Bundled,
            max_retries: None,
            max_retry_delay: None,
        }
    }
}
