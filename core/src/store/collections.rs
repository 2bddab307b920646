//! Collection records, the first kind on the generic account-owned table ([`Owned`](super::owned::Owned)):
//! which account owns which collection, its name, settings and embedder. The table
//! names are the ones this store has always written, so old data directories read.

use super::owned::owned_record;
use super::{CollectionRecord, Records, StoreError, AUTO_EMBEDDER};

owned_record!(CollectionRecord, "collections", "account_collections");

impl Records {
    pub fn create_collection(&self, c: &CollectionRecord) -> Result<(), StoreError> {
        self.insert(c)
    }

    /// The collection when it exists and belongs to `account_id`.
    pub fn collection(&self, account_id: &str, id: &str) -> Result<Option<CollectionRecord>, StoreError> {
        self.get(account_id, id)
    }

    /// The account's collections, oldest first.
    pub fn collections_of(&self, account_id: &str) -> Result<Vec<CollectionRecord>, StoreError> {
        let mut out: Vec<CollectionRecord> = self.list(account_id)?;
        out.retain(|c| !super::is_hidden_collection(&c.id)); // memory stores' and SOAT documents' are hidden
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        Ok(out)
    }

    /// Every collection, for opening them at start-up.
    pub fn all_collections(&self) -> Result<Vec<CollectionRecord>, StoreError> {
        self.all()
    }

    /// Replaces a collection's record (name, settings). A record read while its embedder
    /// was still [`AUTO_EMBEDDER`] does not undo the embedder a first document settled
    /// meanwhile: the collection's vectors are that model's.
    pub fn update_collection(&self, c: &CollectionRecord) -> Result<(), StoreError> {
        let found = self.update(&c.account_id, &c.id, |r: &mut CollectionRecord| {
            let settled = (r.embedder != AUTO_EMBEDDER && c.embedder == AUTO_EMBEDDER).then(|| (r.embedder.clone(), r.language.clone()));
            *r = c.clone();
            if let Some((embedder, language)) = settled {
                (r.embedder, r.language) = (embedder, language);
            }
            super::owned::Change::Write(())
        })?;
        found.ok_or_else(|| StoreError::Corrupt { what: format!("collection {}", c.id), reason: "updated after it was deleted".into() })
    }

    /// Gives a collection whose embedder is still [`AUTO_EMBEDDER`] the embedder chosen
    /// for `language`, in one transaction, and returns the record as it then stands: the
    /// first caller's choice wins, a later one reads it (two first documents racing on
    /// two shards embed with one model). `None` when the collection is gone.
    pub fn settle_embedder(&self, account_id: &str, id: &str, embedder: &str, language: &str) -> Result<Option<CollectionRecord>, StoreError> {
        self.update(account_id, id, |r: &mut CollectionRecord| {
            if r.embedder != AUTO_EMBEDDER {
                return super::owned::Change::Keep(r.clone());
            }
            r.embedder = embedder.to_owned();
            r.language = Some(language.to_owned());
            super::owned::Change::Write(r.clone())
        })
    }

    pub fn delete_collection(&self, c: &CollectionRecord) -> Result<(), StoreError> {
        self.remove::<CollectionRecord>(&c.account_id, &c.id).map(|_| ())
    }
}
