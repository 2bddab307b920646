//! The state every shard shares: configuration, the records store, the limits, and
//! the per-shard metrics. Immutable after start-up except through atomics and the
//! store, so shards read it without locks.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;

use crate::config::Config;
use crate::limits::{Meters, PerAddress, PerClient};
use crate::metrics::ShardMetrics;
use crate::plans::Plan;
use crate::store::{Records, StoreError};
use quarry_index::embed::{EmbedError, Model};

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("loading model `{id}`: {source}\n{hint}")]
    Model { id: String, source: EmbedError, hint: String },
    #[error("opening the index: {0}")]
    Index(#[from] quarry_index::collection::CollectionError),
    #[error("starting the ingest workers: {0}")]
    Workers(EmbedError),
    #[error("loading reranker `{name}`: {source}")]
    Reranker { name: String, source: EmbedError },
    #[error(transparent)]
    SecretsKey(#[from] crate::agents::secrets::key::KeyError),
    #[error("[segments] store = \"s3\": {0}")]
    Segments(String),
    #[error("this node's name (DATA/NODE): {0}")]
    Node(std::io::Error),
}

pub use crate::version::VERSION;

pub struct App {
    pub config: Config,
    pub records: Arc<Records>,
    pub meters: Arc<Meters>,
    /// The keys' store, buckets, plans and epoch, which every shard's key check reads.
    pub keyring: Arc<crate::auth::Keyring>,
    /// Signups per client address (`auth.signup_per_ip`).
    pub signups: PerAddress,
    /// Failed SOAT logins per client address (`agents::users`): 10 at once, then one a
    /// minute, against password guessing.
    pub logins: PerAddress,
    /// Open connections per client address across the shards (`http.max_connections_per_client`).
    pub connections: Arc<PerClient>,
    /// The embedding models (`embedders`, the default among them), loaded once, in the
    /// order of `search::embedders::Loaded`; each shard and ingest thread opens its own
    /// session of each.
    pub embedders: Vec<Arc<Model>>,
    pub metrics: Vec<ShardMetrics>,
    /// The route table's names, in row order, which label the metrics.
    pub route_names: Vec<&'static str>,
    /// `GET /v1/health` and `GET /v1/plans`, serialized once into static bytes, so a
    /// response clones a pointer, not a refcount every shard shares. Health has two
    /// forms: before and after the local model is ready (see [`App::health_json`]).
    health_json: [Bytes; 2],
    /// This node: its name, and its place in the cluster when the records are shared.
    pub cluster: Arc<crate::cluster::Cluster>,
    pub plans_json: Bytes,
    /// The provider layer; `None` when no provider is configured.
    pub llm: Option<Arc<crate::llm::Llm>>,
    /// The configured rerankers (local ones loaded once; each shard opens its sessions).
    pub rerankers: crate::search::rerank::Rerankers,
    /// Researches running per account (`research.concurrency`).
    pub research_gate: crate::limits::Gate,
    /// The local model, installed and enabled, until `shard::run` starts its supervisor.
    local: std::sync::Mutex<Option<crate::llm::local::Local>>,
    /// Set while the local model answers.
    local_ready: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Every collection's index (the maintenance thread flushes and merges it).
    pub engine: Arc<quarry_index::engine::Engine>,
    /// Collections, documents and search: the one way in for every surface.
    pub search: Arc<crate::search::Service>,
    /// SOAT secrets (sealed values) and tools (definitions, calls).
    pub secrets: Arc<crate::agents::secrets::Secrets>,
    pub tools: Arc<crate::agents::tools::Tools>,
    /// SOAT webhooks: subscriptions, deliveries, and what shard 0's worker sends.
    pub webhooks: Arc<crate::agents::webhooks::Webhooks>,
    /// Where tenants' tools and AI providers may connect (`[egress]`, the local model's
    /// port and, once bound, the server's own kept closed): the tools and the direct
    /// provider client judge every connection by it, the providers' writes too.
    pub egress: Arc<crate::net::egress::Policy>,
    /// What the agents' runs are lent (they never see the app); it also holds the
    /// `/api/v1` AI providers' direct client.
    pub agents: Arc<crate::agents::Service>,
}

#[derive(Serialize)]
struct Health<'a> {
    ok: bool,
    version: &'a str,
    embedder: &'a str,
    /// The model new English collections take (ours), when another than `embedder`.
    #[serde(skip_serializing_if = "Option::is_none")]
    english_embedder: Option<&'a str>,
    /// Every embedder loaded (ours): what a collection's settings.embedder may name.
    embedders: &'a [String],
    rerankers: Vec<String>,
    llm: bool,
    /// `local/<name>` once the local model answers.
    local_model: Option<&'a str>,
    features: Vec<&'a str>,
    /// Which node answered (ours).
    node: &'a str,
}

impl App {
    /// Opens the store `config.store` names (under `config.data` by default); `shards` and the route table's
    /// `route_names` size the metrics.
    pub fn open(config: Config, shards: usize, route_names: Vec<&'static str>) -> Result<App, OpenError> {
        let records = Arc::new(Records::open_with(&config.data, &config.store)?);
        let secrets = Arc::new(crate::agents::secrets::Secrets::open(&config.secrets, &config.data, records.clone())?);
        if records.shared() && config.secrets.key.is_none() {
            tracing::warn!(
                "the records are shared ([store] kind = \"postgres\") but [secrets] key is not set: this node seals secrets with its own \
                 DATA/secrets.key, which other nodes cannot read; give every node the same key (QUARRY_SECRETS__KEY)"
            );
        }
        // Before anything can upload: bytes no file record names (a crash between them).
        match crate::agents::files::sweep(&records, &config.data) {
            Ok(0) => {}
            Ok(n) => tracing::info!(removed = n, "removed file bytes no record names"),
            Err(e) => tracing::warn!(error = %e, "could not sweep unrecorded file bytes"),
        }
        // usage (issue 37): a store whose meters were kept by day gets them by hour, once.
        match crate::agents::usage::rebuild_meters_once(&records) {
            Ok(false) => {}
            Ok(true) => tracing::info!("rebuilt the usage meters from the generations' records"),
            Err(e) => tracing::warn!(error = %e, "could not rebuild the usage meters"),
        }
        let local = config.llm.local.as_ref().and_then(|c| crate::llm::local::Local::prepare(c, &config.data));
        let egress = Arc::new(crate::net::egress::Policy::new(config.egress.allow.clone()).with_local_model(local.as_ref().map(|l| l.port())));
        let tools = Arc::new(crate::agents::tools::Tools::new(records.clone(), secrets.clone(), config.llm.tls_roots.clone(), egress.clone()));
        let mut llm_config = config.llm.clone();
        llm_config.providers.extend(local.as_ref().and_then(|l| l.provider(&config.llm.catalog)));
        let llm = crate::llm::Llm::start(&llm_config)
            .unwrap_or_else(|e| {
                tracing::error!(error = %e, "the provider layer could not start; model calls are off");
                None
            })
            .map(Arc::new);
        let embedders = config.embedders.iter().map(|id| load_model(&config, id)).collect::<Result<Vec<_>, _>>()?;
        let rerankers = crate::search::rerank::Rerankers::load(&config.rerank, &config.models.runtime_library)
            .map_err(|(name, source)| OpenError::Reranker { name, source })?;
        let engine = Arc::new(open_engine(&config, &records)?);
        reconcile_stored_chars(&records, &engine)?;
        let workers = if config.index.workers == 0 { shards } else { config.index.workers };
        let ingest = crate::search::pool::IngestPool::start(workers, &embedders).map_err(OpenError::Workers)?;
        let meters = Arc::new(Meters::new(records.clone()));
        // From here every write of an account's records is charged to its stored characters.
        let ledger = crate::limits::StorageLedger::new(meters.clone(), config.plans.clone(), config.auth.default_plan.clone());
        records.set_ledger(Arc::new(ledger));
        let loaded = crate::search::embedders::Loaded::new(config.embedders.clone(), config.embedder.as_deref())
            .with_english(config.english_embedder.as_deref());
        let search = Arc::new(crate::search::Service::new(engine.clone(), ingest, records.clone(), meters.clone(), loaded, config.index.clone()));
        let local_model = local.as_ref().map(|l| l.model_id());
        let cluster = crate::cluster::Cluster::open(&config.cluster, &config.data, records.shared(), &crate::agents::generation::record::BOOT)
            .map_err(OpenError::Node)?;
        let cluster = Arc::new(cluster);
        let health = |local_ready: bool| {
            let remote = !config.llm.providers.is_empty();
            let llm_up = llm.is_some() && (remote || local_ready);
            let mut features =
                vec!["keys", "rate_limits", "collections", "documents", "chunk", "search", "scan", "evaluate", "sample", "retrieval_plugin"];
            if llm.is_some() {
                features.push("gateway");
            }
            if llm_up {
                features.extend(["extract", "research"]);
            }
            let h = Health {
                ok: true,
                version: VERSION,
                embedder: config.embedder.as_deref().unwrap_or("none"),
                english_embedder: config.english_embedder.as_deref(),
                embedders: &config.embedders,
                rerankers: rerankers.names(),
                llm: llm_up,
                local_model: local_model.as_deref().filter(|_| local_ready),
                features,
                node: &cluster.node,
            };
            leak(serde_json::to_vec(&h).expect("health serializes"))
        };
        let keyring = Arc::new(crate::auth::Keyring::new(records.clone(), config.plans.clone(), config.auth.default_plan.clone()));
        let local_ready = local.as_ref().map(|l| l.ready());
        let agents = Arc::new(crate::agents::Service::new(crate::agents::service::Parts {
            records: records.clone(),
            search: search.clone(),
            tools: tools.clone(),
            secrets: secrets.clone(),
            config: config.agents.clone(),
            upstream: crate::agents::service::Upstream {
                direct: Arc::new(crate::llm::Direct::new(&config.llm, egress.clone())),
                llm: llm.clone(),
                local: config.llm.local.clone(),
                local_ready: local_ready.clone(),
                catalog: config.llm.catalog.clone(),
            },
            plans: config.plans.clone(),
            default_plan: config.auth.default_plan.clone(),
            cluster: cluster.clone(),
        }));
        let webhooks = Arc::new(crate::agents::webhooks::Webhooks::new(records.clone(), tools.clone()));
        Ok(App {
            webhooks,
            health_json: [health(false), health(true)],
            cluster,
            local_ready,
            local: std::sync::Mutex::new(local),
            plans_json: leak(serde_json::to_vec(&config.plans).expect("plans serialize")),
            meters,
            records,
            keyring,
            signups: PerAddress::new(config.auth.signup_per_ip),
            logins: PerAddress::new(Some(crate::limits::Pace::per_hour(10, 60))),
            connections: PerClient::new(config.http.max_connections_per_client),
            embedders,
            metrics: (0..shards).map(|_| ShardMetrics::new(route_names.len())).collect(),
            route_names,
            llm,
            rerankers,
            research_gate: Default::default(),
            engine,
            search,
            secrets,
            tools,
            egress,
            agents,
            config,
        })
    }

    /// `GET /v1/health`'s body as things stand.
    pub fn health_json(&self) -> Bytes {
        let ready = self.local_ready.as_ref().is_some_and(|r| r.load(Ordering::Acquire));
        let body = self.health_json[usize::from(ready)].clone();
        match self.cluster.view() {
            // With shared records, the cluster as this node sees it (read per request:
            // a balancer's check, not a hot path).
            Some(view) => {
                let mut h: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&body).expect("health is a JSON object");
                h.insert("cluster".into(), serde_json::to_value(view).expect("serializes"));
                Bytes::from(serde_json::to_vec(&h).expect("serializes"))
            }
            None => body,
        }
    }

    /// What an evaluation searches with (`evaluate`).
    pub fn evaluation(&self) -> crate::evaluate::Services<'_> {
        crate::evaluate::Services { search: &self.search, rerankers: &self.rerankers, llm: self.llm.as_deref() }
    }

    /// What the identity service reads and writes (`identity`).
    pub fn accounts(&self) -> crate::identity::Accounts<'_> {
        crate::identity::Accounts {
            records: &self.records,
            keyring: &self.keyring,
            meters: &self.meters,
            signups: &self.signups,
            auth: &self.config.auth,
            plans: &self.config.plans,
        }
    }

    /// Whether the local model answers yet; `None` when there is none.
    /// What calls through `/api/v1` AI providers need (`agents::providers`).
    pub fn upstreams(&self) -> crate::agents::providers::Upstreams<'_> {
        self.agents.upstreams()
    }

    pub fn local_ready(&self) -> Option<bool> {
        self.local_ready.as_ref().map(|r| r.load(Ordering::Acquire))
    }

    /// The local model's supervisor, started once (`shard::run`); it stops the model
    /// once `stop` is set.
    pub fn start_local_model(&self, stop: Arc<std::sync::atomic::AtomicBool>) -> Option<crate::llm::local::Supervisor> {
        let local = self.local.lock().expect("not poisoned").take()?;
        Some(local.start(stop))
    }

    /// The account's plan; an account on a plan since removed from the configuration
    /// gets the default plan.
    pub fn plan(&self, id: &str) -> &Plan {
        self.config.plans.get_or(id, &self.config.auth.default_plan)
    }

    /// Writes the usage meters; called every `meters.flush_interval` and at shutdown.
    /// At shutdown, once every shard has stopped: every meter written and every unspent
    /// lease given back (`limits::meters`).
    pub fn release_meters(&self) {
        match self.meters.release() {
            Ok(n) => tracing::debug!(accounts = n, "usage meters written, leases released"),
            Err(e) => tracing::error!(error = %e, "usage meters could not be written at shutdown; their leases stay spent"),
        }
    }

    pub fn flush_meters(&self) {
        match self.meters.flush() {
            Ok(n) if n > 0 => tracing::debug!(accounts = n, "usage meters flushed"),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "usage meters could not be flushed; will retry"),
        }
    }

    pub fn bump_key_epoch(&self) {
        self.keyring.bump_epoch();
    }
}

/// Opens every recorded collection, logging what recovery found.
fn open_engine(config: &Config, records: &Arc<Records>) -> Result<quarry_index::engine::Engine, OpenError> {
    let started = std::time::Instant::now();
    let ids: Vec<String> = records.all_collections()?.into_iter().map(|c| c.id).collect();
    let i = &config.index;
    let opts = quarry_index::collection::Options {
        failpoint: config.failpoint,
        flush_batches: i.flush_batches,
        flush_chunks: i.flush_chunks,
        max_segments: i.max_segments,
        hnsw_min_rows: quarry_index::vector::HNSW_MIN_ROWS,
    };
    let root = config.data.join("collections");
    let objects = match &config.segments {
        quarry_core::segments::SegmentSettings::Local => None,
        quarry_core::segments::SegmentSettings::S3(s3) => {
            let objects = quarry_core::segments::S3Objects::open(s3).map_err(OpenError::Segments)?;
            tracing::info!(at = %objects.describe(), cache_bytes = s3.cache_bytes, "segments are published in object storage");
            // Records in PostgreSQL and segments in a bucket: the write-ahead log goes
            // to PostgreSQL too, and every node serves every collection (issue 40).
            let boot = crate::agents::generation::record::BOOT.as_str();
            let journal = quarry_core::store::journal::SharedJournal::open(records.clone(), boot, config.cluster.node_timeout)
                .map(|j| Arc::new(j) as Arc<dyn quarry_index::journal::Journal>);
            if let Some(j) = &journal {
                tracing::info!(at = %j.describe(), "the write-ahead log is the shared journal");
            }
            Some(quarry_index::engine::Bucket { objects, cache_bytes: s3.cache_bytes, journal })
        }
    };
    let (engine, opened) = quarry_index::engine::Engine::open_with(&root, ids.iter().map(String::as_str), opts, objects)?;
    for o in &opened {
        let r = &o.recovery;
        if let Some(t) = &r.torn_tail {
            tracing::warn!(collection = %o.id, path = %t.path.display(), offset = t.offset, dropped_bytes = t.dropped_bytes, reason = %t.reason,
                "cut a torn WAL tail (writes that were never acknowledged)");
        }
        for f in &r.removed_files {
            tracing::info!(collection = %o.id, path = %f.display(), "removed a file no manifest names");
        }
    }
    tracing::info!(collections = opened.len(), ms = started.elapsed().as_millis() as u64, "index opened");
    Ok(engine)
}

/// Sets each account's stored characters to what it keeps: the stored characters of
/// the live documents of its collections (text, metadata, labels) and its records'
/// characters (`store::charges`, counted in each write's own transaction). The meter
/// reserves a document's characters before it is added and is flushed every second,
/// so a crash leaves it counting documents that were in flight and never
/// acknowledged, or missing ones acknowledged since the last flush; the index and the
/// records' count are the truth.
fn reconcile_stored_chars(records: &Records, engine: &quarry_index::engine::Engine) -> Result<(), StoreError> {
    let mut truth = std::collections::BTreeMap::<String, u64>::new();
    for c in records.all_collections()? {
        // Every collection is open at start-up: the cache evicts only in the background.
        let chars = engine.get(&c.id).ok().flatten().map_or(0, |coll| coll.snapshot().counts().stored);
        *truth.entry(c.account_id).or_default() += chars;
    }
    for (account, chars) in records.record_chars()? {
        *truth.entry(account).or_default() += chars;
    }
    for (account, metered, stored) in records.reconcile_stored_chars(&truth)? {
        tracing::warn!(account = %account, metered, stored, "stored characters recounted from the index");
    }
    Ok(())
}

/// Bytes that live as long as the process (a few, made once at start-up).
fn leak(bytes: Vec<u8>) -> Bytes {
    Bytes::from_static(Box::leak(bytes.into_boxed_slice()))
}

fn load_model(config: &Config, id: &str) -> Result<Arc<Model>, OpenError> {
    let m = &config.models;
    let started = std::time::Instant::now();
    let model = Model::load(&m.dir, &m.runtime_library, id, m.precision).map_err(|source| OpenError::Model {
        id: id.to_owned(),
        source,
        hint: where_models_are(m),
    })?;
    tracing::info!(model = id, precision = m.precision.as_str(), ms = started.elapsed().as_millis() as u64, "model loaded");
    Ok(Arc::new(model))
}

/// Which paths a failed model load tried and how to point the server elsewhere.
fn where_models_are(m: &crate::config::ModelsConfig) -> String {
    let from = match &m.installation {
        Some(root) => format!("relative settings are taken from the installation at {}", root.display()),
        None => "no installation was found beside the executable, so relative settings are taken from the working directory".to_owned(),
    };
    format!(
        "tried models.dir = {} and models.runtime_library = {} ({from}); set `dir` and `runtime_library` under [models] \
         in the config file, or QUARRY_MODELS__DIR and QUARRY_MODELS__RUNTIME_LIBRARY, to where ops/setup installed them, \
         or set embedder = \"none\" (QUARRY_EMBEDDER=none) to run without a model",
        m.dir.display(),
        m.runtime_library.display()
    )
}
