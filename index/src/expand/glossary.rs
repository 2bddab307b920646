//! A collection's glossary (`settings.glossary`): the organisation's own shorthand,
//! `{"SSA": "Software Services Agreement"}` or a list of up to five long forms, compiled
//! into a [`Lexicon`] that rewrites both ways, as the built-in abbreviations do.

use super::lexicon::{Direction, Entry, Lexicon, Rewrite};

pub struct Glossary(Lexicon);

impl Glossary {
    /// From (term, long forms) pairs; empty terms and forms are left out.
    pub fn new<I, S>(entries: I) -> Glossary
    where
        I: IntoIterator<Item = (S, Vec<S>)>,
        S: AsRef<str>,
    {
        let entries = entries
            .into_iter()
            .filter(|(term, _)| !term.as_ref().trim().is_empty())
            .map(|(term, longs)| Entry {
                short: term.as_ref().trim().to_owned(),
                longs: longs.iter().map(|l| l.as_ref().trim().to_owned()).filter(|l| !l.is_empty()).collect(),
                exact: false,
                ambiguous: false,
            })
            .filter(|e| !e.longs.is_empty())
            .collect();
        Glossary(Lexicon::new(entries, Direction::Both, false))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn rewrites(&self, query: &str) -> Vec<Rewrite> {
        self.0.rewrites(query)
    }
}
