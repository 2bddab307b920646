use super::*;

fn spans(t: &str, kinds: Kinds) -> Vec<(IdentifierKind, &str)> {
    scan(t, kinds).into_iter().map(|s| (s.kind, &t[s.start..s.end])).collect()
}

#[test]
fn the_specs_example_masks_all_but_the_date() {
    let t = "Call 555-123-4567 or write to ada@example.com about the 2024-01-15 visit.";
    let m = mask(t, Kinds::default_mask());
    assert_eq!(m.text, "Call [PHONE-1] or write to [EMAIL-1] about the 2024-01-15 visit.");
    let all = Counts::of(&scan(t, Kinds::ALL));
    assert_eq!(all.by_count(), [(IdentifierKind::Phone, 1), (IdentifierKind::Email, 1), (IdentifierKind::Date, 1)]);
}

#[test]
fn one_value_keeps_one_placeholder() {
    let t = "Ring (415) 555-0132, then 212-555-0188, then +1 415 555 0132 again. SSN 078-05-1123 or 078 05 1123.";
    let m = mask(t, Kinds::ALL);
    assert_eq!(m.text, "Ring [PHONE-1], then [PHONE-2], then [PHONE-1] again. SSN [SSN-1] or [SSN-1].");
    assert_eq!((m.counts.get(IdentifierKind::Phone), m.counts.total()), (3, 5));
}

#[test]
fn an_email_inside_a_url_is_masked_when_the_url_is_not() {
    let t = "See https://example.org/unsubscribe?email=ada@example.com today";
    assert_eq!(
        spans(t, Kinds::ALL),
        [(IdentifierKind::Url, "https://example.org/unsubscribe?email=ada@example.com"), (IdentifierKind::Email, "ada@example.com")]
    );
    assert_eq!(mask(t, Kinds::default_mask()).text, "See https://example.org/unsubscribe?email=[EMAIL-1] today");
    assert_eq!(mask(t, Kinds::ALL).text, "See [URL-1] today");
}

#[test]
fn kinds_limit_what_is_found_without_changing_it() {
    let t = "DOB: 03/14/1962, seen 2024-01-15 by Dr. Okafor";
    assert_eq!(spans(t, Kinds::NONE.with(IdentifierKind::Date)), [(IdentifierKind::Date, "2024-01-15")]);
    assert_eq!(spans(t, Kinds::NONE.with(IdentifierKind::Dob)), [(IdentifierKind::Dob, "03/14/1962")]);
    assert_eq!(spans(t, Kinds::NONE.with(IdentifierKind::Person)), [(IdentifierKind::Person, "Okafor")]);
    assert!(scan(t, Kinds::NONE).is_empty());
}

#[test]
fn a_preview_is_cut_after_masking() {
    let t = "Reach me at 415-555-0132 please";
    let spans = scan(t, Kinds::ALL);
    assert_eq!(mask_spans(t, &spans, Kinds::ALL, 15), "Reach me at [PH");
    assert_eq!(mask_spans(t, &spans, Kinds::ALL, 5), "Reach");
}

#[test]
fn kinds_have_the_specs_names_and_placeholders() {
    let names: Vec<&str> = IdentifierKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(names, ["ssn", "phone", "email", "mrn", "dob", "credit_card", "ip", "url", "passport", "npi", "address", "person", "date"]);
    assert_eq!(IdentifierKind::parse("credit_card").map(IdentifierKind::placeholder), Some("CARD"));
    assert_eq!(IdentifierKind::Person.placeholder(), "NAME");
    assert_eq!(IdentifierKind::parse("zip"), None);
    assert_eq!(Kinds::default_mask().iter().count(), 11);
}
