//! A development set for the phone detector, made from libphonenumber's own metadata
//! (the `phonenumber` crate): every region's example numbers (fixed line, mobile, toll
//! free, premium rate, shared cost, personal, VoIP, UAN, pager, voicemail) written the
//! four ways libphonenumber formats them (NATIONAL, INTERNATIONAL, E164, RFC3966) and the
//! ways people vary them (dots or dashes for spaces, `00` for `+`, an extension), each
//! in a short sentence without a phone cue. Not a scoring set: the numbers are the
//! plans' examples, so it says which plans and which layouts the detector reads, not
//! how often real text is found.
//!
//! Prints recall by layout and by region (a number counts as found when one phone span
//! covers all its digits), then the phones found in texts that hold none: numbers that
//! are dates, amounts, versions, coordinates, ISBNs, statistics and citations (each
//! written here from its general form), and the SciFact abstracts.
//!
//!     cargo build --profile identify-bench -p quarry-index --example identify_phones
//!     target/identify-bench/examples/identify_phones [--regions] [--misses LAYOUT]

use std::collections::BTreeMap;
use std::str::FromStr;

use phonenumber::country::Id;
use phonenumber::metadata::DATABASE;
use phonenumber::Mode;
use quarry_index::identify::{scan, IdentifierKind, Kinds};

/// The sentence a number is written in: no phone cue ("call", "tel", "phone") before it.
fn sentence(number: &str) -> String {
    format!("The office listed {number} for the day shift.")
}

/// The numbers of one region: (region, layout, written number).
fn examples() -> Vec<(String, &'static str, String)> {
    let mut out = Vec::new();
    for meta in DATABASE.iter() {
        let d = meta.descriptors();
        let kinds = [
            d.fixed_line(),
            d.mobile(),
            d.toll_free(),
            d.premium_rate(),
            d.shared_cost(),
            d.personal_number(),
            d.voip(),
            d.uan(),
            d.pager(),
            d.voicemail(),
        ];
        let region = meta.id().to_string();
        let id = Id::from_str(&region).ok();
        let mut seen = std::collections::HashSet::new();
        for ex in kinds.into_iter().flatten().filter_map(|k| k.example()) {
            if !seen.insert(ex.to_string()) {
                continue;
            }
            let code = meta.country_code();
            let parsed = match id {
                Some(id) => phonenumber::parse(Some(id), ex),
                None => phonenumber::parse(None, format!("+{code}{ex}")),
            };
            let Ok(n) = parsed else { continue };
            if !phonenumber::is_valid(&n) {
                continue;
            }
            let national = n.format().mode(Mode::National).to_string();
            let international = n.format().mode(Mode::International).to_string();
            let e164 = n.format().mode(Mode::E164).to_string();
            let rfc = n.format().mode(Mode::Rfc3966).to_string();
            let mut add = |layout: &'static str, t: String| out.push((region.clone(), layout, t));
            if id.is_some() {
                add("national", national.clone());
                add("national-dashes", national.replace(' ', "-"));
                add("national-dots", national.replace(' ', "."));
                add("national-ext", format!("{national} ext. 123"));
            }
            add("international", international.clone());
            add("e164", e164.clone());
            add("rfc3966", rfc);
            add("00", format!("00{}", &international[1..]));
            add("international-dashes", international.replace(' ', "-"));
            add("international-dots", international.replace(' ', "."));
            add("international-x", format!("{international} x45"));
        }
    }
    out
}

/// Whether one phone span of `text` covers every digit of `number` written at `at`.
fn found(text: &str, at: usize, number: &str) -> bool {
    let first = at + number.find(|c: char| c.is_ascii_digit()).unwrap_or(0);
    let last = at + number.rfind(|c: char| c.is_ascii_digit()).map_or(0, |i| i + 1);
    scan(text, Kinds::NONE.with(IdentifierKind::Phone)).iter().any(|s| s.start <= first && s.end >= last)
}

/// Texts full of numbers that are no phone numbers, one a line, each written from the
/// general form of its kind.
fn not_phones() -> Vec<String> {
    let mut out = Vec::new();
    for (y, m, d) in [(2019, 3, 14), (1987, 11, 2), (2024, 7, 30), (2001, 1, 9)] {
        out.push(format!("Seen on {y}-{m:02}-{d:02} and again on {m}/{d}/{y}, {d}.{m}.{y} and {d:02}/{m:02}/{y} at 14:30:05."));
        out.push(format!("The period {y}-{} ran from {y}{m:02}{d:02} to {}{m:02}{d:02}.", y + 3, y + 1));
    }
    for v in ["1,234,567", "12 345 678", "3.141.592", "$1,250,000.00", "€ 2.500.000,00", "USD 12,500,000", "1 234 567,89 zł"] {
        out.push(format!("Revenue reached {v} in the year, up from {v} before."));
    }
    for v in ["v2.10.3", "version 10.0.19045.3570", "build 22621.2428", "1.2.840.113549.1.1.11", "release 4.19.0-26-amd64"] {
        out.push(format!("Upgrade to {v} before the next deploy."));
    }
    for v in ["40.7128, -74.0060", "51.5072 N, 0.1276 W", "-33.8688 151.2093", "48°51′24″N 2°21′08″E", "N 52° 31.234 E 013° 24.567"] {
        out.push(format!("The site lies at {v} on the map."));
    }
    for v in ["ISBN 978-3-16-148410-0", "ISBN 0-306-40615-2", "ISSN 0317-8471", "doi:10.1038/nphys1170", "PMID 31452104", "arXiv:2106.09685"] {
        out.push(format!("See {v} for the details."));
    }
    for v in [
        "Nature 12(3):45-67",
        "J Clin Invest. 2004;113(12):1735-1741",
        "Lancet 2019; 393: 1958-72",
        "pp. 1123-1145",
        "vol. 45, no. 3, pp. 233-245, 2011",
        "N Engl J Med 2020;382:1708-1720",
    ] {
        out.push(format!("As reported in {v}, the effect held."));
    }
    for v in [
        "p = 0.0001",
        "OR 1.23 (95% CI 1.05-1.44)",
        "n = 12 345",
        "HR 0.81, 0.72-0.91",
        "mean 123.45 ± 6.78",
        "from 1990 to 2000 (2001-2005: 1,234 cases)",
        "scores 12 14 17 21 25 30 36",
        "rs1234567 and rs7654321",
        "chr7:55,019,017-55,211,628",
        "IC50 = 0.0123 μM",
    ] {
        out.push(format!("The analysis gave {v} across the cohort."));
    }
    for v in ["4111 1111 1111 1111", "DE89 3704 0044 0532 0130 00", "1Z 999 AA1 01 2345 6784", "SN 4CE0460D0G", "part 1234-5678-90"] {
        out.push(format!("Reference {v} was filed."));
    }
    out
}

fn scifact() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/scifact-500/corpus.jsonl");
    let text = std::fs::read_to_string(root).expect("tests/data/scifact-500/corpus.jsonl");
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            format!("{}\n{}", v["title"].as_str().unwrap_or(""), v["text"].as_str().unwrap_or(""))
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let by_region = args.iter().any(|a| a == "--regions");
    let misses = args.iter().position(|a| a == "--misses").and_then(|i| args.get(i + 1)).cloned();
    let set = examples();
    let mut layouts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut regions: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (region, layout, number) in &set {
        let text = sentence(number);
        let at = text.find(number.as_str()).expect("the number is in its sentence");
        let hit = found(&text, at, number);
        for e in [layouts.entry(layout).or_default(), regions.entry(region.clone()).or_default()] {
            e.0 += usize::from(hit);
            e.1 += 1;
        }
        if !hit && misses.as_deref() == Some(*layout) {
            println!("miss {region} {layout}: {number}");
        }
    }
    let (hit, all) = layouts.values().fold((0, 0), |a, v| (a.0 + v.0, a.1 + v.1));
    println!("phones from libphonenumber's examples: {} regions, {all} written numbers", regions.len());
    println!("{:<22} {:>6} {:>6} {:>7}", "layout", "found", "of", "recall");
    for (l, (h, n)) in &layouts {
        println!("{l:<22} {h:>6} {n:>6} {:>7.3}", *h as f64 / *n as f64);
    }
    println!("{:<22} {hit:>6} {all:>6} {:>7.3}", "all", hit as f64 / all as f64);
    let full = regions.values().filter(|(h, n)| h == n).count();
    let none = regions.values().filter(|(h, _)| *h == 0).count();
    println!("regions with every number found: {full} of {}; with none: {none}", regions.len());
    if by_region {
        for (r, (h, n)) in &regions {
            println!("  {r:<4} {h:>4}/{n:<4} {:.3}", *h as f64 / *n as f64);
        }
    }
    for (name, texts) in [("number-heavy non-phone sentences", not_phones()), ("SciFact (500 abstracts)", scifact())] {
        let mut fp = Vec::new();
        for t in &texts {
            for s in scan(t, Kinds::NONE.with(IdentifierKind::Phone)) {
                fp.push(t[s.start..s.end].to_string());
            }
        }
        println!("phones found in {name} ({} texts): {} {:?}", texts.len(), fp.len(), fp);
    }
}
