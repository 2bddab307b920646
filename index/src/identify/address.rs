//! Street addresses: a house number, one to three capitalised words (or an ordinal:
//! "5th"), a street type from USPS Publication 28's common suffixes, then optionally a
//! unit and a ", City, ST 12345" tail; and post office boxes. Court names are not
//! streets ("3 Supreme Court justices"). Elsewhere the number comes after the street
//! and its type word ("Kálmán Imre u. 12.", "Hauptstraße 5", "Ringvej 144", "Via Roma
//! 12", "ul. Marszałkowska 10"), or before a French one ("12 rue de la Paix").

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use regex::Regex;

use super::context::{compile, digit_windows, free_left};
use super::{IdentifierKind as K, Span};

const SUFFIX: &str = "Street|St|Avenue|Ave|Av|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Way|Terrace|Ter|Circle|Cir|Parkway|Pkwy|Highway|Hwy|Square|Sq|Trail|Trl|Loop|Alley|Plaza|Plz|Crescent|Cres|Close|Path|Pike|Turnpike|Tpke|Expressway|Expy|Freeway|Fwy|Row|Walk|Run|Crossing|Xing|Point|Pt|Ridge|Bend|Heights|Hts";

static ADDRESS: LazyLock<Regex> = LazyLock::new(|| {
    let po_box = r"(?i:P\.?\s?O\.?\s+Box|Post\s+Office\s+Box)\s+\d{1,6}";
    compile(&format!(r"{}|{po_box}", street()))
});

/// [`ADDRESS`]'s streets, anchored at the start: tried at each house number
/// ([`streets`]), it stops where the number's street does not go on.
static STREET_AT: LazyLock<Regex> = LazyLock::new(|| compile(&format!("^(?:{})", street())));

fn street() -> String {
    let number = r"\d{1,6}[A-Z]?(?:-\d{1,4})?";
    let dir = r"(?:N|S|E|W|NE|NW|SE|SW|North|South|East|West)\.?";
    let word = r"(?:[A-Z][a-z]+(?:['-][A-Z]?[a-z]+)?|[A-Z]{2,}|\d{1,3}(?:st|nd|rd|th))";
    let unit = r"(?:,?\s+(?:Apt|Apartment|Suite|Ste|Unit|Fl|Floor|Rm|Room|Bldg)\.?\s*#?\s*[A-Za-z0-9-]{1,6}|,?\s+#\s*[A-Za-z0-9-]{1,6})";
    let tail = r"(?:,\s*[A-Z][a-z]+(?:\s+[A-Z][a-z]+){0,2},?\s+[A-Z]{2}(?:\s+\d{5}(?:-\d{4})?)?)";
    format!(r"{number}\s+(?:{dir}\s+)?(?:{word}\s+){{0,2}}{word}\s+(?:{SUFFIX})\b\.?(?:\s+{dir}(?-u:\b))?{unit}?{tail}?")
}

/// Street addresses outside North America: a street name and its type word, then the
/// house number ("Kálmán Imre u. 12.", "Hauptstraße 5", "Ringvej 144", "Via Roma 12",
/// "ul. Marszałkowska 10/12", "Calle de Alcalá, 45"), or the number first in French
/// ("12 rue de la Paix"); a postcode and a town may follow ("1051 Budapest").
static INTL: LazyLock<Regex> = LazyLock::new(|| {
    let name = r"\p{Lu}[\p{L}\p{M}'’.-]*";
    let names = format!(r"{name}(?:[ \t]+(?:{name}|\d{{1,3}}\.?)){{0,3}}");
    let particles = r"(?:(?:de|del|de la|de las|de los|da|do|dos|das|di|della|delle|degli|du|des|le|la|les|l'|d'|del)[ \t]+)*";
    let number = r"\d{1,5}[A-Za-z]?(?:[/-]\d{1,4}[A-Za-z]?)?";
    let after = r"(?i:utca|u\.|út|útja|tér|körút|krt\.|straße|strasse|str\.|weg|gasse|platz|allee|ring|vej|gade|gata|gatan|vägen|väg|veien|vei|gaten|laan|straat|plein|gracht|kade|steeg|dreef|singel|tie|katu|ulica|cesta|ut|sokak|sokağı|caddesi|cad\.|sk\.)";
    let compound = r"\p{Lu}[\p{Ll}\p{M}]{3,}(?:straße|strasse|str\.|weg|gasse|platz|allee|vej|gade|gata|gatan|vägen|veien|gaten|laan|straat|plein|gracht|katu|tie)";
    let before = r"(?:Via|Viale|Piazza|Piazzale|Corso|Largo|Vicolo|Calle|Carrer|Avenida|Avda\.|Av\.|Paseo|Plaza|Pl\.|Carrera|Camino|Rua|Travessa|Praça|Estrada|Rue|Avenue|Boulevard|Bd|Chemin|Allée|Place|Impasse|Quai|Route|ul\.|ulica|al\.|aleja|os\.|pl\.|ulitsa|ul|prospekt|pr-t|nám\.|náměstí|trg)";
    let french = r"(?i:rue|avenue|av\.|boulevard|bd|chemin|allée|place|impasse|quai|route|cours)";
    let postcode = r"(?:,?[ \t]+(?:\d{4,5}|\d{2}-\d{3}|[A-Z]{1,2}\d[A-Z\d]?[ ]\d[A-Z]{2})[ \t]+\p{Lu}[\p{L}\p{M}-]+)?";
    compile(&format!(
        r"(?:{names}[ \t]+{after}|{compound})[ \t]*,?[ \t]*{number}\.?{postcode}|{before}[ \t]+{particles}{names},?[ \t]+(?:n[º°o]\.?[ \t]*)?{number}{postcode}|{number},?[ \t]+{french}[ \t]+{particles}{names}{postcode}"
    ))
});

static COURT: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"(?:Supreme|District|Appeals|Circuit|Superior|County|Family|Tax|Bankruptcy|High|Claims|Federal|State|Municipal|Probate|Juvenile) Court")
});

pub fn find(text: &str, out: &mut Vec<Span>) {
    international(text, out);
    // Every street starts with a number, a space and a capital or an ordinal ("5th");
    // a box says "box". Neither in the text: no pass.
    let b = text.as_bytes();
    let po_box = memchr::memchr2_iter(b'b', b'B', b).any(|i| b.get(i..i + 3).is_some_and(|w| w.eq_ignore_ascii_case(b"box")));
    let found: Vec<(usize, usize)> = if po_box { ADDRESS.find_iter(text).map(|m| (m.start(), m.end())).collect() } else { streets(text) };
    for (s, mut e) in found {
        let t = &text[s..e];
        if !free_left(text, s) || COURT.is_match(t) {
            continue;
        }
        // The full stop of "St." that ends a sentence is the sentence's.
        if t.ends_with('.') && text.as_bytes().get(e).is_none_or(|c| c.is_ascii_whitespace()) && ends_sentence(text, e) {
            e -= 1;
        }
        out.push(Span { kind: K::Address, start: s, end: e, counted: true });
    }
}

/// The street-type words of [`INTL`]'s layouts, lower case: the regex runs only in a
/// window around one of them that has a digit near it, so prose pays one
/// Aho-Corasick pass and not the regex's (whose Unicode classes open at every capital).
const TYPE_WORDS: &[&str] = &[
    "u.",
    "utca",
    "út",
    "tér",
    "körút",
    "krt.",
    "straße",
    "strasse",
    "str.",
    "weg",
    "gasse",
    "platz",
    "allee",
    "ring",
    "vej",
    "gade",
    "gata",
    "väg",
    "vei",
    "gaten",
    "laan",
    "straat",
    "plein",
    "gracht",
    "kade",
    "steeg",
    "dreef",
    "singel",
    "tie",
    "katu",
    "ulica",
    "cesta",
    "ut",
    "sokak",
    "sokağı",
    "caddesi",
    "cad.",
    "sk.",
    "via",
    "viale",
    "piazza",
    "piazzale",
    "corso",
    "largo",
    "vicolo",
    "calle",
    "carrer",
    "avenida",
    "avda.",
    "av.",
    "paseo",
    "plaza",
    "pl.",
    "carrera",
    "camino",
    "rua",
    "travessa",
    "praça",
    "estrada",
    "rue",
    "avenue",
    "boulevard",
    "bd",
    "chemin",
    "allée",
    "place",
    "impasse",
    "quai",
    "route",
    "cours",
    "ul.",
    "ul",
    "al.",
    "aleja",
    "os.",
    "ulitsa",
    "prospekt",
    "pr-t",
    "nám.",
    "náměstí",
    "trg",
];

static TYPES: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .build(TYPE_WORDS)
        .expect("the street words build")
});

/// The byte windows of `text` around a street-type word with a digit near it, merged.
fn windows(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out: Vec<(usize, usize)> = Vec::new();
    // Not overlapping: a window is what is wanted, and a word inside another ("ut" in
    // "utca") opens the same one. Only near a digit, the only place such a word counts.
    let found = digit_windows(text, 96, 24)
        .into_iter()
        .flat_map(|(from, to)| TYPES.find_iter(&text[from..to]).map(move |m| (from + m.start(), from + m.end())));
    for (s, e) in found {
        let near = |from: usize, to: usize| b[from..to].iter().any(u8::is_ascii_digit);
        if !near(s.saturating_sub(12), s) && !near(e, (e + 80).min(b.len())) {
            continue;
        }
        let (mut from, mut to) = (s.saturating_sub(120), (e + 120).min(b.len()));
        while !text.is_char_boundary(from) {
            from += 1;
        }
        while !text.is_char_boundary(to) {
            to -= 1;
        }
        match out.last_mut() {
            Some(last) if last.1 >= from => last.1 = last.1.max(to),
            _ => out.push((from, to)),
        }
    }
    out
}

fn international(text: &str, out: &mut Vec<Span>) {
    let mut seen = 0;
    for (from, to) in windows(text) {
        for m in INTL.find_iter(&text[from..to]) {
            let (s, e) = (from + m.start(), from + m.end());
            // A match cut by the window's edges is found whole in the window after it, or was before.
            if s < seen || from > 0 && m.start() == 0 || to < text.len() && m.end() == to - from {
                continue;
            }
            seen = e;
            push_international(text, s, e, out);
        }
    }
}

/// An international street found at `s..e`, unless glued to a word before it; a
/// final full stop that ends the sentence left out ("u. 12." keeps the number's).
fn push_international(text: &str, s: usize, mut e: usize, out: &mut Vec<Span>) {
    if !free_left(text, s) {
        return;
    }
    if text[s..e].ends_with('.') && ends_sentence(text, e) && !text[s..e - 1].ends_with(|c: char| c.is_ascii_digit()) {
        e -= 1;
    }
    out.push(Span { kind: K::Address, start: s, end: e, counted: true });
}

/// The streets of [`ADDRESS`] in `text`, looked for only from a token that starts with
/// a digit ("221B", "12-14") and is followed by a space and a capital or a digit, where
/// every street starts: the pattern runs from there to the end of the window's room,
/// and again to the end of the text for a match the room's end cut.
fn streets(text: &str) -> Vec<(usize, usize)> {
    const ROOM: usize = 320;
    let b = text.as_bytes();
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut searched = 0;
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() || i > 0 && b[i - 1].is_ascii_alphanumeric() || i < searched {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'-') {
            j += 1;
        }
        let k = j + b[j..].iter().take_while(|c| c.is_ascii_whitespace()).count();
        if k > j && k < b.len() && (b[k].is_ascii_uppercase() || b[k].is_ascii_digit()) {
            let mut to = (i + ROOM).min(b.len());
            while !text.is_char_boundary(to) {
                to -= 1;
            }
            let m = match STREET_AT.find(&text[i..to]) {
                Some(m) if i + m.end() == to && to < b.len() => STREET_AT.find(&text[i..]),
                m => m,
            };
            if let Some(m) = m {
                out.push((i, i + m.end()));
                searched = i + m.end();
            }
        }
        i = j.max(i + 1);
    }
    out
}

/// Whether what follows `at` starts a new sentence (a capital after spaces, or the end).
fn ends_sentence(text: &str, at: usize) -> bool {
    let rest = text[at..].trim_start();
    rest.is_empty() || rest.starts_with(|c: char| c.is_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(t: &str) -> Vec<&str> {
        let mut out = Vec::new();
        find(t, &mut out);
        out.iter().map(|s| &t[s.start..s.end]).collect()
    }

    #[test]
    fn streets_boxes_and_their_tails() {
        assert_eq!(found("lives at 221B Baker Street, London"), ["221B Baker Street"]);
        assert_eq!(found("1600 Pennsylvania Avenue NW, Washington, DC 20500."), ["1600 Pennsylvania Avenue NW, Washington, DC 20500"]);
        assert_eq!(found("send to P.O. Box 4521 today"), ["P.O. Box 4521"]);
        assert_eq!(found("at 42 Elm St. Then"), ["42 Elm St"]);
        assert!(found("3 Supreme Court justices").is_empty());
        assert!(found("5 Main points").is_empty());
    }

    #[test]
    fn streets_of_other_countries() {
        assert_eq!(found("lakik: Kálmán Imre u. 12. Budapest"), ["Kálmán Imre u. 12."]);
        assert_eq!(found("4823 Ringvej 144"), ["Ringvej 144"]);
        assert_eq!(found("Hauptstraße 5, 10115 Berlin"), ["Hauptstraße 5, 10115 Berlin"]);
        assert_eq!(found("in Via Roma 12 a Milano"), ["Via Roma 12"]);
        assert_eq!(found("ul. Marszałkowska 10/12"), ["ul. Marszałkowska 10/12"]);
        assert_eq!(found("au 12 rue de la Paix"), ["12 rue de la Paix"]);
    }
}
