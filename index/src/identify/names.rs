//! Persons, in any script, from four signals over the text's words (runs of the
//! analyser's word characters, so a name is never cut at a letter a pattern did not
//! know: "Pavlović", "Anđa", "McCray" are one word each):
//!
//! - a cue before them: an honorific or title ("Dr. Okafor", "mrs ada lovelace", "Herr
//!   Müller"), a label ("Patient: Maria Garcia") or a kinship word ("his wife Anna");
//! - the lexicon: a given name followed by a surname ("Anđa Tomić", "John Q. Smith"), or
//!   "Surname, Given"; the given names and surnames are the
//!   1990 US Census lists and the names ranked in the first thousand of any of 105
//!   countries (`data/`; see NOTICE);
//! - a list of given names ("…, Anna and Andrew");
//! - the parties of a case ("Smith v. Jones").
//!
//! Case rules keep organisations and honorifics apart: a run of capitalised words
//! followed by an institution's or a company's word ("George Washington University",
//! "Müller GmbH"), after "The" ("The Princess Royal"), or a list of surnames ("Skadden,
//! Arps, Slate and Meagher") is not a person; titles (Princess, Duke) are not given names;
//! a cued name stops at an address's word ("Mrs. Barbara Yudina Apt. 675").
//!
//! Words are looked up in hash sets: a lexicon of whole words is a set membership
//! question. The small lists (stop words, cues, particles) are asked of every word;
//! the two big name sets only of a word a rule already has in a name's place (a
//! capitalised word joined to another, in a list, after a cue), so that prose, where
//! most capitals open a sentence, pays for almost none of them.

use std::borrow::Cow;
use std::cell::Cell;
use std::sync::LazyLock;

use rustc_hash::{FxHashMap, FxHashSet};

use super::context::Present;
use super::{IdentifierKind as K, Span};
use crate::text::unicode::is_word_char;

static GIVEN: LazyLock<FxHashSet<&'static str>> =
    LazyLock::new(|| include_str!("data/first_names.txt").lines().chain(include_str!("data/given_intl.txt").lines()).collect());
static SURNAMES: LazyLock<FxHashSet<&'static str>> =
    LazyLock::new(|| include_str!("data/surnames.txt").lines().chain(include_str!("data/surnames_intl.txt").lines()).collect());

/// What a word is, found once per word ([`Word::flags`]).
const GIVEN_NAME: u16 = 1;
const SURNAME: u16 = 1 << 1;
const STOP_WORD: u16 = 1 << 2;
const NOT_A_GIVEN: u16 = 1 << 3;
const HONORIFIC: u16 = 1 << 4;
const KINSHIP: u16 = 1 << 5;
const INSTITUTIONAL: u16 = 1 << 6;
const PARTICLE: u16 = 1 << 7;
const THE: u16 = 1 << 8;
const CONJUNCTION: u16 = 1 << 9;
const TITLE: u16 = 1 << 10;
const SUBJECT: u16 = 1 << 11;

/// The small word lists, each word with the flags of every list it is in.
static SMALL: LazyLock<FxHashMap<&'static str, u16>> = LazyLock::new(|| {
    let mut m: FxHashMap<&'static str, u16> = FxHashMap::default();
    let lists: [(&[&'static str], u16); 10] = [
        (STOP_WORDS, STOP_WORD),
        (NOT_GIVEN, NOT_A_GIVEN),
        (HONORIFICS, HONORIFIC),
        (KIN, KINSHIP),
        (INSTITUTION, INSTITUTIONAL),
        (PARTICLES, PARTICLE),
        (&["the"], THE),
        (&["and", "or", "und", "et", "y", "e", "i", "og", "och", "en"], CONJUNCTION),
        (TITLES, TITLE),
        (&["pt", "patient"], SUBJECT),
    ];
    for (list, flag) in lists {
        for w in list {
            *m.entry(*w).or_default() |= flag;
        }
    }
    m
});

/// For each first byte, a bit per length (below 32) of the words of [`SMALL`]: most
/// words of a text are in none of the small lists, and this says so without hashing.
static SMALL_SHAPES: LazyLock<[u32; 256]> = LazyLock::new(|| shapes(|_| true));

/// The same for a lower-case word, which is never a name's first word without a cue,
/// so that only the cue, particle and joining words' flags matter to it: the stop
/// words that are nothing else ("of", "in", "with", most of a sentence) are left out.
static LOWER_SHAPES: LazyLock<[u32; 256]> = LazyLock::new(|| shapes(|f| f & LOWER_FLAGS != 0));

/// The flags a lower-case word's rules read.
const LOWER_FLAGS: u16 = HONORIFIC | KINSHIP | SUBJECT | INSTITUTIONAL | PARTICLE | THE | CONJUNCTION;

fn shapes(keep: impl Fn(u16) -> bool) -> [u32; 256] {
    let mut m = [0u32; 256];
    for (w, f) in SMALL.iter() {
        if keep(*f) {
            m[usize::from(w.as_bytes()[0])] |= 1 << w.len().min(31);
        }
    }
    m
}

/// The small lists' flags of `k` (a word's [`key`]).
fn small(k: &str) -> u16 {
    let b = k.as_bytes();
    if b.is_empty() || SMALL_SHAPES[usize::from(b[0])] & (1 << b.len().min(31)) == 0 {
        return 0;
    }
    SMALL.get(k).copied().unwrap_or(0)
}

/// Honorifics, in any case ("Dr.", "dr", "DR").
const HONORIFICS: &[&str] = &[
    "mr", "mrs", "ms", "mx", "dr", "prof", "rev", "hon", "sen", "rep", "gov", "capt", "sgt", "lt", "col", "gen", "atty", "fr", "sr", "sra", "srta",
    "mme", "mlle", "herr", "frau", "sig", "dott", "dipl", "ing", "miss", "mister", "madam", "madame", "monsieur", "señor", "señora", "signor",
    "signora", "dona", "doña", "dom",
];

/// Titles that are cues only when capitalised ("Judge Alvarez", not "the judge said").
const TITLES: &[&str] = &[
    "doctor",
    "professor",
    "judge",
    "justice",
    "nurse",
    "officer",
    "detective",
    "sister",
    "brother",
    "father",
    "inspector",
    "sergeant",
    "captain",
    "councillor",
    "senator",
    "minister",
];

/// Kinship and relation words, in any case, before a given name ("wife Anna").
const KIN: &[&str] = &[
    "wife",
    "husband",
    "son",
    "daughter",
    "mother",
    "father",
    "mom",
    "dad",
    "brother",
    "sister",
    "spouse",
    "partner",
    "friend",
    "niece",
    "nephew",
    "grandson",
    "granddaughter",
    "grandmother",
    "grandfather",
    "aunt",
    "uncle",
    "cousin",
    "fiancé",
    "fiance",
    "fiancée",
    "boyfriend",
    "girlfriend",
    "neighbor",
    "neighbour",
    "son-in-law",
    "daughter-in-law",
    "sibling",
    "child",
    "caregiver",
    "proxy",
];

/// Labels ending with a colon ("Patient: …").
const LABELS: &[&str] = &[
    "patient",
    "pt",
    "name",
    "full name",
    "patient name",
    "client",
    "resident",
    "member",
    "insured",
    "guarantor",
    "subscriber",
    "attending",
    "physician",
    "provider",
    "surgeon",
    "referring",
    "signed",
    "signed by",
    "electronically signed by",
    "witness",
    "plaintiff",
    "defendant",
    "petitioner",
    "respondent",
    "appellant",
    "appellee",
    "employee",
    "contact",
    "next of kin",
    "emergency contact",
    "spouse",
    "mother",
    "father",
    "guardian",
    "from",
    "to",
    "cc",
    "author",
    "applicant",
    "customer",
    "recipient",
    "sender",
    "attn",
    "dear",
];

/// Words between a given name and a surname: "Ludwig van Beethoven", "Ana de la Cruz".
const PARTICLES: &[&str] = &[
    "van", "von", "de", "da", "di", "del", "della", "der", "den", "des", "du", "la", "le", "bin", "ibn", "bint", "al", "el", "dos", "das", "do",
    "ter", "ten", "zu", "y", "e", "st",
];

/// Words after a run of capitalised words that make it an institution's, a company's
/// or a place's, in several languages.
const INSTITUTION: &[&str] = &[
    "university",
    "universität",
    "université",
    "universidad",
    "università",
    "college",
    "school",
    "hospital",
    "clinic",
    "klinik",
    "center",
    "centre",
    "institute",
    "institut",
    "foundation",
    "stiftung",
    "memorial",
    "medical",
    "health",
    "inc",
    "corp",
    "corporation",
    "llc",
    "llp",
    "lp",
    "ltd",
    "limited",
    "plc",
    "gmbh",
    "ag",
    "kg",
    "sa",
    "sas",
    "sarl",
    "spa",
    "srl",
    "bv",
    "nv",
    "oy",
    "ab",
    "as",
    "aps",
    "kft",
    "zrt",
    "ltda",
    "pty",
    "pvt",
    "company",
    "co",
    "group",
    "partners",
    "associates",
    "holdings",
    "bank",
    "trust",
    "fund",
    "hall",
    "library",
    "museum",
    "airport",
    "station",
    "building",
    "tower",
    "act",
    "law",
    "award",
    "prize",
    "church",
    "cathedral",
    "stadium",
    "park",
    "county",
    "city",
    "river",
    "lake",
    "mountain",
    "island",
    "bay",
    "valley",
    "beach",
    "street",
    "st",
    "avenue",
    "ave",
    "road",
    "rd",
    "boulevard",
    "blvd",
    "drive",
    "lane",
    "bridge",
    "square",
    "court",
    "ministry",
    "agency",
    "council",
    "committee",
    "commission",
    "department",
    "office",
    "service",
    "services",
    "society",
    "association",
    "union",
    "club",
    "team",
    "press",
    "times",
    "post",
];

/// Capitalised words that are never part of a person's name in a run: sentence words,
/// months and days, address and institution words, titles, note headings.
const STOP_WORDS: &[&str] = &[
    // sentence words
    "the",
    "a",
    "an",
    "and",
    "or",
    "but",
    "nor",
    "of",
    "in",
    "on",
    "at",
    "to",
    "for",
    "by",
    "with",
    "from",
    "into",
    "onto",
    "upon",
    "this",
    "that",
    "these",
    "those",
    "he",
    "she",
    "they",
    "we",
    "i",
    "you",
    "it",
    "his",
    "her",
    "their",
    "our",
    "my",
    "your",
    "its",
    "him",
    "them",
    "us",
    "me",
    "who",
    "whom",
    "whose",
    "what",
    "which",
    "where",
    "when",
    "why",
    "how",
    "if",
    "then",
    "so",
    "as",
    "after",
    "before",
    "during",
    "since",
    "while",
    "although",
    "because",
    "also",
    "yes",
    "no",
    "not",
    "all",
    "some",
    "any",
    "each",
    "every",
    "many",
    "more",
    "most",
    "other",
    "such",
    "there",
    "here",
    "was",
    "is",
    "are",
    "were",
    "be",
    "been",
    "has",
    "had",
    "have",
    "do",
    "did",
    "does",
    "will",
    "would",
    "shall",
    "should",
    "can",
    "could",
    "may",
    "might",
    "must",
    "said",
    "says",
    "per",
    "via",
    "re",
    "dear",
    "hi",
    "hello",
    "thanks",
    "thank",
    "regards",
    "sincerely",
    "today",
    "yesterday",
    "tomorrow",
    "tonight",
    "now",
    "am",
    "pm",
    "ok",
    "okay",
    "please",
    "see",
    "note",
    "notes",
    "noted",
    "reviewed",
    "presented",
    "reports",
    "reported",
    // months and days
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "mon",
    "tue",
    "tues",
    "wed",
    "thu",
    "thur",
    "thurs",
    "fri",
    "sat",
    "sun",
    // address words
    "apt",
    "apartment",
    "suite",
    "ste",
    "unit",
    "floor",
    "fl",
    "room",
    "rm",
    "bldg",
    "box",
    "po",
    "street",
    "st",
    "avenue",
    "ave",
    "road",
    "rd",
    "boulevard",
    "blvd",
    "lane",
    "ln",
    "drive",
    "dr",
    "court",
    "ct",
    "place",
    "pl",
    "way",
    "terrace",
    "circle",
    "parkway",
    "highway",
    "hwy",
    "square",
    "trail",
    "plaza",
    "crescent",
    "close",
    "utca",
    "út",
    "tér",
    "straße",
    "strasse",
    "str",
    "weg",
    "gasse",
    "platz",
    "vej",
    "gade",
    "gata",
    "gatan",
    "vägen",
    "veien",
    "gaten",
    "laan",
    "straat",
    "plein",
    "via",
    "viale",
    "piazza",
    "corso",
    "calle",
    "avenida",
    "rua",
    "rue",
    "chemin",
    "ulica",
    "ul",
    // titles and honorifics
    "mr",
    "mrs",
    "ms",
    "mx",
    "miss",
    "prof",
    "rev",
    "hon",
    "sir",
    "dame",
    "lord",
    "lady",
    "king",
    "queen",
    "prince",
    "princess",
    "duke",
    "duchess",
    "earl",
    "count",
    "countess",
    "baron",
    "baroness",
    "emperor",
    "empress",
    "pope",
    "saint",
    "royal",
    "majesty",
    "highness",
    "president",
    "chairman",
    "chair",
    "ceo",
    "director",
    "manager",
    "senator",
    "governor",
    "mayor",
    "minister",
    "secretary",
    "general",
    "judge",
    "justice",
    "doctor",
    "nurse",
    "officer",
    "detective",
    "professor",
    "captain",
    "sergeant",
    "inspector",
    "chief",
    "attorney",
    "counsel",
    "agent",
    "registrar",
    "deputy",
    "vice",
    "chancellor",
    // institution and place words
    "university",
    "college",
    "school",
    "hospital",
    "clinic",
    "center",
    "centre",
    "institute",
    "foundation",
    "memorial",
    "medical",
    "health",
    "company",
    "group",
    "bank",
    "trust",
    "fund",
    "church",
    "county",
    "city",
    "state",
    "river",
    "lake",
    "mountain",
    "island",
    "bay",
    "valley",
    "beach",
    "harbor",
    "harbour",
    "falls",
    "springs",
    "creek",
    "forest",
    "point",
    "heights",
    "bridge",
    "station",
    "port",
    "grove",
    "lakes",
    "town",
    "gardens",
    "north",
    "south",
    "east",
    "west",
    "government",
    "republic",
    "kingdom",
    "united",
    "national",
    "international",
    "federal",
    "european",
    "american",
    "british",
    "ministry",
    "agency",
    "council",
    "committee",
    "commission",
    "department",
    "office",
    "service",
    "services",
    "society",
    "association",
    "union",
    "club",
    "court",
    "convention",
    "article",
    "section",
    "chapter",
    "part",
    "rule",
    "protocol",
    "law",
    "act",
    "code",
    "province",
    "region",
    "district",
    "prefecture",
    "oblast",
    "municipality",
    "identifier",
    // note and document headings
    "patient",
    "pt",
    "plan",
    "assessment",
    "history",
    "exam",
    "diagnosis",
    "impression",
    "date",
    "time",
    "phone",
    "fax",
    "email",
    "tel",
    "signed",
    "subject",
    "name",
    "address",
    "dob",
    "age",
    "sex",
    "male",
    "female",
    "procedure",
    "facts",
    "the",
    "summary",
    "report",
    "page",
    "total",
    "amount",
    "invoice",
    "order",
    "account",
    "number",
    "id",
    "ref",
    "case",
    "file",
    "table",
    "figure",
    "appendix",
];

/// Capitalised words in the name lists that, at the head of a name, are far more often
/// something else.
const NOT_GIVEN: &[&str] = &[
    "will",
    "may",
    "june",
    "april",
    "august",
    "christian",
    "major",
    "long",
    "young",
    "king",
    "page",
    "hope",
    "grant",
    "chase",
    "dean",
    "frank",
    "mark",
    "bill",
    "case",
    "chance",
    "rich",
    "sky",
    "summer",
    "winter",
    "autumn",
    "dr",
    "in",
    "so",
    "an",
    "see",
    "lane",
    "ray",
    "miles",
    "guy",
    "art",
    "joy",
    "faith",
    "angel",
    "precious",
    "golden",
    "sunny",
    "star",
    "rock",
    "royal",
    "prince",
    "princess",
    "duke",
    "earl",
    "lord",
    "lady",
    "queen",
    "sir",
    "dame",
    "baron",
    "pope",
    "saint",
    "general",
    "major",
    "justice",
    "sterling",
    "monte",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shape {
    /// A capital and then a lower-case letter somewhere: `Smith`, `McCray`, `Ćosić`.
    Cap,
    /// Two or more letters, all capitals: `SMITH`.
    Upper,
    Lower,
    /// Letters of a script with no case (Arabic, Han, Devanagari).
    Caseless,
    /// One capital letter: the `J` of `J. Smith`.
    Initial,
    /// Anything with a digit.
    Other,
}

#[derive(Clone, Copy, Debug)]
struct Word {
    start: usize,
    /// The end without a possessive "'s".
    end: usize,
    shape: Shape,
    /// The small lists the word is in (`STOP_WORD`, `HONORIFIC`, …), looked up once;
    /// the name lists are [`Finder::lists`]'s, looked up when a rule asks.
    flags: u16,
}

impl Word {
    fn is(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }

    /// A word that may be part of a name run: capitalised, all capitals, or of a caseless
    /// script, and no sentence, address, title or institution word.
    fn name_shaped(&self) -> bool {
        matches!(self.shape, Shape::Cap | Shape::Upper | Shape::Caseless) && !self.is(STOP_WORD)
    }
}

/// The words of `text`: runs of word characters, an inner apostrophe or hyphen kept
/// ("O'Brien", "Smith-Jones").
fn words(text: &str) -> Vec<Word> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 6);
    let mut i = 0;
    while i < b.len() {
        // Spaces and punctuation, byte by byte without decoding.
        if b[i] < 0x80 && !b[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let (word, _, n) = word_char_at(text, i);
        if !word {
            i += n;
            continue;
        }
        let start = i;
        let mut ascii = n == 1;
        i += n;
        while i < b.len() {
            if b[i].is_ascii_alphanumeric() {
                i += 1;
                continue;
            }
            let (word, c, n) = word_char_at(text, i);
            // An inner apostrophe or hyphen continues the word ("O'Brien", "Smith-Jones").
            let inner = || matches!(c, '\'' | '’' | '-') && i + n < b.len() && word_char_at(text, i + n).0;
            if !word && !inner() {
                break;
            }
            ascii &= n == 1;
            i += n;
        }
        let end = i - possessive(&b[start..i]);
        let shape = if ascii { ascii_shape(&b[start..end]) } else { shape(&text[start..end]) };
        out.push(Word { start, end, shape, flags: word_flags(&text[start..end], shape) });
    }
    out
}

/// The length of a possessive "'s" (or "’s") that ends the word `w`, 0 if none; a word
/// of two letters or fewer before it keeps it ("I's").
fn possessive(w: &[u8]) -> usize {
    if !matches!(w.last(), Some(b's' | b'S')) {
        return 0;
    }
    let before = &w[..w.len() - 1];
    if before.ends_with(b"'") && w.len() > 3 {
        2
    } else if before.ends_with("’".as_bytes()) && w.len() > 5 {
        4
    } else {
        0
    }
}

/// Whether the character at byte `i` is a word character, and its length; ASCII
/// without decoding.
fn word_char_at(text: &str, i: usize) -> (bool, char, usize) {
    let b = text.as_bytes()[i];
    if b < 0x80 {
        (b.is_ascii_alphanumeric(), b as char, 1)
    } else {
        let (c, n) = char_at(text, i);
        (is_word_char(c), c, n)
    }
}

/// The character at byte `i` and its length; ASCII without decoding.
fn char_at(text: &str, i: usize) -> (char, usize) {
    let b = text.as_bytes()[i];
    if b < 0x80 {
        (b as char, 1)
    } else {
        let c = text[i..].chars().next().expect("a character boundary");
        (c, c.len_utf8())
    }
}

/// The small lists a word is in.
fn word_flags(w: &str, shape: Shape) -> u16 {
    if shape == Shape::Other {
        return 0;
    }
    // Most words are in no small list: an ASCII word's first letter and length say so
    // before it is lower-cased and hashed.
    let b = w.as_bytes();
    let lower = shape == Shape::Lower;
    let table = if lower { &LOWER_SHAPES } else { &SMALL_SHAPES };
    if w.is_ascii() && table[usize::from(b[0].to_ascii_lowercase())] & (1 << b.len().min(31)) == 0 {
        return 0;
    }
    let f = with_key(w, small);
    if lower {
        f & LOWER_FLAGS
    } else {
        f
    }
}

/// The name lists a word that may open or carry a name is in (a lower-case word is
/// looked up there only after a cue: [`lower_name`] does it then).
fn list_flags(w: &str, shape: Shape) -> u16 {
    if matches!(shape, Shape::Lower | Shape::Other) {
        return 0;
    }
    with_key(w, flags) & (GIVEN_NAME | SURNAME)
}

/// `f` of the word's [`key`], a short ASCII word lower-cased on the stack.
fn with_key(w: &str, f: impl Fn(&str) -> u16) -> u16 {
    let mut buf = [0u8; 24];
    if w.is_ascii() && w.len() <= buf.len() {
        buf[..w.len()].copy_from_slice(w.as_bytes());
        buf[..w.len()].make_ascii_lowercase();
        f(std::str::from_utf8(&buf[..w.len()]).expect("ASCII"))
    } else {
        f(&key(w))
    }
}

fn shape(w: &str) -> Shape {
    if w.is_ascii() {
        return ascii_shape(w.as_bytes());
    }
    let mut chars = w.chars().filter(|c| c.is_alphanumeric());
    let Some(first) = chars.next() else { return Shape::Other };
    if w.chars().any(|c| c.is_numeric()) {
        return Shape::Other;
    }
    if first.is_uppercase() {
        let mut lower = false;
        let mut n = 1;
        for c in chars {
            n += 1;
            lower |= c.is_lowercase();
        }
        return if n == 1 {
            Shape::Initial
        } else if lower {
            Shape::Cap
        } else {
            Shape::Upper
        };
    }
    if first.is_lowercase() {
        Shape::Lower
    } else if first.is_alphabetic() {
        Shape::Caseless
    } else {
        Shape::Other
    }
}

/// [`shape`] of an ASCII word, in one pass over its bytes.
fn ascii_shape(b: &[u8]) -> Shape {
    let (mut lower, mut letters) = (0, 0);
    for &c in b {
        if c.is_ascii_digit() {
            return Shape::Other;
        }
        lower += usize::from(c.is_ascii_lowercase());
        letters += usize::from(c.is_ascii_alphabetic());
    }
    match b.iter().find(|c| c.is_ascii_alphabetic()) {
        None => Shape::Other,
        Some(c) if c.is_ascii_lowercase() => Shape::Lower,
        Some(_) if letters == 1 => Shape::Initial,
        Some(_) if lower > 0 => Shape::Cap,
        Some(_) => Shape::Upper,
    }
}

/// The lower-case form the lists hold (a typographic apostrophe made straight).
fn key(w: &str) -> Cow<'_, str> {
    if w.is_ascii() {
        if w.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(w.to_ascii_lowercase())
        } else {
            Cow::Borrowed(w)
        }
    } else {
        Cow::Owned(w.to_lowercase().replace('’', "'"))
    }
}

/// Whether a lower-case word is a given name (and no word a name rarely is): the first
/// word of a name written in lower case after a cue that is no honorific ("his wife
/// anna", "pt john smith").
fn lower_given(w: &str) -> bool {
    let f = flags(&key(w));
    f & GIVEN_NAME != 0 && f & (STOP_WORD | NOT_A_GIVEN) == 0
}

/// Whether a lower-case word is in the name lists (and no word a name rarely is).
fn lower_name(w: &str) -> bool {
    let f = flags(&key(w));
    f & (GIVEN_NAME | SURNAME) != 0 && f & (STOP_WORD | NOT_A_GIVEN) == 0
}

/// The lists `k` (a word's [`key`]) is in.
fn flags(k: &str) -> u16 {
    let mut f = small(k);
    if f & STOP_WORD != 0 || k.len() < 2 {
        return f;
    }
    if GIVEN.contains(k) {
        f |= GIVEN_NAME;
    }
    let hyphenated = || k.split_once('-').is_some_and(|(a, b)| (SURNAMES.contains(a) || GIVEN.contains(a)) && SURNAMES.contains(b));
    if SURNAMES.contains(k) || k.contains('-') && hyphenated() {
        f |= SURNAME;
    }
    f
}

/// Whether an honorific word is used as one: "Dr. Okafor", "dr healey", "MR SMITH";
/// an abbreviation that is also a word or an acronym ("gov", "Col", "SRA") only with its
/// full stop, and no other honorific in capitals.
fn honorific(w: &str, shape: Shape, after: &str) -> bool {
    const COMMON: &[&str] = &["dr", "mr", "mrs", "ms", "miss", "mister", "madam", "madame", "monsieur", "herr", "frau"];
    let k = w.to_ascii_lowercase();
    let common = COMMON.contains(&k.as_str());
    let dotted = after.starts_with('.');
    matches!(after, " " | ". " | "." | "\t" | ". \t") && (common || dotted && shape != Shape::Upper)
}

/// What lies between two words.
fn gap<'t>(text: &'t str, a: &Word, b: &Word) -> &'t str {
    &text[a.end..b.start]
}

/// Whether two words are in one run: one space or tab between them (a form's wider
/// gap separates fields), or ". " after an initial.
fn joined(text: &str, a: &Word, b: &Word) -> bool {
    let g = gap(text, a, b);
    let g = if a.shape == Shape::Initial { g.strip_prefix('.').unwrap_or(g) } else { g };
    matches!(g, " " | "\t") || a.shape == Shape::Initial && g.is_empty() && text[a.end..b.start].starts_with('.')
}

struct Finder<'t> {
    text: &'t str,
    words: Vec<Word>,
    /// Each word's name-list flags once looked up (`UNKNOWN` before).
    lists: Vec<Cell<u16>>,
    /// Which words are already a person's.
    taken: Vec<bool>,
    out: Vec<(usize, usize)>,
}

pub fn find(text: &str, cues: Present, out: &mut Vec<Span>) {
    let words = words(text);
    let n = words.len();
    let mut f = Finder { text, words, lists: vec![Cell::new(UNKNOWN); n], taken: vec![false; n], out: Vec::new() };
    f.cued();
    if cues.versus {
        f.versus();
    }
    f.lexicon();
    f.listed();
    out.extend(f.out.into_iter().map(|(start, end)| Span { kind: K::Person, start, end, counted: true }));
}

/// A word whose name lists have not been looked up yet.
const UNKNOWN: u16 = u16::MAX;

impl Finder<'_> {
    /// Word `i`'s flags, the name lists' with the small lists'.
    fn flags(&self, i: usize) -> u16 {
        let w = self.words[i];
        let mut l = self.lists[i].get();
        if l == UNKNOWN {
            l = list_flags(&self.text[w.start..w.end], w.shape);
            self.lists[i].set(l);
        }
        w.flags | l
    }

    fn given(&self, i: usize) -> bool {
        let f = self.flags(i);
        f & GIVEN_NAME != 0 && f & (NOT_A_GIVEN | STOP_WORD) == 0
    }

    fn surname(&self, i: usize) -> bool {
        self.flags(i) & SURNAME != 0
    }

    /// In a name list, and no word a name is rarely.
    fn name(&self, i: usize) -> bool {
        let f = self.flags(i);
        f & (GIVEN_NAME | SURNAME) != 0 && f & (STOP_WORD | NOT_A_GIVEN) == 0
    }

    fn take(&mut self, from: usize, to: usize) {
        for t in &mut self.taken[from..=to] {
            *t = true;
        }
        self.out.push((self.words[from].start, self.words[to].end));
    }

    /// The names after an honorific, a title, a label or a kinship word.
    fn cued(&mut self) {
        for i in 0..self.words.len() {
            if self.taken[i] || i + 1 >= self.words.len() {
                continue;
            }
            let (w, next) = (self.words[i], self.words[i + 1]);
            if w.flags & (HONORIFIC | TITLE | KINSHIP | SUBJECT) == 0 && !self.text[w.end..].starts_with(':') {
                continue;
            }
            let after = &self.text[w.end..next.start];
            let (cue, max, lower_ok) = if w.is(HONORIFIC) && honorific(&self.text[w.start..w.end], w.shape, after) {
                (true, 4, true)
            } else if w.is(TITLE) && w.shape == Shape::Cap && after == " " {
                (true, 3, false)
            } else if w.is(KINSHIP) && matches!(after, " " | ", " | ": ") {
                (self.given_after_cue(i + 1), 2, true)
            } else if w.is(SUBJECT) && matches!(after, " " | ". ") {
                // "pt john smith", "patient Okafor": a name of the lists, capitalised or
                // in lower case; in capitals the case says nothing ("PT GREEN STOOL").
                let capital = next.shape == Shape::Cap && !next.is(STOP_WORD) && self.name(i + 1);
                (capital || self.given_after_cue(i + 1), 3, true)
            } else {
                (self.label(i, after), 4, true)
            };
            if cue {
                self.name_after(i + 1, max, lower_ok);
            }
        }
    }

    /// Whether word `i`, after a kinship or a subject cue, is a given name: capitalised
    /// ("wife Anna") or, as notes are often written, in lower case ("wife anna").
    fn given_after_cue(&self, i: usize) -> bool {
        let w = self.words[i];
        match w.shape {
            Shape::Lower => lower_given(&self.text[w.start..w.end]),
            Shape::Upper => false,
            _ => self.given(i),
        }
    }

    /// Whether word `i` ends a label ("Patient:", "Next of kin:").
    fn label(&self, i: usize, after: &str) -> bool {
        if !after.starts_with(':') || !after[1..].bytes().all(|c| c == b' ' || c == b'\t') || after.len() > 4 {
            return false;
        }
        let end = self.words[i].end;
        LABELS.iter().any(|l| {
            let from = end.saturating_sub(l.len());
            self.text.is_char_boundary(from)
                && self.text[from..end].eq_ignore_ascii_case(l)
                && self.text[..from].chars().next_back().is_none_or(|c| !is_word_char(c))
        })
    }

    /// Up to `max` name words from word `i` on: capitalised words, initials and
    /// particles, and (after a cue that allows it) lower-case words of the name lists.
    fn name_after(&mut self, i: usize, max: usize, lower_ok: bool) {
        let mut last = None;
        let mut j = i;
        while j < self.words.len() && j < i + max + 1 && !self.taken[j] {
            if j > i && !joined(self.text, &self.words[j - 1], &self.words[j]) {
                break;
            }
            let w = self.words[j];
            // A run keeps its case: an all-capitals word after a capitalised one is a
            // label ("Maria Garcia MRN"), not a name.
            let upper_after_cap = w.shape == Shape::Upper && last.is_some_and(|l: usize| self.words[l].shape == Shape::Cap);
            let ok = match w.shape {
                Shape::Initial => true,
                Shape::Cap | Shape::Upper | Shape::Caseless => !w.is(STOP_WORD) && !upper_after_cap,
                Shape::Lower if w.is(PARTICLE) => last.is_some(),
                Shape::Lower => lower_ok && lower_name(&self.text[w.start..w.end]) && (j == i || last.is_some()),
                Shape::Other => false,
            };
            if !ok {
                break;
            }
            if w.shape != Shape::Initial && !(w.shape == Shape::Lower && w.is(PARTICLE)) {
                last = Some(j);
            }
            j += 1;
        }
        if let Some(l) = last {
            self.take(i, l);
        }
    }

    /// The parties of "Smith v. Jones" that are surnames.
    fn versus(&mut self) {
        for i in 0..self.words.len().saturating_sub(2) {
            let (a, v, b) = (&self.words[i], &self.words[i + 1], &self.words[i + 2]);
            if &self.text[v.start..v.end] != "v" || gap(self.text, a, v) != " " || gap(self.text, v, b) != ". " {
                continue;
            }
            for j in [i, i + 2] {
                let p = self.words[j];
                if !self.taken[j] && p.shape == Shape::Cap && !p.is(STOP_WORD) && self.surname(j) {
                    self.take(j, j);
                }
            }
        }
    }

    /// A given name followed by a surname (or another name of the lists), and
    /// "Surname, Given".
    fn lexicon(&mut self) {
        let mut i = 0;
        while i < self.words.len() {
            let run_start = i == 0 || !(self.words[i - 1].name_shaped() && joined(self.text, &self.words[i - 1], &self.words[i]));
            if let Some(end) = run_start.then(|| self.institution_run(i)).flatten() {
                i = end + 1;
                continue;
            }
            i = match self.pair_at(i).or_else(|| self.inverted_at(i)) {
                Some((from, to)) => {
                    self.take(from, to);
                    to + 1
                }
                None => i + 1,
            };
        }
    }

    fn pair_at(&self, i: usize) -> Option<(usize, usize)> {
        let text = self.text;
        let w = &self.words[i];
        // The cheap checks first: most capitalised words open a sentence and have no
        // name-shaped word after them, so the name sets are never asked.
        if self.taken[i] || !w.name_shaped() || self.after_the(i) {
            return None;
        }
        // Initials and particles between the given name and the surname.
        let mut j = i + 1;
        while j < self.words.len()
            && joined(text, &self.words[j - 1], &self.words[j])
            && (self.words[j].shape == Shape::Initial || self.words[j].shape == Shape::Lower && self.words[j].is(PARTICLE))
        {
            j += 1;
        }
        let s = self.words.get(j)?;
        if self.taken[j] || !joined(text, &self.words[j - 1], s) || !s.name_shaped() {
            return None;
        }
        if !self.given(i) || !self.name(j) {
            return None;
        }
        // More names after it: "John Harding Price".
        let mut last = j;
        while last + 1 < self.words.len()
            && !self.taken[last + 1]
            && joined(text, &self.words[last], &self.words[last + 1])
            && self.words[last + 1].name_shaped()
            && self.name(last + 1)
        {
            last += 1;
        }
        (!self.institution_after(last) && !self.firm(i, last)).then_some((i, last))
    }

    /// "Surname, Given" (not a list of surnames: "Smith, John", not "Smith, Jones and Day").
    fn inverted_at(&self, i: usize) -> Option<(usize, usize)> {
        let (w, g) = (self.words.get(i)?, self.words.get(i + 1)?);
        if self.taken[i] || self.taken[i + 1] || gap(self.text, w, g) != ", " || w.shape != Shape::Cap || g.shape != Shape::Cap {
            return None;
        }
        let ok = !w.is(STOP_WORD) && self.surname(i) && self.given(i + 1);
        (ok && !self.listed_before(i) && !self.listed_after(i + 1) && !self.institution_after(i + 1)).then_some((i, i + 1))
    }

    /// Given names in a list: "Anna and Andrew", "Maria, Ana and José" (each a person);
    /// a list with a word that is no given name is a firm's name and none of them.
    fn listed(&mut self) {
        let mut i = 0;
        while i < self.words.len() {
            // A list first (", " or " and " and a capital), then the name sets.
            if self.words[i].shape != Shape::Cap || self.taken[i] || self.list_next(i).is_none() || !self.given(i) {
                i += 1;
                continue;
            }
            let mut chain = vec![i];
            while let Some(&last) = chain.last() {
                match self.list_next(last) {
                    Some(next) => chain.push(next),
                    None => break,
                }
            }
            let ok = chain.len() >= 2
                && chain.iter().all(|&j| !self.taken[j] && self.words[j].shape == Shape::Cap && self.given(j) && !self.after_the(j))
                && !self.institution_after(*chain.last().unwrap());
            if ok {
                for &j in &chain {
                    self.take(j, j);
                }
            }
            i = chain.last().map_or(i, |&l| l) + 1;
        }
    }

    /// The next capitalised word in a list after word `i` (", ", " and ", " & ", " or ").
    fn list_next(&self, i: usize) -> Option<usize> {
        let (w, n) = (self.words.get(i)?, self.words.get(i + 1)?);
        if !matches!(w.shape, Shape::Cap) {
            return None;
        }
        let g = gap(self.text, w, n);
        if matches!(g, ", " | " & ") && n.shape == Shape::Cap {
            return Some(i + 1);
        }
        let m = self.words.get(i + 2)?;
        let joins = n.is(CONJUNCTION) && n.shape == Shape::Lower;
        (joins && matches!(g, " " | ", ") && gap(self.text, n, m) == " " && m.shape == Shape::Cap).then_some(i + 2)
    }

    /// Whether a capitalised word and ", " come just before word `i` (a list).
    fn listed_before(&self, i: usize) -> bool {
        i > 0 && self.words[i - 1].shape == Shape::Cap && gap(self.text, &self.words[i - 1], &self.words[i]) == ", "
    }

    /// Whether word `i` goes on to a list: ", Capitalised" or " and Capitalised".
    fn listed_after(&self, i: usize) -> bool {
        self.list_next(i).is_some()
    }

    /// The last word of the run of capitalised words from word `i`, if it is an
    /// institution's or a company's name ("Maria Müller GmbH", "George Washington
    /// University"): none of its words is then a person's.
    fn institution_run(&self, i: usize) -> Option<usize> {
        let text = self.text;
        if !self.words[i].name_shaped() {
            return None;
        }
        let mut j = i;
        while j + 1 < self.words.len() && joined(text, &self.words[j], &self.words[j + 1]) && self.words[j + 1].name_shaped() {
            j += 1;
        }
        let last = self.words[j];
        (j > i && last.is(INSTITUTIONAL) && !self.name(j) || self.institution_after(j)).then_some(j)
    }

    /// Whether the word after word `i` makes the run an institution's or a company's.
    fn institution_after(&self, i: usize) -> bool {
        let Some(n) = self.words.get(i + 1) else { return false };
        let g = gap(self.text, &self.words[i], n);
        let close = matches!(g, " " | ", " | " & ");
        close && matches!(n.shape, Shape::Cap | Shape::Upper | Shape::Lower) && n.is(INSTITUTIONAL)
    }

    /// Whether the run from word `from` to `to` is part of a firm's list of surnames
    /// ("Skadden, Arps, Slate, Meagher & Flom").
    fn firm(&self, from: usize, to: usize) -> bool {
        self.listed_before(from) || self.text[self.words[to].end..].starts_with(" & ")
    }

    /// Whether word `i` follows "The" ("The Princess Royal", "The Maria Callas Trio").
    fn after_the(&self, i: usize) -> bool {
        i > 0 && self.words[i - 1].is(THE) && gap(self.text, &self.words[i - 1], &self.words[i]) == " "
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(t: &str) -> Vec<&str> {
        let mut out = Vec::new();
        find(t, super::super::context::present(t), &mut out);
        out.sort_by_key(|s| s.start);
        out.iter().map(|s| &t[s.start..s.end]).collect()
    }

    #[test]
    fn cues_and_the_lexicon_find_persons() {
        assert_eq!(found("Seen by Dr. Okafor today."), ["Okafor"]);
        assert_eq!(found("Patient: Maria Garcia, 54"), ["Maria Garcia"]);
        assert_eq!(found("then John Q. Smith signed"), ["John Q. Smith"]);
        assert_eq!(found("Smith, John was present"), ["Smith, John"]);
    }

    #[test]
    fn institutions_and_words_are_not_persons() {
        assert!(found("at George Washington University").is_empty());
        assert!(found("The Supreme Court held").is_empty());
        assert!(found("Will Power prevailed").is_empty());
    }

    #[test]
    fn names_in_other_languages_are_whole() {
        assert_eq!(found("Mr. Pavlović called"), ["Pavlović"]);
        assert_eq!(found("wrote to Anđa Tomić yesterday"), ["Anđa Tomić"]);
        assert_eq!(found("Ms. McCray arrived"), ["McCray"]);
        assert_eq!(found("Herr Müller und Frau Schäfer"), ["Müller", "Schäfer"]);
        assert_eq!(found("seen by dr healey at noon"), ["healey"]);
    }

    #[test]
    fn a_cued_name_stops_at_an_address() {
        assert_eq!(found("Mrs. Barbara Yudina Apt. 675"), ["Barbara Yudina"]);
    }

    #[test]
    fn given_names_in_a_list_are_persons() {
        assert_eq!(found("with her children, Anna and Andrew"), ["Anna", "Andrew"]);
        assert_eq!(found("his wife Anna came"), ["Anna"]);
    }

    #[test]
    fn lower_case_names_after_a_cue() {
        assert_eq!(found("his wife anna came"), ["anna"]);
        assert_eq!(found("called son david today"), ["david"]);
        assert_eq!(found("pt john smith seen"), ["john smith"]);
        assert_eq!(found("Patient Okafor was seen"), ["Okafor"]);
        assert_eq!(found("Pt. maria garcia here"), ["maria garcia"]);
        assert_eq!(found("Name: mary jones"), ["mary jones"]);
        for t in ["pt was seen", "patient will call", "the patient denies pain", "his wife may come", "pt tolerated well", "son in law"] {
            assert!(found(t).is_empty(), "{t}: {:?}", found(t));
        }
    }

    #[test]
    fn firms_and_titles_are_not_persons() {
        assert!(found("counsel at Skadden, Arps, Slate and Meagher").is_empty(), "{:?}", found("counsel at Skadden, Arps, Slate and Meagher"));
        assert!(found("opened by The Princess Royal").is_empty(), "{:?}", found("opened by The Princess Royal"));
        assert!(found("shares of Maria Müller GmbH").is_empty(), "{:?}", found("shares of Maria Müller GmbH"));
    }
}
