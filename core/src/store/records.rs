//! The record types kept in the store. Stored as JSON so that fields can be added
//! with defaults without a migration.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountRecord {
    pub id: String,
    pub email: String,
    pub plan: String,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyRecord {
    pub prefix: String,
    pub account_id: String,
    /// SHA-256 of the whole key, hex.
    pub hash: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// One account's counts for one calendar month (UTC).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonthCounts {
    #[serde(default)]
    pub search: u64,
    #[serde(default)]
    pub extract: u64,
    #[serde(default)]
    pub research: u64,
    #[serde(default)]
    pub pages_indexed: u64,
}

impl MonthCounts {
    /// The meters' names, in the order of [`MonthCounts::each_mut`].
    pub const NAMES: [&'static str; 4] = ["search", "extract", "research", "pages_indexed"];

    /// Each count by its meter's name.
    pub fn each_mut(&mut self) -> [(&'static str, &mut u64); 4] {
        let [s, e, r, p] = Self::NAMES;
        [(s, &mut self.search), (e, &mut self.extract), (r, &mut self.research), (p, &mut self.pages_indexed)]
    }
}

/// A new key as the store receives it: never the secret, only what identifies and
/// verifies it.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub prefix: String,
    pub hash: String,
}

/// A collection's record; its documents live in the index engine under
/// `DATA/collections/<id>/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectionRecord {
    pub id: String,
    pub account_id: String,
    pub name: String,
    /// The embedding model its vectors come from ("none" for keyword only, [`AUTO_EMBEDDER`]
    /// until its first document says which language it holds).
    pub embedder: String,
    pub created_at: String,
    pub settings: CollectionSettings,
    /// The language its embedder was chosen for (ISO 639-3: "eng", "jpn", "mul" for mixed
    /// scripts, "und" undetermined), given in `settings.language` or read from its first
    /// documents; `None` for a collection whose embedder was named or is the only one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

/// The embedder of a collection whose model follows its language and whose language is
/// not known yet: the first document added settles it ([`Records::settle_embedder`]).
pub const AUTO_EMBEDDER: &str = "auto";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectionSettings {
    pub mask_identifiers: bool,
    pub redact_storage: bool,
    pub domain: String,
    pub guidance: Option<String>,
    /// Abbreviation → one expansion or several.
    pub glossary: Option<std::collections::BTreeMap<String, serde_json::Value>>,
}

impl Default for CollectionSettings {
    fn default() -> CollectionSettings {
        CollectionSettings { mask_identifiers: false, redact_storage: false, domain: "auto".into(), guidance: None, glossary: None }
    }
}
