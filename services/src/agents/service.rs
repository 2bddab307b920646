//! What the agents' runs are lent by the server, built once in `App::open`: the
//! records, the tools and secrets, the search service, the parts of the upstreams a
//! model call goes through, the `[agents]` config and the plans. A generation's run
//! (and its expiry, its recovery, the tool calls it makes) takes this, never the app
//! that holds it, so `agents` depends on the pieces below it and nothing above.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::generation::content::Held;
use super::providers::Upstreams;
use super::secrets::Secrets;
use super::tools::Tools;
use crate::config::AgentsConfig;
use crate::llm::manifest::Catalog;
use crate::llm::{Direct, Llm, LocalConfig};
use crate::plans::{Plan, Plans};
use crate::store::Records;

pub struct Service {
    pub records: Arc<Records>,
    pub search: Arc<crate::search::Service>,
    pub tools: Arc<Tools>,
    pub secrets: Arc<Secrets>,
    pub config: AgentsConfig,
    /// `trace_content_mode: none` generations' content, held in this process only.
    pub content: Held,
    /// How many generations each account runs now, across the shards.
    pub running: crate::limits::Gate,
    /// Model routes' circuit breakers (issue 37), shared by the shards.
    pub breakers: super::generation::run::breaker::Breakers,
    /// This node among those sharing the records: whose runs have a live holder.
    pub cluster: Arc<crate::cluster::Cluster>,
    upstream: Upstream,
    plans: Plans,
    default_plan: String,
}

/// What [`Upstreams`] borrows, owned.
pub struct Upstream {
    pub direct: Arc<Direct>,
    pub llm: Option<Arc<Llm>>,
    /// The local model's config (`None` when not configured or not installed).
    pub local: Option<LocalConfig>,
    /// Set while the local model answers (`None` when there is none).
    pub local_ready: Option<Arc<AtomicBool>>,
    pub catalog: Catalog,
}

/// What [`Service::new`] takes.
pub struct Parts {
    pub records: Arc<Records>,
    pub search: Arc<crate::search::Service>,
    pub tools: Arc<Tools>,
    pub secrets: Arc<Secrets>,
    pub config: AgentsConfig,
    pub upstream: Upstream,
    pub plans: Plans,
    pub default_plan: String,
    pub cluster: Arc<crate::cluster::Cluster>,
}

impl Service {
    pub fn new(p: Parts) -> Service {
        Service {
            records: p.records,
            search: p.search,
            tools: p.tools,
            secrets: p.secrets,
            config: p.config,
            content: Held::default(),
            running: Default::default(),
            breakers: Default::default(),
            upstream: p.upstream,
            plans: p.plans,
            default_plan: p.default_plan,
            cluster: p.cluster,
        }
    }

    /// What calls through `/api/v1` AI providers need (`agents::providers`).
    pub fn upstreams(&self) -> Upstreams<'_> {
        let u = &self.upstream;
        Upstreams {
            secrets: &self.secrets,
            direct: &u.direct,
            llm: u.llm.as_deref(),
            // Configured and installed (`local_ready` is `None` otherwise).
            local: u.local.as_ref().filter(|_| u.local_ready.is_some()),
            catalog: &u.catalog,
            ollama_base_url: &self.config.ollama_base_url,
        }
    }

    /// Whether the local model answers yet; `None` when there is none.
    pub fn local_ready(&self) -> Option<bool> {
        self.upstream.local_ready.as_ref().map(|r| r.load(Ordering::Acquire))
    }

    /// The account's plan; an account on a plan since removed from the configuration
    /// gets the default plan.
    pub fn plan(&self, id: &str) -> &Plan {
        self.plans.get(id).or_else(|| self.plans.get(&self.default_plan)).expect("the default plan exists (checked when the config resolved)")
    }
}
