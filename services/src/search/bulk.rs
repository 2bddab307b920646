//! What a surface that works in batches needs beyond one document or one search at a
//! time (the retrieval plugin's `/upsert`, `/query`, `/delete`): a collection found or
//! created by name, a batch of searches metered as one spend, an upsert by an id kept
//! in the metadata, the documents a filter or a metadata value selects, and many
//! deletes at once.

use std::cell::RefCell;

use quarry_index::embed::Embedder;
use quarry_index::search::{Allowed, Filters};

use super::{query, Added, Caller, NewDocument, Owned, Request, SearchError, Searched, Service};
use crate::store::{CollectionRecord, CollectionSettings};

impl Service {
    /// The account's collection named `name`, created (with this server's embedder, or
    /// the one its first document's language chooses) when it has none. Two first calls racing on two shards may both create one:
    /// the loser sees that an older one exists, removes its own (still empty) and
    /// answers the older, so every caller settles on the same collection.
    pub async fn named_or_created(&self, account_id: &str, name: &str) -> Result<Owned, SearchError> {
        if let Some(found) = self.by_name(account_id, name).await? {
            return Ok(found);
        }
        let record = CollectionRecord {
            id: format!("col_{}", crate::ids::random_base62(16)),
            account_id: account_id.to_owned(),
            name: name.to_owned(),
            embedder: self.embedders().choose(None, None)?,
            created_at: crate::clock::now_rfc3339(),
            settings: CollectionSettings::default(),
            language: None,
        };
        let ours = self.create(record).await?;
        match self.by_name(account_id, name).await? {
            Some(oldest) if oldest.id() != ours.id() => {
                self.remove(ours).await?;
                Ok(oldest)
            }
            _ => Ok(ours),
        }
    }

    /// Adds each document as a new one, then deletes the live documents whose metadata
    /// `key` holds the value it came with: an upsert by a caller's own id kept in the
    /// metadata. (The engine's ids cannot be reused: a tombstone is by id, so a
    /// document added under an id deleted before the next merge would be born dead.)
    /// The new versions are durable before the old ones go: a crash in between leaves
    /// both, never neither. Old versions of a document whose add failed are kept.
    /// Returns what was added and the last journal seq of the whole upsert (0 on a
    /// local WAL), for read-your-writes on a cluster.
    pub async fn upsert_by(
        &self,
        caller: Caller<'_>,
        owned: &Owned,
        key: &str,
        docs: Vec<(String, NewDocument)>,
    ) -> Result<(Vec<Added>, u64), SearchError> {
        // Every document checked before any is added: a refused batch changes nothing.
        for (_, doc) in &docs {
            doc.check(self.index.max_document_bytes)?;
        }
        let values: std::collections::HashSet<&str> = docs.iter().map(|(v, _)| v.as_str()).collect();
        let old = self.by_field(owned, key, &values);
        let values: Vec<String> = docs.iter().map(|(v, _)| v.clone()).collect();
        let added = futures_util::future::join_all(docs.into_iter().map(|(_, doc)| self.add(caller, owned, doc, None))).await;
        let replaced: std::collections::HashSet<&str> = values.iter().zip(&added).filter(|(_, a)| a.is_ok()).map(|(v, _)| v.as_str()).collect();
        let stale: Vec<String> = old.into_iter().filter(|(_, v)| replaced.contains(v.as_str())).map(|(id, _)| id).collect();
        let (_, deleted) = self.delete_many(owned, &stale).await?;
        let added: Vec<Added> = added.into_iter().collect::<Result<_, _>>()?;
        let seq = added.iter().map(|a| a.seq).chain([deleted]).max().unwrap_or(0);
        Ok((added, seq))
    }

    /// The live documents whose metadata `key` holds one of `values` (a string), as
    /// (document id, value).
    pub fn by_field(&self, owned: &Owned, key: &str, values: &std::collections::HashSet<&str>) -> Vec<(String, String)> {
        use quarry_index::segment::ArchivedFieldValue;
        let snap = owned.snapshot();
        let mut out = Vec::new();
        for at in snap.docs() {
            let d = snap.doc(at);
            for f in d.fields.iter().filter(|f| f.key.as_str() == key) {
                if let ArchivedFieldValue::Str(v) = &f.value {
                    if values.contains(v.as_str()) {
                        out.push((d.id.as_str().to_owned(), v.as_str().to_owned()));
                    }
                }
            }
        }
        out
    }

    /// Several searches, metered together: every mode settled first (an error spends
    /// nothing), then one search per request spent at once (429 when the month's
    /// allowance cannot cover them all), then each run in order; searches not run
    /// because one failed are given back.
    pub async fn search_batch(
        &self,
        embedders: &RefCell<Vec<Embedder>>,
        caller: Caller<'_>,
        batch: &[(&Owned, &Request)],
    ) -> Result<Vec<Searched>, SearchError> {
        let modes = batch.iter().map(|(o, r)| query::mode_for(self, &o.record, r)).collect::<Result<Vec<_>, _>>()?;
        let n = batch.len() as u64;
        if n > 0 {
            self.spend_search(caller, n).await?;
        }
        let mut out = Vec::with_capacity(batch.len());
        for ((owned, req), mode) in batch.iter().zip(modes) {
            match query::run(self, embedders, &owned.coll, req, mode) {
                Ok(s) => out.push(s),
                Err(e) => {
                    self.refund_searches(caller, n - out.len() as u64);
                    return Err(e);
                }
            }
            // A batch holds its shard no longer than one search at a time: the requests
            // queued behind it (a health check, another tenant's search) run between.
            futures_lite::future::yield_now().await;
        }
        Ok(out)
    }

    /// The account's collection a namespace names, by id, then by name (404 when
    /// neither); without one, the collection named `default` if it exists yet.
    pub async fn namespace(&self, account_id: &str, ns: Option<&str>, default: &str) -> Result<Option<Owned>, SearchError> {
        match ns {
            None => self.by_name(account_id, default).await,
            Some(ns) => match self.owned(account_id, ns).await {
                Ok(o) => Ok(Some(o)),
                Err(SearchError::CollectionNotFound(_)) => {
                    Ok(Some(self.by_name(account_id, ns).await?.ok_or_else(|| SearchError::CollectionNotFound(ns.to_owned()))?))
                }
                Err(e) => Err(e),
            },
        }
    }

    /// A batch of searches, each in its namespace ([`Service::namespace`], each looked
    /// up once), run as [`Service::search_batch`]; a query whose namespace holds no
    /// collection yet (the default before the first upsert) gets `None`. The queries
    /// come as their parser yields them: the first refusal, a parse's or a lookup's,
    /// in the batch's order, is the answer.
    pub async fn search_namespaces<'q, E: From<SearchError>>(
        &self,
        embedders: &RefCell<Vec<Embedder>>,
        caller: Caller<'_>,
        default: &str,
        queries: impl IntoIterator<Item = Result<(Option<&'q str>, Request), E>>,
    ) -> Result<Vec<Option<Searched>>, E> {
        let mut found: Vec<(Option<&str>, Option<Owned>)> = Vec::new();
        let mut plan: Vec<(Option<usize>, Request)> = Vec::new();
        for q in queries {
            let (ns, req) = q?;
            let at = match found.iter().position(|(n, _)| *n == ns) {
                Some(at) => at,
                None => {
                    found.push((ns, self.namespace(caller.account_id, ns, default).await?));
                    found.len() - 1
                }
            };
            plan.push((found[at].1.is_some().then_some(at), req));
        }
        let batch: Vec<(&Owned, &Request)> = plan.iter().filter_map(|(at, req)| Some((found[(*at)?].1.as_ref()?, req))).collect();
        let mut searched = self.search_batch(embedders, caller, &batch).await?.into_iter();
        Ok(plan.iter().map(|(at, _)| at.and_then(|_| searched.next())).collect())
    }

    /// The ids of the live documents `filters` selects: a document is selected when
    /// one of its pages passes them (dates may be on a page as well as the document).
    pub fn matching(&self, owned: &Owned, filters: &Filters) -> Vec<String> {
        let snap = owned.snapshot();
        let allowed: Vec<Allowed> = snap.views.iter().zip(&snap.dead).map(|(v, d)| Allowed::new(v, d.clone(), filters)).collect();
        snap.docs()
            .filter(|at| {
                let d = snap.doc(*at);
                let first = d.first_page.to_native();
                (first..first + d.pages.to_native()).any(|p| allowed[at.view].page(&snap.views[at.view], p))
            })
            .map(|at| snap.doc(at).id.as_str().to_owned())
            .collect()
    }

    /// The ids of every live document of the collection.
    pub fn document_ids(&self, owned: &Owned) -> Vec<String> {
        let snap = owned.snapshot();
        snap.docs().map(|at| snap.doc(at).id.as_str().to_owned()).collect()
    }

    /// Deletes each of `ids` that is live (the others are skipped), all at once so that
    /// their log records share syncs; returns how many were deleted and the last
    /// journal seq among them (0 on a local WAL).
    pub async fn delete_many(&self, owned: &Owned, ids: &[String]) -> Result<(usize, u64), SearchError> {
        let done = futures_util::future::join_all(ids.iter().map(|id| self.delete(owned, id))).await;
        let (mut deleted, mut last) = (0, 0);
        for r in done {
            match r {
                Ok(seq) => {
                    deleted += 1;
                    last = last.max(seq);
                }
                Err(SearchError::DocumentNotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok((deleted, last))
    }
}
