//! [`Domain`]: what kind of text a collection or a request is about. One closed set for
//! every use of the word on the server: the chunker a collection's documents get, the
//! abbreviation lexicons a search expands with (the engine's own
//! [`quarry_index::expand::Domain`], which has no classical), the guidance a research
//! follows. Each API field accepts the members its spec lists (a search's has no
//! `classical`; a collection's setting adds `auto`, which is no domain: detection per
//! document).

use quarry_index::chunk::Chunker;
use quarry_index::expand;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Domain {
    Medical,
    Legal,
    Classical,
    General,
}

impl Domain {
    /// Every domain, in the order the spec lists them.
    pub const ALL: [Domain; 4] = [Domain::Medical, Domain::Legal, Domain::Classical, Domain::General];

    pub fn as_str(self) -> &'static str {
        match self {
            Domain::Medical => "medical",
            Domain::Legal => "legal",
            Domain::Classical => "classical",
            Domain::General => "general",
        }
    }

    /// The domain named `name`, as the API spells it (`auto` is none).
    pub fn parse(name: &str) -> Option<Domain> {
        Domain::ALL.into_iter().find(|d| d.as_str() == name)
    }

    /// The domain a search runs and answers in: classical has no lexicon of its own
    /// and is searched as general (the search answer's `domain` has no classical).
    pub fn searched(self) -> Domain {
        match self {
            Domain::Classical => Domain::General,
            d => d,
        }
    }

    /// The engine's lexicons for this domain (classical has none of its own).
    pub fn lexicons(self) -> expand::Domain {
        match self {
            Domain::Medical => expand::Domain::Medical,
            Domain::Legal => expand::Domain::Legal,
            Domain::Classical | Domain::General => expand::Domain::General,
        }
    }

    /// The chunker a collection of this domain gives its documents (general is prose).
    pub fn chunker(self) -> Chunker {
        match self {
            Domain::Medical => Chunker::Medical,
            Domain::Legal => Chunker::Legal,
            Domain::Classical => Chunker::Classical,
            Domain::General => Chunker::Prose,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_auto_is_none() {
        for d in Domain::ALL {
            assert_eq!(Domain::parse(d.as_str()), Some(d));
        }
        assert_eq!(Domain::parse("auto"), None);
        assert_eq!(Domain::parse("prose"), None);
        assert_eq!(Domain::Classical.searched(), Domain::General);
        assert_eq!(Domain::General.chunker(), Chunker::Prose);
        assert_eq!(Domain::Classical.lexicons(), expand::Domain::General);
    }
}
