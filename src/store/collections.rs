//! Collection records: which account owns which collection, its name, settings and
//! embedder.

use redb::{MultimapTableDefinition, ReadableDatabase, ReadableTable, TableDefinition};

use super::error::Op;
use super::{from_json, to_json, CollectionRecord, Records, StoreError};

pub(super) const COLLECTIONS: TableDefinition<&str, &[u8]> = TableDefinition::new("collections");
pub(super) const ACCOUNT_COLLECTIONS: MultimapTableDefinition<&str, &str> = MultimapTableDefinition::new("account_collections");

impl Records {
    pub fn create_collection(&self, c: &CollectionRecord) -> Result<(), StoreError> {
        let txn = self.db.begin_write().op("begin create collection")?;
        {
            let mut table = txn.open_table(COLLECTIONS).op("open collections")?;
            table.insert(c.id.as_str(), to_json(c).as_slice()).op("insert collection")?;
            let mut index = txn.open_multimap_table(ACCOUNT_COLLECTIONS).op("open account collections")?;
            index.insert(c.account_id.as_str(), c.id.as_str()).op("index collection")?;
        }
        txn.commit().op("commit create collection")
    }

    /// The collection when it exists and belongs to `account_id`.
    pub fn collection(&self, account_id: &str, id: &str) -> Result<Option<CollectionRecord>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let table = txn.open_table(COLLECTIONS).op("open collections")?;
        let found = table.get(id).op("read collection")?.map(|v| from_json::<CollectionRecord>("collection", v.value())).transpose()?;
        Ok(found.filter(|c| c.account_id == account_id))
    }

    /// The account's collections, oldest first.
    pub fn collections_of(&self, account_id: &str) -> Result<Vec<CollectionRecord>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let index = txn.open_multimap_table(ACCOUNT_COLLECTIONS).op("open account collections")?;
        let table = txn.open_table(COLLECTIONS).op("open collections")?;
        let mut out = Vec::new();
        for id in index.get(account_id).op("list collections")? {
            let id = id.op("read collection index")?;
            if let Some(v) = table.get(id.value()).op("read collection")? {
                out.push(from_json::<CollectionRecord>("collection", v.value())?);
            }
        }
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        Ok(out)
    }

    /// Every collection id, for opening them at start-up.
    pub fn all_collections(&self) -> Result<Vec<CollectionRecord>, StoreError> {
        let txn = self.db.begin_read().op("begin read")?;
        let table = txn.open_table(COLLECTIONS).op("open collections")?;
        let mut out = Vec::new();
        for row in table.iter().op("list collections")? {
            let (_, v) = row.op("read collection")?;
            out.push(from_json("collection", v.value())?);
        }
        Ok(out)
    }

    /// Replaces a collection's record (name, settings).
    pub fn update_collection(&self, c: &CollectionRecord) -> Result<(), StoreError> {
        let txn = self.db.begin_write().op("begin update collection")?;
        {
            let mut table = txn.open_table(COLLECTIONS).op("open collections")?;
            table.insert(c.id.as_str(), to_json(c).as_slice()).op("update collection")?;
        }
        txn.commit().op("commit update collection")
    }

    pub fn delete_collection(&self, c: &CollectionRecord) -> Result<(), StoreError> {
        let txn = self.db.begin_write().op("begin delete collection")?;
        {
            let mut table = txn.open_table(COLLECTIONS).op("open collections")?;
            table.remove(c.id.as_str()).op("remove collection")?;
            let mut index = txn.open_multimap_table(ACCOUNT_COLLECTIONS).op("open account collections")?;
            index.remove(c.account_id.as_str(), c.id.as_str()).op("unindex collection")?;
        }
        txn.commit().op("commit delete collection")
    }
}
