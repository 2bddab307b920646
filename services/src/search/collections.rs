//! A collection made or changed as a client asks it: its id minted, its embedder
//! chosen among the loaded ones (changed only while it is empty), and what a settings
//! change means for the documents already indexed said as warnings, since the change
//! does not touch them (the spec), so a collection never turns mixed silently.

use super::{Owned, SearchError, Service};
use crate::store::{CollectionRecord, CollectionSettings};

/// A collection after a change, and what the change means for its documents.
pub struct Changed {
    pub owned: Owned,
    pub warnings: Vec<String>,
}

impl Service {
    /// Creates the account's collection `name` with `settings`, embedding with the
    /// loaded model `embedder` names (400 for one not loaded), else the one for its
    /// `language` (given, or read from its first document), else the server's default.
    pub async fn create_collection(
        &self,
        account_id: &str,
        name: String,
        settings: CollectionSettings,
        embedder: Option<&str>,
        language: Option<String>,
    ) -> Result<Owned, SearchError> {
        let embedder = self.embedders().choose(embedder, language.as_deref())?;
        let record = CollectionRecord {
            id: format!("col_{}", crate::ids::random_base62(16)),
            account_id: account_id.to_owned(),
            name,
            embedder,
            created_at: crate::clock::now_rfc3339(),
            settings,
            language,
        };
        self.create(record).await
    }

    /// Renames the collection (when `name` is given), gives it `settings` and, when
    /// `embedder` is given, that embedder (while it holds no documents: 409 otherwise),
    /// or when `language` is given, that language and the model it chooses (the same
    /// rule), and saves it.
    pub async fn change_collection(
        &self,
        mut owned: Owned,
        name: Option<String>,
        settings: CollectionSettings,
        embedder: Option<&str>,
        language: Option<String>,
    ) -> Result<Changed, SearchError> {
        if let Some(name) = name {
            owned.record.name = name;
        }
        let documents = owned.snapshot().counts().documents;
        if let Some(asked) = embedder {
            owned.record.embedder = self.embedders().change(&owned.record, asked, documents)?;
        }
        if let Some(language) = language {
            // A language given chooses the model as at creation, unless one is named.
            if embedder.is_none() && self.embedders().follows_language() {
                let chosen = self.embedders().for_language(&language).to_owned();
                owned.record.embedder = self.embedders().change(&owned.record, &chosen, documents)?;
            }
            owned.record.language = Some(language);
        }
        let warnings = changed_on_documents(&owned.record.settings, &settings, documents);
        owned.record.settings = settings;
        self.update(&owned).await?;
        Ok(Changed { owned, warnings })
    }
}

/// What a settings change means for the documents already indexed, which it does not touch.
fn changed_on_documents(old: &CollectionSettings, new: &CollectionSettings, documents: u64) -> Vec<String> {
    let mut out = Vec::new();
    if documents == 0 {
        return out;
    }
    let n = if documents == 1 { "The 1 document already indexed".to_owned() } else { format!("The {documents} documents already indexed") };
    match (old.redact_storage, new.redact_storage) {
        (false, true) => out.push(format!(
            "redact_storage is now on for documents added from now on; {n} keep their stored text as it is (unmasked): delete and add them again to redact them."
        )),
        (true, false) => out.push(format!("redact_storage is now off for documents added from now on; {n} stay redacted (their originals were never stored).")),
        _ => {}
    }
    match (old.mask_identifiers, new.mask_identifiers) {
        (false, true) => out.push(format!(
            "mask_identifiers is now on for documents added from now on; {n} keep the vectors of their unmasked text: add them again to embed them masked."
        )),
        (true, false) => out.push(format!("mask_identifiers is now off for documents added from now on; {n} keep the vectors of their masked text.")),
        _ => {}
    }
    if old.domain != new.domain {
        out.push(format!("domain is now {}; {n} keep the chunker they were indexed with.", new.domain));
    }
    out
}
