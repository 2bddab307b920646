//! What a chunk holds: a closed set of kinds, stored per chunk as a 32-bit set.
//!
//! Domain chunkers (hadith, clinical notes, contracts, …) tag chunks with kinds so search
//! can filter and boost by them (`kinds: ["verse"]`). The names are part of the API and
//! the bit positions part of the segment format: append new kinds, never reorder.

/// The kinds a chunk can have, in bit order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Hadith,
    Grading,
    Verse,
    Poetry,
    Footnote,
    Heading,
    Takhrij,
    Agentlex,
    Table,
    List,
    Medication,
    Lab,
    Vital,
    Diagnosis,
    Plan,
    Allergy,
    Citation,
    Definition,
    Clause,
    Date,
    Speaker,
    Code,
}

impl Kind {
    pub const ALL: [Kind; 22] = [
        Kind::Hadith,
        Kind::Grading,
        Kind::Verse,
        Kind::Poetry,
        Kind::Footnote,
        Kind::Heading,
        Kind::Takhrij,
        Kind::Agentlex,
        Kind::Table,
        Kind::List,
        Kind::Medication,
        Kind::Lab,
        Kind::Vital,
        Kind::Diagnosis,
        Kind::Plan,
        Kind::Allergy,
        Kind::Citation,
        Kind::Definition,
        Kind::Clause,
        Kind::Date,
        Kind::Speaker,
        Kind::Code,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Hadith => "hadith",
            Kind::Grading => "grading",
            Kind::Verse => "verse",
            Kind::Poetry => "poetry",
            Kind::Footnote => "footnote",
            Kind::Heading => "heading",
            Kind::Takhrij => "takhrij",
            Kind::Agentlex => "agentlex",
            Kind::Table => "table",
            Kind::List => "list",
            Kind::Medication => "medication",
            Kind::Lab => "lab",
            Kind::Vital => "vital",
            Kind::Diagnosis => "diagnosis",
            Kind::Plan => "plan",
            Kind::Allergy => "allergy",
            Kind::Citation => "citation",
            Kind::Definition => "definition",
            Kind::Clause => "clause",
            Kind::Date => "date",
            Kind::Speaker => "speaker",
            Kind::Code => "code",
        }
    }

    /// The kind named `name` (exact snake-case name), if any.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    fn bit(self) -> u32 {
        1 << self as u32
    }
}

/// A set of [`Kind`]s; bit `i` is `Kind::ALL[i]`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Kinds(pub u32);

impl Kinds {
    pub const EMPTY: Kinds = Kinds(0);

    pub fn from_kinds(kinds: impl IntoIterator<Item = Kind>) -> Kinds {
        kinds.into_iter().fold(Kinds::EMPTY, |set, k| set.with(k))
    }

    pub fn insert(&mut self, kind: Kind) {
        self.0 |= kind.bit();
    }

    /// This set with `kind` added.
    pub fn with(mut self, kind: Kind) -> Kinds {
        self.insert(kind);
        self
    }

    pub fn union(self, other: Kinds) -> Kinds {
        Kinds(self.0 | other.0)
    }

    pub fn contains(self, kind: Kind) -> bool {
        self.0 & kind.bit() != 0
    }

    pub fn intersects(self, other: Kinds) -> bool {
        self.0 & other.0 != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The kinds in the set, in bit order.
    pub fn iter(self) -> impl Iterator<Item = Kind> {
        Kind::ALL.into_iter().filter(move |k| self.contains(*k))
    }

    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(Kind::as_str).collect()
    }
}

impl FromIterator<Kind> for Kinds {
    fn from_iter<I: IntoIterator<Item = Kind>>(iter: I) -> Kinds {
        Kinds::from_kinds(iter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_bits_are_frozen() {
        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "hadith",
                "grading",
                "verse",
                "poetry",
                "footnote",
                "heading",
                "takhrij",
                "agentlex",
                "table",
                "list",
                "medication",
                "lab",
                "vital",
                "diagnosis",
                "plan",
                "allergy",
                "citation",
                "definition",
                "clause",
                "date",
                "speaker",
                "code",
            ]
        );
        for (i, k) in Kind::ALL.iter().enumerate() {
            assert_eq!(k.bit(), 1 << i);
            assert_eq!(Kind::parse(k.as_str()), Some(*k));
        }
        assert_eq!(Kind::parse("Heading"), None);
        assert_eq!(Kind::parse(""), None);
    }

    #[test]
    fn set_operations() {
        let mut set = Kinds::default();
        assert!(set.is_empty());
        set.insert(Kind::Table);
        set.insert(Kind::Date);
        set.insert(Kind::Table);
        assert!(set.contains(Kind::Table) && set.contains(Kind::Date));
        assert!(!set.contains(Kind::Verse));
        assert!(set.intersects(Kinds::from_kinds([Kind::Date, Kind::Code])));
        assert!(!set.intersects(Kinds::from_kinds([Kind::Code])));
        assert_eq!(set.names(), ["table", "date"]);
        assert_eq!(set.iter().collect::<Kinds>(), set);
        assert_eq!(Kinds::from_kinds([Kind::Code]).0, 1 << 21);
    }
}
