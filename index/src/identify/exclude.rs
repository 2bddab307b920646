//! What only looks like an identifier: GUIDs and hashes, version numbers, prices, legal
//! citations (`347 U.S. 483`, `42 U.S.C. § 1983`, `Pub. L. 111-148`), ISBNs and ISSNs. Their
//! byte ranges are zones no number-shaped identifier (ssn, phone, card, npi, passport,
//! mrn, ip, date) may touch.

use std::sync::LazyLock;

use regex::Regex;

use super::context::{compile, digit_windows, find_in};

static ZONES: LazyLock<Regex> = LazyLock::new(|| {
    let guid = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}";
    let hash = r"(?-u:\b)[0-9a-f]{20,}(?-u:\b)";
    let version =
        r"(?i:(?-u:\b)(?:v|ver\.?|version|release|build|rev\.?|revision|firmware|kernel|python|java|node|api)\s?)\d+(?:\.\d+)+(?:[-+][0-9A-Za-z.]+)?";
    let dotted = r"(?-u:\b)\d+(?:\.\d+){4,}";
    let price =
        r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:[mb]illion|[MBK]))?|(?-u:\b)\d[\d,]*(?:\.\d{1,2})?\s?(?:USD|EUR|GBP|dollars|cents|euros)(?-u:\b)";
    let reporters = r"U\.\s?S\.(?:\s?C\.(?:\s?[AS]\.)?)?|S\.\s?Ct\.|L\.\s?Ed\.(?:\s?2d)?|F\.(?:\s?(?:2d|3d|4th)|\s?Supp\.(?:\s?(?:2d|3d))?|\s?App'x)?|C\.\s?F\.\s?R\.|Stat\.|Fed\.\s?Reg\.|(?:P|A|N\.\s?E|N\.\s?W|S\.\s?E|S\.\s?W|So)\.(?:\s?(?:2d|3d))?|Cal\.\s?(?:Rptr\.|App\.)(?:\s?(?:2d|3d|4th|5th))?|N\.\s?Y\.(?:\s?S\.)?(?:\s?(?:2d|3d))?|B\.\s?R\.|T\.\s?C\.|Vet\.\s?App\.|M\.\s?J\.|WL|U\.\s?S\.\s?L\.\s?W\.|USC|CFR";
    let citation = format!(
        r"(?-u:\b)\d+\s+(?:{reporters})\s*(?:§§?\s*)?\d+(?:[\w()\-–]|\.\w)*(?:(?:,|\s+at)\s*\d+(?:[-–]\d+)?)*(?:\s*\([^)]{{0,30}}\d{{4}}\))?"
    );
    let section = r"(?:§§?|¶|(?-u:\b)(?:Section|Sections|Sec\.|Article|Art\.|Clause|Rule|Chapter|Part|Paragraph|Para\.|Schedule|Exhibit|Annex)\s)\s*\d+(?:[\w()\-–]|\.\w)*";
    let public_law = r"(?:Pub\.\s?L\.|P\.\s?L\.|Public Law)(?:\s?No\.)?\s?\d+[-–]\d+|(?-u:\b)\d+\s+Stat\.\s+\d+";
    let docket = r"(?:No\.|Case No\.|Docket No\.|Civ\. No\.|Civil Action No\.)\s*(?:\d:)?\d{2}[-–](?:[a-z]{2}[-–])?\d{1,6}(?-u:\b)";
    let isbn = r"(?i:ISSN:?\s*)\d{4}-\d{3}[\dX]|(?i:ISBN(?:-1[03])?:?\s*)(?:97[89][-\s]?)?\d{1,5}[-\s]?\d{1,7}[-\s]?\d{1,7}[-\s]?[\dX]|(?-u:\b)97[89]-\d{1,5}-\d{1,7}-\d{1,7}-\d(?-u:\b)";
    let all = [guid, hash, version, dotted, price, &citation, section, public_law, docket, isbn];
    compile(&all.map(|p| format!("(?:{p})")).join("|"))
});

/// The sorted, disjoint byte ranges of `text` that are not identifiers. Each holds a
/// digit (a hash of letters alone overlaps no number), so only the places around
/// digits are read: 40 bytes before ("Civil Action No. "), 48 after.
///
/// A run of dotted numbers is a version or an OID, except as phone numbers are written
/// with dots: after a `+` ("+47.40.61.23.45") or opening with a trunk prefix's 0 and a
/// digit ("01.23.45.67.89"), which no version or OID does.
pub fn zones(text: &str) -> Vec<(usize, usize)> {
    let windows = digit_windows(text, 40, 48);
    let b = text.as_bytes();
    let dotted_phone = |s: usize, e: usize| {
        let z = &b[s..e];
        z.iter().all(|c| c.is_ascii_digit() || *c == b'.') && (s > 0 && b[s - 1] == b'+' || z.len() > 1 && z[0] == b'0' && z[1].is_ascii_digit())
    };
    find_in(&ZONES, text, &windows).filter(|&(s, e)| !dotted_phone(s, e)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone_texts(t: &str) -> Vec<&str> {
        zones(t).into_iter().map(|(s, e)| &t[s..e]).collect()
    }

    #[test]
    fn the_look_alikes_are_zones() {
        assert_eq!(zone_texts("see 347 U.S. 483 (1954) and 42 U.S.C. § 1983."), ["347 U.S. 483 (1954)", "42 U.S.C. § 1983"]);
        assert_eq!(zone_texts("id 110bcd25-a55d-453a-8046-1297901ea002"), ["110bcd25-a55d-453a-8046-1297901ea002"]);
        assert_eq!(zone_texts("version 4.258.829.090 costs $4,258,829.09"), ["version 4.258.829.090", "$4,258,829.09"]);
        assert_eq!(zone_texts("ISBN 978-0-306-40615-7"), ["ISBN 978-0-306-40615-7"]);
        assert_eq!(zone_texts("ISSN 0317-8471"), ["ISSN 0317-8471"]);
        assert_eq!(zone_texts("at 1.2.840.113549.1.1.11 or +47.40.61.23.45 or 01.23.45.67.89"), ["1.2.840.113549.1.1.11"]);
        assert_eq!(zone_texts("Pub. L. 111-148, 124 Stat. 119"), ["Pub. L. 111-148", "124 Stat. 119"]);
        assert_eq!(zone_texts("Section 12.3.4.5 and ¶ 14"), ["Section 12.3.4.5", "¶ 14"]);
        assert!(zones("Call 415-555-0132 on 2024-01-15").is_empty());
    }
}
