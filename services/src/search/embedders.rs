//! Which embedders this server loads, and which one a collection uses. The server loads
//! a set (`embedders`, the default `embedder` among them); a collection records the one
//! it was created with (`settings.embedder`, else the default) and every vector it holds
//! comes from that model. Each shard and each ingest thread holds one session per loaded
//! model in the same order, so a model is found by its slot in that order: nothing is
//! shared or locked on the request path.

use quarry_index::embed::Embedder;
use quarry_index::search::Mode;

use super::SearchError;
use crate::store::{CollectionRecord, AUTO_EMBEDDER};

/// The loaded embedders' ids in load order (a session's slot), the default's slot and
/// the slot of the model English collections take (when it is another one).
#[derive(Debug, Clone)]
pub struct Loaded {
    ids: Vec<String>,
    default: Option<usize>,
    english: Option<usize>,
}

impl Loaded {
    /// `ids` in load order; `default` must be among them (the config checks it), and
    /// `english` too when given.
    pub fn new(ids: Vec<String>, default: Option<&str>) -> Loaded {
        let default = default.map(|d| ids.iter().position(|id| id == d).expect("the default embedder is loaded"));
        Loaded { ids, default, english: None }
    }

    /// English collections that name no model take `english` (the config's
    /// `english_embedder`), others the default; nothing changes when it is `None` or the
    /// default itself.
    pub fn with_english(mut self, english: Option<&str>) -> Loaded {
        self.english = english.map(|e| self.slot(e).expect("the English embedder is loaded")).filter(|e| Some(*e) != self.default);
        self
    }

    /// Whether a new collection's model follows its language (two models to choose from).
    pub fn follows_language(&self) -> bool {
        self.english.is_some() && self.default.is_some()
    }

    /// The model for a collection holding `language` (a code of [`super::language`]).
    pub fn for_language(&self, language: &str) -> &str {
        match self.english {
            Some(e) if super::language::is_english(language) => &self.ids[e],
            _ => self.default_id(),
        }
    }

    /// The default's id, "none" without one.
    pub fn default_id(&self) -> &str {
        self.default.map_or("none", |i| &self.ids[i])
    }

    pub fn has_default(&self) -> bool {
        self.default.is_some()
    }

    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    /// The slot of the session that embeds for `id`, when the server loads it.
    pub fn slot(&self, id: &str) -> Option<usize> {
        self.ids.iter().position(|l| l == id)
    }

    /// What the server loads, for messages: "a, b", or "no embedder".
    pub fn listed(&self) -> String {
        if self.ids.is_empty() {
            "no embedder".to_owned()
        } else {
            self.ids.join(", ")
        }
    }

    /// The embedder a new collection records: the one asked for when loaded (400
    /// `unknown_embedder` naming the loaded ones otherwise); else, when models follow
    /// languages, the one for `language`, or [`AUTO_EMBEDDER`] until its first document
    /// says; else the default.
    pub fn choose(&self, asked: Option<&str>, language: Option<&str>) -> Result<String, SearchError> {
        match (asked, language) {
            (Some(id), _) if self.slot(id).is_some() => Ok(id.to_owned()),
            (Some(id), _) => Err(SearchError::UnknownEmbedder { asked: id.to_owned(), loaded: self.listed() }),
            (None, _) if !self.follows_language() => Ok(self.default_id().to_owned()),
            (None, Some(language)) => Ok(self.for_language(language).to_owned()),
            (None, None) => Ok(AUTO_EMBEDDER.to_owned()),
        }
    }

    /// A PATCH's `settings.embedder`: the same model is a no-op; another loaded one is
    /// taken only while the collection holds no documents (its vectors would mix two
    /// models' spaces), else 409 `embedder_locked`; one not loaded is 400.
    pub fn change(&self, record: &CollectionRecord, asked: &str, documents: u64) -> Result<String, SearchError> {
        if asked == record.embedder {
            return Ok(asked.to_owned());
        }
        let chosen = self.choose(Some(asked), None)?;
        if documents > 0 {
            return Err(SearchError::EmbedderLocked { collection: record.id.clone(), documents, built: record.embedder.clone(), asked: chosen });
        }
        Ok(chosen)
    }

    /// The slot that embeds for the collection (adds and vector searches), or 409 when
    /// the server no longer loads its model. `Ok(None)`: a keyword-only collection on a
    /// server without a default, which needs no model.
    pub fn for_collection(&self, record: &CollectionRecord) -> Result<Option<usize>, SearchError> {
        if let Some(slot) = self.slot(&record.embedder) {
            return Ok(Some(slot));
        }
        if record.embedder == AUTO_EMBEDDER && self.follows_language() {
            // Not settled: it holds no vectors yet (an add settles it before embedding).
            return Ok(self.default);
        }
        if record.embedder == "none" && !self.has_default() {
            return Ok(None);
        }
        Err(self.mismatch(record))
    }

    fn mismatch(&self, record: &CollectionRecord) -> SearchError {
        SearchError::EmbedderMismatch { collection: record.id.clone(), built: record.embedder.clone(), server: self.listed() }
    }

    /// The mode a search of the collection runs in and the slot that embeds its query:
    /// keyword needs none; semantic without the collection's model is 409; hybrid without
    /// it runs on keywords, with the warning returned, except for a keyword-only
    /// collection ("none") on a server with a default embedder, which stays 409 as it
    /// always was.
    pub fn settle(&self, record: &CollectionRecord, mode: Mode) -> Result<(Mode, Option<usize>, Option<String>), SearchError> {
        if mode == Mode::Keyword {
            return Ok((mode, None, None));
        }
        if let Some(slot) = self.slot(&record.embedder) {
            return Ok((mode, Some(slot), None));
        }
        if record.embedder == AUTO_EMBEDDER && self.follows_language() {
            // No document yet, so no vector to find: any model's query finds none.
            return Ok((mode, self.default, None));
        }
        if mode == Mode::Semantic {
            return Err(if record.embedder == "none" && self.ids.is_empty() { SearchError::NoEmbedder } else { self.mismatch(record) });
        }
        let why = if record.embedder == "none" {
            // As before per-collection models (and pinned by the compat fixtures): a
            // keyword-only collection on a server with a default is 409 for hybrid too.
            if self.has_default() {
                return Err(self.mismatch(record));
            }
            "This server runs without an embedder; the search used keywords only.".to_owned()
        } else {
            format!(
                "Collection {} was built with the embedder {}, which this server does not load ({}); the search used keywords only.",
                record.id,
                record.embedder,
                self.listed()
            )
        };
        Ok((Mode::Keyword, None, Some(why)))
    }
}

/// This shard's (or ingest thread's) session in `slot`.
pub fn session(sessions: &mut [Embedder], slot: usize) -> Result<&mut Embedder, SearchError> {
    sessions.get_mut(slot).ok_or(SearchError::NoEmbedder)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(embedder: &str) -> CollectionRecord {
        CollectionRecord {
            id: "col_x".into(),
            account_id: "acc".into(),
            name: "x".into(),
            embedder: embedder.into(),
            created_at: String::new(),
            settings: Default::default(),
            language: None,
        }
    }

    fn both() -> Loaded {
        Loaded::new(vec!["multilingual-e5-small".into(), "all-MiniLM-L6-v2".into()], Some("multilingual-e5-small"))
    }

    #[test]
    fn a_collection_gets_the_model_it_asks_for_among_the_loaded_else_the_default() {
        let l = both();
        assert_eq!(l.choose(None, None).unwrap(), "multilingual-e5-small");
        assert_eq!(l.choose(None, Some("eng")).unwrap(), "multilingual-e5-small", "no English model: the default");
        assert_eq!(l.choose(Some("all-MiniLM-L6-v2"), None).unwrap(), "all-MiniLM-L6-v2");
        let e = l.choose(Some("bge-small"), None).unwrap_err();
        assert!(matches!(&e, SearchError::UnknownEmbedder { .. }));
        assert!(e.to_string().contains("bge-small") && e.to_string().contains("multilingual-e5-small, all-MiniLM-L6-v2"), "{e}");
        assert_eq!(Loaded::new(Vec::new(), None).choose(None, None).unwrap(), "none");
    }

    #[test]
    fn with_an_english_model_a_collection_follows_its_language() {
        let l = both().with_english(Some("all-MiniLM-L6-v2"));
        assert!(l.follows_language());
        assert_eq!(l.choose(None, Some("eng")).unwrap(), "all-MiniLM-L6-v2");
        assert_eq!(l.choose(None, Some("jpn")).unwrap(), "multilingual-e5-small");
        assert_eq!(l.choose(None, Some("mul")).unwrap(), "multilingual-e5-small");
        assert_eq!(l.choose(None, None).unwrap(), AUTO_EMBEDDER, "decided by its first document");
        assert_eq!(l.choose(Some("multilingual-e5-small"), Some("eng")).unwrap(), "multilingual-e5-small", "a named model wins");
        // Until then it embeds nothing, and a search finds no vector with any model.
        assert_eq!(l.for_collection(&record(AUTO_EMBEDDER)).unwrap(), Some(0));
        assert_eq!(l.settle(&record(AUTO_EMBEDDER), Mode::Semantic).unwrap(), (Mode::Semantic, Some(0), None));
        // The same model as the default is no choice.
        assert!(!both().with_english(Some("multilingual-e5-small")).follows_language());
        assert!(matches!(both().for_collection(&record(AUTO_EMBEDDER)), Err(SearchError::EmbedderMismatch { .. })));
    }

    #[test]
    fn a_collection_changes_model_only_while_empty() {
        let l = both();
        let r = record("multilingual-e5-small");
        assert_eq!(l.change(&r, "all-MiniLM-L6-v2", 0).unwrap(), "all-MiniLM-L6-v2");
        assert_eq!(l.change(&r, "multilingual-e5-small", 5).unwrap(), "multilingual-e5-small", "the same model is no change");
        assert!(matches!(l.change(&r, "all-MiniLM-L6-v2", 1), Err(SearchError::EmbedderLocked { documents: 1, .. })));
        assert!(matches!(l.change(&r, "bge-small", 0), Err(SearchError::UnknownEmbedder { .. })));
    }

    #[test]
    fn searches_embed_with_the_collections_own_slot_and_fall_back_only_for_hybrid() {
        let l = both();
        assert_eq!(l.settle(&record("all-MiniLM-L6-v2"), Mode::Hybrid).unwrap(), (Mode::Hybrid, Some(1), None));
        assert_eq!(l.settle(&record("multilingual-e5-small"), Mode::Semantic).unwrap(), (Mode::Semantic, Some(0), None));
        assert_eq!(l.settle(&record("gone"), Mode::Keyword).unwrap(), (Mode::Keyword, None, None));
        assert!(matches!(l.settle(&record("gone"), Mode::Semantic), Err(SearchError::EmbedderMismatch { .. })));
        let (mode, slot, warning) = l.settle(&record("gone"), Mode::Hybrid).unwrap();
        assert_eq!((mode, slot), (Mode::Keyword, None));
        assert!(warning.unwrap().contains("gone"));
        assert!(matches!(l.settle(&record("none"), Mode::Hybrid), Err(SearchError::EmbedderMismatch { .. })));
        let none = Loaded::new(Vec::new(), None);
        assert!(matches!(none.settle(&record("none"), Mode::Semantic), Err(SearchError::NoEmbedder)));
        assert_eq!(none.settle(&record("none"), Mode::Hybrid).unwrap().0, Mode::Keyword);
        assert_eq!(none.for_collection(&record("none")).unwrap(), None);
        assert!(matches!(l.for_collection(&record("none")), Err(SearchError::EmbedderMismatch { .. })));
        assert_eq!(l.for_collection(&record("all-MiniLM-L6-v2")).unwrap(), Some(1));
    }
}
