//! The search service: the one way in to collections for every surface (AgentLex, the
//! retrieval plugin) and for evaluate, research and agents to come. Handlers parse,
//! call it, serialize. It owns the rules that hold whoever calls: a collection is
//! found only under its own account, an add is metered only once it is durable, a
//! search spends one of the month's searches, and the engine is asked only what the
//! collection's embedder can answer.

pub mod bulk;
pub mod collections;
pub mod document;
pub mod domain;
pub mod embedders;
pub mod error;
pub mod expand;
pub mod ingest;
pub mod language;
pub mod pool;
pub mod query;
pub mod request;
pub mod rerank;
pub mod searcher;

use std::sync::Arc;

pub use domain::Domain;
use quarry_index::collection::{Collection, Snapshot};
use quarry_index::engine::Engine;
use quarry_index::ingest::Privacy;

use crate::config::IndexConfig;
use crate::limits::meters::Refused;
use crate::limits::{Meter, Meters};
use crate::plans::Plan;
use crate::store::{CollectionRecord, Records};
pub use document::NewDocument;
pub use error::SearchError;
pub use ingest::Added;
pub use query::Searched;
pub use request::{Expand, Request};

/// The domain a request runs in: its own, else its collection's setting, else
/// general (a setting of `auto` names none).
pub fn domain(asked: Option<Domain>, record: &CollectionRecord) -> Domain {
    asked.or_else(|| Domain::parse(&record.settings.domain)).unwrap_or(Domain::General)
}

/// Who is asking: the account, the plan whose allowances it spends, and what its key
/// may read ([`crate::access`]).
#[derive(Clone, Copy)]
pub struct Caller<'a> {
    pub account_id: &'a str,
    pub plan: &'a Plan,
    pub reach: crate::access::Reach,
}

/// A collection as its owner sees it: the record and the open index.
#[derive(Clone)]
pub struct Owned {
    pub record: CollectionRecord,
    pub coll: Arc<Collection>,
}

impl Owned {
    pub fn id(&self) -> &str {
        &self.record.id
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.coll.snapshot()
    }
}

pub struct Service {
    engine: Arc<Engine>,
    ingest: pool::IngestPool,
    records: Arc<Records>,
    meters: Arc<Meters>,
    /// The embedders this server loads and its default.
    embedders: embedders::Loaded,
    index: IndexConfig,
}

impl Service {
    pub fn new(
        engine: Arc<Engine>,
        ingest: pool::IngestPool,
        records: Arc<Records>,
        meters: Arc<Meters>,
        embedders: embedders::Loaded,
        index: IndexConfig,
    ) -> Service {
        Service { engine, ingest, records, meters, embedders, index }
    }

    /// The default embedder new collections get ("none" without one).
    pub fn embedder(&self) -> &str {
        self.embedders.default_id()
    }

    /// The embedders this server loads.
    pub fn embedders(&self) -> &embedders::Loaded {
        &self.embedders
    }

    /// The records store (the `/api/v1` modules' documents' records beside the engine's).
    pub fn records(&self) -> &Arc<Records> {
        &self.records
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Collection `id` from the engine (opened again, its segments fetched, if the
    /// segment cache evicted it, or opened from the shared journal if another node
    /// created it); `None` when the engine has no such collection. An open is file and
    /// network work, so it runs on the blocking pool, not on the shard thread.
    pub async fn collection(&self, id: &str) -> Result<Option<Arc<Collection>>, SearchError> {
        if let Some(c) = self.engine.loaded(id) {
            return Ok(Some(c));
        }
        let (engine, id) = (self.engine.clone(), id.to_owned());
        crate::runtime::blocking(move || engine.get(&id)).await.map_err(SearchError::of_index)
    }

    pub fn index_config(&self) -> &IndexConfig {
        &self.index
    }

    /// The account's collection, or 404 `collection_not_found` (also for another
    /// account's collection: it does not exist for this caller).
    pub async fn owned(&self, account_id: &str, id: &str) -> Result<Owned, SearchError> {
        let not_found = || SearchError::CollectionNotFound(id.to_owned());
        if crate::store::is_hidden_collection(id) {
            return Err(not_found());
        } // agents::memory's and agents::documents' own
        let record = self.records.collection(account_id, id)?.ok_or_else(not_found)?;
        let coll = self.collection(id).await?.ok_or_else(not_found)?;
        Ok(Owned { record, coll })
    }

    /// The account's collection `id` for a caller from outside `/v1` (a builtin tool, a
    /// document message, knowledge): [`Self::owned`] once the caller's key may read
    /// `/v1` data at all, 403 `API_KEY_PROJECT_SCOPE` otherwise. Every such path comes
    /// through here or [`Self::readable_collections`].
    pub async fn readable(&self, caller: Caller<'_>, id: &str) -> Result<Owned, SearchError> {
        Self::reaches(caller)?;
        self.owned(caller.account_id, id).await
    }

    /// Every collection of the account the caller may read, under the same rule.
    pub async fn readable_collections(&self, caller: Caller<'_>) -> Result<Vec<Owned>, SearchError> {
        self.collections_within(caller.account_id, caller.reach).await
    }

    /// The collections of `account_id` a key of `reach` reads: all, or 403.
    pub async fn collections_within(&self, account_id: &str, reach: crate::access::Reach) -> Result<Vec<Owned>, SearchError> {
        Self::reaches_collections(reach)?;
        self.collections(account_id).await
    }

    /// Whether a collection a key of `reach` reads holds the document `id` (403 when
    /// the key reads none): what a request naming a document is checked against.
    pub async fn holds_document(&self, account_id: &str, reach: crate::access::Reach, id: &str) -> Result<bool, SearchError> {
        Ok(self.collections_within(account_id, reach).await?.iter().any(|o| o.snapshot().find(id).is_some()))
    }

    fn reaches(caller: Caller<'_>) -> Result<(), SearchError> {
        Self::reaches_collections(caller.reach)
    }

    fn reaches_collections(reach: crate::access::Reach) -> Result<(), SearchError> {
        if reach.reads_collections() {
            Ok(())
        } else {
            Err(SearchError::OutOfReach)
        }
    }

    /// Every collection of the account, oldest first.
    pub async fn collections(&self, account_id: &str) -> Result<Vec<Owned>, SearchError> {
        let records = self.records.collections_of(account_id)?;
        let mut out = Vec::with_capacity(records.len());
        for record in records {
            if let Some(coll) = self.collection(&record.id).await? {
                out.push(Owned { coll, record });
            }
        }
        Ok(out)
    }

    /// The account's oldest collection named `name` (ids are tried first by
    /// [`Self::owned`]). Only collections of that name are opened: the plugin's `/query`
    /// without a namespace comes here on every request, and an account's other
    /// collections may be cold (evicted, or on a cluster never opened on this node).
    pub async fn by_name(&self, account_id: &str, name: &str) -> Result<Option<Owned>, SearchError> {
        for record in self.records.collections_of(account_id)? {
            if record.name != name {
                continue;
            }
            if let Some(coll) = self.collection(&record.id).await? {
                return Ok(Some(Owned { coll, record }));
            }
        }
        Ok(None)
    }

    /// Creates a collection: the engine directory first, then the record, so a crash in
    /// between leaves a directory no record names, which the next start removes.
    pub async fn create(&self, record: CollectionRecord) -> Result<Owned, SearchError> {
        let (engine, records, r) = (self.engine.clone(), self.records.clone(), record.clone());
        let coll = crate::runtime::blocking(move || -> Result<_, SearchError> {
            let coll = engine.create(&r.id).map_err(SearchError::Index)?;
            records.create_collection(&r)?;
            Ok(coll)
        })
        .await?;
        Ok(Owned { record, coll })
    }

    /// Saves a changed record (name, settings).
    pub async fn update(&self, owned: &Owned) -> Result<(), SearchError> {
        let (records, r) = (self.records.clone(), owned.record.clone());
        crate::runtime::blocking(move || records.update_collection(&r)).await?;
        Ok(())
    }

    /// Deletes a collection and gives its stored characters back. The record first:
    /// once it is gone the collection is gone for every caller, and a crash before the
    /// files are removed leaves a directory the next start removes.
    pub async fn remove(&self, owned: Owned) -> Result<(), SearchError> {
        let chars = owned.snapshot().counts().stored;
        let account = owned.record.account_id.clone();
        let (engine, records) = (self.engine.clone(), self.records.clone());
        crate::runtime::blocking(move || -> Result<(), SearchError> {
            records.delete_collection(&owned.record)?;
            engine.remove(&owned.record.id).map_err(SearchError::Index)
        })
        .await?;
        if let Ok(m) = self.meters.account(&account) {
            let _ = m.try_store(-(chars as i64), None);
        }
        Ok(())
    }

    /// 409 when the collection's vectors come from a model this server does not load.
    pub fn check_embedder(&self, record: &CollectionRecord) -> Result<(), SearchError> {
        self.embedders.for_collection(record).map(drop)
    }

    /// Adds a document under `id` (a new one when `None`): checked against the size
    /// limit and the plan's storage, chunked, embedded, logged; returns once it is
    /// durable and searchable. Storage is reserved before and given back on failure;
    /// pages are counted only once the document is durable.
    pub async fn add(&self, caller: Caller<'_>, owned: &Owned, doc: NewDocument, id: Option<String>) -> Result<Added, SearchError> {
        doc.check(self.index.max_document_bytes)?;
        let settled;
        let owned = if owned.record.embedder == crate::store::AUTO_EMBEDDER && self.embedders.follows_language() {
            settled = self.settle_language(owned, &doc).await?;
            &settled
        } else {
            owned
        };
        let embed = self.embedders.for_collection(&owned.record)?;
        let chars = doc.stored_chars();
        let meters = self.meters.account(caller.account_id)?;
        meters.try_store(chars as i64, caller.plan.stored_chars).map_err(SearchError::Storage)?;
        let id = id.unwrap_or_else(|| format!("doc_{}", crate::ids::random_base62(16)));
        let settings = &owned.record.settings;
        let mut draft = doc.into_draft(id, owned.record.embedder.clone(), crate::clock::now_rfc3339(), &settings.domain);
        draft.privacy = Privacy { mask_embedding: settings.mask_identifiers, redact: settings.redact_storage };
        match ingest::add(&self.ingest, &self.index, owned.coll.clone(), draft, embed).await {
            Ok(added) => {
                meters.count(Meter::PagesIndexed, added.pages as u64);
                // Redaction changes the text's length: storage counts what is stored.
                if added.stored != chars {
                    let _ = meters.try_store(added.stored as i64 - chars as i64, None);
                }
                Ok(added)
            }
            Err(e) => {
                let _ = meters.try_store(-(chars as i64), None);
                Err(e)
            }
        }
    }

    /// A collection whose model follows its language, at its first document: the
    /// document's language chooses the model, recorded before anything is embedded (the
    /// store keeps the first choice when two first documents race).
    async fn settle_language(&self, owned: &Owned, doc: &NewDocument) -> Result<Owned, SearchError> {
        let language = language::detect(&doc.sample_text());
        let embedder = self.embedders.for_language(&language).to_owned();
        let (records, account, id) = (self.records.clone(), owned.record.account_id.clone(), owned.record.id.clone());
        let record = crate::runtime::blocking(move || records.settle_embedder(&account, &id, &embedder, &language)).await?;
        let record = record.ok_or_else(|| SearchError::CollectionNotFound(owned.record.id.clone()))?;
        Ok(Owned { record, coll: owned.coll.clone() })
    }

    /// What adding `doc` would store (`/v1/chunk`): the same size limit and the same
    /// chunking as [`Service::add`], with no collection (so no domain: the document's
    /// own chunker, else detection), no embedding and nothing stored.
    pub async fn preview(&self, doc: NewDocument) -> Result<quarry_index::segment::Batch, SearchError> {
        doc.check(self.index.max_document_bytes)?;
        let draft = doc.into_draft("preview".into(), "none".into(), crate::clock::now_rfc3339(), "auto");
        ingest::preview(&self.ingest, &self.index, draft).await
    }

    /// Deletes a document (at once for searches) and gives its characters back. Returns
    /// its place in the shared journal (0 on a local WAL).
    pub async fn delete(&self, owned: &Owned, doc: &str) -> Result<u64, SearchError> {
        let chars = {
            let snap = owned.snapshot();
            let at = snap.find(doc).ok_or_else(|| SearchError::DocumentNotFound(doc.to_owned()))?;
            snap.stored_chars(at)
        };
        let (coll, d) = (owned.coll.clone(), doc.to_owned());
        let done = self.ingest.run(move |_| coll.delete(&d)).await.map_err(|_| SearchError::WorkerGone)?;
        let seq = done.map_err(SearchError::of_index)?;
        if let Ok(m) = self.meters.account(&owned.record.account_id) {
            let _ = m.try_store(-(chars as i64), None);
        }
        Ok(seq)
    }

    /// Waits until this node has applied the collection's shared journal up to `seq`
    /// (a token a write on any node returned): a read-your-writes read. Immediate on a
    /// local WAL or when the node is there already; otherwise the journal is read.
    pub async fn caught_up(&self, owned: &Owned, seq: u64) -> Result<(), SearchError> {
        if owned.coll.applied() >= seq || !owned.coll.is_shared() {
            return Ok(());
        }
        let coll = owned.coll.clone();
        match crate::runtime::blocking(move || coll.wait_for(seq)).await.map_err(SearchError::of_index)? {
            true => Ok(()),
            false => Err(SearchError::UnknownSeq(seq)),
        }
    }

    /// Spends `n` of the month's searches of the caller's plan (429 when spent),
    /// durable before the searches run (`limits::meters`).
    pub async fn spend_search(&self, caller: Caller<'_>, n: u64) -> Result<(), SearchError> {
        let meters = self.meters.account(caller.account_id)?;
        meters.spend(Meter::Search, n, caller.plan.search).await.map_err(|e| match e {
            Refused::Exceeded(e) => SearchError::Searches {
                needed: n,
                left: e.allowance.saturating_sub(meters.counts().search),
                allowance: e.allowance,
                plan: caller.plan.name.clone(),
            },
            Refused::Store(e) => SearchError::Store(e),
        })?;
        Ok(())
    }

    /// Gives back searches spent on work that failed.
    pub fn refund_searches(&self, caller: Caller<'_>, n: u64) {
        if let Ok(m) = self.meters.account(caller.account_id) {
            m.refund(Meter::Search, n);
        }
    }

    /// One search, metered: the mode settled (keyword without an embedder), one
    /// search spent, the query embedded on this shard's session, the engine asked.
    pub async fn search(
        &self,
        embedders: &std::cell::RefCell<Vec<quarry_index::embed::Embedder>>,
        caller: Caller<'_>,
        owned: &Owned,
        req: &Request,
    ) -> Result<Searched, SearchError> {
        let fresh;
        let owned = if owned.record.embedder == crate::store::AUTO_EMBEDDER && owned.snapshot().counts().documents > 0 {
            // Read before its first document settled the model: read it again, so the
            // query is embedded by the model its vectors came from.
            let record = self.records.collection(&owned.record.account_id, &owned.record.id)?;
            fresh = Owned { record: record.ok_or_else(|| SearchError::CollectionNotFound(owned.record.id.clone()))?, coll: owned.coll.clone() };
            &fresh
        } else {
            owned
        };
        let mode = query::mode_for(self, &owned.record, req)?;
        self.spend_search(caller, 1).await?;
        query::run(self, embedders, &owned.coll, req, mode)
    }

    /// The index's gauges for `/metrics`: collections, live documents, segment files
    /// and write-ahead-log bytes over every collection of the server.
    pub fn gauges(&self) -> Vec<crate::metrics::Gauge> {
        use crate::metrics::Gauge;
        let all = self.engine.all();
        let mut sum = quarry_index::collection::Stats::default();
        for c in &all {
            let s = c.stats();
            sum.documents += s.documents;
            sum.segments += s.segments;
            sum.wal_bytes += s.wal_bytes;
        }
        let mut gauges = vec![
            Gauge { name: "quarry_collections", help: "Collections on this server.", value: self.engine.count() as u64 },
            Gauge { name: "quarry_documents", help: "Live documents over every collection.", value: sum.documents },
            Gauge { name: "quarry_segments", help: "Segment files over every collection.", value: sum.segments },
            Gauge { name: "quarry_wal_bytes", help: "Bytes of write-ahead log over every collection.", value: sum.wal_bytes },
        ];
        if self.engine.is_shared() {
            let f = self.engine.follow_stats();
            gauges.extend([
                Gauge {
                    name: "quarry_journal_following",
                    help: "1 while this node reads the shared journal (0: PostgreSQL out of reach; it serves what it has).",
                    value: u64::from(f.following),
                },
                Gauge {
                    name: "quarry_journal_behind_records",
                    help: "Records other nodes wrote that this node had not applied at its last read of the journal.",
                    value: f.behind,
                },
                Gauge {
                    name: "quarry_maintenance_leases",
                    help: "Collections whose flushes and merges this node holds the lease of.",
                    value: f.leases,
                },
            ]);
        }
        let cache = self.engine.cache();
        if cache.bound > 0 {
            gauges.extend([
                Gauge { name: "quarry_segment_cache_bytes", help: "Segment bytes on local disk (segments in object storage).", value: cache.bytes },
                Gauge { name: "quarry_segment_cache_bound_bytes", help: "The bound on segment bytes local disk keeps.", value: cache.bound },
                Gauge { name: "quarry_segment_cache_cold", help: "Collections whose segments are in object storage only.", value: cache.cold },
                Gauge {
                    name: "quarry_segment_cache_evictions",
                    help: "Collections evicted from the segment cache since start.",
                    value: cache.evictions,
                },
                Gauge {
                    name: "quarry_segment_cache_refetches",
                    help: "Evicted collections opened again, their segments fetched.",
                    value: cache.reopens,
                },
            ]);
        }
        gauges
    }
}
