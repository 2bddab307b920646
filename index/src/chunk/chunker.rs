//! Which chunker a document gets, and the dispatch to it.
//!
//! A closed set: the name is part of the API (`chunker`, `DocumentCreated.chunker`) and of
//! what a segment stores per document. The request's `chunker` wins, else the collection's
//! `domain`, else [`Chunker::detect`] looks at the document's own text.

use serde_json::{Map, Value};

use super::{classical, legal, medical, prose, ChunkOptions, ChunkSpan};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Chunker {
    Classical,
    Medical,
    Legal,
    #[default]
    Prose,
}

impl Chunker {
    pub const ALL: [Chunker; 4] = [Chunker::Classical, Chunker::Medical, Chunker::Legal, Chunker::Prose];

    pub fn as_str(self) -> &'static str {
        match self {
            Chunker::Classical => "classical",
            Chunker::Medical => "medical",
            Chunker::Legal => "legal",
            Chunker::Prose => "prose",
        }
    }

    /// The chunker named `name`, as the API spells it.
    pub fn parse(name: &str) -> Option<Chunker> {
        Chunker::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// The chunks of one page, in order, non-overlapping; each chunk's `[start, end)`
    /// slices the page text to the chunk's text.
    pub fn chunk(self, page: &str, opts: &ChunkOptions) -> Vec<ChunkSpan> {
        match self {
            Chunker::Classical => classical::chunk(page, opts),
            Chunker::Medical => medical::chunk(page, opts),
            Chunker::Legal => legal::chunk(page, opts),
            Chunker::Prose => prose::chunk_prose(page, opts),
        }
    }

    /// What the chunker found in the whole document: `{ "kind": name }` plus the domain's
    /// own keys (medical: encounterDate, dates, codes, sections; legal: form, citations,
    /// terms, sections). `pages` holds each page's text with its chunks.
    pub fn document_meta(self, pages: &[(&str, &[ChunkSpan])]) -> Map<String, Value> {
        let mut meta = match self {
            Chunker::Classical => classical::document_meta(pages),
            Chunker::Medical => medical::document_meta(pages),
            Chunker::Legal => legal::document_meta(pages),
            Chunker::Prose => Map::new(),
        };
        meta.insert("kind".into(), Value::String(self.as_str().into()));
        meta
    }

    /// The chunker a document's text calls for: classical for Arabic script, medical or
    /// legal when their cues are strong enough, prose otherwise.
    pub fn detect(pages: &[&str]) -> Chunker {
        if arabic_share(pages) >= 0.3 {
            return Chunker::Classical;
        }
        let (medical, legal) = (medical::signal(pages), legal::signal(pages));
        match (medical >= 1.0, legal >= 1.0) {
            (true, true) if medical >= legal => Chunker::Medical,
            (true, true) => Chunker::Legal,
            (true, false) => Chunker::Medical,
            (false, true) => Chunker::Legal,
            (false, false) => Chunker::Prose,
        }
    }
}

/// The share of letters (up to the first 20,000 chars) that are Arabic script.
fn arabic_share(pages: &[&str]) -> f32 {
    let (mut letters, mut arabic) = (0u32, 0u32);
    for c in pages.iter().flat_map(|p| p.chars()).filter(|c| c.is_alphabetic()).take(20_000) {
        letters += 1;
        if matches!(c, '\u{0600}'..='\u{06FF}' | '\u{0750}'..='\u{077F}' | '\u{08A0}'..='\u{08FF}' | '\u{FB50}'..='\u{FDFF}' | '\u{FE70}'..='\u{FEFF}')
        {
            arabic += 1;
        }
    }
    if letters == 0 {
        0.0
    } else {
        arabic as f32 / letters as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for c in Chunker::ALL {
            assert_eq!(Chunker::parse(c.as_str()), Some(c));
        }
        assert_eq!(Chunker::parse("Prose"), None);
        assert_eq!(Chunker::parse("general"), None);
    }

    #[test]
    fn arabic_text_is_classical_and_plain_english_is_prose() {
        assert_eq!(Chunker::detect(&["حدثنا قتيبة قال حدثنا الليث عن نافع"]), Chunker::Classical);
        assert_eq!(Chunker::detect(&["Birds have feathers. Most of them fly."]), Chunker::Prose);
        assert_eq!(Chunker::detect(&[""]), Chunker::Prose);
    }

    #[test]
    fn document_meta_names_the_chunker() {
        let meta = Chunker::Prose.document_meta(&[]);
        assert_eq!(meta.get("kind"), Some(&Value::String("prose".into())));
    }
}
