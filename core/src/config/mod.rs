//! Configuration, resolved once at start-up: compiled defaults (`ops/quarry.toml`,
//! compiled in) → a TOML file → `QUARRY_*` environment → command-line flags. Unknown
//! keys are refused with their name and where they came from. This is the only module
//! that reads the environment; everything else receives a typed [`Config`] by value.

mod agents;
mod cluster;
mod egress;
mod expand;
mod extract;
mod install;
mod layers;
mod llm;
mod raw;
mod rerank;
mod research;
mod secrets;
mod segments;
pub use cluster::ClusterSettings;
mod store;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Table, Value};

use crate::plans::{Plan, Plans, Rate};
use raw::{Amount, RawConfig, RawPlan};

pub use agents::AgentsConfig;
pub use egress::EgressConfig;
pub use expand::ExpandConfig;
pub use extract::ExtractConfig;
pub use layers::{INGEST_KEY_ENV, RESERVED_ENV};
pub use rerank::{RerankConfig, RerankerConfig, RerankerKind};
pub use research::{Judge, ResearchConfig};
pub use secrets::SecretsConfig;

/// The documented defaults, compiled in so documentation and behaviour cannot drift.
pub const DEFAULTS_TOML: &str = include_str!("../../../ops/quarry.toml");

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("config file {path} is not valid TOML: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("unknown configuration key `{key}` (from {origin})")]
    UnknownKey { key: String, origin: String },
    #[error("configuration key `{key}`: {message}")]
    Invalid { key: String, message: String },
}

#[derive(Debug, Clone)]
pub struct Config {
    pub data: PathBuf,
    pub listen: SocketAddr,
    /// 0 means one shard per CPU this process may run on.
    pub shards: usize,
    /// The default embedding model's id (new collections get it), or `None` for "none".
    pub embedder: Option<String>,
    /// The embedder a new English collection takes when its request names none (loaded,
    /// and not the default), or `None`: every new collection takes the default.
    pub english_embedder: Option<String>,
    /// Every embedder the server loads (the default among them), in load order: a
    /// collection may choose any of these.
    pub embedders: Vec<String>,
    pub models: ModelsConfig,
    pub http: HttpConfig,
    pub runtime: RuntimeConfig,
    pub auth: AuthConfig,
    pub meters_flush_interval: Duration,
    pub log: LogConfig,
    pub plans: Plans,
    /// `debug.panic_route`: serve GET /v1/_panic, which panics (fault injection).
    pub panic_route: bool,
    /// `debug.failpoint`: a crash or I/O fault injected into the write path.
    pub failpoint: quarry_index::wal::Failpoint,
    pub index: IndexConfig,
    pub llm: crate::llm::LlmConfig,
    /// `[rerank]` and `[rerankers.NAME]`.
    pub rerank: RerankConfig,
    pub extract: ExtractConfig,
    pub research: ResearchConfig,
    pub expand: ExpandConfig,
    /// `[secrets]`: the key sealing SOAT secrets.
    pub secrets: SecretsConfig,
    /// `[agents]`: generations' pauses and chains.
    pub agents: AgentsConfig,
    /// `[egress]`: what tenants' requests may reach beyond the public internet.
    pub egress: EgressConfig,
    /// `[store]`: where the records live.
    pub store: crate::store::StoreSettings,
    /// `[segments]`: where segments are kept besides the data directory.
    pub segments: crate::segments::SegmentSettings,
    /// `[cluster]`: this node's name and heartbeat, with records on a shared store.
    pub cluster: ClusterSettings,
}

/// `[index]`: the engine's write path, background work and ranking.
#[derive(Debug, Clone)]
pub struct IndexConfig {
    /// Ingest threads (each with its own embedder session); 0 = one per shard.
    pub workers: usize,
    pub max_document_bytes: usize,
    pub flush_batches: usize,
    pub flush_chunks: usize,
    /// The longest recent documents wait in memory (and the WAL) before a flush.
    pub flush_interval: Duration,
    pub max_segments: usize,
    pub rrf_k: f64,
    pub weights: [f64; 2],
    pub depth: usize,
    pub chunk_target_chars: usize,
    pub chunk_max_chars: usize,
}

#[derive(Debug, Clone)]
pub struct ModelsConfig {
    /// `models.dir`, resolved (see `install`): absolute as given, else from the
    /// installation root.
    pub dir: PathBuf,
    /// `models.runtime_library`, resolved the same way.
    pub runtime_library: PathBuf,
    /// The installation root relative settings were taken from; `None` when the
    /// binary has none and they were taken from the working directory.
    pub installation: Option<PathBuf>,
    pub precision: quarry_index::embed::Precision,
}

#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub body_read_timeout: Duration,
    pub max_header_bytes: usize,
    pub max_headers: usize,
    pub max_body_bytes: usize,
    pub max_connections_per_shard: usize,
    /// Open connections one client address may hold across every shard; 0 = no cap.
    pub max_connections_per_client: u32,
    pub shutdown_grace: Duration,
}

#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    pub spin_before_park: Duration,
    pub io_memory: usize,
    pub ring_depth: usize,
    pub preempt_timer: Duration,
    pub coop_taskrun: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignupMode {
    Open,
    Closed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExistingEmail {
    /// 409 email_taken unless the caller holds a key of that account.
    Refuse,
    /// Hand out a new key (the spec's behaviour; trusted networks only).
    NewKey,
}

#[derive(Debug, Clone)]
pub struct AuthConfig {
    pub signup: SignupMode,
    pub existing_email: ExistingEmail,
    pub default_plan: String,
    /// `auth.signup_per_ip`: signups per client address; `None` = no limit.
    pub signup_per_ip: Option<crate::limits::Pace>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone)]
pub struct LogConfig {
    pub level: String,
    pub format: LogFormat,
}

/// Values given on the command line; `None` leaves the lower layers in charge.
#[derive(Debug, Default, Clone)]
pub struct Flags {
    pub data: Option<PathBuf>,
    pub listen: Option<String>,
    pub shards: Option<usize>,
}

impl Flags {
    fn table(&self) -> Table {
        let mut t = Table::new();
        if let Some(d) = &self.data {
            t.insert("data".into(), Value::String(d.display().to_string()));
        }
        if let Some(l) = &self.listen {
            t.insert("listen".into(), Value::String(l.clone()));
        }
        if let Some(s) = self.shards {
            t.insert("shards".into(), Value::Integer(s as i64));
        }
        t
    }
}

impl Config {
    /// Resolves every layer. `env` is the process environment (passed in so tests
    /// can give their own).
    pub fn load(file: Option<&Path>, env: impl IntoIterator<Item = (String, String)>, flags: &Flags) -> Result<Config, ConfigError> {
        let mut merged: Table = DEFAULTS_TOML.parse().expect("the compiled defaults are valid TOML");
        let known = merged.clone();
        if let Some(path) = file {
            let table = read_file(path)?;
            check_known(&known, &table, &mut Vec::new(), &|_| format!("file {}", path.display()))?;
            layers::merge(&mut merged, table);
        }
        let env: Vec<(String, String)> = env.into_iter().collect();
        let vars: std::collections::HashMap<String, String> = env.iter().cloned().collect();
        let env = layers::env_table(env);
        check_known(&known, &env, &mut Vec::new(), &|key| format!("environment variable {}", env_name(key)))?;
        layers::merge(&mut merged, env);
        layers::merge(&mut merged, flags.table());
        let raw: RawConfig = serde_path_to_error::deserialize(Value::Table(merged))
            .map_err(|e| ConfigError::Invalid { key: e.path().to_string(), message: e.inner().to_string() })?;
        resolve(raw, &vars)
    }

    /// The compiled defaults alone.
    pub fn defaults() -> Config {
        Config::load(None, std::iter::empty(), &Flags::default()).expect("the compiled defaults resolve")
    }
}

fn read_file(path: &Path) -> Result<Table, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
    text.parse::<Table>().map_err(|e| ConfigError::Parse { path: path.to_owned(), message: e.to_string() })
}

fn env_name(key: &str) -> String {
    format!("QUARRY_{}", key.replace('.', "__").to_ascii_uppercase())
}

/// Refuses any key of `layer` that the defaults do not have. Under `plans`, any plan
/// id is allowed, and its keys must be the keys of a default plan.
fn check_known(known: &Table, layer: &Table, path: &mut Vec<String>, origin: &dyn Fn(&str) -> String) -> Result<(), ConfigError> {
    for (key, value) in layer {
        path.push(key.clone());
        let template = match known.get(key) {
            Some(t) => Some(t),
            None if path.len() == 2 && path[0] == "plans" => known.values().next(),
            // Any provider id and alias; a provider's keys are checked by serde.
            None if path.len() == 3 && path[0] == "llm" && (path[1] == "providers" || path[1] == "aliases") => Some(value),
            // Any reranker name; its keys are checked by serde.
            None if path.len() == 2 && path[0] == "rerankers" => Some(value),
            None => None,
        };
        let dotted = path.join(".");
        match (template, value) {
            (None, _) => return Err(ConfigError::UnknownKey { origin: origin(&dotted), key: dotted }),
            (Some(Value::Table(k)), Value::Table(v)) => check_known(k, v, path, origin)?,
            _ => {}
        }
        path.pop();
    }
    Ok(())
}

fn resolve(raw: RawConfig, env: &std::collections::HashMap<String, String>) -> Result<Config, ConfigError> {
    let listen = raw.listen.parse().map_err(|_| invalid("listen", "must be an address like 127.0.0.1:4400"))?;
    let plans = Plans(raw.plans.into_iter().map(|(id, p)| resolve_plan(&id, p).map(|plan| (id, plan))).collect::<Result<_, _>>()?);
    let auth = resolve_auth(raw.auth, &plans)?;
    let h = raw.http;
    let http = HttpConfig {
        header_read_timeout: duration("http.header_read_timeout", &h.header_read_timeout)?,
        idle_timeout: duration("http.idle_timeout", &h.idle_timeout)?,
        body_read_timeout: duration("http.body_read_timeout", &h.body_read_timeout)?,
        max_header_bytes: at_least("http.max_header_bytes", h.max_header_bytes, 1024)?,
        max_headers: at_least("http.max_headers", h.max_headers, 8)?,
        max_body_bytes: h.max_body_bytes,
        max_connections_per_shard: at_least("http.max_connections_per_shard", h.max_connections_per_shard, 1)?,
        max_connections_per_client: h.max_connections_per_client,
        shutdown_grace: duration("http.shutdown_grace", &h.shutdown_grace)?,
    };
    let precision = match raw.models.precision.as_str() {
        "int8" => quarry_index::embed::Precision::Int8,
        "fp32" => quarry_index::embed::Precision::Fp32,
        _ => return Err(invalid("models.precision", "must be \"int8\" or \"fp32\"")),
    };
    let installation = install::current();
    let models = ModelsConfig {
        dir: install::resolve(installation.as_deref(), &raw.models.dir),
        runtime_library: install::resolve(installation.as_deref(), &raw.models.runtime_library),
        installation,
        precision,
    };
    let llm = llm::resolve(raw.llm, env, &models.dir)?;
    let rerank = rerank::resolve(raw.rerank, raw.rerankers, &llm, &models.dir)?;
    let expand = expand::resolve(raw.expand, &llm)?;
    let embedder = match raw.embedder.as_str() {
        "" => return Err(invalid("embedder", "must name a model or be \"none\"")),
        "none" => None,
        id => Some(id.to_owned()),
    };
    let listed = !raw.embedders.is_empty();
    let mut embedders = loaded_embedders(embedder.as_deref(), raw.embedders)?;
    // English collections' model: only beside a default model, loaded with it when the
    // list is left empty, off when a list leaves it out (a list written before this key
    // keeps loading just what it names).
    let english_embedder = match (embedder.as_deref(), raw.english_embedder.as_str()) {
        (None, _) | (_, "" | "none") => None,
        (Some(d), e) if d == e => None,
        (_, e) if listed && !embedders.iter().any(|l| l == e) => None,
        (_, e) => {
            if !listed {
                embedders.push(e.to_owned());
            }
            Some(e.to_owned())
        }
    };
    let r = raw.runtime;
    let runtime = RuntimeConfig {
        spin_before_park: duration("runtime.spin_before_park", &r.spin_before_park)?,
        io_memory: at_least("runtime.io_memory", r.io_memory, 4096)?,
        ring_depth: at_least("runtime.ring_depth", r.ring_depth, 8)?,
        preempt_timer: duration("runtime.preempt_timer", &r.preempt_timer)?,
        coop_taskrun: r.coop_taskrun,
    };
    let format = match raw.log.format.as_str() {
        "text" => LogFormat::Text,
        "json" => LogFormat::Json,
        _ => return Err(invalid("log.format", "must be \"text\" or \"json\"")),
    };
    Ok(Config {
        data: PathBuf::from(raw.data),
        listen,
        shards: raw.shards,
        embedder,
        english_embedder,
        embedders,
        models,
        http,
        runtime,
        auth,
        meters_flush_interval: duration("meters.flush_interval", &raw.meters.flush_interval)?,
        log: LogConfig { level: raw.log.level, format },
        plans,
        panic_route: raw.debug.panic_route,
        failpoint: failpoint(&raw.debug.failpoint)?,
        index: resolve_index(raw.index)?,
        llm,
        rerank,
        extract: extract::resolve(raw.extract)?,
        research: research::resolve(raw.research)?,
        expand,
        secrets: secrets::resolve(raw.secrets)?,
        agents: agents::resolve(raw.agents)?,
        egress: egress::resolve(raw.egress)?,
        store: store::resolve(raw.store)?,
        segments: segments::resolve(raw.segments)?,
        cluster: cluster::resolve(raw.cluster)?,
    })
}

/// `embedders`, checked: empty means just the default (memory and start-up as with one
/// model); otherwise the list must hold the default and no id twice. Whether each id
/// names a model in models.toml is checked when it loads (the error lists the choices).
fn loaded_embedders(default: Option<&str>, listed: Vec<String>) -> Result<Vec<String>, ConfigError> {
    if listed.is_empty() {
        return Ok(default.map(str::to_owned).into_iter().collect());
    }
    for (i, id) in listed.iter().enumerate() {
        if id.is_empty() || id == "none" {
            return Err(invalid("embedders", "lists model ids; \"none\" is not one (set embedder = \"none\" for keyword-only collections)"));
        }
        if listed[..i].contains(id) {
            return Err(invalid("embedders", &format!("lists `{id}` twice")));
        }
    }
    if let Some(d) = default.filter(|d| !listed.iter().any(|id| id == d)) {
        return Err(invalid(
            "embedders",
            &format!("must hold the default embedder `{d}` (embedder), or be empty to load just it; it lists {}", listed.join(", ")),
        ));
    }
    Ok(listed)
}

fn failpoint(text: &str) -> Result<quarry_index::wal::Failpoint, ConfigError> {
    use quarry_index::wal::Failpoint;
    match text {
        "" => Ok(Failpoint::None),
        "wal_crash_before_sync" => Ok(Failpoint::CrashBeforeSync),
        "wal_fail_sync" => Ok(Failpoint::FailSync),
        _ => Err(invalid("debug.failpoint", "must be \"\", \"wal_crash_before_sync\" or \"wal_fail_sync\"")),
    }
}

fn resolve_index(i: raw::RawIndex) -> Result<IndexConfig, ConfigError> {
    if i.rrf_k.is_nan() || i.rrf_k <= 0.0 {
        return Err(invalid("index.rrf_k", "must be above 0"));
    }
    if !(i.keyword_weight >= 0.0 && i.semantic_weight >= 0.0) {
        return Err(invalid("index.keyword_weight", "weights must be 0 or more"));
    }
    if i.chunk_max_chars < i.chunk_target_chars {
        return Err(invalid("index.chunk_max_chars", "must be at least index.chunk_target_chars"));
    }
    Ok(IndexConfig {
        workers: i.workers,
        max_document_bytes: at_least("index.max_document_bytes", i.max_document_bytes, 1024)?,
        flush_batches: at_least("index.flush_batches", i.flush_batches, 1)?,
        flush_chunks: at_least("index.flush_chunks", i.flush_chunks, 1)?,
        flush_interval: duration("index.flush_interval", &i.flush_interval)?,
        max_segments: at_least("index.max_segments", i.max_segments, 1)?,
        rrf_k: i.rrf_k,
        weights: [i.keyword_weight, i.semantic_weight],
        depth: at_least("index.depth", i.depth, 10)?,
        chunk_target_chars: at_least("index.chunk_target_chars", i.chunk_target_chars, 100)?,
        chunk_max_chars: i.chunk_max_chars,
    })
}

fn resolve_auth(a: raw::RawAuth, plans: &Plans) -> Result<AuthConfig, ConfigError> {
    let signup = match a.signup.as_str() {
        "open" => SignupMode::Open,
        "closed" => SignupMode::Closed,
        _ => return Err(invalid("auth.signup", "must be \"open\" or \"closed\"")),
    };
    let existing_email = match a.signup_existing_email.as_str() {
        "refuse" => ExistingEmail::Refuse,
        "new_key" => ExistingEmail::NewKey,
        _ => return Err(invalid("auth.signup_existing_email", "must be \"refuse\" or \"new_key\"")),
    };
    if plans.get(&a.default_plan).is_none() {
        return Err(invalid("auth.default_plan", &format!("names no plan `{}`", a.default_plan)));
    }
    let per_ip = a.signup_per_ip;
    let signup_per_ip = match (per_ip.burst, per_ip.per_hour) {
        (0, _) => None,
        (_, 0) => return Err(invalid("auth.signup_per_ip.per_hour", "must be at least 1 (or set burst = 0 for no limit)")),
        (burst, per_hour) => Some(crate::limits::Pace::per_hour(burst, per_hour)),
    };
    Ok(AuthConfig { signup, existing_email, default_plan: a.default_plan, signup_per_ip })
}

/// The active keys a plan that does not say `max_keys` allows.
pub const DEFAULT_MAX_KEYS: u64 = 10;

fn resolve_plan(id: &str, p: RawPlan) -> Result<Plan, ConfigError> {
    let key = |field: &str| format!("plans.{id}.{field}");
    if p.rate_per_minute == 0 || p.burst == 0 {
        return Err(invalid(&key("rate_per_minute"), "rate_per_minute and burst must be at least 1"));
    }
    Ok(Plan {
        name: p.name,
        price: amount_f64(&key("price"), &p.price, "quoted")?,
        stored_chars: amount_u64(&key("stored_chars"), &p.stored_chars)?,
        search: amount_u64(&key("search"), &p.search)?,
        extract: amount_u64(&key("extract"), &p.extract)?,
        research: amount_u64(&key("research"), &p.research)?,
        rate: Rate { per_minute: p.rate_per_minute, burst: p.burst },
        max_keys: match &p.max_keys {
            None => Some(DEFAULT_MAX_KEYS),
            Some(Amount::Int(0)) => return Err(invalid(&key("max_keys"), "must be at least 1 (an account keeps its first key)")),
            Some(a) => amount_u64(&key("max_keys"), a)?,
        },
    })
}

fn amount_u64(key: &str, a: &Amount) -> Result<Option<u64>, ConfigError> {
    match a {
        Amount::Int(n) => Ok(Some(*n)),
        Amount::Word(w) if w == "unlimited" => Ok(None),
        _ => Err(invalid(key, "must be a whole number or \"unlimited\"")),
    }
}

fn amount_f64(key: &str, a: &Amount, word: &str) -> Result<Option<f64>, ConfigError> {
    match a {
        Amount::Int(n) => Ok(Some(*n as f64)),
        Amount::Float(f) if *f >= 0.0 => Ok(Some(*f)),
        Amount::Word(w) if w == word => Ok(None),
        _ => Err(invalid(key, &format!("must be a number or \"{word}\""))),
    }
}

fn duration(key: &str, text: &str) -> Result<Duration, ConfigError> {
    humantime::parse_duration(text).map_err(|e| invalid(key, &format!("`{text}` is not a duration ({e})")))
}

fn at_least(key: &str, value: usize, min: usize) -> Result<usize, ConfigError> {
    if value < min {
        return Err(invalid(key, &format!("must be at least {min}")));
    }
    Ok(value)
}

fn invalid(key: &str, message: &str) -> ConfigError {
    ConfigError::Invalid { key: key.to_owned(), message: message.to_owned() }
}

#[cfg(test)]
mod tests;
